r"""Both contrastive views and the Hodge parts of a sample, as one PyG dataset transform
(paper §3-4: two augmented views per sample, negatives weighted by the Hodge parts of the
original flows)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Batch, InMemoryDataset
from torch_geometric.transforms import BaseTransform

from topo_contrastive._layout import batch_vector
from topo_contrastive._utils.checks import check_bool
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.data import ComplexData
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.transforms._common import (
    as_hodge,
    as_input,
    bind_hodge,
    check_attr,
    check_rows,
    fit_inputs,
    fit_plan,
    fit_store,
    get_flow,
    no_complex,
    rank_of,
    signals,
    store,
)
from topo_contrastive.transforms.hodge_spectral_mask import HodgeSpectralMask

#: Attribute holding the Hodge parts ``[rows, 3]`` (gradient, curl, harmonic columns).
PARTS_ATTR = "hodge_parts"


def hodge_parts(hodge: HodgeDecomposition, x: Tensor) -> Tensor:
    """Gradient, curl and harmonic parts ``[S, N_k, 3]`` of dense samples ``x [S, N_k]``;
    on a weighted complex scaled by :math:`\\mathbf{W}_k^{1/2}` (their Euclidean cosines and
    energies are those of the metric)."""
    parts = torch.stack(list(hodge(x)), dim=-1)
    root = _metric_root(hodge, x)
    return parts if root is None else parts * root[:, None]


def _metric_root(hodge: HodgeDecomposition | None, x: Tensor) -> Tensor | None:
    """:math:`\\mathbf{W}_k^{1/2}` ``[N_k]`` of a weighted complex on ``x``'s device and
    dtype, ``None`` on an unweighted one."""
    if hodge is None or hodge.complex.metric == "unweighted":
        return None
    star = hodge.complex.hodge_star(hodge.rank)
    return torch.from_numpy(np.sqrt(star)).to(device=x.device, dtype=x.dtype)


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
    sample once and stores them on the dataset; each access then only draws two masks. With
    ``fit_only=True`` it stores them on one sample and draws nothing: as a dataset's
    ``pre_transform`` the processed file holds the fit, so the dataset reopened from its
    ``root`` needs neither a second :meth:`fit` nor a complex. The complex is ``hodge``, the
    mask's, or ``dataset.complex`` bound by :meth:`fit`; samples with their own complexes
    (:class:`~topo_contrastive.data.ComplexData`, or TopoBench's ``incidence_1`` /
    ``incidence_2``) each use their own. It also accepts a ``Batch``, and never modifies
    the input. **Order of transforms:** the stored parts are those of the flows when fitted,
    so a transform that changes the flows' values belongs before (the dataset's
    ``pre_transform``, or applied before :meth:`fit`); parts that no longer sum to the flow
    raise a ``ValueError``.

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
        fit_only (bool, optional): store the fit (drop probabilities, Hodge parts, sizes)
            on the returned sample and draw no views: the ``pre_transform`` form.
            (default: ``False``)

    Shapes:
        - **input:** ``data[attr]`` ``[N1, 1]`` (``[N1, C]`` with ``hodge_parts=False``)
        - **output:** ``{attr}_view1``, ``{attr}_view2`` as ``data[attr]``; ``hodge_parts``
          ``[N1, 3]`` (columns gradient, curl, harmonic); a ``DataLoader`` batch holds
          ``[sum N1, ...]`` and the edges' batch vector ``batch_1``.

    Raises:
        TypeError: ``mask`` not callable, ``hodge``/``attr``/``hodge_parts`` of another type;
            no complex known where one is needed.
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
        fit_only: bool = False,
    ) -> None:
        if not callable(mask):
            raise TypeError(
                f"`mask` must be a transform (callable) such as HodgeSpectralMask or "
                f"EdgeFlowMask, got {type(mask).__name__}"
            )
        self.attr = check_attr(f"x_{getattr(mask, 'rank', 1)}" if attr is None else attr, "attr")
        if getattr(mask, "attr", self.attr) != self.attr:
            raise ValueError(
                f"`mask` works on {mask.attr!r} but the views are made of {self.attr!r}; "
                "give both the same `attr`"
            )
        self.mask = mask
        self.hodge_parts = check_bool(hodge_parts, "hodge_parts")
        self.fit_only = check_bool(fit_only, "fit_only")
        #: The decomposition of the flows' complex (``None`` until bound by :meth:`fit`).
        self.hodge = as_hodge(hodge)
        if isinstance(mask, HodgeSpectralMask):  # one decomposition for the views and mask
            self.hodge = mask.hodge if self.hodge is None else mask.bind(self.hodge)
        self._warned = False

    def _complex(self) -> HodgeDecomposition | None:
        """The views' decomposition, else a spectral mask's (bound later on its own)."""
        return self.hodge if self.hodge is not None else getattr(self.mask, "hodge", None)

    def bind(self, dataset: Any) -> HodgeDecomposition:
        """Bind the transform and an unbound spectral mask to ``dataset.complex`` (one
        decomposition shared by both), or check that the dataset's complex is the given one.

        Raises:
            TypeError: no complex given and ``dataset`` has no ``complex``.
            ValueError: ``dataset.complex`` is not the given complex.
        """
        self.hodge = bind_hodge(self._complex(), dataset, type(self).__name__)
        if isinstance(self.mask, HodgeSpectralMask):
            self.mask.bind(self.hodge)
        return self.hodge

    def fit(self, dataset: InMemoryDataset | Iterable[Any]) -> Any:
        """Bind the complex (:meth:`bind`), then compute, for all samples of ``dataset`` in
        one batched call, the Hodge parts of the flows and (spectral mask) the drop
        probabilities, and store them on the samples (``hodge_parts``, ``drop_prob``).
        Samples with their own complexes go a chunk at a time, each chunk's decomposition
        shared by both.

        Args:
            dataset: an ``InMemoryDataset`` (updated in place, not its file, and returned;
                views made by indexing share the new attributes) or an iterable of ``Data``
                (a list of shallow copies is returned).

        Raises:
            TypeError: no complex given and ``dataset`` has none.
            ValueError: a dataset on another complex; a sample without a valid flow of
                :math:`N_1` rows.
        """
        mask = self.mask
        spectral = isinstance(mask, HodgeSpectralMask)
        if not spectral and callable(getattr(mask, "fit", None)):
            dataset = mask.fit(dataset)
        dataset, own = fit_plan(dataset, self.attr)
        hodge = self.bind(dataset) if own is None else None
        if not (spectral or self.hodge_parts):
            return dataset
        inputs = fit_inputs(dataset, own, self.attr, rank_of(self.attr), hodge)
        values = [self._fitted(data, x) for data, x in inputs]
        tags = {}
        if spectral:
            key, tag = mask._tag()
            tags = {key: torch.full((1, 1), tag, dtype=torch.int32)}
        return fit_store(dataset, own, self.attr, values, tags)

    def _fitted(self, data: Any, x: Tensor) -> dict[str, Tensor]:
        """What :meth:`fit` stores for the signals ``x`` of ``data`` (``None``: the stacked
        samples of the shared complex): drop probabilities, Hodge parts."""
        out = {}
        if isinstance(self.mask, HodgeSpectralMask):
            out[self.mask.prob_attr] = self.mask._probabilities(data, x)
        if self.hodge_parts:
            out[PARTS_ATTR] = self._parts(data, x)
        return out

    def _parts(self, data: Any, x: Tensor) -> Tensor:
        """Hodge parts ``[rows, 3]`` of the single-channel signals ``x`` of ``data``."""
        if x.dim() == 2 and x.shape[1] != 1:
            raise ValueError(
                f"Hodge parts need a single-channel flow, got `{self.attr}` of shape "
                f"{tuple(x.shape)}; pass hodge_parts=False for multi-channel signals"
            )
        rank, owner = rank_of(self.attr), type(self).__name__
        hodge, flows, back = signals(data, x, self.attr, rank, self._complex(), owner, False)
        return back(hodge_parts(hodge, flows))

    def _check_stored_parts(self, parts: Any, x: Tensor) -> None:
        """Raise unless the stored Hodge parts ``[rows, 3]`` sum to the flow ``x`` (to a
        thousandth of its largest magnitude): parts of flows changed after :meth:`fit`."""
        name, rows = f"data.{PARTS_ATTR}", x.shape[0]
        if not isinstance(parts, Tensor) or tuple(parts.shape) != (rows, 3):
            shape = tuple(parts.shape) if isinstance(parts, Tensor) else type(parts).__name__
            raise ValueError(
                f"`{name}` must have shape [{rows}, 3] (gradient, curl and harmonic parts of "
                f"every row of `data.{self.attr}`), got {shape}"
            )
        if (x.dim() == 2 and x.shape[1] != 1) or not rows:
            return  # several channels: no parts to compare (a multi-channel error elsewhere)
        flow = x.reshape(-1).double()
        root = _metric_root(self._complex(), flow)  # parts in a metric: W^1/2 x
        if root is not None and rows % root.numel() == 0:
            flow = flow * root.repeat(rows // root.numel())
        gap = float((parts.double().sum(dim=1) - flow).abs().max())
        scale = float(flow.abs().max())
        if not gap <= 1e-3 * scale:  # also NaN
            raise ValueError(
                f"the stored `{name}` do not sum to `data.{self.attr}` (largest difference "
                f"{gap:.3g}, largest flow {scale:.3g}): the flows were changed after fit() "
                "computed their Hodge parts, e.g. by a transform before ContrastiveViews in "
                "Compose. Apply transforms that change the flows' values before fitting: as "
                "the dataset's `pre_transform`, or to the samples before views.fit(dataset); "
                "ContrastiveViews must be the last transform"
            )

    def _prepare(self, data: Any) -> Tensor:
        """Check the flow ``data[attr]`` (returned); store the drop probabilities and Hodge
        parts ``data`` lacks; check stored parts."""
        x = get_flow(data, self.attr)
        check_rows(data, x, self.attr, self._complex())
        computed = False
        mask = self.mask
        if isinstance(mask, HodgeSpectralMask) and data.get(mask.prob_attr) is None:
            p = mask._probabilities(data, x)  # once here, not in each of the two views
            for key, value in (mask._with_tag(p) if self.fit_only else {mask.prob_attr: p}).items():
                store(data, key, value, like=self.attr)
            computed = True
        if self.hodge_parts and data.get(PARTS_ATTR) is None:
            store(data, PARTS_ATTR, self._parts(data, x), like=self.attr)
            computed = True
        elif self.hodge_parts:
            self._check_stored_parts(data[PARTS_ATTR], x)
        if computed and not (self._warned or self.fit_only):
            self._warned = True
            warnings.warn(
                "ContrastiveViews computes the Hodge parts or drop probabilities of every "
                "sample at every access; call fit(dataset) once to store them (one batched "
                "call), or store them with fit_only=True as the dataset's pre_transform",
                UserWarning,
                stacklevel=3,
            )
        return x

    def draw(self, data: Any) -> tuple[Tensor, Tensor]:
        """The two masked views of ``data[attr]``, the draws :meth:`forward` stores as
        ``{attr}_view1`` and ``{attr}_view2``, returned without storing anything on
        ``data``: for a training loop that needs the views only.

        Returns:
            ``(view1, view2)``, each of the shape, dtype and device of ``data[attr]``.

        Raises:
            ValueError, TypeError: as :meth:`forward`.
        """
        data = as_input(copy.copy(data))
        self._prepare(data)
        return self.mask(copy.copy(data))[self.attr], self.mask(copy.copy(data))[self.attr]

    def forward(self, data: Any) -> Any:
        data = as_input(data)
        x = self._prepare(data)
        if not self.fit_only:
            views = [self.mask(copy.copy(data))[self.attr] for _ in range(2)]
            for i, view in enumerate(views, start=1):
                store(data, f"{self.attr}_view{i}", view, like=self.attr)
        if isinstance(data, ComplexData):
            return data
        if isinstance(data, Batch):
            if data.get("batch") is None:
                num = int(data.num_graphs)
                n = x.shape[0] // max(num, 1)
                data.batch = batch_vector(num, n, x.device)
                data.ptr = torch.arange(num + 1, device=x.device) * n
            return data
        # a sample of the shared complex as ComplexData (its sizes, no incidences), from the
        # sizes it carries (stored by a fit_only pre_transform) or from the bound complex
        if "cell_counts" in data.keys():  # noqa: SIM118 - Data API
            shared = ComplexData()
        else:
            hodge = self._complex()
            if hodge is None:
                raise no_complex(type(self).__name__)
            shared = ComplexData.on_shared_complex(hodge.complex)
        for key in data.keys():  # noqa: SIM118 - Data API
            shared[key] = data[key]
        return shared

    def __repr__(self) -> str:
        fit_only = ", fit_only=True" if self.fit_only else ""
        return (
            f"{type(self).__name__}(mask={self.mask!r}, attr={self.attr!r}, "
            f"hodge_parts={self.hodge_parts}{fit_only})"
        )
