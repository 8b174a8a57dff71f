"""Construction of a complex: validated signed incidence matrices from the user's input.

Free functions behind :class:`~topo_contrastive.complex.ComplexOperators`'s
constructors. :func:`incidence_from_simplices` orders and orients simplex lists
(TopoNetX's convention, see :mod:`topo_contrastive.complex`) and builds ``B1``, ``B2``,
``B3``; :func:`incidence_from_matrices` checks signed incidence matrices given in any
orientation; :func:`oriented_simplices` reads the node ids of the simplices back from the
matrices. Every function raises the ``ValueError`` / ``TypeError`` that the constructors
document.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import torch

__all__ = [
    "face_cycles",
    "incidence_from_cells",
    "incidence_from_matrices",
    "incidence_from_simplices",
    "oriented_simplices",
]


# ---------------------------------------------------------------------- input conversion
def _as_index_array(obj: Any, width: int, name: str) -> np.ndarray:
    """Convert a list/array/tensor of simplices to an ``int64`` array ``[n, width]``."""
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().numpy()
    arr = np.asarray(obj)
    if arr.size == 0:
        return np.zeros((0, width), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(
            f"`{name}` must have shape [n, {width}] (one row of {width} node ids per simplex), "
            f"got shape {tuple(arr.shape)}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.mod(arr, 1) == 0):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"`{name}` must hold integer node ids, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _to_scipy(mat: Any, name: str) -> sp.csr_matrix:
    """Convert a scipy/torch (sparse or dense)/numpy matrix to a float64 CSR matrix."""
    if isinstance(mat, torch.Tensor):
        mat = mat.detach().cpu()
        if mat.layout != torch.strided:
            coo = mat.to_sparse_coo().coalesce()
            idx = coo.indices().numpy()
            val = coo.values().double().numpy()
            mat = sp.csr_matrix((val, (idx[0], idx[1])), shape=tuple(coo.shape))
        else:
            mat = mat.double().numpy()
    if getattr(getattr(mat, "dtype", None), "kind", "") == "c":
        raise TypeError(f"`{name}` must be a real matrix, got complex dtype {mat.dtype}")
    try:
        if sp.issparse(mat):
            out = sp.csr_matrix(mat, dtype=np.float64)
        else:
            arr = np.asarray(mat, dtype=np.float64)
    except (TypeError, ValueError) as err:  # strings, objects, complex numbers
        raise TypeError(
            f"`{name}` must be a real matrix (scipy sparse, torch or numpy), got "
            f"{type(mat).__name__}" + (f" of dtype {mat.dtype}" if hasattr(mat, "dtype") else "")
            + f" ({err})"
        ) from None
    if not sp.issparse(mat):
        if arr.ndim != 2:
            raise ValueError(f"`{name}` must be a 2-D matrix, got {arr.ndim} dimensions")
        out = sp.csr_matrix(arr)
    if not np.isfinite(out.data).all():
        raise ValueError(f"`{name}` contains NaN or inf entries")
    out.eliminate_zeros()
    out.sort_indices()
    return out


# ---------------------------------------------------------------------- from simplex lists
def incidence_from_simplices(
    edges: Any,
    triangles: Any | None = None,
    num_nodes: int | None = None,
    tetrahedra: Any | None = None,
) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix | None]:
    """``(B1, B2, B3)`` of simplex lists, sorted and oriented low -> high.

    The arguments and errors are those of ``ComplexOperators.from_simplices``;
    ``B3`` is ``None`` without tetrahedra.
    """
    e = _as_index_array(edges, 2, "edges")
    t = _as_index_array([] if triangles is None else triangles, 3, "triangles")
    q = _as_index_array([] if tetrahedra is None else tetrahedra, 4, "tetrahedra")
    num_nodes = _check_node_ids(e, t, q, num_nodes)
    B1, edge_keys = _edge_incidence(e, num_nodes)
    B2, t = _triangle_incidence(t, edge_keys, num_nodes)
    B1.sort_indices()
    B2.sort_indices()
    B3 = None
    if q.size:
        B3 = _tetrahedra_incidence(q, t, num_nodes)
    return B1, B2, B3


def incidence_from_cells(
    edges: Any, cells: Any | None = None, num_nodes: int | None = None
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(B1, B2)`` of an edge list and 2-cells given as node cycles.

    Edges are sorted and oriented low -> high as in :func:`incidence_from_simplices`; the
    2-cells keep the given order, and each is oriented along its node cycle
    ``v_0 -> v_1 -> ... -> v_{k-1} -> v_0``. The arguments and errors are those of
    ``from_cells``.
    """
    e = _as_index_array(edges, 2, "edges")
    cycles = _as_cycles(cells)
    flat = np.concatenate(cycles) if cycles else np.zeros(0, dtype=np.int64)
    max_id = max(int(e.max(initial=-1)), int(flat.max(initial=-1)))
    if num_nodes is None:
        num_nodes = max_id + 1
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) or (
        num_nodes < 0
    ):
        raise ValueError(f"`num_nodes` must be a non-negative integer, got {num_nodes!r}")
    num_nodes = int(num_nodes)
    low = min(int(e.min(initial=0)), int(flat.min(initial=0)))
    if low < 0 or max_id >= num_nodes:
        raise ValueError(
            f"node ids must lie in [0, num_nodes={num_nodes}), got ids in [{low}, {max_id}]"
        )
    B1, edge_keys = _edge_incidence(e, num_nodes)
    B1.sort_indices()
    n1 = edge_keys.shape[0]
    if not cycles:
        return B1, sp.csr_matrix((n1, 0))
    lengths = np.array([c.size for c in cycles])
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    nxt = np.arange(flat.size) + 1
    nxt[ptr[1:] - 1] = ptr[:-1]  # the last node of a cycle closes it at its first
    u, v = flat, flat[nxt]
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    keys = lo * num_nodes + hi
    pos = np.minimum(np.searchsorted(edge_keys, keys), max(n1 - 1, 0))
    found = (edge_keys[pos] == keys) if n1 else np.zeros(keys.shape, dtype=bool)
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        c = int(np.searchsorted(ptr, i, side="right") - 1)
        raise ValueError(
            f"`cells` entry {c} {cycles[c].tolist()} steps from node {int(u[i])} to node "
            f"{int(v[i])}, which is not an edge in `edges`"
        )
    col = np.repeat(np.arange(len(cycles)), lengths)
    B2 = sp.csr_matrix(
        (np.where(u < v, 1.0, -1.0), (pos, col)), shape=(n1, len(cycles))
    )
    return B1, B2


