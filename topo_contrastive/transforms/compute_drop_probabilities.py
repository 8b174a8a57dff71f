r"""Store Hodge-aware drop probabilities on edge-flow data (paper §4.1, docs/design.md §2.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import InMemoryDataset
from torch_geometric.transforms import BaseTransform

from topo_contrastive._layout import rows_to_samples
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.transforms._common import (
    as_hodge,
    bind_hodge,
    check_attr,
    get_flow,
    num_flows,
    stacked_flows,
    store,
    store_rows,
)
from topo_contrastive.transforms._mask_options import (
    check_budget_first,
    check_objective,
    check_optimizer_options,
)
from topo_contrastive.transforms._per_complex import (
    as_complex_data,
    fit_per_complex,
    has_own_complex,
    hodge_of,
    samples_as_rows,
)
from topo_contrastive.transforms.spectral_mask_optimizer import optimize_drop_probabilities

__all__ = ["ComputeDropProbabilities"]


def _first_has_own_complex(dataset: Any) -> bool:
    """Whether the samples of ``dataset`` carry their own complexes (judged by the first)."""
    if isinstance(dataset, InMemoryDataset):
        return len(dataset) > 0 and has_own_complex(dataset.get(0))
    if isinstance(dataset, (list, tuple)):
        return len(dataset) > 0 and has_own_complex(dataset[0])
    return False


class ComputeDropProbabilities(BaseTransform):
    r"""Compute each sample's Hodge-aware drop probabilities once and store them as
    ``data.drop_prob`` (paper §4.1, eq. 9).

    The probabilities solve :func:`~topo_contrastive.transforms.optimize_drop_probabilities`:
    perturb some Hodge components of the flow, preserve the others, drop at most ``budget``
    times the support size in expectation. They depend only on the flow, so they are
    computed once and reused by :class:`~topo_contrastive.transforms.HodgeSpectralMask` at
    every epoch. Use :meth:`fit` on a dataset (one batched optimisation; an
    ``InMemoryDataset`` is updated in place), or the transform as a ``pre_transform`` or on a
    ``Data`` / ``Batch``. Samples with their own complex
    (:class:`~topo_contrastive.data.ComplexData`) are each optimised on their own complex.
    The input is not modified; an existing ``drop_prob`` is overwritten. Design notes:
    docs/design.md §7.5.

    Args:
        budget (float): :math:`\varepsilon \in [0, 1]`, the largest expected fraction of a
            flow's support that is dropped.
        hodge (HodgeDecomposition, ComplexOperators or a TopoNetX complex, optional): the
            flows' complex; ``None`` binds ``dataset.complex`` at the first :meth:`fit`.
            (default: ``None``)
        perturb (Sequence[str], optional): components whose embedding the masks change.
            (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components to keep.
            (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weight per component (missing
            ones are 1). (default: ``None``)
        attr (str, optional): signal attribute. (default: ``None``: ``"x_k"`` for
            ``k = hodge.rank``)
        prob_attr (str, optional): attribute that receives the probabilities.
            (default: ``"drop_prob"``)
        **optimizer_options: ``num_steps``, ``lr``, ``tol``, ``max_block_elements`` of
            :func:`~topo_contrastive.transforms.optimize_drop_probabilities`.

    Shapes:
        - **input** ``data[attr]``: ``[N1]``, ``[N1, 1]`` or ``[B * N1, 1]``, floating.
        - **output** ``data[prob_attr]``: ``[N1, 1]`` / ``[B * N1, 1]``, dtype and device of
          the flow, in :math:`[0, 1]`, zero off the flow's support.

    Raises:
        TypeError: ``budget`` not a number (a complex passed first: the old argument order),
            ``hodge`` of another type, bad argument types or unknown optimiser options; when
            called before the complex is known.
        ValueError: ``budget`` outside :math:`[0, 1]`, unknown/repeated/conflicting component
            names, negative weights, bad optimiser options; when called, a missing/NaN flow,
            several channels, or rows other than :math:`N_1` per sample.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
        >>> flows = [Data(x_1=ops.path_to_flow(p).view(-1, 1)) for p in ([0, 1, 2], [3, 2, 0])]
        >>> fitted = ComputeDropProbabilities(0.5, hodge=ops).fit(flows)
        >>> fitted[0].drop_prob.shape
        torch.Size([4, 1])
        >>> bool(fitted[0].drop_prob.sum() <= 0.5 * 2 + 1e-6)  # at most budget x |supp x|
        True
    """

    def __init__(
        self,
        budget: float,
        hodge: HodgeDecomposition | ComplexOperators | None = None,
        perturb: Sequence[str] = ("gradient",),
        preserve: Sequence[str] = ("curl", "harmonic"),
        alpha: Mapping[str, float] | None = None,
        attr: str | None = None,
        prob_attr: str = "drop_prob",
        **optimizer_options: Any,
    ) -> None:
        budget = check_budget_first(budget, type(self).__name__)
        self._hodge = as_hodge(hodge)
        if attr is None:  # x_k for signals of rank k (x_1 until fit binds a complex)
            attr = "x_1" if self._hodge is None else f"x_{self._hodge.rank}"
        self.budget = budget
        self.perturb, self.preserve, self.alpha = check_objective(perturb, preserve, alpha)
        self.attr = check_attr(attr, "attr")
        self.prob_attr = check_attr(prob_attr, "prob_attr")
        if self.prob_attr == self.attr:
            raise ValueError(f"`prob_attr` must differ from `attr`, both are {attr!r}")
        self.optimizer_options = check_optimizer_options(optimizer_options)

    @property
    def hodge(self) -> HodgeDecomposition:
        """The Hodge decomposition of the complex (given, or bound by :meth:`fit`).

        Raises:
            TypeError: no complex yet (neither ``hodge`` given nor :meth:`fit` called).
        """
        if self._hodge is None:
            raise TypeError(
                f"{type(self).__name__} has no complex yet: pass `hodge=` (a "
                "HodgeDecomposition or ComplexOperators) or call fit(dataset) first"
            )
        return self._hodge

    @property
    def bound_hodge(self) -> HodgeDecomposition | None:
        """The decomposition the transform is bound to, or ``None`` before a complex is
        given (:meth:`bind`, :meth:`bind_complex`, :meth:`fit`); samples with complexes of
        their own need none."""
        return self._hodge

    def bind_complex(self, hodge: HodgeDecomposition | ComplexOperators) -> HodgeDecomposition:
        """Bind to ``hodge`` if no complex was given yet, else check that it is the same
        complex; returns the bound decomposition.

        Raises:
            TypeError: ``hodge`` is neither a ``HodgeDecomposition`` nor a
                ``ComplexOperators``.
            ValueError: the transform is bound to another complex (another fingerprint).
        """
        given = as_hodge(hodge)
        if given is None:
            raise TypeError(
                "`hodge` must be a HodgeDecomposition or ComplexOperators, got None"
            )
        if self._hodge is None:
            self._hodge = given
        elif self._hodge.complex.fingerprint() != given.complex.fingerprint():
            raise ValueError(
                f"{type(self).__name__} is bound to the complex with fingerprint "
                f"{self._hodge.complex.fingerprint()}, not to the given one "
                f"({given.complex.fingerprint()})"
            )
        return self._hodge

    @property
    def num_edges(self) -> int:
        """:math:`N_k`, the length of one signal: the number of edges :math:`N_1` for edge
        flows (the number of rank-k simplices for ``hodge.rank = k``)."""
        return self.hodge.num_simplices

    def bind(self, dataset: Any) -> HodgeDecomposition:
        """Bind to ``dataset.complex`` if no complex was given (else check that the dataset's
        complex is the given one) and return the decomposition.

        Raises:
            TypeError: no complex given and ``dataset`` has no ``complex``.
            ValueError: ``dataset.complex`` differs from the given complex.
        """
        self._hodge = bind_hodge(self._hodge, dataset, type(self).__name__)
        return self._hodge

    def probabilities(self, x: Tensor) -> Tensor:
        """Drop probabilities ``[rows, 1]`` of the stacked flows ``x`` (``[rows]`` or
        ``[rows, 1]``, ``rows = S * N1``), in one batched optimisation.

        Raises:
            ValueError: several channels, or ``rows`` not a multiple of :math:`N_1`.
        """
        n1 = self.num_edges
        if x.dim() == 2 and x.shape[1] != 1:
            raise ValueError(
                f"drop probabilities need a single-channel flow, got `{self.attr}` of shape "
                f"{tuple(x.shape)}; compute them on the scalar flow and store `{self.prob_attr}`"
            )
        if n1 == 0 and x.shape[0] == 0:  # no simplices: no samples to optimise
            flows = x.reshape(0, 0)
        else:  # [S, N1], sample-major
            hint = " (a signal of the wrong length)"
            flows = rows_to_samples(x.reshape(-1), n1, self.hodge.rank, self.attr, hint=hint)
        p = optimize_drop_probabilities(
            flows,
            self.hodge,
            self.budget,
            perturb=self.perturb,
            preserve=self.preserve,
            alpha=self.alpha,
            **self.optimizer_options,
        )
        return p.reshape(-1, 1)

    @property
    def rank(self) -> int:
        """Rank of the signals: the bound decomposition's, else from ``attr`` (``x_k``)."""
        if self._hodge is not None:
            return int(self._hodge.rank)
        a = self.attr
        return int(a[2]) if len(a) == 3 and a[:2] == "x_" and a[2] in "012" else 1

    def probabilities_per_complex(self, data: Any, x: Tensor) -> Tensor:
        """Drop probabilities ``[rows, 1]`` of the signals ``x`` of a sample or batch with
        its own complex(es), each optimised on its own complex (one batched optimisation on
        the batch's block-diagonal complex).

        Raises:
            ValueError: several channels, or rows other than the samples' :math:`N_k`.
        """
        if x.dim() == 2 and x.shape[1] != 1:
            raise ValueError(
                f"drop probabilities need a single-channel flow, got `{self.attr}` of shape "
                f"{tuple(x.shape)}; compute them on the scalar flow and store `{self.prob_attr}`"
            )
        rank = self.rank
        rows = samples_as_rows(data, x, rank, self.attr)  # [sum N_k]
        hodge = hodge_of(data, rank)
        num = int(data.num_cells(rank).numel())
        n = int(rows.numel())
        dense = x.new_zeros(num, n)  # sample i's signal at its own rows
        dense[rows, torch.arange(n, device=x.device)] = x.reshape(-1)
        p = optimize_drop_probabilities(
            dense,
            hodge,
            self.budget,
            perturb=self.perturb,
            preserve=self.preserve,
            alpha=self.alpha,
            **self.optimizer_options,
        )
        return p.sum(0).reshape(-1, 1)  # each row belongs to one sample

    @property
    def settings_attr(self) -> str:
        """The attribute stored beside the probabilities (``drop_prob_settings``, int32
        ``[1, 1]`` per sample after :meth:`fit`, ``[rows, 1]`` on a transformed sample): a
        tag of the settings they were computed with, so that a mask of other settings
        (another budget) refuses them instead of drawing from them."""
        return f"{self.prob_attr}_settings"

    def settings_tag(self) -> int:
        """The tag of every setting that changes the probabilities (31 bits of the sha256 of
        this transform's ``repr``)."""
        import hashlib

        return int(hashlib.sha256(repr(self).encode()).hexdigest()[:7], 16)

    def _with_tag(self, p: Tensor) -> dict[str, Tensor]:
        # one stored int32 broadcast over the rows (no [rows, 1] copy on a large dataset)
        tag = torch.full((1, 1), self.settings_tag(), dtype=torch.int32, device=p.device)
        tag = tag.expand(p.shape[0], 1)
        return {self.prob_attr: p, self.settings_attr: tag}

    def forward(self, data: Any) -> Any:
        if has_own_complex(data):
            data = as_complex_data(data)
            x = get_flow(data, self.attr)
            for key, value in self._with_tag(self.probabilities_per_complex(data, x)).items():
                store(data, key, value, like=self.attr)
            return data
        x = get_flow(data, self.attr)
        num_flows(data, x, self.num_edges, self.attr, rank=self.hodge.rank)
        for key, value in self._with_tag(self.probabilities(x)).items():
            store(data, key, value, like=self.attr)
        return data

    def fit(self, dataset: InMemoryDataset | Iterable[Any]) -> Any:
        """Compute the probabilities of all samples of ``dataset`` in one batched call.

        Binds the transform to ``dataset.complex`` first if it has no complex yet
        (:meth:`bind`).

        Args:
            dataset: an ``InMemoryDataset`` (updated in place and returned) or an iterable
                of ``Data`` objects (a list of shallow copies with ``drop_prob`` returned).

        Returns:
            The dataset itself, or the list of copies.

        Raises:
            TypeError: no complex given and ``dataset`` has none.
            ValueError: a sample without a valid flow of :math:`N_1` rows; a dataset on
                another complex than the given one.

        Samples with their own complexes (see the class) are fitted a chunk at a time,
        each on its own complex; an ``InMemoryDataset`` of them is updated in place, a list
        gives ``ComplexData`` copies.
        """
        if not isinstance(dataset, InMemoryDataset):
            dataset = list(dataset)
        if _first_has_own_complex(dataset):
            return fit_per_complex(
                dataset,
                self.attr,
                self.rank,
                lambda batch, x, rows: self._with_tag(self.probabilities_per_complex(batch, x)),
            )
        self.bind(dataset)
        x, samples = stacked_flows(dataset, self.attr, self.num_edges, rank=self.hodge.rank)
        p = self.probabilities(x) if len(x) else x.new_zeros(0, 1)  # [S * N1, 1]
        num = x.shape[0] // max(self.num_edges, 1)
        # the settings' tag once per sample (not per row: no [S * N1] copy in a batch)
        tag = torch.full((num, 1), self.settings_tag(), dtype=torch.int32, device=p.device)
        return store_rows(
            samples, self.attr, self.num_edges, {self.prob_attr: p}, {self.settings_attr: tag}
        )

    def __repr__(self) -> str:
        # every setting that changes the probabilities: a dataset records this repr of its
        # pre_transform and refuses to reuse a processed file built with another one
        alpha = {k: v for k, v in self.alpha.items() if v != 1.0}
        extra = f", alpha={alpha!r}" if alpha else ""
        extra += "".join(f", {k}={v!r}" for k, v in self.optimizer_options.items())
        num_edges = None if self._hodge is None else self._hodge.complex.num_edges
        return (
            f"{type(self).__name__}(budget={self.budget}, perturb={self.perturb}, "
            f"preserve={self.preserve}, attr={self.attr!r}, prob_attr={self.prob_attr!r}, "
            + (
                f"num_edges={num_edges}{extra})"
                if self._hodge is None or self._hodge.rank == 1
                else f"rank={self._hodge.rank}, num_simplices={self._hodge.num_simplices}{extra})"
            )
        )
