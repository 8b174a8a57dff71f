"""Shared NT-Xent machinery of :class:`InfoNCE` and :class:`HodgeDebiasedInfoNCE` (private).

One code path computes both losses: :func:`nt_xent` takes optional log-weights of the negatives,
and ``None`` means weight 1 (log-weight 0) for every negative, so uniform weights reproduce
InfoNCE bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor

from topo_contrastive.losses._distributed import (
    distributed_context,
    gather_padded,
    gather_sizes,
    gather_with_grad,
)
from topo_contrastive.utils.checks import check_bool, check_real

__all__: list[str] = []

_REDUCTIONS = ("mean", "sum", "none")


#: Smallest accepted temperature: ``1 / temperature`` stays far below float32's largest value
#: (3.4e38), so the logits never overflow (practical temperatures are 0.05-1).
MIN_TEMPERATURE = 1e-6


def check_temperature(temperature: float) -> float:
    temperature = check_real(temperature, "temperature")
    if temperature < MIN_TEMPERATURE:
        raise ValueError(
            f"`temperature` must be finite and >= {MIN_TEMPERATURE:g} (smaller ones overflow the "
            f"logits cos / temperature to inf in float32), got {temperature}"
        )
    return temperature


def check_reduction(reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"`reduction` must be one of {_REDUCTIONS}, got {reduction!r}")
    return reduction


def check_gather(gather_distributed: bool) -> bool:
    check_bool(gather_distributed, "gather_distributed")
    if gather_distributed and not dist.is_available():
        raise ValueError(
            "`gather_distributed=True` needs torch.distributed, which this torch build lacks"
        )
    return gather_distributed


def check_views(z1: Tensor, z2: Tensor) -> None:
    """Validate the two views ``[B, D]`` (tensor errors are raised in ``forward``)."""
    for name, z in (("z1", z1), ("z2", z2)):
        if not isinstance(z, Tensor):
            raise TypeError(f"`{name}` must be a tensor [B, D], got {type(z).__name__}")
        if z.dim() != 2:
            raise ValueError(f"`{name}` must have shape [B, D], got shape {tuple(z.shape)}")
        if not z.is_floating_point():
            raise TypeError(f"`{name}` must be floating point, got dtype {z.dtype}")
    if z1.shape != z2.shape:
        raise ValueError(
            f"`z1` and `z2` must have the same shape [B, D], got {tuple(z1.shape)} and "
            f"{tuple(z2.shape)}"
        )
    if z1.device != z2.device:
        raise ValueError(f"`z1` and `z2` must be on one device, got {z1.device} and {z2.device}")
    if z1.shape[0] == 0 or z1.shape[1] == 0:
        raise ValueError(f"`z1` and `z2` must be non-empty [B, D], got shape {tuple(z1.shape)}")
    for name, z in (("z1", z1), ("z2", z2)):
        if not z.is_meta and not bool(torch.isfinite(z.detach()).all()):
            bad = (~torch.isfinite(z.detach())).any(dim=1).nonzero().flatten().tolist()
            raise ValueError(
                f"`{name}` must be finite, got NaN or inf in rows {bad[:10]} (an encoder that "
                "diverged, or NaN in its input)"
            )


@dataclass
class Pool:
    """Anchors (local rows) and candidates (all ranks' rows) of both views, unit norm."""

    a1: Tensor  # [B, D] local view-1 anchors
    a2: Tensor  # [B, D]
    c1: Tensor  # [M, D] all ranks' view-1 rows (== a1 single-process)
    c2: Tensor  # [M, D]
    offset: int  # row of local sample 0 in the pool
    rank: int
    world_size: int
    sizes: list[int]  # rows per rank

    @property
    def batch_size(self) -> int:
        return self.a1.shape[0]

    @property
    def pool_size(self) -> int:
        return self.c1.shape[0]

    def gather(self, x: Tensor) -> Tensor:
        """Gather a per-sample tensor ``[B, ...]`` of every rank (no gradient) -> ``[M, ...]``."""
        if self.world_size == 1:
            return x
        return gather_padded(x.detach().to(self.a1.device), self.sizes)


def unit_rows(z: Tensor) -> Tensor:
    """Rows of ``z`` ``[B, D]`` scaled to unit L2 norm, without overflow or underflow.

    Each row is first divided by its largest absolute entry (a constant for autograd: the
    result does not depend on it), so the squares summed by the norm lie in ``[0, D]``:
    finite rows of any magnitude (``1e20`` or ``1e-30`` in float32) give their direction,
    where ``F.normalize`` alone overflows to 0 or underflows to a non-unit row. An all-zero
    row stays zero (cosine 0 with everything). The gradient is that of ``z / ||z||``.
    """
    scale = z.detach().abs().amax(dim=1, keepdim=True)  # [B, 1]
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return F.normalize(z / scale, dim=1)


def make_pool(z1: Tensor, z2: Tensor, gather_distributed: bool) -> Pool:
    """Normalise both views and, when distributed, gather them from all ranks."""
    check_views(z1, z2)
    dtype = torch.promote_types(torch.promote_types(z1.dtype, z2.dtype), torch.float32)
    u1 = unit_rows(z1.to(dtype))  # [B, D]
    u2 = unit_rows(z2.to(dtype))
    B = u1.shape[0]
    rank, world = distributed_context(gather_distributed)
    if world == 1:
        sizes = [B]
        c1, c2, offset = u1, u2, 0
    else:
        sizes = gather_sizes(B, u1.device)
        offset = sum(sizes[:rank])
        c1 = gather_with_grad(u1, sizes, rank)  # [M, D]
        c2 = gather_with_grad(u2, sizes, rank)
    M = sum(sizes)
    if M < 2:
        raise ValueError(
            f"a contrastive loss needs at least 2 samples (one anchor and one negative), got a "
            f"batch of {M} sample(s) in `z1`/`z2`"
        )
    return Pool(u1, u2, c1, c2, offset, rank, world, sizes)


def check_weights(weights: Tensor, pool: Pool) -> Tensor:
    """Validate precomputed negative weights ``[B, M]``; return them detached in the loss dtype."""
    B, M = pool.batch_size, pool.pool_size
    if not isinstance(weights, Tensor):
        raise TypeError(f"`weights` must be a tensor [B, M], got {type(weights).__name__}")
    if tuple(weights.shape) != (B, M):
        where = "" if pool.world_size == 1 else f" (M = all {pool.world_size} ranks' samples)"
        raise ValueError(
            f"`weights` must have shape [B, M] = [{B}, {M}]{where}, got {tuple(weights.shape)}"
        )
    w = weights.detach().to(device=pool.a1.device, dtype=pool.a1.dtype)
    if not torch.isfinite(w).all():
        raise ValueError("`weights` must be finite, got NaN or inf entries")
    if (w < 0).any():
        raise ValueError(f"`weights` must be >= 0, got minimum {w.min().item():.6g}")
    rows = torch.arange(B, device=w.device)
    neg = w.index_put((rows, rows + pool.offset), torch.zeros((), dtype=w.dtype, device=w.device))
    empty = (neg.sum(dim=1) <= 0).nonzero().flatten()
    if empty.numel() > 0:
        raise ValueError(
            f"every anchor needs a negative with weight > 0; anchors {empty.tolist()[:10]} have "
            f"all-zero weights off their own column"
        )
    return w


def nt_xent(
    pool: Pool,
    temperature: float,
    include_positive: bool,
    reduction: str,
    log_weights: Tensor | None = None,
) -> Tensor:
    r"""NT-Xent over both views with optional log-weights ``[B, M]`` of the negatives.

    Anchor ``(i, a)`` with positive ``(i, b)``, ``b != a``, and negatives ``(m, 1), (m, 2)`` for
    all pool samples ``m != i``:
    ``l = logsumexp([s_pos] + [s_neg + log w_im]) - s_pos``, ``s = cos / temperature``.
    """
    B, M, off = pool.batch_size, pool.pool_size, pool.offset
    anchors = torch.cat([pool.a1, pool.a2], dim=0)  # [2B, D]
    cands = torch.cat([pool.c1, pool.c2], dim=0)  # [2M, D]
    logits = anchors @ cands.T / temperature  # [2B, 2M]
    if log_weights is None:
        log_weights = logits.new_zeros(B, M)
    log_w = log_weights.repeat(2, 2)  # [2B, 2M]: both views of sample m get w_im
    rows = torch.arange(2 * B, device=logits.device)
    view = torch.div(rows, B, rounding_mode="floor")  # 0 for view-1 anchors, 1 for view-2
    sample = rows - view * B + off  # pool index of the anchor's own sample
    self_col = view * M + sample
    pos_col = (1 - view) * M + sample
    neg_inf = torch.tensor(float("-inf"), dtype=logits.dtype, device=logits.device)
    log_w = log_w.index_put((rows, self_col), neg_inf)  # self-similarity is no negative
    pos_log_w = logits.new_zeros(()) if include_positive else neg_inf
    log_w = log_w.index_put((rows, pos_col), pos_log_w)  # positive has weight 1 (or is left out)
    pos = logits[rows, pos_col]  # [2B]
    loss = torch.logsumexp(logits + log_w, dim=1) - pos  # [2B]
    if reduction == "none":
        return loss.view(2, B)
    if reduction == "sum":
        return loss.sum() if pool.world_size == 1 else loss.sum() * pool.world_size
    if pool.world_size == 1:
        return loss.mean()
    return loss.sum() * (pool.world_size / (2 * M))
