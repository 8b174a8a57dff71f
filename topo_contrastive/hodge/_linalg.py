"""Sparse linear algebra of the Hodge backends: factors, solvers, threads, projector blocks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla
import torch

from topo_contrastive.hodge.parts import COMPONENTS

T = TypeVar("T")

# Sparse LU of a symmetric positive definite matrix: minimum degree ordering on A + A^T and
# diagonal pivots only (SuperLU's "symmetric mode"), i.e. a sparse LDL^T in LU form.
_SPD_ORDERING = "MMD_AT_PLUS_A"
_SPD_OPTIONS: dict[str, Any] = {"diag_pivot_thresh": 0.0, "options": {"SymmetricMode": True}}
# right-hand sides per call of SuperLU's triangular solve (it slows down for wide blocks)
_CHUNK = 4
# solves run in threads (SuperLU releases the GIL) from this many unknowns on
_THREAD_MIN_ROWS = 20_000
# inverse_block: A^{-1} on the m touched rows either by m solves or by one refactorisation
# of A with them ordered last (Schur complement, then a dense m x m inverse). Cost model in
# seconds, measured on 2 cores (only the ratios matter): a solve costs _SOLVE_COST per
# factor non-zero, a refactorisation _REFACTOR_FIXED plus _REFACTOR_COST per factor
# non-zero plus _DENSE_COST * m^3 for its dense trailing block.
_SOLVE_COST = 3e-9
_REFACTOR_FIXED = 0.02
_REFACTOR_COST = 2e-7
_DENSE_COST = 3.5e-10
# "auto" (cost model), "schur" or "solves" (tests and benchmarks force one)
_BLOCKS_METHOD = "auto"
# touched nodes per refactorisation: the cost-optimal group size, clipped to these bounds
_GROUP_MIN_NODES = 256
_GROUP_MAX_NODES = 4096


def progress_bar(items: Iterable[T], desc: str, unit: str = "it", minimum: int = 2) -> Iterator[T]:
    """``items`` with a tqdm bar on a terminal or notebook (none off one, or below ``minimum``)."""
    seq: Any = items
    if len(seq) < minimum:
        yield from seq
        return
    from tqdm.auto import tqdm

    yield from tqdm(seq, desc=desc, unit=unit, disable=None, leave=False)


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
    """Sparse LU without pivoting of an SPD CSC matrix (in the calling thread: scipy leaks a
    factor made in a worker thread)."""
    return sla.splu(a, permc_spec=permc_spec, **_SPD_OPTIONS)


def conjugate_gradients(a: Any, rhs: np.ndarray, tol: float, scale: Any) -> np.ndarray:
    """Minimum-norm solutions of the singular SPSD ``a y = rhs`` (``rhs [n, m]``), column by
    column; a column also stops at a residual of ``tol * scale[j]`` (docs/design.md §7.1)."""
    out = np.zeros_like(rhs)
    for j in range(rhs.shape[1]):
        atol = 0.0 if scale is None else tol * float(scale[j])
        sol, info = sla.cg(a, rhs[:, j], rtol=tol, atol=atol, maxiter=20 * a.shape[0])
        if info != 0:  # pragma: no cover - CG on a consistent SPSD system converges
            raise RuntimeError(f"conjugate gradients did not converge (info={info})")
        out[:, j] = sol
    return out


class GroundedSolver:
    """Solves ``A y = b`` for a sparse SPSD ``A`` and ``b`` in its range: grounded at ``dim ker
    A`` rows where ``kernel[R]`` is invertible (pivoted QR), else by a factor of ``A`` (when
    ``check`` finds its pivots sound) or conjugate gradients."""

    def __init__(self, A: Any, kernel: np.ndarray | None, tol: float, check: bool = True) -> None:
        self.A, self.tol, self.lu = A, tol, None
        n = A.shape[0]
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
            if not check or diag.min() > 1e-10 * diag.max():
                self.lu = lu
        except RuntimeError:  # an exactly zero pivot
            pass

    @property
    def singular(self) -> bool:
        """Whether solves go through conjugate gradients."""
        return self.lu is None and self.keep.size == self.A.shape[0] and self.A.shape[0] > 0

    def solve(self, rhs: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
        """``y [n, m]`` with ``A y = rhs [n, m]``; ``scale [m]``: the norms CG's residual is
        measured against (see :func:`conjugate_gradients`)."""
        if self.singular:
            return conjugate_gradients(self.A, rhs, self.tol, scale)
        out = np.zeros_like(rhs)
        if self.lu is not None:
            out[self.keep] = self.lu.solve(np.asfortranarray(rhs[self.keep]))
        return out


def check_supports(supports: Sequence[Any], n: int, rank: int) -> list[np.ndarray]:
    """The index sets ``supports`` as ``int64`` arrays, checked in ``[0, n)`` and unrepeated."""
    what = "edge" if rank == 1 else f"rank-{rank} simplex"
    article = "an" if rank == 1 else "a"
    sets = []
    for b, s in enumerate(supports):
        arr = np.asarray(
            s.detach().cpu().numpy() if isinstance(s, torch.Tensor) else s, dtype=np.int64
        ).ravel()
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            raise ValueError(f"`supports[{b}]` has {what} indices outside [0, {n})")
        if np.unique(arr).size != arr.size:
            raise ValueError(f"`supports[{b}]` repeats {article} {what} index")
        sets.append(arr)
    return sets


def cut_set_blocks(
    blocks: dict[str, list], sets: list[np.ndarray], inv: np.ndarray, parts: tuple
) -> None:
    """Append each set's blocks, cut from its group's three blocks ``parts`` on the union of
    the sets (``inv``: the concatenated sets' positions in the union), to ``blocks``."""
    start = 0
    for s in sets:
        loc = inv[start : start + s.size]
        start += s.size
        for k, p in zip(COMPONENTS, parts, strict=True):
            blocks[k].append(p[np.ix_(loc, loc)])


def group_consecutive(
    sets: list[np.ndarray], touched: Callable[[np.ndarray], set[int]], cap: int
) -> list[list[int]]:
    """Consecutive groups of sets touching at most ``cap`` rows each (one set may exceed it)."""
    groups: list[list[int]] = []
    seen: set[int] = set()
    for i, s in enumerate(sets):
        rows = touched(s)
        if groups and len(seen | rows) <= cap:
            groups[-1].append(i)
            seen |= rows
        else:
            groups.append([i])
            seen = rows
    return groups


def _refactor_cost(nnz: int) -> float:
    """Seconds of one refactorisation of a factor of ``nnz`` non-zeros (cost model)."""
    return _REFACTOR_FIXED + _REFACTOR_COST * nnz


def use_schur(nnz: int, m: int) -> bool:
    """Whether the Schur complement path beats ``m`` solves with a factor of ``nnz`` non-zeros."""
    if _BLOCKS_METHOD != "auto":
        return _BLOCKS_METHOD == "schur"
    return _refactor_cost(nnz) + _DENSE_COST * m**3 < _SOLVE_COST * nnz * m


def group_nodes(nnz: int | None) -> int:
    """Touched nodes per group minimising refactorisations + dense blocks (``None``: no factor)."""
    if nnz is None:
        return _GROUP_MAX_NODES
    best = (_refactor_cost(nnz) / (2 * _DENSE_COST)) ** (1 / 3)
    return int(min(max(best, _GROUP_MIN_NODES), _GROUP_MAX_NODES))


def inverse_block(a: Any, lu: Any, order: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``A^{-1}[nodes, nodes]`` of an SPD CSC ``A`` with factor ``lu`` (fill-reducing
    ``order``: position -> row), by solves or the Schur complement (:func:`use_schur`)."""
    if use_schur(lu.nnz, nodes.size):
        return _inverse_by_schur(a, lu, order, nodes)
    return _inverse_by_solves(lu, a.shape[0], nodes)


def _inverse_by_solves(lu: Any, n: int, nodes: np.ndarray) -> np.ndarray:
    """``A^{-1}[nodes, nodes]`` by one solve per node (``A`` of ``n`` rows, factor ``lu``)."""
    m = nodes.size
    z = np.empty((m, m))

    def work(lo: int, hi: int) -> None:
        rhs = np.zeros((n, hi - lo), order="F")
        rhs[nodes[lo:hi], np.arange(hi - lo)] = 1.0
        z[:, lo:hi] = lu.solve(rhs)[nodes]

    map_chunks(work, m, rows=n)
    return 0.5 * (z + z.T)


def _inverse_by_schur(a: Any, lu0: Any, order0: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``A^{-1}[nodes, nodes] = S^{-1}``: the trailing block of an LU of ``A`` refactorised
    with ``nodes`` ordered last is the Schur complement ``S`` onto them."""
    n, m = a.shape[0], nodes.size
    rest = np.ones(n, dtype=bool)
    rest[nodes] = False
    order = np.concatenate([order0[rest[order0]], nodes])
    lu = factor_spd(a[order][:, order].tocsc(), permc_spec="NATURAL")
    pos = lu.perm_c[n - m :]  # final positions of the touched rows
    t0 = int(pos.min())
    # SuperLU post-orders the elimination tree; the touched rows stay (almost) last
    if not np.array_equal(lu.perm_r, lu.perm_c) or n - t0 > 2 * m + 64:
        return _inverse_by_solves(lu0, n, nodes)  # pragma: no cover - safety net
    lt = lu.L[t0:, t0:].toarray()  # [|T|, |T|] unit lower triangular
    ut = lu.U[t0:, t0:].toarray()  # [|T|, |T|] upper triangular
    del lu
    zt = sl.solve_triangular(
        ut, sl.solve_triangular(lt, np.eye(n - t0), lower=True, unit_diagonal=True)
    )  # S^{-1} = U^{-1} L^{-1}
    z = zt[np.ix_(pos - t0, pos - t0)]
    return 0.5 * (z + z.T)
