r"""Hodge decomposition of edge flows (paper eq. 1).

.. math::
    \mathbb{R}^{N_1} = \operatorname{im}(\mathbf{B}_1^\top) \oplus
    \operatorname{im}(\mathbf{B}_2) \oplus \ker(\mathbf{L}_1), \qquad
    \mathbf{x} = \mathbf{x}_G + \mathbf{x}_C + \mathbf{x}_H

with orthogonal projectors :math:`\mathbf{P}_G = \mathbf{B}_1^\top \mathbf{L}_0^{+}\mathbf{B}_1`,
:math:`\mathbf{P}_C = \mathbf{B}_2 \mathbf{L}_2^{+} \mathbf{B}_2^\top` and
:math:`\mathbf{P}_H = \mathbf{I} - \mathbf{P}_G - \mathbf{P}_C`, and
:math:`\mathbf{P}_k = \mathbf{U}_k \mathbf{U}_k^\top` for the grouped eigenbasis
:math:`\mathbf{U} = [\mathbf{U}_G, \mathbf{U}_C, \mathbf{U}_H]` of :math:`\mathbf{L}_1`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla
import torch

from topo_contrastive.complex import SimplicialOperators

__all__ = ["COMPONENTS", "HodgeDecomposition", "HodgeParts"]

#: Names of the three Hodge components, in the order used everywhere in the library.
COMPONENTS = ("gradient", "curl", "harmonic")

# Sparse LU of a symmetric positive definite matrix: minimum degree ordering on A + A^T and
# diagonal pivots only (SuperLU's "symmetric mode"), i.e. a sparse LDL^T in LU form.
_SPD_ORDERING = "MMD_AT_PLUS_A"
_SPD_OPTIONS: dict[str, Any] = {"diag_pivot_thresh": 0.0, "options": {"SymmetricMode": True}}
# right-hand sides per call of SuperLU's triangular solve (it slows down for wide blocks)
_CHUNK = 4
# solves run in threads (SuperLU releases the GIL) from this many unknowns on
_THREAD_MIN_ROWS = 20_000
# projector_blocks: L0^{-1} on the m touched nodes either by m solves or by one
# refactorisation of L0 with them ordered last (Schur complement, then a dense m x m
# inverse). Cost model in seconds, measured on 2 cores (only the ratios matter): a solve
# costs _SOLVE_COST per factor non-zero, a refactorisation _REFACTOR_FIXED plus
# _REFACTOR_COST per factor non-zero plus _DENSE_COST * m^3 for its dense trailing block.
_SOLVE_COST = 3e-9
_REFACTOR_FIXED = 0.02
_REFACTOR_COST = 2e-7
_DENSE_COST = 3.5e-10
# "auto" (cost model), "schur" or "solves" (tests and benchmarks force one)
_BLOCKS_METHOD = "auto"
# touched nodes per refactorisation: the cost-optimal group size, clipped to these bounds
_GROUP_MIN_NODES = 256
_GROUP_MAX_NODES = 4096
# the iterative backend keeps an orthonormal harmonic basis [N1, beta_1] up to this size
_MAX_HARMONIC_BASIS_ENTRIES = 2**25


class HodgeParts(NamedTuple):
    """Gradient, curl and harmonic parts of a batch of edge flows.

    Each field has the layout, dtype and device of the decomposed flows (``[N1]``,
    ``[N1, 1]``, ``[B, N1]``, ``[B, N1, 1]`` or a PyG batch's ``[B * N1, 1]``); the three
    fields sum to the input and are mutually orthogonal (per sample).
    """

    gradient: torch.Tensor
    curl: torch.Tensor
    harmonic: torch.Tensor


def _check_component(component: str) -> int:
    if component not in COMPONENTS:
        raise ValueError(f"`component` must be one of {COMPONENTS}, got {component!r}")
    return COMPONENTS.index(component)


def _num_workers() -> int:
    """Threads for the triangular solves: PyTorch's intra-op thread setting, at most 8."""
    return max(1, min(8, torch.get_num_threads()))


def _map_chunks(fn: Callable[[int, int], None], n: int, rows: int) -> None:
    """Call ``fn(lo, hi)`` on column chunks of ``range(n)``, in threads for large systems."""
    bounds = [(lo, min(lo + _CHUNK, n)) for lo in range(0, n, _CHUNK)]
    workers = min(_num_workers(), len(bounds))
    if workers <= 1 or rows < _THREAD_MIN_ROWS:
        for lo, hi in bounds:
            fn(lo, hi)
        return
    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(lambda b: fn(*b), bounds):
            pass


def _kernel_dim(a: sp.spmatrix) -> int:
    """``dim ker a`` of a symmetric positive semi-definite matrix with a small kernel (dense
    eigenvalues up to 200 rows, else the 32 smallest by a sparse shift-invert eigen-solve)."""
    n = a.shape[0]
    if n == 0:
        return 0
    if n <= 200:
        vals = np.linalg.eigvalsh(a.toarray())
    else:
        vals = sla.eigsh(a, k=min(n - 1, 32), sigma=-1e-3, which="LM", return_eigenvectors=False)
    return int((np.abs(vals) < 1e-8 * max(1.0, abs(vals).max())).sum())


def _factor_spd(a: Any, permc_spec: str = _SPD_ORDERING) -> Any:
    """Sparse LU without pivoting of a symmetric positive (semi-)definite CSC matrix.

    Runs in the calling thread: scipy leaks a factor created in a worker thread.
    """
    return sla.splu(a, permc_spec=permc_spec, **_SPD_OPTIONS)


def _check_settings(complex: Any, backend: Any, max_exact_edges: Any, tol: Any) -> None:
    """Validate the settings of :class:`HodgeDecomposition` (every rank)."""
    if not isinstance(complex, SimplicialOperators):
        raise TypeError(
            f"`complex` must be a SimplicialOperators, got {type(complex).__name__}"
        )
    if backend not in ("auto", "exact", "iterative"):
        raise ValueError(
            f"`backend` must be 'auto', 'exact' or 'iterative', got {backend!r}"
        )
    if int(max_exact_edges) <= 0:
        raise ValueError(f"`max_exact_edges` must be positive, got {max_exact_edges}")
    if not tol > 0:
        raise ValueError(f"`tol` must be positive, got {tol}")


def _append_set_blocks(
    blocks: dict[str, list], sets: list[np.ndarray], inv: np.ndarray, parts: tuple
) -> None:
    """Cut each set's ``[|S|, |S|]`` blocks out of the group's three ``[U, U]`` projector
    blocks ``parts`` (gradient, curl, harmonic on the union ``U`` of the sets; ``inv`` maps
    the concatenated sets into ``U``) and append them to ``blocks``."""
    start = 0
    for s in sets:
        loc = inv[start : start + s.size]
        start += s.size
        for k, p in zip(COMPONENTS, parts, strict=True):
            blocks[k].append(p[np.ix_(loc, loc)])


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

    Two backends behind one interface:

    * ``"exact"``: dense eigenbases :math:`\mathbf{U}_G, \mathbf{U}_C, \mathbf{U}_H`
      of :math:`\mathbf{L}_1`, grouped as in the paper: :math:`\mathbf{U}_G` holds the
      eigenvectors of :math:`\mathbf{L}_\downarrow` with non-zero eigenvalue (computed
      as :math:`\mathbf{B}_1^\top \mathbf{v} / \sqrt{\lambda}` from the eigenpairs of
      :math:`\mathbf{L}_0`), :math:`\mathbf{U}_C` those of :math:`\mathbf{L}_\uparrow`
      (from :math:`\mathbf{L}_2`), :math:`\mathbf{U}_H` an orthonormal basis of
      :math:`\ker \mathbf{L}_1`. Memory :math:`O(N_1^2)`: for small complexes. Offers
      :meth:`coordinates` (:math:`\mathbf{U}_k^\top \mathbf{x}`) and :meth:`basis`.
    * ``"iterative"``: sparse direct solves with :math:`\mathbf{L}_0` (grounded at one
      node per connected component), factorised once by a sparse
      :math:`\mathbf{L}\mathbf{D}\mathbf{L}^\top` (scipy's SuperLU, minimum degree
      ordering on :math:`\mathbf{A} + \mathbf{A}^\top`, diagonal pivots). No dense
      :math:`N_1 \times N_1` matrix anywhere. An orthonormal harmonic basis
      :math:`\mathbf{U}_H` of :math:`\beta_1` columns is computed at set-up, so that
      decomposing needs :math:`\mathbf{L}_0` solves only: when every edge has at most
      two triangles and every triangle is linked to a boundary edge (surfaces with
      boundary, such as planar meshes with holes), as the harmonic parts
      :math:`\mathbf{z} - \mathbf{P}_G \mathbf{z}` of exact random cocycles
      (:math:`\mathbf{B}_2^\top \mathbf{z} = 0`, by a sweep over a spanning tree of
      the dual graph), without touching :math:`\mathbf{L}_2`; otherwise with a few
      solves with :math:`\mathbf{L}_2` (sparse :math:`\mathbf{L}\mathbf{D}\mathbf{L}^\top`,
      or conjugate gradients when :math:`\mathbf{L}_2` is singular, i.e. closed
      2-cycles). When :math:`N_1 \beta_1 > 2^{25}` the basis is not stored: the curl
      part is then solved with :math:`\mathbf{L}_2` and the harmonic part is the
      remainder. Many right-hand sides are solved a few at a time in
      ``torch.get_num_threads()`` threads.

    Precision: the parts sum to the input exactly up to rounding (one part is the
    remainder of the other two); orthogonality and membership of the subspaces hold
    to the accuracy of the direct solves, about :math:`10^{-12}` relative or better
    for float64 flows (for float32 flows the cast back limits them to about
    :math:`10^{-7}`). The two backends agree to about :math:`10^{-12}` relative.

    All arithmetic is in float64; results are cast back to the input's dtype and
    device.

    Empty inputs are valid and give empty results of the same layout: a complex without
    edges (:math:`N_1 = 0`, all three subspaces of dimension 0) decomposes flows ``[0]``
    or ``[B, 0]`` into three parts of that shape, and an empty batch ``[0, N1]`` into
    three ``[0, N1]`` parts.

    **Signals on other ranks** (``rank=0``: node signals ``x_0``, ``rank=2``: triangle
    signals ``x_2``): the same interface splits
    :math:`\mathbb{R}^{N_k} = \operatorname{im}(\mathbf{B}_k^\top) \oplus
    \operatorname{im}(\mathbf{B}_{k+1}) \oplus \ker(\mathbf{L}_k)` into the parts
    still called ``gradient`` (lower, :math:`\operatorname{im}\mathbf{B}_k^\top`),
    ``curl`` (upper, :math:`\operatorname{im}\mathbf{B}_{k+1}`) and ``harmonic``;
    see :mod:`topo_contrastive.hodge_rank` for what they mean at each rank and how
    they are computed. Every method then works on ``[N_k]`` / ``[B, N_k]`` signals
    and index sets of rank-k simplices. The rank-1 code is unchanged by this.

    Args:
        complex: the complex's operators.
        backend: ``"auto"`` (default: ``"exact"`` when ``N1 <= max_exact_edges``,
            else ``"iterative"``), ``"exact"`` or ``"iterative"``.
        max_exact_edges: size threshold of ``"auto"`` (default ``2000``; at rank k it
            is compared with :math:`N_k`).
        tol: relative eigenvalue threshold separating zero from non-zero
            eigenvalues in the exact backend, and CG tolerance (default ``1e-10``).
        rank: rank of the signals (keyword only; default ``1``: edge flows; ``0``:
            node signals, ``2``: triangle signals).

    Raises:
        TypeError: ``complex`` is not a :class:`~topo_contrastive.complex.SimplicialOperators`;
            ``rank`` not an int.
        ValueError: unknown ``backend`` or a non-positive ``max_exact_edges``/``tol``;
            a ``rank`` the complex does not have (e.g. 2 without triangles) or above 2.

    Example:
        >>> ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
        >>> hodge = HodgeDecomposition(ops)
        >>> hodge.dims
        {'gradient': 3, 'curl': 0, 'harmonic': 1}
        >>> cycle = torch.tensor([1.0, -1.0, 1.0, 0.0], dtype=torch.float64)  # 0 -> 1 -> 2 -> 0
        >>> parts = hodge(cycle)
        >>> torch.allclose(parts.harmonic, cycle), float(parts.gradient.abs().max()) < 1e-12
        (True, True)
    """

    #: Rank of the decomposed signals (1: edge flows).
    rank: int = 1

    def __new__(cls, *args: Any, rank: int = 1, **kwargs: Any) -> HodgeDecomposition:
        # signals of another rank: the subclass of topo_contrastive.hodge_rank
        rank_one = isinstance(rank, (int, np.integer)) and not isinstance(rank, bool) and rank == 1
        if cls is HodgeDecomposition and not rank_one:
            from topo_contrastive.hodge_rank import RankHodgeDecomposition

            cls = RankHodgeDecomposition
        return super().__new__(cls)

    def __init__(
        self,
        complex: SimplicialOperators,
        backend: str = "auto",
        max_exact_edges: int = 2000,
        tol: float = 1e-10,
        *,
        rank: int = 1,
    ):
        _check_settings(complex, backend, max_exact_edges, tol)
        self.complex = complex
        self.tol = float(tol)
        if backend == "auto":
            backend = "exact" if complex.num_edges <= max_exact_edges else "iterative"
        self.backend = backend
        ncomp, labels = csgraph.connected_components(complex.L0, directed=False)
        self._num_components = int(ncomp)
        self._labels = labels
        self._bases: list[np.ndarray] | None = None
        self._a0: Any = None  # grounded L0, CSC [N0 - beta_0, N0 - beta_0]
        self._lu0: Any = None
        self._order0: np.ndarray | None = None  # fill-reducing order of the grounded L0
        self._keep: np.ndarray | None = None
        self._keep_index: np.ndarray | None = None  # node -> row of the grounded L0, -1 if ground
        self._lu2: Any = None
        self._l2_singular = False
        self._beta1 = 0
        self._harmonic_basis: np.ndarray | None = None
        if backend == "exact":
            self._build_exact()
        else:
            self._build_iterative()

    # ------------------------------------------------------------------ exact set-up
    def _build_exact(self) -> None:
        ops = self.complex
        n1 = ops.num_edges
        # gradient: eigenpairs (lam, v) of L0 with lam > 0 give the eigenvectors
        # B1^T v / sqrt(lam) of L_down with the same eigenvalue; L0 has one zero
        # eigenvalue per connected component
        grad = np.zeros((n1, 0))
        rank0 = ops.num_nodes - self._num_components
        if rank0 > 0:
            evals, evecs = np.linalg.eigh(ops.L0.toarray())
            lam, v = evals[self._num_components :], evecs[:, self._num_components :]
            grad = (ops.B1.T @ v) / np.sqrt(lam)  # [N1, N0 - beta_0]
        # curl: the same from L2 = B2^T B2 and L_up = B2 B2^T
        curl = np.zeros((n1, 0))
        if ops.num_triangles:
            evals, evecs = np.linalg.eigh(ops.L2_down.toarray())
            nz = evals > self.tol * 1e3 * max(1.0, float(evals[-1]))
            curl = (ops.B2 @ evecs[:, nz]) / np.sqrt(evals[nz])  # [N1, N2 - beta_2]
        beta1 = n1 - grad.shape[1] - curl.shape[1]
        if beta1 < 0:  # pragma: no cover - numerical safety net
            raise RuntimeError("gradient and curl eigenbases overlap; adjust `tol`")
        self._beta1 = beta1
        # harmonic: orthonormal basis of ker L1 = complement of the other two
        harm = np.zeros((n1, 0))
        if beta1:
            rng = np.random.default_rng(0)
            h = rng.standard_normal((n1, beta1))
            for _ in range(2):  # project twice: removes the round-off of the first pass
                h = h - grad @ (grad.T @ h) - curl @ (curl.T @ h)
                h, _ = np.linalg.qr(h)
            harm = h
        self._bases = [grad, curl, harm]

    # ------------------------------------------------------------------ iterative set-up
    def _build_iterative(self) -> None:
        ops = self.complex
        n0 = ops.num_nodes
        labels = self._labels
        # ground the first node of every connected component
        first = np.full(self._num_components, -1, dtype=np.int64)
        order = np.arange(n0)[::-1]
        first[labels[order]] = order
        keep = np.ones(n0, dtype=bool)
        keep[first] = False
        self._keep = np.flatnonzero(keep)
        self._tail = np.ascontiguousarray(ops.edges[:, 0], dtype=np.intp)  # [N1]
        self._head = np.ascontiguousarray(ops.edges[:, 1], dtype=np.intp)  # [N1]
        self._keep_index = np.full(n0, -1, dtype=np.int64)
        self._keep_index[self._keep] = np.arange(self._keep.size)
        if self._keep.size:
            self._a0 = ops.L0[self._keep][:, self._keep].tocsc()
            self._lu0 = _factor_spd(self._a0)
            self._order0 = np.argsort(self._lu0.perm_c)  # position -> row
        self._forest = self._dual_forest() if ops.num_triangles else None
        beta2 = 0
        if ops.num_triangles and self._forest is None:
            beta2 = self._factor_l2()
        # Euler characteristic: beta_0 - beta_1 + beta_2 = N0 - N1 + N2
        self._beta1 = self._num_components - (n0 - ops.num_edges + ops.num_triangles) + beta2
        if self._beta1 * ops.num_edges <= _MAX_HARMONIC_BASIS_ENTRIES:
            self._build_harmonic_basis()
            self._lu2 = None  # decompositions no longer need L2
        elif ops.num_triangles and self._lu2 is None and not self._l2_singular:
            self._factor_l2()  # the curl part will be solved with L2
        self._forest = None  # only needed for the harmonic basis

    def _factor_l2(self) -> int:
        """Factorise ``L2`` (or mark it singular: closed 2-cycles); return ``beta_2``."""
        try:
            lu2 = _factor_spd(self.complex.L2_down.tocsc())
            diag = np.abs(lu2.U.diagonal())  # the pivots
            singular = bool(diag.min() <= 1e-10 * diag.max())
        except RuntimeError:  # an exactly zero pivot
            lu2, singular = None, True
        self._l2_singular = singular
        self._lu2 = None if singular else lu2
        return self._estimate_beta2() if singular else 0

    def _dual_forest(self) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray] | None:
        """Collapse of the triangles onto the boundary, for exact cocycles without ``L2``.

        Applies when every edge has at most two triangles and every triangle is
        connected, across edges shared by two triangles, to an edge of only one
        triangle (a boundary edge); then ``ker B2 = 0`` (``beta_2 = 0``). A
        breadth-first search from the boundary pairs each triangle ``t`` with the
        edge ``e_t`` it was reached through; the constraint ``(B2^T z)_t = 0`` then
        fixes ``z[e_t]`` from the other two edges of ``t``, which are free or paired
        with children of ``t``.

        Returns:
            ``None`` if the complex does not qualify, else ``(levels, paired)``:
            per depth, deepest first, ``(triangles, positions)`` with the position
            ``0..2`` of the paired edge in the triangle's ``B2`` column, and the
            paired edge of every triangle ``[N2]``.
        """
        ops = self.complex
        n2 = ops.num_triangles
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
        levels = [(t, position[t]) for t in np.split(by_depth, splits)]
        return levels, paired

    def _cocycles(self, k: int, rng: np.random.Generator) -> np.ndarray:
        """``k`` random cocycles ``z [N1, k]`` with ``B2^T z = 0`` exactly (dual sweep)."""
        ops = self.complex
        levels, paired = self._forest
        b2 = ops.B2.tocsc()
        tri_edges = b2.indices.reshape(-1, 3)  # [N2, 3]
        signs = b2.data.reshape(-1, 3)  # [N2, 3], +-1
        # small integers: the sweep's sums are exact in float64
        z = rng.integers(-4, 5, size=(ops.num_edges, k)).astype(np.float64)
        z[paired] = 0.0
        for tris, pos in levels:  # deepest first: children before parents
            e, sg = tri_edges[tris], signs[tris]  # [T, 3]
            sg = sg.copy()
            sg[np.arange(tris.size), pos] = 0.0  # leave out the paired edge
            s_p = signs[tris, pos]  # [T]
            # sum_e B2[e, t] z[e] = 0  =>  z[e_t] = -s_p * sum_{e != e_t} B2[e, t] z[e]
            z[e[np.arange(tris.size), pos]] = -s_p[:, None] * np.einsum(
                "tj,tjk->tk", sg, z[e]
            )
        return z

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
        l2 = self.complex.L2_down
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
        ops = self.complex
        if not ops.num_triangles:
            return np.zeros_like(x)
        return ops.B2 @ self._solve_l2(ops.B2.T @ x, scale=np.linalg.norm(x, axis=0))

    def _parts_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradient, curl and harmonic parts of flows ``x [k, N1]`` (float64, one per row).

        Iterative backend. Row layout throughout (the layout of the flows): divergence
        and gradient from the edge list (``bincount`` and gathers, cache-friendly), and
        the transposed right-hand sides of the solves are views, so no array of ``N1``
        entries is ever transposed.
        """
        ops = self.complex
        n0, tail, head = ops.num_nodes, self._tail, self._head
        # divergence B1 x (B1[tail, e] = -1, B1[head, e] = +1)
        r = np.stack([np.bincount(head, xi, n0) - np.bincount(tail, xi, n0) for xi in x])
        phi = np.zeros_like(r)  # [k, N0]
        if self._lu0 is not None:
            sol = self._lu0.solve(np.asfortranarray(r[:, self._keep].T))  # [N0 - beta_0, k]
            phi[:, self._keep] = sol.T
        grad = phi[:, head]  # [k, N1]: B1^T phi
        grad -= phi[:, tail]
        if not ops.num_triangles:
            return grad, np.zeros_like(x), x - grad
        if self._harmonic_basis is not None:
            hb = self._harmonic_basis  # [N1, beta_1]
            harm = (x @ hb) @ hb.T  # [k, N1]
            curl = x - grad
            curl -= harm
            return grad, curl, harm
        b2 = ops.B2
        psi = self._solve_l2(
            np.stack([b2.T @ xi for xi in x]).T, scale=np.linalg.norm(x, axis=1)
        )  # [N2, k]
        curl = np.stack([b2 @ p for p in psi.T])  # [k, N1]
        harm = x - grad
        harm -= curl
        return grad, curl, harm

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
            probe = self._cocycles(k, rng)
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

    def _estimate_beta2(self) -> int:
        """``dim ker L2`` by a sparse eigen-solve (only for complexes with closed 2-cycles).

        This is ``dim ker B2``, what the Euler characteristic of the complex without its
        tetrahedra needs. With tetrahedra ``ker B2 = im B3 + ker(B2^T B2 + B3 B3^T)``: its
        dimension is ``rank(B3)`` plus the (small) kernel of the Hodge 2-Laplacian.
        """
        ops = self.complex
        if ops.num_tetrahedra:
            return ops.num_tetrahedra - _kernel_dim(ops.L3) + _kernel_dim(ops.L2)
        l2 = self.complex.L2_down
        k = min(l2.shape[0] - 1, 32)
        vals = sla.eigsh(l2, k=k, sigma=-1e-3, which="LM", return_eigenvectors=False)
        return int((np.abs(vals) < 1e-8 * max(1.0, abs(vals).max())).sum())

    # ------------------------------------------------------------------ public API
    @property
    def dims(self) -> dict[str, int]:
        """Dimensions of the gradient, curl and harmonic subspaces.

        ``dims["harmonic"]`` is the first Betti number :math:`\\beta_1`.
        """
        if self._bases is not None:
            return {k: int(u.shape[1]) for k, u in zip(COMPONENTS, self._bases, strict=True)}
        ops = self.complex
        grad = ops.num_nodes - self._num_components
        curl = ops.num_edges - grad - self._beta1
        return {"gradient": grad, "curl": curl, "harmonic": self._beta1}

    @property
    def num_simplices(self) -> int:
        """:math:`N_k`, the length of the decomposed signals (:math:`N_1` for edge flows)."""
        return self.complex.num_simplices(self.rank)

    def _as_samples(
        self,
        x: Any,
        batch: torch.Tensor | None = None,
        num_graphs: int | None = None,
        name: str = "x",
    ) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
        """Validate edge flows in one of the accepted layouts (see :meth:`decompose`).

        Returns ``(flows [B, N1], restore)`` where ``restore`` maps a ``[B, N1]`` result
        back to the layout of ``x``.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
        what = "edge flows" if self.rank == 1 else f"rank-{self.rank} signals"
        if not x.is_floating_point():
            raise TypeError(f"`{name}` must be a floating tensor ({what}), got dtype {x.dtype}")
        n1, nk = self.num_simplices, f"N{self.rank}"  # N1 = number of edges for edge flows
        shape = tuple(x.shape)
        layouts = (
            f"[{nk}], [{nk}, 1], [B, {nk}], [B, {nk}, 1] or a PyG batch [B * {nk}, 1] (with "
            f"`batch` or `num_graphs`), {nk} = {n1}"
        )
        stacked = (x.dim() == 2 and shape[1] == 1 and shape[0] != n1 and n1 != 1) or (
            x.dim() == 1 and shape[0] != n1
        )  # a PyG batch: samples one after the other, one row per edge (N1 = 1: [B, N1])
        if batch is not None or num_graphs is not None or stacked:
            if x.dim() not in (1, 2) or (x.dim() == 2 and shape[1] != 1):
                raise ValueError(
                    f"`{name}` of shape {shape} is not a PyG batch of {what} "
                    f"([B * {nk}, 1] or [B * {nk}]); accepted layouts: {layouts}"
                )
            rows = shape[0]
            b = self._num_samples(rows, batch, num_graphs, name)
            flows = x.reshape(b, n1)
            return self._finite(flows, name), lambda out: out.reshape(shape)
        if x.dim() == 1 and shape[0] == n1:
            return self._finite(x.reshape(1, n1), name), lambda out: out[0]
        if x.dim() == 2 and shape[1] == n1:
            return self._finite(x, name), lambda out: out
        if x.dim() == 2 and shape == (n1, 1):
            return self._finite(x.reshape(1, n1), name), lambda out: out.reshape(n1, 1)
        if x.dim() == 3 and shape[1:] == (n1, 1):
            return self._finite(x.reshape(shape[0], n1), name), lambda out: out.unsqueeze(-1)
        raise ValueError(f"`{name}` must have shape {layouts}; got {shape}")

    def _num_samples(
        self, rows: int, batch: torch.Tensor | None, num_graphs: int | None, name: str
    ) -> int:
        """Number of samples ``B`` of a PyG batch of ``rows = B * N1`` rows (validated)."""
        n1, nk = self.num_simplices, f"N{self.rank}"  # N1 = number of edges for edge flows
        simplices = ("nodes", "edges", "triangles")[self.rank]
        if n1 == 0 or rows % n1 != 0:
            raise ValueError(
                f"`{name}` has {rows} rows, not a multiple of the complex's {nk} = {n1} "
                f"{simplices} (" + ("flows" if self.rank == 1 else "signals")
                + " of another complex?)"
            )
        b = rows // n1
        if batch is None and num_graphs is None:
            raise ValueError(
                f"`{name}` has {rows} rows = {b} x {nk}: for a PyG batch of flows pass `batch` "
                "(its batch vector, `data.batch`) or `num_graphs`"
            )
        if num_graphs is not None:
            if isinstance(num_graphs, bool) or not isinstance(num_graphs, (int, np.integer)):
                raise TypeError(f"`num_graphs` must be an int, got {type(num_graphs).__name__}")
            if int(num_graphs) != b:
                raise ValueError(
                    f"`num_graphs`={num_graphs} does not match `{name}`: {rows} rows hold "
                    f"{b} flows of {nk} = {n1} {simplices}"
                )
        if batch is not None:
            if not isinstance(batch, torch.Tensor) or batch.dtype not in (
                torch.int64,
                torch.int32,
            ):
                got = batch.dtype if isinstance(batch, torch.Tensor) else type(batch).__name__
                raise TypeError(
                    f"`batch` must be an integer tensor [B * {nk}] (PyG's batch vector), got "
                    f"{got}"
                )
            expected = torch.arange(b, device=batch.device).repeat_interleave(n1)
            if tuple(batch.shape) != (rows,) or not torch.equal(batch.long(), expected):
                raise ValueError(
                    f"`batch` must give each of the {b} samples {nk} = {n1} consecutive rows of "
                    f"`{name}` (PyG's layout of flows on one complex), got shape "
                    f"{tuple(batch.shape)}"
                    + (f" with values 0..{int(batch.max())}" if batch.numel() else "")
                )
        return b

    @staticmethod
    def _finite(x: torch.Tensor, name: str) -> torch.Tensor:
        if not torch.isfinite(x).all():
            raise ValueError(f"`{name}` contains NaN or inf values")
        return x

    def decompose(
        self,
        x: torch.Tensor,
        batch: torch.Tensor | None = None,
        num_graphs: int | None = None,
    ) -> HodgeParts:
        """Gradient, curl and harmonic parts of edge flows.

        The iterative backend works on chunks of a few flows at a time (in threads),
        so its working memory beyond input and output is a few flows in float64.

        Args:
            x: floating edge flows in one of these layouts: ``[N1]`` (one flow),
                ``[N1, 1]`` (one sample's ``data.x_1``), ``[B, N1]``, ``[B, N1, 1]``,
                or a PyG batch ``[B * N1, 1]`` / ``[B * N1]`` (``batch.x_1``: samples
                one after the other), which needs ``batch`` or ``num_graphs``.
            batch: PyG's batch vector ``int64 [B * N1]`` of a batched ``x`` (checked:
                sample ``b`` owns rows ``b * N1 .. (b + 1) * N1 - 1``). (default ``None``)
            num_graphs: number of samples ``B`` of a batched ``x`` (``batch.num_graphs``).
                (default ``None``)

        Returns:
            :class:`HodgeParts` with three tensors in the layout, dtype and device of ``x``
            (empty when ``x`` is: ``B = 0`` and ``N1 = 0`` are allowed).

        Raises:
            TypeError: ``x`` is not a floating tensor; ``batch`` not an integer tensor;
                ``num_graphs`` not an int.
            ValueError: another layout, a batched ``x`` without ``batch``/``num_graphs``
                or whose rows are not ``B * N1``, a ``batch`` that is not PyG's layout of
                flows on one complex, or NaN/inf entries.

        Example:
            >>> ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2]])
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
        x2, restore = self._as_samples(x, batch, num_graphs)
        out = self._decompose_rows(x2)
        return HodgeParts(*(restore(o) for o in out))

    def _decompose_rows(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The three parts ``[B, N1]`` of validated flows ``x`` ``[B, N1]``."""
        n1 = self.num_simplices
        xc = x.detach().cpu()  # [B, N1]
        if self._bases is not None:
            xn = xc.double().numpy().T  # [N1, B]
            parts = [u @ (u.T @ xn) for u in self._bases]
            out = [torch.from_numpy(np.ascontiguousarray(p.T)).to(x.dtype) for p in parts]
        else:
            # numpy in and out (single-threaded copies; float16/bfloat16 go via float32)
            keep_dtype = x.dtype in (torch.float32, torch.float64)
            xs = (xc if keep_dtype else xc.float()).numpy()  # [B, N1]
            out_np = [np.empty(xs.shape, dtype=xs.dtype) for _ in COMPONENTS]

            def work(lo: int, hi: int) -> None:
                chunk = xs[lo:hi].astype(np.float64)  # [c, N1]
                for o, p in zip(out_np, self._parts_rows(chunk), strict=True):
                    o[lo:hi] = p

            _map_chunks(work, xs.shape[0], rows=n1)
            out = [torch.from_numpy(o).to(x.dtype) for o in out_np]
        return [o.to(x.device) for o in out]

    __call__ = decompose

    def project(
        self,
        x: torch.Tensor,
        component: str,
        batch: torch.Tensor | None = None,
        num_graphs: int | None = None,
    ) -> torch.Tensor:
        """Projection :math:`\\mathbf{P}_k \\mathbf{x}` onto one Hodge subspace.

        Args:
            x: floating edge flows in a layout of :meth:`decompose`.
            component: ``"gradient"``, ``"curl"`` or ``"harmonic"``.
            batch, num_graphs: for a PyG batch ``x``, as in :meth:`decompose`.

        Returns:
            Tensor in the layout, dtype and device of ``x``.

        Raises:
            ValueError: unknown ``component``; as :meth:`decompose` for ``x``.
        """
        idx = _check_component(component)
        return self.decompose(x, batch=batch, num_graphs=num_graphs)[idx]

    def basis(self, component: str) -> torch.Tensor:
        """Orthonormal basis :math:`\\mathbf{U}_k` ``float64 [N1, dim_k]`` (exact backend).

        The harmonic basis is also available in the iterative backend (it has
        :math:`\\beta_1` columns) unless :math:`N_1 \\beta_1` exceeds :math:`2^{25}`.

        Raises:
            ValueError: unknown ``component``; gradient/curl basis (or a harmonic
                basis too large to store) asked of the iterative backend.
        """
        idx = _check_component(component)
        if self._bases is not None:
            return torch.from_numpy(self._bases[idx].copy())
        if component == "harmonic":
            if self._harmonic_basis is not None:
                return torch.from_numpy(self._harmonic_basis.copy())
            raise ValueError(
                f"the harmonic basis has beta_1 = {self._beta1} columns of "
                f"{self.complex.num_edges} entries, too many to store in the 'iterative' "
                "backend; use project() or projector_block() instead"
            )
        raise ValueError(
            f"the {component} eigenbasis needs the 'exact' backend (this one is "
            f"{self.backend!r}); use project() or projector_block() instead"
        )

    def coordinates(
        self,
        x: torch.Tensor,
        component: str,
        batch: torch.Tensor | None = None,
        num_graphs: int | None = None,
    ) -> torch.Tensor:
        """Spectral embedding :math:`\\tilde{\\mathbf{x}}_k = \\mathbf{U}_k^\\top \\mathbf{x}`.

        Args:
            x: floating edge flows in a layout of :meth:`decompose`.
            component: ``"gradient"``, ``"curl"`` or ``"harmonic"``.
            batch, num_graphs: for a PyG batch ``x``, as in :meth:`decompose`.

        Returns:
            ``[dim_k]`` for one flow ``[N1]``, else ``[B, dim_k]`` (one row per sample;
            ``B = 1`` for ``[N1, 1]``), on ``x``'s device and dtype.

        Raises:
            ValueError: as :meth:`basis`; as :meth:`decompose` for ``x``.
        """
        x2, _ = self._as_samples(x, batch, num_graphs)
        u = self.basis(component).to(x.device, torch.float64)
        out = (x2.detach().double() @ u).to(x.dtype)
        single = x.dim() == 1 and batch is None and num_graphs is None
        return out[0] if single else out

    # ------------------------------------------------------------------ projector blocks
    def _l0_inverse_by_solves(self, nodes: np.ndarray) -> np.ndarray:
        """``L0g^{-1}[nodes, nodes]`` by one solve per node (rows of the grounded L0)."""
        m, n = nodes.size, self._keep.size
        z = np.empty((m, m))

        def work(lo: int, hi: int) -> None:
            rhs = np.zeros((n, hi - lo), order="F")
            rhs[nodes[lo:hi], np.arange(hi - lo)] = 1.0
            z[:, lo:hi] = self._lu0.solve(rhs)[nodes]

        _map_chunks(work, m, rows=n)
        return 0.5 * (z + z.T)

    def _l0_inverse_by_schur(self, nodes: np.ndarray) -> np.ndarray:
        """``L0g^{-1}[nodes, nodes]`` from one refactorisation with ``nodes`` ordered last.

        With the fill-reducing order of the set-up factor for the other rows and the
        touched rows last, the LU factors (no pivoting) of the permuted matrix end in
        the blocks ``L[T, T] U[T, T]`` = Schur complement ``S`` onto the trailing rows
        ``T``, and ``(L0g^{-1})[T, T] = S^{-1}``: no solve per node.
        """
        a, n, m = self._a0, self._keep.size, nodes.size
        rest = np.ones(n, dtype=bool)
        rest[nodes] = False
        order = np.concatenate([self._order0[rest[self._order0]], nodes])
        lu = _factor_spd(a[order][:, order].tocsc(), permc_spec="NATURAL")
        pos = lu.perm_c[n - m :]  # final positions of the touched rows
        t0 = int(pos.min())
        # SuperLU post-orders the elimination tree; the touched rows stay (almost) last
        if not np.array_equal(lu.perm_r, lu.perm_c) or n - t0 > 2 * m + 64:
            return self._l0_inverse_by_solves(nodes)  # pragma: no cover - safety net
        lt = lu.L[t0:, t0:].toarray()  # [|T|, |T|] unit lower triangular
        ut = lu.U[t0:, t0:].toarray()  # [|T|, |T|] upper triangular
        del lu
        zt = sl.solve_triangular(
            ut, sl.solve_triangular(lt, np.eye(n - t0), lower=True, unit_diagonal=True)
        )  # S^{-1} = U^{-1} L^{-1}
        z = zt[np.ix_(pos - t0, pos - t0)]
        return 0.5 * (z + z.T)

    def _gradient_block(self, edges: np.ndarray) -> np.ndarray:
        """``P_G[edges, edges]`` = ``B1[V, E]^T L0g^{-1}[V, V] B1[V, E]`` (touched nodes V)."""
        ops = self.complex
        if self._lu0 is None or edges.size == 0:
            return np.zeros((edges.size, edges.size))
        rows = self._keep_index[np.unique(ops.edges[edges])]
        rows = rows[rows >= 0]  # ground nodes have phi = 0
        nodes = np.sort(rows)
        if self._use_schur(nodes.size):
            z = self._l0_inverse_by_schur(nodes)
        else:
            z = self._l0_inverse_by_solves(nodes)
        b = ops.B1[self._keep[nodes]][:, edges].tocsc()  # [|V|, |E|], two entries per column
        w = b.T @ z  # [|E|, |V|] = B^T Z
        g = b.T @ w.T  # B^T (B^T Z)^T = B^T Z B (Z symmetric)
        return 0.5 * (g + g.T)

    def _use_schur(self, m: int) -> bool:
        """Whether the Schur complement path is cheaper than ``m`` solves (cost model)."""
        if _BLOCKS_METHOD != "auto":
            return _BLOCKS_METHOD == "schur"
        nnz = self._lu0.nnz
        refactor = _REFACTOR_FIXED + _REFACTOR_COST * nnz
        return refactor + _DENSE_COST * m**3 < _SOLVE_COST * nnz * m

    def _group_nodes(self) -> int:
        """Touched nodes per group: minimises refactorisations + dense blocks (cost model)."""
        if self._lu0 is None:
            return _GROUP_MAX_NODES
        refactor = _REFACTOR_FIXED + _REFACTOR_COST * self._lu0.nnz
        best = (refactor / (2 * _DENSE_COST)) ** (1 / 3)
        return int(min(max(best, _GROUP_MIN_NODES), _GROUP_MAX_NODES))

    def _curl_block(self, edges: np.ndarray) -> np.ndarray:
        """``P_C[edges, edges]`` by solves with ``L2`` on the rows ``B2[edges]``."""
        ops = self.complex
        if not ops.num_triangles or edges.size == 0:
            return np.zeros((edges.size, edges.size))
        b2 = ops.B2[edges]  # [|E|, N2]
        c = np.empty((edges.size, edges.size))

        def work(lo: int, hi: int) -> None:
            psi = self._solve_l2(b2[lo:hi].T.toarray())  # [N2, c]
            c[:, lo:hi] = b2 @ psi

        _map_chunks(work, edges.size, rows=ops.num_triangles)
        return 0.5 * (c + c.T)

    def projector_blocks(
        self,
        supports: Sequence[torch.Tensor | np.ndarray | Sequence[int]],
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> dict[str, list[torch.Tensor]]:
        """Blocks :math:`\\mathbf{P}_k[S, S]` of the three projectors on edge sets ``S``.

        Needed by the closed-form mask objective (DESIGN §2.2). The exact backend
        slices its eigenbases (:math:`\\mathbf{U}_k[S] \\mathbf{U}_k[S]^\\top`). The
        iterative backend needs :math:`\\mathbf{L}_0^{+}` on the nodes :math:`V`
        touched by the sets,

        .. math::
            \\mathbf{P}_G[S, S] = \\mathbf{B}_1[V, S]^\\top \\,
            \\mathbf{L}_0^{+}[V, V] \\, \\mathbf{B}_1[V, S],

        computed either by one solve per node, or by one refactorisation of
        :math:`\\mathbf{L}_0` with :math:`V` ordered last, whose trailing factor block
        is the Schur complement :math:`\\mathbf{S}` onto :math:`V`
        (:math:`\\mathbf{L}_0^{+}[V, V] = \\mathbf{S}^{-1}` up to constants per
        component, which :math:`\\mathbf{B}_1` annihilates), whichever a cost model
        (factor size, :math:`|V|`) says is cheaper; consecutive sets are grouped so
        that each group touches a few hundred to 4096 nodes. The harmonic block comes
        from the harmonic basis and the curl block is
        :math:`\\mathbf{I} - \\mathbf{P}_G - \\mathbf{P}_H` on ``S`` (without a stored
        harmonic basis: the curl block by solves with :math:`\\mathbf{L}_2` and the
        harmonic block as the remainder). All blocks of the union of the sets in a
        group are computed once; the blocks are exact to about :math:`10^{-12}`.

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
        n1 = self.num_simplices
        what = "edge" if self.rank == 1 else f"rank-{self.rank} simplex"
        article = "an" if self.rank == 1 else "a"
        sets = []
        for b, s in enumerate(supports):
            arr = np.asarray(
                s.detach().cpu().numpy() if isinstance(s, torch.Tensor) else s, dtype=np.int64
            ).ravel()
            if arr.size and (arr.min() < 0 or arr.max() >= n1):
                raise ValueError(f"`supports[{b}]` has {what} indices outside [0, {n1})")
            if np.unique(arr).size != arr.size:
                raise ValueError(f"`supports[{b}]` repeats {article} {what} index")
            sets.append(arr)
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        if self._bases is not None:
            for s in sets:
                for k, u in zip(COMPONENTS, self._bases, strict=True):
                    us = u[s]  # [|S|, dim_k]
                    blocks[k].append(us @ us.T)
        else:
            for group in self._group_sets(sets):
                self._iterative_blocks([sets[i] for i in group], blocks)
        return {
            k: [torch.from_numpy(np.ascontiguousarray(b)).to(device=device, dtype=dtype) for b in v]
            for k, v in blocks.items()
        }

    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        """Consecutive groups of sets touching at most :meth:`_group_nodes` nodes each."""
        cap = self._group_nodes()
        groups: list[list[int]] = []
        seen: set[int] = set()
        for i, s in enumerate(sets):
            nodes = set(self.complex.edges[s].ravel().tolist())
            if groups and len(seen | nodes) <= cap:
                groups[-1].append(i)
                seen |= nodes
            else:
                groups.append([i])
                seen = nodes
        return groups

    def _iterative_blocks(self, sets: list[np.ndarray], blocks: dict[str, list]) -> None:
        """Append the three blocks of each set of one group to ``blocks``."""
        allcols = np.concatenate(sets) if sets else np.zeros(0, dtype=np.int64)
        uniq, inv = np.unique(allcols, return_inverse=True)
        g = self._gradient_block(uniq)  # P_G[uniq, uniq]
        eye = np.eye(uniq.size)
        if not self.complex.num_triangles:
            c = np.zeros_like(g)
            h = eye - g
        elif self._harmonic_basis is not None:
            hb = self._harmonic_basis[uniq]  # [U, beta_1]
            h = hb @ hb.T  # [U, U]
            c = eye - g - h
        else:
            c = self._curl_block(uniq)
            h = eye - g - c
        _append_set_blocks(blocks, sets, inv, (g, c, h))

    def projector_block(
        self,
        support: torch.Tensor | np.ndarray | Sequence[int],
        component: str,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Block :math:`\\mathbf{P}_k[S, S]` ``[|S|, |S|]`` of one projector on one edge set.

        See :meth:`projector_blocks` (the batched form) for the method and errors.
        """
        idx = _check_component(component)
        return self.projector_blocks([support], dtype=dtype, device=device)[COMPONENTS[idx]][0]

    def __repr__(self) -> str:
        d = self.dims
        return (
            f"{type(self).__name__}(backend={self.backend!r}, num_edges={self.complex.num_edges}, "
            f"gradient={d['gradient']}, curl={d['curl']}, harmonic={d['harmonic']})"
        )