def _as_cycles(cells: Any) -> list[np.ndarray]:
    """2-cells given as node cycles (a sequence of integer sequences, or an integer array
    ``[N2, k]``) as a list of ``int64`` arrays, each of at least three distinct nodes."""
    if cells is None:
        return []
    if isinstance(cells, torch.Tensor):
        cells = cells.detach().cpu().numpy()
    if isinstance(cells, np.ndarray) and cells.ndim == 2:
        cells = list(cells)
    if isinstance(cells, (str, bytes)) or not hasattr(cells, "__len__"):
        raise TypeError(
            "`cells` must be a sequence of node cycles (one sequence of node ids per 2-cell), "
            f"got {type(cells).__name__}"
        )
    out = []
    for i, cell in enumerate(cells):
        if isinstance(cell, torch.Tensor):
            cell = cell.detach().cpu().numpy()
        arr = np.asarray(cell)
        if arr.ndim != 1:
            raise ValueError(
                f"`cells` entry {i} must be a sequence of node ids, got shape {arr.shape}"
            )
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            if np.issubdtype(arr.dtype, np.floating) and np.all(np.mod(arr, 1) == 0):
                arr = arr.astype(np.int64)
            else:
                raise TypeError(f"`cells` entry {i} must hold integer node ids, got {arr.dtype}")
        arr = arr.astype(np.int64)
        if arr.size < 3:
            raise ValueError(
                f"`cells` entry {i} has {arr.size} node(s); a 2-cell needs a cycle of at least "
                "three nodes"
            )
        if np.unique(arr).size != arr.size:
            raise ValueError(
                f"`cells` entry {i} {arr.tolist()} repeats a node; a 2-cell's boundary is a "
                "simple cycle"
            )
        out.append(arr)
    return out


