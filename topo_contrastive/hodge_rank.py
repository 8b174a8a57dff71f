r"""Hodge decomposition of signals on nodes and triangles (ranks 0 and 2).

The paper decomposes edge flows (rank 1, :mod:`topo_contrastive.hodge`). A signal
:math:`\mathbf{x} \in \mathbb{R}^{N_k}` on the simplices of any rank :math:`k` splits
the same way (Lim, "Hodge Laplacians on graphs", SIAM Review 62, 2020, Thm. 5.3;
Schaub et al., "Signal processing on higher-order networks", Signal Processing 187,
2021, §2):

.. math::
    \mathbb{R}^{N_k} = \underbrace{\operatorname{im}(\mathbf{B}_k^\top)}_{\text{gradient}}
    \oplus \underbrace{\operatorname{im}(\mathbf{B}_{k+1})}_{\text{curl}}
    \oplus \underbrace{\ker(\mathbf{L}_k)}_{\text{harmonic}}, \qquad
    \mathbf{L}_k = \mathbf{B}_k^\top \mathbf{B}_k + \mathbf{B}_{k+1} \mathbf{B}_{k+1}^\top.

The library keeps the names ``gradient`` / ``curl`` / ``harmonic`` (and the order of
:data:`~topo_contrastive.hodge.COMPONENTS`) at every rank: ``gradient`` is always the
*lower* part (the image of the coboundary from rank :math:`k-1`), ``curl`` the *upper*
part (the boundaries of rank-:math:`k+1` simplices), ``harmonic`` the kernel of
:math:`\mathbf{L}_k`, of dimension the Betti number :math:`\beta_k`. In the field's
terms:

* **rank 0** (node signals ``x_0``): the gradient part is empty
  (:math:`\mathbf{B}_0 = 0`); the "curl" part :math:`\operatorname{im}(\mathbf{B}_1)`
  is the space of node signals that sum to zero on every connected component (the
  divergences of edge flows); the harmonic part is the per-component mean
  (:math:`\beta_0` = number of components). Computed in closed form.
* **rank 2** (triangle signals ``x_2``): the gradient part
  :math:`\operatorname{im}(\mathbf{B}_2^\top)` holds the "curls of edge flows"
  (:math:`\mathbf{B}_2^\top \mathbf{x}_1`); the curl part
  :math:`\operatorname{im}(\mathbf{B}_3)` holds the boundaries of tetrahedra (empty
  on a complex without tetrahedra); the harmonic part :math:`\ker \mathbf{B}_2 \cap
  \ker \mathbf{B}_3^\top` holds the closed surfaces that bound no solid: one
  dimension per cavity (:math:`\beta_2`; a hollow tetrahedron or a torus has one).

Implementation (class :class:`RankHodgeDecomposition`, made by
``HodgeDecomposition(complex, rank=k)``):

* ``"exact"``: orthonormal eigenbases of the non-zero spectra of
  :math:`\mathbf{B}_k^\top \mathbf{B}_k` and :math:`\mathbf{B}_{k+1}
  \mathbf{B}_{k+1}^\top` (each from the smaller of the two Gram matrices of
  :math:`\mathbf{B}`, as the rank-1 backend does), and an orthonormal basis of their
  complement. Memory :math:`O(N_k^2)`.
* ``"iterative"``: rank 0 in closed form (component means). Rank 2 by sparse direct
  solves: :math:`\mathbf{x}_G = \mathbf{B}_2^\top \boldsymbol{\phi}` with
  :math:`\mathbf{L}_1 \boldsymbol{\phi} = \mathbf{B}_2 \mathbf{x}` (any solution
  gives the same :math:`\mathbf{B}_2^\top\boldsymbol{\phi}`, as the harmonic part of
  :math:`\boldsymbol{\phi}` is in :math:`\ker \mathbf{B}_2^\top`), with
  :math:`\mathbf{L}_1` grounded at :math:`\beta_1` edges chosen by pivoted QR of the
  rank-1 harmonic basis so that the reduced matrix is non-singular (the rank-1 case
  grounds :math:`\mathbf{L}_0` at one node per component in the same way); the curl
  part :math:`\mathbf{B}_3 \boldsymbol{\psi}` with :math:`\mathbf{B}_3^\top\mathbf{B}_3
  \boldsymbol{\psi} = \mathbf{B}_3^\top \mathbf{x}` (conjugate gradients where
  :math:`\mathbf{B}_3^\top \mathbf{B}_3` is singular); an orthonormal harmonic basis
  of :math:`\beta_2` columns as for rank 1 (from random probes, while
  :math:`N_2 \beta_2 \le 2^{25}`). :math:`\beta_2` follows from the Euler
  characteristic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla

from topo_contrastive.complex import SimplicialOperators
from topo_contrastive.hodge import (
    _MAX_HARMONIC_BASIS_ENTRIES,
    COMPONENTS,
    HodgeDecomposition,
    _append_set_blocks,
    _check_settings,
    _factor_spd,
    _kernel_dim,
    _map_chunks,
)

__all__ = ["SUPPORTED_RANKS", "RankHodgeDecomposition"]

#: Ranks of signals :class:`~topo_contrastive.HodgeDecomposition` decomposes.
SUPPORTED_RANKS = (0, 1, 2)
# faces of rank k - 1 touched by one group of projector blocks (rank 2: edges)
_GROUP_MAX_FACES = 2048


class _GroundedSolver:
    """Solves ``A y = b`` for a sparse symmetric positive semi-definite ``A`` and ``b`` in
    its range, grounded at ``dim ker A`` rows chosen from a kernel basis.

    With ``K`` an orthonormal basis of ``ker A`` and ``R`` rows where ``K[R]`` is
    invertible (pivoted QR of ``K^T``), ``A`` without the rows and columns ``R`` is
    non-singular and its solution, padded with zeros on ``R``, solves ``A y = b``. Without
    a kernel basis (``kernel=None``) and with a singular ``A`` it falls back to conjugate
    gradients (from zero: the minimum-norm solution).
    """

    def __init__(self, A: sp.csr_matrix, kernel: np.ndarray | None, tol: float) -> None:
        self.A = A
        self.tol = tol
        n = A.shape[0]
        self.lu: Any = None
        self.keep = np.arange(n)
        if n == 0:
            return
        if kernel is not None:
            if kernel.shape[1]:
                _, _, piv = sl.qr(kernel.T, mode="economic", pivoting=True)
                mask = np.ones(n, dtype=bool)
                mask[piv[: kernel.shape[1]]] = False
                self.keep = np.flatnonzero(mask)
            if self.keep.size:
                self.lu = _factor_spd(A[self.keep][:, self.keep].tocsc())
            return
        try:  # no kernel given: factorise, and fall back to CG if singular
            lu = _factor_spd(A.tocsc())
            diag = np.abs(lu.U.diagonal())
            if diag.min() > 1e-10 * diag.max():
                self.lu = lu
        except RuntimeError:  # an exactly zero pivot
            pass

    @property
    def singular(self) -> bool:
        """Whether solves go through conjugate gradients."""
        return self.lu is None and self.keep.size == self.A.shape[0] and self.A.shape[0] > 0

    def solve(self, rhs: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
        """``y [n, m]`` with ``A y = rhs`` for ``rhs [n, m]`` in the range of ``A``.

        ``scale [m]``: norms of the signals the right-hand sides come from; conjugate
        gradients also stop at a residual of ``tol * scale`` (see
        ``HodgeDecomposition._solve_l2``).
        """
        out = np.zeros_like(rhs)
        if self.lu is not None:
            out[self.keep] = self.lu.solve(np.asfortranarray(rhs[self.keep]))
        elif self.singular:
            for j in range(rhs.shape[1]):
                atol = 0.0 if scale is None else self.tol * float(scale[j])
                sol, info = sla.cg(
                    self.A, rhs[:, j], rtol=self.tol, atol=atol, maxiter=20 * self.A.shape[0]
                )
                if info != 0:  # pragma: no cover - CG on a consistent SPSD system converges
                    raise RuntimeError(f"conjugate gradients did not converge (info={info})")
                out[:, j] = sol
        return out


def _nonzero_eigenbasis(b: sp.csr_matrix, tol: float, side: str) -> np.ndarray:
    """Orthonormal basis of ``im(b)`` (``side="left"``, ``[rows, r]``) or ``im(b^T)``
    (``side="right"``, ``[cols, r]``) from the smaller Gram matrix's eigenpairs."""
    rows, cols = b.shape
    n = rows if side == "left" else cols
    if min(rows, cols) == 0 or b.nnz == 0:
        return np.zeros((n, 0))
    small_is_cols = cols <= rows
    gram = (b.T @ b if small_is_cols else b @ b.T).toarray()
    evals, evecs = np.linalg.eigh(gram)
    nz = evals > tol * 1e3 * max(1.0, float(evals[-1]))
    lam, v = evals[nz], evecs[:, nz]
    if (side == "right") == small_is_cols:
        return v  # eigenvectors of the Gram matrix on the wanted side
    other = b @ v if side == "left" else b.T @ v
    return np.asarray(other) / np.sqrt(lam)


