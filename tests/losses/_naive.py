"""Naive references written directly from the paper's equations with explicit Python loops.

* eq. (4) / (6): per anchor ``-log(e^{sim_pos/tau} / sum_m w_im e^{sim_im/tau})``;
  NT-Xent layout (docs/design.md §2.5): anchor (i, a), positive (i, b), negatives (m, 1) and
  (m, 2) for m != i, the positive optionally in the denominator with weight 1, averaged over
  both views.
* eqs. (7)-(8): ``S = sum_k gamma_k (1 - cos(P_k x_i, P_k x_m))`` with cos = 0 for a zero
  vector, normalised over the B - 1 negatives of anchor i to MEAN one (docs/design.md §2.4
  replaces the paper's sum-one), uniform weights when all S of the anchor are zero.

Everything is scalar torch arithmetic so that autograd also gives naive gradients.
"""

from __future__ import annotations

import math

import torch


def naive_cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    dot = sum(a[n] * b[n] for n in range(a.shape[0]))
    na = torch.sqrt(sum(a[n] * a[n] for n in range(a.shape[0])))
    nb = torch.sqrt(sum(b[n] * b[n] for n in range(b.shape[0])))
    if na.detach().item() == 0.0 or nb.detach().item() == 0.0:
        return torch.zeros((), dtype=a.dtype)
    return dot / (na * nb)


def naive_weights(parts, gamma) -> list[list[float]]:
    """Eqs. (7)-(8) with mean-one normalisation; returns a B x B list (diagonal 0)."""
    B = parts[0].shape[0]
    W = [[0.0] * B for _ in range(B)]
    for i in range(B):
        S = {}
        for m in range(B):
            if m == i:
                continue
            s = 0.0
            for k in range(3):
                s += gamma[k] * (1.0 - float(naive_cos(parts[k][i], parts[k][m])))
            S[m] = s
        total = sum(S.values())
        for m, s in S.items():
            W[i][m] = 1.0 if total == 0.0 else (B - 1) * s / total
    return W


def naive_loss(z1, z2, temperature, include_positive=True, W=None, negatives="both"):
    """Eq. (4) (W None) or eq. (6) (weights W[i][m]) in the NT-Xent layout, mean over 2B;
    the negatives of anchor (i, a) are (m, v) for m != i and v in both views, or only
    v = b, the other view, for ``negatives="cross_view"`` (the authors' code)."""
    B = z1.shape[0]
    views = (z1, z2)
    total = torch.zeros((), dtype=z1.dtype)
    for a in range(2):
        b = 1 - a
        for i in range(B):
            pos = torch.exp(naive_cos(views[a][i], views[b][i]) / temperature)
            den = pos if include_positive else torch.zeros((), dtype=z1.dtype)
            for m in range(B):
                if m == i:
                    continue
                w = 1.0 if W is None else W[i][m]
                for v in range(2) if negatives == "both" else (b,):
                    den = den + w * torch.exp(naive_cos(views[a][i], views[v][m]) / temperature)
            total = total - torch.log(pos / den)
    return total / (2 * B)


def closed_form_aligned(B: int, temperature: float, include_positive: bool) -> float:
    """Loss for z1 = z2 = B orthonormal vectors: sim_pos = 1, all negatives sim 0."""
    den = (math.exp(1 / temperature) if include_positive else 0.0) + 2 * (B - 1)
    return -1 / temperature + math.log(den)