def _check_node_ids(e: np.ndarray, t: np.ndarray, q: np.ndarray, num_nodes: Any) -> int:
    """Check the node ids of edges ``e``, triangles ``t``, tetrahedra ``q``; return
    ``num_nodes`` (default ``max id + 1``) as an int."""
    if q.size and (q.min() < 0 or num_nodes is not None and q.max() >= num_nodes):
        raise ValueError(
            f"tetrahedron node ids must lie in [0, num_nodes={num_nodes}), got ids in "
            f"[{int(q.min())}, {int(q.max())}]"
        )
    max_id = max(int(e.max(initial=-1)), int(t.max(initial=-1)), int(q.max(initial=-1)))
    if num_nodes is None:
        num_nodes = max_id + 1
    if not isinstance(num_nodes, (int, np.integer)) or num_nodes < 0:
        raise ValueError(f"`num_nodes` must be a non-negative integer, got {num_nodes!r}")
    num_nodes = int(num_nodes)
    if e.size and (e.min() < 0 or max_id >= num_nodes) or t.size and t.min() < 0:
        raise ValueError(
            f"node ids must lie in [0, num_nodes={num_nodes}), got ids in "
            f"[{min(int(e.min(initial=0)), int(t.min(initial=0)))}, {max_id}]"
        )
    if t.size and max_id >= num_nodes:
        raise ValueError(f"triangle node id {max_id} is out of range for num_nodes={num_nodes}")
    return num_nodes


def _edge_incidence(e: np.ndarray, num_nodes: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``B1 [N0, N1]`` of the edges ``e [N1, 2]`` and their sorted keys ``u * N0 + v``.

    Sorts the edges; raises ``ValueError`` for a self-loop or a duplicate.
    """
    loops = np.flatnonzero(e[:, 0] == e[:, 1])
    if loops.size:
        raise ValueError(f"`edges` row {loops[0]} is a self-loop {e[loops[0]].tolist()}")
    e = np.sort(e, axis=1)
    keys = e[:, 0] * num_nodes + e[:, 1]
    order = np.argsort(keys, kind="stable")
    skeys = keys[order]
    dup = np.flatnonzero(skeys[1:] == skeys[:-1])
    if dup.size:
        raise ValueError(f"`edges` contains the edge {e[order[dup[0]]].tolist()} twice")
    e = e[order]
    n1 = e.shape[0]
    cols = np.repeat(np.arange(n1), 2)
    B1 = sp.csr_matrix(
        (np.tile([-1.0, 1.0], n1), (e.ravel(), cols)), shape=(num_nodes, n1)
    )
    return B1, skeys


def _triangle_incidence(
    t: np.ndarray, edge_keys: np.ndarray, num_nodes: int
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``B2 [N1, N2]`` of the triangles ``t [N2, 3]`` over the edges of sorted keys
    ``edge_keys [N1]``, and the sorted triangles.

    Sorts the triangles; raises ``ValueError`` for a repeated node, a duplicate or a face
    that is not an edge.
    """
    n1 = edge_keys.shape[0]
    if not t.size:
        return sp.csr_matrix((n1, 0)), t
    t = np.sort(t, axis=1)
    bad = np.flatnonzero((t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]))
    if bad.size:
        raise ValueError(f"`triangles` row {bad[0]} repeats a node: {t[bad[0]].tolist()}")
    tkeys = (t[:, 0] * num_nodes + t[:, 1]) * num_nodes + t[:, 2]
    torder = np.argsort(tkeys, kind="stable")
    stk = tkeys[torder]
    tdup = np.flatnonzero(stk[1:] == stk[:-1])
    if tdup.size:
        raise ValueError(
            f"`triangles` contains the triangle {t[torder[tdup[0]]].tolist()} twice"
        )
    t = t[torder]
    faces = np.stack([t[:, [1, 2]], t[:, [0, 2]], t[:, [0, 1]]], axis=1)  # [N2, 3, 2]
    fkeys = faces[..., 0] * num_nodes + faces[..., 1]
    pos = np.searchsorted(edge_keys, fkeys)
    pos = np.minimum(pos, max(n1 - 1, 0))
    found = (edge_keys[pos] == fkeys) if n1 else np.zeros_like(fkeys, dtype=bool)
    if not found.all():
        r, f = np.argwhere(~found)[0]
        raise ValueError(
            f"triangle {t[r].tolist()} has the face {faces[r, f].tolist()}, "
            "which is not in `edges`"
        )
    n2 = t.shape[0]
    B2 = sp.csr_matrix(
        (np.tile([1.0, -1.0, 1.0], n2), (pos.ravel(), np.repeat(np.arange(n2), 3))),
        shape=(n1, n2),
    )
    return B2, t