class RankHodgeDecomposition(HodgeDecomposition):
    r"""Hodge decomposition of signals on the simplices of rank 0 or 2 (see the module).

    Made by ``HodgeDecomposition(complex, rank=k)`` for ``k != 1``; it has the
    interface of :class:`~topo_contrastive.HodgeDecomposition` (``decompose``,
    ``project``, ``basis``, ``coordinates``, ``projector_blocks``, ``dims``) on
    signals ``[N_k]`` / ``[B, N_k]`` and index sets of rank-k simplices, and the same
    precision (about :math:`10^{-12}` relative for float64 signals; conjugate gradients,
    used only on singular systems without a kernel basis, to ``tol``).

    Args: as :class:`~topo_contrastive.HodgeDecomposition`; ``rank`` in ``{0, 2}``
    (``max_exact_edges`` is compared with :math:`N_k`).

    Raises:
        TypeError / ValueError: as :class:`~topo_contrastive.HodgeDecomposition`; a rank
            the complex does not have (rank 2 without triangles) or outside 0..2.

    Example:
        >>> import itertools
        >>> tet = range(4)  # the hollow tetrahedron: beta_2 = 1
        >>> ops = SimplicialOperators.from_simplices(
        ...     list(itertools.combinations(tet, 2)), list(itertools.combinations(tet, 3)))
        >>> hodge = HodgeDecomposition(ops, rank=2)
        >>> hodge.dims
        {'gradient': 3, 'curl': 0, 'harmonic': 1}
        >>> x_2 = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
        >>> [round(v, 6) for v in hodge(x_2).harmonic.tolist()]  # the closed surface
        [0.25, -0.25, 0.25, -0.25]
    """

    def __init__(
        self,
        complex: SimplicialOperators,
        backend: str = "auto",
        max_exact_edges: int = 2000,
        tol: float = 1e-10,
        *,
        rank: int = 1,
    ) -> None:
        _check_settings(complex, backend, max_exact_edges, tol)
        rank = complex.check_rank(rank)
        if rank == 1:
            raise ValueError("`rank` = 1 (edge flows) is HodgeDecomposition's own rank-1 code")
        if rank not in SUPPORTED_RANKS:
            raise ValueError(
                f"`rank` = {rank}: the Hodge decomposition is implemented for signals of ranks "
                f"{SUPPORTED_RANKS} (nodes, edges, triangles), not for tetrahedra"
            )
        self.rank = rank
        self.complex = complex
        self.tol = float(tol)
        n = complex.num_simplices(rank)
        if backend == "auto":
            backend = "exact" if n <= max_exact_edges else "iterative"
        self.backend = backend
        ncomp, labels = csgraph.connected_components(complex.L0, directed=False)
        self._num_components = int(ncomp)
        self._labels = labels
        self._bases: list[np.ndarray] | None = None
        self._harmonic_basis: np.ndarray | None = None
        self._beta1 = 0  # here: the harmonic dimension beta_k (base-class messages)
        self._dims: dict[str, int] = {}
        if backend == "exact":
            self._build_exact()
        elif rank == 0:
            self._build_nodes()
        else:
            self._build_triangles()

    # ------------------------------------------------------------------ set-up
    def _build_exact(self) -> None:
        ops, k = self.complex, self.rank
        n = ops.num_simplices(k)
        grad = np.zeros((n, 0))
        if k > 0:
            grad = _nonzero_eigenbasis(ops.incidence(k), self.tol, "right")
        curl = _nonzero_eigenbasis(ops.incidence(k + 1), self.tol, "left")
        beta = n - grad.shape[1] - curl.shape[1]
        if beta < 0:  # pragma: no cover - numerical safety net
            raise RuntimeError("gradient and curl eigenbases overlap; adjust `tol`")
        harm = np.zeros((n, 0))
        if beta:
            rng = np.random.default_rng(0)
            h = rng.standard_normal((n, beta))
            for _ in range(2):  # project twice: removes the round-off of the first pass
                h = h - grad @ (grad.T @ h) - curl @ (curl.T @ h)
                h, _ = np.linalg.qr(h)
            harm = h
        self._bases = [grad, curl, harm]
        self._beta1 = beta

    def _build_nodes(self) -> None:
        """Rank 0: harmonic part = per-component mean (closed form)."""
        n0 = self.complex.num_nodes
        self._sizes = np.bincount(self._labels, minlength=self._num_components).astype(np.float64)
        self._beta1 = self._num_components
        self._dims = {"gradient": 0, "curl": n0 - self._num_components, "harmonic": self._beta1}
        if n0 * self._beta1 <= _MAX_HARMONIC_BASIS_ENTRIES:
            basis = np.zeros((n0, self._beta1))
            basis[np.arange(n0), self._labels] = 1.0 / np.sqrt(self._sizes[self._labels])
            self._harmonic_basis = basis

    def _build_triangles(self) -> None:
        """Rank 2: grounded L1 (via the rank-1 harmonic basis) and L3 = B3^T B3 solvers."""
        ops = self.complex
        edge_hodge = HodgeDecomposition(ops, backend="iterative", tol=self.tol)
        kernel = edge_hodge._harmonic_basis  # [N1, beta_1] or None (too large: CG)
        self._solver_lo = _GroundedSolver(ops.L1, kernel, self.tol)
        grad_dim = edge_hodge.dims["curl"]  # rank(B2)
        curl_dim = 0
        self._solver_up: _GroundedSolver | None = None
        if ops.num_tetrahedra:
            self._solver_up = _GroundedSolver(ops.L3, None, self.tol)
            beta3 = _kernel_dim(ops.L3) if self._solver_up.singular else 0
            curl_dim = ops.num_tetrahedra - beta3  # rank(B3)
        n2 = ops.num_triangles
        self._beta1 = n2 - grad_dim - curl_dim  # beta_2
        self._dims = {"gradient": grad_dim, "curl": curl_dim, "harmonic": self._beta1}
        if self._beta1 == 0:
            self._harmonic_basis = np.zeros((n2, 0))
        elif self._beta1 * n2 <= _MAX_HARMONIC_BASIS_ENTRIES:
            rng = np.random.default_rng(0)
            z = rng.standard_normal((n2, self._beta1 + 2))
            h = z - self._lower_np(z) - self._upper_np(z)
            u, _, _ = np.linalg.svd(h, full_matrices=False)
            basis = u[:, : self._beta1]
            basis = basis - self._lower_np(basis) - self._upper_np(basis)
            self._harmonic_basis, _ = np.linalg.qr(basis)

    # ------------------------------------------------------------------ parts
    def _lower_np(self, x: np.ndarray) -> np.ndarray:
        """Rank 2: ``P_G x = B2^T phi``, ``L1 phi = B2 x``, for ``x [N2, m]``."""
        b2 = self.complex.B2
        scale = np.linalg.norm(x, axis=0)
        return np.asarray(b2.T @ self._solver_lo.solve(np.asarray(b2 @ x), scale))

    def _upper_np(self, x: np.ndarray) -> np.ndarray:
        """Rank 2: ``P_C x = B3 psi``, ``B3^T B3 psi = B3^T x``, for ``x [N2, m]``."""
        if self._solver_up is None:
            return np.zeros_like(x)
        b3 = self.complex.B3
        scale = np.linalg.norm(x, axis=0)
        return np.asarray(b3 @ self._solver_up.solve(np.asarray(b3.T @ x), scale))

    def _parts_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradient, curl and harmonic parts of signals ``x [m, N_k]`` (float64)."""
        if self.rank == 0:
            sums = np.stack([np.bincount(self._labels, xi, self._num_components) for xi in x])
            harm = (sums / self._sizes)[:, self._labels]  # [m, N0]
            return np.zeros_like(x), x - harm, harm
        grad = self._lower_np(x.T).T
        if self._solver_up is None:
            return grad, np.zeros_like(x), x - grad
        if self._harmonic_basis is not None:
            hb = self._harmonic_basis
            harm = (x @ hb) @ hb.T
            curl = x - grad
            curl -= harm
            return grad, curl, harm
        curl = self._upper_np(x.T).T
        harm = x - grad
        harm -= curl
        return grad, curl, harm

    @property
    def dims(self) -> dict[str, int]:
        """Dimensions of the gradient, curl and harmonic subspaces at this rank
        (``dims["harmonic"]`` is the Betti number :math:`\\beta_k`)."""
        if self._bases is not None:
            return {k: int(u.shape[1]) for k, u in zip(COMPONENTS, self._bases, strict=True)}
        return dict(self._dims)

    # ------------------------------------------------------------------ projector blocks
    def _group_sets(self, sets: list[np.ndarray]) -> list[list[int]]:
        """Consecutive groups of sets touching at most 2048 faces of rank k - 1 each."""
        if self.rank == 0:
            return [list(range(len(sets)))] if sets else []
        b2 = self.complex.B2.tocsc()
        groups: list[list[int]] = []
        seen: set[int] = set()
        for i, s in enumerate(sets):
            faces = set(b2[:, s].indices.tolist())
            if groups and len(seen | faces) <= _GROUP_MAX_FACES:
                groups[-1].append(i)
                seen |= faces
            else:
                groups.append([i])
                seen = faces
        return groups

    def _lower_block(self, cols: np.ndarray) -> np.ndarray:
        """Rank 2: ``P_G[cols, cols] = B2[:, cols]^T phi`` with ``L1 phi = B2[:, cols]``
        (one solve per simplex of the set, a few at a time in threads)."""
        b = self.complex.B2[:, cols].tocsc()  # [N1, |S|]
        n1 = self.complex.num_edges
        phi = np.empty((n1, cols.size))

        def work(lo: int, hi: int) -> None:
            rhs = b[:, lo:hi].toarray()
            phi[:, lo:hi] = self._solver_lo.solve(rhs, np.ones(hi - lo))

        _map_chunks(work, cols.size, rows=n1)
        g = np.asarray(b.T @ phi)
        return 0.5 * (g + g.T)

    def _upper_block(self, cols: np.ndarray) -> np.ndarray:
        """Rank 2: ``P_C[cols, cols]`` by solves with ``B3^T B3`` on the rows ``B3[cols]``."""
        b3 = self.complex.B3[cols]  # [|S|, N3]
        psi = self._solver_up.solve(b3.T.toarray(), np.ones(cols.size))  # [N3, |S|]
        c = np.asarray(b3 @ psi)
        return 0.5 * (c + c.T)

    def _iterative_blocks(self, sets: list[np.ndarray], blocks: dict[str, list]) -> None:
        """Append the three blocks of each set of one group to ``blocks``."""
        allcols = np.concatenate(sets) if sets else np.zeros(0, dtype=np.int64)
        uniq, inv = np.unique(allcols, return_inverse=True)
        eye = np.eye(uniq.size)
        if self.rank == 0:
            lab = self._labels[uniq]
            h = (lab[:, None] == lab[None, :]) / self._sizes[lab][None, :]
            g, c = np.zeros_like(h), eye - h
        else:
            g = self._lower_block(uniq)
            if self._solver_up is None:
                c, h = np.zeros_like(g), eye - g
            elif self._harmonic_basis is not None:
                hb = self._harmonic_basis[uniq]
                h = hb @ hb.T
                c = eye - g - h
            else:
                c = self._upper_block(uniq)
                h = eye - g - c
        _append_set_blocks(blocks, sets, inv, (g, c, h))

    def __repr__(self) -> str:
        d = self.dims
        return (
            f"HodgeDecomposition(rank={self.rank}, backend={self.backend!r}, "
            f"num_simplices={self.num_simplices}, gradient={d['gradient']}, curl={d['curl']}, "
            f"harmonic={d['harmonic']})"
        )

