r"""Fine-tuning an SCNN encoder with a downstream head.

A head (linear, or a small MLP) on the encoder's embedding :math:`\mathbf{h}`, trained with
cross-entropy and Adam on the labelled samples:

- **frozen** (``frozen=True``): the encoder is not trained; its embeddings are computed once
  and the head alone is trained on them (the paper's probe, with a cross-entropy head);
- **end to end** (``frozen=False``): encoder and head are trained together, the encoder with
  its own, smaller learning rate (``encoder_lr``, default :data:`DEFAULT_ENCODER_LR`,
  against :data:`DEFAULT_HEAD_LR` for the head).

The encoder given is copied; the caller's module is never changed. A run is deterministic for
a ``seed`` (head initialisation and sample order; the global random state is left alone).

**One loop for three rows.** The same code trains the fine-tuned row (from a pre-trained
encoder), its control (the same recipe from an untrained encoder of the same architecture,
:func:`~topo_contrastive.evaluation.references.untrained_like`) and the supervised SCNN at
low labels (:func:`supervised_from_scratch`: fine-tuning from a fresh encoder with the
configuration's learning rate for encoder and head alike).

**Selection without the test split** (:func:`select_hyperparameters`), in this order:

1. ``val_idx`` given (a validation split, e.g. ``evaluate --fine-tune``): train once for
   ``max_epochs`` epochs, measure the validation accuracy after every epoch and keep the
   weights of the best epoch (ties go to fewer epochs);
2. else, when every class of the labelled samples has at least :data:`MIN_LABELS_FOR_CV`
   (5) labels: stratified ``folds``-fold cross-validation inside the labelled samples
   (default 3 folds): each fold is trained once for ``max_epochs`` epochs and scored on its
   held-out part after every epoch; the epoch count (and, with ``encoder_lrs``, the encoder
   learning rate) with the best mean fold accuracy is chosen (ties: fewer epochs, then the
   first learning rate of the grid), and the model is trained on all labelled samples for
   that many epochs;
3. else the fixed defaults: :data:`DEFAULT_EPOCHS` (40) epochs for fine-tuning (the
   calibration of the label-efficiency study: a linear head, 40 epochs), the configuration's
   epochs for the supervised SCNN, and ``encoder_lr``.

No extra labels are used: in rule 2 and 3 only the labelled samples are seen.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold
from torch import Tensor, nn

from topo_contrastive._utils.checks import (
    MAX_EPOCHS,
    check_bool,
    check_disjoint,
    check_indices,
    check_int,
    check_lr,
    check_real,
    check_seed,
)
from topo_contrastive.nn import SCNN
from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.loop import resolve_device

#: Epochs of a fine-tuning run when they are not selected (fewer than
#: :data:`MIN_LABELS_FOR_CV` labels in some class and no validation split), and the largest
#: epoch count the selection considers.
DEFAULT_EPOCHS = 40
#: Adam learning rate of the head.
DEFAULT_HEAD_LR = 1e-2
#: Adam learning rate of the encoder when it is fine-tuned end to end (ten times smaller
#: than the head's: the pre-trained weights move less than the fresh head).
DEFAULT_ENCODER_LR = 1e-3
#: Weight decay of both parameter groups.
DEFAULT_WEIGHT_DECAY = 1e-4
#: Samples per step when no configuration gives ``batch_size``.
DEFAULT_BATCH_SIZE = 100
#: Fewest labels every class needs for cross-validation inside the labelled samples.
MIN_LABELS_FOR_CV = 5
#: Default folds of that cross-validation.
DEFAULT_FOLDS = 3
#: The heads :func:`fine_tune` builds.
HEADS: tuple[str, ...] = ("linear", "mlp")


@dataclass(frozen=True)
class Selection:
    """The hyper-parameters a run trains with and how they were chosen.

    Attributes:
        epochs: epochs of the final training run.
        encoder_lr: the encoder's learning rate (ignored when frozen).
        rule: ``"validation"``, ``"cv"``, ``"default"`` or ``"fixed"`` (given by the caller).
        score: the validation or mean fold accuracy of the choice (``nan`` otherwise).
        folds: folds of the cross-validation (0 without).
        curve: the mean fold (or validation) accuracy after every epoch, of the chosen
            encoder learning rate.
    """

    epochs: int
    encoder_lr: float
    rule: str
    score: float = float("nan")
    folds: int = 0
    curve: tuple[float, ...] = ()


@dataclass
class FineTuneResult:
    """What :func:`fine_tune` returns (accuracies are fractions in ``[0, 1]``).

    Attributes:
        test_accuracy: accuracy on ``test_idx``.
        train_accuracy: accuracy on the labelled training samples.
        selection: the :class:`Selection` it trained with.
        frozen: whether the encoder was frozen.
        head: ``"linear"`` or ``"mlp"``.
        head_lr: the head's learning rate.
        seconds: wall time (selection included).
        encoder: the trained copy of the encoder (eval mode, on the CPU).
        losses: mean training cross-entropy of every epoch of the final run.
    """

    test_accuracy: float
    train_accuracy: float
    selection: Selection
    frozen: bool
    head: str
    head_lr: float
    seconds: float = 0.0
    encoder: SCNN | None = field(default=None, repr=False)
    losses: list[float] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The result as a flat, JSON-ready dict (without the encoder)."""
        return {
            "test_accuracy": self.test_accuracy,
            "train_accuracy": self.train_accuracy,
            "epochs": self.selection.epochs,
            "encoder_lr": None if self.frozen else self.selection.encoder_lr,
            "head_lr": self.head_lr,
            "selection": self.selection.rule,
            "selection_score": self.selection.score,
            "frozen": self.frozen,
            "head": self.head,
        }


