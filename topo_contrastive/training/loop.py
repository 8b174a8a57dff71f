r"""Contrastive pre-training of an SCNN encoder (paper §4, Fig. 1) on one or several processes.

One step is the README's pipeline: a mini-batch of samples of the dataset fitted by the
configuration's :class:`~topo_contrastive.transforms.ContrastiveViews` comes through PyG's
``DataLoader``, the transform draws its two masked views (uniform or spectral masks), both
views go through the encoder :math:`f` (its public ``forward`` with the batch vector) and the
projection head :math:`g` in **one** call (``[2 B N1, 1]``, then split into
:math:`\mathbf{z}_1, \mathbf{z}_2`), and the loss is :class:`~topo_contrastive.losses.InfoNCE`
(eq. 4) or :class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE` (eq. 6) with the batch's
``hodge_parts`` (the Hodge parts of the *original* flows). The optimiser is the
configuration's: SGD with momentum (the paper's §5) or Adam, with weight decay.

**Distributed.** Under ``torchrun`` (an initialised ``torch.distributed`` process group),
:func:`pretrain` wraps encoder + head in ``DistributedDataParallel`` and builds the loss with
``gather_distributed=True``: every rank contrasts its anchors against the samples of all ranks,
and DDP's gradient averaging then optimises exactly the single-process loss on the concatenated
batch. Every rank walks the single process's sample order and batches, draws the masks of the
whole (global) batch with the single process's generator, and keeps a contiguous share of its
samples (:func:`_rank_share`), so the views, the loss and the training trajectory are those of
one process at the same batch size, up to floating-point rounding.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.utils.data.distributed import DistributedSampler
from torch_geometric.loader import DataLoader

from topo_contrastive._utils.checks import MAX_EPOCHS, check_int, check_seed
from topo_contrastive._utils.numerics import release_freed_memory
from topo_contrastive.complex import Laplacians
from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE, weights_from_cosines
from topo_contrastive.nn import SCNN, ProjectionHead
from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.gradient_caching import (
    FRAGMENTS_KEPT,
    cached_gradient_step,
)


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"``/``None`` -> CUDA if available else CPU; otherwise ``torch.device(device)``.

    Raises:
        ValueError: an unknown device string, a device type other than cpu and cuda (e.g.
            ``meta``), or CUDA asked for but not available.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r} (use cpu, cuda, cuda:N or auto)") from err
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(
            f"device {device!r} is not supported: training runs on cpu, cuda, cuda:N or auto"
        )
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available here")
    return dev


def make_optimizer(params: Any, config: ExperimentConfig) -> torch.optim.Optimizer:
    """SGD (with ``config.momentum``) or Adam, with ``config.lr`` and ``config.weight_decay``."""
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    return torch.optim.SGD(
        params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )


class ContrastiveModel(nn.Module):
    """Encoder :math:`f` and projection head :math:`g` in one module (what DDP wraps).

    Args:
        encoder: the SCNN (or any encoder with its interface).
        head: the projection head.
    """

    def __init__(self, encoder: nn.Module, head: ProjectionHead):
        super().__init__()
        self.encoder = encoder
        self.head = head

    def forward(
        self, x: Tensor, laplacians: Laplacians, batch: Tensor
    ) -> tuple[Tensor, Tensor]:
        """``x`` ``[rows, 1]`` on ``laplacians`` with its batch vector ``batch`` ``[rows]``
        -> ``(h [B, hidden], z [B, projection])``."""
        h = self.encoder(x, laplacians, batch)
        return h, self.head(h)


@dataclass
class PretrainResult:
    """What :func:`pretrain` returns.

    Attributes:
        encoder: the trained SCNN (on the training device, in eval mode).
        losses: mean loss of every epoch: the loss of the whole (global) batches, the same
            on every rank and the value one process records at the same batch size.
        seconds: wall time of the training loop.
        epochs: epochs run.
        world_size: number of processes.
        snapshots: ``{epoch: encoder state_dict}`` copies taken after the epochs asked for
            with ``snapshot_epochs`` (CPU tensors).
        chance_losses: for every epoch, the mean loss the same batches would have had with
            identical embeddings (all views mapped to one vector: a collapsed encoder), e.g.
            :math:`\\ln(2B - 1)` for InfoNCE with batches of ``B``; the reference that
            :func:`~topo_contrastive.training.diagnostics.pretrain_diagnostics` compares
            :attr:`losses` with.
        diagnostics: filled by
            :func:`~topo_contrastive.cli._runs.pretrain_to_folder` (empty otherwise).
    """

    encoder: SCNN
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    epochs: int = 0
    world_size: int = 1
    snapshots: dict[int, dict[str, Tensor]] = field(default_factory=dict)
    chance_losses: list[float] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)


def _dist_context() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _make_loss(config: ExperimentConfig, distributed: bool) -> nn.Module:
    if config.loss == "hodge_debiased":
        return HodgeDebiasedInfoNCE(
            temperature=config.temperature,
            gamma=tuple(config.gamma),
            gather_distributed=distributed,
        )
    return InfoNCE(temperature=config.temperature, gather_distributed=distributed)


def _batches(indices: list[int], batch_size: int, min_last: int = 2) -> list[list[int]]:
    """Consecutive chunks; a last chunk of fewer than ``min_last`` samples joins the previous
    one (the loss needs 2; under DDP every rank needs one sample of every batch)."""
    chunks = [indices[i : i + batch_size] for i in range(0, len(indices), batch_size)]
    if len(chunks) > 1 and len(chunks[-1]) < min_last:
        last = chunks.pop()
        chunks[-1] = chunks[-1] + last
    return chunks


def _rank_share(num_samples: int, rank: int, world: int) -> tuple[int, int]:
    """Rank ``rank``'s contiguous share ``[lo, hi)`` of a global batch of ``G =
    num_samples`` samples: ``[rank * G // W, (rank + 1) * G // W)`` of ``W = world`` ranks
    (at least one sample each when ``G >= W``; concatenated in rank order the shares are
    the batch in its order, as the loss gathers them)."""
    return rank * num_samples // world, (rank + 1) * num_samples // world


#: Edge rows (samples x N1) of one batch of :func:`embed` by default: about 0.5 GB of
#: float32 activations at width 64.
EMBED_ROWS = 2**19


def _training_views(
    data: ExperimentData, config: ExperimentConfig, seed: int, drop_prob: float | None
) -> tuple[Any, Any, Tensor | None]:
    """The views' transform, the dataset it draws from (Hodge parts and drop probabilities
    computed once) and, on a large dataset under the debiased loss, the cosines of all
    pairs ``[3, S, S]`` the negative weights come from instead of parts carried by the
    batches (the same weights up to rounding)."""
    # every rank draws the single process's masks: one generator, the global batch's samples
    # in the single process's order, then keeps its own share (_rank_share)
    mask_gen = torch.Generator().manual_seed(seed * 7919 + 1)
    debiased = config.loss == "hodge_debiased"
    by_cosines = (
        debiased and data.flows is not None and 24 * data.flows.numel() > STORED_PARTS_BYTES
    )
    views = data.contrastive_views(
        config, mask_gen, drop_prob=drop_prob, hodge_parts=debiased and not by_cosines
    )
    dataset = data.contrastive_dataset(views)
    return views, dataset, data.hodge_cosines() if by_cosines else None


def _checked_batch_size(config: ExperimentConfig, num_samples: int, world: int) -> int:
    """The batch size of pre-training (at least 2), refused under DDP where a batch would
    not give every process a sample."""
    batch_size = max(2, config.batch_size)
    if world > 1 and min(batch_size, num_samples) < world:
        raise ValueError(
            f"pre-training on {world} processes needs a sample of every batch for every "
            f"process, but batch_size={config.batch_size} (configuration {config.name!r}) and "
            f"{num_samples} samples give batches of {min(batch_size, num_samples)}; use a "
            f"batch_size of at least {world} or fewer processes"
        )
    return batch_size


def _global_losses(
    pair: tuple[Tensor, Tensor], world: int, config: ExperimentConfig, epoch: int
) -> tuple[float, float]:
    """The global batch's loss and collapsed-encoder loss (under DDP the mean of the
    ranks', as the loss's docs say), the loss checked finite; frees the step's heap."""
    loss, flat_loss = pair
    if world > 1:
        both = torch.stack([loss.detach(), flat_loss]).double()
        dist.all_reduce(both)
        loss, flat_loss = both / world
    release_freed_memory(FRAGMENTS_KEPT)  # a step's blocks fragment the heap
    return _finite_loss(loss, config, epoch), float(flat_loss)


