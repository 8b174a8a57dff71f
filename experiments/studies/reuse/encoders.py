"""The encoders of the many-complex studies (reuse, many complexes): one SCNN, pre-trained,
embedded, trained with labels, on samples with complexes of their own
(:class:`~topo_contrastive.data.ComplexData`; a ``DataLoader`` batch is one complex with
block-diagonal operators, ``batch.laplacians()``, pooled by ``batch.batch_1``).

:func:`pretrain_encoder` keeps its own loop rather than the library's
:func:`~topo_contrastive.training.pretrain`: the studies' documented results
(docs/results/reuse.md, many_complexes.md) come from its sample order (a seeded
``DataLoader`` shuffle), its masks' generators and its two forward passes; the library's
loop draws another order (a ``DistributedSampler``) and other masks, so the numbers would
change.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

#: The pre-training configurations.
CONFIGS: tuple[str, ...] = ("SSCL_Spec", "SCL")


def scnn_encoder(hidden: int, layers: int) -> torch.nn.Module:
    """An :class:`~topo_contrastive.nn.SCNN` (``layers`` x ``hidden``, ``K_down = K_up = 2``,
    no bias) with the basis-free ``HodgeReadout(None, energies=True)``: one encoder reads
    samples of any complex."""
    from topo_contrastive.nn import SCNN, HodgeReadout

    # bias-free layers: per-edge features turn with the edges, so the energies of the
    # basis-free readout do not depend on the edge orientations
    return SCNN(1, hidden, num_layers=layers, K_down=2, K_up=2, bias=False,
                readout=HodgeReadout(None, energies=True))  # fmt: skip


def topomodelx_encoder(hidden: int, layers: int) -> torch.nn.Module:
    """TopoModelX's ``SCNN`` (``layers`` x ``hidden``, filter orders 2, TopoModelX 0.0.1's
    linear layers) behind :class:`~topo_contrastive.nn.TopoModelXEncoder` with the basis-free
    ``"energies"`` readout; its layers build a dense identity of the batch's edges (keep
    batches to a few thousand edges). Raises ``ImportError`` without TopoModelX."""
    from topo_contrastive.nn import TopoModelXEncoder

    return TopoModelXEncoder("scnn", readout="energies", in_channels=1, hidden_channels=hidden,
                             conv_order_down=2, conv_order_up=2, n_layers=layers)  # fmt: skip


def require_own_complexes(dataset: Any) -> None:
    """Refuse an empty ``dataset``, or one whose samples have no complexes of their own
    (:class:`~topo_contrastive.data.ComplexData` with incidences), with a ``ValueError``."""
    from topo_contrastive.data import ComplexData

    if len(dataset) == 0 or not isinstance(dataset[0], ComplexData) or dataset[0].is_shared:
        raise ValueError(
            "`dataset` must hold samples with complexes of their own (ComplexData with "
            f"incidences), got {'no sample' if len(dataset) == 0 else type(dataset[0]).__name__}"
            " without one"
        )


def embed_samples(encoder: torch.nn.Module, dataset: Any, batch_size: int = 256
                  ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The embeddings ``float32 [S, D]`` and labels ``[S]`` of every sample of ``dataset``
    (samples with their own complexes, ``x_1`` and ``y``), in evaluation mode."""
    from torch_geometric.loader import DataLoader

    encoder.eval()
    hs, ys = [], []
    with torch.no_grad():
        for batch in DataLoader(dataset, batch_size=batch_size):
            hs.append(encoder(batch.x_1, batch.laplacians(), batch.batch_1))
            ys.append(batch.y.view(-1))
    return torch.cat(hs).numpy(), torch.cat(ys).numpy()


def part_energy_features(encoder: torch.nn.Module, dataset: Any, batch_size: int = 256
                         ) -> np.ndarray:  # fmt: skip
    r"""The energy fractions of the Hodge parts of every channel of the encoder's edge
    features, per sample: ``float32 [S, 3 * C]`` (gradient, curl and harmonic fractions of
    channel 0, then of channel 1, ...), each sample decomposed on its own complex.

    .. math::
        f_{k,c} = \lVert \mathbf{P}_k \mathbf{h}_c \rVert^2 \,/\,
        \lVert \mathbf{h}_c \rVert^2, \qquad k \in \{G, C, H\}

    (paper eq. 1; zero for an all-zero channel): basis-free like the encoder's readout, but
    with the harmonic part. ``encoder``: an SCNN (its ``edge_embeddings``).

    Raises:
        ValueError: ``dataset`` is empty or its samples have no complexes of their own.
    """
    from torch_geometric.loader import DataLoader

    from topo_contrastive.hodge import HodgeDecomposition
    from topo_contrastive.losses import energy_fractions

    require_own_complexes(dataset)
    encoder.eval()
    out = []
    with torch.no_grad():
        for batch in DataLoader(dataset, batch_size=batch_size):
            H = encoder.edge_embeddings(batch.x_1, batch.laplacians(), batch.batch_1)
            parts = HodgeDecomposition(batch.complex())(H.T.double())  # 3 x [C, sum N1]
            B, C = batch.num_graphs, H.shape[1]
            # every (channel, sample) pair as one flow: rows [C * sum N1, 3], group c * B + b
            rows = torch.stack(tuple(parts), dim=-1).reshape(-1, 3)
            groups = (torch.arange(C).view(-1, 1) * B + batch.batch_1.view(1, -1)).reshape(-1)
            frac = energy_fractions(rows, groups, C * B).view(C, B, 3)
            out.append(frac.transpose(0, 1).reshape(B, -1).float())  # [B, C * 3]
    return torch.cat(out).numpy()


