r"""The ``"exact"`` backend: dense orthonormal eigenbases of the three subspaces.

Rank 1 (edge flows) as in the paper: :math:`\mathbf{U}_G` from the eigenpairs of
:math:`\mathbf{L}_0`, :math:`\mathbf{U}_C` from those of :math:`\mathbf{L}_2`,
:math:`\mathbf{U}_H` an orthonormal basis of the complement (see
:class:`~topo_contrastive.HodgeDecomposition`).

Ranks 0 and 2 (``HodgeDecomposition(complex, rank=k)``): orthonormal eigenbases of the
non-zero spectra of :math:`\mathbf{B}_k^\top \mathbf{B}_k` and :math:`\mathbf{B}_{k+1}
\mathbf{B}_{k+1}^\top` (each from the smaller of the two Gram matrices of
:math:`\mathbf{B}`, as the rank-1 backend does), and an orthonormal basis of their
complement. Memory :math:`O(N_k^2)`.
"""

from __future__ import annotations

import numpy as np

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge.backend import HodgeBackend
from topo_contrastive.hodge.linalg import connected_components, nonzero_eigenbasis
from topo_contrastive.hodge.parts import COMPONENTS
from topo_contrastive.hodge.ranks import exact_rank

__all__ = ["ExactBackend"]


class ExactBackend(HodgeBackend):
    """Eigenbases ``[U_G, U_C, U_H]`` of signals of one rank; parts ``U_k U_k^T x``."""

    name = "exact"

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
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
            evals, evecs = np.linalg.eigh(ops.L0.toarray())
            lam, v = evals[num_components:], evecs[:, num_components:]
            grad = (ops.B1.T @ v) / np.sqrt(lam)  # [N1, N0 - beta_0]
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
