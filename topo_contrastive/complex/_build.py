"""Construction of a complex: validated signed incidence matrices from the user's input, with
the errors that the constructors of :class:`~topo_contrastive.complex.ComplexOperators`
document; and the node ids of the simplices read back from the matrices."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import torch

_NAMES = {2: ("edges", "edge"), 3: ("triangles", "triangle"), 4: ("tetrahedra", "tetrahedron")}


# ---------------------------------------------------------------------- input conversion
def _numpy(obj: Any) -> Any:
    """A tensor as a numpy array; anything else as it is."""
    return obj.detach().cpu().numpy() if isinstance(obj, torch.Tensor) else obj


def _integral(arr: np.ndarray, what: str, got: str = "") -> np.ndarray:
    """``arr`` as int64 (floats where integral), else a ``TypeError`` naming ``what``."""
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating) and np.all(np.mod(arr, 1) == 0)):
            raise TypeError(f"{what} must hold integer node ids, got {got}{arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _as_index_array(obj: Any, width: int, name: str) -> np.ndarray:
    """A list/array/tensor of simplices as ``int64 [n, width]``."""
    arr = np.asarray(_numpy(obj))
    if arr.size == 0:
        return np.zeros((0, width), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(
            f"`{name}` must have shape [n, {width}] (one row of {width} node ids per simplex), "
            f"got shape {tuple(arr.shape)}"
        )
    return _integral(arr, f"`{name}`", "dtype ")


def _to_scipy(mat: Any, name: str) -> sp.csr_matrix:
    """A scipy/torch (sparse or dense)/numpy matrix as a finite float64 CSR matrix."""
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
        out = sp.csr_matrix(mat, dtype=np.float64) if sp.issparse(mat) else None
        arr = None if sp.issparse(mat) else np.asarray(mat, dtype=np.float64)
    except (TypeError, ValueError) as err:  # strings, objects, complex numbers
        raise TypeError(
            f"`{name}` must be a real matrix (scipy sparse, torch or numpy), got "
            f"{type(mat).__name__}" + (f" of dtype {mat.dtype}" if hasattr(mat, "dtype") else "")
            + f" ({err})"
        ) from None
    if arr is not None:
        if arr.ndim != 2:
            raise ValueError(f"`{name}` must be a 2-D matrix, got {arr.ndim} dimensions")
        out = sp.csr_matrix(arr)
    if not np.isfinite(out.data).all():
        raise ValueError(f"`{name}` contains NaN or inf entries")
    out.eliminate_zeros()
    out.sort_indices()
    return out


def _find(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, found)`` of ``keys`` in ``sorted_keys``."""
    n = sorted_keys.shape[0]
    pos = np.minimum(np.searchsorted(sorted_keys, keys), max(n - 1, 0))
    return pos, (sorted_keys[pos] == keys) if n else np.zeros(keys.shape, dtype=bool)


def _keys(rows: np.ndarray, num_nodes: Any) -> np.ndarray:
    """One int64 key per row of node ids (lexicographic order)."""
    key = rows[..., 0]
    for j in range(1, rows.shape[-1]):
        key = key * num_nodes + rows[..., j]
    return key


# ---------------------------------------------------------------------- from simplex lists
def incidence_from_simplices(
    edges: Any, triangles: Any | None = None, num_nodes: int | None = None,
    tetrahedra: Any | None = None,
) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix | None]:  # fmt: skip
    """``(B1, B2, B3)`` of simplex lists, sorted and oriented low -> high (``B3`` ``None``
    without tetrahedra)."""
    e = _as_index_array(edges, 2, "edges")
    t = _as_index_array([] if triangles is None else triangles, 3, "triangles")
    q = _as_index_array([] if tetrahedra is None else tetrahedra, 4, "tetrahedra")
    num_nodes = _check_node_ids(e, t, q, num_nodes)
    B1, edge_keys = _edge_incidence(e, num_nodes)
    B2, t = _boundary(t, edge_keys, num_nodes)
    B1.sort_indices()
    B2.sort_indices()
    if not q.size:
        return B1, B2, None
    B3, _ = _boundary(q, _keys(t, np.int64(num_nodes)), np.int64(num_nodes))
    B3.sort_indices()
    return B1, B2, B3


