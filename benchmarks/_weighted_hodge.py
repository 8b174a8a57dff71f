r"""Hodge parts of edge flows in a weighted edge metric (benchmarks' private helper).

The metric :math:`\langle x, y \rangle = x^\top \mathbf{W}_1 y` with
:math:`\mathbf{W}_1 = \operatorname{diag}(w)` (a line's reactance, a pipe's resistance),
:math:`\mathbf{W}_0 = \mathbf{I}`, :math:`\mathbf{W}_2 = \mathbf{I}`: the adjoints are
:math:`\mathbf{B}_1^* = \mathbf{W}_1^{-1} \mathbf{B}_1^\top` and
:math:`\mathbf{B}_2^* = \mathbf{B}_2^\top \mathbf{W}_1`, and the
:math:`\mathbf{W}_1`-orthogonal decomposition is

.. math::
    x = \underbrace{\mathbf{W}_1^{-1}\mathbf{B}_1^\top \alpha}_{\text{gradient}}
      + \underbrace{\mathbf{B}_2 \beta}_{\text{curl}} + x_H, \quad
    \mathbf{B}_1 \mathbf{W}_1^{-1} \mathbf{B}_1^\top \alpha = \mathbf{B}_1 x, \quad
    \mathbf{B}_2^\top \mathbf{W}_1 \mathbf{B}_2 \beta = \mathbf{B}_2^\top \mathbf{W}_1 x

(weighted least squares; the two parts are :math:`\mathbf{W}_1`-orthogonal since
:math:`\mathbf{B}_1 \mathbf{B}_2 = 0`). With unit weights it is the library's
:class:`~topo_contrastive.HodgeDecomposition`. Until the library's weighted Hodge operators
exist, the benchmark and the datasets' tests compute the weighted parts here.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu

from topo_contrastive.hodge import independent_columns


def weighted_parts(
    B1: sp.spmatrix, B2: sp.spmatrix | None, weights: np.ndarray, flows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradient, curl and harmonic parts ``[S, N1]`` of ``flows`` ``[S, N1]`` in the metric
    ``W1 = diag(weights)`` (exact sparse solves: one node grounded per connected component
    for the gradient, a maximal independent set of 2-cells for the curl)."""
    B1 = sp.csr_matrix(B1, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    x = np.atleast_2d(np.asarray(flows, dtype=np.float64)).T  # [N1, S]
    L0 = sp.csc_matrix(B1 @ sp.diags(1.0 / w) @ B1.T)
    _, comp = connected_components(abs(L0) > 0, directed=False)
    keep = np.ones(L0.shape[0], dtype=bool)
    keep[np.unique(comp, return_index=True)[1]] = False  # ground the first node of each
    alpha = np.zeros((L0.shape[0], x.shape[1]))
    if keep.any():
        alpha[keep] = splu(L0[keep][:, keep]).solve((B1 @ x)[keep])
    grad = (B1.T @ alpha) / w[:, None]
    curl = np.zeros_like(x)
    if B2 is not None and B2.shape[1]:
        B2 = sp.csr_matrix(B2, dtype=np.float64)[:, independent_columns(B2, "B2")]
        L2 = sp.csc_matrix(B2.T @ sp.diags(w) @ B2)
        curl = B2 @ splu(L2).solve(B2.T @ (w[:, None] * x))
    return grad.T, curl.T, (x - grad - curl).T


def energy_fractions(
    parts: tuple[np.ndarray, np.ndarray, np.ndarray], weights: np.ndarray
) -> np.ndarray:
    """Each part's share of the flows' energy in the metric, ``[S, 3]`` (rows sum to 1)."""
    w = np.asarray(weights, dtype=np.float64)
    energy = np.stack([(p**2 * w).sum(axis=1) for p in parts], axis=1)
    return energy / np.maximum(energy.sum(axis=1, keepdims=True), np.finfo(float).tiny)
