"""Reference forms of the spectral mask's maths for the tests: the closed-form expected
distortion ``L_k(p)`` and its gradient, the objective ``f(p)`` from the projector blocks,
and the capped-simplex projection (the library's exact one, or a bisection)."""

from __future__ import annotations

import torch

from topo_contrastive.hodge import COMPONENTS
from topo_contrastive.transforms._drop_probabilities import objective_weights, project_sort


def expected_hodge_distortion(x, p, projector_block):
    """``(x p)^T P_k (x p) + sum_i (P_k)_ii x_i^2 p_i (1 - p_i)``, ``[..., n]`` -> ``[...]``."""
    if x.shape != p.shape:
        raise ValueError(f"`x` and `p` must have the same shape, got {x.shape}, {p.shape}")
    n = x.shape[-1]
    if projector_block.shape != (*x.shape[:-1], n, n):
        raise ValueError(f"`projector_block` must have shape {(*x.shape[:-1], n, n)}")
    q = x * p
    quad = torch.einsum("...i,...ij,...j->...", q, projector_block, q)
    diag = torch.diagonal(projector_block, dim1=-2, dim2=-1)
    return quad + (diag * x.square() * p * (1 - p)).sum(-1)


def expected_hodge_distortion_grad(x, p, projector_block):
    """The gradient in ``p`` of :func:`expected_hodge_distortion`."""
    pq = torch.einsum("...ij,...j->...i", projector_block, x * p)
    diag = torch.diagonal(projector_block, dim1=-2, dim2=-1)
    return 2 * x * pq + diag * x.square() * (1 - 2 * p)


def hodge_mask_objective(x, p, blocks, perturb=("gradient",), preserve=("curl", "harmonic"),
                         alpha=None):  # fmt: skip
    """``sum_k s_k alpha_k L_k(p) / ||P_k x||^2`` from the blocks by component name."""
    weights = {**dict.fromkeys(COMPONENTS, 1.0), **(alpha or {})}
    coef = objective_weights(x, blocks, tuple(perturb), tuple(preserve), weights)
    out = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for comp, c in coef.items():
        out = out + c * expected_hodge_distortion(x, p, blocks[comp])
    return out


def project_capped_simplex(v, budget, mask=None, method="sort", num_iters=60):
    """The projection of the rows of ``v`` onto ``{p in [0, 1]^n: sum p <= b, p = 0 off
    mask}``: the library's exact one (``"sort"``) or ``num_iters`` bisection steps."""
    b = torch.as_tensor(budget, dtype=v.dtype).expand(v.shape[:-1])
    upper = torch.ones_like(v) if mask is None else mask.to(v.dtype)
    if method == "sort":
        return project_sort(v, b, upper)

    def clipped(mu):
        return torch.minimum(torch.maximum(v - mu.unsqueeze(-1), torch.zeros(())), upper)

    lo = torch.zeros_like(b)
    hi = torch.maximum((v * upper).amax(-1), lo)  # at mu = max v every entry is 0
    over = clipped(lo).sum(-1) > b
    for _ in range(num_iters):
        mid = 0.5 * (lo + hi)
        above = clipped(mid).sum(-1) > b
        lo, hi = torch.where(above, mid, lo), torch.where(above, hi, mid)
    return clipped(torch.where(over, hi, torch.zeros_like(hi)))
