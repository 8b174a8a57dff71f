r"""Gradient caching: a contrastive step whose batch no longer sets the encoder's memory
(Gao, Zhang, Han and Callan, "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup", RepL4NLP 2021), and the activation memory model that plans its chunks."""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from topo_contrastive._utils.checks import check_int
from topo_contrastive._utils.numerics import KEEP_FREED_BYTES, release_freed_memory
from topo_contrastive.complex import Laplacians
from topo_contrastive.training.configs import ExperimentConfig

#: Free heap bytes a training step may leave behind before
#: :func:`~topo_contrastive.training.pretrain` and
#: :func:`cached_gradient_step` give them back to the kernel
#: (:func:`~topo_contrastive._utils.numerics.release_freed_memory`): twice the freed memory
#: the commands keep for reuse, so that a step on a small complex never trims (no page
#: faults) and one on 10^6 edges, whose chunks fragment the heap, holds at most this much.
FRAGMENTS_KEPT = 2 * KEEP_FREED_BYTES

#: Bytes of encoder state per edge, per view and per channel of width during a training
#: step: each layer's float32 output kept for the backward pass, the input gradient and
#: the kernel's scratch (see :func:`activation_bytes`).
ACTIVATION_BYTES_PER_CHANNEL = 4
#: Default memory for the encoder's activations in one training step (1 GiB).
DEFAULT_ACTIVATION_BUDGET = 2**30
#: With gradient caching, the share of the activation budget one chunk of views may take
#: while it runs; the rest holds the autograd graphs of the chunks kept for the backward
#: pass (their views are not run twice).
CHUNK_SHARE = 8


class CachingPlan(NamedTuple):
    """A training step with gradient caching: ``chunk`` views per chunk, the autograd
    graphs of the first ``kept`` chunks held until the backward pass, the others'
    forward pass run again."""

    chunk: int
    kept: int


def activation_bytes(num_edges: int, config: ExperimentConfig) -> int:
    """Predicted bytes of encoder activations of one view in a training step:
    ``num_edges * hidden_channels * (num_layers + 3) * 4`` (every layer's output kept, the
    input gradient, and two chunk-sized scratch buffers of the backward pass, float32).
    """
    per_row = ACTIVATION_BYTES_PER_CHANNEL * config.hidden_channels * (config.num_layers + 3)
    return int(num_edges) * per_row


def kept_bytes(num_edges: int, config: ExperimentConfig) -> int:
    """Predicted bytes one view's autograd graph holds between its forward and its
    backward pass: ``num_edges * (hidden_channels * max(num_layers - 1, 1) + 2) * 4``
    (the float32 output of every layer but the first, which the SCNN recomputes from the
    one-channel flow, see :func:`~topo_contrastive.nn._scnn_kernel.scnn_pair`; the flow as
    given and in the layers' edge order)."""
    per_row = config.hidden_channels * max(config.num_layers - 1, 1) + 2
    return int(num_edges) * per_row * ACTIVATION_BYTES_PER_CHANNEL