# ---------------------------------------------------------------------------- checks
def _positive(name: str, value: Any, kind: type = float) -> Any:
    """A count (``kind=int``: an int in ``[1, MAX_EPOCHS]``) or a learning rate (finite,
    > 0)."""
    if kind is int:
        return check_int(value, name, 1, MAX_EPOCHS)
    return check_lr(value, name)


# ---------------------------------------------------------------------------- the model
class _Model(nn.Module):
    """Encoder and head; with ``features`` the encoder is skipped (frozen, cached ``h``)."""

    def __init__(self, encoder: SCNN, head: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.head = head

    def logits(self, x: Tensor, laplacians: Any, batch: Tensor) -> Tensor:
        """``x`` ``[rows, 1]`` flows on ``laplacians`` with their batch vector ``[rows]`` ->
        ``[B, classes]``."""
        return self.head(self.encoder(x, laplacians, batch))


def _make_head(kind: str, width: int, classes: int) -> nn.Module:
    if kind == "linear":
        return nn.Linear(width, classes)
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, classes))


class _Run:
    """One training run: a fresh head on a copy of the encoder, trained epoch by epoch.

    Frozen runs compute the embeddings of every sample they see once (``[S, D]``) and train
    the head on them; end-to-end runs pass the flows through the encoder at every step.
    """

    def __init__(
        self,
        data: ExperimentData,
        encoder: SCNN,
        classes: int,
        head: str,
        frozen: bool,
        encoder_lr: float,
        head_lr: float,
        weight_decay: float,
        batch_size: int,
        seed: int,
        dev: torch.device,
    ) -> None:
        self.dev, self.frozen, self.batch_size = dev, frozen, batch_size
        enc = copy.deepcopy(encoder).to(dev)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            head_module = _make_head(head, int(enc.out_channels), classes).to(dev)
        self.model = _Model(enc, head_module)
        self.gen = torch.Generator().manual_seed(seed)
        self.data = data
        self.labels = data.labels
        groups = [{"params": head_module.parameters(), "lr": head_lr}]
        if frozen:
            enc.requires_grad_(False)
            enc.eval()
            self.features = self._embed_all()
        else:
            self.features = None
            groups.append({"params": enc.parameters(), "lr": encoder_lr})
        self.optimizer = torch.optim.Adam(groups, weight_decay=weight_decay)

    @torch.no_grad()
    def _embed_all(self) -> Tensor:
        enc, out = self.model.encoder, []
        for lo in range(0, self.data.num_samples, 256):
            idx = range(lo, min(lo + 256, self.data.num_samples))
            out.append(enc(*self.data.batch(idx, self.dev)))
        return torch.cat(out)  # [S, D]

    def _logits(self, idx: Tensor) -> Tensor:
        if self.features is not None:
            return self.model.head(self.features[idx.to(self.dev)])
        return self.model.logits(*self.data.batch(idx, self.dev))

    def epoch(self, train: np.ndarray) -> float:
        """One epoch of Adam steps on ``train`` (shuffled, batches of ``batch_size``);
        returns the mean cross-entropy.

        Raises:
            ValueError: a non-finite loss.
        """
        self.model.train()
        if self.frozen:
            self.model.encoder.eval()
        order = torch.as_tensor(train)[torch.randperm(train.size, generator=self.gen)]
        total = 0.0
        for lo in range(0, order.numel(), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            loss = nn.functional.cross_entropy(self._logits(idx), self.labels[idx].to(self.dev))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            if not torch.isfinite(loss):
                raise ValueError(
                    f"the fine-tuning loss became {float(loss)}; lower the learning rates"
                )
            total += float(loss.detach()) * idx.numel()
        return total / max(order.numel(), 1)

    @torch.no_grad()
    def accuracy(self, idx: np.ndarray) -> float:
        """Accuracy on the samples ``idx`` (eval mode, batches of 256)."""
        self.model.eval()
        idx_t = torch.as_tensor(idx, dtype=torch.long)
        correct = 0
        for lo in range(0, idx_t.numel(), 256):
            part = idx_t[lo : lo + 256]
            pred = self._logits(part).argmax(dim=1).cpu()
            correct += int((pred == self.labels[part]).sum())
        return correct / max(idx_t.numel(), 1)


def _curve(
    make: Callable[[float], _Run], train: np.ndarray, held: np.ndarray, lr: float, epochs: int
) -> list[float]:
    """Held-out accuracy after each of ``epochs`` epochs of one run trained on ``train``."""
    run = make(lr)
    out = []
    for _ in range(epochs):
        run.epoch(train)
        out.append(run.accuracy(held))
    return out


def _best(curve: Sequence[float]) -> int:
    """1-based epoch of the best value (ties: the fewest epochs)."""
    return int(np.argmax(np.asarray(curve))) + 1


# ---------------------------------------------------------------------------- selection
def select_hyperparameters(
    labels: np.ndarray,
    train_idx: np.ndarray,
    make_run: Callable[[float], Any],
    *,
    max_epochs: int,
    default_epochs: int,
    encoder_lr: float,
    encoder_lrs: Sequence[float] | None = None,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
) -> Selection:
    r"""The epoch count (and encoder learning rate) of a fine-tuning run, chosen inside the
    labelled samples ``train_idx`` by stratified k-fold cross-validation when every class
    has at least :data:`MIN_LABELS_FOR_CV` labels, else the defaults.

    Every fold is trained once for ``max_epochs`` epochs and scored on its held-out part
    after every epoch; the epoch count with the best mean over the folds wins, ties to fewer
    epochs (then to the earlier learning rate of ``encoder_lrs``). Only ``labels[train_idx]``
    is read.

    Args:
        labels: ``[S]`` integer labels of all samples.
        train_idx: ``[n]`` indices of the labelled samples.
        make_run: ``make_run(encoder_lr)`` -> a fresh run with ``epoch(idx)`` and
            ``accuracy(idx)`` (what :func:`fine_tune` passes).
        max_epochs: the largest epoch count considered.
        default_epochs: the epochs without cross-validation.
        encoder_lr: the encoder learning rate without a grid.
        encoder_lrs: a grid of encoder learning rates to search too (default ``None``:
            ``encoder_lr`` alone).
        folds: folds (default 3; lowered to the smallest class count, at least 2).
        seed: seed of the fold assignment (default 0).

    Returns:
        :class:`Selection` (``rule`` ``"cv"`` or ``"default"``).

    Raises:
        ValueError: ``folds < 2``, ``max_epochs`` outside ``[1, MAX_EPOCHS]``, a seed
            outside ``[0, 2**31 - 1]``.
    """
    folds = check_int(folds, "folds", 2)
    max_epochs = check_int(max_epochs, "max_epochs", 1, MAX_EPOCHS)
    seed = check_seed(seed)
    y = np.asarray(labels)[train_idx]
    _, counts = np.unique(y, return_counts=True)
    if counts.size < 2 or counts.min() < MIN_LABELS_FOR_CV:
        return Selection(epochs=int(default_epochs), encoder_lr=float(encoder_lr), rule="default")
    k = int(max(2, min(folds, counts.min())))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    grid = [float(encoder_lr)] if not encoder_lrs else [float(v) for v in encoder_lrs]
    best: tuple[float, int, int, list[float]] | None = None  # (score, -epochs, -i, curve)
    for i, lr in enumerate(grid):
        curves = [
            _curve(make_run, train_idx[tr], train_idx[te], lr, max_epochs)
            for tr, te in splitter.split(np.zeros(y.size), y)
        ]
        mean = np.mean(np.asarray(curves), axis=0)  # [max_epochs]
        epochs = _best(mean)
        key = (float(mean[epochs - 1]), -epochs, -i, mean.tolist())
        if best is None or key[:3] > best[:3]:
            best = key
    assert best is not None
    return Selection(
        epochs=-best[1],
        encoder_lr=grid[-best[2]],
        rule="cv",
        score=best[0],
        folds=k,
        curve=tuple(best[3]),
    )


# ---------------------------------------------------------------------------- fine-tuning
def _check_models(encoder: Any, config: Any, head: Any) -> None:
    """Refuse an encoder that is not an SCNN, a configuration that is not one, an unknown
    head (fine_tune's checks of its models)."""
    if not isinstance(encoder, SCNN):
        raise TypeError(f"`encoder` must be an SCNN, got {type(encoder).__name__}")
    if config is not None and not isinstance(config, ExperimentConfig):
        raise TypeError(
            f"`config` must be an ExperimentConfig or None, got {type(config).__name__} "
            f"({config!r}); e.g. get_config('SCL', task)"
        )
    if not isinstance(head, str) or head not in HEADS:
        raise ValueError(f"`head` must be one of {', '.join(HEADS)}, got {head!r}")


def _by_validation(
    run: _Run, train_idx: np.ndarray, val_idx: np.ndarray, max_epochs: int, encoder_lr: float
) -> tuple[Selection, list[float]]:
    """Train ``max_epochs`` epochs, keep the weights of the epoch with the best validation
    accuracy (ties: the earlier epoch); the selection and the kept epochs' losses."""
    losses, curve, best, state = [], [], -1.0, None
    for _ in range(max_epochs):
        losses.append(run.epoch(train_idx))
        curve.append(run.accuracy(val_idx))
        if curve[-1] > best:  # ties: the earlier epoch
            best, state = curve[-1], copy.deepcopy(run.model.state_dict())
    run.model.load_state_dict(state)
    n = _best(curve)
    return Selection(n, encoder_lr, "validation", score=best, curve=tuple(curve)), losses[:n]


def fine_tune(
    data: ExperimentData,
    encoder: SCNN,
    config: ExperimentConfig | None,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    head: str = "linear",
    frozen: bool = False,
    epochs: int | None = None,
    max_epochs: int = DEFAULT_EPOCHS,
    encoder_lr: float = DEFAULT_ENCODER_LR,
    head_lr: float = DEFAULT_HEAD_LR,
    encoder_lrs: Sequence[float] | None = None,
    weight_decay: float = DEFAULT_WEIGHT_DECAY,
    folds: int = DEFAULT_FOLDS,
    val_idx: np.ndarray | None = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> FineTuneResult:
    r"""Train a head on (a copy of) ``encoder`` with the labelled samples ``train_idx`` and
    score it on ``test_idx``.

    The test samples are only used for the final score. The hyper-parameters are selected as
    the module docstring says: on ``val_idx`` when it is given, else by cross-validation
    inside ``train_idx`` when every class has >= 5 labels there, else fixed defaults.

    Args:
        data: the prepared dataset, with labels (flows ``[S, N1]``).
        encoder: the encoder (pre-trained or untrained); copied, never changed.
        config: the configuration whose ``batch_size`` the steps use (default ``None``:
            :data:`DEFAULT_BATCH_SIZE` = 100).
        train_idx: ``[n]`` indices of the labelled samples.
        test_idx: ``[m]`` indices of the test samples.
        head: ``"linear"`` (default) or ``"mlp"`` (one hidden layer of the embedding's
            width, ReLU).
        frozen: train the head alone on the frozen encoder's embeddings (default ``False``:
            end to end).
        epochs: train exactly this many epochs, no selection (default ``None``: selected).
        max_epochs: the largest epoch count of the selection, and the fixed default when
            there is no selection (default :data:`DEFAULT_EPOCHS` = 40).
        encoder_lr: the encoder's Adam learning rate (default :data:`DEFAULT_ENCODER_LR`).
        head_lr: the head's Adam learning rate (default :data:`DEFAULT_HEAD_LR`).
        encoder_lrs: a grid of encoder learning rates searched with the epochs when
            cross-validation runs (default ``None``: ``encoder_lr`` alone).
        weight_decay: Adam weight decay of both groups (default ``1e-4``).
        folds: folds of the cross-validation (default 3).
        val_idx: validation samples for the epoch selection (default ``None``: none).
        seed: seed of the head's initialisation, the sample order and the folds (default 0).
        device: training device (default ``"cpu"``).

    Returns:
        :class:`FineTuneResult`; its ``encoder`` is the trained copy.

    Raises:
        TypeError: ``encoder`` is not an ``SCNN``, ``config`` not an
            :class:`ExperimentConfig`; a learning rate, count, seed or flag of another type;
            indices given as a boolean mask or fractional numbers.
        ValueError: ``data`` without labels, an unknown ``head``; empty, out-of-range or
            repeated indices, or indices shared by two of ``train_idx``, ``val_idx`` and
            ``test_idx`` (no epoch is selected on test or training samples); a learning rate
            that is not a finite number > 0; an epoch count outside ``[1, MAX_EPOCHS]``;
            ``folds < 2``; a negative ``weight_decay``; a seed outside ``[0, 2**31 - 1]``;
            a non-finite loss.
    """
    start = time.perf_counter()
    _check_models(encoder, config, head)
    frozen = check_bool(frozen, "frozen")
    labels = data.require_labels("fine-tuning").numpy()
    S = data.num_samples
    train_idx = check_indices(train_idx, "train_idx", S)
    test_idx = check_indices(test_idx, "test_idx", S)
    val_idx = check_indices(val_idx, "val_idx", S, allow_empty=True)
    check_disjoint({"train_idx": train_idx, "val_idx": val_idx, "test_idx": test_idx})
    max_epochs = _positive("max_epochs", max_epochs, int)
    encoder_lr = _positive("encoder_lr", encoder_lr)
    head_lr = _positive("head_lr", head_lr)
    if encoder_lrs is not None:
        encoder_lrs = [check_lr(v, f"encoder_lrs[{i}]") for i, v in enumerate(encoder_lrs)]
    weight_decay = check_real(weight_decay, "weight_decay", minimum=0.0)
    folds = check_int(folds, "folds", 2)
    seed = check_seed(seed)
    batch_size = int(config.batch_size) if config is not None else DEFAULT_BATCH_SIZE
    dev = resolve_device(device)
    classes = int(labels.max()) + 1

    def make_run(lr: float) -> _Run:
        return _Run(
            data, encoder, classes, head, frozen, lr, head_lr, weight_decay, batch_size,
            seed, dev,
        )  # fmt: skip

    losses: list[float] = []
    if epochs is not None:
        sel = Selection(epochs=_positive("epochs", epochs, int), encoder_lr=encoder_lr,
                        rule="fixed")  # fmt: skip
        run = make_run(encoder_lr)
        losses = [run.epoch(train_idx) for _ in range(sel.epochs)]
    elif val_idx.size:
        run = make_run(encoder_lr)
        sel, losses = _by_validation(run, train_idx, val_idx, max_epochs, encoder_lr)
    else:
        sel = select_hyperparameters(
            labels, train_idx, make_run, max_epochs=max_epochs, default_epochs=max_epochs,
            encoder_lr=encoder_lr, encoder_lrs=None if frozen else encoder_lrs, folds=folds,
            seed=seed,
        )  # fmt: skip
        run = make_run(sel.encoder_lr)
        losses = [run.epoch(train_idx) for _ in range(sel.epochs)]
    result = FineTuneResult(
        test_accuracy=run.accuracy(test_idx),
        train_accuracy=run.accuracy(train_idx),
        selection=sel,
        frozen=bool(frozen),
        head=head,
        head_lr=head_lr,
        encoder=run.model.encoder.cpu().eval(),
        losses=losses,
    )
    result.seconds = time.perf_counter() - start
    return result


def supervised_from_scratch(
    data: ExperimentData,
    config: ExperimentConfig,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    seed: int = 0,
    max_epochs: int | None = None,
    folds: int = DEFAULT_FOLDS,
    val_idx: np.ndarray | None = None,
    device: str | torch.device = "cpu",
) -> FineTuneResult:
    r"""The supervised SCNN baseline, fair at low labels: :func:`fine_tune` end to end from a
    fresh encoder of ``config`` (initialised from ``seed``), with a linear head and the
    configuration's learning rate for encoder and head alike.

    The epoch count is selected as :func:`fine_tune` selects it (validation samples, else
    cross-validation inside ``train_idx`` when every class has >= 5 labels, else
    ``max_epochs``), instead of :func:`~topo_contrastive.evaluation.train_supervised`'s
    stop rule, which needs a validation split and ends a low-label run too early.

    Args:
        data: the prepared dataset, with labels.
        config: the configuration of the encoder (e.g. ``get_config("SCNN", task, edition)``).
        train_idx: ``[n]`` labelled samples.
        test_idx: ``[m]`` test samples.
        seed: seed of the encoder's and head's initialisation and the sample order.
        max_epochs: the largest (and the default) epoch count (default ``None``:
            ``config.epochs``).
        folds: folds of the cross-validation (default 3).
        val_idx: validation samples for the epoch selection (default ``None``).
        device: training device (default ``"cpu"``).

    Returns:
        :class:`FineTuneResult`.

    Raises:
        TypeError: ``config`` is not an :class:`ExperimentConfig`.
        ValueError: as :func:`fine_tune`.
    """
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"`config` must be an ExperimentConfig, got {type(config).__name__}")
    seed = check_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = data.encoder(config)
    return fine_tune(
        data, encoder, config, train_idx, test_idx, head="linear", frozen=False,
        max_epochs=config.epochs if max_epochs is None else max_epochs,
        encoder_lr=config.lr, head_lr=config.lr, weight_decay=config.weight_decay,
        folds=folds, val_idx=val_idx, seed=seed, device=device,
    )  # fmt: skip
