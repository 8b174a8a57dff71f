"""The class :class:`SimplicialOperators`: a simplicial complex's signed operators.

The package docstring (:mod:`topo_contrastive.complex`) states the operators, their order
and their orientation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive.complex._build import (
    incidence_from_matrices,
    incidence_from_simplices,
    oriented_simplices,
)

__all__ = ["SimplicialOperators"]

_OPERATORS = ("B1", "B2", "B3", "L0", "L_down", "L_up", "L1", "L2", "L3") + tuple(
    f"L{k}_{part}" for k in range(4) for part in ("down", "up")
)
#: Names of the simplices of each rank (for messages).
_SIMPLEX_NAMES = ("nodes", "edges", "triangles", "tetrahedra")
#: Highest rank of a simplex the class stores.
MAX_RANK = 3


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
        self.edges, self.triangles, self.tetrahedra = oriented_simplices(B1, B2, self.B3)
        # Lookup table for (u, v) -> column: keys u * N0 + v of sorted pairs.
        lo = np.minimum(self.edges[:, 0], self.edges[:, 1])
        hi = np.maximum(self.edges[:, 0], self.edges[:, 1])
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
        B1, B2, B3 = incidence_from_simplices(edges, triangles, num_nodes, tetrahedra)
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
        return cls(*incidence_from_matrices(B1, B2, B3), _validated=True)

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
