r"""Edge-flow masking with Hodge-aware drop probabilities (paper §4.1, docs/design.md §2.1-2.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import InMemoryDataset
from torch_geometric.transforms import BaseTransform

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.transforms._common import (
    draw_generator,
    drop_rows,
    get_flow,
    make_generator,
    num_flows,
    store,
)
from topo_contrastive.transforms._mask_options import check_budget_first
from topo_contrastive.transforms._per_complex import as_complex_data, has_own_complex
from topo_contrastive.transforms.compute_drop_probabilities import ComputeDropProbabilities

__all__ = ["HodgeSpectralMask"]


class HodgeSpectralMask(BaseTransform):
    r"""Mask edge flows with per-edge drop probabilities optimised with respect to the
    Hodge decomposition (paper §4.1 "Hodge-aware spectral augmentations", eq. 9).

    .. math::
        \mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d}), \qquad
        d_i \sim \mathrm{Ber}(p_i), \qquad
        \mathbf{p} = \operatorname*{arg\,min}_{\mathbf{p} \in \mathcal{G}_\mathbf{p}}
        \sum_k s_k \alpha_k \frac{\mathbb{E}\|\mathbf{U}_k^\top(\mathbf{x} -
        \mathbf{x}')\|_2^2}{\|\mathbf{U}_k^\top \mathbf{x}\|_2^2}

    with :math:`s_k = -1` for the components to ``perturb``, :math:`+1` for those to
    ``preserve``, and :math:`\mathcal{G}_\mathbf{p}` the probabilities in :math:`[0, 1]`, zero
    off the flow's support, summing to at most :math:`\varepsilon\,|\operatorname{supp}
    \mathbf{x}|` (see :func:`~topo_contrastive.transforms.optimize_drop_probabilities`).
    The probabilities of a sample are read from ``data[prob_attr]`` when present (store them
    once with :meth:`fit`, one batched optimisation for a dataset), else computed on the fly.
    Each call draws a new mask (``view1, view2 = mask(batch), mask(batch)``); the input is
    not modified. Samples with their own complex (:class:`~topo_contrastive.data.ComplexData`)
    need no ``hodge``; with ``HodgeDecomposition(ops, rank=k)`` it masks ``x_k``. Wrap it in
    :class:`~topo_contrastive.transforms.ContrastiveViews` to get both views and the Hodge
    parts from one dataset transform. Design notes: docs/design.md §7.5.

    Args:
        budget (float): :math:`\varepsilon \in [0, 1]`, the largest expected fraction of a
            flow's support that is dropped.
        hodge (HodgeDecomposition, ComplexOperators or a TopoNetX complex, optional): the
            flows' complex; ``None`` binds ``dataset.complex`` at :meth:`fit`.
            (default: ``None``)
        perturb (Sequence[str], optional): components whose embedding the masks change.
            (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components to keep.
            (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weight per component (missing
            ones are 1). (default: ``None``)
        attr (str, optional): signal attribute. (default: ``None``: ``"x_k"`` for
            ``k = hodge.rank``)
        prob_attr (str, optional): attribute of the drop probabilities.
            (default: ``"drop_prob"``)
        generator (torch.Generator or int, optional): generator or seed; ``None`` uses
            torch's global generator. (default: ``None``)
        **optimizer_options: ``num_steps``, ``lr``, ``tol``, ``max_block_elements`` of
            :func:`~topo_contrastive.transforms.optimize_drop_probabilities`.

    Shapes:
        - **input** ``data[attr]``: ``[N1]`` or ``[N1, C]`` on a ``Data``, ``[B * N1, C]`` on a
          ``Batch`` or with ``data.batch``; ``data[prob_attr]`` (optional): ``[rows, 1]``.
        - **output** ``data[attr]``: as the input; ``data[prob_attr]``: ``[rows, 1]``.

    Raises:
        TypeError: ``budget`` not a number (a complex passed first: the old argument order),
            ``hodge`` of another type, bad ``generator`` or options; called before a complex
            is known.
        ValueError: bad settings (as :class:`ComputeDropProbabilities`); when called, a
            missing/NaN flow, rows other than :math:`N_1` per sample, a ``batch`` vector not
            in blocks of :math:`N_1`, stored probabilities of the wrong shape, outside
            :math:`[0, 1]` or fitted with other settings.

    Example:
        >>> ds = SyntheticTrajectories("data/trajectories", num_points=150, num_train=4,
        ...                            num_val=2, num_test=2, log=False)
        >>> mask = HodgeSpectralMask(budget=0.3, generator=0)
        >>> ds = mask.fit(ds)  # binds ds.complex; one batched optimisation: ds[i].drop_prob
        >>> batch = next(iter(DataLoader(ds, batch_size=4)))
        >>> view1, view2 = mask(batch), mask(batch)  # two independent masked views
        >>> view1.x_1.shape == batch.x_1.shape, bool((view1.x_1 != view2.x_1).any())
        (True, True)
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
        generator: torch.Generator | int | None = None,
        **optimizer_options: Any,
    ) -> None:
        #: The companion transform that computes and stores the probabilities.
        self.precompute = ComputeDropProbabilities(
            check_budget_first(budget, type(self).__name__),
            hodge=hodge,
            perturb=perturb,
            preserve=preserve,
            alpha=alpha,
            attr=attr,
            prob_attr=prob_attr,
            **optimizer_options,
        )
        self.generator = make_generator(generator)

    # settings live on the companion transform (one source of truth)
    @property
    def hodge(self) -> HodgeDecomposition:
        return self.precompute.hodge

    @property
    def bound_hodge(self) -> HodgeDecomposition | None:
        """The decomposition the mask is bound to, or ``None`` (see
        :attr:`ComputeDropProbabilities.bound_hodge`)."""
        return self.precompute.bound_hodge

    def bind_complex(self, hodge: HodgeDecomposition | ComplexOperators) -> HodgeDecomposition:
        """Bind to ``hodge`` if unbound, else check it is the same complex (see
        :meth:`ComputeDropProbabilities.bind_complex`)."""
        return self.precompute.bind_complex(hodge)

    @property
    def budget(self) -> float:
        return self.precompute.budget

    @property
    def perturb(self) -> tuple[str, ...]:
        return self.precompute.perturb

    @property
    def preserve(self) -> tuple[str, ...]:
        return self.precompute.preserve

    @property
    def alpha(self) -> dict[str, float]:
        return self.precompute.alpha

    @property
    def attr(self) -> str:
        return self.precompute.attr

    @property
    def prob_attr(self) -> str:
        return self.precompute.prob_attr

    def fit(self, dataset: InMemoryDataset | Iterable[Any]) -> Any:
        """Store ``drop_prob`` on every sample of ``dataset`` in one batched optimisation.

        Binds the transform to ``dataset.complex`` if it has no complex yet. See
        :meth:`ComputeDropProbabilities.fit` (an ``InMemoryDataset`` is updated in place and
        returned; another iterable gives a list of copies).
        """
        return self.precompute.fit(dataset)

    def bind(self, dataset: Any) -> HodgeDecomposition:
        """Bind to ``dataset.complex`` (see :meth:`ComputeDropProbabilities.bind`)."""
        return self.precompute.bind(dataset)

    def _stored_probabilities(self, data: Any, x: Tensor) -> Tensor | None:
        if self.prob_attr not in data.keys():  # noqa: SIM118 - Data API
            return None
        p = data[self.prob_attr]
        if p is None:
            return None
        name = f"data.{self.prob_attr}"
        if not isinstance(p, Tensor) or not p.is_floating_point():
            raise TypeError(f"`{name}` must be a floating tensor of drop probabilities")
        rows = x.shape[0]
        if p.shape not in ((rows,), (rows, 1)):
            raise ValueError(
                f"`{name}` must have shape [{rows}, 1] (one probability per row of "
                f"`data.{self.attr}`), got {tuple(p.shape)}"
            )
        low, high = torch.aminmax(p) if p.numel() else (p.new_zeros(()), p.new_zeros(()))
        if not (bool(low >= 0) and bool(high <= 1)):  # NaN propagates: also rejected
            raise ValueError(f"`{name}` must lie in [0, 1] (and not be NaN)")
        key = self.precompute.settings_attr
        tag = data[key] if key in data.keys() else None  # noqa: SIM118 - Data API
        if isinstance(tag, Tensor) and bool((tag != self.precompute.settings_tag()).any()):
            raise ValueError(
                f"`{name}` was computed with other settings than this mask's "
                f"({self.precompute!r}), e.g. another budget: fit the dataset with this mask "
                "again (mask.fit(dataset), or ContrastiveViews(mask).fit(dataset)), or use the "
                "mask it was fitted with"
            )
        return p

    def forward(self, data: Any) -> Any:
        if has_own_complex(data):
            data = as_complex_data(data)
            x = get_flow(data, self.attr)
            p = self._stored_probabilities(data, x)
            if p is None:
                p = self.precompute.probabilities_per_complex(data, x)
                store(data, self.prob_attr, p, like=self.attr)
            data[self.attr] = drop_rows(x, p, draw_generator(self))
            return data
        x = get_flow(data, self.attr)
        num_flows(data, x, self.precompute.num_edges, self.attr, rank=self.hodge.rank)
        p = self._stored_probabilities(data, x)
        if p is None:
            p = self.precompute.probabilities(x)  # [rows, 1], batched over samples
            store(data, self.prob_attr, p, like=self.attr)
        data[self.attr] = drop_rows(x, p, draw_generator(self))  # one draw per row
        return data

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(budget={self.budget}, perturb={self.perturb}, "
            f"preserve={self.preserve}, attr={self.attr!r}, prob_attr={self.prob_attr!r})"
        )
