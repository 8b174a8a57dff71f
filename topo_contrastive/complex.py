"""Signed operators of a simplicial complex of order two or three.

The class :class:`SimplicialOperators` holds the signed incidence matrices
:math:`\\mathbf{B}_1` (nodes x edges), :math:`\\mathbf{B}_2` (edges x triangles) and,
where the complex has tetrahedra, :math:`\\mathbf{B}_3` (triangles x tetrahedra), and
derives the Hodge Laplacians of the paper's eq. (2):

.. math::
    \\mathbf{L}_0 = \\mathbf{B}_1 \\mathbf{B}_1^\\top, \\quad
    \\mathbf{L}_1 = \\underbrace{\\mathbf{B}_1^\\top \\mathbf{B}_1}_{\\mathbf{L}_{\\downarrow}}
    + \\underbrace{\\mathbf{B}_2 \\mathbf{B}_2^\\top}_{\\mathbf{L}_{\\uparrow}}, \\quad
    \\mathbf{L}_2 = \\mathbf{B}_2^\\top \\mathbf{B}_2 + \\mathbf{B}_3 \\mathbf{B}_3^\\top, \\quad
    \\mathbf{L}_3 = \\mathbf{B}_3^\\top \\mathbf{B}_3,

and in general :math:`\\mathbf{L}_k = \\mathbf{L}_{k,\\downarrow} + \\mathbf{L}_{k,\\uparrow}`
with :math:`\\mathbf{L}_{k,\\downarrow} = \\mathbf{B}_k^\\top \\mathbf{B}_k` and
:math:`\\mathbf{L}_{k,\\uparrow} = \\mathbf{B}_{k+1} \\mathbf{B}_{k+1}^\\top`
(:math:`\\mathbf{B}_0` and :math:`\\mathbf{B}_4` are empty). Without tetrahedra
:math:`\\mathbf{L}_2 = \\mathbf{B}_2^\\top \\mathbf{B}_2`.

Order and orientation (TopoNetX's convention for integer node labels): nodes are
``0 .. N0-1``; edges are sorted lexicographically by their node pair ``(u, v)``
with ``u < v`` and oriented ``u -> v`` (``B1[u, e] = -1``, ``B1[v, e] = +1``);
triangles ``(a, b, c)`` with ``a < b < c`` are sorted lexicographically and
oriented ``a -> b -> c``, so their boundary is ``[b,c] - [a,c] + [a,b]``;
tetrahedra ``(a, b, c, d)`` with ``a < b < c < d`` are sorted lexicographically with
boundary ``[b,c,d] - [a,c,d] + [a,b,d] - [a,b,c]`` (TopoNetX's ``incidence_matrix(3)``).
Complexes given by incidence matrices keep the columns in the order and with the
orientation of the matrices given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["SimplicialOperators"]

_OPERATORS = ("B1", "B2", "B3", "L0", "L_down", "L_up", "L1", "L2", "L3") + tuple(
    f"L{k}_{part}" for k in range(4) for part in ("down", "up")
)
#: Names of the simplices of each rank (for messages).
_SIMPLEX_NAMES = ("nodes", "edges", "triangles", "tetrahedra")
#: Highest rank of a simplex the class stores.
MAX_RANK = 3


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
    if sp.issparse(mat):
        out = sp.csr_matrix(mat, dtype=np.float64)
    else:
        arr = np.asarray(mat, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"`{name}` must be a 2-D matrix, got {arr.ndim} dimensions")
        out = sp.csr_matrix(arr)
    if not np.isfinite(out.data).all():
        raise ValueError(f"`{name}` contains NaN or inf entries")
    out.eliminate_zeros()
    out.sort_indices()
    return out


def _check_b3(B3: Any, ops: SimplicialOperators) -> sp.csr_matrix:
    """Validate a given ``B3 [N2, N3]`` against the triangles of ``ops``; return it (CSR)."""
    b3 = _to_scipy(B3, "B3")
    n2 = ops.num_triangles
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
    nodes = np.sort(ops.triangles[faces].reshape(-1, 12), axis=1)  # [N3, 12]
    closed = (nodes[:, 0::3] == nodes[:, 1::3]).all(axis=1) & (
        nodes[:, 1::3] == nodes[:, 2::3]
    ).all(axis=1) & (np.diff(nodes[:, 0::3], axis=1) > 0).all(axis=1)
    if not closed.all():
        c = int(np.flatnonzero(~closed)[0])
        raise ValueError(
            f"`B3` column {c}: its four triangles {faces[c].tolist()} are not the four faces of "
            "one tetrahedron"
        )
    prod = (ops.B2 @ b3).tocsc()
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


class SimplicialOperators:
    r"""Signed incidence matrices and Hodge Laplacians of a simplicial complex of order
    two or three (nodes, edges, triangles and optionally tetrahedra).

    Build it with one of the constructors :meth:`from_simplices`,
    :meth:`from_incidence` or :meth:`from_toponetx`. Operators are available as
    scipy CSR matrices (float64, attributes ``B1``, ``B2``, ``B3``, ``L0``, ``L_down``,
    ``L_up``, ``L1``, ``L2``, ``L3``; any rank with :meth:`incidence`,
    :meth:`down_laplacian`, :meth:`up_laplacian`, :meth:`hodge_laplacian`) and as torch
    sparse tensors on any device and dtype via :meth:`operator` (e.g.
    ``ops.operator("L_up", device="cuda")``) and :meth:`laplacians` (``rank=k`` gives
    :math:`(\mathbf{L}_{k,\downarrow}, \mathbf{L}_{k,\uparrow})` for signals on the
    simplices of rank :math:`k`: ``x_0`` on nodes, ``x_1`` on edges, ``x_2`` on
    triangles).

    .. math::
        \mathbf{L}_{\downarrow} = \mathbf{B}_1^\top \mathbf{B}_1, \qquad
        \mathbf{L}_{\uparrow} = \mathbf{B}_2 \mathbf{B}_2^\top, \qquad
        \mathbf{L}_1 = \mathbf{L}_{\downarrow} + \mathbf{L}_{\uparrow}

    Source: paper eq. (2); Schaub et al., "Signal processing on higher-order
    networks", Signal Processing 187, 2021.

    A complex without triangles is valid: ``B2`` has shape ``[N1, 0]`` and
    ``L_up`` is the zero matrix. A complex without tetrahedra (the usual case) has
    ``B3`` of shape ``[N2, 0]``.

    **Ranks.** The complex has the ranks ``0 .. dim`` (:attr:`dim`: the highest rank
    with at least one simplex). Asking for an operator or a signal of a rank the
    complex does not have raises a ``ValueError`` naming the rank and the sizes
    (:meth:`check_rank`).

    Attributes:
        num_nodes (int): :math:`N_0`.
        num_edges (int): :math:`N_1`.
        num_triangles (int): :math:`N_2`.
        edges (numpy.ndarray): ``int64 [N1, 2]``, tail and head node of every edge
            in column order (``B1[tail, e] = -1``, ``B1[head, e] = +1``).
        triangles (numpy.ndarray): ``int64 [N2, 3]`` node ids of each triangle.
        num_tetrahedra (int): :math:`N_3` (0 without tetrahedra).
        tetrahedra (numpy.ndarray): ``int64 [N3, 4]`` sorted node ids of each tetrahedron.

    Example:
        >>> ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> ops.B2.toarray().ravel().tolist()  # edges (0, 1), (0, 2), (1, 2)
        [1.0, -1.0, 1.0]
        >>> ops.path_to_flow([0, 1, 2]).tolist()
        [1.0, 0.0, 1.0]
    """

    def __init__(
        self,
        B1: sp.csr_matrix,
        B2: sp.csr_matrix,
        B3: sp.csr_matrix | None = None,
        *,
        _validated: bool = False,
    ):
        if not _validated:
            raise TypeError(
                "use SimplicialOperators.from_simplices / from_incidence / from_toponetx "
                "to build a complex"
            )
        self.B1 = B1
        self.B2 = B2
        self.num_nodes, self.num_edges = B1.shape
        self.num_triangles = B2.shape[1]
        self.B3 = sp.csr_matrix((self.num_triangles, 0)) if B3 is None else B3
        self.num_tetrahedra = self.B3.shape[1]
        coo = B1.tocoo()
        tails = np.empty(self.num_edges, dtype=np.int64)
        heads = np.empty(self.num_edges, dtype=np.int64)
        tails[coo.col[coo.data < 0]] = coo.row[coo.data < 0]
        heads[coo.col[coo.data > 0]] = coo.row[coo.data > 0]
        self.edges = np.stack([tails, heads], axis=1)
        if self.num_triangles:
            b2 = B2.tocsc()
            tri_edges = b2.indices.reshape(self.num_triangles, 3)
            nodes = self.edges[tri_edges].reshape(self.num_triangles, 6)
            self.triangles = np.sort(nodes, axis=1)[:, ::2].copy()
        else:
            self.triangles = np.zeros((0, 3), dtype=np.int64)
        if self.num_tetrahedra:
            b3 = self.B3.tocsc()
            faces = self.triangles[b3.indices.reshape(self.num_tetrahedra, 4)]  # [N3, 4, 3]
            self.tetrahedra = np.sort(faces.reshape(self.num_tetrahedra, 12), axis=1)[
                :, [0, 3, 6, 9]
            ].copy()  # every node of a tetrahedron lies on three of its four faces
        else:
            self.tetrahedra = np.zeros((0, 4), dtype=np.int64)
        # Lookup table for (u, v) -> column: keys u * N0 + v of sorted pairs.
        lo = np.minimum(tails, heads)
        hi = np.maximum(tails, heads)
        keys = lo * self.num_nodes + hi
        self._key_order = np.argsort(keys, kind="stable")
        self._sorted_keys = keys[self._key_order]
        self._cache: dict[str, sp.csr_matrix] = {}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_simplices(
        cls,
        edges: Any,
        triangles: Any | None = None,
        num_nodes: int | None = None,
        tetrahedra: Any | None = None,
    ) -> SimplicialOperators:
        """Build the complex from an edge list and optional triangle and tetrahedron lists.

        Node ids are integers ``0 .. num_nodes-1``. Each edge is stored as the sorted
        pair ``(u, v)``, ``u < v``, oriented ``u -> v``; edges, triangles and tetrahedra
        are sorted lexicographically (TopoNetX's order), whatever order they are given in.
        A tetrahedron ``a < b < c < d`` has the boundary
        ``[b,c,d] - [a,c,d] + [a,b,d] - [a,b,c]`` (``B3``, TopoNetX's signs).

        Args:
            edges: ``[N1, 2]`` integer node pairs (list, numpy array or tensor).
            triangles: ``[N2, 3]`` integer node triples, or ``None`` (default) for a
                complex without triangles.
            num_nodes: number of nodes :math:`N_0`; default ``max id + 1``.
            tetrahedra: ``[N3, 4]`` integer node quadruples, or ``None`` (default) for a
                complex of order two.

        Raises:
            ValueError: a self-loop, a duplicate edge, triangle or tetrahedron, a
                negative or out-of-range node id, a triangle or tetrahedron with a
                repeated node, a triangle one of whose three edges is not in ``edges``,
                or a tetrahedron one of whose four faces is not in ``triangles``.
            TypeError: non-integer node ids.

        Example:
            >>> import itertools
            >>> tet = [0, 1, 2, 3]
            >>> ops = SimplicialOperators.from_simplices(
            ...     list(itertools.combinations(tet, 2)), list(itertools.combinations(tet, 3)),
            ...     tetrahedra=[tet])
            >>> ops.B3.toarray().ravel().tolist()  # faces (0,1,2), (0,1,3), (0,2,3), (1,2,3)
            [-1.0, 1.0, -1.0, 1.0]
            >>> float(abs(ops.B2 @ ops.B3).sum())
            0.0
        """
        e = _as_index_array(edges, 2, "edges")
        t = _as_index_array([] if triangles is None else triangles, 3, "triangles")
        q = _as_index_array([] if tetrahedra is None else tetrahedra, 4, "tetrahedra")
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
        if t.size:
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
            pos = np.searchsorted(skeys, fkeys)
            pos = np.minimum(pos, max(n1 - 1, 0))
            found = (skeys[pos] == fkeys) if n1 else np.zeros_like(fkeys, dtype=bool)
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
        else:
            B2 = sp.csr_matrix((n1, 0))
        B1.sort_indices()
        B2.sort_indices()
        B3 = None
        if q.size:
            B3 = _tetrahedra_incidence(q, t, num_nodes)
        return cls(B1, B2, B3, _validated=True)

    @classmethod
    def from_incidence(
        cls, B1: Any, B2: Any | None = None, B3: Any | None = None
    ) -> SimplicialOperators:
        """Build the complex from signed incidence matrices, in any edge orientation.

        Columns keep the given order and orientation: edge ``e`` runs from the node
        with ``B1[:, e] = -1`` to the node with ``+1``, whatever their ids (real
        networks come with their own directions; ``from_simplices`` and TopoNetX orient
        low -> high). Every validly signed pair is accepted: re-orienting edges
        (``B1 S``, ``S B2`` with ``S`` a diagonal of +-1) or triangles (``B2 T``) gives
        an equally valid complex with the same Hodge subspaces up to the signs of ``S``.
        A triangle whose three edges run around it (``B2`` column all +1 or all -1) is
        as valid as any other.

        Source: Schaub et al., "Signal processing on higher-order networks", Signal
        Processing 187, 2021, §2 (orientations are a reference frame; ``B1 B2 = 0``).

        Args:
            B1: ``[N0, N1]`` node-to-edge incidence (scipy sparse, torch sparse or
                dense, numpy); every column holds exactly one ``-1`` and one ``+1``.
            B2: ``[N1, N2]`` edge-to-triangle incidence, or ``None`` (default) for a
                complex without triangles; every column holds three entries ``+-1``
                on the three edges of one triangle, with ``B1 @ B2 = 0``.
            B3: ``[N2, N3]`` triangle-to-tetrahedron incidence, or ``None`` (default) for
                a complex without tetrahedra; every column holds four entries ``+-1`` on
                the four faces of one tetrahedron, with ``B2 @ B3 = 0``.

        Raises:
            ValueError: a ``B1`` column without exactly one -1 and one +1 (unsigned or
                malformed, says which), a ``B2`` column without exactly three entries
                +-1, a shape mismatch, a duplicate edge, a triangle whose faces do not
                close, or ``B1 @ B2 != 0`` (the message gives the column, its signs and
                the expected signs); likewise for ``B3``: a column without four entries
                +-1, faces that are not the four triangles of one tetrahedron,
                ``B3`` without ``B2``, or ``B2 @ B3 != 0``.

        Example:
            >>> import numpy as np
            >>> B1 = np.array([[-1, 0, 1], [1, -1, 0], [0, 1, -1]])  # 0 -> 1 -> 2 -> 0
            >>> ops = SimplicialOperators.from_incidence(B1, np.ones((3, 1)))
            >>> ops.edges.tolist(), ops.path_to_flow([2, 0, 1]).tolist()
            ([[0, 1], [1, 2], [2, 0]], [1.0, 0.0, 1.0])
        """
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
        b1 = sp.csr_matrix(b1.sign())
        if B2 is None:
            b2 = sp.csr_matrix((n1, 0))
        else:
            b2 = _to_scipy(B2, "B2")
            if b2.shape[0] != n1:
                raise ValueError(
                    f"shape mismatch: `B1` has {n1} columns (edges) but `B2` has {b2.shape[0]} rows"
                )
            c2 = b2.tocsc()
            counts2 = np.diff(c2.indptr)
            bad = np.flatnonzero(counts2 != 3)
            if bad.size:
                raise ValueError(
                    f"`B2` column {bad[0]} has {counts2[bad[0]]} non-zeros; every triangle column "
                    "needs exactly three entries +-1"
                )
            signed = np.isin(c2.data, (-1.0, 1.0)).reshape(-1, 3)
            if not signed.all():
                c = int(np.flatnonzero(~signed.all(axis=1))[0])
                raise ValueError(
                    f"`B2` column {c} has entries {c2.data[3 * c:3 * c + 3].tolist()}, expected "
                    "three entries +1 or -1 (signed incidence)"
                )
            tri_nodes = nodes[c2.indices.reshape(-1, 3)].reshape(-1, 6) if c2.nnz else None
            if tri_nodes is not None:
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
            b2 = sp.csr_matrix(b2.sign())
            prod = (b1 @ b2).tocsc()
            prod.eliminate_zeros()
            if prod.nnz:
                c = int(np.flatnonzero(np.diff(prod.indptr))[0])
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
                raise ValueError(
                    f"B1 @ B2 != 0 at column {c} of `B2`: its edges {cols.tolist()} have signs "
                    f"{given.astype(int).tolist()}, expected {expected} or "
                    f"{[-v for v in expected]} (the boundary of triangle {[int(a), int(b), int(d)]}"
                    f" under the edge orientations of `B1`); the column is {kind}"
                )
        b1.sort_indices()
        b2.sort_indices()
        ops = cls(sp.csr_matrix(b1), sp.csr_matrix(b2), _validated=True)
        if B3 is None:
            return ops
        b3 = _check_b3(B3, ops)
        return cls(ops.B1, ops.B2, b3, _validated=True)

    @classmethod
    def from_toponetx(cls, complex: Any) -> SimplicialOperators:
        """Build the operators of a TopoNetX ``SimplicialComplex``.

        Uses TopoNetX's own incidence matrices, node, edge, triangle and tetrahedron
        order (for integer node labels: sorted, oriented low -> high). Tetrahedra give
        ``B3``; simplices of dimension four or more are ignored. A complex without
        triangles gives an empty ``B2`` (TopoNetX itself raises for
        ``incidence_matrix(2)`` there).

        Args:
            complex: a ``toponetx.SimplicialComplex``.

        Raises:
            TypeError: ``complex`` is not a TopoNetX simplicial complex.
            ValueError: the complex has no edges.
        """
        if not hasattr(complex, "incidence_matrix") or not hasattr(complex, "dim"):
            raise TypeError(
                "`complex` must be a toponetx.SimplicialComplex, got "
                f"{type(complex).__name__}"
            )
        if complex.dim < 1:
            raise ValueError("`complex` has no edges; an edge-flow complex needs at least one edge")
        _, _, B1 = complex.incidence_matrix(1, index=True)
        B2 = complex.incidence_matrix(2) if complex.dim >= 2 else None
        B3 = complex.incidence_matrix(3) if complex.dim >= 3 else None
        return cls.from_incidence(B1, B2, B3)

    # ------------------------------------------------------------------ operators
    @property
    def L0(self) -> sp.csr_matrix:
        """Graph Laplacian :math:`B_1 B_1^T`, scipy CSR ``float64 [N0, N0]``."""
        return self._get("L0")

    @property
    def L_down(self) -> sp.csr_matrix:
        """Lower Laplacian :math:`B_1^T B_1`, scipy CSR ``float64 [N1, N1]``."""
        return self._get("L_down")

    @property
    def L_up(self) -> sp.csr_matrix:
        """Upper Laplacian :math:`B_2 B_2^T`, scipy CSR ``float64 [N1, N1]``, zero if N2 = 0."""
        return self._get("L_up")

    @property
    def L1(self) -> sp.csr_matrix:
        """Hodge 1-Laplacian :math:`L_\\downarrow + L_\\uparrow`, scipy CSR ``float64 [N1, N1]``."""
        return self._get("L1")

    @property
    def L2(self) -> sp.csr_matrix:
        """Hodge 2-Laplacian :math:`B_2^T B_2 + B_3 B_3^T`, scipy CSR ``float64 [N2, N2]``
        (:math:`B_2^T B_2` on a complex without tetrahedra)."""
        return self._get("L2")

    @property
    def L2_down(self) -> sp.csr_matrix:
        """Lower 2-Laplacian :math:`B_2^T B_2`, scipy CSR ``float64 [N2, N2]`` (what the
        curl part of edge flows is solved with)."""
        return self._get("L2_down")

    @property
    def L3(self) -> sp.csr_matrix:
        """Tetrahedron Laplacian :math:`B_3^T B_3`, scipy CSR ``float64 [N3, N3]``."""
        return self._get("L3")

    @property
    def dim(self) -> int:
        """Highest rank with at least one simplex (0: nodes only, 1: a graph, 2: triangles,
        3: tetrahedra); the complex has the ranks ``0 .. dim``."""
        sizes = self.sizes
        return max((k for k in range(1, MAX_RANK + 1) if sizes[k]), default=0)

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """``(N0, N1, N2, N3)``: the numbers of nodes, edges, triangles and tetrahedra."""
        return (
            int(self.num_nodes),
            int(self.num_edges),
            int(self.num_triangles),
            int(self.num_tetrahedra),
        )

    def check_rank(self, rank: Any, what: str = "rank") -> int:
        """Return ``rank`` as an int if the complex has simplices of that rank.

        Args:
            rank: ``0`` (nodes), ``1`` (edges), ``2`` (triangles) or ``3`` (tetrahedra).
            what: name of the argument in the messages (default ``"rank"``).

        Raises:
            TypeError: ``rank`` is not an integer.
            ValueError: ``rank`` outside ``0 .. dim`` (names the rank, the missing
                simplices and the sizes of the complex).
        """
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
            raise TypeError(f"`{what}` must be an int in 0..{MAX_RANK}, got {rank!r}")
        rank = int(rank)
        if rank < 0 or rank > MAX_RANK:
            raise ValueError(f"`{what}` must lie in 0..{MAX_RANK}, got {rank}")
        if rank > self.dim:
            raise ValueError(
                f"`{what}` = {rank} is not a rank of this complex: it has no "
                f"{_SIMPLEX_NAMES[rank]} (N{rank} = 0; sizes N0..N3 = {self.sizes}), so its "
                f"ranks are 0..{self.dim}"
            )
        return rank

    def num_simplices(self, rank: int) -> int:
        """:math:`N_k`, the number of simplices of rank ``rank`` (``0 .. 3``; 0 where the
        complex has none).

        Raises:
            TypeError / ValueError: ``rank`` not an int in ``0 .. 3``.
        """
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
            raise TypeError(f"`rank` must be an int in 0..{MAX_RANK}, got {rank!r}")
        if not 0 <= int(rank) <= MAX_RANK:
            raise ValueError(f"`rank` must lie in 0..{MAX_RANK}, got {rank}")
        return self.sizes[int(rank)]

    def simplices(self, rank: int) -> np.ndarray:
        """Node ids ``int64 [N_k, k + 1]`` of the simplices of rank ``rank`` in column order
        (nodes ``[N0, 1]``; edges as (tail, head), see :attr:`edges`; sorted triangles and
        tetrahedra).

        Raises:
            TypeError / ValueError: as :meth:`num_simplices`.
        """
        self.num_simplices(rank)
        if rank == 0:
            return np.arange(self.num_nodes, dtype=np.int64)[:, None]
        return (self.edges, self.triangles, self.tetrahedra)[int(rank) - 1]

    def incidence(self, rank: int) -> sp.csr_matrix:
        """Signed incidence :math:`B_k` ``float64 [N_{k-1}, N_k]`` for ``rank`` = k in
        ``1 .. 4`` (``B4`` is the empty ``[N3, 0]``: no simplices of rank 4).

        Raises:
            TypeError / ValueError: ``rank`` not an int in ``1 .. 4``.
        """
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
            raise TypeError(f"`rank` must be an int in 1..{MAX_RANK + 1}, got {rank!r}")
        if not 1 <= int(rank) <= MAX_RANK + 1:
            raise ValueError(
                f"`rank` of an incidence matrix must lie in 1..{MAX_RANK + 1}, got {rank}"
            )
        if rank == MAX_RANK + 1:
            return sp.csr_matrix((self.num_tetrahedra, 0))
        return (self.B1, self.B2, self.B3)[int(rank) - 1]

    def down_laplacian(self, rank: int) -> sp.csr_matrix:
        """Lower Laplacian :math:`L_{k,\\downarrow} = B_k^T B_k` ``float64 [N_k, N_k]``
        (zero for ``rank`` 0).

        Raises:
            TypeError / ValueError: ``rank`` not an int in ``0 .. 3``.
        """
        self.num_simplices(rank)
        return self._get(f"L{int(rank)}_down")

    def up_laplacian(self, rank: int) -> sp.csr_matrix:
        """Upper Laplacian :math:`L_{k,\\uparrow} = B_{k+1} B_{k+1}^T` ``float64 [N_k, N_k]``
        (zero for ``rank`` 3 and where the complex has no simplices of rank k + 1).

        Raises:
            TypeError / ValueError: ``rank`` not an int in ``0 .. 3``.
        """
        self.num_simplices(rank)
        return self._get(f"L{int(rank)}_up")

    def hodge_laplacian(self, rank: int) -> sp.csr_matrix:
        """Hodge Laplacian :math:`L_k = L_{k,\\downarrow} + L_{k,\\uparrow}` ``float64
        [N_k, N_k]``.

        Raises:
            TypeError / ValueError: ``rank`` not an int in ``0 .. 3``.
        """
        self.num_simplices(rank)
        return self._get(f"L{int(rank)}")

    def _get(self, name: str) -> sp.csr_matrix:
        if name in ("B1", "B2", "B3"):
            return self.incidence(int(name[1]))
        name = {"L_down": "L1_down", "L_up": "L1_up", "L0_up": "L0"}.get(name, name)
        if name not in self._cache:
            if name == "L0":
                m = self.B1 @ self.B1.T
            elif name == "L1_down":
                m = self.B1.T @ self.B1
            elif name == "L1_up":
                m = self.B2 @ self.B2.T
            elif name == "L1":
                m = self.L_down + self.L_up
            elif name == "L2":
                m = self._get("L2_down")
                if self.num_tetrahedra:
                    m = m + self._get("L2_up")
            elif name in ("L3", "L3_down"):
                m = self.B3.T @ self.B3
            elif name == "L0_down":
                m = sp.csr_matrix((self.num_nodes, self.num_nodes))
            elif name == "L2_down":
                m = self.B2.T @ self.B2
            elif name == "L2_up":
                m = self.B3 @ self.B3.T
            elif name == "L3_up":
                m = sp.csr_matrix((self.num_tetrahedra, self.num_tetrahedra))
            else:  # pragma: no cover - guarded by callers
                raise ValueError(name)
            m = sp.csr_matrix(m)
            m.eliminate_zeros()
            m.sort_indices()
            self._cache[name] = m
        return self._cache[name]

    def operator(
        self,
        name: str,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        layout: torch.layout = torch.sparse_coo,
    ) -> torch.Tensor:
        """Return one operator as a torch sparse tensor.

        Args:
            name: one of ``"B1", "B2", "B3", "L0", "L_down", "L_up", "L1", "L2",
                "L3"`` or ``"L{k}_down"`` / ``"L{k}_up"`` for ``k`` in ``0 .. 3``
                (``L_down`` is ``L1_down``, ``L_up`` is ``L1_up``).
            device: target device (default CPU).
            dtype: floating dtype (default ``torch.float32``).
            layout: ``torch.sparse_coo`` (default, coalesced) or ``torch.sparse_csr``.

        Returns:
            A sparse tensor of the operator's shape on ``device`` with ``dtype``.

        Raises:
            ValueError: unknown ``name`` or ``layout``.
            TypeError: ``dtype`` is not a floating dtype.
        """
        if name not in _OPERATORS:
            raise ValueError(f"`name` must be one of {_OPERATORS}, got {name!r}")
        if not dtype.is_floating_point:
            raise TypeError(f"`dtype` must be a floating dtype, got {dtype}")
        m = self._get(name)
        if layout == torch.sparse_csr:
            return torch.sparse_csr_tensor(
                torch.from_numpy(m.indptr.astype(np.int64)),
                torch.from_numpy(m.indices.astype(np.int64)),
                torch.from_numpy(m.data),
                size=m.shape,
                check_invariants=False,
            ).to(device=device, dtype=dtype)
        if layout == torch.sparse_coo:
            c = m.tocoo()
            idx = torch.from_numpy(np.stack([c.row, c.col]).astype(np.int64))
            return torch.sparse_coo_tensor(
                idx,
                torch.from_numpy(c.data),
                size=m.shape,
                is_coalesced=True,
                check_invariants=False,
            ).to(device=device, dtype=dtype)
        raise ValueError(f"`layout` must be torch.sparse_csr or torch.sparse_coo, got {layout}")

    def laplacians(
        self,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        rank: int = 1,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(L_down, L_up)`` of rank ``rank`` as coalesced torch sparse COO tensors
        ``[N_k, N_k]``.

        Convenience for :class:`topo_contrastive.nn.SCNNConv`'s ``forward``: the filter of
        signals on the simplices of rank k uses
        :math:`(\\mathbf{L}_{k,\\downarrow}, \\mathbf{L}_{k,\\uparrow})` (rank 0:
        ``(0, L0)``; rank 2: ``(B2^T B2, B3 B3^T)``, the latter zero without tetrahedra).

        Args:
            device: target device (default CPU).
            dtype: floating dtype (default ``torch.float32``).
            rank: rank of the signals (default ``1``: edge flows).

        Raises:
            ValueError: ``rank`` is not a rank of the complex (see :meth:`check_rank`).
        """
        if rank == 1 and not isinstance(rank, bool):
            return (
                self.operator("L_down", device=device, dtype=dtype),
                self.operator("L_up", device=device, dtype=dtype),
            )
        k = self.check_rank(rank)
        return (
            self.operator(f"L{k}_down", device=device, dtype=dtype),
            self.operator(f"L{k}_up", device=device, dtype=dtype),
        )

    # ------------------------------------------------------------------ edge lookup
    def edge_lookup(self, u: Any, v: Any) -> tuple[np.ndarray, np.ndarray]:
        """Map oriented node pairs ``(u, v)`` to ``(column, sign)``.

        ``sign`` is ``+1`` when the edge's stored orientation is ``u -> v`` and
        ``-1`` when it is ``v -> u``. Vectorised: ``u`` and ``v`` may be scalars or
        arrays of the same shape.

        Returns:
            ``(columns, signs)``: ``int64`` and ``float64`` arrays shaped like ``u``
            (0-d arrays for scalars).

        Raises:
            ValueError: some ``(u, v)`` is not an edge of the complex (says which).
        """
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        if u.shape != v.shape:
            raise ValueError(f"`u` and `v` must have the same shape, got {u.shape} and {v.shape}")
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        inrange = (lo >= 0) & (hi < self.num_nodes) & (lo != hi)
        keys = np.where(inrange, lo * self.num_nodes + hi, -1)
        pos = np.searchsorted(self._sorted_keys, keys)
        pos = np.minimum(pos, max(self.num_edges - 1, 0))
        found = inrange & (self._sorted_keys[pos] == keys) if self.num_edges else inrange & False
        if not np.all(found):
            i = np.argwhere(~np.atleast_1d(found))[0]
            uu, vv = np.atleast_1d(u)[tuple(i)], np.atleast_1d(v)[tuple(i)]
            raise ValueError(f"({int(uu)}, {int(vv)}) is not an edge of the complex")
        col = self._key_order[pos]
        sign = np.where(self.edges[col, 0] == u, 1.0, -1.0)
        return col, sign

    def path_to_flow(
        self,
        path: Sequence[int] | np.ndarray | torch.Tensor,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Edge flow ``[N1]`` of a node path: every step ``a -> b`` adds its sign to its edge.

        Steps along the stored orientation add ``+1``, against it ``-1``; an edge
        traversed several times accumulates (values of magnitude 2+ occur).

        Args:
            path: sequence of at least one node id.
            dtype: output floating dtype (default ``torch.float32``).
            device: output device (default CPU).

        Raises:
            ValueError: a step of the path is not an edge (says which step).
        """
        p = np.asarray(
            path.detach().cpu().numpy() if isinstance(path, torch.Tensor) else path, dtype=np.int64
        ).ravel()
        flow = np.zeros(self.num_edges, dtype=np.float64)
        if p.size >= 2:
            try:
                col, sign = self.edge_lookup(p[:-1], p[1:])
            except ValueError:
                bad = next(
                    i
                    for i in range(p.size - 1)
                    if not self._is_edge(int(p[i]), int(p[i + 1]))
                )
                raise ValueError(
                    f"step {bad} of the path, {int(p[bad])} -> {int(p[bad + 1])}, is not an edge "
                    "of the complex"
                ) from None
            np.add.at(flow, col, sign)
        return torch.from_numpy(flow).to(device=device, dtype=dtype)

    def _is_edge(self, u: int, v: int) -> bool:
        try:
            self.edge_lookup(u, v)
        except ValueError:
            return False
        return True

    # ------------------------------------------------------------------ misc
    def divergence(self, x: torch.Tensor) -> torch.Tensor:
        """Node divergence :math:`B_1 x` of edge flows.

        Args:
            x: floating tensor ``[N1]`` or ``[B, N1]``.

        Returns:
            ``[N0]`` or ``[B, N0]`` on ``x``'s device and dtype.

        Raises:
            ValueError: the last dimension of ``x`` is not ``N1``.
        """
        if x.shape[-1] != self.num_edges:
            raise ValueError(
                f"`x` must have {self.num_edges} entries (edges) in its last dimension, "
                f"got shape {tuple(x.shape)}"
            )
        b1 = self.operator("B1", device=x.device, dtype=x.dtype)
        return (b1 @ x.reshape(-1, self.num_edges).T).T.reshape(*x.shape[:-1], self.num_nodes)

    def fingerprint(self) -> str:
        """Identifier of the complex: 16 hex digits of the sha256 of its oriented edges,
        triangles and number of nodes.

        Two complexes have the same fingerprint when they have the same nodes, the same
        edges in the same order and orientation and the same triangles, i.e. when edge
        flows and per-edge weights of one are valid on the other. Saved encoders
        (:func:`topo_contrastive.io.save_encoder`) store it to refuse another complex at
        load time.

        Returns:
            ``str`` of 16 lowercase hex digits.

        Example:
            >>> a = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
            >>> b = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2]])
            >>> len(a.fingerprint()), a.fingerprint() == b.fingerprint()
            (16, False)
        """
        digest = hashlib.sha256()
        digest.update(np.ascontiguousarray(self.edges, dtype=np.int64).tobytes())
        digest.update(b"|")
        digest.update(np.ascontiguousarray(self.triangles, dtype=np.int64).tobytes())
        digest.update(f"|{self.num_nodes}".encode())
        return digest.hexdigest()[:16]

    def __repr__(self) -> str:
        extra = f", num_tetrahedra={self.num_tetrahedra}" if self.num_tetrahedra else ""
        return (
            f"{type(self).__name__}(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"num_triangles={self.num_triangles}{extra})"
        )