def _finite_loss(loss: Tensor, config: ExperimentConfig, epoch: int) -> float:
    """The value of a training step's ``loss``.

    Raises:
        ValueError: it is NaN or infinite (divergence at the 0-based ``epoch``: lower
            ``config.lr``).
    """
    value = float(loss.detach())
    if not math.isfinite(value):
        raise ValueError(
            f"the loss of {config.name} became {value} at epoch {epoch + 1}; lower the "
            f"learning rate (lr={config.lr})"
        )
    return value


#: Bytes of the Hodge parts of all samples (``float64 [S, N_k, 3]``) above which
#: :func:`pretrain` weights the Hodge-debiased loss's negatives from the dataset's cosines
#: (:meth:`ExperimentData.hodge_cosines`, ``[3, S, S]``) instead of the parts stored on
#: the samples and carried by every batch (256 MiB; below it nothing changes).
STORED_PARTS_BYTES = 2**28


def pretrain(
    data: ExperimentData,
    config: ExperimentConfig,
    seed: int = 0,
    epochs: int | None = None,
    device: str | torch.device = "cpu",
    drop_prob: float | None = None,
    progress: Callable[[int, float], None] | None = None,
    snapshot_epochs: Sequence[int] = (),
    encoder: nn.Module | None = None,
    chunk_samples: int | None = None,
    kept_chunks: int = 1,
) -> PretrainResult:
    r"""Pre-train an SCNN encoder with a contrastive loss on all samples (transductive, no labels).

    Args:
        data: the prepared dataset (all its samples are used, without labels).
        config: a contrastive configuration (loss, mask, encoder, optimiser).
        seed: seed of the initialisation, the sample order and the masks (default 0); under
            DDP every rank draws the single process's order and masks for the whole batch and
            trains on its contiguous share of it, so the per-epoch losses and the weights are
            those of one process at the same ``batch_size``, up to rounding.
        epochs: epochs (default ``None``: ``config.epochs``).
        device: training device (default ``"cpu"``); the masks are drawn on the CPU.
        drop_prob: override of the uniform drop probability (default ``None``).
        progress: called as ``progress(epoch, mean_loss)`` after every epoch.
        snapshot_epochs: epochs (1-based) after which a copy of the encoder's weights is kept
            in :attr:`PretrainResult.snapshots` (e.g. to score several epoch counts with one
            run; the training itself is unchanged).
        encoder: the encoder to train instead of the configuration's SCNN, any module with
            the SCNN's interface ``encoder(x, laplacians) -> [B, D]`` and
            ``out_channels`` (e.g. :class:`~topo_contrastive.nn.TopoModelXEncoder`); trained
            in place (default ``None``: ``config``'s SCNN, initialised from ``seed``).
        chunk_samples: with ``2B`` views per batch above this many, the encoder runs on
            chunks of ``chunk_samples`` views with gradient caching
            (:func:`cached_gradient_step`): the same gradients, the memory of one chunk
            (default ``None``: the whole batch at once).
        kept_chunks: with ``chunk_samples``, the chunks whose autograd graphs are kept
            from the first pass to the backward pass instead of run again, at least 1
            (default 1; :func:`plan_gradient_caching` sizes both for a memory budget).

    Returns:
        :class:`PretrainResult` with the trained encoder.

    Raises:
        ValueError: a supervised configuration, ``epochs`` outside ``[1, 100000]``, a seed
            outside ``[0, 2**31 - 1]``, ``chunk_samples`` or ``kept_chunks`` below 1,
            non-finite loss (divergence: lower the learning rate), or under DDP batches of
            fewer samples than processes (``batch_size`` or the number of samples below the
            world size).
        TypeError: ``epochs``, ``seed``, ``chunk_samples`` or ``kept_chunks`` not an int.
    """
    if not config.is_contrastive:
        raise ValueError(f"configuration {config.name!r} is not contrastive; use train_supervised")
    epochs = config.epochs if epochs is None else check_int(epochs, "epochs", 1, MAX_EPOCHS)
    seed = check_seed(seed)
    chunk = None if chunk_samples is None else check_int(chunk_samples, "chunk_samples", 1)
    kept = check_int(kept_chunks, "kept_chunks", 1)
    dev = resolve_device(device)
    rank, world = _dist_context()
    distributed = world > 1

    batch_size = _checked_batch_size(config, data.num_samples, world)

    model, net = _contrastive_model(data, config, seed, dev, distributed, encoder)
    encoder = model.encoder
    recompute = getattr(encoder, "recompute_first_layer", None)  # restored after training
    if chunk is not None and isinstance(encoder, SCNN):
        # gradient caching's plan (kept_bytes) counts on the first layer being recomputed
        encoder.recompute_first_layer = True
    try:
        loss_fn = _make_loss(config, distributed)
        optimizer = make_optimizer(model.parameters(), config)
        views, dataset, cosines = _training_views(data, config, seed, drop_prob)
        # the single process's sample order on every rank (no sharding: no padding)
        sampler = DistributedSampler(
            range(data.num_samples), num_replicas=1, rank=0, shuffle=True, seed=seed
        )

        result = PretrainResult(encoder=encoder, world_size=world)
        release_freed_memory()  # the set-up's temporaries: the resident set is what is in use
        start = time.perf_counter()
        model.train()
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            batches = _batches(list(sampler), batch_size, min_last=max(2, world))
            loader = iter(DataLoader(dataset, batch_sampler=batches))
            losses = []  # (loss, the loss of a collapsed encoder) of every batch
            for ids in batches:
                # the collated batch is passed, not held here: the step frees it once drawn
                pair = _step(
                    net, loss_fn, views, data, next(loader), ids, cosines, (chunk, kept), dev
                )
                optimizer.step()
                losses.append(_global_losses(pair, world, config, epoch))
            mean = sum(v for v, _ in losses) / max(len(losses), 1)
            result.losses.append(mean)
            result.chance_losses.append(sum(c for _, c in losses) / max(len(losses), 1))
            if epoch + 1 in snapshot_epochs:
                result.snapshots[epoch + 1] = {
                    k: v.detach().cpu().clone() for k, v in encoder.state_dict().items()
                }
            if progress is not None:
                progress(epoch + 1, mean)
        result.seconds = time.perf_counter() - start
        result.epochs = epochs
        encoder.eval()
    finally:  # restored also when training fails (a diverged loss, an interrupt)
        if isinstance(encoder, SCNN):
            encoder.recompute_first_layer = recompute
    return result