def incidence_from_cells(
    edges: Any, cells: Any | None = None, num_nodes: int | None = None
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(B1, B2)`` of an edge list (sorted, oriented low -> high) and 2-cells given as node
    cycles (in the given order, each oriented along its cycle)."""
    e = _as_index_array(edges, 2, "edges")
    cycles = _as_cycles(cells)
    flat = np.concatenate(cycles) if cycles else np.zeros(0, dtype=np.int64)
    num_nodes = _check_node_ids(e, flat[:, None], np.zeros((0, 4)), num_nodes)
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
    pos, found = _find(edge_keys, np.minimum(u, v) * num_nodes + np.maximum(u, v))
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        c = int(np.searchsorted(ptr, i, side="right") - 1)
        raise ValueError(
            f"`cells` entry {c} {cycles[c].tolist()} steps from node {int(u[i])} to node "
            f"{int(v[i])}, which is not an edge in `edges`"
        )
    col = np.repeat(np.arange(len(cycles)), lengths)
    return B1, sp.csr_matrix((np.where(u < v, 1.0, -1.0), (pos, col)), shape=(n1, len(cycles)))


def _as_cycles(cells: Any) -> list[np.ndarray]:
    """2-cells given as node cycles, as ``int64`` arrays of at least three distinct nodes."""
    if cells is None:
        return []
    cells = _numpy(cells)
    if isinstance(cells, np.ndarray) and cells.ndim == 2:
        cells = list(cells)
    if isinstance(cells, (str, bytes)) or not hasattr(cells, "__len__"):
        raise TypeError(
            "`cells` must be a sequence of node cycles (one sequence of node ids per 2-cell), "
            f"got {type(cells).__name__}"
        )
    out = []
    for i, cell in enumerate(cells):
        arr = np.asarray(_numpy(cell))
        if arr.ndim != 1:
            raise ValueError(
                f"`cells` entry {i} must be a sequence of node ids, got shape {arr.shape}"
            )
        arr = _integral(arr, f"`cells` entry {i}")
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
    """Check the node ids of edges, triangles (or 2-cells) and tetrahedra; ``num_nodes``
    (default ``max id + 1``) as an int."""
    if q.size and (q.min() < 0 or num_nodes is not None and q.max() >= num_nodes):
        raise ValueError(
            f"tetrahedron node ids must lie in [0, num_nodes={num_nodes}), got ids in "
            f"[{int(q.min())}, {int(q.max())}]"
        )
    max_id = max(int(e.max(initial=-1)), int(t.max(initial=-1)), int(q.max(initial=-1)))
    if num_nodes is None:
        num_nodes = max_id + 1
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) or (
        num_nodes < 0
    ):
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


def _sorted_unique(s: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The simplices ``s`` and their ``keys`` sorted by key; a ``ValueError`` for a repeat."""
    order = np.argsort(keys, kind="stable")
    skeys = keys[order]
    dup = np.flatnonzero(skeys[1:] == skeys[:-1])
    if dup.size:
        name, one = _NAMES[s.shape[1]]
        raise ValueError(f"`{name}` contains the {one} {s[order[dup[0]]].tolist()} twice")
    return s[order], skeys


def _edge_incidence(e: np.ndarray, num_nodes: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``B1 [N0, N1]`` of the edges ``e [N1, 2]`` (sorted) and their sorted keys."""
    loops = np.flatnonzero(e[:, 0] == e[:, 1])
    if loops.size:
        raise ValueError(f"`edges` row {loops[0]} is a self-loop {e[loops[0]].tolist()}")
    e = np.sort(e, axis=1)
    e, keys = _sorted_unique(e, _keys(e, num_nodes))
    n1 = e.shape[0]
    cols = np.repeat(np.arange(n1), 2)
    B1 = sp.csr_matrix((np.tile([-1.0, 1.0], n1), (e.ravel(), cols)), shape=(num_nodes, n1))
    return B1, keys


def _boundary(
    s: np.ndarray, face_keys: np.ndarray, num_nodes: Any
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``B [N_{k-1}, N_k]`` of the simplices ``s [N_k, k + 1]`` (sorted) over the faces of
    sorted keys ``face_keys`` (the face without node ``i`` has the sign ``(-1)^i``), and the
    sorted simplices."""
    k1 = s.shape[1]
    n_faces = face_keys.shape[0]
    if not s.size:
        return sp.csr_matrix((n_faces, 0)), s
    name, one = _NAMES[k1]
    s = np.sort(s, axis=1)
    bad = np.flatnonzero((s[:, :-1] == s[:, 1:]).any(axis=1))
    if bad.size:
        raise ValueError(f"`{name}` row {bad[0]} repeats a node: {s[bad[0]].tolist()}")
    s, _ = _sorted_unique(s, _keys(s, num_nodes))
    faces = np.stack([np.delete(s, i, axis=1) for i in range(k1)], axis=1)  # [N_k, k+1, k]
    pos, found = _find(face_keys, _keys(faces, num_nodes))
    if not found.all():
        r, f = np.argwhere(~found)[0]
        raise ValueError(
            f"{one} {s[r].tolist()} has the face {faces[r, f].tolist()}, which is not in "
            f"`{_NAMES[k1 - 1][0]}`"
        )
    signs = np.tile((-1.0) ** np.arange(k1), s.shape[0])
    cols = np.repeat(np.arange(s.shape[0]), k1)
    return sp.csr_matrix((signs, (pos.ravel(), cols)), shape=(n_faces, s.shape[0])), s


# ---------------------------------------------------------------------- from matrices
def incidence_from_matrices(
    B1: Any, B2: Any | None = None, B3: Any | None = None
) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix | None]:
    """``(B1, B2, B3)`` checked and converted to float64 CSR, columns in the given order and
    orientation (``B3`` ``None`` where none is given)."""
    b1, nodes, vals = _check_b1(B1)
    b2 = sp.csr_matrix((b1.shape[1], 0)) if B2 is None else _check_b2(B2, b1, nodes, vals)
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
    """``B1`` signed (CSR), the two nodes ``[N1, 2]`` of each edge and their entries."""
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
    sk = np.sort(nodes.min(axis=1).astype(np.int64) * n0 + nodes.max(axis=1))
    dup = np.flatnonzero(sk[1:] == sk[:-1])
    if dup.size:
        k = int(sk[dup[0]])
        raise ValueError(f"`B1` contains the edge ({k // n0}, {k % n0}) twice")
    return sp.csr_matrix(b1.sign()), nodes, vals


def _check_b2(B2: Any, b1: sp.csr_matrix, nodes: np.ndarray, vals: np.ndarray) -> sp.csr_matrix:
    """``B2`` signed (CSR): every column the oriented boundary of one 2-cell, at least three
    entries +-1 on one simple closed cycle, with ``B1 @ B2 = 0``."""
    n1 = b1.shape[1]
    b2 = _to_scipy(B2, "B2")
    if b2.shape[0] != n1:
        raise ValueError(
            f"shape mismatch: `B1` has {n1} columns (edges) but `B2` has {b2.shape[0]} rows"
        )
    c2 = b2.tocsc()
    c2.sort_indices()
    counts2 = np.diff(c2.indptr)
    _check_entries(c2, "B2", counts2 < 3, "the boundary of a 2-cell needs at least three "
                   "edges (entries +-1 on a closed cycle)", "entries +1 or -1 only")  # fmt: skip
    triangles_only = bool(c2.nnz) and bool((counts2 == 3).all())
    if triangles_only:
        srt = np.sort(nodes[c2.indices.reshape(-1, 3)].reshape(-1, 6), axis=1)
        closed = (srt[:, 0::2] == srt[:, 1::2]).all(axis=1) & (np.diff(srt[:, 1::2]) > 0).all(1)
        if not closed.all():
            c = int(np.flatnonzero(~closed)[0])
            raise ValueError(
                f"`B2` column {c}: its three edges {c2.indices[3 * c:3 * c + 3].tolist()} "
                "do not form the boundary of a triangle (a face is missing)"
            )
    _check_repeated_cells(c2)
    b2 = sp.csr_matrix(b2.sign())
    prod = (b1 @ b2).tocsc()
    prod.eliminate_zeros()
    if prod.nnz:
        c = int(np.flatnonzero(np.diff(prod.indptr))[0])
        if triangles_only:
            raise _open_boundary(c, c2, nodes, vals)
        edges = c2.indices[c2.indptr[c] : c2.indptr[c + 1]].tolist()
        raise ValueError(
            f"B1 @ B2 != 0 at column {c} of `B2`: its edges {edges} with signs "
            f"{c2.data[c2.indptr[c]:c2.indptr[c + 1]].astype(int).tolist()} do not form a "
            f"closed oriented cycle under the edge orientations of `B1` (node(s) "
            f"{prod.indices[prod.indptr[c] : prod.indptr[c + 1]][:4].tolist()} do not balance: "
            "each node of a 2-cell's boundary needs one edge in and one edge out)"
        )
    if not triangles_only and c2.nnz:
        _check_simple_cycles(c2, counts2, nodes)
    return b2


def _check_entries(c: sp.csc_matrix, name: str, short: Any, need: str, expected: str) -> None:
    """A ``ValueError`` for a column of ``c`` flagged ``short`` or with an entry other than +-1."""
    counts = np.diff(c.indptr)
    bad = np.flatnonzero(short)
    if bad.size:
        raise ValueError(f"`{name}` column {bad[0]} has {counts[bad[0]]} non-zeros; {need}")
    signed = np.isin(c.data, (-1.0, 1.0))
    if not signed.all():
        k = int(np.searchsorted(c.indptr, np.flatnonzero(~signed)[0], side="right") - 1)
        raise ValueError(
            f"`{name}` column {k} has entries {c.data[c.indptr[k]:c.indptr[k + 1]].tolist()}, "
            f"expected {expected} (signed incidence)"
        )


def _check_repeated_cells(c2: sp.csc_matrix) -> None:
    """Raise for two columns of ``B2`` (CSC, sorted indices) on the same set of edges."""
    if c2.shape[1] < 2 or not c2.nnz:
        return
    # hash every column's sorted edge set; compare the candidates exactly
    weights = np.random.default_rng(0).integers(1, 2**40, size=c2.shape[0], dtype=np.int64)
    key = np.add.reduceat(weights[c2.indices], c2.indptr[:-1])  # sum of the edges' weights
    order = np.argsort(key, kind="stable")
    for s in np.flatnonzero(key[order][1:] == key[order][:-1]):
        i, j = sorted((int(order[s]), int(order[s + 1])))
        ei = c2.indices[c2.indptr[i] : c2.indptr[i + 1]]
        if np.array_equal(ei, c2.indices[c2.indptr[j] : c2.indptr[j + 1]]):
            what = "triangle" if ei.size == 3 else "2-cell"
            raise ValueError(
                f"`B2` columns {i} and {j} are the same {what} (edges {ei.tolist()}): a "
                f"{what} listed twice"
            )


def _check_simple_cycles(c2: sp.csc_matrix, counts: np.ndarray, nodes: np.ndarray) -> None:
    """Raise unless every (closed) column of ``B2`` is one simple cycle: every node on it has
    two of its edges, and its edges are connected."""
    n2, big = c2.shape[1], int(nodes.max(initial=0)) + 1
    col = np.repeat(np.arange(n2), counts)  # column of every entry
    ends = nodes[c2.indices]  # [nnz, 2]
    # vertices of the union of all columns' cycles: (column, node) pairs
    key = np.concatenate([col, col]).astype(np.int64) * big + np.concatenate(ends.T)
    uniq, inv, deg = np.unique(key, return_inverse=True, return_counts=True)
    bad = np.flatnonzero(deg != 2)
    if bad.size:
        raise ValueError(
            f"`B2` column {int(uniq[bad[0]] // big)} is not a simple cycle: node "
            f"{int(uniq[bad[0]] % big)} lies on {int(deg[bad[0]])} of its edges (the boundary "
            "of a 2-cell passes every node once)"
        )
    m, nnz = uniq.size, ends.shape[0]
    graph = sp.csr_matrix((np.ones(nnz), (inv[:nnz], inv[nnz:])), shape=(m, m))
    num, labels = csgraph.connected_components(graph, directed=False)
    if num != n2:
        per_col = np.zeros(n2, dtype=np.int64)
        first = np.unique(np.stack([uniq // big, labels], axis=1), axis=0)
        np.add.at(per_col, first[:, 0], 1)
        c = int(np.flatnonzero(per_col > 1)[0])
        raise ValueError(
            f"`B2` column {c} is not a simple cycle: its edges "
            f"{c2.indices[c2.indptr[c]:c2.indptr[c + 1]].tolist()} form {int(per_col[c])} "
            "separate cycles (a 2-cell has one boundary cycle)"
        )


def _open_boundary(c: int, c2: sp.csc_matrix, nodes: np.ndarray, vals: np.ndarray) -> ValueError:
    """The error for the triangle column ``c`` of ``B2`` whose signs break ``B1 @ B2 = 0``."""
    cols = c2.indices[3 * c : 3 * c + 3]
    given = c2.data[3 * c : 3 * c + 3]
    a, b, d = np.unique(nodes[cols])
    cycle = {(a, b), (b, d), (d, a)}  # the boundary a -> b -> d -> a
    tail = np.where(vals[cols, 0] < 0, nodes[cols, 0], nodes[cols, 1])
    head = np.where(vals[cols, 0] < 0, nodes[cols, 1], nodes[cols, 0])
    expected = [1 if (int(t), int(h)) in cycle else -1 for t, h in zip(tail, head, strict=True)]
    kind = "unsigned (all +1)" if (given > 0).all() else "inconsistently signed"
    return ValueError(
        f"B1 @ B2 != 0 at column {c} of `B2`: its edges {cols.tolist()} have signs "
        f"{given.astype(int).tolist()}, expected {expected} or "
        f"{[-v for v in expected]} (the boundary of triangle {[int(a), int(b), int(d)]}"
        f" under the edge orientations of `B1`); the column is {kind}"
    )


def _check_b3(B3: Any, B2: sp.csr_matrix, triangles: np.ndarray) -> sp.csr_matrix:
    """``B3`` signed (CSR), checked against ``B2`` and its ``triangles [N2, 3]``."""
    b3 = _to_scipy(B3, "B3")
    n2 = B2.shape[1]
    if b3.shape[0] != n2:
        raise ValueError(
            f"shape mismatch: `B2` has {n2} columns (triangles) but `B3` has {b3.shape[0]} rows"
            + ("; `B3` needs `B2`" if n2 == 0 else "")
        )
    c3 = b3.tocsc()
    c3.sort_indices()
    _check_entries(c3, "B3", np.diff(c3.indptr) != 4, "every tetrahedron column needs "
                   "exactly four entries +-1", "four entries +1 or -1")  # fmt: skip
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
    """``(face_nodes, face_ptr)``: the boundary cycle of every 2-cell of a validated ``B2`` as
    nodes in the order it runs, from its smallest node (``a -> b -> c`` is ``[a, b, c]``)."""
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
    """``(edges [N1, 2] (tail, head), triangles [N2, 3], tetrahedra [N3, 4])`` of validated
    incidence matrices, in column order (``triangles`` ``None`` with polygon 2-cells)."""
    coo = B1.tocoo()
    edges = np.empty((B1.shape[1], 2), dtype=np.int64)
    edges[coo.col[coo.data < 0], 0] = coo.row[coo.data < 0]
    edges[coo.col[coo.data > 0], 1] = coo.row[coo.data > 0]
    n2, n3 = B2.shape[1], 0 if B3 is None else B3.shape[1]
    b2 = B2.tocsc()
    triangles: np.ndarray | None = np.zeros((0, 3), dtype=np.int64)
    if n2 and bool((np.diff(b2.indptr) != 3).any()):
        triangles = None  # polygon 2-cells: a cell complex
    elif n2:
        b2.sort_indices()
        triangles = np.sort(edges[b2.indices.reshape(n2, 3)].reshape(n2, 6), axis=1)[:, ::2].copy()
    tetrahedra = np.zeros((0, 4), dtype=np.int64)
    if n3 and triangles is not None:
        faces = triangles[B3.tocsc().indices.reshape(n3, 4)]  # [N3, 4, 3]
        # every node of a tetrahedron lies on three of its four faces
        tetrahedra = np.sort(faces.reshape(n3, 12), axis=1)[:, [0, 3, 6, 9]].copy()
    return edges, triangles, tetrahedra
