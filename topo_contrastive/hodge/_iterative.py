"""The ``"iterative"`` backend: sparse direct solves, no dense :math:`N_k \\times N_k` matrix
(rank 0 in closed form, ranks 1 and 2 by grounded solves; docs/design.md §7.1)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge._exact import HodgeBackend
from topo_contrastive.hodge._linalg import (
    GroundedSolver,
    connected_components,
    cut_set_blocks,
    factor_spd,
    group_consecutive,
    group_nodes,
    inverse_block,
    map_chunks,
    progress_bar,
)
from topo_contrastive.hodge.parts import COMPONENTS
from topo_contrastive.hodge.ranks import exact_rank, independent_columns

# the iterative backend keeps an orthonormal harmonic basis [N_k, beta_k] up to this size
_MAX_HARMONIC_BASIS_ENTRIES = 2**25
# faces of rank k - 1 touched by one group of projector blocks (rank 2: edges)
_GROUP_MAX_FACES = 2048

#: ``(levels, paired)`` of :func:`dual_forest`.
DualForest = tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]


def iterative_backend(complex: ComplexOperators, rank: int, tol: float) -> IterativeBackend:
    """The iterative backend of signals of rank ``rank`` (0, 1 or 2; edge flows only on a
    weighted complex)."""
    if rank != 1 and complex._star(rank) is not None:
        raise ValueError(
            f"the 'iterative' backend decomposes signals of rank {rank} on an unweighted "
            f"complex only (this one's metric is {complex.metric!r}): use backend='exact'"
        )
    return (NodeIterative, EdgeIterative, TriangleIterative)[rank](complex, tol)


class IterativeBackend(HodgeBackend):
    """Parts a few signals at a time, blocks group by group. Subclasses define
    ``_parts_rows(x [m, N_k])``, ``_group_sets(sets)`` (consecutive groups of sets) and
    ``_group_parts(uniq)`` (the three blocks on the union of a group's sets)."""

    name = "iterative"
    _harmonic_basis: np.ndarray | None = None

    def basis(self, index: int) -> np.ndarray | None:
        return self._harmonic_basis if COMPONENTS[index] == "harmonic" else None

    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        return self.decompose_scaled(x, None)

    def decompose_scaled(self, x: np.ndarray, into: np.ndarray | None) -> list[np.ndarray]:
        # scaled chunk by chunk: no float64 copy of all signals and parts (large batches)
        out = [np.empty(x.shape, dtype=x.dtype) for _ in COMPONENTS]

        def work(lo: int, hi: int) -> None:
            chunk = x[lo:hi].astype(np.float64)  # [c, N_k]
            if into is not None:
                chunk *= into
            for o, p in zip(out, self._parts_rows(chunk), strict=True):
                o[lo:hi] = p if into is None else p / into

        map_chunks(work, x.shape[0], rows=self.num_simplices)
        return out

    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        # seconds to minutes on large complexes: a bar on a terminal or notebook only
        for group in progress_bar(self._group_sets(sets), "projector blocks", unit="group"):
            members = [sets[i] for i in group]
            allcols = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
            uniq, inv = np.unique(allcols, return_inverse=True)
            cut_set_blocks(blocks, members, inv, self._group_parts(uniq))
        return blocks

    @abstractmethod
    def _parts_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    @abstractmethod
    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]: ...

    @abstractmethod
    def _group_parts(self, uniq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


class NodeIterative(IterativeBackend):
    """Rank 0: harmonic part = per-component mean (closed form)."""

    def __init__(self, complex: ComplexOperators, tol: float = 1e-10) -> None:
        super().__init__(complex, 0, tol)
        n0 = complex.num_nodes
        ncomp, self._labels = connected_components(complex.L0)
        self._num_components = ncomp
        self._sizes = np.bincount(self._labels, minlength=ncomp).astype(np.float64)
        self.dims = {"gradient": 0, "curl": n0 - ncomp, "harmonic": ncomp}
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
    """Ranks 1 and 2: the lower (gradient) part by solves; the harmonic part the projection on
    the stored harmonic basis (the curl part the remainder), or without one the upper (curl)
    part by solves (the harmonic part the remainder). Subclasses set ``_has_upper`` and define
    ``_lower`` / ``_upper`` (parts of ``x [N_k, m]``) and ``_lower_block`` / ``_upper_block``
    (``P[cols, cols]``)."""

    _has_upper: bool

    @abstractmethod
    def _lower(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _upper(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _lower_block(self, cols: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _upper_block(self, cols: np.ndarray) -> np.ndarray: ...

    def _lower_rows(self, x: np.ndarray) -> np.ndarray:
        """Gradient parts of signals ``x [m, N_k]``."""
        return self._lower(x.T).T

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
        curl = self._upper(x.T).T
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

    def _set_harmonic_basis(
        self, n: int, beta: int, probes: Callable[[], np.ndarray], clean: Callable
    ) -> None:
        """Orthonormal basis of the ``beta`` leading left singular vectors of the harmonic
        parts of random ``probes``, cleaned once more of solver round-off by ``clean``."""
        if beta == 0:
            self._harmonic_basis = np.zeros((n, 0))
            return
        u, _, _ = np.linalg.svd(probes(), full_matrices=False)
        self._harmonic_basis, _ = np.linalg.qr(clean(u[:, :beta]))


class EdgeIterative(SolverBackend):
    """Rank 1: grounded ``L0`` solves, a harmonic basis from exact cocycles (or ``L2``
    solves), ``L2`` restricted to independent 2-cells where the curl part needs solves."""

    def __init__(self, complex: ComplexOperators, tol: float = 1e-10) -> None:
        super().__init__(complex, 1, tol)
        ops = complex
        n0 = ops.num_nodes
        ncomp, labels = connected_components(ops.L0)
        self._a0: Any = None  # grounded L0, CSC [N0 - beta_0, N0 - beta_0]
        self._lu0: Any = None
        self._order0: np.ndarray | None = None  # fill-reducing order of the grounded L0
        self._l2: GroundedSolver | None = None  # B2[:, S]^T B2[:, S] (L2 without 2-cycles)
        self._has_upper = bool(ops.num_faces)
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
        self._b1 = self.incidence(1)  # B1 W1^-1/2 (B1 where unweighted)
        if self._keep.size:
            # B1 W1^-1 B1^T: the complex's L0 (cached) where W0 = I
            l0 = ops.L0 if ops._star(0) is None else self._b1 @ self._b1.T
            self._a0 = l0[self._keep][:, self._keep].tocsc()
            self._lu0 = factor_spd(self._a0)
            self._order0 = np.argsort(self._lu0.perm_c)  # position -> row
        forest = dual_forest(ops) if ops.num_faces else None
        # exact dimensions: rank B1 = N0 - beta_0, rank B2 = N2 where the dual sweep applies
        # (ker B2 = 0), else by elimination; with closed 2-cycles the curl part is the
        # projection on the independent columns S of B2 (no solve with the singular L2)
        self._b2 = self.incidence(2)  # [N1, rank B2]: the columns the curl part is solved on
        rank_b2 = ops.num_faces
        if ops.num_faces and forest is None:
            independent = independent_columns(ops.B2, "B2")
            rank_b2 = independent.size
            if rank_b2 < ops.num_faces:
                self._b2 = self._b2[:, independent].tocsr()
            self._factor_l2()
        grad, beta = n0 - ncomp, ops.num_edges - (n0 - ncomp) - rank_b2
        self.dims = {"gradient": grad, "curl": rank_b2, "harmonic": beta}
        if beta * ops.num_edges <= _MAX_HARMONIC_BASIS_ENTRIES:
            self._build_harmonic_basis(forest, beta)
            self._l2 = None  # decompositions no longer need L2
        elif ops.num_faces and self._l2 is None:
            self._factor_l2()  # the curl part will be solved with L2

    def _factor_l2(self) -> None:
        """Factorise ``B2[:, S]^T B2[:, S]`` (non-singular; CG only on an exactly zero pivot)."""
        self._l2 = GroundedSolver((self._b2.T @ self._b2).tocsr(), None, self.tol, check=False)

    def _lower(self, x: np.ndarray) -> np.ndarray:
        """``P_G x = B1^T phi``, ``L0 phi = B1 x`` (grounded), for ``x [N1, k]``."""
        rhs = self._b1 @ x
        phi = np.zeros_like(rhs)
        if self._lu0 is not None:
            phi[self._keep] = self._lu0.solve(np.asfortranarray(rhs[self._keep]))
        return self._b1.T @ phi

    def _upper(self, x: np.ndarray) -> np.ndarray:
        """``P_C x = B2 psi``, ``L2 psi = B2^T x`` (on the independent 2-cells), ``x [N1, k]``."""
        if not self.complex.num_faces:
            return np.zeros_like(x)
        b2 = self._b2
        return b2 @ self._l2.solve(b2.T @ x, scale=np.linalg.norm(x, axis=0))

    def _build_harmonic_basis(self, forest: DualForest | None, beta: int) -> None:
        """From ``beta + 2`` random cocycles (the dual sweep: ``L0`` solves only) or random
        flows (``L2`` solves as well)."""
        ops, n1, lower = self.complex, self.complex.num_edges, self._lower

        def probes() -> np.ndarray:
            rng = np.random.default_rng(0)
            if forest is not None:
                z = cocycles(ops, forest, beta + 2, rng)  # B2^T z = 0
                z = z if self.scale is None else z * self.scale[:, None]  # in the metric
                return z - lower(z)
            z = rng.standard_normal((n1, beta + 2))
            return z - lower(z) - self._upper(z)

        def clean(b: np.ndarray) -> np.ndarray:
            b = b - lower(b)
            return b if forest is not None else b - self._upper(b)

        self._set_harmonic_basis(n1, beta, probes, clean)

    def _lower_rows(self, x: np.ndarray) -> np.ndarray:
        """Gradient parts of flows ``x [k, N1]`` in row layout: the divergence by ``bincount``,
        the gradient by gathers, the solves on transposed views (cache-friendly)."""
        n0, tail, head = self.complex.num_nodes, self._tail, self._head
        x = x if self.scale is None else x * self.scale  # B1 W1^-1/2 x: the metric's
        # divergence B1 x (B1[tail, e] = -1, B1[head, e] = +1)
        r = np.stack([np.bincount(head, xi, n0) - np.bincount(tail, xi, n0) for xi in x])
        phi = np.zeros_like(r)  # [k, N0]
        if self._lu0 is not None:
            sol = self._lu0.solve(np.asfortranarray(r[:, self._keep].T))  # [N0 - beta_0, k]
            phi[:, self._keep] = sol.T
        grad = phi[:, head]  # [k, N1]: B1^T phi
        grad -= phi[:, tail]
        if self.scale is not None:
            grad *= self.scale  # W1^-1/2 B1^T phi
        return grad

    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        cap = group_nodes(None if self._lu0 is None else self._lu0.nnz)
        return group_consecutive(sets, lambda s: set(self.complex.edges[s].ravel().tolist()), cap)

    def _lower_block(self, cols: np.ndarray) -> np.ndarray:
        """``B1[V, E]^T L0g^{-1}[V, V] B1[V, E]`` on the touched nodes ``V``."""
        ops = self.complex
        if self._lu0 is None or cols.size == 0:
            return np.zeros((cols.size, cols.size))
        rows = self._keep_index[np.unique(ops.edges[cols])]
        nodes = np.sort(rows[rows >= 0])  # ground nodes have phi = 0
        z = inverse_block(self._a0, self._lu0, self._order0, nodes)
        b = self._b1[self._keep[nodes]][:, cols].tocsc()  # [|V|, |E|], two entries a column
        g = b.T @ (b.T @ z).T  # B^T (B^T Z)^T = B^T Z B (Z symmetric)
        return 0.5 * (g + g.T)

    def _upper_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_C[cols, cols]`` by ``L2`` solves on the rows ``B2[cols]``."""
        if not self.complex.num_faces or cols.size == 0:
            return np.zeros((cols.size, cols.size))
        b2 = self._b2[cols]  # [|E|, rank B2]
        c = np.empty((cols.size, cols.size))

        def work(lo: int, hi: int) -> None:
            c[:, lo:hi] = b2 @ self._l2.solve(b2[lo:hi].T.toarray())  # [|E|, c]

        map_chunks(work, cols.size, rows=self.complex.num_faces)
        return 0.5 * (c + c.T)


class TriangleIterative(SolverBackend):
    """Rank 2: ``L1`` grounded by the rank-1 harmonic basis, ``L3 = B3^T B3`` solves."""

    def __init__(self, complex: ComplexOperators, tol: float = 1e-10) -> None:
        super().__init__(complex, 2, tol)
        ops = complex
        edges = EdgeIterative(ops, tol=tol)
        kernel = edges.basis(COMPONENTS.index("harmonic"))  # [N1, beta_1] or None: CG
        self._solver_lo = GroundedSolver(ops.L1, kernel, tol)
        grad_dim, curl_dim = edges.dims["curl"], 0  # rank(B2)
        self._solver_up: GroundedSolver | None = None
        if ops.num_tetrahedra:
            self._solver_up = GroundedSolver(ops.L3, None, tol)
            curl_dim = exact_rank(ops.B3, "B3")
        self._has_upper = self._solver_up is not None
        n2 = ops.num_faces
        beta = n2 - grad_dim - curl_dim
        self.dims = {"gradient": grad_dim, "curl": curl_dim, "harmonic": beta}
        if beta * n2 <= _MAX_HARMONIC_BASIS_ENTRIES:

            def clean(b: np.ndarray) -> np.ndarray:
                return b - self._lower(b) - self._upper(b)

            probes = np.random.default_rng(0).standard_normal
            self._set_harmonic_basis(n2, beta, lambda: clean(probes((n2, beta + 2))), clean)

    def _lower(self, x: np.ndarray) -> np.ndarray:
        """``P_G x = B2^T phi``, ``L1 phi = B2 x``, for ``x [N2, m]``."""
        b2 = self.complex.B2
        scale = np.linalg.norm(x, axis=0)
        return np.asarray(b2.T @ self._solver_lo.solve(np.asarray(b2 @ x), scale))

    def _upper(self, x: np.ndarray) -> np.ndarray:
        """``P_C x = B3 psi``, ``B3^T B3 psi = B3^T x``, for ``x [N2, m]``."""
        if self._solver_up is None:
            return np.zeros_like(x)
        b3 = self.complex.B3
        scale = np.linalg.norm(x, axis=0)
        return np.asarray(b3 @ self._solver_up.solve(np.asarray(b3.T @ x), scale))

    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        b2 = self.complex.B2.tocsc()
        return group_consecutive(sets, lambda s: set(b2[:, s].indices.tolist()), _GROUP_MAX_FACES)

    def _lower_block(self, cols: np.ndarray) -> np.ndarray:
        """``B2[:, cols]^T phi`` with ``L1 phi = B2[:, cols]`` (a few solves at a time)."""
        b = self.complex.B2[:, cols].tocsc()  # [N1, |S|]
        n1 = self.complex.num_edges
        phi = np.empty((n1, cols.size))

        def work(lo: int, hi: int) -> None:
            phi[:, lo:hi] = self._solver_lo.solve(b[:, lo:hi].toarray(), np.ones(hi - lo))

        map_chunks(work, cols.size, rows=n1)
        g = np.asarray(b.T @ phi)
        return 0.5 * (g + g.T)

    def _upper_block(self, cols: np.ndarray) -> np.ndarray:
        """``P_C[cols, cols]`` by solves with ``B3^T B3`` on the rows ``B3[cols]``."""
        b3 = self.complex.B3[cols]  # [|S|, N3]
        psi = self._solver_up.solve(b3.T.toarray(), np.ones(cols.size))  # [N3, |S|]
        c = np.asarray(b3 @ psi)
        return 0.5 * (c + c.T)


def dual_forest(ops: ComplexOperators) -> DualForest | None:
    """The collapse of the triangles onto the boundary for exact cocycles without ``L2``
    (docs/design.md §7.1): per depth, deepest first, ``(triangles, positions of their paired
    edges)``, and the paired edge of every triangle; ``None`` where it does not apply."""
    if not ops.is_simplicial:
        return None  # polygon 2-cells: the sweep below pairs triangles (L2 is factorised)
    n2 = ops.num_faces
    b2r = ops.B2.tocsr()  # [N1, N2], sorted indices
    count = np.diff(b2r.indptr)  # triangles per edge
    if count.max(initial=0) > 2:
        return None
    inner = np.flatnonzero(count == 2)
    ta, tb = b2r.indices[b2r.indptr[inner]], b2r.indices[b2r.indptr[inner] + 1]
    bound = np.flatnonzero(count == 1)
    tc, first = np.unique(b2r.indices[b2r.indptr[bound]], return_index=True)
    root = n2  # virtual node behind the boundary
    # dual graph, values = edge id + 1 (two triangles share at most one edge)
    rows = np.concatenate([ta, tb, tc, np.full(tc.size, root)])
    cols = np.concatenate([tb, ta, np.full(tc.size, root), tc])
    vals = np.concatenate([inner, inner, bound[first], bound[first]]) + 1
    dual = sp.csr_matrix((vals.astype(np.float64), (rows, cols)), shape=(n2 + 1, n2 + 1))
    order, pred = csgraph.breadth_first_order(dual, root, directed=False)
    if order.size != n2 + 1:
        return None  # a closed component: L2 may be singular
    tri = np.arange(n2)
    paired = np.asarray(dual[tri, pred[:n2]]).ravel().astype(np.int64) - 1  # [N2]
    # depth by pointer doubling: dist[t] = hops from t to anc[t]
    anc = np.append(pred[:n2], root)
    dist = np.append(np.ones(n2, dtype=np.int64), 0)
    while (anc[:n2] != root).any():
        m = np.flatnonzero(anc != root)
        dist[m] += dist[anc[m]]
        anc[m] = anc[anc[m]]
    depth = dist[:n2]
    tri_edges = ops.B2.tocsc().indices.reshape(n2, 3)  # [N2, 3], sorted per column
    position = np.argmax(tri_edges == paired[:, None], axis=1)  # [N2]
    by_depth = np.argsort(-depth, kind="stable")
    splits = np.flatnonzero(np.diff(depth[by_depth])) + 1
    return [(t, position[t]) for t in np.split(by_depth, splits)], paired


def cocycles(
    ops: ComplexOperators, forest: DualForest, k: int, rng: np.random.Generator
) -> np.ndarray:
    """``k`` random cocycles ``z [N1, k]`` with ``B2^T z = 0`` exactly (the dual sweep)."""
    levels, paired = forest
    b2 = ops.B2.tocsc()
    tri_edges = b2.indices.reshape(-1, 3)  # [N2, 3]
    signs = b2.data.reshape(-1, 3)  # [N2, 3], +-1
    # small integers: the sweep's sums are exact in float64
    z = rng.integers(-4, 5, size=(ops.num_edges, k)).astype(np.float64)
    z[paired] = 0.0
    for tris, pos in levels:  # deepest first: children before parents
        e, sg = tri_edges[tris], signs[tris].copy()  # [T, 3]
        sg[np.arange(tris.size), pos] = 0.0  # leave out the paired edge
        s_p = signs[tris, pos]  # [T]
        # sum_e B2[e, t] z[e] = 0  =>  z[e_t] = -s_p * sum_{e != e_t} B2[e, t] z[e]
        z[e[np.arange(tris.size), pos]] = -s_p[:, None] * np.einsum("tj,tjk->tk", sg, z[e])
    return z
