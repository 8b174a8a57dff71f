r"""The ``"exact"`` backend: dense orthonormal eigenbases of the three subspaces.

Rank 1 (edge flows) as in the paper: :math:`\mathbf{U}_G` from the eigenpairs of
:math:`\mathbf{L}_0`, :math:`\mathbf{U}_C` from those of :math:`\mathbf{L}_2`,
:math:`\mathbf{U}_H` an orthonormal basis of the complement (see
:class:`~topo_contrastive.HodgeDecomposition`).

Ranks 0 and 2 (``HodgeDecomposition(complex, rank=k)``): orthonormal eigenbases of the
non-zero spectra of :math:`\mathbf{B}_k^\top \mathbf{B}_k` and :math:`\mathbf{B}_{k+1}
\mathbf{B}_{k+1}^\top` (each from the smaller of the two Gram matrices of
:math:`\mathbf{B}`, as the rank-1 backend does), and an orthonormal basis of their
complement. Memory :math:`O(N_k^2)` (rank 1: also :math:`O(N_2^2)` for the curl
eigenpairs), checked against :data:`MAX_EXACT_BYTES` before anything is formed.
"""

from __future__ import annotations

import numpy as np

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge.backend import HodgeBackend
from topo_contrastive.hodge.linalg import connected_components, nonzero_eigenbasis
from topo_contrastive.hodge.parts import COMPONENTS
from topo_contrastive.hodge.ranks import exact_rank

__all__ = ["MAX_EXACT_BYTES", "ExactBackend", "check_exact_memory", "exact_bytes"]


#: The most memory the exact backend's dense matrices may take (8 GiB); above it
#: ``backend="exact"`` is refused and ``backend="auto"`` chooses another backend.
MAX_EXACT_BYTES = 8 * 2**30


def _nodes_with_edges(ops: ComplexOperators) -> np.ndarray:
    """The nodes that bound at least one edge, ``int64 [n]`` ascending."""
    return np.flatnonzero(np.diff(ops.B1.tocsr().indptr) > 0)


def exact_bytes(complex: ComplexOperators, rank: int) -> int:
    r"""The memory of the dense matrices the exact backend forms for signals of ``rank``:
    8 bytes per entry, each square matrix with its eigenvectors, and the ``N_k x N_k``
    bases. Rank 1: the Gram matrices of :math:`\mathbf{L}_0` on the nodes with edges
    and of :math:`\mathbf{L}_{2,\downarrow}` (``N2 x N2``); ranks 0 and 2: the smaller
    Gram matrix of each incidence."""
    sizes = complex.sizes
    n = int(sizes[rank])
    if rank == 1:
        grams = [int(_nodes_with_edges(complex).size), int(sizes[2])]
    else:
        grams = [min(int(sizes[rank - 1]), n)] if rank > 0 else []
        if rank + 1 < len(sizes):
            grams.append(min(n, int(sizes[rank + 1])))
    return 8 * (2 * sum(g * g for g in grams) + 2 * n * n)


def check_exact_memory(complex: ComplexOperators, rank: int) -> None:
    """Refuse a complex whose exact decomposition needs more than :data:`MAX_EXACT_BYTES`.

    Raises:
        ValueError: naming ``backend='exact'``, the sizes and the memory.
    """
    need = exact_bytes(complex, rank)
    if need > MAX_EXACT_BYTES:
        sizes = tuple(int(v) for v in complex.sizes[:3])
        raise ValueError(
            f"backend='exact' forms dense matrices of {need / 2**30:.1f} GiB for this complex "
            f"((N0, N1, N2) = {sizes}, rank {rank}), above its budget of "
            f"{MAX_EXACT_BYTES / 2**30:.0f} GiB: use backend='iterative' (sparse solves) or "
            "'blocks' (exact per connected component), or backend='auto'"
        )


class ExactBackend(HodgeBackend):
    """Eigenbases ``[U_G, U_C, U_H]`` of signals of one rank; parts ``U_k U_k^T x``."""

    name = "exact"

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        check_exact_memory(complex, rank)
        super().__init__(complex, rank, tol)
        if rank == 1:
            grad, curl = self._edge_bases()
        else:
            grad = np.zeros((self.num_simplices, 0))
            if rank > 0:
                b = complex.incidence(rank)
                grad = nonzero_eigenbasis(b, tol, "right", exact_rank(b, f"B{rank}"))
            b = complex.incidence(rank + 1)
            curl = nonzero_eigenbasis(b, tol, "left", exact_rank(b, f"B{rank + 1}"))
        self._bases = [grad, curl, _complement_basis(grad, curl)]

    def _edge_bases(self) -> tuple[np.ndarray, np.ndarray]:
        """Rank 1: gradient and curl eigenbases ``[N1, N0 - beta_0]``, ``[N1, N2 - beta_2]``."""
        ops = self.complex
        n1 = ops.num_edges
        # gradient: eigenpairs (lam, v) of L0 with lam > 0 give the eigenvectors
        # B1^T v / sqrt(lam) of L_down with the same eigenvalue; L0 has one zero
        # eigenvalue per connected component
        num_components, _ = connected_components(ops.L0)
        grad = np.zeros((n1, 0))
        rank0 = ops.num_nodes - num_components
        if rank0 > 0:
            # nodes without edges are zero rows and columns of L0 (a component each):
            # the eigenpairs with lam > 0 are those of L0 on the other nodes
            used = _nodes_with_edges(ops)
            skip = num_components - (ops.num_nodes - used.size)  # components with edges
            evals, evecs = np.linalg.eigh(ops.L0[used][:, used].toarray())
            lam, v = evals[skip:], evecs[:, skip:]
            grad = (ops.B1[used].T @ v) / np.sqrt(lam)  # [N1, N0 - beta_0]
        # curl: the same from L2 = B2^T B2 and L_up = B2 B2^T
        curl = np.zeros((n1, 0))
        if ops.num_faces:
            # the rank(B2) largest eigenpairs (an exact rank, not an eigenvalue threshold)
            evals, evecs = np.linalg.eigh(ops.L2_down.toarray())
            nz = np.arange(evals.size) >= evals.size - exact_rank(ops.B2, "B2")
            curl = (ops.B2 @ evecs[:, nz]) / np.sqrt(evals[nz])  # [N1, N2 - beta_2]
        return grad, curl

    @property
    def dims(self) -> dict[str, int]:
        return {k: int(u.shape[1]) for k, u in zip(COMPONENTS, self._bases, strict=True)}

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
    harm = np.zeros((n, 0))
    if beta:
        rng = np.random.default_rng(0)
        h = rng.standard_normal((n, beta))
        for _ in range(2):  # project twice: removes the round-off of the first pass
            h = h - grad @ (grad.T @ h) - curl @ (curl.T @ h)
            h, _ = np.linalg.qr(h)
        harm = h
    return harm
