r"""Both contrastive views and the Hodge parts of a sample, as one PyG dataset transform
(paper §3-4: two augmented views per sample, negatives weighted by the Hodge parts of the
original flows)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Batch, InMemoryDataset
from torch_geometric.transforms import BaseTransform

from topo_contrastive._layout import batch_vector, rows_to_samples, samples_to_rows
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.data import ComplexData
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.transforms._common import (
    as_hodge,
    bind_hodge,
    check_attr,
    get_flow,
    stacked_flows,
    store,
    store_rows,
)
from topo_contrastive.transforms._per_complex import (
    as_complex_data,
    fit_per_complex,
    has_own_complex,
    hodge_of,
    samples_as_rows,
)
from topo_contrastive.transforms.compute_drop_probabilities import ComputeDropProbabilities
from topo_contrastive.utils.checks import check_bool

__all__ = ["ContrastiveViews", "hodge_parts"]

#: Attribute holding the Hodge parts ``[rows, 3]`` (gradient, curl, harmonic columns).
PARTS_ATTR = "hodge_parts"


def hodge_parts(hodge: HodgeDecomposition, x: Tensor) -> Tensor:
    """Gradient, curl and harmonic parts ``[S, N_k, 3]`` of dense samples ``x`` ``[S, N_k]``,
    in one batched call, in ``x``'s dtype and on its device (the ``hodge_parts`` of
    :class:`ContrastiveViews`, of the experiments' data and of the debiased loss)."""
    return torch.stack(list(hodge(x)), dim=-1)


