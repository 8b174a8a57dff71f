"""The backends' interface, and the two that keep dense orthonormal eigenbases: ``"exact"`` (of
the whole complex) and ``"blocks"`` (of every connected component, batched); docs/design.md §7.1."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge._linalg import connected_components
from topo_contrastive.hodge.parts import COMPONENTS
from topo_contrastive.hodge.ranks import exact_rank

#: The most memory the exact backend's dense matrices may take (8 GiB); above it
#: ``backend="exact"`` is refused and ``backend="auto"`` chooses another backend.
MAX_EXACT_BYTES = 8 * 2**30
#: Components of one group differ in edge count by at most this factor (+8): bounded padding.
_GROUP_GROWTH = 1.5
#: Largest padded ``[G, N1, N0 + N2]`` basis entries of one group.
_GROUP_ENTRIES = 2**24


class HodgeBackend(ABC):
    """The Hodge decomposition of signals of one rank on one complex, in numpy.

    The decomposition validates inputs and restores layouts, dtypes and devices; a backend
    answers on ``float64 [B, N_k]`` signals. Every backend projects orthogonally in the
    standard inner product of :math:`\\mathbb{R}^{N_k}`: on a weighted complex that of the
    scaled signals :math:`\\mathbf{W}_k^{1/2} \\mathbf{x}`, with the incidences
    :meth:`incidence` in the metric (docs/weights.md).
    """

    name: ClassVar[str]
    #: Dimensions of the gradient, curl and harmonic subspaces.
    dims: dict[str, int]

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        self.complex, self.rank, self.tol = complex, rank, tol
        star = complex._star(rank)  # W_k (None: the identity)
        self.scale = None if star is None else 1.0 / np.sqrt(star)  # W_k^-1/2, [N_k]

    def incidence(self, k: int) -> sp.csr_matrix:
        """``B_k`` (``k`` = rank) or ``B_{k+1}`` (``k`` = rank + 1) in the metric of the rank:
        ``B_k W_k^-1/2`` and ``W_k^1/2 B_{k+1}`` (the incidence itself where unweighted)."""
        b = self.complex.incidence(k)
        if self.scale is None:
            return b
        lower = k == self.rank
        if self.complex._star(k - 1 if lower else k) is None:  # the complex's own, cached
            return self.complex._scaled(k)
        d = sp.diags(self.scale if lower else 1.0 / self.scale)
        return sp.csr_matrix(b @ d if lower else d @ b)

    @property
    def num_simplices(self) -> int:
        """:math:`N_k`, the length of the signals."""
        return self.complex.num_simplices(self.rank)

    @abstractmethod
    def basis(self, index: int) -> np.ndarray | None:
        """Orthonormal basis ``[N_k, dim]`` of ``COMPONENTS[index]`` (read only), or ``None``."""

    @abstractmethod
    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        """Gradient, curl and harmonic parts ``[B, N_k]`` of the signals ``x [B, N_k]``."""

    def decompose_scaled(self, x: np.ndarray, into: np.ndarray) -> list[np.ndarray]:
        """The parts ``p(x * into) / into`` (float64): a metric's decomposition (``into`` =
        ``W^1/2``) or its adjoint (``W^-1/2``)."""
        return [o / into for o in self.decompose(x.astype(np.float64) * into)]

    @abstractmethod
    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        """``{component: [P[S, S], ...]}``: the projectors' blocks on every index set ``S``."""


def _nodes_with_edges(ops: ComplexOperators) -> np.ndarray:
    """The nodes that bound at least one edge, ``int64 [n]`` ascending."""
    return np.flatnonzero(np.diff(ops.B1.tocsr().indptr) > 0)


def exact_bytes(complex: ComplexOperators, rank: int) -> int:
    """Bytes of the exact backend's dense matrices: each Gram matrix with its eigenvectors
    (rank 1: ``L0`` on the nodes with edges and ``L2``; else the smaller Gram matrix of each
    incidence) and the ``N_k x N_k`` bases."""
    sizes = complex.sizes
    n = int(sizes[rank])
    if rank == 1:
        grams = [int(_nodes_with_edges(complex).size), int(sizes[2])]
    else:
        grams = [min(int(sizes[rank - 1]), n)] if rank > 0 else []
        if rank + 1 < len(sizes):
            grams.append(min(n, int(sizes[rank + 1])))
    return 8 * (2 * sum(g * g for g in grams) + 2 * n * n)