def _step(
    net: nn.Module,
    loss_fn: nn.Module,
    views: Any,
    data: ExperimentData,
    batch: Any,
    ids: Sequence[int],
    cosines: Tensor | None,
    caching: tuple[int | None, int],
    dev: torch.device,
) -> tuple[Tensor, Tensor]:
    """The gradients of one global batch (in the parameters' ``.grad``) on this rank:
    both views drawn for the whole batch, this rank's share through the encoder (in one
    call, or with gradient caching: ``caching`` is ``(views per chunk, kept chunks)``,
    ``(None, _)`` for one call), the loss. Returns the
    loss and the loss a collapsed encoder would have on the batch (detached)."""
    rank, world = _dist_context()
    view1, view2 = views.draw(batch)  # both masked views of the global batch
    lo, hi = _rank_share(batch.num_graphs, rank, world)  # this rank's samples of the batch
    B = hi - lo
    full = data.laplacians(batch, dev)
    L, (a, b) = full.blocks(lo, hi), full.rows(lo, hi)  # this rank's samples' operators, rows
    kwargs = _loss_inputs(batch, ids, cosines, loss_fn, (lo, hi), (a, b), L, dev)
    del batch  # the collated flows and drop probabilities go; this rank's views stay
    view1, view2 = view1[a:b].to(dev), view2[a:b].to(dev)
    for p in net.parameters():
        p.grad = None
    chunk, kept = caching
    if chunk is None or chunk >= 2 * B:
        x, both = torch.cat([view1, view2]), L.repeat(2)  # [2 * rows, C]: view 1, then view 2
        del view1, view2
        _, z = net(x, both, both.batch_vector(2 * B, x.device))  # one forward: [2B, D]
        loss = loss_fn(z[:B], z[B:], **kwargs)
        loss.backward()
    else:  # gradient caching: the views as two blocks, no [2 * rows, 1] copy of both
        loss, z = cached_gradient_step(
            net, loss_fn, (view1, view2), L, 2 * B, chunk, kwargs, kept=kept
        )
    with torch.no_grad():  # the loss of a collapsed encoder on this batch
        flat = torch.ones_like(z[:B])
        flat_loss = loss_fn(flat, flat, **kwargs)
    return loss.detach(), flat_loss