def plan_gradient_caching(
    num_edges: int, config: ExperimentConfig, budget: int = DEFAULT_ACTIVATION_BUDGET
) -> CachingPlan | None:
    """Gradient caching for a training step whose encoder activations must fit ``budget``
    bytes; ``None`` when a whole batch of ``2 * batch_size`` views fits
    (:func:`activation_bytes` each: the plain step, the numbers of earlier versions).

    Otherwise a chunk takes at most ``1 / CHUNK_SHARE`` of the budget while it runs (at
    least one view), and the graphs of as many chunks as the rest holds
    (:func:`kept_bytes` a view; at least the first chunk's) are kept for the backward pass
    instead of being run again (Gao et al., 2021, with the kept graphs of this library;
    docs/design.md §7.10).

    Args:
        num_edges: edges of the complex, :math:`N_1`.
        config: the configuration (``batch_size``, ``hidden_channels``, ``num_layers``).
        budget: bytes for the encoder's activations (default 1 GiB).

    Returns:
        ``CachingPlan(chunk, kept)`` (views per chunk, kept chunks), or ``None``.

    Raises:
        TypeError: ``num_edges`` or ``budget`` not an int (``NaN``, ``1e9``).
        ValueError: a negative ``num_edges``, a ``budget`` below 1 byte.
    """
    num_edges = check_int(num_edges, "num_edges", 0)
    budget = check_int(budget, "budget", 1)
    per_view = max(1, activation_bytes(num_edges, config))
    views = 2 * config.batch_size
    if views * per_view <= budget:
        return None
    chunk = max(1, min(views, int(budget // (CHUNK_SHARE * per_view))))
    room = budget - chunk * per_view
    kept = int(room // (chunk * max(1, kept_bytes(num_edges, config))))
    chunks = -(-views // chunk)
    return CachingPlan(chunk, max(1, min(kept, chunks)))


def plan_chunk_samples(
    num_edges: int, config: ExperimentConfig, budget: int = DEFAULT_ACTIVATION_BUDGET
) -> int | None:
    """Views per chunk of a training step so that the encoder's activations fit
    ``budget`` bytes (:func:`plan_gradient_caching`'s ``chunk``); ``None`` when a whole
    batch fits."""
    plan = plan_gradient_caching(num_edges, config, budget)
    return None if plan is None else plan.chunk


def cached_gradient_step(
    net: nn.Module,
    loss_fn: nn.Module,
    x: Tensor | tuple[Tensor, ...],
    laplacians: Laplacians,
    num_views: int,
    chunk: int,
    loss_kwargs: dict[str, Any],
    kept: int = 1,
) -> tuple[Tensor, Tensor]:
    r"""One contrastive step's gradients with the encoder run on chunks of views (gradient
    caching), so that the loss's batch no longer sets the memory.

    Gao, Zhang, Han and Callan, "Scaling Deep Contrastive Learning Batch Size under Memory
    Limited Setup" (RepL4NLP 2021):

    1. embed all ``2B`` views chunk by chunk: :math:`\mathbf{z}` ``[2B, D]``, the first
       ``kept`` chunks with autograd (their graphs are kept), the others without;
    2. the loss of the detached :math:`\mathbf{z}` and its gradient
       :math:`\partial\ell/\partial\mathbf{z}` (the loss couples every pair, the encoder
       does not: every view is embedded on its own);
    3. per chunk, ``backward`` of :math:`\partial\ell/\partial\mathbf{z}_{chunk}`, through
       the kept graphs for the first ``kept`` chunks and a second forward pass with
       autograd for the others: the parameter gradients add up to those of the plain step,
       up to rounding.

    The encoder's activations are held for one chunk at a time, beside the kept graphs
    (:func:`plan_gradient_caching` sizes both); the cost is one more forward pass of the
    chunks not kept. Under DDP the gradients are all-reduced after the last chunk only.

    Args:
        net: the model ``net(x, laplacians, batch) -> (h, z)`` (:class:`ContrastiveModel`
            or its ``DistributedDataParallel`` wrapper), whose encoder embeds every sample on
            its own (no batch statistics).
        loss_fn: the loss ``loss_fn(z1, z2, **loss_kwargs)``.
        x: both views' flows, view 1 of every sample, then view 2 (``[2 * rows, 1]``); or
            the same rows as consecutive blocks (e.g. ``(view1, view2)``: no copy of both).
        laplacians: the :class:`~topo_contrastive.complex.Laplacians` of the ``B`` samples
            of one view (those of their shared complex, or their blocks).
        num_views: ``2B``.
        chunk: views per chunk, at least 1.
        loss_kwargs: the loss's keyword arguments (e.g. ``hodge_parts``).
        kept: chunks whose autograd graphs are kept from the first pass to the backward
            pass, at least 1 (default 1: the first chunk's only).

    Returns:
        ``(loss, z)``: the loss (detached) and the projections ``[2B, D]`` (detached); the
        parameters' ``.grad`` hold the step's gradients.

    Raises:
        TypeError: ``num_views``, ``chunk`` or ``kept`` not an int.
        ValueError: ``chunk`` or ``kept`` below 1; ``num_views`` odd or not the number of
            views in ``x`` (its rows are not those of ``num_views`` views on ``laplacians``,
            or a block of ``x`` holds part of a view).
    """
    chunk, kept = check_int(chunk, "chunk", 1), check_int(kept, "kept", 1)
    blocks = (x,) if isinstance(x, Tensor) else tuple(x)
    both = laplacians.repeat(2)  # the operators of view 1 of every sample, then view 2
    _check_views(blocks, both, check_int(num_views, "num_views", 2))
    bounds = [(lo, min(lo + chunk, num_views)) for lo in range(0, num_views, chunk)]

    def run(lo: int, hi: int) -> Tensor:
        L = both.blocks(lo, hi)
        rows = L.batch_vector(hi - lo, blocks[0].device)
        return net(_rows(blocks, *both.rows(lo, hi)), L, rows)[1]

    no_sync = getattr(net, "no_sync", None)  # DDP: one all-reduce, after the last chunk

    def sync_at(i: int) -> contextlib.AbstractContextManager:
        last = i == len(bounds) - 1
        return contextlib.nullcontext() if last or no_sync is None else no_sync()

    def embed_chunk(lo: int, hi: int) -> Tensor:
        out = run(lo, hi)
        release_freed_memory(FRAGMENTS_KEPT)  # chunks of blocks fragment the heap
        return out

    if no_sync is not None and len(bounds) > 1:
        # DDP prepares its all-reduce in the forward pass of the synced (last) chunk: that
        # forward must come right before its backward, after the other chunks' backwards
        kept = min(kept, len(bounds) - 1)
    graphs: list[Tensor | None] = []
    for i, (lo, hi) in enumerate(bounds[:kept]):
        with sync_at(i):  # with autograd: the graph serves this chunk's backward
            graphs.append(run(lo, hi))
    with torch.no_grad():
        rest = [embed_chunk(lo, hi) for lo, hi in bounds[kept:]]
    z = torch.cat([g.detach() for g in graphs] + rest)  # [2B, D]
    z.requires_grad_(True)
    B = num_views // 2
    loss = loss_fn(z[:B], z[B:], **loss_kwargs)
    (grad,) = torch.autograd.grad(loss, z)
    for i, (lo, hi) in enumerate(bounds):
        with sync_at(i):
            out = graphs[i] if i < len(graphs) else run(lo, hi)
            out.backward(grad[lo:hi])
        if i < len(graphs):
            graphs[i] = None
        out = None  # the chunk's graph is freed by its backward
        release_freed_memory(FRAGMENTS_KEPT)
    return loss.detach(), z.detach()


def _check_views(blocks: tuple[Tensor, ...], both: Laplacians, num_views: int) -> None:
    """``blocks`` hold the rows of ``num_views`` views on the operators ``both`` (of all the
    views), each block whole views."""
    sizes = [int(b.shape[0]) for b in blocks]
    ends = {both.rows(0, v)[1]: v for v in range(num_views + 1)} if num_views % 2 == 0 else {}
    total = both.rows(0, num_views)[1] if num_views % 2 == 0 else -1
    cuts = np.cumsum(sizes)
    if num_views % 2 or total != cuts[-1] or any(int(c) not in ends for c in cuts):
        raise ValueError(
            f"`num_views` must be the even number 2B of views in `x`, whose blocks hold "
            f"{sizes} rows (views of {both.num_cells // max(1, both.num_blocks)} rows on "
            f"operators of {both.num_cells} rows), got num_views = {num_views}"
        )


def _rows(blocks: tuple[Tensor, ...], a: int, b: int) -> Tensor:
    """The rows ``a .. b - 1`` of rows stored as consecutive ``blocks``: a slice where they
    lie in one block, else the slices concatenated."""
    pieces, start = [], 0
    for block in blocks:
        end = start + int(block.shape[0])
        if max(a, start) < min(b, end):
            pieces.append(block[max(a, start) - start : min(b, end) - start])
        start = end
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)
