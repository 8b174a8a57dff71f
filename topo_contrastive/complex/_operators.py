"""The operators and edge look-ups of :class:`~topo_contrastive.complex.ComplexOperators`:
incidence matrices and Laplacians of every rank (scipy CSR, cached; torch sparse), oriented
node pairs, the edge flows of node paths and their divergence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive._utils.checks import check_device, check_int
from topo_contrastive.complex._build import _find
from topo_contrastive.complex.laplacians import Laplacians

#: Highest rank of a simplex the class stores.
MAX_RANK = 3
#: Names that :meth:`OperatorsMixin.operator` accepts.
OPERATORS = ("B1", "B2", "B3", "L0", "L_down", "L_up", "L1", "L2", "L3") + tuple(
    f"L{k}_{part}" for k in range(4) for part in ("down", "up")
)
#: How each cached operator is computed (``L_down`` is ``L1_down``, ``L_up`` ``L1_up``), from
#: the incidences in the metric (:meth:`OperatorsMixin._scaled`: ``B_k`` itself unweighted).
_PRODUCTS: dict[str, Any] = {
    "L0": lambda s: s._scaled(1) @ s._scaled(1).T,
    "L0_down": lambda s: sp.csr_matrix((s.num_nodes, s.num_nodes)),
    "L1_down": lambda s: s._scaled(1).T @ s._scaled(1),
    "L1_up": lambda s: s._scaled(2) @ s._scaled(2).T,
    "L1": lambda s: s.L_down + s.L_up,
    "L2_down": lambda s: s._scaled(2).T @ s._scaled(2),
    "L2_up": lambda s: s._scaled(3) @ s._scaled(3).T,
    "L2": lambda s: s._get("L2_down") + s._get("L2_up") if s.num_tetrahedra else s._get("L2_down"),
    "L3": lambda s: s._scaled(3).T @ s._scaled(3),
    "L3_down": lambda s: s._scaled(3).T @ s._scaled(3),
    "L3_up": lambda s: sp.csr_matrix((s.num_tetrahedra, s.num_tetrahedra)),
}


def _canonical(m: Any) -> sp.csr_matrix:
    """``m`` as a CSR matrix without stored zeros, its indices sorted."""
    m = sp.csr_matrix(m)
    m.eliminate_zeros()
    m.sort_indices()
    return m


def _cached(name: str, doc: str) -> Any:
    """A read-only property: the cached scipy CSR operator ``name``."""
    return property(lambda self: self._get(name), doc=doc)


class OperatorsMixin:
    """Operators and edge look-ups, mixed into ``ComplexOperators`` (which holds the incidence
    matrices, the edges, the sizes and the cache, and checks the ranks)."""

    if TYPE_CHECKING:  # provided by ComplexOperators
        B1: sp.csr_matrix
        B2: sp.csr_matrix
        B3: sp.csr_matrix
        num_nodes: int
        num_edges: int
        num_tetrahedra: int
        edges: np.ndarray
        node_labels: tuple[Any, ...] | None
        _label_rows: dict[Any, int] | None
        _key_order: np.ndarray
        _sorted_keys: np.ndarray
        _cache: dict[str, sp.csr_matrix]
        _stars: tuple[np.ndarray | None, ...]
        metric: str

        def check_rank(self, rank: Any, what: str = "rank") -> int: ...

        def num_simplices(self, rank: int) -> int: ...

    # ------------------------------------------------------------------ scipy CSR, cached
    # on a weighted complex these are the symmetric forms (products of _scaled incidences)
    L0 = _cached("L0", "Graph Laplacian :math:`B_1 B_1^T`, CSR ``float64 [N0, N0]``.")
    L_down = _cached("L_down", "Lower Laplacian :math:`B_1^T B_1`, CSR ``float64 [N1, N1]``.")
    L_up = _cached("L_up", "Upper Laplacian :math:`B_2 B_2^T`, CSR ``float64 [N1, N1]``.")
    L1 = _cached("L1", r"Hodge Laplacian :math:`L_\downarrow + L_\uparrow`, ``float64 [N1, N1]``.")
    L2 = _cached("L2", "Hodge 2-Laplacian :math:`B_2^T B_2 + B_3 B_3^T`, CSR ``float64 [N2, N2]``.")
    L2_down = _cached("L2_down", "Lower 2-Laplacian :math:`B_2^T B_2`, CSR ``float64 [N2, N2]``.")
    L3 = _cached("L3", "Tetrahedron Laplacian :math:`B_3^T B_3`, CSR ``float64 [N3, N3]``.")

    # ------------------------------------------------------------------ any rank
    def incidence(self, rank: int) -> sp.csr_matrix:
        """Signed incidence :math:`B_k` ``float64 [N_{k-1}, N_k]`` for ``rank`` = k in
        ``1 .. 4`` (``B4`` is the empty ``[N3, 0]``); a ``ValueError`` for another rank."""
        rank = check_int(rank, "rank")
        if not 1 <= rank <= MAX_RANK + 1:
            raise ValueError(
                f"`rank` of an incidence matrix must lie in 1..{MAX_RANK + 1}, got {rank}"
            )
        if rank == MAX_RANK + 1:
            return sp.csr_matrix((self.num_tetrahedra, 0))
        return (self.B1, self.B2, self.B3)[int(rank) - 1]

    def down_laplacian(self, rank: int) -> sp.csr_matrix:
        """Lower Laplacian :math:`L_{k,\\downarrow} = B_k^T B_k` ``float64 [N_k, N_k]`` (zero
        for ``rank`` 0); a ``ValueError`` for a rank outside ``0 .. 3``."""
        self.num_simplices(rank)
        return self._get(f"L{int(rank)}_down")

    def up_laplacian(self, rank: int) -> sp.csr_matrix:
        """Upper Laplacian :math:`L_{k,\\uparrow} = B_{k+1} B_{k+1}^T` ``float64 [N_k, N_k]``
        (zero for ``rank`` 3); a ``ValueError`` for a rank outside ``0 .. 3``."""
        self.num_simplices(rank)
        return self._get(f"L{int(rank)}_up")

    def hodge_laplacian(self, rank: int, symmetric: bool = True) -> sp.csr_matrix:
        r"""Hodge Laplacian :math:`L_k = L_{k,\downarrow} + L_{k,\uparrow}` ``float64 [N_k,
        N_k]``; a ``ValueError`` for a rank outside ``0 .. 3``. On a weighted complex
        (:meth:`~topo_contrastive.ComplexOperators.with_weights`) it is the symmetric form
        :math:`\mathbf{W}_k^{1/2} \mathbf{L}_k \mathbf{W}_k^{-1/2}` (as are all the
        Laplacians of the complex), or with ``symmetric=False`` the weighted Hodge Laplacian
        :math:`\mathbf{L}_k = \mathbf{B}_k^* \mathbf{B}_k + \mathbf{B}_{k+1}
        \mathbf{B}_{k+1}^*` itself (:meth:`adjoint`), self-adjoint in the metric
        :math:`\mathbf{W}_k` (docs/weights.md)."""
        self.num_simplices(rank)
        k = int(rank)
        if symmetric or self.metric == "unweighted":
            return self._get(f"L{k}")
        up = self.incidence(k + 1) @ self.adjoint(k + 1)
        return _canonical(up + self.adjoint(k) @ self.incidence(k) if k else up)

    # ------------------------------------------------------------------ the metric
    def _star(self, rank: int) -> np.ndarray | None:
        """The weights of rank ``rank`` (``None``: all one)."""
        return self._stars[rank] if rank < len(self._stars) else None

    def hodge_star(self, rank: int) -> np.ndarray:
        r"""The Hodge star :math:`\mathbf{W}_k`: the weights ``float64 [N_k]`` of the cells of
        rank ``rank`` (``0 .. 3``) on its diagonal, ones on an unweighted complex; the inner
        product of :math:`k`-chains is :math:`\langle a, b \rangle = a^\top \mathbf{W}_k b`
        (:meth:`~topo_contrastive.ComplexOperators.with_weights`). A ``ValueError`` for
        another rank."""
        n = self.num_simplices(rank)  # checks the rank
        star = self._star(int(rank))
        return np.ones(n) if star is None else star.copy()

    def adjoint(self, rank: int) -> sp.csr_matrix:
        r"""The adjoint :math:`\mathbf{B}_k^* = \mathbf{W}_k^{-1} \mathbf{B}_k^\top
        \mathbf{W}_{k-1}` of :math:`\mathbf{B}_k` in the metric, CSR ``float64 [N_k,
        N_{k-1}]`` for ``rank`` = k in ``1 .. 4`` (``B_k^T`` on an unweighted complex):
        :math:`\langle \mathbf{B}_k a, b \rangle_{W_{k-1}} = \langle a, \mathbf{B}_k^* b
        \rangle_{W_k}`. A ``ValueError`` for another rank."""
        m = self.incidence(rank).T
        lo, hi = self._star(int(rank) - 1), self._star(int(rank))
        m = m if hi is None else sp.diags(1.0 / hi) @ m
        return _canonical(m if lo is None else m @ sp.diags(lo))

    def _scaled(self, rank: int) -> sp.csr_matrix:
        """``W_{k-1}^{1/2} B_k W_k^{-1/2}`` (cached; ``B_k`` itself where both stars are
        unit): the products of these are the symmetric forms of the Laplacians."""
        b, lo, hi = self.incidence(rank), self._star(rank - 1), self._star(rank)
        if lo is None and hi is None:
            return b
        if f"B{rank}~" not in self._cache:
            rows = np.ones(b.shape[0]) if lo is None else np.sqrt(lo)
            cols = np.ones(b.shape[1]) if hi is None else 1.0 / np.sqrt(hi)
            self._cache[f"B{rank}~"] = _canonical(sp.diags(rows) @ b @ sp.diags(cols))
        return self._cache[f"B{rank}~"]

    def _get(self, name: str) -> sp.csr_matrix:
        """The operator ``name`` of :data:`OPERATORS` as a canonical CSR matrix, cached."""
        if name in ("B1", "B2", "B3"):
            return self.incidence(int(name[1]))
        name = {"L_down": "L1_down", "L_up": "L1_up", "L0_up": "L0"}.get(name, name)
        if name not in self._cache:
            self._cache[name] = _canonical(_PRODUCTS[name](self))
        return self._cache[name]

    # ------------------------------------------------------------------ torch sparse
    def operator(
        self,
        name: str,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        layout: torch.layout = torch.sparse_coo,
    ) -> torch.Tensor:
        """One operator as a torch sparse tensor of its shape, on ``device`` with ``dtype``.

        Args:
            name: one of ``"B1", "B2", "B3", "L0", "L_down", "L_up", "L1", "L2",
                "L3"`` or ``"L{k}_down"`` / ``"L{k}_up"`` for ``k`` in ``0 .. 3``
                (``L_down`` is ``L1_down``, ``L_up`` is ``L1_up``).
            device: target device (default CPU).
            dtype: floating dtype (default ``torch.float32``).
            layout: ``torch.sparse_coo`` (default, coalesced) or ``torch.sparse_csr``.

        Raises:
            ValueError: unknown ``name`` or ``layout``; a ``device`` torch does not read.
            TypeError: ``dtype`` is not a floating dtype.
        """
        if name not in OPERATORS:
            raise ValueError(f"`name` must be one of {OPERATORS}, got {name!r}")
        device = check_device(device)
        if not dtype.is_floating_point:
            raise TypeError(f"`dtype` must be a floating dtype, got {dtype}")
        m = self._get(name)
        # the values converted as a dense vector: a sparse tensor's .to(dtype) is much slower
        if layout == torch.sparse_csr:
            t = torch.sparse_csr_tensor(
                torch.from_numpy(m.indptr.astype(np.int64)),
                torch.from_numpy(m.indices.astype(np.int64)),
                torch.from_numpy(m.data).to(dtype), size=m.shape, check_invariants=False,
            )  # fmt: skip
        elif layout == torch.sparse_coo:
            c = m.tocoo()
            t = torch.sparse_coo_tensor(
                torch.from_numpy(np.stack([c.row, c.col]).astype(np.int64)),
                torch.from_numpy(c.data).to(dtype), size=m.shape, is_coalesced=True,
                check_invariants=False,
            )  # fmt: skip
        else:
            raise ValueError(
                f"`layout` must be torch.sparse_csr or torch.sparse_coo, got {layout}"
            )
        return t if device is None else t.to(device=device)

    def laplacians(self, device: torch.device | str | None = None,
                   dtype: torch.dtype = torch.float32, rank: int = 1) -> Laplacians:  # fmt: skip
        """The :class:`~topo_contrastive.complex.Laplacians` of rank ``rank``
        (:math:`\\mathbf{L}_{k,\\downarrow}, \\mathbf{L}_{k,\\uparrow}`: rank 0 ``(0, L0)``,
        rank 2 ``(B2^T B2, B3 B3^T)``) as coalesced torch sparse COO ``[N_k, N_k]`` operators,
        built once per device, dtype and rank and then returned as they are (what the layers
        prepare on the value is reused). It unpacks as ``L_down, L_up = ops.laplacians()``.

        Args:
            device: target device (default CPU).
            dtype: floating dtype (default ``torch.float32``).
            rank: rank of the signals (default ``1``: edge flows).

        Raises:
            ValueError: ``rank`` is not a rank of the complex (see :meth:`check_rank`).
        """
        if rank == 1 and not isinstance(rank, bool):
            names = ("L_down", "L_up")
        else:
            rank = self.check_rank(rank)
            names = (f"L{rank}_down", f"L{rank}_up")
        place = torch.device("cpu" if check_device(device) is None else device)
        key = (str(place), dtype, names[0])
        cache = self.__dict__.setdefault("_laplacian_pairs", {})
        if key not in cache:
            pair = (self.operator(n, device=device, dtype=dtype) for n in names)
            cache[key] = Laplacians(*pair, complex=self, rank=int(rank), symmetric=True)
        return cache[key]

    # ------------------------------------------------------------------ edge look-ups
    def _edge_positions(
        self, u: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(columns, signs, found)`` of the oriented node pairs ``(u, v)`` (int64 arrays)."""
        if u.shape != v.shape:
            raise ValueError(f"`u` and `v` must have the same shape, got {u.shape} and {v.shape}")
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        inrange = (lo >= 0) & (hi < self.num_nodes) & (lo != hi)
        pos, found = _find(self._sorted_keys, np.where(inrange, lo * self.num_nodes + hi, -1))
        if not self.num_edges:
            return pos, np.ones(pos.shape), inrange & found
        col = self._key_order[pos]
        return col, np.where(self.edges[col, 0] == u, 1.0, -1.0), inrange & found

    def edge_lookup(self, u: Any, v: Any) -> tuple[np.ndarray, np.ndarray]:
        """Map oriented node pairs ``(u, v)`` (scalars or arrays of one shape) to ``(column,
        sign)``: ``int64`` and ``float64`` arrays shaped like ``u``, ``sign`` ``+1`` where the
        edge is stored ``u -> v`` and ``-1`` where ``v -> u``.

        Raises:
            ValueError: some ``(u, v)`` is not an edge of the complex (says which).
        """
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        col, sign, found = self._edge_positions(u, v)
        if not np.all(found):
            i = tuple(np.argwhere(~np.atleast_1d(found))[0])
            uu, vv = np.atleast_1d(u)[i], np.atleast_1d(v)[i]
            raise ValueError(f"({int(uu)}, {int(vv)}) is not an edge of the complex")
        return col, sign

    def path_to_flow(
        self,
        path: Sequence[int] | np.ndarray | torch.Tensor,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Edge flow ``[N1]`` of a node path: every step ``a -> b`` adds ``+1`` to its edge
        along the stored orientation, ``-1`` against it (an edge traversed several times
        accumulates). The nodes are the complex's own labels: TopoNetX's (``node_labels``) for
        a complex built :meth:`~topo_contrastive.ComplexOperators.from_toponetx`, else the
        node ids ``0 .. N0 - 1``.

        Args:
            path: sequence of at least one node (id, or label of a TopoNetX complex).
            dtype: output floating dtype (default ``torch.float32``).
            device: output device (default CPU).

        Raises:
            ValueError: an empty path, node ids that are not integers, a node that is not
                a label of the complex, or a step of the path that is not an edge (says
                which step).
        """
        if self._label_rows is not None:
            path = self._rows_of_labels(path, self._label_rows)
        raw = np.asarray(path.detach().cpu().numpy() if isinstance(path, torch.Tensor) else path)
        integral = raw.dtype.kind in "iu" or (
            raw.dtype.kind == "f" and bool(np.all(np.isfinite(raw) & (raw % 1 == 0)))
        )
        if raw.ndim > 1 or raw.size == 0 or not integral:
            raise ValueError(
                f"`path` must be a 1-D sequence of at least one integer node id, got dtype "
                f"{raw.dtype} and shape {tuple(raw.shape)}"
                + (f" ({raw.ravel()[:4].tolist()}...)" if raw.size and not integral else "")
            )
        p = raw.astype(np.int64).ravel()
        flow = np.zeros(self.num_edges, dtype=np.float64)
        if p.size >= 2:
            col, sign, found = self._edge_positions(p[:-1], p[1:])
            if not found.all():
                bad = int(np.flatnonzero(~found)[0])
                name = [self.node_labels[i] if self.node_labels is not None else i
                        for i in (int(p[bad]), int(p[bad + 1]))]  # fmt: skip
                raise ValueError(
                    f"step {bad} of the path, {name[0]!r} -> {name[1]!r}, is not an edge of "
                    "the complex"
                )
            np.add.at(flow, col, sign)
        return torch.from_numpy(flow).to(device=device, dtype=dtype)

    @staticmethod
    def _rows_of_labels(path: Any, labels: dict[Any, int]) -> np.ndarray:
        """Rows of ``B1`` of a path in a TopoNetX complex's node labels."""
        if isinstance(path, (torch.Tensor, np.ndarray)):
            path = path.tolist()
        if isinstance(path, (str, bytes)) or not isinstance(path, Sequence) or not path:
            raise ValueError(
                "`path` must be a non-empty sequence of node labels of the complex, got "
                f"{path!r}"
            )
        rows = []
        for i, node in enumerate(path):
            node = tuple(node) if isinstance(node, list) else node  # a tuple label, read back
            try:
                rows.append(labels[node])
            except (KeyError, TypeError):
                raise ValueError(
                    f"node {i} of the path, {node!r}, is not a node label of the complex "
                    f"(labels such as {list(labels)[:3]!r})"
                ) from None
        return np.asarray(rows, dtype=np.int64)

    def divergence(self, x: torch.Tensor) -> torch.Tensor:
        """Node divergence :math:`B_1 x` ``[N0]`` or ``[B, N0]`` of edge flows ``x`` ``[N1]`` or
        ``[B, N1]``, on ``x``'s device and dtype; a ``ValueError`` where the last dimension of
        ``x`` is not ``N1``."""
        if x.shape[-1] != self.num_edges:
            raise ValueError(
                f"`x` must have {self.num_edges} entries (edges) in its last dimension, "
                f"got shape {tuple(x.shape)}"
            )
        b1 = self.operator("B1", device=x.device, dtype=x.dtype)
        return (b1 @ x.reshape(-1, self.num_edges).T).T.reshape(*x.shape[:-1], self.num_nodes)