class ContrastiveViews(BaseTransform):
    r"""Two masked views of a sample's edge flow and the Hodge parts of the original flow,
    in one ``Data``: the dataset transform of a contrastive PyG pipeline (paper §3-4).

    For a flow :math:`\mathbf{x}` (``data.x_1``) it adds two independent draws of ``mask``
    and the gradient, curl and harmonic parts of the original flow (paper eq. 1), the input
    of :class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE`:

    .. math::
        \mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d}), \qquad
        \mathbf{x} = \mathbf{x}_G + \mathbf{x}_C + \mathbf{x}_H.

    :meth:`fit` computes the Hodge parts (and a spectral mask's drop probabilities) of every
    sample once and stores them on the dataset; each access then only draws two masks. The
    complex is ``hodge``, the mask's, or ``dataset.complex`` bound by :meth:`fit`. Samples
    with their own complexes (:class:`~topo_contrastive.data.ComplexData` or TopoBench's
    ``incidence_1`` / ``incidence_2``) need none: each uses its own. The transform also
    accepts a ``Batch``. The input is never modified.

    **Order of transforms.** :meth:`fit` stores the Hodge parts (and a spectral mask's drop
    probabilities) of the flows as they are then. A transform that changes the flows'
    values (scaling, noise, normalisation) belongs before fitting: in the dataset's
    ``pre_transform``, or applied to the samples before :meth:`fit`; ``ContrastiveViews``
    is the last transform of a ``Compose``. Stored parts that no longer sum to the flow the
    views see raise a ``ValueError``.

    Args:
        mask (callable): a transform returning a masked shallow copy of ``data``, e.g.
            ``HodgeSpectralMask(0.3, generator=0)`` or ``EdgeFlowMask(0.2)``.
        hodge (HodgeDecomposition or ComplexOperators, optional): the flows' complex or its
            decomposition; a spectral mask without a complex of its own is bound to it
            too. (default: ``None``: the mask's, or bound by :meth:`fit`)
        attr (str, optional): the signal attribute; the views are ``{attr}_view1`` and
            ``{attr}_view2``. (default: ``None``: ``"x_k"`` for a mask of rank k, else
            ``"x_1"``)
        hodge_parts (bool, optional): add ``hodge_parts`` (``False`` for plain InfoNCE or
            multi-channel signals). (default: ``True``)

    Shapes:
        - **input:** ``data[attr]`` ``[N1, 1]`` (``[N1, C]`` with ``hodge_parts=False``)
        - **output:** ``{attr}_view1``, ``{attr}_view2`` as ``data[attr]``; ``hodge_parts``
          ``[N1, 3]`` (columns gradient, curl, harmonic); a ``DataLoader`` batch holds
          ``[sum N1, ...]`` and the edges' batch vector ``batch_1``.

    Raises:
        TypeError: ``mask`` not callable, ``hodge``/``attr``/``hodge_parts`` of another type;
            no complex known at a call.
        ValueError: a mask on another attribute; a mask bound to another complex than
            ``hodge``; stored ``hodge_parts`` that do not sum to the flow (the flows were
            changed after :meth:`fit`: see "Order of transforms" above); a missing,
            non-floating or NaN flow, or one with another number of rows than the complex;
            several channels with ``hodge_parts=True``; :meth:`fit` on a dataset of another
            complex.

    Example:
        >>> views = ContrastiveViews(HodgeSpectralMask(0.3, generator=0))
        >>> ds = SyntheticTrajectories("data/trajectories", num_points=150, num_train=4,
        ...                            num_val=2, num_test=2, transform=views, log=False)
        >>> ds = views.fit(ds)  # binds ds.complex; drop probabilities, Hodge parts: once
        >>> batch = next(iter(DataLoader(ds, batch_size=8)))
        >>> n1 = ds.complex.num_edges
        >>> batch.x_1_view1.shape == (8 * n1, 1), batch.hodge_parts.shape == (8 * n1, 3)
        (True, True)
        >>> torch.allclose(batch.hodge_parts.sum(dim=1, keepdim=True), batch.x_1, atol=1e-5)
        True
    """

    def __init__(
        self,
        mask: Callable[[Any], Any],
        hodge: HodgeDecomposition | ComplexOperators | None = None,
        attr: str | None = None,
        hodge_parts: bool = True,
    ) -> None:
        if not callable(mask):
            raise TypeError(
                f"`mask` must be a transform (callable) such as HodgeSpectralMask or "
                f"EdgeFlowMask, got {type(mask).__name__}"
            )
        if attr is None:  # x_k for a mask of rank k (SimplexSignalMask, HodgeSpectralMask)
            bound = getattr(mask, "bound_hodge", None)
            rank = getattr(mask, "rank", None)
            attr = f"x_{getattr(bound, 'rank', 1) if rank is None else rank}"
        self.attr = check_attr(attr, "attr")
        mask_attr = getattr(mask, "attr", self.attr)
        if mask_attr != self.attr:
            raise ValueError(
                f"`mask` works on {mask_attr!r} but the views are made of {self.attr!r}; "
                "give both the same `attr`"
            )
        self.mask = mask
        self.hodge_parts = check_bool(hodge_parts, "hodge_parts")
        self._hodge = as_hodge(hodge)
        if self._hodge is not None and callable(getattr(mask, "bind_complex", None)):
            # an unbound spectral mask gets the views' complex (one decomposition for both)
            mask.bind_complex(self._hodge)
        self._warned = False

    # ------------------------------------------------------------------ complex
    def _mask_hodge(self) -> HodgeDecomposition | None:
        """The mask's decomposition if it has one bound (a spectral mask), else ``None``."""
        return getattr(self.mask, "bound_hodge", None)

    @property
    def hodge(self) -> HodgeDecomposition:
        """The Hodge decomposition of the complex (given, the mask's, or bound by :meth:`fit`).

        Raises:
            TypeError: no complex known yet.
        """
        hodge = self._hodge if self._hodge is not None else self._mask_hodge()
        if hodge is None:
            raise TypeError(
                "ContrastiveViews has no complex yet: pass `hodge=` (a HodgeDecomposition or "
                "ComplexOperators) or call fit(dataset) first"
            )
        return hodge

    @property
    def prob_attr(self) -> str | None:
        """Attribute of the mask's stored drop probabilities (``None`` for other masks)."""
        return getattr(self.mask, "prob_attr", None)

    def bind(self, dataset: Any) -> HodgeDecomposition:
        """Bind the transform and an unbound spectral mask to ``dataset.complex`` (one
        decomposition shared by both), or check that the dataset's complex is the given one.

        Raises:
            TypeError: no complex given and ``dataset`` has no ``complex``.
            ValueError: ``dataset.complex`` is not the given complex.
        """
        known = self._hodge if self._hodge is not None else self._mask_hodge()
        self._hodge = bind_hodge(known, dataset, type(self).__name__)
        if callable(getattr(self.mask, "bind_complex", None)):
            self.mask.bind_complex(self._hodge)  # one decomposition shared by both
        return self._hodge

    # ------------------------------------------------------------------ once per sample
    def _parts(self, x: Tensor, stacked: bool) -> Tensor:
        """Hodge parts ``[rows, 3]`` of single-channel flows ``x`` (``[rows]``/``[rows, 1]``;
        ``rows = N1``, or ``S * N1`` when ``stacked``)."""
        if x.dim() == 2 and x.shape[1] != 1:
            raise ValueError(
                f"Hodge parts need a single-channel flow, got `{self.attr}` of shape "
                f"{tuple(x.shape)}; pass hodge_parts=False for multi-channel signals"
            )
        rows = x.shape[0]
        n1, k = self.hodge.num_simplices, self.hodge.rank
        if rows % n1 != 0 or (not stacked and rows != n1):
            what = ("nodes", "edges", "triangles")[k]
            raise ValueError(
                f"`{self.attr}` has {rows} rows but the complex has N{k} = {n1} {what} (a "
                + ("flow" if k == 1 else f"rank-{k} signal")
                + " of another complex?)"
            )
        flows = rows_to_samples(x.reshape(-1), n1, k, self.attr)  # [S, N1]
        return samples_to_rows(hodge_parts(self.hodge, flows))  # [rows, 3]

    def fit(self, dataset: InMemoryDataset | Iterable[Any]) -> Any:
        """Bind the complex (:meth:`bind`), then compute, for all samples of ``dataset`` in
        one batched call each, the Hodge parts of the flows and (spectral mask) the drop
        probabilities, and store them on the samples (``hodge_parts``, ``drop_prob``).

        Args:
            dataset: an ``InMemoryDataset`` (updated in place, not its file, and returned;
                views made by indexing share the new attributes) or an iterable of ``Data``
                (a list of shallow copies is returned).

        Returns:
            The dataset itself, or the list of copies.

        Raises:
            TypeError: no complex given and ``dataset`` has none.
            ValueError: a dataset on another complex; a sample without a valid flow of
                :math:`N_1` rows.
        """
        if not isinstance(dataset, InMemoryDataset):
            dataset = list(dataset)
        first = dataset.get(0) if isinstance(dataset, InMemoryDataset) and len(dataset) else (
            dataset[0] if isinstance(dataset, list) and dataset else None
        )
        if first is not None and has_own_complex(first):
            return self._fit_per_complex(dataset)
        hodge = self.bind(dataset)
        fit_mask = getattr(self.mask, "fit", None)
        if callable(fit_mask):
            dataset = fit_mask(dataset)
        if self.hodge_parts:
            n = hodge.num_simplices
            x, samples = stacked_flows(dataset, self.attr, n, rank=hodge.rank)  # [S * N, C]
            parts = self._parts(x, stacked=True) if len(x) else x.new_zeros(0, 3)
            dataset = store_rows(samples, self.attr, n, {PARTS_ATTR: parts})
        return dataset

    def _fit_per_complex(self, dataset: Any) -> Any:
        """:meth:`fit` on samples with their own complexes."""
        rank = self._signal_rank()
        precompute = getattr(self.mask, "precompute", None)
        if (
            self.hodge_parts
            and isinstance(precompute, ComputeDropProbabilities)
            and precompute.attr == self.attr
            and precompute.rank == rank
        ):
            # one pass: the drop probabilities and the Hodge parts of a chunk share its
            # decomposition (cached on the chunk's batch), which dominates the cost
            def both(batch: Any, x: Tensor, rows: Tensor) -> dict[str, Tensor]:
                out = precompute._with_tag(precompute.probabilities_per_complex(batch, x))
                return {**out, PARTS_ATTR: self._parts_per_complex(batch, x, rank)}

            return fit_per_complex(dataset, self.attr, rank, both)
        fit_mask = getattr(self.mask, "fit", None)
        if callable(fit_mask):
            dataset = fit_mask(dataset)
        if not self.hodge_parts:
            return dataset
        return fit_per_complex(
            dataset,
            self.attr,
            rank,
            lambda batch, x, rows: {PARTS_ATTR: self._parts_per_complex(batch, x, rank)},
        )

    def _signal_rank(self) -> int:
        a = self.attr
        return int(a[2]) if len(a) == 3 and a[:2] == "x_" and a[2] in "012" else 1

    def _parts_per_complex(self, data: Any, x: Tensor, rank: int) -> Tensor:
        """Hodge parts ``[rows, 3]`` of the signals ``x`` of samples with their own
        complexes (the batch's block-diagonal complex)."""
        if x.dim() == 2 and x.shape[1] != 1:
            raise ValueError(
                f"Hodge parts need a single-channel flow, got `{self.attr}` of shape "
                f"{tuple(x.shape)}; pass hodge_parts=False for multi-channel signals"
            )
        samples_as_rows(data, x, rank, self.attr)
        hodge = hodge_of(data, rank)
        return hodge_parts(hodge, x.reshape(1, -1))[0]  # [rows, 3]

    def _check_stored_parts(self, parts: Any, x: Tensor) -> None:
        """Raise unless the stored Hodge parts ``[rows, 3]`` sum to the flow ``x`` the views
        are made of (to a thousandth of its largest magnitude): a transform that changed the
        flows after :meth:`fit` leaves parts of other flows."""
        name = f"data.{PARTS_ATTR}"
        rows = x.shape[0]
        if not isinstance(parts, Tensor) or tuple(parts.shape) != (rows, 3):
            shape = tuple(parts.shape) if isinstance(parts, Tensor) else type(parts).__name__
            raise ValueError(
                f"`{name}` must have shape [{rows}, 3] (gradient, curl and harmonic parts of "
                f"every row of `data.{self.attr}`), got {shape}"
            )
        if x.dim() == 2 and x.shape[1] != 1:
            return  # several channels: no parts to compare (a multi-channel error elsewhere)
        flow = x.reshape(-1).double()
        gap = float((parts.double().sum(dim=1) - flow).abs().max()) if rows else 0.0
        scale = float(flow.abs().max()) if rows else 0.0
        if not gap <= 1e-3 * scale:  # also NaN
            raise ValueError(
                f"the stored `{name}` do not sum to `data.{self.attr}` (largest difference "
                f"{gap:.3g}, largest flow {scale:.3g}): the flows were changed after fit() "
                "computed their Hodge parts, e.g. by a transform before ContrastiveViews in "
                "Compose. Apply transforms that change the flows' values before fitting: as "
                "the dataset's `pre_transform`, or to the samples before views.fit(dataset); "
                "ContrastiveViews must be the last transform"
            )

    def _warn_unfitted(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"ContrastiveViews computes the {what} of every sample at every access; call "
                "fit(dataset) once to store them (one batched call)",
                UserWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ per access
    def draw(self, data: Any) -> tuple[Tensor, Tensor]:
        """The two masked views of ``data[attr]``, the draws :meth:`forward` stores as
        ``{attr}_view1`` and ``{attr}_view2``, returned without storing them (nor, on a
        ``Batch``, a batch vector of its rows): for a training loop that needs the views
        only. Drop probabilities and Hodge parts missing on ``data`` are computed and
        stored as in :meth:`forward`.

        Returns:
            ``(view1, view2)``, each of the shape, dtype and device of ``data[attr]``.

        Raises:
            ValueError, TypeError: as :meth:`forward`.
        """
        if has_own_complex(data):
            data = as_complex_data(data)
            self._prepare_per_complex(data, get_flow(data, self.attr))
        else:
            x = get_flow(data, self.attr)
            self._prepare(data, x, isinstance(data, Batch))
        return self.mask(copy.copy(data))[self.attr], self.mask(copy.copy(data))[self.attr]

    def _prepare(self, data: Any, x: Tensor, is_batch: bool) -> None:
        """Store the drop probabilities and Hodge parts ``data`` lacks; check stored parts."""
        prob_attr = self.prob_attr
        precompute = getattr(self.mask, "precompute", None)
        if precompute is not None and prob_attr is not None and data.get(prob_attr) is None:
            probs = precompute.probabilities(x)  # once here, not in each of the two views
            self._warn_unfitted("drop probabilities")
            store(data, prob_attr, probs, like=self.attr)
        if self.hodge_parts and data.get(PARTS_ATTR) is None:
            parts = self._parts(x, stacked=is_batch)
            self._warn_unfitted("Hodge parts")
            store(data, PARTS_ATTR, parts, like=self.attr)
        elif self.hodge_parts:
            self._check_stored_parts(data[PARTS_ATTR], x)

    def forward(self, data: Any) -> Any:
        if has_own_complex(data):
            return self._forward_per_complex(as_complex_data(data))
        x = get_flow(data, self.attr)
        is_batch = isinstance(data, Batch)
        num_graphs = int(data.num_graphs) if is_batch else None
        self._prepare(data, x, is_batch)
        views = [self.mask(copy.copy(data))[self.attr] for _ in range(2)]
        for i, view in enumerate(views, start=1):
            store(data, f"{self.attr}_view{i}", view, like=self.attr)
        if is_batch:
            if data.get("batch") is None:
                n1 = x.shape[0] // max(num_graphs, 1)
                data.batch = batch_vector(num_graphs, n1, x.device)
                data.ptr = torch.arange(num_graphs + 1, device=x.device) * n1
            return data
        if not isinstance(data, ComplexData):  # on the shared complex: sizes, no incidences
            attrs = {k: data[k] for k in data.keys()}  # noqa: SIM118 - Data API
            shared = ComplexData.on_shared_complex(self.hodge.complex)
            if "num_nodes" in data._store:
                shared.num_nodes = data._store["num_nodes"]
            for key, value in attrs.items():
                shared[key] = value
            return shared
        return data

    def _forward_per_complex(self, data: ComplexData) -> ComplexData:
        """:meth:`forward` on a sample (or batch) with its own complex."""
        self._prepare_per_complex(data, get_flow(data, self.attr))
        views = [self.mask(copy.copy(data))[self.attr] for _ in range(2)]
        for i, view in enumerate(views, start=1):
            store(data, f"{self.attr}_view{i}", view, like=self.attr)
        return data

    def _prepare_per_complex(self, data: ComplexData, x: Tensor) -> None:
        """:meth:`_prepare` on a sample (or batch) with its own complex."""
        prob_attr = self.prob_attr
        precompute = getattr(self.mask, "precompute", None)
        if precompute is not None and prob_attr is not None and data.get(prob_attr) is None:
            probs = precompute.probabilities_per_complex(data, x)
            self._warn_unfitted("drop probabilities")
            store(data, prob_attr, probs, like=self.attr)
        if self.hodge_parts and data.get(PARTS_ATTR) is None:
            parts = self._parts_per_complex(data, x, self._signal_rank())
            self._warn_unfitted("Hodge parts")
            store(data, PARTS_ATTR, parts, like=self.attr)
        elif self.hodge_parts:
            self._check_stored_parts(data[PARTS_ATTR], x)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(mask={self.mask!r}, attr={self.attr!r}, "
            f"hodge_parts={self.hodge_parts})"
        )