def _tetrahedra_incidence(q: np.ndarray, t: np.ndarray, num_nodes: int) -> sp.csr_matrix:
    """``B3 [N2, N3]`` of tetrahedra ``q [N3, 4]`` over the sorted triangles ``t [N2, 3]``.

    Sorts the tetrahedra; raises ``ValueError`` for a repeated node, a duplicate or a face
    that is not a triangle.
    """
    q = np.sort(q, axis=1)
    bad = np.flatnonzero((q[:, :-1] == q[:, 1:]).any(axis=1))
    if bad.size:
        raise ValueError(f"`tetrahedra` row {bad[0]} repeats a node: {q[bad[0]].tolist()}")
    n = np.int64(num_nodes)
    qkeys = ((q[:, 0] * n + q[:, 1]) * n + q[:, 2]) * n + q[:, 3]
    order = np.argsort(qkeys, kind="stable")
    sq = qkeys[order]
    dup = np.flatnonzero(sq[1:] == sq[:-1])
    if dup.size:
        raise ValueError(f"`tetrahedra` contains the tetrahedron {q[order[dup[0]]].tolist()} twice")
    q = q[order]
    # face opposite node i has the sign (-1)^i: [b,c,d] - [a,c,d] + [a,b,d] - [a,b,c]
    faces = np.stack([q[:, [1, 2, 3]], q[:, [0, 2, 3]], q[:, [0, 1, 3]], q[:, [0, 1, 2]]], axis=1)
    fkeys = (faces[..., 0] * n + faces[..., 1]) * n + faces[..., 2]  # [N3, 4]
    tkeys = (t[:, 0] * n + t[:, 1]) * n + t[:, 2]  # sorted (t is in lexicographic order)
    n2 = t.shape[0]
    pos = np.minimum(np.searchsorted(tkeys, fkeys), max(n2 - 1, 0))
    found = (tkeys[pos] == fkeys) if n2 else np.zeros_like(fkeys, dtype=bool)
    if not found.all():
        r, f = np.argwhere(~found)[0]
        raise ValueError(
            f"tetrahedron {q[r].tolist()} has the face {faces[r, f].tolist()}, which is not in "
            "`triangles`"
        )
    n3 = q.shape[0]
    B3 = sp.csr_matrix(
        (np.tile([1.0, -1.0, 1.0, -1.0], n3), (pos.ravel(), np.repeat(np.arange(n3), 4))),
        shape=(n2, n3),
    )
    B3.sort_indices()
    return B3


# ---------------------------------------------------------------------- from matrices
def incidence_from_matrices(
    B1: Any, B2: Any | None = None, B3: Any | None = None
) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix | None]:
    """``(B1, B2, B3)`` checked and converted to float64 CSR, columns in the given order
    and orientation.

    The arguments and errors are those of ``ComplexOperators.from_incidence``;
    ``B3`` is ``None`` where none is given.
    """
    b1, nodes, vals = _check_b1(B1)
    if B2 is None:
        b2 = sp.csr_matrix((b1.shape[1], 0))
    else:
        b2 = _check_b2(B2, b1, nodes, vals)
    b1.sort_indices()
    b2.sort_indices()
    b1, b2 = sp.csr_matrix(b1), sp.csr_matrix(b2)
    if B3 is None:
        return b1, b2, None
    _, triangles, _ = oriented_simplices(b1, b2)
    if triangles is None:
        raise ValueError(
            "`B3` is given but `B2` has 2-cells of more than three edges: tetrahedra "
            "(3-cells) are supported on simplicial complexes only"
        )
    return b1, b2, _check_b3(B3, b2, triangles)


