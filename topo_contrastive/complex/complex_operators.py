"""The signed incidence matrices and Hodge Laplacians of a complex: :class:`ComplexOperators`
(its operators and edge look-ups in ``_operators.py``, the checks of its input in ``_build.py``)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import numpy as np
import scipy.sparse as sp

from topo_contrastive._utils.checks import check_int
from topo_contrastive.complex._build import (
    face_cycles,
    incidence_from_cells,
    incidence_from_matrices,
    incidence_from_simplices,
    oriented_simplices,
)
from topo_contrastive.complex._metric import preset_stars, toponetx_stars
from topo_contrastive.complex._operators import MAX_RANK, OperatorsMixin

#: Names of the simplices of each rank (for messages).
_SIMPLEX_NAMES = ("nodes", "edges", "triangles", "tetrahedra")


def _rank(rank: Any, what: str = "rank") -> int:
    """``rank`` as an int in ``0 .. MAX_RANK``."""
    rank = check_int(rank, what)
    if not 0 <= rank <= MAX_RANK:
        raise ValueError(f"`{what}` must lie in 0..{MAX_RANK}, got {rank}")
    return rank


class ComplexOperators(OperatorsMixin):
    r"""Signed incidence matrices and Hodge Laplacians of a simplicial complex of order
    two or three (nodes, edges, triangles and optionally tetrahedra) or of a cell complex
    (nodes, edges and 2-cells of any length >= 3: squares, pentagons, the faces of a planar
    network).

    Build it with :meth:`from_simplices`, :meth:`from_cells`, :meth:`from_incidence` or
    :meth:`from_toponetx`. The operators are scipy CSR matrices (float64: ``B1``, ``B2``,
    ``B3``, ``L0``, ``L_down``, ``L_up``, ``L1``, ``L2``, ``L3``; any rank with
    :meth:`incidence`, :meth:`down_laplacian`, :meth:`up_laplacian`,
    :meth:`hodge_laplacian`) and torch sparse tensors on any device and dtype
    (:meth:`operator`; :meth:`laplacians` with ``rank=k`` for signals ``x_k`` on the
    simplices of rank :math:`k`).

    .. math::
        \mathbf{L}_{\downarrow} = \mathbf{B}_1^\top \mathbf{B}_1, \qquad
        \mathbf{L}_{\uparrow} = \mathbf{B}_2 \mathbf{B}_2^\top, \qquad
        \mathbf{L}_1 = \mathbf{L}_{\downarrow} + \mathbf{L}_{\uparrow}

    Source: paper eq. (2); Schaub et al., "Signal processing on higher-order
    networks", Signal Processing 187, 2021.

    A column of ``B2`` is the oriented boundary cycle of one 2-cell (a triangle, or a polygon
    in a cell complex), with ``B1 B2 = 0``; nothing downstream depends on its length. A
    complex without 2-cells has ``B2`` of shape ``[N1, 0]`` (``L_up = 0``), one without
    tetrahedra ``B3`` of shape ``[N2, 0]``. The complex has the ranks ``0 .. dim``; an
    operator or signal of another rank is a ``ValueError`` (:meth:`check_rank`).

    Attributes:
        num_nodes (int): :math:`N_0`.
        num_edges (int): :math:`N_1`.
        num_faces (int): :math:`N_2`, the number of 2-cells (triangles in a simplicial
            complex).
        edges (numpy.ndarray): ``int64 [N1, 2]``, tail and head node of every edge
            in column order (``B1[tail, e] = -1``, ``B1[head, e] = +1``).
        num_tetrahedra (int): :math:`N_3` (0 without tetrahedra).
        tetrahedra (numpy.ndarray): ``int64 [N3, 4]`` sorted node ids of each tetrahedron.
        node_labels (tuple or None): the node labels of a complex built
            :meth:`from_toponetx`, in row order of ``B1``; ``None`` otherwise (the node
            ids ``0 .. N0 - 1`` are the labels).

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> ops.B2.toarray().ravel().tolist()  # edges (0, 1), (0, 2), (1, 2)
        [1.0, -1.0, 1.0]
        >>> ops.path_to_flow([0, 1, 2]).tolist()
        [1.0, 0.0, 1.0]
    """

    #: The metric of the chains: ``"unweighted"`` (every Hodge star the identity),
    #: ``"normalized"``, ``"resistance"`` or ``"weighted"`` (:meth:`with_weights`).
    metric: str = "unweighted"
    _stars: tuple[np.ndarray | None, ...] = (None, None, None)  # W0, W1, W2 (None: identity)

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
                "use ComplexOperators.from_simplices / from_incidence / from_toponetx "
                "to build a complex"
            )
        self.B1 = B1
        self.B2 = B2
        self.num_nodes, self.num_edges = B1.shape
        self.num_faces = B2.shape[1]
        self.B3 = sp.csr_matrix((self.num_faces, 0)) if B3 is None else B3
        self.num_tetrahedra = self.B3.shape[1]
        self.edges, self._triangles, self.tetrahedra = oriented_simplices(B1, B2, self.B3)
        self._face_cycles: tuple[np.ndarray, np.ndarray] | None = None  # made on first use
        # look-up table (u, v) -> column: the columns by the key min(u, v) * N0 + max(u, v)
        e = self.edges
        keys = np.minimum(e[:, 0], e[:, 1]) * self.num_nodes + np.maximum(e[:, 0], e[:, 1])
        self._key_order = np.argsort(keys, kind="stable")
        self._sorted_keys = keys[self._key_order]
        self._cache: dict[str, sp.csr_matrix] = {}
        # the node labels of a TopoNetX complex, row i of B1 first (None: rows are the labels)
        self.node_labels: tuple[Any, ...] | None = None
        self._label_rows: dict[Any, int] | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_simplices(cls, edges: Any, triangles: Any | None = None, num_nodes: int | None = None,
                       tetrahedra: Any | None = None) -> ComplexOperators:  # fmt: skip
        """Build the complex from an edge list and optional triangle and tetrahedron lists.

        Node ids are integers ``0 .. num_nodes-1``; edges are stored as sorted pairs
        ``(u, v)`` oriented ``u -> v``, and edges, triangles and tetrahedra are sorted
        lexicographically (TopoNetX's order and signs, :mod:`topo_contrastive.complex`).

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
            >>> ops = ComplexOperators.from_simplices(
            ...     list(itertools.combinations(tet, 2)), list(itertools.combinations(tet, 3)),
            ...     tetrahedra=[tet])
            >>> ops.B3.toarray().ravel().tolist()  # faces (0,1,2), (0,1,3), (0,2,3), (1,2,3)
            [-1.0, 1.0, -1.0, 1.0]
            >>> float(abs(ops.B2 @ ops.B3).sum())
            0.0
        """
        B1, B2, B3 = incidence_from_simplices(edges, triangles, num_nodes, tetrahedra)
        return cls(B1, B2, B3, _validated=True)

    @classmethod
    def from_cells(cls, edges: Any, cells: Any | None = None,
                   num_nodes: int | None = None) -> ComplexOperators:  # fmt: skip
        """Build a cell complex from an edge list and 2-cells given as node cycles.

        Edges are stored as in :meth:`from_simplices` (sorted pairs ``(u, v)``, ``u < v``,
        oriented ``u -> v``). The 2-cells keep the given order; cell
        ``[v_0, v_1, ..., v_{k-1}]`` is oriented along its cycle ``v_0 -> v_1 -> ... ->
        v_0`` (its ``B2`` entry is ``+1`` on an edge traversed tail -> head, ``-1``
        otherwise). Triangles are 2-cells like any other; a complex whose 2-cells are all
        triangles is simplicial (:attr:`is_simplicial`).

        Source: Hatcher, *Algebraic Topology*, §2.2 (cellular boundary); Roddenberry,
        Schaub, Hajij, "Signal processing on cell complexes", ICASSP 2022.

        Args:
            edges: ``[N1, 2]`` integer node pairs (list, numpy array or tensor).
            cells: a sequence of node cycles, each of at least three distinct node ids
                whose consecutive pairs (and last-first) are edges; or ``None`` (default)
                for a graph without 2-cells.
            num_nodes: number of nodes :math:`N_0`; default ``max id + 1``.

        Raises:
            ValueError: a self-loop or duplicate edge; a node id out of range; a cell of
                fewer than three nodes, with a repeated node, or stepping along a pair that
                is not an edge; the same 2-cell twice (two cycles on the same edges).
            TypeError: non-integer node ids, or ``cells`` not a sequence.

        Example:
            >>> square = ComplexOperators.from_cells(
            ...     [[0, 1], [1, 2], [2, 3], [0, 3]], [[0, 1, 2, 3]])
            >>> square.B2.toarray().ravel().tolist()  # edges (0,1), (0,3), (1,2), (2,3)
            [1.0, -1.0, 1.0, 1.0]
            >>> square.faces, square.is_simplicial
            ([[0, 1, 2, 3]], False)
        """
        B1, B2 = incidence_from_cells(edges, cells, num_nodes)
        b1, b2, _ = incidence_from_matrices(B1, B2)  # checks B1 B2 = 0, repeats, cycles
        return cls(b1, b2, None, _validated=True)

    @classmethod
    def from_incidence(
        cls, B1: Any, B2: Any | None = None, B3: Any | None = None
    ) -> ComplexOperators:
        """Build the complex from signed incidence matrices, in any edge orientation.

        Columns keep the given order and orientation: edge ``e`` runs from the node with
        ``B1[:, e] = -1`` to the node with ``+1``, whatever their ids. Every validly signed
        pair is accepted: re-orienting edges (``B1 S``, ``S B2`` with ``S`` a diagonal of
        +-1) or 2-cells (``B2 T``) gives an equally valid complex with the same Hodge
        subspaces up to the signs of ``S``.

        Source: Schaub et al., "Signal processing on higher-order networks", Signal
        Processing 187, 2021, §2 (orientations are a reference frame; ``B1 B2 = 0``).

        Args:
            B1: ``[N0, N1]`` node-to-edge incidence (scipy sparse, torch sparse or
                dense, numpy); every column holds exactly one ``-1`` and one ``+1``.
            B2: ``[N1, N2]`` edge-to-2-cell incidence, or ``None`` (default) for a
                complex without 2-cells; every column holds entries ``+-1`` on the edges
                of one simple closed cycle of at least three edges (three for a
                triangle, more for a polygon of a cell complex), with ``B1 @ B2 = 0``.
            B3: ``[N2, N3]`` triangle-to-tetrahedron incidence, or ``None`` (default) for
                a complex without tetrahedra; every column holds four entries ``+-1`` on
                the four faces of one tetrahedron, with ``B2 @ B3 = 0``.

        Raises:
            ValueError: a ``B1`` column without one -1 and one +1, a ``B2`` column with
                fewer than three entries or an entry other than +-1, a shape mismatch, a
                duplicate edge or 2-cell, ``B1 @ B2 != 0`` (naming the column, its signs
                and, for a triangle, the expected ones), a column that is not one simple
                cycle; likewise for ``B3`` (four entries +-1 on the faces of one
                tetrahedron, ``B2 @ B3 = 0``, only beside triangles).
            TypeError: a matrix that is not a real matrix.

        Example:
            >>> import numpy as np
            >>> B1 = np.array([[-1, 0, 1], [1, -1, 0], [0, 1, -1]])  # 0 -> 1 -> 2 -> 0
            >>> ops = ComplexOperators.from_incidence(B1, np.ones((3, 1)))
            >>> ops.edges.tolist(), ops.path_to_flow([2, 0, 1]).tolist()
            ([[0, 1], [1, 2], [2, 0]], [1.0, 0.0, 1.0])
        """
        b1, b2, b3 = incidence_from_matrices(B1, B2, B3)
        return cls(b1, b2, b3, _validated=True)

    @classmethod
    def from_toponetx(cls, complex: Any, weight: str | None = None) -> ComplexOperators:
        r"""Build the operators of a TopoNetX ``SimplicialComplex`` or ``CellComplex``.

        Uses TopoNetX's own signed incidence matrices and its node, edge and 2-cell order;
        tetrahedra give ``B3``, higher simplices are ignored, and a complex without 2-cells
        gives an empty ``B2``. The node labels (any hashable) are kept in
        :attr:`node_labels` (row ``i`` of ``B1`` is ``node_labels[i]``), and
        :meth:`path_to_flow` takes paths in them. Labels TopoNetX's incidence matrices
        cannot take (ints mixed with strings; tuples in a ``SimplicialComplex``) give the
        operators of its node, edge and cell lists (edges oriented from the earlier node).

        Args:
            complex: a ``toponetx.SimplicialComplex`` or ``toponetx.CellComplex``.
            weight: the name of the node, edge and 2-cell attribute holding the Hodge stars
                :math:`\mathbf{W}_0, \mathbf{W}_1, \mathbf{W}_2` (TopoNetX's ``weight``
                convention; a cell without it weighs 1), or ``None`` (default): unweighted
                (see :meth:`with_weights`).

        Raises:
            TypeError: ``complex`` is neither.
            ValueError: the complex has no edges, a 2-cell that is not a simple cycle (a
                node twice, ``[0, 1, 2, 1, 3]``: named), or its incidences are invalid (see
                :meth:`from_incidence`); a ``weight`` attribute that is not a positive
                number.
        """
        ops = cls._toponetx_operators(complex)
        return ops if weight is None else ops.with_weights(**toponetx_stars(ops, complex, weight))

    @classmethod
    def _toponetx_operators(cls, complex: Any) -> ComplexOperators:
        """The unweighted operators of a TopoNetX complex (:meth:`from_toponetx`)."""
        kind = type(complex).__name__
        cell = kind == "CellComplex"
        if kind not in ("CellComplex", "SimplicialComplex") or not hasattr(
            complex, "incidence_matrix"
        ):
            raise TypeError(
                "`complex` must be a toponetx.SimplicialComplex or toponetx.CellComplex, "
                f"got {kind}"
            )
        if complex.dim < 1 or (cell and complex.shape[1] == 0):
            raise ValueError("`complex` has no edges; an edge-flow complex needs at least one edge")
        for c in complex.cells if cell else ():  # TopoNetX's B2 would cancel a repeated stretch
            nodes = list(c.elements)
            if len(set(nodes)) < len(nodes):
                raise ValueError(
                    f"the 2-cell {nodes!r} of `complex` is not a simple cycle (a node appears "
                    "twice): give it as the simple cycles it is made of"
                )
        try:
            rows, _, B1 = complex.incidence_matrix(1, signed=True, index=True)
            B2, B3 = (complex.incidence_matrix(k, signed=True) if complex.dim >= k else None
                      for k in (2, 3))  # fmt: skip
        except TypeError:  # labels TopoNetX cannot sort (ints and strings) or hash (tuples)
            return cls._from_toponetx_lists(complex, cell)
        ops = cls.from_incidence(B1, B2, B3)
        return ops._with_labels(rows, wrapped=not cell)  # {label or (label,): row of B1}

    @classmethod
    def _from_toponetx_lists(cls, complex: Any, cell: bool) -> ComplexOperators:
        """The operators of a TopoNetX complex from its node, edge and cell lists (node ids
        in TopoNetX's node order), for labels its own incidence matrices cannot take."""
        labels = [next(iter(n)) if isinstance(n, frozenset) else n for n in complex.nodes]
        row = {label: i for i, label in enumerate(labels)}

        def ids(items: Any) -> list[list[int]]:
            return [[row[v] for v in item] for item in items]

        if cell:
            cells = ids(c.elements for c in complex.cells)
            ops = cls.from_cells(ids(complex.edges), cells or None, len(labels))
        else:
            tri, tet = (ids(complex.skeleton(k)) if complex.dim >= k else None for k in (2, 3))
            ops = cls.from_simplices(ids(complex.skeleton(1)), tri, len(labels), tet)
        return ops._with_labels(row, wrapped=False)

    def _with_labels(self, rows: dict[Any, int], *, wrapped: bool) -> ComplexOperators:
        """Attach a TopoNetX complex's node labels: ``rows`` maps each node (its label, or
        a one-element tuple / frozenset of it where ``wrapped``) to its row of ``B1``."""
        labels: list[Any] = [None] * self.num_nodes
        for key, row in rows.items():
            labels[row] = next(iter(key)) if wrapped else key
        self.node_labels = tuple(labels)
        self._label_rows = {label: row for row, label in enumerate(labels)}
        return self

    # ------------------------------------------------------------------ the metric
    def with_weights(self, metric: str | None = None, *, node: Any = None, edge: Any = None,
                     cell: Any = None) -> ComplexOperators:  # fmt: skip
        r"""The complex with positive diagonal Hodge stars :math:`\mathbf{W}_0,
        \mathbf{W}_1, \mathbf{W}_2` (node, edge and 2-cell weights): the inner product of
        :math:`k`-chains becomes :math:`\langle a, b \rangle = a^\top \mathbf{W}_k b`.

        .. math::
            \mathbf{B}_1^* = \mathbf{W}_1^{-1} \mathbf{B}_1^\top \mathbf{W}_0, \quad
            \mathbf{B}_2^* = \mathbf{W}_2^{-1} \mathbf{B}_2^\top \mathbf{W}_1, \quad
            \mathbf{L}_1 = \mathbf{B}_1^* \mathbf{B}_1 + \mathbf{B}_2 \mathbf{B}_2^*

        The new complex's Laplacians (:attr:`L_down`, :attr:`L_up`, :meth:`laplacians`, ...)
        are the symmetric forms :math:`\mathbf{W}_1^{1/2} \mathbf{L}_1
        \mathbf{W}_1^{-1/2}` (what the layers filter with); its
        :class:`~topo_contrastive.HodgeDecomposition` is orthogonal in :math:`\mathbf{W}_1`
        (docs/weights.md). The weights replace any the complex has; where every weight is one
        the complex is unweighted and every result is the unweighted one bit for bit. The
        weights enter :meth:`fingerprint`. ``B1``, ``B2``, the edges and the node labels are
        shared.

        Source: Schaub, Benson, Horn, Lippner, Jadbabaie, "Random walks on simplicial
        complexes and the normalized Hodge 1-Laplacian", SIAM Review 62(2), 2020 (the
        ``"normalized"`` preset); Lim, "Hodge Laplacians on graphs", SIAM Review 62(3), 2020.

        Args:
            metric: a preset, or ``None`` (default) for the weights given: ``"unweighted"``
                (every star the identity); ``"normalized"`` (Schaub et al.'s normalised Hodge
                1-Laplacian: :math:`\mathbf{W}_1 = \mathbf{D}_2^{-1}` with
                :math:`\mathbf{D}_2 = \max(\operatorname{diag}(|\mathbf{B}_2| \mathbf{1}),
                \mathbf{I})`, :math:`\mathbf{W}_0 = \mathbf{D}_1^{-1}` with
                :math:`\mathbf{D}_1 = 2 \operatorname{diag}(|\mathbf{B}_1| \mathbf{D}_2
                \mathbf{1})`, :math:`\mathbf{W}_2 = 3 \mathbf{I}`, a 2-cell's number of
                edges for polygons); ``"resistance"`` (``edge`` is a per-edge resistance,
                reactance or length :math:`r`: :math:`\mathbf{W}_1 = \operatorname{diag}(r)`,
                in which a flow :math:`\operatorname{diag}(1/r) \mathbf{B}_1^\top \theta`
                driven by node potentials is a gradient flow).
            node: ``float [N0]`` the diagonal of :math:`\mathbf{W}_0` (``None``: ones).
            edge: ``float [N1]`` the diagonal of :math:`\mathbf{W}_1` (``None``: ones).
            cell: ``float [N2]`` the diagonal of :math:`\mathbf{W}_2` (``None``: ones).

        Raises:
            ValueError: an unknown ``metric``; weights given with ``"unweighted"`` or
                ``"normalized"``, or other than ``edge`` with ``"resistance"``; weights of
                another shape, not positive or not finite (naming the argument and entry).

        Example:
            >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
            >>> weighted = ops.with_weights("resistance", edge=[1.0, 2.0, 4.0])
            >>> weighted.metric, weighted.hodge_star(1).tolist()
            ('resistance', [1.0, 2.0, 4.0])
            >>> ops.with_weights(edge=[1, 1, 1]).fingerprint() == ops.fingerprint()
            True
        """
        stars, name = preset_stars(self, metric, {"node": node, "edge": edge, "cell": cell})
        out = copy.copy(self)
        for key in ("_laplacian_pairs", "_fingerprint"):
            out.__dict__.pop(key, None)
        out._cache, out._stars, out.metric = {}, stars, name
        return out

    # ------------------------------------------------------------------ 2-cells
    @property
    def num_triangles(self) -> int:
        """:math:`N_2` of a simplicial complex; a ``ValueError`` with polygon 2-cells."""
        if self._triangles is None:
            raise ValueError(
                "the complex has 2-cells of more than three edges (a cell complex): use "
                "`num_faces` for the number of 2-cells"
            )
        return int(self.num_faces)

    @property
    def triangles(self) -> np.ndarray:
        """``int64 [N2, 3]`` sorted node ids of each triangle of a simplicial complex; a
        ``ValueError`` with polygon 2-cells (use :attr:`faces`)."""
        if self._triangles is None:
            raise ValueError(
                "the complex has 2-cells of more than three edges (a cell complex): use "
                "`faces` (node cycles) instead of `triangles`"
            )
        return self._triangles

    @property
    def is_simplicial(self) -> bool:
        """``True`` when every 2-cell is a triangle (also for a complex without 2-cells)."""
        return self._triangles is not None

    def _cycles(self) -> tuple[np.ndarray, np.ndarray]:
        """``(face_nodes, face_ptr)``, made on first use."""
        if self._face_cycles is None:
            self._face_cycles = face_cycles(self.edges, self.B2)
        return self._face_cycles

    @property
    def face_nodes(self) -> np.ndarray:
        """``int64 [sum of lengths]``: the nodes of every 2-cell's boundary cycle, one cycle
        after the other (cell ``f`` is ``face_nodes[face_ptr[f]:face_ptr[f + 1]]``)."""
        return self._cycles()[0]

    @property
    def face_ptr(self) -> np.ndarray:
        """``int64 [N2 + 1]``: where each 2-cell's cycle starts in :attr:`face_nodes`."""
        return self._cycles()[1]

    @property
    def faces(self) -> list[list[int]]:
        """The 2-cells as node cycles: ``faces[f]`` lists the nodes of 2-cell ``f`` in the
        order of its orientation, starting at its smallest node (a triangle ``a < b < c``
        oriented ``a -> b -> c`` is ``[a, b, c]``)."""
        nodes, ptr = self.face_nodes.tolist(), self.face_ptr.tolist()
        return [nodes[ptr[f] : ptr[f + 1]] for f in range(self.num_faces)]

    @property
    def face_sizes(self) -> np.ndarray:
        """``int64 [N2]``: the number of edges (= nodes) of every 2-cell."""
        return np.diff(self.B2.tocsc().indptr).astype(np.int64)

    # ------------------------------------------------------------------ sizes and ranks
    @property
    def dim(self) -> int:
        """Highest rank with at least one simplex (0: nodes only, 1: a graph, 2: triangles,
        3: tetrahedra); the complex has the ranks ``0 .. dim``."""
        sizes = self.sizes
        return max((k for k in range(1, MAX_RANK + 1) if sizes[k]), default=0)

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """``(N0, N1, N2, N3)``: the numbers of nodes, edges, 2-cells and tetrahedra."""
        return (
            int(self.num_nodes),
            int(self.num_edges),
            int(self.num_faces),
            int(self.num_tetrahedra),
        )

    def check_rank(self, rank: Any, what: str = "rank") -> int:
        """``rank`` (``0`` nodes, ``1`` edges, ``2`` triangles, ``3`` tetrahedra) as an int;
        a ``TypeError`` for a non-integer, a ``ValueError`` naming the missing simplices and
        the sizes for a rank outside ``0 .. dim`` (``what``: the argument's name)."""
        rank = _rank(rank, what)
        if rank > self.dim:
            raise ValueError(
                f"`{what}` = {rank} is not a rank of this complex: it has no "
                f"{_SIMPLEX_NAMES[rank]} (N{rank} = 0; sizes N0..N3 = {self.sizes}), so its "
                f"ranks are 0..{self.dim}"
            )
        return rank

    def num_simplices(self, rank: int) -> int:
        """:math:`N_k`, the number of simplices of rank ``rank`` (``0 .. 3``; 0 where the
        complex has none); a ``TypeError`` / ``ValueError`` for another rank."""
        return self.sizes[_rank(rank)]

    def simplices(self, rank: int) -> np.ndarray:
        """Node ids ``int64 [N_k, k + 1]`` of the simplices of rank ``rank`` in column order
        (nodes ``[N0, 1]``; edges as (tail, head), see :attr:`edges`; sorted triangles and
        tetrahedra); errors as :meth:`num_simplices`, and rank 2 of a cell complex with
        polygons raises (use :attr:`faces`)."""
        self.num_simplices(rank)
        if rank == 0:
            return np.arange(self.num_nodes, dtype=np.int64)[:, None]
        if rank == 2:
            return self.triangles  # raises for polygon 2-cells (only this rank needs them)
        return self.edges if rank == 1 else self.tetrahedra

    # ------------------------------------------------------------------ identity
    def fingerprint(self) -> str:
        """Identifier of the complex: 16 lowercase hex digits of the sha256 of its oriented
        edges, 2-cells and number of nodes (and its Hodge stars where weighted: an unweighted
        complex keeps its fingerprint), the same where edge flows and per-edge weights of
        one complex are valid on the other (saved encoders store it to refuse another).

        Example:
            >>> a = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
            >>> b = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]])
            >>> len(a.fingerprint()), a.fingerprint() == b.fingerprint()
            (16, False)
        """
        cached = self.__dict__.get("_fingerprint")
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        digest.update(np.ascontiguousarray(self.edges, dtype=np.int64).tobytes())
        digest.update(b"|")
        if self._triangles is not None:
            digest.update(np.ascontiguousarray(self._triangles, dtype=np.int64).tobytes())
        else:  # a cell complex: the oriented boundary cycles of its 2-cells
            digest.update(np.ascontiguousarray(self.face_nodes, dtype=np.int64).tobytes())
            digest.update(b"/")
            digest.update(np.ascontiguousarray(self.face_ptr, dtype=np.int64).tobytes())
        digest.update(f"|{self.num_nodes}".encode())
        for star in self._stars if self.metric != "unweighted" else ():  # the metric, if any
            digest.update(b"|" + (b"1" if star is None else star.tobytes()))
        self._fingerprint: str = digest.hexdigest()[:16]  # the complex is immutable
        return self._fingerprint

    def __repr__(self) -> str:
        extra = f", num_tetrahedra={self.num_tetrahedra}" if self.num_tetrahedra else ""
        cells = "num_triangles" if self.is_simplicial else "num_faces"
        if self.metric != "unweighted":
            extra += f", metric={self.metric!r}"
        return (
            f"{type(self).__name__}(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"{cells}={self.num_faces}{extra})"
        )
