"""Sparse linear algebra of the Hodge backends: factorisations, solvers, threads.

Sparse symmetric positive (semi-)definite systems are factorised by scipy's SuperLU in
"symmetric mode" (a sparse :math:`\\mathbf{L}\\mathbf{D}\\mathbf{L}^\\top` in LU form);
many right-hand sides are solved a few at a time, in threads for large systems.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla
import torch

__all__ = [
    "GroundedSolver",
    "connected_components",
    "factor_spd",
    "map_chunks",
    "nonzero_eigenbasis",
]

# Sparse LU of a symmetric positive definite matrix: minimum degree ordering on A + A^T and
# diagonal pivots only (SuperLU's "symmetric mode"), i.e. a sparse LDL^T in LU form.
_SPD_ORDERING = "MMD_AT_PLUS_A"
_SPD_OPTIONS: dict[str, Any] = {"diag_pivot_thresh": 0.0, "options": {"SymmetricMode": True}}
# right-hand sides per call of SuperLU's triangular solve (it slows down for wide blocks)
_CHUNK = 4
# solves run in threads (SuperLU releases the GIL) from this many unknowns on
_THREAD_MIN_ROWS = 20_000


def _num_workers() -> int:
    """Threads for the triangular solves: PyTorch's intra-op thread setting, at most 8."""
    return max(1, min(8, torch.get_num_threads()))


def map_chunks(fn: Callable[[int, int], None], n: int, rows: int) -> None:
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


def connected_components(l0: sp.spmatrix) -> tuple[int, np.ndarray]:
    """Number of connected components of the graph of ``L0`` and each node's component."""
    ncomp, labels = csgraph.connected_components(l0, directed=False)
    return int(ncomp), labels


def factor_spd(a: Any, permc_spec: str = _SPD_ORDERING) -> Any:
    """Sparse LU without pivoting of a symmetric positive (semi-)definite CSC matrix.

    Runs in the calling thread: scipy leaks a factor created in a worker thread.
    """
    return sla.splu(a, permc_spec=permc_spec, **_SPD_OPTIONS)


def nonzero_eigenbasis(
    b: sp.csr_matrix, tol: float, side: str, rank: int | None = None
) -> np.ndarray:
    """Orthonormal basis of ``im(b)`` (``side="left"``, ``[rows, r]``) or ``im(b^T)``
    (``side="right"``, ``[cols, r]``) from the smaller Gram matrix's eigenpairs.

    ``rank``: the exact rank of ``b`` (the ``rank`` largest eigenpairs are kept); without
    it, the eigenvalues above ``tol * 1e3`` times the largest.
    """
    rows, cols = b.shape
    n = rows if side == "left" else cols
    if min(rows, cols) == 0 or b.nnz == 0 or rank == 0:
        return np.zeros((n, 0))
    small_is_cols = cols <= rows
    gram = (b.T @ b if small_is_cols else b @ b.T).toarray()
    evals, evecs = np.linalg.eigh(gram)
    if rank is None:
        nz = evals > tol * 1e3 * max(1.0, float(evals[-1]))
    else:
        nz = np.arange(evals.size) >= evals.size - rank
    lam, v = evals[nz], evecs[:, nz]
    if (side == "right") == small_is_cols:
        return v  # eigenvectors of the Gram matrix on the wanted side
    other = b @ v if side == "left" else b.T @ v
    return np.asarray(other) / np.sqrt(lam)


class GroundedSolver:
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
                self.lu = factor_spd(A[self.keep][:, self.keep].tocsc())
            return
        try:  # no kernel given: factorise, and fall back to CG if singular
            lu = factor_spd(A.tocsc())
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
        :meth:`topo_contrastive.hodge.iterative.EdgeIterative._solve_l2`).
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
