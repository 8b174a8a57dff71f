"""The supervised SCNN baseline of Table 1: the same encoder, a linear classifier, cross-entropy."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch import nn

from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.loop import make_optimizer, resolve_device

#: Fraction of the training split held out for model selection when a task has no validation
#: split (the ocean drifters).
VALIDATION_FRACTION = 0.2


@dataclass
class SupervisedResult:
    """What :func:`train_supervised` returns (accuracies are fractions in ``[0, 1]``).

    Attributes:
        test_accuracy: test accuracy of the selected model.
        val_accuracy: its validation accuracy.
        train_accuracy: its training accuracy.
        best_epoch: the selected epoch (1-based).
        val_history: validation accuracy after every epoch.
        seconds: wall time.
        carved_validation: whether the validation samples were carved out of the training split.
        train_history: running training accuracy of every epoch (over its mini-batches).
        epochs_run: epochs trained (fewer than the maximum when training stopped early).
    """

    test_accuracy: float
    val_accuracy: float
    train_accuracy: float
    best_epoch: int
    val_history: list[float] = field(default_factory=list)
    seconds: float = 0.0
    carved_validation: bool = False
    train_history: list[float] = field(default_factory=list)
    epochs_run: int = 0


def carve_validation(
    train_idx: np.ndarray, labels: np.ndarray, seed: int, fraction: float = VALIDATION_FRACTION
) -> tuple[np.ndarray, np.ndarray]:
    """Split ``train_idx`` into (train, validation) parts, stratified by label.

    Used when a task has no validation split (the ocean drifters): 20% of the training split
    by default.

    Raises:
        ValueError: a seed outside ``[0, 2**31 - 1]``.
    """
    from topo_contrastive._utils.checks import check_seed

    seed = check_seed(seed)
    tr, va = train_test_split(
        np.asarray(train_idx),
        test_size=fraction,
        stratify=np.asarray(labels)[train_idx],
        random_state=seed,
    )
    return np.sort(tr), np.sort(va)


class _Classifier(nn.Module):
    def __init__(self, config: ExperimentConfig, num_classes: int, data: ExperimentData):
        super().__init__()
        self.encoder = data.encoder(config)
        self.linear = nn.Linear(self.encoder.out_channels, num_classes)

    def forward(self, x: torch.Tensor, laplacians: Any, batch: torch.Tensor) -> torch.Tensor:
        return self.linear(self.encoder(x, laplacians, batch))  # [B, classes]


def _scores(
    model: nn.Module, data: ExperimentData, labels: torch.Tensor, idx: np.ndarray, dev: torch.device
) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) of ``model`` on samples ``idx`` (in eval mode, then
    back in training mode)."""
    model.eval()
    with torch.no_grad():
        logits = model(*data.batch(idx, dev)).cpu()
    model.train()
    y = labels[torch.as_tensor(idx)]
    acc = float((logits.argmax(dim=1) == y).float().mean())
    return acc, float(nn.functional.cross_entropy(logits, y))


