r"""The ``"iterative"`` backend: sparse direct solves, no dense :math:`N_k \times N_k` matrix.

Rank 1 (edge flows, :class:`EdgeIterative`): solves with the grounded
:math:`\mathbf{L}_0`, a harmonic basis from exact cocycles or :math:`\mathbf{L}_2`
solves (see :class:`~topo_contrastive.HodgeDecomposition`).

Ranks 0 and 2 (``HodgeDecomposition(complex, rank=k)``): rank 0 in closed form
(component means, :class:`NodeIterative`). Rank 2 by sparse direct solves
(:class:`TriangleIterative`): :math:`\mathbf{x}_G = \mathbf{B}_2^\top
\boldsymbol{\phi}` with :math:`\mathbf{L}_1 \boldsymbol{\phi} = \mathbf{B}_2
\mathbf{x}` (any solution gives the same :math:`\mathbf{B}_2^\top\boldsymbol{\phi}`, as
the harmonic part of :math:`\boldsymbol{\phi}` is in :math:`\ker \mathbf{B}_2^\top`),
with :math:`\mathbf{L}_1` grounded at :math:`\beta_1` edges chosen by pivoted QR of the
rank-1 harmonic basis so that the reduced matrix is non-singular (the rank-1 case
grounds :math:`\mathbf{L}_0` at one node per component in the same way); the curl part
:math:`\mathbf{B}_3 \boldsymbol{\psi}` with :math:`\mathbf{B}_3^\top\mathbf{B}_3
\boldsymbol{\psi} = \mathbf{B}_3^\top \mathbf{x}` (conjugate gradients where
:math:`\mathbf{B}_3^\top \mathbf{B}_3` is singular); an orthonormal harmonic basis of
:math:`\beta_2` columns as for rank 1 (from random probes, while :math:`N_2 \beta_2 \le
2^{25}`).

The dimensions are exact at every rank: :math:`\operatorname{rank}\mathbf{B}_1 = N_0 -
\beta_0` from the connected components, :math:`\operatorname{rank}\mathbf{B}_2` and
:math:`\operatorname{rank}\mathbf{B}_3` by elimination
(:func:`~topo_contrastive.hodge.ranks.exact_rank`), never from a count of small
eigenvalues.

The precision is the same at every rank: about :math:`10^{-12}` relative for float64
signals; conjugate gradients, used only on singular systems without a kernel basis, to
``tol``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import scipy.sparse.linalg as sla

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import blocks as _blocks
from topo_contrastive.hodge._progress import progress_bar
from topo_contrastive.hodge.backend import HodgeBackend
from topo_contrastive.hodge.cocycles import cocycles, dual_forest
from topo_contrastive.hodge.linalg import (
    GroundedSolver,
    connected_components,
    factor_spd,
    map_chunks,
)
from topo_contrastive.hodge.parts import COMPONENTS
from topo_contrastive.hodge.ranks import exact_rank, independent_columns

__all__ = [
    "EdgeIterative",
    "IterativeBackend",
    "NodeIterative",
    "SolverBackend",
    "TriangleIterative",
    "iterative_backend",
]

# the iterative backend keeps an orthonormal harmonic basis [N_k, beta_k] up to this size
_MAX_HARMONIC_BASIS_ENTRIES = 2**25
# faces of rank k - 1 touched by one group of projector blocks (rank 2: edges)
_GROUP_MAX_FACES = 2048


def iterative_backend(complex: ComplexOperators, rank: int, tol: float) -> IterativeBackend:
    """The iterative backend of signals of rank ``rank`` (0, 1 or 2)."""
    return (NodeIterative, EdgeIterative, TriangleIterative)[rank](complex, tol)


class IterativeBackend(HodgeBackend):
    """What the ranks share: parts a few signals at a time, blocks group by group."""

    name = "iterative"

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        super().__init__(complex, rank, tol)
        self._harmonic_basis: np.ndarray | None = None
        self._dims: dict[str, int] = {}

    @property
    def dims(self) -> dict[str, int]:
        return dict(self._dims)

    def basis(self, index: int) -> np.ndarray | None:
        return self._harmonic_basis if COMPONENTS[index] == "harmonic" else None

    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        """Parts of ``x [B, N_k]`` in ``x``'s dtype, a few signals at a time (in threads),
        so that the working memory beyond input and output is a few signals in float64."""
        out = [np.empty(x.shape, dtype=x.dtype) for _ in COMPONENTS]

        def work(lo: int, hi: int) -> None:
            chunk = x[lo:hi].astype(np.float64)  # [c, N_k]
            for o, p in zip(out, self._parts_rows(chunk), strict=True):
                o[lo:hi] = p

        map_chunks(work, x.shape[0], rows=self.num_simplices)
        return out

    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        groups = self._group_sets(sets)
        # seconds to minutes on large complexes (the spectral masks' set-up): a progress
        # bar on a terminal or notebook, nothing in logs (tqdm's disable=None)
        for group in progress_bar(groups, "projector blocks", unit="group", minimum=2):
            members = [sets[i] for i in group]
            allcols = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
            uniq, inv = np.unique(allcols, return_inverse=True)
            _blocks.cut_set_blocks(blocks, members, inv, self._group_parts(uniq))
        return blocks

    @abstractmethod
    def _parts_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradient, curl and harmonic parts of signals ``x [m, N_k]`` (float64, one per
        row)."""

    @abstractmethod
    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        """Consecutive groups of sets whose blocks are computed together."""

    @abstractmethod
    def _group_parts(self, uniq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three blocks ``P[uniq, uniq]`` on the union ``uniq`` of a group's sets."""


class NodeIterative(IterativeBackend):
    """Rank 0: harmonic part = per-component mean (closed form)."""

    def __init__(self, complex: ComplexOperators, tol: float = 1e-10) -> None:
        super().__init__(complex, 0, tol)
        n0 = complex.num_nodes
        ncomp, self._labels = connected_components(complex.L0)
        self._num_components = ncomp
        self._sizes = np.bincount(self._labels, minlength=ncomp).astype(np.float64)
        self._dims = {"gradient": 0, "curl": n0 - ncomp, "harmonic": ncomp}
        if n0 * ncomp <= _MAX_HARMONIC_BASIS_ENTRIES:
            basis = np.zeros((n0, ncomp))
            basis[np.arange(n0), self._labels] = 1.0 / np.sqrt(self._sizes[self._labels])
            self._harmonic_basis = basis

    def _parts_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sums = np.stack([np.bincount(self._labels, xi, self._num_components) for xi in x])
        harm = (sums / self._sizes)[:, self._labels]  # [m, N0]
        return np.zeros_like(x), x - harm, harm

    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        return [list(range(len(sets)))] if sets else []

    def _group_parts(self, uniq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lab = self._labels[uniq]
        h = (lab[:, None] == lab[None, :]) / self._sizes[lab][None, :]
        return np.zeros_like(h), np.eye(uniq.size) - h, h


class SolverBackend(IterativeBackend):
    """Ranks 1 and 2: parts and blocks from a lower and an upper projection by solves.

    A subclass computes the lower (gradient) and upper (curl) parts of signals and
    blocks; the harmonic part is the projection on the stored harmonic basis (then the
    curl part is the remainder) or, without one, the remainder of the other two.
    """

    @property
    @abstractmethod
    def _has_upper(self) -> bool:
        """Whether the upper (curl) part can be non-zero."""

    @abstractmethod
    def _lower_rows(self, x: np.ndarray) -> np.ndarray:
        """Gradient parts of signals ``x [m, N_k]`` (float64, one per row)."""

    @abstractmethod
    def _upper_rows(self, x: np.ndarray) -> np.ndarray:
        """Curl parts of signals ``x [m, N_k]`` (float64, one per row), by solves."""

    @abstractmethod
    def _lower_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_G[cols, cols]`` for sorted unique ``cols``."""

    @abstractmethod
    def _upper_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_C[cols, cols]`` for sorted unique ``cols``, by solves."""

    def _parts_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        grad = self._lower_rows(x)
        if not self._has_upper:
            return grad, np.zeros_like(x), x - grad
        if self._harmonic_basis is not None:
            hb = self._harmonic_basis  # [N_k, beta_k]
            harm = (x @ hb) @ hb.T  # [m, N_k]
            curl = x - grad
            curl -= harm
            return grad, curl, harm
        curl = self._upper_rows(x)
        harm = x - grad
        harm -= curl
        return grad, curl, harm

    def _group_parts(self, uniq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g = self._lower_block(uniq)
        eye = np.eye(uniq.size)
        if not self._has_upper:
            return g, np.zeros_like(g), eye - g
        if self._harmonic_basis is not None:
            hb = self._harmonic_basis[uniq]  # [U, beta_k]
            h = hb @ hb.T  # [U, U]
            return g, eye - g - h, h
        c = self._upper_block(uniq)
        return g, c, eye - g - c


class EdgeIterative(SolverBackend):
    """Rank 1 (edge flows): grounded ``L0`` solves, harmonic basis, ``L2`` where needed."""

    def __init__(self, complex: ComplexOperators, tol: float = 1e-10) -> None:
        super().__init__(complex, 1, tol)
        ops = complex
        n0 = ops.num_nodes
        ncomp, labels = connected_components(ops.L0)
        self._a0: Any = None  # grounded L0, CSC [N0 - beta_0, N0 - beta_0]
        self._lu0: Any = None
        self._order0: np.ndarray | None = None  # fill-reducing order of the grounded L0
        self._lu2: Any = None
        self._l2_singular = False
        self._l2: Any = None  # B2[:, S]^T B2[:, S] (L2 without closed 2-cycles)
        # ground the first node of every connected component
        first = np.full(ncomp, -1, dtype=np.int64)
        order = np.arange(n0)[::-1]
        first[labels[order]] = order
        keep = np.ones(n0, dtype=bool)
        keep[first] = False
        self._keep = np.flatnonzero(keep)
        self._tail = np.ascontiguousarray(ops.edges[:, 0], dtype=np.intp)  # [N1]
        self._head = np.ascontiguousarray(ops.edges[:, 1], dtype=np.intp)  # [N1]
        self._keep_index = np.full(n0, -1, dtype=np.int64)  # node -> row, -1 if ground
        self._keep_index[self._keep] = np.arange(self._keep.size)
        if self._keep.size:
            self._a0 = ops.L0[self._keep][:, self._keep].tocsc()
            self._lu0 = factor_spd(self._a0)
            self._order0 = np.argsort(self._lu0.perm_c)  # position -> row
        self._forest = dual_forest(ops) if ops.num_faces else None
        # dimensions from exact ranks: rank B1 = N0 - beta_0 (components), rank B2 = N2
        # where the dual sweep collapses every triangle (ker B2 = 0), else by elimination
        # with closed 2-cycles (rank B2 < N2) the curl part is the projection on the
        # independent columns S of B2 (im B2[:, S] = im B2): B2[:, S]^T B2[:, S] is
        # non-singular, so no solve with the singular L2 is needed
        self._b2 = ops.B2  # [N1, rank B2]: the columns the curl part is solved on
        rank_b2 = ops.num_faces
        if ops.num_faces and self._forest is None:
            independent = independent_columns(ops.B2, "B2")
            rank_b2 = independent.size
            if rank_b2 < ops.num_faces:
                self._b2 = ops.B2[:, independent].tocsr()
            self._factor_l2()
        grad = n0 - ncomp
        self._beta1 = ops.num_edges - grad - rank_b2
        self._dims = {"gradient": grad, "curl": rank_b2, "harmonic": self._beta1}
        if self._beta1 * ops.num_edges <= _MAX_HARMONIC_BASIS_ENTRIES:
            self._build_harmonic_basis()
            self._lu2 = None  # decompositions no longer need L2
        elif ops.num_faces and self._lu2 is None and not self._l2_singular:
            self._factor_l2()  # the curl part will be solved with L2
        self._forest = None  # only needed for the harmonic basis

    @property
    def _has_upper(self) -> bool:
        return bool(self.complex.num_faces)

    def _factor_l2(self) -> None:
        """Factorise ``B2[:, S]^T B2[:, S]`` on the independent columns ``S`` (``L2`` itself
        without closed 2-cycles); non-singular, it falls back to conjugate gradients only
        on an exactly zero pivot of an ill-conditioned matrix."""
        self._l2 = (self._b2.T @ self._b2).tocsr()
        try:
            self._lu2, self._l2_singular = factor_spd(self._l2.tocsc()), False
        except RuntimeError:  # pragma: no cover - an exactly zero pivot: CG
            self._lu2, self._l2_singular = None, True

    def _solve_l0(self, rhs: np.ndarray) -> np.ndarray:
        """``phi`` with ``L0 phi = rhs`` for ``rhs [N0, k]`` summing to zero per component."""
        out = np.zeros_like(rhs)
        if self._lu0 is not None:
            out[self._keep] = self._lu0.solve(np.asfortranarray(rhs[self._keep]))
        return out

    def _solve_l2(self, rhs: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
        """``psi`` with ``L2 psi = rhs`` for ``rhs [N2, k]`` in the range of ``L2``.

        ``scale [k]``: norms of the flows the right-hand sides come from. With a singular
        ``L2`` (conjugate gradients) the iteration also stops at a residual of ``tol *
        scale``: for a flow with (almost) no curl part the rounding-level component of the
        right-hand side in ``ker L2`` keeps it from reaching ``tol`` relative to the
        right-hand side, and the iterates would grow without end.
        """
        if self._lu2 is not None:
            return self._lu2.solve(np.asfortranarray(rhs))
        l2 = self._l2
        out = np.zeros_like(rhs)
        for j in range(rhs.shape[1]):
            atol = 0.0 if scale is None else self.tol * float(scale[j])
            sol, info = sla.cg(
                l2, rhs[:, j], rtol=self.tol, atol=atol, maxiter=20 * l2.shape[0]
            )
            if info != 0:  # pragma: no cover - CG on a consistent SPSD system converges
                raise RuntimeError(f"conjugate gradients on L2 did not converge (info={info})")
            out[:, j] = sol
        return out

    def _gradient_np(self, x: np.ndarray) -> np.ndarray:
        """``P_G x`` for ``x [N1, k]`` float64."""
        ops = self.complex
        return ops.B1.T @ self._solve_l0(ops.B1 @ x)

    def _curl_np(self, x: np.ndarray) -> np.ndarray:
        """``P_C x`` for ``x [N1, k]`` float64, by solves with ``L2``."""
        if not self.complex.num_faces:
            return np.zeros_like(x)
        b2 = self._b2
        return b2 @ self._solve_l2(b2.T @ x, scale=np.linalg.norm(x, axis=0))

    def _build_harmonic_basis(self) -> None:
        """Orthonormal basis ``[N1, beta_1]`` of ``ker B1 ∩ ker B2^T``.

        Harmonic parts of ``beta_1 + 2`` random cocycles (``z - P_G z``: solves with
        ``L0`` only) when the dual sweep applies, else of random flows
        (``z - P_G z - P_C z``: solves with ``L2`` as well); then an SVD keeps
        ``beta_1`` directions and a second projection removes solver round-off.
        """
        n1 = self.complex.num_edges
        if self._beta1 == 0:
            self._harmonic_basis = np.zeros((n1, 0))
            return
        rng = np.random.default_rng(0)
        k = self._beta1 + 2
        if self._forest is not None:
            probe = cocycles(self.complex, self._forest, k, rng)
            h = probe - self._gradient_np(probe)
        else:
            probe = rng.standard_normal((n1, k))
            h = probe - self._gradient_np(probe) - self._curl_np(probe)
        u, _, _ = np.linalg.svd(h, full_matrices=False)
        basis = u[:, : self._beta1]
        basis = basis - self._gradient_np(basis)
        if self._forest is None:
            basis = basis - self._curl_np(basis)
        self._harmonic_basis, _ = np.linalg.qr(basis)

    def _lower_rows(self, x: np.ndarray) -> np.ndarray:
        """Gradient parts of flows ``x [k, N1]``.

        Row layout throughout (the layout of the flows): divergence and gradient from
        the edge list (``bincount`` and gathers, cache-friendly), and the transposed
        right-hand sides of the solves are views, so no array of ``N1`` entries is ever
        transposed.
        """
        n0, tail, head = self.complex.num_nodes, self._tail, self._head
        # divergence B1 x (B1[tail, e] = -1, B1[head, e] = +1)
        r = np.stack([np.bincount(head, xi, n0) - np.bincount(tail, xi, n0) for xi in x])
        phi = np.zeros_like(r)  # [k, N0]
        if self._lu0 is not None:
            sol = self._lu0.solve(np.asfortranarray(r[:, self._keep].T))  # [N0 - beta_0, k]
            phi[:, self._keep] = sol.T
        grad = phi[:, head]  # [k, N1]: B1^T phi
        grad -= phi[:, tail]
        return grad

    def _upper_rows(self, x: np.ndarray) -> np.ndarray:
        """Curl parts of flows ``x [k, N1]`` by solves with ``L2``."""
        b2 = self._b2
        psi = self._solve_l2(
            np.stack([b2.T @ xi for xi in x]).T, scale=np.linalg.norm(x, axis=1)
        )  # [N2, k]
        return np.stack([b2 @ p for p in psi.T])  # [k, N1]

    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        """Consecutive groups of sets touching a cost-optimal number of nodes each."""
        cap = _blocks.group_nodes(None if self._lu0 is None else self._lu0.nnz)
        return _blocks.group_consecutive(
            sets, lambda s: set(self.complex.edges[s].ravel().tolist()), cap
        )

    def _lower_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_G[edges, edges]`` = ``B1[V, E]^T L0g^{-1}[V, V] B1[V, E]`` (touched nodes V)."""
        ops = self.complex
        if self._lu0 is None or cols.size == 0:
            return np.zeros((cols.size, cols.size))
        rows = self._keep_index[np.unique(ops.edges[cols])]
        rows = rows[rows >= 0]  # ground nodes have phi = 0
        nodes = np.sort(rows)
        z = _blocks.inverse_block(self._a0, self._lu0, self._order0, nodes)
        b = ops.B1[self._keep[nodes]][:, cols].tocsc()  # [|V|, |E|], two entries per column
        w = b.T @ z  # [|E|, |V|] = B^T Z
        g = b.T @ w.T  # B^T (B^T Z)^T = B^T Z B (Z symmetric)
        return 0.5 * (g + g.T)

    def _upper_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_C[edges, edges]`` by solves with ``L2`` on the rows ``B2[edges]``."""
        ops = self.complex
        if not ops.num_faces or cols.size == 0:
            return np.zeros((cols.size, cols.size))
        b2 = self._b2[cols]  # [|E|, rank B2]
        c = np.empty((cols.size, cols.size))

        def work(lo: int, hi: int) -> None:
            psi = self._solve_l2(b2[lo:hi].T.toarray())  # [N2, c]
            c[:, lo:hi] = b2 @ psi

        map_chunks(work, cols.size, rows=ops.num_faces)
        return 0.5 * (c + c.T)


class TriangleIterative(SolverBackend):
    """Rank 2: grounded L1 (via the rank-1 harmonic basis) and L3 = B3^T B3 solvers."""

    def __init__(self, complex: ComplexOperators, tol: float = 1e-10) -> None:
        super().__init__(complex, 2, tol)
        ops = complex
        edges = EdgeIterative(ops, tol=tol)
        kernel = edges.basis(COMPONENTS.index("harmonic"))  # [N1, beta_1] or None: CG
        self._solver_lo = GroundedSolver(ops.L1, kernel, tol)
        grad_dim = edges.dims["curl"]  # rank(B2)
        curl_dim = 0
        self._solver_up: GroundedSolver | None = None
        if ops.num_tetrahedra:
            self._solver_up = GroundedSolver(ops.L3, None, tol)
            curl_dim = exact_rank(ops.B3, "B3")
        n2 = ops.num_faces
        beta2 = n2 - grad_dim - curl_dim
        self._dims = {"gradient": grad_dim, "curl": curl_dim, "harmonic": beta2}
        if beta2 == 0:
            self._harmonic_basis = np.zeros((n2, 0))
        elif beta2 * n2 <= _MAX_HARMONIC_BASIS_ENTRIES:
            rng = np.random.default_rng(0)
            z = rng.standard_normal((n2, beta2 + 2))
            h = z - self._lower_np(z) - self._upper_np(z)
            u, _, _ = np.linalg.svd(h, full_matrices=False)
            basis = u[:, :beta2]
            basis = basis - self._lower_np(basis) - self._upper_np(basis)
            self._harmonic_basis, _ = np.linalg.qr(basis)

    @property
    def _has_upper(self) -> bool:
        return self._solver_up is not None

    def _lower_np(self, x: np.ndarray) -> np.ndarray:
        """``P_G x = B2^T phi``, ``L1 phi = B2 x``, for ``x [N2, m]``."""
        b2 = self.complex.B2
        scale = np.linalg.norm(x, axis=0)
        return np.asarray(b2.T @ self._solver_lo.solve(np.asarray(b2 @ x), scale))

    def _upper_np(self, x: np.ndarray) -> np.ndarray:
        """``P_C x = B3 psi``, ``B3^T B3 psi = B3^T x``, for ``x [N2, m]``."""
        if self._solver_up is None:
            return np.zeros_like(x)
        b3 = self.complex.B3
        scale = np.linalg.norm(x, axis=0)
        return np.asarray(b3 @ self._solver_up.solve(np.asarray(b3.T @ x), scale))

    def _lower_rows(self, x: np.ndarray) -> np.ndarray:
        return self._lower_np(x.T).T

    def _upper_rows(self, x: np.ndarray) -> np.ndarray:
        return self._upper_np(x.T).T

    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        """Consecutive groups of sets touching at most 2048 faces of rank k - 1 each."""
        b2 = self.complex.B2.tocsc()
        return _blocks.group_consecutive(
            sets, lambda s: set(b2[:, s].indices.tolist()), _GROUP_MAX_FACES
        )

    def _lower_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_G[cols, cols] = B2[:, cols]^T phi`` with ``L1 phi = B2[:, cols]``
        (one solve per simplex of the set, a few at a time in threads)."""
        b = self.complex.B2[:, cols].tocsc()  # [N1, |S|]
        n1 = self.complex.num_edges
        phi = np.empty((n1, cols.size))

        def work(lo: int, hi: int) -> None:
            rhs = b[:, lo:hi].toarray()
            phi[:, lo:hi] = self._solver_lo.solve(rhs, np.ones(hi - lo))

        map_chunks(work, cols.size, rows=n1)
        g = np.asarray(b.T @ phi)
        return 0.5 * (g + g.T)

    def _upper_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_C[cols, cols]`` by solves with ``B3^T B3`` on the rows ``B3[cols]``."""
        b3 = self.complex.B3[cols]  # [|S|, N3]
        psi = self._solver_up.solve(b3.T.toarray(), np.ones(cols.size))  # [N3, |S|]
        c = np.asarray(b3 @ psi)
        return 0.5 * (c + c.T)