def _loss_inputs(
    batch: Any,
    ids: Sequence[int],
    cosines: Tensor | None,
    loss_fn: nn.Module,
    share: tuple[int, int],
    rows: tuple[int, int],
    laplacians: Laplacians,
    dev: torch.device,
) -> dict[str, Tensor]:
    """The loss's keyword arguments for this rank's samples ``share = (lo, hi)`` (their
    ``rows``) of a global batch of the samples ``ids``: the negative weights from the
    dataset's ``cosines`` (rows of this rank, columns of the whole batch), or the batch's
    Hodge parts (with the batch vector where the samples have complexes of their own), or
    nothing (InfoNCE)."""
    lo, hi = share
    if cosines is not None:
        idx = torch.as_tensor(ids, dtype=torch.long)
        cos = cosines[:, idx[lo:hi]][:, :, idx]  # [3, B, G]: this rank's rows
        w = weights_from_cosines(cos, loss_fn.gamma, loss_fn.eps, anchor_offset=lo)
        return {"weights": w.to(dev)}  # [B, G]
    parts = batch.get("hodge_parts") if isinstance(loss_fn, HodgeDebiasedInfoNCE) else None
    if parts is None:
        return {}
    out = {"hodge_parts": parts[rows[0] : rows[1]].to(dev)}
    if laplacians.ptr is not None:  # samples on complexes of their own
        out["batch"] = laplacians.batch_vector(hi - lo, dev)
    return out