def train_supervised(
    data: ExperimentData,
    config: ExperimentConfig,
    split: dict[str, np.ndarray],
    seed: int = 0,
    epochs: int | None = None,
    device: str | torch.device = "cpu",
    progress: Callable[[int, float], None] | None = None,
) -> SupervisedResult:
    r"""Train the supervised SCNN baseline on one split and select it on validation accuracy.

    The encoder of ``config`` followed by a linear layer, trained with cross-entropy and the
    configuration's optimiser on the labelled training samples (batch size
    ``config.batch_size``); after every epoch the validation accuracy is measured and the
    parameters of the best epoch are kept (highest validation accuracy; ties go to the lower
    validation cross-entropy, then to the earlier epoch). With ``config.patience > 0``
    training stops early once neither the validation accuracy nor the running training
    accuracy has reached a new best for ``patience`` epochs (the validation score has
    plateaued and the training accuracy has converged; a validation loss still falling at
    the same accuracy does not count); ``epochs`` is then the maximum.
    When ``split["val"]`` is
    empty (ocean drifters), 20% of the training split
    (stratified, seeded) is held out as validation set (:func:`carve_validation`).

    Args:
        data: the prepared dataset.
        config: the ``SCNN`` configuration.
        split: ``{"train": idx, "val": idx, "test": idx}`` sample indices.
        seed: seed of initialisation, sample order and carving (default 0).
        epochs: (maximum) epochs (default ``None``: ``config.epochs``).
        device: training device (default ``"cpu"``).
        progress: called as ``progress(epoch, val_accuracy)`` after every epoch.

    Returns:
        :class:`SupervisedResult`.

    Raises:
        ValueError: empty train/test split or a non-finite loss.
    """
    epochs = config.epochs if epochs is None else int(epochs)
    dev = resolve_device(device)
    labels_np = data.require_labels("the supervised baseline").numpy()
    from topo_contrastive._utils.checks import check_seed

    seed = check_seed(seed)
    train_idx, val_idx, test_idx, carved = _split_indices(split, labels_np, seed)
    num_classes = int(labels_np.max()) + 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _Classifier(config, num_classes, data)
    model.to(dev)
    optimizer = make_optimizer(model.parameters(), config)
    gen = torch.Generator().manual_seed(seed)
    labels = data.labels

    def evaluate(idx: np.ndarray) -> tuple[float, float]:
        return _scores(model, data, labels, idx, dev)

    patience = config.patience
    start = time.perf_counter()
    best = (-1.0, -math.inf, 0, copy.deepcopy(model.state_dict()))  # (val acc, -val loss, ...)
    history, train_history = [], []
    best_train, best_train_epoch = -1.0, 0
    best_val, best_val_epoch = -1.0, 0  # the stop rule looks at accuracies only
    model.train()
    for epoch in range(epochs):
        order = torch.as_tensor(train_idx)[torch.randperm(train_idx.size, generator=gen)]
        train_acc = _train_epoch(
            model, optimizer, order, data, labels, dev, config, epoch
        )
        train_history.append(train_acc)
        if train_acc > best_train:
            best_train, best_train_epoch = train_acc, epoch + 1
        val, val_loss = evaluate(val_idx)
        history.append(val)
        if (val, -val_loss) > best[:2]:
            best = (val, -val_loss, epoch + 1, copy.deepcopy(model.state_dict()))
        if val > best_val:
            best_val, best_val_epoch = val, epoch + 1
        if progress is not None:
            progress(epoch + 1, val)
        # a falling validation loss at the same accuracy does not keep training going
        stalled = (
            epoch + 1 - best_val_epoch >= patience and epoch + 1 - best_train_epoch >= patience
        )
        if patience and stalled:
            break
    model.load_state_dict(best[3])
    return SupervisedResult(
        test_accuracy=evaluate(test_idx)[0],
        val_accuracy=best[0],
        train_accuracy=evaluate(train_idx)[0],
        best_epoch=best[2],
        val_history=history,
        seconds=time.perf_counter() - start,
        train_history=train_history,
        epochs_run=len(history),
        carved_validation=carved,
    )


def _split_indices(
    split: dict[str, np.ndarray], labels: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The train, validation and test indices ``int64``, with the validation set carved
    from the training split when ``split["val"]`` is empty (then the flag is ``True``)."""
    train_idx = np.asarray(split["train"], dtype=np.int64)
    val_idx = np.asarray(split.get("val", np.zeros(0)), dtype=np.int64)
    test_idx = np.asarray(split["test"], dtype=np.int64)
    if train_idx.size < 2 or test_idx.size == 0:
        raise ValueError("the supervised baseline needs >= 2 training and >= 1 test samples")
    carved = val_idx.size == 0
    if carved:
        train_idx, val_idx = carve_validation(train_idx, labels, seed)
    return train_idx, val_idx, test_idx, carved


def _train_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    order: torch.Tensor,
    data: ExperimentData,
    labels: torch.Tensor,
    dev: torch.device,
    config: ExperimentConfig,
    epoch: int,
) -> float:
    """One epoch of cross-entropy steps on the samples ``order`` (in that order, batches of
    ``config.batch_size``); returns the running training accuracy over the epoch.

    Raises:
        ValueError: a non-finite loss.
    """
    correct = 0
    for lo in range(0, order.numel(), config.batch_size):
        idx = order[lo : lo + config.batch_size]
        logits = model(*data.batch(idx, dev))  # the samples as one PyG batch
        target = labels[idx].to(dev)
        loss = nn.functional.cross_entropy(logits, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if not torch.isfinite(loss):
            raise ValueError(
                f"the supervised loss became {float(loss)} at epoch {epoch + 1}; lower the "
                f"learning rate (lr={config.lr})"
            )
        correct += int((logits.detach().argmax(dim=1) == target).sum())
    return correct / max(order.numel(), 1)  # running accuracy over the epoch
