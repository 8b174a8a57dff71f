r"""Gradient caching: a contrastive step whose batch no longer sets the encoder's memory
(Gao, Zhang, Han and Callan, "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup", RepL4NLP 2021), and the activation memory model that plans its chunks."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import Tensor, nn

from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.utils.numerics import KEEP_FREED_BYTES, release_freed_memory

__all__ = [
    "ACTIVATION_BYTES_PER_CHANNEL",
    "DEFAULT_ACTIVATION_BUDGET",
    "FRAGMENTS_KEPT",
    "activation_bytes",
    "cached_gradient_step",
    "plan_chunk_samples",
]


#: Free heap bytes a training step may leave behind before
#: :func:`~topo_contrastive.training.pretrain` and
#: :func:`cached_gradient_step` give them back to the kernel
#: (:func:`~topo_contrastive.utils.numerics.release_freed_memory`): twice the freed memory
#: the commands keep for reuse, so that a step on a small complex never trims (no page
#: faults) and one on 10^6 edges, whose chunks fragment the heap, holds at most this much.
FRAGMENTS_KEPT = 2 * KEEP_FREED_BYTES

#: Bytes of encoder state per edge, per view and per channel of width during a training
#: step: each layer's float32 output kept for the backward pass, the input gradient and
#: the kernel's scratch (see :func:`activation_bytes`).
ACTIVATION_BYTES_PER_CHANNEL = 4
#: Default memory for the encoder's activations in one training step (1 GiB).
DEFAULT_ACTIVATION_BUDGET = 2**30
def activation_bytes(num_edges: int, config: ExperimentConfig) -> int:
    """Predicted bytes of encoder activations of one view in a training step:
    ``num_edges * hidden_channels * (num_layers + 3) * 4`` (every layer's output kept, the
    input gradient, and two chunk-sized scratch buffers of the backward pass, float32).
    """
    per_row = ACTIVATION_BYTES_PER_CHANNEL * config.hidden_channels * (config.num_layers + 3)
    return int(num_edges) * per_row


def plan_chunk_samples(
    num_edges: int, config: ExperimentConfig, budget: int = DEFAULT_ACTIVATION_BUDGET
) -> int | None:
    """Views per chunk of a training step so that the encoder's activations
    (:func:`activation_bytes`) fit ``budget`` bytes; ``None`` when a whole batch of
    ``2 * batch_size`` views fits (the plain step, the numbers of earlier versions)."""
    per_view = max(1, activation_bytes(num_edges, config))
    if 2 * config.batch_size * per_view <= budget:
        return None
    return max(1, int(budget // per_view))


def cached_gradient_step(
    net: nn.Module,
    loss_fn: nn.Module,
    x: Tensor,
    num_views: int,
    chunk: int,
    loss_kwargs: dict[str, Any],
) -> tuple[Tensor, Tensor]:
    r"""One contrastive step's gradients with the encoder run on chunks of views (gradient
    caching), so that the loss's batch no longer sets the memory.

    Gao, Zhang, Han and Callan, "Scaling Deep Contrastive Learning Batch Size under Memory
    Limited Setup" (RepL4NLP 2021):

    1. embed all ``2B`` views chunk by chunk: :math:`\mathbf{z}` ``[2B, D]``, the first
       chunk with autograd (its graph is kept), the others without;
    2. the loss of the detached :math:`\mathbf{z}` and its gradient
       :math:`\partial\ell/\partial\mathbf{z}` (the loss couples every pair, the encoder
       does not: every view is embedded on its own);
    3. per chunk, ``backward`` of :math:`\partial\ell/\partial\mathbf{z}_{chunk}`, through
       the kept graph for the first chunk and a second forward pass with autograd for the
       others: the parameter gradients add up to those of the plain step, up to rounding.

    The encoder's activations are held for one chunk at a time (while the first chunk's
    graph waits, the other chunks run without autograd, which holds less); the cost is one
    more forward pass of all chunks but the first. Under DDP the gradients are all-reduced
    after the last chunk only.

    Args:
        net: the model ``net(x, rows) -> (h, z)`` (:class:`ContrastiveModel` or its
            ``DistributedDataParallel`` wrapper), whose encoder embeds every sample on its
            own (no batch statistics).
        loss_fn: the loss ``loss_fn(z1, z2, **loss_kwargs)``.
        x: ``[2B * N1, 1]`` both views' flows, sample-major (view 1 of every sample, then
            view 2), as :func:`_both_views` stacks them; or the same rows as consecutive
            blocks (e.g. ``(view1, view2)``, ``[B * N1, 1]`` each: no copy of both views).
        num_views: ``2B``.
        chunk: views per chunk, at least 1.
        loss_kwargs: the loss's keyword arguments (e.g. ``hodge_parts``).

    Returns:
        ``(loss, z)``: the loss (detached) and the projections ``[2B, D]`` (detached); the
        parameters' ``.grad`` hold the step's gradients.
    """
    blocks = (x,) if isinstance(x, Tensor) else tuple(x)
    n = sum(int(b.shape[0]) for b in blocks) // num_views  # rows per view
    bounds = [(lo, min(lo + chunk, num_views)) for lo in range(0, num_views, chunk)]

    def run(lo: int, hi: int) -> Tensor:
        rows = torch.arange(hi - lo, device=blocks[0].device).repeat_interleave(n)
        return net(_view_rows(blocks, n, lo, hi), rows)[1]

    no_sync = getattr(net, "no_sync", None)  # DDP: one all-reduce, after the last chunk

    def sync_at(i: int) -> contextlib.AbstractContextManager:
        last = i == len(bounds) - 1
        return contextlib.nullcontext() if last or no_sync is None else no_sync()

    def embed_chunk(lo: int, hi: int) -> Tensor:
        out = run(lo, hi)
        release_freed_memory(FRAGMENTS_KEPT)  # chunks of blocks fragment the heap
        return out

    with sync_at(0):
        kept = run(*bounds[0])  # with autograd: its graph serves the first backward
    with torch.no_grad():
        z = torch.cat([kept.detach(), *(embed_chunk(lo, hi) for lo, hi in bounds[1:])])
    z.requires_grad_(True)
    B = num_views // 2
    loss = loss_fn(z[:B], z[B:], **loss_kwargs)
    (grad,) = torch.autograd.grad(loss, z)
    for i, (lo, hi) in enumerate(bounds):
        with sync_at(i):
            out = kept if i == 0 else run(lo, hi)
            out.backward(grad[lo:hi])
        kept = out = None  # the chunk's graph is freed by its backward
        release_freed_memory(FRAGMENTS_KEPT)
    return loss.detach(), z.detach()


def _view_rows(blocks: tuple[Tensor, ...], n: int, lo: int, hi: int) -> Tensor:
    """Rows of the views ``lo .. hi - 1`` (``n`` rows each) of views stored as consecutive
    ``blocks``: a slice where they lie in one block, else the slices concatenated."""
    pieces, start = [], 0
    for block in blocks:
        count = int(block.shape[0]) // n
        a, b = max(lo, start), min(hi, start + count)
        if a < b:
            pieces.append(block[(a - start) * n : (b - start) * n])
        start += count
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)
