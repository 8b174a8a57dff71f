"""The Hodge decomposition of signals of one rank on one complex: :class:`HodgeDecomposition`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from topo_contrastive._layout import as_samples
from topo_contrastive._utils.checks import check_int, check_real
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge._exact import (
    MAX_EXACT_BYTES,
    BlockwiseBackend,
    ExactBackend,
    HodgeBackend,
    edge_components,
    exact_bytes,
)
from topo_contrastive.hodge._iterative import iterative_backend
from topo_contrastive.hodge._linalg import check_supports
from topo_contrastive.hodge.parts import COMPONENTS, HodgeParts


class _OrthogonalProjections(torch.autograd.Function):
    """The three parts of ``x [B, N_k]``, differentiable: the gradient is ``sum_k P_k^T g_k``,
    one more decomposition of the stacked gradients (``P_k^T = W P_k W^-1``: the adjoint)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, rows: Any) -> tuple[torch.Tensor, ...]:
        ctx.rows = rows
        return tuple(rows(x))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[torch.Tensor | None, None]:
        used = [(k, g) for k, g in enumerate(grads) if g is not None]
        B = used[0][1].shape[0]
        parts = ctx.rows(torch.cat([g for _, g in used]), True)  # 3 x [len(used) * B, N_k]
        grad = sum(parts[k][i * B : (i + 1) * B] for i, (k, _) in enumerate(used))
        return grad, None


def _check_settings(complex: Any, backend: Any, max_exact_edges: Any, tol: Any) -> None:
    """Validate the settings of :class:`HodgeDecomposition`."""
    if not isinstance(complex, ComplexOperators):
        raise TypeError(
            f"`complex` must be a ComplexOperators, got {type(complex).__name__}"
        )
    if backend not in ("auto", "exact", "iterative", "blocks"):
        raise ValueError(
            f"`backend` must be 'auto', 'exact', 'iterative' or 'blocks', got {backend!r}"
        )
    check_int(max_exact_edges, "max_exact_edges", 1)
    check_real(tol, "tol", 0.0, open_low=True)


def _check_rank(complex: ComplexOperators, rank: Any) -> int:
    """``rank`` as an int in 0..2 that the complex has (rank 1 on every complex)."""
    if isinstance(rank, (int, np.integer)) and not isinstance(rank, bool) and rank == 1:
        return 1
    rank = complex.check_rank(rank)
    if rank not in (0, 1, 2):
        raise ValueError(
            f"`rank` = {rank}: the Hodge decomposition is implemented for signals of ranks "
            "(0, 1, 2) (nodes, edges, triangles), not for tetrahedra"
        )
    return rank


_BACKENDS: dict[str, Any] = {
    "exact": ExactBackend, "blocks": BlockwiseBackend, "iterative": iterative_backend
}


def _component(component: Any) -> int:
    """Index of ``component`` in :data:`COMPONENTS`."""
    if component not in COMPONENTS:
        raise ValueError(f"`component` must be one of {COMPONENTS}, got {component!r}")
    return COMPONENTS.index(component)


