"""Pre-training and embedding on a dataset of many complexes (one complex per sample).

A many-complex file (:class:`~topo_contrastive.datasets.ManyComplexFlows`) is held as
:class:`ManyComplexData`, the counterpart of
:class:`~topo_contrastive.training.ExperimentData` without the one complex: its samples
are :class:`~topo_contrastive.data.ComplexData`, batched by PyG's ``DataLoader`` into one
complex with block-diagonal operators (``batch.laplacians()``), pooled by ``batch.batch_1``.

Across complexes the encoder reads out with the basis-free
:class:`~topo_contrastive.nn.HodgeReadout` ``(None, energies=True)`` (the mean over edges and
every channel's gradient and curl energies; a harmonic basis belongs to one complex). The
configuration gives everything else (width, depth, filter orders, masks, loss, optimiser,
batch size); a string readout (``--readout mean``) is kept.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.loop import (
    PretrainResult,
    _batches,
    _finite_loss,
    _make_loss,
    make_optimizer,
    resolve_device,
)

__all__ = [
    "LAYOUT",
    "READOUT_LINE",
    "ManyComplexData",
    "embed_many",
    "load_many_encoder",
    "many_encoder",
    "pretrain_many",
]

#: The one line the commands print about the readout on many complexes.
READOUT_LINE = (
    "many complexes: the encoder reads out with the basis-free HodgeReadout (the mean over "
    "edges and every channel's gradient and curl energies; no harmonic basis, which belongs "
    "to one complex)"
)
#: The ``data_layout`` entry of checkpoints and run records on many complexes.
LAYOUT = "many complexes"


@dataclass
class ManyComplexData:
    """A dataset of many complexes prepared for the commands.

    Attributes:
        name: the data's name (the file's stem).
        dataset: the :class:`~topo_contrastive.datasets.ManyComplexFlows`.
        labels: ``int64 [S]`` class ids ``0 .. C-1``, or ``None`` for unlabelled data.
        label_values: ``int64 [C]`` the label value of every class id, or ``None``.

    Raises:
        TypeError: labels that are not integral.
    """

    name: str
    dataset: Any
    labels: torch.Tensor | None = None
    label_values: torch.Tensor | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from topo_contrastive.utils.checks import class_ids

        raw = getattr(self.dataset, "labels", None)
        if raw is not None:
            ids, values = class_ids(raw, "labels")
            self.labels = torch.from_numpy(ids)
            self.label_values = torch.from_numpy(values)

    @classmethod
    def from_file(cls, path: str | os.PathLike, name: str | None = None) -> ManyComplexData:
        """Read a many-complex file.

        Raises:
            ValueError / TypeError: as :func:`~topo_contrastive.datasets.read_many_complexes`.
        """
        from topo_contrastive.datasets import ManyComplexFlows

        return cls(name or Path(path).stem, ManyComplexFlows(path))

    @property
    def num_samples(self) -> int:
        """Number of samples ``S``."""
        return len(self.dataset)

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(N0, N1, N2)`` summed over the samples."""
        counts = self.dataset._data.cell_counts.reshape(-1, 3).sum(0)
        return (int(counts[0]), int(counts[1]), int(counts[2]))

    def require_labels(self, what: str) -> torch.Tensor:
        """The class ids ``int64 [S]``; a ``ValueError`` naming ``what`` for unlabelled data."""
        if self.labels is None:
            raise ValueError(
                f"{what} needs labels, but the data {self.name!r} has none (give the key 'y' "
                "of the many-complex file); pre-training and `embed` work without"
            )
        return self.labels

    def original_labels(self) -> torch.Tensor | None:
        """The label values as given (``int64 [S]``), or ``None``."""
        if self.labels is None or self.label_values is None:
            return self.labels
        return self.label_values[self.labels]

    def split(self, seed: int) -> dict[str, np.ndarray]:
        """Indices of the train / val / test samples of split ``seed``."""
        masks = self.dataset.split(int(seed))
        return {k: np.flatnonzero(v.numpy()) for k, v in masks.items()}


def many_encoder(config: ExperimentConfig) -> torch.nn.Module:
    """The configuration's :class:`~topo_contrastive.nn.SCNN` for samples of any complex:
    its readout ``"hodge"`` becomes the basis-free ``HodgeReadout(None, energies=True)``; a
    string readout is kept."""
    from topo_contrastive.nn import SCNN, HodgeReadout

    readout: Any = config.readout
    if readout == "hodge":
        readout = HodgeReadout(None, energies=True)
    return SCNN(in_channels=1, hidden_channels=config.hidden_channels,
                num_layers=config.num_layers, K_down=config.K_down, K_up=config.K_up,
                act=config.act, readout=readout, normalize=config.normalize, bias=config.bias,
                input_skip=config.input_skip)  # fmt: skip


def _views(config: ExperimentConfig, seed: int) -> Any:
    """The configuration's masks, unbound: each sample's on its own complex."""
    from topo_contrastive.transforms import ContrastiveViews, EdgeFlowMask, HodgeSpectralMask

    gen = torch.Generator().manual_seed(seed * 7919 + 1)
    if config.mask == "spectral":
        mask: Any = HodgeSpectralMask(
            budget=config.budget, perturb=tuple(config.perturb),
            preserve=tuple(config.preserve), num_steps=int(config.mask_steps), generator=gen,
        )  # fmt: skip
    else:
        mask = EdgeFlowMask(config.drop_prob, generator=gen)
    return ContrastiveViews(mask, hodge_parts=config.loss == "hodge_debiased")