def _contrastive_model(
    data: ExperimentData,
    config: ExperimentConfig,
    seed: int,
    dev: torch.device,
    distributed: bool,
    given: nn.Module | None = None,
) -> tuple[ContrastiveModel, nn.Module]:
    """The encoder and projection head, initialised from ``seed`` (without touching the
    global random state), on ``dev``; and the module to train: the model, or its
    ``DistributedDataParallel`` wrapper."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = data.encoder(config) if given is None else given
        head = ProjectionHead(
            encoder.out_channels, config.projection_channels, config.projection_channels
        )
    model = ContrastiveModel(encoder, head).to(dev)
    net: nn.Module = model
    if distributed:
        net = nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index] if dev.type == "cuda" else None
        )
    return model, net


@torch.no_grad()
def embed(
    encoder: nn.Module,
    data: ExperimentData,
    device: str | torch.device = "cpu",
    batch_size: int | None = None,
) -> np.ndarray:
    """Embeddings :math:`\\mathbf{h} = f(\\mathbf{x})` of all samples (the readout, not
    the projection head), ``float64 [S, hidden]`` (NumPy, on the CPU).

    The samples run on ``device``; an encoder whose parameters are elsewhere (e.g. built or
    loaded on the CPU) is moved there for the call and moved back after it, with its
    training mode. On one shared complex each sample is embedded on its own, so the batch
    size changes the memory, not the numbers.

    Args:
        encoder: the encoder.
        data: the samples.
        device: where they run (default ``"cpu"``).
        batch_size: samples per forward pass (default ``None``: on one complex 200, fewer on
            large complexes so that a batch holds at most :data:`EMBED_ROWS` edge rows; 256
            samples with complexes of their own).

    Raises:
        ValueError: ``batch_size < 1``.
        TypeError: ``batch_size`` not an int.
    """
    if batch_size is None:
        per_sample = data.sizes[1] if data.complex is not None else 0
        batch_size = max(1, min(200, EMBED_ROWS // per_sample)) if per_sample else 256
    batch_size = check_int(batch_size, "batch_size", 1)
    dev = resolve_device(device)
    was_training = encoder.training
    home = next(iter(encoder.parameters()), torch.empty(0)).device
    encoder.eval().to(dev)
    try:
        out = []
        for start in range(0, data.num_samples, batch_size):
            idx = range(start, min(start + batch_size, data.num_samples))
            x, laplacians, rows = data.batch(idx, dev)
            out.append(encoder(x, laplacians, rows).double().cpu())
            del x, rows
            # batches of one sample on 10^6 edges leave freed blocks the heap does not
            # reuse (docs/design.md §7.11, "Freed memory")
            release_freed_memory(FRAGMENTS_KEPT)
    finally:
        encoder.to(home).train(was_training)
    return torch.cat(out).numpy()
