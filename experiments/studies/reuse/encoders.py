"""The encoders of the many-complex studies: one SCNN, pre-trained, embedded, trained with labels.

Everything runs through the public PyG pipeline on samples with complexes of their own
(:class:`~topo_contrastive.data.ComplexData`): a ``DataLoader`` batch is one complex with
block-diagonal operators (``batch.laplacians()``), pooled by the batch vector
``batch.batch_1``; the views come from an unbound
:class:`~topo_contrastive.ContrastiveViews`, fitted once per dataset (drop probabilities and
Hodge parts, each on its own complex).

- :func:`scnn_encoder`: the encoder (bias-free, basis-free
  :class:`~topo_contrastive.nn.HodgeReadout` with energies);
- :func:`topomodelx_encoder`: TopoModelX's SCNN through the adapter, as a second architecture;
- :func:`pretrain_encoder`: contrastive pre-training without labels (``"SSCL_Spec"``:
  Hodge-aware masks and the Hodge-debiased loss; ``"SCL"``: uniform masks and InfoNCE);
- :func:`embed_samples`: the embeddings of a dataset;
- :func:`part_energy_features`: a readout for the probe that keeps the harmonic energy:
  the energy fractions of every channel's Hodge parts;
- :func:`train_with_labels`: the encoder and a linear layer trained with cross-entropy on
  labelled samples (from scratch: the supervised SCNN; from a pre-trained encoder: fine-tuning),
  scored on test samples.

Source: Möllers et al., "Hodge-Aware Contrastive Learning", ICASSP 2024 (the encoder, the
masks and the loss); the many-complex layout of PyG's ``Batch``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

#: The pre-training configurations.
CONFIGS: tuple[str, ...] = ("SSCL_Spec", "SCL")


def scnn_encoder(hidden: int, layers: int) -> torch.nn.Module:
    """An :class:`~topo_contrastive.nn.SCNN` of ``layers`` layers of width ``hidden``
    (``K_down = K_up = 2``, no bias) with the basis-free
    :class:`~topo_contrastive.nn.HodgeReadout` ``(None, energies=True)``: its output does not
    depend on the complex, so one encoder reads samples of any complex.

    Raises:
        ValueError: ``hidden`` or ``layers`` below 1 (from the SCNN).
    """
    from topo_contrastive.nn import SCNN, HodgeReadout

    # bias-free layers: per-edge features turn with the edges, so the energies of the
    # basis-free readout do not depend on the edge orientations
    return SCNN(1, hidden, num_layers=layers, K_down=2, K_up=2, bias=False,
                readout=HodgeReadout(None, energies=True))  # fmt: skip


def topomodelx_encoder(hidden: int, layers: int) -> torch.nn.Module:
    r"""TopoModelX's ``SCNN`` (``layers`` layers of width ``hidden``, filter orders 2 and 2, no
    nonlinearity: TopoModelX 0.0.1's default) behind the adapter
    :class:`~topo_contrastive.nn.TopoModelXEncoder` with the basis-free ``"energies"`` readout
    (per channel :math:`\tfrac{1}{N_1}\mathbf{h}^\top\mathbf{L}_\downarrow\mathbf{h}` and
    :math:`\tfrac{1}{N_1}\mathbf{h}^\top\mathbf{L}_\uparrow\mathbf{h}`), which reads samples
    of any complex.

    TopoModelX's layers build a dense identity of the batch's edges: keep batches to a few
    thousand edges (a few dozen complexes of a few hundred edges).

    Raises:
        ImportError: TopoModelX is not installed (the ``topomodelx`` extra).
    """
    from topo_contrastive.nn import TopoModelXEncoder

    return TopoModelXEncoder("scnn", readout="energies", in_channels=1, hidden_channels=hidden,
                             conv_order_down=2, conv_order_up=2, n_layers=layers)  # fmt: skip


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

    (paper eq. 1; zero for an all-zero channel). Basis-free like the encoder's readout, but
    with the harmonic part, which the readout's gradient and curl energies leave out.

    Args:
        encoder: an SCNN (its ``edge_embeddings``).
        dataset: samples with their own complexes (``x_1``).
        batch_size: samples per batch (default 256).

    Raises:
        ValueError: ``dataset`` is empty or its samples carry no complex of their own
            (``ComplexData`` with incidences); flows of another size (from the encoder).
    """
    from torch_geometric.loader import DataLoader

    from topo_contrastive.data import ComplexData
    from topo_contrastive.hodge import HodgeDecomposition
    from topo_contrastive.losses import energy_fractions

    if len(dataset) == 0 or not isinstance(dataset[0], ComplexData) or dataset[0].is_shared:
        raise ValueError(
            "`dataset` must hold samples with complexes of their own (ComplexData with "
            f"incidences), got {'no sample' if len(dataset) == 0 else type(dataset[0]).__name__}"
            " without one"
        )
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
    """Pre-train an encoder (by default a new :func:`scnn_encoder`) with two masked views of
    every sample, no labels.

    Args:
        dataset: an ``InMemoryDataset`` of samples with their own complexes (``x_1``
            ``[N1, 1]``); it is not modified (a copy gets the views as its transform).
        config: ``"SSCL_Spec"`` (:class:`~topo_contrastive.HodgeSpectralMask` and
            :class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE`, energy-fraction weights)
            or ``"SCL"`` (:class:`~topo_contrastive.EdgeFlowMask` and InfoNCE).
        hidden, layers: the encoder's width and depth (default 32, 2).
        epochs: passes over ``dataset`` (default 20).
        batch_size: samples per batch (default 64).
        seed: seed of the weights, the views and the order (default 0).
        budget: the masks' budget (default 0.3).
        temperature: the loss's temperature (default 0.5).
        fit: compute the drop probabilities and Hodge parts (``ContrastiveViews.fit``);
            ``False`` when the samples carry them already (``drop_prob``, ``hodge_parts``
            of a fitted dataset with the same budget; default ``True``).
        encoder: the module to pre-train, in place, after ``torch.manual_seed(seed)`` (any
            module with the SCNN's ``forward(x, (L_down, L_up), batch) -> [B, D]`` and
            ``out_channels``, e.g. :func:`topomodelx_encoder`; default ``None``: a new
            :func:`scnn_encoder` ``(hidden, layers)`` built after the seed).

    Returns:
        The encoder (in training mode).

    Raises:
        ValueError: an unknown ``config``.
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
    labelled samples ``train_idx`` for a fixed number of epochs (no selection: with a few
    labels there is nothing to select on), Adam at learning rate 1e-3.

    Args:
        dataset: an ``InMemoryDataset`` of samples with their own complexes (``x_1``, ``y``).
        train_idx, test_idx: ``int [n]`` / ``int [m]`` sample indices.
        hidden, layers: the width and depth of a new encoder (default 32, 2).
        epochs: passes over the labelled samples (default 20).
        batch_size: samples per batch (default 64).
        seed: seed of the weights and the order (default 0).
        encoder: start from (a copy of) this encoder, all its weights trained: fine-tuning
            (default ``None``: a new :func:`scnn_encoder`, the supervised SCNN).
        num_classes: classes of the linear layer (default 2).

    Returns:
        The test accuracy in ``[0, 1]``.
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
