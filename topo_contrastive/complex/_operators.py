"""Operators of a complex: signed incidence matrices and Hodge Laplacians of every rank.

:class:`OperatorsMixin` gives :class:`~topo_contrastive.complex.ComplexOperators` its
Laplacians as scipy CSR matrices (properties ``L0``, ``L_down``, ``L_up``, ``L1``,
``L2``, ``L2_down``, ``L3``; any rank with :meth:`~OperatorsMixin.incidence`,
:meth:`~OperatorsMixin.down_laplacian`, :meth:`~OperatorsMixin.up_laplacian`,
:meth:`~OperatorsMixin.hodge_laplacian`), computed once and cached, and as torch sparse
tensors (:meth:`~OperatorsMixin.operator`, :meth:`~OperatorsMixin.laplacians`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.utils.checks import check_device, check_int

__all__ = ["MAX_RANK", "OPERATORS", "OperatorsMixin"]

#: Highest rank of a simplex the class stores.
MAX_RANK = 3
#: Names that :meth:`OperatorsMixin.operator` accepts.
OPERATORS = ("B1", "B2", "B3", "L0", "L_down", "L_up", "L1", "L2", "L3") + tuple(
    f"L{k}_{part}" for k in range(4) for part in ("down", "up")
)


class OperatorsMixin:
    """Incidence matrices and Laplacians of every rank, scipy and torch forms, cached.

    Mixed into :class:`~topo_contrastive.complex.ComplexOperators`, which holds the
    incidence matrices, the sizes and the cache, and checks the ranks.
    """

    if TYPE_CHECKING:  # provided by ComplexOperators
        B1: sp.csr_matrix
        B2: sp.csr_matrix
        B3: sp.csr_matrix
        num_nodes: int

        def fingerprint(self) -> str: ...
        num_tetrahedra: int
        _cache: dict[str, sp.csr_matrix]

        def check_rank(self, rank: Any, what: str = "rank") -> int: ...

        def num_simplices(self, rank: int) -> int: ...

    # ------------------------------------------------------------------ scipy CSR, cached
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

    # ------------------------------------------------------------------ any rank
    def incidence(self, rank: int) -> sp.csr_matrix:
        """Signed incidence :math:`B_k` ``float64 [N_{k-1}, N_k]`` for ``rank`` = k in
        ``1 .. 4`` (``B4`` is the empty ``[N3, 0]``: no simplices of rank 4).

        Raises:
            TypeError / ValueError: ``rank`` not an int in ``1 .. 4``.
        """
        rank = check_int(rank, "rank")
        if not 1 <= rank <= MAX_RANK + 1:
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

    # ------------------------------------------------------------------ torch sparse
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
            ValueError: unknown ``name`` or ``layout``; a ``device`` torch does not read
                (e.g. ``"gpu0"``).
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
                torch.from_numpy(m.data).to(dtype),
                size=m.shape,
                check_invariants=False,
            )
            return t if device is None else t.to(device=device)
        if layout == torch.sparse_coo:
            c = m.tocoo()
            idx = torch.from_numpy(np.stack([c.row, c.col]).astype(np.int64))
            t = torch.sparse_coo_tensor(
                idx,
                torch.from_numpy(c.data).to(dtype),
                size=m.shape,
                is_coalesced=True,
                check_invariants=False,
            )
            return t if device is None else t.to(device=device)
        raise ValueError(f"`layout` must be torch.sparse_csr or torch.sparse_coo, got {layout}")

    def laplacians(
        self,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        rank: int = 1,
    ) -> Laplacians:
        """The :class:`~topo_contrastive.complex.Laplacians` of rank ``rank``: coalesced torch
        sparse COO ``[N_k, N_k]`` operators with this complex, built once per device, dtype
        and rank and then returned as they are (so that what the layers prepare on the value
        is reused across calls).

        The filter of signals on the simplices of rank k uses
        :math:`(\\mathbf{L}_{k,\\downarrow}, \\mathbf{L}_{k,\\uparrow})` (rank 0:
        ``(0, L0)``; rank 2: ``(B2^T B2, B3 B3^T)``, the latter zero without tetrahedra).
        It unpacks as the pair: ``L_down, L_up = ops.laplacians()``.

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