def _loader(dataset: Any, batch_size: int, **kwargs: Any) -> Any:
    from torch_geometric.loader import DataLoader

    return DataLoader(dataset, batch_size=batch_size, **kwargs)


def pretrain_many(
    data: ManyComplexData,
    config: ExperimentConfig,
    seed: int = 0,
    epochs: int | None = None,
    device: str | torch.device = "cpu",
    progress: Callable[[int, float], None] | None = None,
) -> Any:
    """Pre-train :func:`many_encoder` with ``config``'s masks, loss and optimiser on every
    sample (no labels), each sample's views drawn on its own complex.

    Returns:
        A :class:`~topo_contrastive.training.PretrainResult`.

    Raises:
        ValueError: a supervised configuration; fewer than two samples; a non-finite loss.
    """
    from topo_contrastive.nn import ProjectionHead

    if not config.is_contrastive:
        raise ValueError(f"configuration {config.name!r} is not contrastive")
    if data.num_samples < 2:
        raise ValueError(f"pre-training needs at least 2 samples, {data.name!r} has 1")
    epochs = config.epochs if epochs is None else int(epochs)
    dev = resolve_device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = many_encoder(config)
        head = ProjectionHead(encoder.out_channels, config.projection_channels,
                              config.projection_channels)  # fmt: skip
    encoder.to(dev)
    head.to(dev)
    loss_fn = _make_loss(config, distributed=False)
    debiased = config.loss == "hodge_debiased"
    optimizer = make_optimizer([*encoder.parameters(), *head.parameters()], config)
    views = _views(config, seed)
    dataset = data.dataset.copy()
    dataset.transform = views
    dataset = views.fit(dataset)  # drop probabilities and Hodge parts, per complex
    order = torch.Generator().manual_seed(seed)
    result = PretrainResult(encoder=encoder, world_size=1)
    start = time.perf_counter()
    encoder.train()
    for epoch in range(epochs):
        perm = torch.randperm(data.num_samples, generator=order).tolist()
        total, chance, count = 0.0, 0.0, 0
        for batch in _loader(dataset, 1, batch_sampler=_batches(perm, config.batch_size)):
            batch = batch.to(dev)
            L = batch.laplacians(device=dev)
            z1 = head(encoder(batch.x_1_view1, L, batch.batch_1))  # [B, D]
            z2 = head(encoder(batch.x_1_view2, L, batch.batch_1))
            kwargs = ({"hodge_parts": batch.hodge_parts, "batch": batch.batch_1} if debiased
                      else {})  # fmt: skip
            loss = loss_fn(z1, z2, **kwargs)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                flat = torch.ones_like(z1)
                chance += float(loss_fn(flat, flat, **kwargs))
            value = _finite_loss(loss, config, epoch)
            total += value
            count += 1
        result.losses.append(total / max(count, 1))
        result.chance_losses.append(chance / max(count, 1))
        if progress is not None:
            progress(epoch + 1, result.losses[-1])
    result.seconds = time.perf_counter() - start
    result.epochs = epochs
    encoder.eval()
    return result


@torch.no_grad()
def embed_many(
    encoder: torch.nn.Module,
    data: ManyComplexData,
    device: str | torch.device = "cpu",
    batch_size: int = 256,
) -> np.ndarray:
    """The embeddings ``float64 [S, D]`` of every sample, each on its own complex (the
    encoder in evaluation mode on ``device``, moved back with its mode after the call).

    Raises:
        ValueError: ``batch_size < 1``.
    """
    from topo_contrastive.utils.checks import check_int

    batch_size = check_int(batch_size, "batch_size", 1)
    dev = resolve_device(device)
    was_training = encoder.training
    home = next(iter(encoder.parameters()), torch.empty(0)).device
    encoder.eval().to(dev)
    try:
        out = []
        for batch in _loader(data.dataset, batch_size):
            batch = batch.to(dev)
            h = encoder(batch.x_1, batch.laplacians(device=dev), batch.batch_1)
            out.append(h.double().cpu())
    finally:
        encoder.to(home).train(was_training)
    return torch.cat(out).numpy()


def load_many_encoder(
    path: str | os.PathLike, expected: Mapping[str, Any] | None = None
) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Load a saved encoder for samples of any complex (no complex given).

    Raises:
        ValueError: as :func:`topo_contrastive.io.load_encoder`; an encoder whose
            ``HodgeReadout`` holds the harmonic basis of the one complex it was pre-trained on
            (it cannot read other complexes; the message says what to do).
    """
    from topo_contrastive import io

    try:
        return io.load_encoder(path, expected=dict(expected or {}))
    except ValueError as err:
        if "HodgeReadout, which needs the complex" not in str(err):
            raise
        raise ValueError(
            f"checkpoint '{path}' reads out with a HodgeReadout tied to the one complex it was "
            "pre-trained on (its harmonic basis), so it cannot read a data file of many "
            "complexes: pre-train on the many-complex file (`pretrain --data-file` uses the "
            "basis-free HodgeReadout there), or use an encoder with a mean/sum/max readout"
        ) from None
