r"""Exact ranks of integer matrices: :func:`exact_rank` (the dimensions of the Hodge
subspaces are ranks of boundary matrices, never counts of small eigenvalues)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

#: The two primes of the modular elimination (the largest primes below ``2**31``: products
#: of two residues fit in int64).
_PRIMES = (2_147_483_647, 2_147_483_629)
#: Cores of at most this many entries (rows x columns) are reduced as dense int64 arrays.
_DENSE_CORE_ENTRIES = 2**24
#: Cores with entries other than +-1 of at most this many entries are reduced exactly over
#: the integers (fraction-free elimination, about 3 s at 256 x 256); larger ones are refused.
_EXACT_CORE_ENTRIES = 2**16
#: The sparse reduction of a larger core gives up (with a ``ValueError``) after this many
#: entry updates, instead of running for hours on a core whose elimination fills in.
_SPARSE_CORE_WORK = 2 * 10**8


def exact_rank(matrix: Any, what: str = "matrix") -> int:
    r"""The rank over :math:`\mathbb{Q}` of a sparse matrix with integer entries.

    Rows and columns with one entry are peeled off (exact over the integers), and the core
    they leave is reduced by Gaussian elimination modulo two primes near :math:`2^{31}`,
    which must agree; a core with entries other than :math:`\pm 1` is reduced exactly by
    fraction-free elimination instead (docs/design.md §7.1). Exact for integer entries of
    magnitude below :math:`2^{63}`, unless the torsion of a :math:`\pm 1` core's cokernel
    is divisible by both primes (then, where they disagree, a ``ValueError``).

    Source: the elimination of computational homology (Edelsbrunner and Harer,
    *Computational Topology*, 2010, §IV.2; Dumas, Saunders and Villard, J. Symb. Comput.
    2001, for the peeling of unit pivots).

    Args:
        matrix: a ``scipy.sparse`` matrix, a dense array or a torch tensor (strided or
            sparse) ``[m, n]`` whose entries are integers (``B1``, ``B2``, ``B3`` of any
            complex: entries :math:`\pm 1`), in any integer or float dtype.
        what: the name used in error messages (default ``"matrix"``).

    Returns:
        ``int``: the rank, between 0 and ``min(m, n)``.

    Raises:
        TypeError: ``matrix`` is not 2-D or not numeric (an object array of Python ints
            included: convert it to int64 where its entries fit).
        ValueError: an entry is not a finite integer or is beyond the int64 range; the
            elimination of the core would exceed :math:`2 \cdot 10^8` entry updates; the two
            primes give different ranks; a core with entries other than :math:`\pm 1` of
            more than :math:`2^{16}` entries.

    Example:
        >>> import numpy as np
        >>> b2 = np.array([[1, 0], [-1, 0], [1, 1], [0, -1], [0, 1]])  # two triangles
        >>> exact_rank(b2)
        2
    """
    return int(independent_columns(matrix, what).size)


def independent_columns(matrix: Any, what: str = "matrix") -> np.ndarray:
    r"""A maximal set of columns of a sparse integer matrix independent over :math:`\mathbb{Q}`,
    by the elimination of :func:`exact_rank` (the columns pivoted by peeling and modulo the
    first prime). For :math:`\mathbf{B}_2`: :math:`\mathbf{B}_2[:, S]` has the image of
    :math:`\mathbf{B}_2` and :math:`\mathbf{B}_2[:, S]^\top \mathbf{B}_2[:, S]` is
    non-singular.

    Args:
        matrix: as in :func:`exact_rank`.
        what: the name used in error messages (default ``"matrix"``).

    Returns:
        ``int64 [rank]``: sorted column indices.

    Raises:
        TypeError, ValueError: as :func:`exact_rank`.
    """
    m = _as_integer_csr(matrix, what)
    pivots, core, core_cols = _peel(m)
    if core.shape[0] and core.shape[1] and np.any(np.abs(core.data) != 1):
        pivots = np.concatenate([pivots, core_cols[_exact_pivots(core, what)]])
    elif core.shape[0] and core.shape[1]:
        found = [_core_pivot_columns(core, p, what) for p in _PRIMES]
        if found[0].size != found[1].size:  # pragma: no cover - torsion divisible by p
            raise ValueError(
                f"the rank of `{what}` cannot be established: elimination modulo the "
                f"primes {_PRIMES} gives the ranks "
                f"{[pivots.size + f.size for f in found]}"
            )
        pivots = np.concatenate([pivots, core_cols[found[0]]])
    return np.sort(pivots)


def _as_integer_csr(matrix: Any, what: str) -> sp.csr_matrix:
    """``matrix`` as an int64 CSR matrix without explicit zeros, checked integral and in range."""
    if hasattr(matrix, "detach"):  # a torch tensor: strided as numpy, sparse as scipy COO
        import torch

        t = matrix.detach().cpu()
        if t.layout == torch.strided or t.dim() != 2:
            matrix = t.to_dense().numpy()
        else:
            t = t.to_sparse_coo().coalesce()
            matrix = sp.coo_matrix((t.values().numpy(), tuple(t.indices().numpy())), t.shape)
    arr = matrix if sp.issparse(matrix) else np.asarray(matrix)
    if arr.ndim != 2:
        raise TypeError(f"`{what}` must be a 2-D matrix, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"`{what}` must hold numbers of an integer or float dtype, got dtype {arr.dtype}"
            + (" (convert Python ints to int64 where they fit)" if arr.dtype == object else "")
        )
    m = sp.csr_matrix(arr)
    data = m.data
    if data.dtype.kind == "f":
        if not np.all(np.isfinite(data)) or np.any(data != np.round(data)):
            raise ValueError(f"`{what}` must hold integer entries to have an exact rank")
    big = data[np.abs(data) >= 2.0**63] if data.dtype.kind == "f" else data[data > _INT64_MAX]
    if big.size:
        raise ValueError(
            f"`{what}` holds the entry {big[0].item()!r}, beyond the int64 range in which "
            "its rank is computed (|entries| < 2**63)"
        )
    out = sp.csr_matrix(
        (data.astype(np.int64), m.indices.copy(), m.indptr.copy()), shape=m.shape
    )
    out.eliminate_zeros()
    out.sum_duplicates()
    out.eliminate_zeros()
    return out


_INT64_MAX = np.iinfo(np.int64).max


def _exact_pivots(core: sp.csr_matrix, what: str) -> np.ndarray:
    """Pivot columns of an integer ``core`` over the rationals: fraction-free (Bareiss, Math.
    Comp. 22, 1968) row reduction over Python ints, every entry a minor (exact divisions)."""
    rows, cols = core.shape
    if rows * cols > _EXACT_CORE_ENTRIES:
        raise ValueError(
            f"the rank of `{what}` cannot be established: what is left after peeling pivots "
            f"of one entry, {rows} x {cols}, holds entries other than +-1 and is larger than "
            f"the {_EXACT_CORE_ENTRIES} entries reduced exactly over the integers"
        )
    return _pivots(core.toarray().astype(object), _bareiss_step)  # Python ints: no overflow


def _bareiss_step(a: np.ndarray, r: int, col: int, prev: Any) -> Any:
    """Clear the column below the pivot ``a[r, col]``, every entry a minor (exact division)."""
    p, rest, right = a[r, col], slice(r + 1, None), slice(col + 1, None)
    a[rest, right] = (p * a[rest, right] - np.outer(a[rest, col], a[r, right])) // prev
    a[rest, col] = 0
    return p


def _pivots(a: np.ndarray, step: Callable[[np.ndarray, int, int, Any], Any]) -> np.ndarray:
    """Pivot columns of the row reduction of ``a`` in place: ``step(a, row, col, prev)`` clears
    the column below the pivot ``a[row, col]`` and returns the pivot the next step divides by."""
    rows, cols = a.shape
    rank, prev, pivots = 0, 1, []
    for col in range(cols):
        if rank == rows:
            break
        nz = np.flatnonzero(a[rank:, col] != 0)
        if nz.size == 0:
            continue
        top = rank + int(nz[0])
        if top != rank:
            a[[rank, top]] = a[[top, rank]]
        prev = step(a, rank, col, prev)
        pivots.append(col)
        rank += 1
    return np.asarray(pivots, dtype=np.int64)


def _alive_partner(
    ptr: np.ndarray, idx: np.ndarray, lines: np.ndarray, alive: np.ndarray
) -> np.ndarray:
    """The single alive entry of each of ``lines`` (rows of CSR / columns of CSC)."""
    counts = ptr[lines + 1] - ptr[lines]
    owner = np.repeat(np.arange(lines.size), counts)
    partners = _entries_of(ptr, idx, lines)
    keep = alive[partners]
    out = np.empty(lines.size, dtype=np.int64)
    out[owner[keep]] = partners[keep]
    return out


def _entries_of(ptr: np.ndarray, idx: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Indices of the entries of ``lines`` (rows of CSR / columns of CSC), concatenated."""
    counts = ptr[lines + 1] - ptr[lines]
    pos = np.repeat(ptr[lines] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    return idx[pos]


def _peel(m: sp.csr_matrix) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray]:
    """``(pivot columns, core, the core's columns in m)``: rows, then columns, with one alive
    entry in distinct lines pivoted together (a permuted diagonal), round after round."""
    csc = m.tocsc()
    nr, nc = m.shape
    row_alive = np.ones(nr, dtype=bool)
    col_alive = np.ones(nc, dtype=bool)
    rcount = np.diff(m.indptr).astype(np.int64)
    ccount = np.diff(csc.indptr).astype(np.int64)
    pivot_cols: list[np.ndarray] = []
    while True:
        progressed = False
        for by_rows in (True, False):
            alive, count = (row_alive, rcount) if by_rows else (col_alive, ccount)
            other_alive = col_alive if by_rows else row_alive
            ptr, idx = (m.indptr, m.indices) if by_rows else (csc.indptr, csc.indices)
            lines = np.flatnonzero(alive & (count == 1))
            if lines.size == 0:
                continue
            partners = _alive_partner(ptr, idx, lines, other_alive)
            partners, first = np.unique(partners, return_index=True)
            lines = lines[first]
            rows, cols = (lines, partners) if by_rows else (partners, lines)
            pivot_cols.append(cols)
            row_alive[rows] = False
            col_alive[cols] = False
            touched_cols = _entries_of(m.indptr, m.indices, rows)
            touched_cols = touched_cols[col_alive[touched_cols]]
            ccount -= np.bincount(touched_cols, minlength=nc)
            touched_rows = _entries_of(csc.indptr, csc.indices, cols)
            touched_rows = touched_rows[row_alive[touched_rows]]
            rcount -= np.bincount(touched_rows, minlength=nr)
            progressed = True
        if not progressed:
            break
    keep_rows = np.flatnonzero(row_alive & (rcount > 0))
    keep_cols = np.flatnonzero(col_alive & (ccount > 0))
    pivots = np.concatenate(pivot_cols) if pivot_cols else np.zeros(0, dtype=np.int64)
    return pivots.astype(np.int64), m[keep_rows][:, keep_cols].tocsr(), keep_cols