def nonzero_eigenbasis(b: sp.csr_matrix, side: str, rank: int) -> np.ndarray:
    """Orthonormal basis of ``im(b)`` (``side="left"``) or ``im(b^T)`` (``"right"``) from the
    ``rank`` largest eigenpairs of the smaller Gram matrix of ``b``."""
    rows, cols = b.shape
    n = rows if side == "left" else cols
    if min(rows, cols) == 0 or b.nnz == 0 or rank == 0:
        return np.zeros((n, 0))
    small_is_cols = cols <= rows
    evals, evecs = np.linalg.eigh((b.T @ b if small_is_cols else b @ b.T).toarray())
    nz = np.arange(evals.size) >= evals.size - rank
    lam, v = evals[nz], evecs[:, nz]
    if (side == "right") == small_is_cols:
        return v  # eigenvectors of the Gram matrix on the wanted side
    other = b @ v if side == "left" else b.T @ v
    return np.asarray(other) / np.sqrt(lam)


class ExactBackend(HodgeBackend):
    """Eigenbases ``[U_G, U_C, U_H]`` of signals of one rank; parts ``U_k U_k^T x``."""

    name = "exact"

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        need = exact_bytes(complex, rank)
        if need > MAX_EXACT_BYTES:
            sizes = tuple(int(v) for v in complex.sizes[:3])
            raise ValueError(
                f"backend='exact' forms dense matrices of {need / 2**30:.1f} GiB for this complex "
                f"((N0, N1, N2) = {sizes}, rank {rank}), above its budget of "
                f"{MAX_EXACT_BYTES / 2**30:.0f} GiB: use backend='iterative' (sparse solves) or "
                "'blocks' (exact per connected component), or backend='auto'"
            )
        super().__init__(complex, rank, tol)
        if rank == 1:
            grad, curl = self._edge_bases()
        else:
            grad = np.zeros((self.num_simplices, 0))
            if rank > 0:
                b = complex.incidence(rank)
                grad = nonzero_eigenbasis(self.incidence(rank), "right", exact_rank(b, f"B{rank}"))
            b = complex.incidence(rank + 1)
            curl = nonzero_eigenbasis(self.incidence(rank + 1), "left",
                                      exact_rank(b, f"B{rank + 1}"))  # fmt: skip
        self._bases = [grad, curl, _complement_basis(grad, curl)]
        self.dims = {k: int(u.shape[1]) for k, u in zip(COMPONENTS, self._bases, strict=True)}

    def _edge_bases(self) -> tuple[np.ndarray, np.ndarray]:
        """Rank 1: ``U_G = B1^T V / sqrt(lam)`` from the eigenpairs of ``L0`` with ``lam > 0``
        (on the nodes with edges), ``U_C = B2 W / sqrt(mu)`` from the ``rank B2`` largest of
        ``L2``."""
        ops, weighted = self.complex, self.scale is not None
        b1, b2 = self.incidence(1), self.incidence(2)  # in the metric (W0 = W2 = I)
        l0 = b1 @ b1.T if weighted else ops.L0
        num_components, _ = connected_components(l0)
        grad = np.zeros((ops.num_edges, 0))
        if ops.num_nodes - num_components > 0:
            used = _nodes_with_edges(ops)  # nodes without edges: a zero eigenvalue each
            skip = num_components - (ops.num_nodes - used.size)  # components with edges
            evals, evecs = np.linalg.eigh(l0[used][:, used].toarray())
            lam, v = evals[skip:], evecs[:, skip:]
            grad = (b1[used].T @ v) / np.sqrt(lam)  # [N1, N0 - beta_0]
        curl = np.zeros((ops.num_edges, 0))
        if ops.num_faces:
            evals, evecs = np.linalg.eigh((b2.T @ b2 if weighted else ops.L2_down).toarray())
            nz = np.arange(evals.size) >= evals.size - exact_rank(ops.B2, "B2")
            curl = (b2 @ evecs[:, nz]) / np.sqrt(evals[nz])  # [N1, N2 - beta_2]
        return grad, curl

    def basis(self, index: int) -> np.ndarray:
        return self._bases[index]

    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        xn = np.asarray(x, dtype=np.float64).T  # [N, B]
        return [np.ascontiguousarray((u @ (u.T @ xn)).T) for u in self._bases]

    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        for s in sets:
            for k, u in zip(COMPONENTS, self._bases, strict=True):
                us = u[s]  # [|S|, dim_k]
                blocks[k].append(us @ us.T)
        return blocks