def _check_b1(B1: Any) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Validate ``B1 [N0, N1]``; return it signed (CSR), the two nodes ``[N1, 2]`` of each
    edge and their entries ``[N1, 2]`` (in row order)."""
    b1 = _to_scipy(B1, "B1")
    n0, n1 = b1.shape
    csc = b1.tocsc()
    counts = np.diff(csc.indptr)
    bad = np.flatnonzero(counts != 2)
    if bad.size:
        raise ValueError(
            f"`B1` column {bad[0]} has {counts[bad[0]]} non-zeros; every edge column needs "
            "exactly one -1 (tail) and one +1 (head)"
        )
    vals = csc.data.reshape(n1, 2) if n1 else np.zeros((0, 2))
    ok = (np.sort(vals, axis=1) == [-1.0, 1.0]).all(axis=1)
    if not ok.all():
        c = int(np.flatnonzero(~ok)[0])
        kind = "unsigned" if (vals[c] > 0).all() else "malformed"
        raise ValueError(
            f"`B1` column {c} is {kind}: entries {vals[c].tolist()}, expected one -1 and one "
            "+1 (signed incidence)"
        )
    nodes = csc.indices.reshape(n1, 2) if n1 else np.zeros((0, 2), dtype=np.int64)
    lo, hi = nodes.min(axis=1), nodes.max(axis=1)
    keys = lo.astype(np.int64) * n0 + hi
    sk = np.sort(keys)
    dup = np.flatnonzero(sk[1:] == sk[:-1])
    if dup.size:
        k = int(sk[dup[0]])
        raise ValueError(f"`B1` contains the edge ({k // n0}, {k % n0}) twice")
    return sp.csr_matrix(b1.sign()), nodes, vals


def _check_b2(B2: Any, b1: sp.csr_matrix, nodes: np.ndarray, vals: np.ndarray) -> sp.csr_matrix:
    """Validate ``B2 [N1, N2]`` against the signed ``b1`` with the edges' ``nodes`` and
    entries ``vals`` of :func:`_check_b1`; return it signed (CSR).

    Every column is the oriented boundary of one 2-cell: at least three entries +-1 on the
    edges of one simple closed cycle (a triangle, a square, any polygon), with
    ``B1 @ B2 = 0``."""
    n1 = b1.shape[1]
    b2 = _to_scipy(B2, "B2")
    if b2.shape[0] != n1:
        raise ValueError(
            f"shape mismatch: `B1` has {n1} columns (edges) but `B2` has {b2.shape[0]} rows"
        )
    c2 = b2.tocsc()
    c2.sort_indices()
    counts2 = np.diff(c2.indptr)
    bad = np.flatnonzero(counts2 < 3)
    if bad.size:
        raise ValueError(
            f"`B2` column {bad[0]} has {counts2[bad[0]]} non-zeros; the boundary of a 2-cell "
            "needs at least three edges (entries +-1 on a closed cycle)"
        )
    signed = np.isin(c2.data, (-1.0, 1.0))
    if not signed.all():
        c = int(np.searchsorted(c2.indptr, np.flatnonzero(~signed)[0], side="right") - 1)
        raise ValueError(
            f"`B2` column {c} has entries {c2.data[c2.indptr[c]:c2.indptr[c + 1]].tolist()}, "
            "expected entries +1 or -1 only (signed incidence)"
        )
    triangles_only = bool(c2.nnz) and bool((counts2 == 3).all())
    if triangles_only:
        tri_nodes = nodes[c2.indices.reshape(-1, 3)].reshape(-1, 6)
        srt = np.sort(tri_nodes, axis=1)
        closed = (srt[:, 0] == srt[:, 1]) & (srt[:, 2] == srt[:, 3]) & (
            srt[:, 4] == srt[:, 5]
        ) & (srt[:, 1] != srt[:, 2]) & (srt[:, 3] != srt[:, 4])
        if not closed.all():
            c = int(np.flatnonzero(~closed)[0])
            raise ValueError(
                f"`B2` column {c}: its three edges {c2.indices[3 * c:3 * c + 3].tolist()} "
                "do not form the boundary of a triangle (a face is missing)"
            )
    _check_repeated_cells(c2, counts2)
    b2 = sp.csr_matrix(b2.sign())
    prod = (b1 @ b2).tocsc()
    prod.eliminate_zeros()
    if prod.nnz:
        c = int(np.flatnonzero(np.diff(prod.indptr))[0])
        if counts2[c] == 3 and triangles_only:
            raise _open_boundary(c, c2, nodes, vals)
        rows = prod.indices[prod.indptr[c] : prod.indptr[c + 1]]
        raise ValueError(
            f"B1 @ B2 != 0 at column {c} of `B2`: its edges "
            f"{c2.indices[c2.indptr[c]:c2.indptr[c + 1]].tolist()} with signs "
            f"{c2.data[c2.indptr[c]:c2.indptr[c + 1]].astype(int).tolist()} do not form a "
            f"closed oriented cycle under the edge orientations of `B1` (node(s) "
            f"{rows[:4].tolist()} do not balance: each node of a 2-cell's boundary needs one "
            "edge in and one edge out)"
        )
    if not triangles_only and c2.nnz:
        _check_simple_cycles(c2, counts2, nodes)
    return b2


def _check_repeated_cells(c2: sp.csc_matrix, counts: np.ndarray) -> None:
    """Raise for two columns of ``B2`` (CSC, sorted indices) on the same set of edges."""
    if c2.shape[1] < 2:
        return
    # hash every column's sorted edge set; compare the candidates exactly
    if not c2.nnz:
        return
    rng = np.random.default_rng(0)
    weights = rng.integers(1, 2**40, size=c2.shape[0], dtype=np.int64)
    key = np.add.reduceat(weights[c2.indices], c2.indptr[:-1])  # sum of the edges' weights
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    for s in same:
        i, j = sorted((int(order[s]), int(order[s + 1])))
        ei = c2.indices[c2.indptr[i] : c2.indptr[i + 1]]
        ej = c2.indices[c2.indptr[j] : c2.indptr[j + 1]]
        if np.array_equal(ei, ej):
            what = "triangle" if ei.size == 3 else "2-cell"
            raise ValueError(
                f"`B2` columns {i} and {j} are the same {what} (edges {ei.tolist()}): a "
                f"{what} listed twice"
            )


def _check_simple_cycles(c2: sp.csc_matrix, counts: np.ndarray, nodes: np.ndarray) -> None:
    """Raise unless every column of ``B2`` (closed: ``B1 B2 = 0`` holds) is one simple cycle:
    every node on it has two of its edges, and its edges are connected."""
    n2 = c2.shape[1]
    col = np.repeat(np.arange(n2), counts)  # column of every entry
    ends = nodes[c2.indices]  # [nnz, 2]
    # vertices of the union of all columns' cycles: (column, node) pairs
    pairs = np.concatenate([col, col])  # columns of both ends
    nd = np.concatenate([ends[:, 0], ends[:, 1]])
    key = pairs.astype(np.int64) * (int(nodes.max(initial=0)) + 1) + nd
    uniq, inv, deg = np.unique(key, return_inverse=True, return_counts=True)
    bad = np.flatnonzero(deg != 2)
    if bad.size:
        c = int(uniq[bad[0]] // (int(nodes.max(initial=0)) + 1))
        n = int(uniq[bad[0]] % (int(nodes.max(initial=0)) + 1))
        raise ValueError(
            f"`B2` column {c} is not a simple cycle: node {n} lies on "
            f"{int(deg[bad[0]])} of its edges (the boundary of a 2-cell passes every node once)"
        )
    m = uniq.size
    nnz = ends.shape[0]
    graph = sp.csr_matrix((np.ones(nnz), (inv[:nnz], inv[nnz:])), shape=(m, m))
    num, labels = csgraph.connected_components(graph, directed=False)
    if num != n2:
        vcol = uniq // (int(nodes.max(initial=0)) + 1)
        per_col = np.zeros(n2, dtype=np.int64)
        first = np.unique(np.stack([vcol, labels], axis=1), axis=0)
        np.add.at(per_col, first[:, 0], 1)
        c = int(np.flatnonzero(per_col > 1)[0])
        raise ValueError(
            f"`B2` column {c} is not a simple cycle: its edges "
            f"{c2.indices[c2.indptr[c]:c2.indptr[c + 1]].tolist()} form {int(per_col[c])} "
            "separate cycles (a 2-cell has one boundary cycle)"
        )


def _open_boundary(
    c: int, c2: sp.csc_matrix, nodes: np.ndarray, vals: np.ndarray
) -> ValueError:
    """The error for column ``c`` of ``B2`` (CSC ``c2``) whose signs do not give
    ``B1 @ B2 = 0``: its signs, the expected ones and the triangle."""
    cols = c2.indices[3 * c : 3 * c + 3]
    given = c2.data[3 * c : 3 * c + 3]
    a, b, d = np.unique(nodes[cols])
    cycle = {(a, b), (b, d), (d, a)}  # the boundary a -> b -> d -> a
    tail = np.where(vals[cols, 0] < 0, nodes[cols, 0], nodes[cols, 1])
    head = np.where(vals[cols, 0] < 0, nodes[cols, 1], nodes[cols, 0])
    expected = [
        1 if (int(t), int(h)) in cycle else -1 for t, h in zip(tail, head, strict=True)
    ]
    kind = "unsigned (all +1)" if (given > 0).all() else "inconsistently signed"
    return ValueError(
        f"B1 @ B2 != 0 at column {c} of `B2`: its edges {cols.tolist()} have signs "
        f"{given.astype(int).tolist()}, expected {expected} or "
        f"{[-v for v in expected]} (the boundary of triangle {[int(a), int(b), int(d)]}"
        f" under the edge orientations of `B1`); the column is {kind}"
    )


def _check_b3(B3: Any, B2: sp.csr_matrix, triangles: np.ndarray) -> sp.csr_matrix:
    """Validate a given ``B3 [N2, N3]`` against ``B2`` and its ``triangles [N2, 3]``;
    return it signed (CSR)."""
    b3 = _to_scipy(B3, "B3")
    n2 = B2.shape[1]
    if b3.shape[0] != n2:
        raise ValueError(
            f"shape mismatch: `B2` has {n2} columns (triangles) but `B3` has {b3.shape[0]} rows"
            + ("; `B3` needs `B2`" if n2 == 0 else "")
        )
    c3 = b3.tocsc()
    c3.sort_indices()
    counts = np.diff(c3.indptr)
    bad = np.flatnonzero(counts != 4)
    if bad.size:
        raise ValueError(
            f"`B3` column {bad[0]} has {counts[bad[0]]} non-zeros; every tetrahedron column "
            "needs exactly four entries +-1"
        )
    if not np.isin(c3.data, (-1.0, 1.0)).all():
        c = int(np.flatnonzero(~np.isin(c3.data, (-1.0, 1.0)).reshape(-1, 4).all(axis=1))[0])
        raise ValueError(
            f"`B3` column {c} has entries {c3.data[4 * c:4 * c + 4].tolist()}, expected four "
            "entries +1 or -1 (signed incidence)"
        )
    faces = c3.indices.reshape(-1, 4)  # [N3, 4] triangle ids
    nodes = np.sort(triangles[faces].reshape(-1, 12), axis=1)  # [N3, 12]
    closed = (nodes[:, 0::3] == nodes[:, 1::3]).all(axis=1) & (
        nodes[:, 1::3] == nodes[:, 2::3]
    ).all(axis=1) & (np.diff(nodes[:, 0::3], axis=1) > 0).all(axis=1)
    if not closed.all():
        c = int(np.flatnonzero(~closed)[0])
        raise ValueError(
            f"`B3` column {c}: its four triangles {faces[c].tolist()} are not the four faces of "
            "one tetrahedron"
        )
    prod = (B2 @ b3).tocsc()
    prod.eliminate_zeros()
    if prod.nnz:
        c = int(np.flatnonzero(np.diff(prod.indptr))[0])
        raise ValueError(
            f"B2 @ B3 != 0 at column {c} of `B3`: its faces {faces[c].tolist()} have signs "
            f"{c3.data[4 * c:4 * c + 4].astype(int).tolist()}, which do not form the boundary of "
            f"tetrahedron {nodes[c, 0::3].tolist()} under the triangle orientations of `B2`"
        )
    out = sp.csr_matrix(b3.sign())
    out.sort_indices()
    return out


# ---------------------------------------------------------------------- orientation
def face_cycles(edges: np.ndarray, B2: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """The boundary cycles of the 2-cells of a validated ``B2``, as node sequences.

    Cell ``f`` is the cycle ``face_nodes[face_ptr[f]:face_ptr[f + 1]]``: its nodes in the
    order its boundary runs (``B2[e, f] = +1`` where edge ``e`` is traversed tail -> head),
    starting at its smallest node id. A triangle ``a < b < c`` oriented ``a -> b -> c`` is
    ``[a, b, c]``.

    Returns:
        ``(face_nodes int64 [sum of lengths], face_ptr int64 [N2 + 1])``.
    """
    c2 = B2.tocsc()
    c2.sort_indices()
    n2 = c2.shape[1]
    counts = np.diff(c2.indptr).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    if not c2.nnz:
        return np.zeros(0, dtype=np.int64), ptr
    col = np.repeat(np.arange(n2, dtype=np.int64), counts)
    forward = c2.data > 0
    e = edges[c2.indices]  # [nnz, 2] tail, head
    start = np.where(forward, e[:, 0], e[:, 1])  # the boundary runs start -> stop
    stop = np.where(forward, e[:, 1], e[:, 0])
    big = np.int64(max(int(edges.max(initial=0)) + 1, 1))
    keys = col * big + start
    order = np.argsort(keys, kind="stable")
    skeys, nxt = keys[order], stop[order]
    first = np.full(n2, np.iinfo(np.int64).max)
    np.minimum.at(first, col, start)  # every cell starts at its smallest node
    out = np.empty(int(ptr[-1]), dtype=np.int64)
    cur = first.copy()
    for step in range(int(counts.max())):
        alive = np.flatnonzero(counts > step)
        out[ptr[alive] + step] = cur[alive]
        pos = np.searchsorted(skeys, alive * big + cur[alive])
        cur[alive] = nxt[pos]
    return out, ptr


def oriented_simplices(
    B1: sp.csr_matrix, B2: sp.csr_matrix, B3: sp.csr_matrix | None = None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Node ids of the simplices of validated signed incidence matrices, in column order.

    Returns:
        ``(edges, triangles, tetrahedra)``: ``int64 [N1, 2]`` (tail, head) of every edge
        (``B1[tail, e] = -1``, ``B1[head, e] = +1``), ``int64 [N2, 3]`` sorted node ids of
        every triangle (``None`` when a 2-cell has more than three edges: a cell complex,
        see :func:`face_cycles`) and ``int64 [N3, 4]`` of every tetrahedron (``[0, 4]``
        where ``B3`` is ``None``).
    """
    num_edges = B1.shape[1]
    num_triangles = B2.shape[1]
    num_tetrahedra = 0 if B3 is None else B3.shape[1]
    coo = B1.tocoo()
    tails = np.empty(num_edges, dtype=np.int64)
    heads = np.empty(num_edges, dtype=np.int64)
    tails[coo.col[coo.data < 0]] = coo.row[coo.data < 0]
    heads[coo.col[coo.data > 0]] = coo.row[coo.data > 0]
    edges = np.stack([tails, heads], axis=1)
    b2 = B2.tocsc()
    if num_triangles and bool((np.diff(b2.indptr) != 3).any()):
        triangles = None  # polygon 2-cells: a cell complex
    elif num_triangles:
        b2.sort_indices()
        tri_edges = b2.indices.reshape(num_triangles, 3)
        nodes = edges[tri_edges].reshape(num_triangles, 6)
        triangles = np.sort(nodes, axis=1)[:, ::2].copy()
    else:
        triangles = np.zeros((0, 3), dtype=np.int64)
    if num_tetrahedra and triangles is not None:
        b3 = B3.tocsc()
        faces = triangles[b3.indices.reshape(num_tetrahedra, 4)]  # [N3, 4, 3]
        tetrahedra = np.sort(faces.reshape(num_tetrahedra, 12), axis=1)[
            :, [0, 3, 6, 9]
        ].copy()  # every node of a tetrahedron lies on three of its four faces
    else:
        tetrahedra = np.zeros((0, 4), dtype=np.int64)
    return edges, triangles, tetrahedra