def _core_pivot_columns(core: sp.csr_matrix, p: int, what: str) -> np.ndarray:
    """Pivot columns of ``core`` over ``F_p``: dense row reduction while it fits, else sparse."""
    if core.shape[0] * core.shape[1] > _DENSE_CORE_ENTRIES:
        return _sparse_pivots_mod(core, p, what)

    def step(a: np.ndarray, r: int, col: int, prev: Any) -> Any:  # pivot 1, zeros below
        a[r, col:] = (a[r, col:] * pow(int(a[r, col]), p - 2, p)) % p
        below = r + 1 + np.flatnonzero(a[r + 1 :, col])
        if below.size:
            f = a[below, col][:, None]  # [k, 1]
            a[below, col:] = (a[below, col:] - (f * a[r, col:]) % p) % p
        return prev

    return _pivots(core.toarray() % p, step)


def _sparse_pivots_mod(core: sp.csr_matrix, p: int, what: str) -> np.ndarray:
    """Pivot columns over ``F_p`` by the column reduction of persistent homology (each column
    reduced by the earlier pivots at its lowest row; one left non-zero is independent)."""
    csc = core.tocsc()
    csc.sort_indices()
    pivots: dict[int, dict[int, int]] = {}  # lowest row -> reduced column, low entry 1
    independent: list[int] = []
    work = 0
    for j in range(csc.shape[1]):
        lo, hi = csc.indptr[j], csc.indptr[j + 1]
        entries = zip(csc.indices[lo:hi], csc.data[lo:hi], strict=True)
        col = {int(i): int(v) % p for i, v in entries}
        while col:
            low = max(col)
            piv = pivots.get(low)
            if piv is None:
                inv = pow(col[low], p - 2, p)
                pivots[low] = {i: v * inv % p for i, v in col.items()}
                independent.append(j)
                break
            f = col[low]
            for i, v in piv.items():
                nv = (col.get(i, 0) - f * v) % p
                if nv:
                    col[i] = nv
                else:
                    col.pop(i, None)
            work += len(piv)
            if work > _SPARSE_CORE_WORK:
                raise ValueError(
                    f"the rank of `{what}` cannot be established within "
                    f"{_SPARSE_CORE_WORK:.0e} elimination steps: its core of "
                    f"{core.shape[0]} x {core.shape[1]} entries (what is left after peeling "
                    "pivots of one entry) fills in; a complex this large with this many "
                    "closed 2-cycles is beyond the iterative backend"
                )
    return np.asarray(independent, dtype=np.int64)