def pretrain_encoder(
    dataset: Any,
    config: str = "SSCL_Spec",
    *,
    hidden: int = 32,
    layers: int = 2,
    epochs: int = 20,
    batch_size: int = 64,
    seed: int = 0,
    budget: float = 0.3,
    temperature: float = 0.5,
    fit: bool = True,
    encoder: torch.nn.Module | None = None,
) -> torch.nn.Module:
    """Pre-train an encoder with two masked views of every sample, no labels; returns it (in
    training mode).

    Args:
        dataset: an ``InMemoryDataset`` of samples with their own complexes (``x_1``
            ``[N1, 1]``); not modified (a copy gets the views as its transform).
        config: ``"SSCL_Spec"`` (``HodgeSpectralMask`` and ``HodgeDebiasedInfoNCE``) or
            ``"SCL"`` (``EdgeFlowMask`` and ``InfoNCE``); an unknown one: ``ValueError``.
        hidden, layers, epochs, batch_size, budget, temperature: the encoder, the passes
            over ``dataset``, the samples per batch, the masks' budget, the temperature.
        seed: seed of the weights, the views and the order.
        fit: compute the drop probabilities and Hodge parts (``False``: the samples of a
            dataset fitted with the same budget carry them).
        encoder: the module to pre-train in place, after ``torch.manual_seed(seed)`` (the
            SCNN's interface, e.g. :func:`topomodelx_encoder`; default: a new
            :func:`scnn_encoder`).
    """
    from torch_geometric.loader import DataLoader

    from topo_contrastive import ContrastiveViews, EdgeFlowMask, HodgeSpectralMask
    from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE
    from topo_contrastive.nn import ProjectionHead

    if config not in CONFIGS:
        raise ValueError(f"`config` must be one of {CONFIGS}, got {config!r}")
    torch.manual_seed(seed)
    if encoder is None:
        encoder = scnn_encoder(hidden, layers)
    head = ProjectionHead(encoder.out_channels, hidden, hidden)
    spectral = config == "SSCL_Spec"
    if spectral:
        views = ContrastiveViews(HodgeSpectralMask(budget=budget, generator=seed))
        loss_fn: Any = HodgeDebiasedInfoNCE(temperature)
    else:
        views = ContrastiveViews(EdgeFlowMask(budget, generator=seed), hodge_parts=False)
        loss_fn = InfoNCE(temperature)
    dataset = dataset.copy()
    dataset.transform = views
    if fit:
        dataset = views.fit(dataset)  # drop probabilities and Hodge parts, per complex
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))  # fmt: skip
    encoder.train()
    for _ in range(epochs):
        for batch in loader:
            L = batch.laplacians()  # block-diagonal [sum N1, sum N1]
            z1 = head(encoder(batch.x_1_view1, L, batch.batch_1))
            z2 = head(encoder(batch.x_1_view2, L, batch.batch_1))
            if spectral:
                loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts, batch=batch.batch_1)
            else:
                loss = loss_fn(z1, z2)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return encoder


def train_with_labels(
    dataset: Any,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    hidden: int = 32,
    layers: int = 2,
    epochs: int = 20,
    batch_size: int = 64,
    seed: int = 0,
    encoder: torch.nn.Module | None = None,
    num_classes: int = 2,
) -> float:
    """Test accuracy of an encoder and a linear layer trained with cross-entropy on the
    labelled samples ``train_idx`` (of ``dataset``: samples with their own complexes, ``x_1``
    and ``y``) for ``epochs`` passes (no selection: with a few labels there is nothing to
    select on), Adam at learning rate 1e-3, seeded ``seed``; scored on ``test_idx``. With
    ``encoder``: a copy of it, every weight trained (fine-tuning); else a new
    :func:`scnn_encoder` ``(hidden, layers)`` (the supervised SCNN).
    """
    from torch_geometric.loader import DataLoader

    torch.manual_seed(seed)
    enc = scnn_encoder(hidden, layers) if encoder is None else copy.deepcopy(encoder)
    linear = torch.nn.Linear(enc.out_channels, num_classes)
    opt = torch.optim.Adam([*enc.parameters(), *linear.parameters()], lr=1e-3)
    train = DataLoader(dataset[torch.as_tensor(train_idx)], batch_size=batch_size,
                       shuffle=True, generator=torch.Generator().manual_seed(seed))  # fmt: skip
    enc.train()
    for _ in range(epochs):
        for b in train:
            logits = linear(enc(b.x_1, b.laplacians(), b.batch_1))
            loss = torch.nn.functional.cross_entropy(logits, b.y.view(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    enc.eval()
    correct = 0
    with torch.no_grad():
        for b in DataLoader(dataset[torch.as_tensor(test_idx)], batch_size=256):
            pred = linear(enc(b.x_1, b.laplacians(), b.batch_1)).argmax(1)
            correct += int((pred == b.y.view(-1)).sum())
    return correct / len(test_idx)