class HodgeDecomposition:
    r"""Split edge flows into gradient, curl and harmonic parts.

    Source: paper eq. (1) and §2.2; Barbarossa & Sardellitti, "Topological signal
    processing over simplicial complexes", IEEE TSP 68, 2020.

    .. math::
        \mathbf{x}_G = \mathbf{B}_1^\top \boldsymbol{\phi},\;
        \mathbf{L}_0 \boldsymbol{\phi} = \mathbf{B}_1 \mathbf{x}; \qquad
        \mathbf{x}_H = \mathbf{U}_H \mathbf{U}_H^\top \mathbf{x}; \qquad
        \mathbf{x}_C = \mathbf{x} - \mathbf{x}_G - \mathbf{x}_H
        = \mathbf{B}_2 \boldsymbol{\psi},\;
        \mathbf{L}_2 \boldsymbol{\psi} = \mathbf{B}_2^\top \mathbf{x}

    The parts are orthogonal and sum to the input (to about :math:`10^{-12}` relative for
    float64 flows, :math:`10^{-7}` for float32), computed in float64 and returned in the
    input's dtype, device and layout (empty ones included). With ``rank=k`` it splits
    signals on the rank-k simplices (:class:`HodgeParts`); the backends are described in
    docs/design.md §7.1.

    Args:
        complex: the complex's operators, or a TopoNetX ``SimplicialComplex`` /
            ``CellComplex`` (converted with :meth:`ComplexOperators.from_toponetx`).
        backend: ``"auto"`` (default: ``"exact"`` when ``N1 <= max_exact_edges`` and
            its dense matrices fit its budget, else ``"blocks"`` for many components of
            at most ``max_exact_edges`` edges each, such as a batch of complexes, else
            ``"iterative"``), ``"exact"`` (dense eigenbases, :math:`O(N_1^2 + N_2^2)`
            memory, at most 8 GiB, offers :meth:`coordinates` and :meth:`basis`),
            ``"iterative"`` (sparse solves) or ``"blocks"`` (exact per connected component;
            edge flows only).
        max_exact_edges: size threshold of ``"auto"`` (default ``2000``; at rank k it
            is compared with :math:`N_k`).
        tol: relative eigenvalue threshold of the ``"blocks"`` backend and tolerance of
            conjugate gradients (default ``1e-10``).
        rank: rank of the signals (keyword only; default ``1``: edge flows; ``0``:
            node signals, ``2``: triangle signals).

    Shapes:
        - **input:** ``x`` ``[N1]``, ``[B, N1]`` or a PyG batch's ``[B * N1, 1]`` (with
          ``batch`` or ``num_graphs``, see :meth:`decompose`), floating.
        - **output:** :class:`~topo_contrastive.hodge.HodgeParts` of three tensors in the
          layout, dtype and device of ``x``.

    Raises:
        TypeError: ``complex`` is not a :class:`~topo_contrastive.complex.ComplexOperators`;
            ``rank`` or ``max_exact_edges`` not an int, ``tol`` not a real number.
        ValueError: unknown ``backend`` or a non-positive ``max_exact_edges``/``tol``;
            a ``rank`` the complex does not have (e.g. 2 without triangles) or above 2;
            ``backend="exact"`` on a complex whose dense matrices exceed its memory
            budget (the message gives the size).

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
        >>> hodge = HodgeDecomposition(ops)
        >>> hodge.dims
        {'gradient': 3, 'curl': 0, 'harmonic': 1}
        >>> cycle = torch.tensor([1.0, -1.0, 1.0, 0.0], dtype=torch.float64)  # 0 -> 1 -> 2 -> 0
        >>> parts = hodge(cycle)
        >>> torch.allclose(parts.harmonic, cycle), float(parts.gradient.abs().max()) < 1e-12
        (True, True)
        >>> import itertools
        >>> tet = range(4)  # the hollow tetrahedron: beta_2 = 1
        >>> ops = ComplexOperators.from_simplices(
        ...     list(itertools.combinations(tet, 2)), list(itertools.combinations(tet, 3)))
        >>> hodge = HodgeDecomposition(ops, rank=2)
        >>> hodge.dims
        {'gradient': 3, 'curl': 0, 'harmonic': 1}
        >>> x_2 = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
        >>> [round(v, 6) for v in hodge(x_2).harmonic.tolist()]  # the closed surface
        [0.25, -0.25, 0.25, -0.25]
    """

    #: Rank of the decomposed signals (1: edge flows).
    rank: int = 1

    def __init__(
        self,
        complex: ComplexOperators,
        backend: str = "auto",
        max_exact_edges: int = 2000,
        tol: float = 1e-10,
        *,
        rank: int = 1,
    ):
        if type(complex).__name__ in ("SimplicialComplex", "CellComplex"):
            complex = ComplexOperators.from_toponetx(complex)  # TopoNetX's own complex
        _check_settings(complex, backend, max_exact_edges, tol)
        self.rank = _check_rank(complex, rank)
        self.complex = complex
        self.tol = float(tol)
        if backend == "auto":
            backend = "exact" if self.num_simplices <= max_exact_edges else "iterative"
            if backend == "exact" and exact_bytes(complex, self.rank) > MAX_EXACT_BYTES:
                backend = "iterative"  # e.g. many more 2-cells than edges
            if backend == "iterative" and self.rank == 1:
                # many small components (a batch of complexes): exact per component
                count, _, label = edge_components(complex)
                if count > 1 and int(np.bincount(label).max()) <= max_exact_edges:
                    backend = "blocks"
        self.backend = backend
        self._backend: HodgeBackend = _BACKENDS[backend](complex, self.rank, self.tol)
        star = complex._star(self.rank)  # the metric W_k (None: unweighted)
        self._root = None if star is None else np.sqrt(star)  # W_k^1/2, [N_k]

    @property
    def dims(self) -> dict[str, int]:
        """Dimensions of the gradient, curl and harmonic subspaces (``dims["harmonic"]`` is
        the Betti number :math:`\\beta_k`)."""
        return dict(self._backend.dims)

    @property
    def num_simplices(self) -> int:
        """:math:`N_k`, the length of the decomposed signals (:math:`N_1` for edge flows)."""
        return self.complex.num_simplices(self.rank)

    def decompose(
        self,
        x: torch.Tensor,
        batch: torch.Tensor | None = None,
        num_graphs: int | None = None,
    ) -> HodgeParts:
        """Gradient, curl and harmonic parts of edge flows.

        Args:
            x: floating edge flows in one of these layouts: ``[N1]`` (one flow),
                ``[N1, 1]`` (one sample's ``data.x_1``), ``[B, N1]``, ``[B, N1, 1]``,
                or a PyG batch ``[B * N1, 1]`` / ``[B * N1]`` (``batch.x_1``: samples
                one after the other), which needs ``batch`` or ``num_graphs``.
            batch: PyG's batch vector ``int64 [B * N1]`` of a batched ``x`` (checked:
                sample ``b`` owns rows ``b * N1 .. (b + 1) * N1 - 1``; default ``None``).
            num_graphs: number of samples ``B`` of a batched ``x`` (default ``None``).

        Returns:
            :class:`HodgeParts` with three tensors in the layout, dtype and device of ``x``
            (``B = 0`` and ``N1 = 0`` allowed), differentiable in ``x`` (the backward pass
            is one more decomposition).

        Raises:
            TypeError: ``x`` is not a floating tensor; ``batch`` not an integer tensor;
                ``num_graphs`` not an int.
            ValueError: another layout, a batched ``x`` without ``batch``/``num_graphs``
                or whose rows are not ``B * N1``, a ``batch`` that is not PyG's layout of
                flows on one complex, or NaN/inf entries.

        Example:
            >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]])
            >>> hodge = HodgeDecomposition(ops)
            >>> ops.edges.tolist()  # sorted, oriented low -> high
            [[0, 1], [0, 2], [1, 2]]
            >>> x_1 = torch.tensor([[1.0], [-1.0], [1.0], [2.0], [0.0], [0.0]])  # 2 samples
            >>> parts = hodge(x_1, num_graphs=2)  # a PyG batch's x_1 [B * N1, 1]
            >>> parts.harmonic.shape  # the input's layout
            torch.Size([6, 1])
            >>> [round(v, 4) for v in parts.harmonic.view(-1).tolist()]  # 0->1->2->0 is a cycle
            [1.0, -1.0, 1.0, 0.6667, -0.6667, 0.6667]
        """
        x2, restore = as_samples(x, self.num_simplices, self.rank, batch, num_graphs)
        out = self._decompose_rows(x2)
        return HodgeParts(*(restore(o) for o in out))

    def _decompose_rows(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The parts ``[B, N_k]`` of validated ``x [B, N_k]``, differentiable in ``x``."""
        if x.requires_grad and torch.is_grad_enabled():
            return list(_OrthogonalProjections.apply(x, self._decompose_values))
        return self._decompose_values(x)

    def _decompose_values(self, x: torch.Tensor, adjoint: bool = False) -> list[torch.Tensor]:
        """The parts of the values of ``x`` (numpy in float64 or float32, and back); in a
        metric ``W^-1/2 P~ W^1/2 x`` with the backend's orthogonal ``P~`` (``adjoint``: the
        transposed projections ``W^1/2 P~ W^-1/2 x``)."""
        xc = x.detach().cpu()  # [B, N_k]; float16/bfloat16 go via float32
        keep_dtype = x.dtype in (torch.float32, torch.float64)
        xn = (xc if keep_dtype else xc.float()).numpy()
        if self._root is None:
            out = self._backend.decompose(xn)
        else:
            into = 1.0 / self._root if adjoint else self._root
            out = self._backend.decompose_scaled(xn, into)
        return [torch.from_numpy(o).to(x.dtype).to(x.device) for o in out]

    __call__ = decompose

    def project(self, x: torch.Tensor, component: str, batch: torch.Tensor | None = None,
                num_graphs: int | None = None) -> torch.Tensor:  # fmt: skip
        """Projection :math:`\\mathbf{P}_k \\mathbf{x}` onto one Hodge subspace, in the layout,
        dtype and device of ``x`` (``component``: ``"gradient"``, ``"curl"`` or ``"harmonic"``;
        the other arguments and the errors as :meth:`decompose`)."""
        idx = _component(component)
        return self.decompose(x, batch=batch, num_graphs=num_graphs)[idx]

    def basis(self, component: str) -> torch.Tensor:
        """Orthonormal basis :math:`\\mathbf{U}_k` ``float64 [N1, dim_k]`` of the exact
        backend; the iterative one has the harmonic basis while :math:`N_1 \\beta_1 \\le
        2^{25}`. On a weighted complex it is orthonormal in the metric,
        :math:`\\mathbf{U}_k^\\top \\mathbf{W}_1 \\mathbf{U}_k = \\mathbf{I}`. A ``ValueError``
        for an unknown ``component`` or a basis the backend lacks."""
        idx = _component(component)
        u = self._backend.basis(idx)
        if u is not None:
            return torch.from_numpy(u.copy() if self._root is None else u / self._root[:, None])
        if self.backend == "blocks":
            raise ValueError(
                f"the 'blocks' backend keeps one {component} basis per connected component, "
                "not a dense basis of the whole complex; use project() or projector_block()"
            )
        if component == "harmonic":
            raise ValueError(
                f"the harmonic basis has beta_1 = {self.dims['harmonic']} columns of "
                f"{self.complex.num_edges} entries, too many to store in the 'iterative' "
                "backend; use project() or projector_block() instead"
            )
        raise ValueError(
            f"the {component} eigenbasis needs the 'exact' backend (this one is "
            f"{self.backend!r}); use project() or projector_block() instead"
        )

    def coordinates(self, x: torch.Tensor, component: str, batch: torch.Tensor | None = None,
                    num_graphs: int | None = None) -> torch.Tensor:  # fmt: skip
        """Spectral embedding :math:`\\tilde{\\mathbf{x}}_k = \\mathbf{U}_k^\\top \\mathbf{x}`
        (:math:`\\mathbf{U}_k^\\top \\mathbf{W}_1 \\mathbf{x}` on a weighted complex):
        ``[dim_k]`` for one flow ``[N1]``, else ``[B, dim_k]``, on ``x``'s device and dtype
        (``component`` and errors as :meth:`basis`, the other arguments as :meth:`decompose`)."""
        x2, _ = as_samples(x, self.num_simplices, self.rank, batch, num_graphs)
        u = self.basis(component).to(x.device, torch.float64)
        x2 = x2.double()
        if self._root is not None:  # U^T W x
            x2 = x2 * torch.from_numpy(np.square(self._root)).to(x.device)
        out = (x2 @ u).to(x.dtype)  # linear: keeps x's autograd graph
        single = x.dim() == 1 and batch is None and num_graphs is None
        return out[0] if single else out

    def projector_blocks(
        self,
        supports: Sequence[torch.Tensor | np.ndarray | Sequence[int]],
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> dict[str, list[torch.Tensor]]:
        """Blocks :math:`\\mathbf{P}_k[S, S]` of the three projectors on edge sets ``S``.

        Needed by the closed-form mask objective (docs/design.md §2.2); exact to about
        :math:`10^{-12}` with every backend (how each computes them: docs/design.md §7.1).
        On a weighted complex these are the blocks of the symmetric forms
        :math:`\\mathbf{W}_1^{1/2} \\mathbf{P}_k \\mathbf{W}_1^{-1/2}` (orthogonal
        projectors, as the Laplacians are symmetric forms; the metric's
        :math:`\\mathbf{W}_1 \\mathbf{P}_k` is :math:`\\mathbf{W}_1^{1/2}` times them on both
        sides, docs/weights.md).

        Args:
            supports: one integer index set (edge columns) per sample; sets may
                differ in size and may be empty.
            dtype: output dtype (default ``torch.float64``).
            device: output device (default CPU).

        Returns:
            ``{"gradient": [...], "curl": [...], "harmonic": [...]}``, each a list of
            symmetric ``[|S_b|, |S_b|]`` tensors, in the order of ``supports``.

        Raises:
            ValueError: an index is out of ``[0, N1)`` or repeated within a set.
        """
        sets = check_supports(supports, self.num_simplices, self.rank)
        blocks = self._backend.projector_blocks(sets)
        return {
            k: [torch.from_numpy(np.ascontiguousarray(b)).to(device=device, dtype=dtype) for b in v]
            for k, v in blocks.items()
        }

    def projector_block(
        self,
        support: torch.Tensor | np.ndarray | Sequence[int],
        component: str,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Block :math:`\\mathbf{P}_k[S, S]` ``[|S|, |S|]`` of one projector on one edge set
        (the batched form, with the errors: :meth:`projector_blocks`)."""
        idx = _component(component)
        return self.projector_blocks([support], dtype=dtype, device=device)[COMPONENTS[idx]][0]

    def __repr__(self) -> str:
        d = self.dims
        if self.rank == 1:
            head = f"backend={self.backend!r}, num_edges={self.complex.num_edges}"
        else:
            head = (
                f"rank={self.rank}, backend={self.backend!r}, "
                f"num_simplices={self.num_simplices}"
            )
        return (
            f"{type(self).__name__}({head}, gradient={d['gradient']}, curl={d['curl']}, "
            f"harmonic={d['harmonic']})"
        )
