r"""The ``"blocks"`` backend: the exact backend on every connected component, batched.

A PyG batch of many small complexes is one complex whose operators are block-diagonal; so
is any complex with several connected components. The Hodge subspaces of such a complex
are the direct sums of those of its components, so every edge flow decomposes component
by component and every projector :math:`\mathbf{P}_k` is block-diagonal. This backend
computes, for every component :math:`c` with :math:`N_{0,c}` nodes, :math:`N_{1,c}`
edges and :math:`N_{2,c}` 2-cells, the orthonormal eigenbases of the exact backend,

.. math::
    \mathbf{U}_{G,c} = \mathbf{B}_{1,c}^\top \mathbf{V}_c \boldsymbol{\Lambda}_c^{-1/2},
    \qquad
    \mathbf{U}_{C,c} = \mathbf{B}_{2,c} \mathbf{W}_c \mathbf{M}_c^{-1/2},

from the eigenpairs :math:`(\boldsymbol{\Lambda}_c, \mathbf{V}_c)` of
:math:`\mathbf{L}_{0,c}` and :math:`(\mathbf{M}_c, \mathbf{W}_c)` of
:math:`\mathbf{L}_{2,c} = \mathbf{B}_{2,c}^\top\mathbf{B}_{2,c}` (non-zero eigenvalues
only), with one batched ``torch.linalg.eigh`` per group of components of similar sizes
(padded: a padded row is zero and adds only zero eigenvalues, which are dropped). The
harmonic part is the rest, :math:`\mathbf{x}_H = \mathbf{x} - \mathbf{x}_G - \mathbf{x}_C`,
and :math:`\mathbf{P}_H[S, S] = \mathbf{I} - \mathbf{P}_G[S, S] - \mathbf{P}_C[S, S]`.
Memory :math:`O(\sum_c N_{1,c}(N_{0,c} + N_{2,c}))`: linear in the number of components,
never a dense matrix of the whole complex. Edge flows (rank 1) only.
"""

from __future__ import annotations

import numpy as np
import torch

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge.backend import HodgeBackend
from topo_contrastive.hodge.linalg import connected_components
from topo_contrastive.hodge.parts import COMPONENTS

__all__ = ["BlockwiseBackend", "edge_components"]

#: Components of one group differ in edge count by at most this factor (+8): bounded padding.
_GROUP_GROWTH = 1.5
#: Largest padded ``[G, N1, N0 + N2]`` basis entries of one group.
_GROUP_ENTRIES = 2**24


def edge_components(ops: ComplexOperators) -> tuple[int, np.ndarray, np.ndarray]:
    """``(count, node_label [N0], edge_label [N1])``: the connected components of the
    complex's graph and the component of every node and edge."""
    count, labels = connected_components(ops.L0)
    edge_label = labels[ops.edges[:, 0]] if ops.num_edges else np.zeros(0, dtype=np.int64)
    return int(count), labels.astype(np.int64), edge_label.astype(np.int64)