def _complement_basis(grad: np.ndarray, curl: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the complement of two orthonormal bases (the harmonic one)."""
    n = grad.shape[0]
    beta = n - grad.shape[1] - curl.shape[1]
    if beta < 0:  # pragma: no cover - numerical safety net
        raise RuntimeError("gradient and curl eigenbases overlap; adjust `tol`")
    if not beta:
        return np.zeros((n, 0))
    h = np.random.default_rng(0).standard_normal((n, beta))
    for _ in range(2):  # project twice: removes the round-off of the first pass
        h = h - grad @ (grad.T @ h) - curl @ (curl.T @ h)
        h, _ = np.linalg.qr(h)
    return h


def edge_components(ops: ComplexOperators) -> tuple[int, np.ndarray, np.ndarray]:
    """``(count, node_label [N0], edge_label [N1])`` of the connected components."""
    count, labels = connected_components(ops.L0)
    edge_label = labels[ops.edges[:, 0]] if ops.num_edges else np.zeros(0, dtype=np.int64)
    return int(count), labels.astype(np.int64), edge_label.astype(np.int64)


def _local_index(labels: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Position of every item within its component (in item order), and the components' sizes."""
    sizes = np.bincount(labels, minlength=count)
    order = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    local = np.empty_like(labels)
    local[order] = np.arange(labels.size) - np.repeat(starts, sizes)
    return local, sizes


class BlockwiseBackend(HodgeBackend):
    """Exact eigenbases of every connected component, padded and batched in groups of
    components of similar sizes (edge flows); the harmonic part is the remainder."""

    name = "blocks"

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        super().__init__(complex, rank, tol)
        if rank != 1:
            raise ValueError("the 'blocks' backend decomposes edge flows (rank 1) only")
        ops = complex
        count, node_label, self._edge_label = edge_components(ops)
        b2 = ops.B2.tocsc()
        b2.sort_indices()
        empty = np.zeros(0, dtype=np.int64)
        face_label = self._edge_label[b2.indices[b2.indptr[:-1]]] if ops.num_faces else empty
        node_local, n0 = _local_index(node_label, count)
        self._edge_local, n1 = _local_index(self._edge_label, count)
        face_local, n2 = _local_index(face_label, count)
        self._group_of = np.full(count, -1, dtype=np.int64)  # component -> group
        self._slot = np.full(count, -1, dtype=np.int64)  # component -> index in its group
        # per group: edge ids [G, m1] (-1 where padded), bases [G, m1, m] (zero columns where
        # dropped) of the gradient and the curl
        self._groups: list[tuple[np.ndarray, torch.Tensor, torch.Tensor]] = []
        dims = [0, 0]
        b1, b2c = self.incidence(1).tocoo(), self.incidence(2).tocoo()
        for comps in _groups(np.flatnonzero(n1 > 0), n1, n0, n2):
            g = len(self._groups)
            self._group_of[comps] = g
            self._slot[comps] = np.arange(comps.size)
            m0, m1, m2 = int(n0[comps].max()), int(n1[comps].max()), int(n2[comps].max())
            slot_of_edge = self._slot[self._edge_label]
            in_group = self._group_of[self._edge_label] == g
            edges = np.full((comps.size, m1), -1, dtype=np.int64)
            eids = np.flatnonzero(in_group)
            edges[slot_of_edge[eids], self._edge_local[eids]] = eids
            # B1 [G, m0, m1] and B2 [G, m1, m2] of the group, padded
            B1 = torch.zeros(comps.size, m0, m1, dtype=torch.float64)
            sel = in_group[b1.col]
            B1[slot_of_edge[b1.col[sel]], node_local[b1.row[sel]],
               self._edge_local[b1.col[sel]]] = torch.from_numpy(b1.data[sel])  # fmt: skip
            B2 = torch.zeros(comps.size, m1, m2, dtype=torch.float64)
            sel = in_group[b2c.row]
            B2[slot_of_edge[b2c.row[sel]], self._edge_local[b2c.row[sel]],
               face_local[b2c.col[sel]]] = torch.from_numpy(b2c.data[sel])  # fmt: skip
            grad, kept0 = _eigenbasis(B1.transpose(1, 2), B1 @ B1.transpose(1, 2), n0[comps] - 1)
            curl, kept2 = torch.zeros(comps.size, m1, 0, dtype=torch.float64), 0
            if m2:
                curl, kept2 = _eigenbasis(B2, B2.transpose(1, 2) @ B2, None, tol,
                                          relative=self.scale is not None)  # fmt: skip
            dims[0] += kept0
            dims[1] += kept2
            self._groups.append((edges, grad, curl))
        self.dims = {"gradient": int(dims[0]), "curl": int(dims[1]),
                     "harmonic": int(ops.num_edges - dims[0] - dims[1])}  # fmt: skip

    def basis(self, index: int) -> None:
        return None  # a basis of the whole complex would be dense; the parts need none

    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        xt = torch.from_numpy(np.asarray(x, dtype=np.float64))  # [B, N1]
        grad, curl = torch.zeros_like(xt), torch.zeros_like(xt)
        for edges, *bases in self._groups:
            idx = torch.from_numpy(edges)  # [G, m1]
            valid = idx >= 0
            safe = idx.clamp_min(0)
            xg = xt[:, safe] * valid  # [B, G, m1]
            for basis, out in zip(bases, (grad, curl), strict=True):
                if basis.shape[-1] == 0:
                    continue
                coef = torch.einsum("gen,bge->bgn", basis, xg)
                part = torch.einsum("gen,bgn->bge", basis, coef)  # [B, G, m1]
                out[:, safe[valid]] = part[:, valid]
        return [grad.numpy(), curl.numpy(), (xt - grad - curl).numpy()]

    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        for s in sets:
            s = np.asarray(s, dtype=np.int64)
            labels = self._edge_label[s]
            pg, pc = np.zeros((s.size, s.size)), np.zeros((s.size, s.size))
            for c in np.unique(labels):
                rows = np.flatnonzero(labels == c)
                _, *bases = self._groups[int(self._group_of[c])]
                slot, local = int(self._slot[c]), self._edge_local[s[rows]]
                for basis, out in zip(bases, (pg, pc), strict=True):
                    if basis.shape[-1]:
                        u = basis[slot, local].numpy()  # [|rows|, m]
                        out[np.ix_(rows, rows)] = u @ u.T
            for k, p in zip(COMPONENTS, (pg, pc, np.eye(s.size) - pg - pc), strict=True):
                blocks[k].append(p)
        return blocks


def _groups(comps: np.ndarray, n1: np.ndarray, n0: np.ndarray, n2: np.ndarray) -> list[np.ndarray]:
    """Components sorted by edge count, in groups of similar sizes and bounded padding."""
    order = comps[np.argsort(n1[comps], kind="stable")]
    out: list[np.ndarray] = []
    start = 0
    while start < order.size:
        lo = int(n1[order[start]])
        stop = start + 1
        while stop < order.size:
            width = int(n1[order[stop]])
            cand = order[start : stop + 1]
            entries = (stop + 1 - start) * width * int(n0[cand].max() + n2[cand].max() + 1)
            if width > _GROUP_GROWTH * lo + 8 or entries > _GROUP_ENTRIES:
                break
            stop += 1
        out.append(order[start:stop])
        start = stop
    return out


def _eigenbasis(
    B: torch.Tensor, gram: torch.Tensor, keep: np.ndarray | None, tol: float = 0.0,
    relative: bool = False,
) -> tuple[torch.Tensor, int]:
    """``B V diag(lam)^-1/2`` ``[G, n, m]`` for the non-zero eigenpairs of ``gram`` per
    component (``keep`` largest, or ``lam > 1e3 tol max(1, lam_max)``; ``relative``: ``lam >
    1e3 tol lam_max``, for weights of any scale), and their count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # many small problems: threads only add overhead (30x measured)
    try:
        lam, vec = torch.linalg.eigh(gram)  # ascending, [G, m], [G, m, m]
    finally:
        torch.set_num_threads(threads)
    m = lam.shape[1]
    if keep is not None:
        first = m - torch.from_numpy(np.asarray(keep, dtype=np.int64))  # [G]
        mask = torch.arange(m)[None, :] >= first[:, None]
    else:
        mask = lam > tol * 1e3 * lam[:, -1:].clamp_min(0.0 if relative else 1.0)
    scale = torch.where(mask, lam.clamp_min(1e-300).rsqrt(), torch.zeros_like(lam))
    return (B @ vec) * scale[:, None, :], int(mask.sum())
