"""Gathering of embeddings and Hodge parts across ``torch.distributed`` ranks (private).

The contrastive losses use every sample of the global batch as a candidate negative. Under data
parallelism each rank holds ``B_r`` samples; :func:`gather_with_grad` concatenates the rows of all
ranks (rank order) into a pool of ``M = sum_r B_r`` rows. Batches may differ in size between ranks
(they are padded for the collective and trimmed afterwards).

Backward: the gradient of the pool on each rank is summed over ranks (``all_reduce``) and each rank
keeps the slice of its own rows. This is the gradient of the *sum* of the per-rank losses with
respect to the local rows, i.e. autograd through ``all_gather`` (as
``torch.distributed.nn.functional.all_gather`` does, which however needs equal sizes).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor

__all__: list[str] = []


def distributed_context(gather: bool) -> tuple[int, int]:
    """Return ``(rank, world_size)``; ``(0, 1)`` when not gathering or not initialised."""
    if gather and dist.is_available() and dist.is_initialized():
        world = dist.get_world_size()
        if world > 1:
            return dist.get_rank(), world
    return 0, 1


def gather_sizes(n: int, device: torch.device) -> list[int]:
    """All-gather the local number of rows ``n`` of every rank (rank order)."""
    world = dist.get_world_size()
    local = torch.tensor([n], dtype=torch.long, device=device)
    out = [torch.zeros_like(local) for _ in range(world)]
    dist.all_gather(out, local)
    return [int(t.item()) for t in out]


def gather_padded(x: Tensor, sizes: list[int]) -> Tensor:
    """All-gather ``x`` (``[sizes[rank], ...]``) into ``[sum(sizes), ...]`` without autograd."""
    n_max = max(sizes)
    x = x.contiguous()
    if x.shape[0] < n_max:
        pad = x.new_zeros((n_max - x.shape[0], *x.shape[1:]))
        x = torch.cat([x, pad], dim=0)
    out = [torch.empty_like(x) for _ in sizes]
    dist.all_gather(out, x)
    return torch.cat([t[:n] for t, n in zip(out, sizes, strict=True)], dim=0)


class _GatherWithGrad(torch.autograd.Function):
    """Autograd-aware all-gather of rows with possibly different row counts per rank."""

    @staticmethod
    def forward(ctx, x: Tensor, sizes: list[int], rank: int) -> Tensor:  # type: ignore[override]
        ctx.start = sum(sizes[:rank])
        ctx.n = sizes[rank]
        return gather_padded(x, sizes)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)  # sum of all ranks' losses
        return grad[ctx.start : ctx.start + ctx.n], None, None


def gather_with_grad(x: Tensor, sizes: list[int], rank: int) -> Tensor:
    """All-gather ``x`` ``[B_rank, D]`` into ``[sum(sizes), D]``, gradients flowing back."""
    return _GatherWithGrad.apply(x, sizes, rank)