def _local_index(labels: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Position of every item within its component (in item order) and the size of each
    component."""
    sizes = np.bincount(labels, minlength=count)
    order = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    local = np.empty_like(labels)
    local[order] = np.arange(labels.size) - np.repeat(starts, sizes)
    return local, sizes


class _Group:
    """The padded bases of a group of components of similar sizes."""

    __slots__ = ("comps", "curl", "edges", "grad", "n1")

    def __init__(self, comps: np.ndarray, edges: np.ndarray, grad: torch.Tensor,
                 curl: torch.Tensor, n1: np.ndarray) -> None:  # fmt: skip
        self.comps = comps  # component ids [G]
        self.edges = edges  # [G, n1max] edge ids, -1 where padded
        self.grad = grad  # [G, n1max, n0max] float64, zero columns where dropped
        self.curl = curl  # [G, n1max, n2max]
        self.n1 = n1  # [G] edges per component


class BlockwiseBackend(HodgeBackend):
    """Exact eigenbases of every connected component, batched (edge flows)."""

    name = "blocks"

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        super().__init__(complex, rank, tol)
        if rank != 1:
            raise ValueError("the 'blocks' backend decomposes edge flows (rank 1) only")
        ops = complex
        count, node_label, edge_label = edge_components(ops)
        b2 = ops.B2.tocsc()
        b2.sort_indices()
        face_edge = b2.indices[b2.indptr[:-1]] if ops.num_faces else np.zeros(0, dtype=np.int64)
        face_label = edge_label[face_edge] if ops.num_faces else np.zeros(0, dtype=np.int64)
        node_local, n0 = _local_index(node_label, count)
        edge_local, n1 = _local_index(edge_label, count)
        face_local, n2 = _local_index(face_label, count)
        self._edge_label = edge_label
        self._edge_local = edge_local
        self._group_of = np.full(count, -1, dtype=np.int64)  # component -> group
        self._slot = np.full(count, -1, dtype=np.int64)  # component -> index in its group
        self._groups: list[_Group] = []
        grad_dim = curl_dim = 0
        b1 = ops.B1.tocoo()
        b2c = b2.tocoo()
        with_edges = np.flatnonzero(n1 > 0)
        for comps in _groups(with_edges, n1, n0, n2):
            g = len(self._groups)
            self._group_of[comps] = g
            self._slot[comps] = np.arange(comps.size)
            m0, m1, m2 = int(n0[comps].max()), int(n1[comps].max()), int(n2[comps].max())
            slot_of_edge = self._slot[edge_label]
            in_group = self._group_of[edge_label] == g
            edges = np.full((comps.size, m1), -1, dtype=np.int64)
            eids = np.flatnonzero(in_group)
            edges[slot_of_edge[eids], edge_local[eids]] = eids
            # B1 [G, m0, m1] and B2 [G, m1, m2] of the group, padded
            B1 = torch.zeros(comps.size, m0, m1, dtype=torch.float64)
            sel = in_group[b1.col]
            B1[slot_of_edge[b1.col[sel]], node_local[b1.row[sel]], edge_local[b1.col[sel]]] = (
                torch.from_numpy(b1.data[sel])
            )
            B2 = torch.zeros(comps.size, m1, max(m2, 0), dtype=torch.float64)
            if m2:
                sel2 = in_group[b2c.row]
                B2[slot_of_edge[b2c.row[sel2]], edge_local[b2c.row[sel2]],
                   face_local[b2c.col[sel2]]] = torch.from_numpy(b2c.data[sel2])  # fmt: skip
            grad, kept0 = _eigenbasis(B1.transpose(1, 2), B1 @ B1.transpose(1, 2), n0[comps] - 1)
            if m2:
                curl, kept2 = _eigenbasis(B2, B2.transpose(1, 2) @ B2, None, tol)
            else:
                curl, kept2 = torch.zeros(comps.size, m1, 0, dtype=torch.float64), 0
            grad_dim += kept0
            curl_dim += kept2
            self._groups.append(_Group(comps, edges, grad, curl, n1[comps]))
        self._dims = {
            "gradient": int(grad_dim),
            "curl": int(curl_dim),
            "harmonic": int(ops.num_edges - grad_dim - curl_dim),
        }

    @property
    def dims(self) -> dict[str, int]:
        return self._dims

    def basis(self, index: int) -> np.ndarray | None:
        return None  # a basis of the whole complex would be dense; the parts need none

    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        xt = torch.from_numpy(np.asarray(x, dtype=np.float64))  # [B, N1]
        grad = torch.zeros_like(xt)
        curl = torch.zeros_like(xt)
        for grp in self._groups:
            idx = torch.from_numpy(grp.edges)  # [G, m1]
            valid = idx >= 0
            safe = idx.clamp_min(0)
            xg = xt[:, safe] * valid  # [B, G, m1]
            for basis, out in ((grp.grad, grad), (grp.curl, curl)):
                if basis.shape[-1] == 0:
                    continue
                coef = torch.einsum("gen,bge->bgn", basis, xg)
                part = torch.einsum("gen,bgn->bge", basis, coef)  # [B, G, m1]
                out[:, safe[valid]] = part[:, valid]
        x64 = xt
        return [grad.numpy(), curl.numpy(), (x64 - grad - curl).numpy()]

    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        for s in sets:
            s = np.asarray(s, dtype=np.int64)
            labels = self._edge_label[s]
            pg = np.zeros((s.size, s.size))
            pc = np.zeros((s.size, s.size))
            for c in np.unique(labels):
                rows = np.flatnonzero(labels == c)
                grp = self._groups[int(self._group_of[c])]
                slot, local = int(self._slot[c]), self._edge_local[s[rows]]
                for basis, out in ((grp.grad, pg), (grp.curl, pc)):
                    if basis.shape[-1]:
                        u = basis[slot, local].numpy()  # [|rows|, m]
                        out[np.ix_(rows, rows)] = u @ u.T
            blocks["gradient"].append(pg)
            blocks["curl"].append(pc)
            blocks["harmonic"].append(np.eye(s.size) - pg - pc)
        return blocks


def _groups(
    comps: np.ndarray, n1: np.ndarray, n0: np.ndarray, n2: np.ndarray
) -> list[np.ndarray]:
    """Components sorted by edge count, split into groups of similar sizes and bounded
    padded entries."""
    order = comps[np.argsort(n1[comps], kind="stable")]
    out: list[np.ndarray] = []
    start = 0
    while start < order.size:
        lo = int(n1[order[start]])
        stop = start + 1
        while stop < order.size:
            c = order[stop]
            width = int(n1[c])
            cand = order[start : stop + 1]
            entries = (stop + 1 - start) * width * int(n0[cand].max() + n2[cand].max() + 1)
            if width > _GROUP_GROWTH * lo + 8 or entries > _GROUP_ENTRIES:
                break
            stop += 1
        out.append(order[start:stop])
        start = stop
    return out


def _eigenbasis(
    B: torch.Tensor, gram: torch.Tensor, keep: np.ndarray | None, tol: float = 0.0
) -> tuple[torch.Tensor, int]:
    """``B V diag(lam)^-1/2`` for the non-zero eigenpairs ``(lam, V)`` of ``gram`` per
    component (``[G, n, m]`` with zero columns where dropped) and their total count.

    ``keep`` gives the number of non-zero eigenvalues per component (the largest ones:
    ``N0 - 1`` for a connected component's ``L0``); ``None`` selects them by the relative
    threshold of the exact backend, ``lam > 1e3 tol max(1, lam_max)``.
    """
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
        top = lam[:, -1:].clamp_min(1.0)
        mask = lam > tol * 1e3 * top
    scale = torch.where(mask, lam.clamp_min(1e-300).rsqrt(), torch.zeros_like(lam))
    basis = (B @ vec) * scale[:, None, :]  # [G, n, m]
    return basis, int(mask.sum())
