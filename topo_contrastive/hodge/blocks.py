r"""Projector blocks :math:`\mathbf{P}_k[S, S]` on index sets :math:`S`: the parts shared
by the backends.

Validation of the index sets, grouping of consecutive sets (a group's blocks are
computed once, on the union of its sets), cutting each set's blocks out of its group's,
and the block :math:`\mathbf{A}^{-1}[V, V]` of the inverse of a grounded Laplacian that
the iterative backend's gradient blocks need, either by one solve per row of :math:`V`
or by one refactorisation with :math:`V` ordered last (Schur complement), whichever a
cost model says is cheaper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.linalg as sl
import torch

from topo_contrastive.hodge.linalg import factor_spd, map_chunks
from topo_contrastive.hodge.parts import COMPONENTS

__all__ = [
    "check_supports",
    "cut_set_blocks",
    "group_consecutive",
    "group_nodes",
    "inverse_block",
    "use_schur",
]

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


def check_supports(
    supports: Sequence[torch.Tensor | np.ndarray | Sequence[int]], n: int, rank: int
) -> list[np.ndarray]:
    """The index sets ``supports`` as ``int64`` arrays, checked against ``[0, n)``.

    Raises:
        ValueError: an index is out of ``[0, n)`` or repeated within a set.
    """
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
    """Cut each set's ``[|S|, |S|]`` blocks out of the group's three ``[U, U]`` projector
    blocks ``parts`` (gradient, curl, harmonic on the union ``U`` of the sets; ``inv`` maps
    the concatenated sets into ``U``) and append them to ``blocks``."""
    start = 0
    for s in sets:
        loc = inv[start : start + s.size]
        start += s.size
        for k, p in zip(COMPONENTS, parts, strict=True):
            blocks[k].append(p[np.ix_(loc, loc)])


def group_consecutive(
    sets: list[np.ndarray], touched: Callable[[np.ndarray], set[int]], cap: int
) -> list[list[int]]:
    """Consecutive groups of sets whose ``touched`` rows (faces, nodes) number at most
    ``cap`` per group (a set alone may touch more)."""
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


def use_schur(nnz: int, m: int) -> bool:
    """Whether the Schur complement path is cheaper than ``m`` solves with a factor of
    ``nnz`` non-zeros (cost model)."""
    if _BLOCKS_METHOD != "auto":
        return _BLOCKS_METHOD == "schur"
    refactor = _REFACTOR_FIXED + _REFACTOR_COST * nnz
    return refactor + _DENSE_COST * m**3 < _SOLVE_COST * nnz * m


def group_nodes(nnz: int | None) -> int:
    """Touched nodes per group: minimises refactorisations + dense blocks (cost model) for
    a factor of ``nnz`` non-zeros (``None``: no factor)."""
    if nnz is None:
        return _GROUP_MAX_NODES
    refactor = _REFACTOR_FIXED + _REFACTOR_COST * nnz
    best = (refactor / (2 * _DENSE_COST)) ** (1 / 3)
    return int(min(max(best, _GROUP_MIN_NODES), _GROUP_MAX_NODES))


def inverse_block(a: Any, lu: Any, order: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``A^{-1}[nodes, nodes]`` of a sparse SPD ``A`` (CSC) with the factor ``lu`` of the
    fill-reducing order ``order`` (position -> row), by solves or by the Schur complement
    path (cost model, :func:`use_schur`); ``nodes`` sorted rows of ``A``."""
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
    """``A^{-1}[nodes, nodes]`` from one refactorisation with ``nodes`` ordered last.

    With the fill-reducing order of the set-up factor for the other rows and the
    touched rows last, the LU factors (no pivoting) of the permuted matrix end in
    the blocks ``L[T, T] U[T, T]`` = Schur complement ``S`` onto the trailing rows
    ``T``, and ``(A^{-1})[T, T] = S^{-1}``: no solve per node.
    """
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
