r"""Next-node trajectory prediction (SCoNe's task, :mod:`.samples`) with a pre-trained encoder:
the models and the rows.

- :func:`train_next_node`: an SCNN's per-edge features and a :class:`.NextNodeHead`, trained
  with cross-entropy over the candidates: ``"frozen"`` (a given encoder, only the head
  trained), ``"finetune"`` (the encoder trained too, at its own learning rate),
  ``"scratch"`` (a fresh encoder of the same architecture, trained) or ``"untrained"`` (a
  fresh encoder, frozen: what pre-training adds to the frozen reuse); the epoch with the
  best validation accuracy is kept (the test samples only score);
- :func:`markov_accuracy`: a first-order Markov chain (SCoNe's ``markov_model.py``,
  ``order=1``): the candidate with the most transitions from the last node in the training
  samples; ties and unseen nodes go to the lowest node id;
- :func:`uniform_accuracy`: a uniform choice among the candidates (its expected accuracy).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from experiments._helpers import (
    MAX_EPOCHS,
    check_bool,
    check_disjoint,
    check_indices,
    check_int,
    check_lr,
    check_real,
    check_seed,
    check_seeds,
)
from experiments.studies.next_node.head import NextNodeHead
from experiments.studies.next_node.samples import NextNodeSamples
from topo_contrastive.nn import SCNN
from topo_contrastive.training.data import ExperimentData

#: How :func:`train_next_node` treats the encoder.
MODES = ("frozen", "finetune", "scratch", "untrained")



@dataclass(frozen=True)
class NextNodeResult:
    """What :func:`train_next_node` returns: the kept epoch's (1-based) test, validation and
    training accuracy (fractions), the epochs run, the accuracy of each of ``test_parts``
    and the predicted node of every test sample (in the order of ``test_idx``)."""

    test_accuracy: float
    val_accuracy: float
    train_accuracy: float
    epoch: int
    epochs: int
    test_parts: tuple[float, ...] = ()
    test_predictions: tuple[int, ...] = ()


def uniform_accuracy(samples: NextNodeSamples, idx: np.ndarray) -> float:
    """Expected accuracy of a uniform choice among the candidates of the samples ``idx``."""
    idx = check_indices(idx, "idx", len(samples))
    counts = samples.candidates[torch.as_tensor(idx)].sum(1)
    return float((1.0 / counts.double()).mean())


def markov_accuracy(samples: NextNodeSamples, train_idx: np.ndarray, test_idx: np.ndarray) -> float:
    """Accuracy of a first-order Markov chain fitted on the training samples (every step of
    their prefixes and the step to their next node), scored on ``test_idx`` (the training
    samples themselves allowed); ``ValueError`` for empty or bad indices."""
    train_idx = check_indices(train_idx, "train_idx", len(samples), allow_empty=True)
    test_idx = check_indices(test_idx, "test_idx", len(samples), allow_empty=True)
    if train_idx.size == 0 or test_idx.size == 0:
        raise ValueError("the Markov baseline needs training and test samples")
    n0 = samples.candidates.shape[1]
    counts = np.zeros((n0, n0), dtype=np.int64)  # counts[u, v]: steps u -> v
    for k in train_idx:
        walk = np.append(samples.prefixes[k], int(samples.targets[k]))
        np.add.at(counts, (walk[:-1], walk[1:]), 1)
    last = samples.last_nodes.numpy()[test_idx]
    cand = samples.candidates.numpy()[test_idx]
    scores = np.where(cand, counts[last], -1)  # [m, N0]; argmax: lowest id among ties
    return float(np.mean(scores.argmax(1) == samples.targets.numpy()[test_idx]))


def _predict(encoder: SCNN, head: NextNodeHead, x: torch.Tensor, cand: torch.Tensor,
             L: tuple[Any, Any]) -> torch.Tensor:  # fmt: skip
    """``int64 [M]``: the predicted next node of every sample (the best-scored candidate)."""
    with torch.no_grad():
        out = [head(encoder.edge_embeddings(x[s : s + 200], L), cand[s : s + 200]).argmax(1)
               for s in range(0, x.shape[0], 200)]  # fmt: skip
        return torch.cat(out) if out else torch.zeros(0, dtype=torch.long, device=x.device)


def _checked(samples: NextNodeSamples, encoder: Any, mode: str, data: ExperimentData,
             idx: Sequence[Any], test_parts: Sequence[int]) -> tuple[list[np.ndarray], list[int]]:
    """:func:`train_next_node`'s checks of its inputs; the checked train, val and test
    indices and ``test_parts``."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"`mode` must be one of {MODES}, got {mode!r}")
    if not isinstance(encoder, SCNN) and not hasattr(encoder, "edge_embeddings"):
        raise TypeError(f"`encoder` must be an SCNN, got {type(encoder).__name__}")
    if not isinstance(samples, NextNodeSamples):
        raise TypeError(f"`samples` must be NextNodeSamples, got {type(samples).__name__}")
    m = len(samples)
    tr, va, te = (check_indices(i, f"{name}_idx", m, allow_empty=name == "val")
                  for i, name in zip(idx, ("train", "val", "test"), strict=True))  # fmt: skip
    check_disjoint({"train_idx": tr, "val_idx": va, "test_idx": te})
    parts = [check_int(n, "test_parts[]", 0) for n in test_parts]
    if parts and sum(parts) != te.size:
        raise ValueError(f"`test_parts` {tuple(parts)} must add up to the {te.size} test "
                         "samples")  # fmt: skip
    if samples.flows.shape[1] != data.sizes[1]:
        raise ValueError(f"the samples have N1 = {samples.flows.shape[1]} edges, the data "
                         f"{data.sizes[1]}: samples of another complex")  # fmt: skip
    return [tr, va, te], parts


def train_next_node(
    data: ExperimentData,
    samples: NextNodeSamples,
    encoder: SCNN,
    mode: str,
    train_idx: np.ndarray,
    val_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    epochs: int = 100,
    head_lr: float = 1e-2,
    encoder_lr: float = 1e-3,
    weight_decay: float = 0.0,
    batch_size: int = 100,
    seed: int = 0,
    device: str | torch.device = "cpu",
    test_parts: Sequence[int] = (),
) -> NextNodeResult:
    """Train a :class:`~experiments.studies.next_node.NextNodeHead` on ``encoder`` (the
    module docstring gives the modes) with Adam and cross-entropy over the candidates; keep
    the epoch with the best validation accuracy (ties: the earlier) and score it on
    ``test_idx``. Without validation samples nothing is selected: the last epoch is kept
    and its ``val_accuracy`` is NaN.

    Args:
        data: the dataset (its Laplacians).
        samples: the next-node samples of ``data``'s complex.
        encoder: an SCNN (copied, never changed); with ``"scratch"`` and ``"untrained"``
            only its architecture is used (a fresh copy re-initialised from ``seed``).
        mode: ``"frozen"``, ``"finetune"``, ``"scratch"`` or ``"untrained"``.
        train_idx, val_idx, test_idx: disjoint sample indices (the test samples only score).
        epochs, head_lr, encoder_lr, weight_decay, batch_size: the training (``head_lr`` is
            also the encoder's with ``"scratch"``, ``encoder_lr`` its own with
            ``"finetune"``).
        seed: seed of the head's (and a scratch encoder's) initialisation and of the order,
            drawn on the CPU (the same start on every device).
        device: training device (default ``"cpu"``).
        test_parts: sizes of consecutive parts of ``test_idx`` also scored separately (e.g.
            forward and reversed test paths); they add up to its length.

    Raises:
        TypeError: ``encoder`` not an SCNN; indices as a boolean mask or fractional
            numbers; counts, rates or the seed of another type.
        ValueError: an unknown ``mode``; empty training or test indices; indices out of
            range, repeated or shared between the parts; ``epochs`` outside ``[1,
            MAX_EPOCHS]`` and other bad counts or rates; ``test_parts`` that do not add up;
            samples of another complex.
    """
    epochs = check_int(epochs, "epochs", 1, MAX_EPOCHS)
    head_lr, encoder_lr = check_lr(head_lr, "head_lr"), check_lr(encoder_lr, "encoder_lr")
    weight_decay = check_real(weight_decay, "weight_decay", minimum=0.0)
    batch_size, seed = check_int(batch_size, "batch_size", 1), check_seed(seed)
    (tr, va, te), parts = _checked(samples, encoder, mode, data, (train_idx, val_idx, test_idx),
                                   test_parts)  # fmt: skip
    from topo_contrastive.training.loop import resolve_device

    dev = resolve_device(device)
    gen = torch.Generator().manual_seed(seed)
    enc = copy.deepcopy(encoder).cpu()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        if mode in ("scratch", "untrained"):
            enc.reset_parameters()
        head = NextNodeHead(enc.hidden_channels, data.complex)
    enc, head = enc.to(dev), head.to(dev)
    trained = mode in ("finetune", "scratch")  # the encoder's weights change
    for p in enc.parameters():
        p.requires_grad_(trained)
    groups = [{"params": head.parameters(), "lr": head_lr}]
    if trained:
        groups.append({"params": enc.parameters(),
                       "lr": head_lr if mode == "scratch" else encoder_lr})  # fmt: skip
    opt = torch.optim.Adam(groups, weight_decay=weight_decay)
    L = data.complex.laplacians(device=dev)
    x = samples.flows.unsqueeze(-1).to(dev)  # [M, N1, 1]
    candidates, targets = samples.candidates.to(dev), samples.targets.to(dev)

    def predict(i: np.ndarray) -> torch.Tensor:
        j = torch.as_tensor(i, device=dev)
        return _predict(enc, head, x[j], candidates[j], L), targets[j]

    def acc(i: np.ndarray) -> float:
        pred, want = predict(i)
        return float((pred == want).double().mean()) if pred.numel() else float("nan")

    best: tuple | None = None
    for epoch in range(1, int(epochs) + 1):
        enc.train(trained)
        order = tr[torch.randperm(tr.size, generator=gen).numpy()]
        for s in range(0, order.size, batch_size):
            b = torch.as_tensor(order[s : s + batch_size], device=dev)
            loss = torch.nn.functional.cross_entropy(
                head(enc.edge_embeddings(x[b], L), candidates[b]), targets[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        enc.eval()
        val = acc(va) if va.size else float("nan")
        if best is None or val > best[0] or (va.size == 0 and epoch == int(epochs)):
            pred, want = predict(te)  # test and training accuracy of kept epochs only
            hit = (pred == want).double()
            scores = tuple(float(h.mean()) for h in torch.split(hit, parts)) if parts else ()
            best = (val, epoch, float(hit.mean()), acc(tr), scores, tuple(pred.tolist()))
    val_acc, epoch, test_acc, train_acc, scores, pred = best  # type: ignore[misc]
    return NextNodeResult(
        test_accuracy=test_acc, val_accuracy=val_acc, train_accuracy=train_acc,
        epoch=epoch, epochs=int(epochs), test_parts=scores, test_predictions=pred,
    )


#: The rows of :func:`next_node_rows`, in order.
ROWS: tuple[str, ...] = ("uniform", "markov", "scratch", "untrained", "frozen", "finetune")
_ROW_LABELS = {
    "uniform": "uniform among the neighbours",
    "markov": "Markov chain (first order)",
    "scratch": "SCNN + head from scratch (same architecture)",
    "scone": "TopoModelX SCoNe (3 layers x 16) + head from scratch",
    "untrained": "untrained encoder (same architecture) frozen + head",
    "frozen": "encoder frozen + head",
    "finetune": "encoder fine-tuned + head",
}


def row_table(cells: dict[str, list[dict[str, Any]]], labels: bool = False
              ) -> list[dict[str, Any]]:  # fmt: skip
    """Per row with cells (``{row: [cell per seed]}``): its ``label`` (with ``labels``), the
    ``mean_accuracy`` and ``std_accuracy`` of its test accuracies in %, its ``splits``."""
    out = []
    for row, recs in cells.items():
        if recs:
            acc = 100 * np.array([c["test_accuracy"] for c in recs])
            out.append({"row": row, **({"label": _ROW_LABELS[row]} if labels else {}),
                        "mean_accuracy": float(acc.mean()), "std_accuracy": float(acc.std()),
                        "splits": recs})  # fmt: skip
    return out


def require_paths(data: ExperimentData) -> list[Any]:
    """The node paths of ``data``'s samples; ``ValueError`` for a dataset without them."""
    paths_of = getattr(data.dataset, "paths", None)
    paths = paths_of() if callable(paths_of) else None
    if not paths or all(len(p) == 0 for p in paths):
        raise ValueError(
            f"the dataset {data.name!r} has no node paths: next-node prediction needs paths "
            "(a data file with path_nodes / path_ptr)"
        )
    return paths


def next_node_split(data: ExperimentData, seed: int) -> dict[str, np.ndarray]:
    """The train / val / test samples of ``data``'s split ``seed`` (``int64``); a split
    without a validation part gives 20 % of its training samples to it (stratified by the
    flows' labels where there are labels, as the supervised SCNN's carve-out; else at random
    with ``seed``)."""
    from topo_contrastive.evaluation.supervised import VALIDATION_FRACTION, carve_validation

    idx = data.split(int(seed))
    tr, va, te = (np.asarray(idx[k], dtype=np.int64) for k in ("train", "val", "test"))
    if va.size == 0 and data.labels is not None:
        tr, va = carve_validation(tr, data.labels.numpy(), int(seed))
    elif va.size == 0:
        perm = np.random.default_rng(int(seed)).permutation(tr)
        cut = max(1, int(tr.size * VALIDATION_FRACTION))
        tr, va = np.sort(perm[cut:]), np.sort(perm[:cut])
    return {"train": tr, "val": va, "test": te}


def labelled_split(
    split: dict[str, np.ndarray], fraction: float, seed: int, min_val: int = 5
) -> dict[str, np.ndarray]:
    """``split`` (:func:`next_node_split`) with only ``fraction`` in ``(0, 1]`` of its
    training and of its validation samples labelled: each part keeps a random
    ``round(fraction * size)`` (drawn with ``seed``; at least one training sample); a
    validation part left with fewer than ``min_val`` samples is dropped (the last epoch is
    then kept: select only where the labelled subset allows it). ``fraction = 1`` returns the
    split; bad arguments raise ``ValueError`` / ``TypeError``."""
    fraction = check_real(fraction, "fraction", minimum=0.0, maximum=1.0, open_low=True)
    min_val = check_int(min_val, "min_val", 1)
    seed = check_seed(seed)
    out = {k: np.sort(np.asarray(v, dtype=np.int64)) for k, v in split.items()}
    if float(fraction) == 1.0:
        return out
    rng = np.random.default_rng(int(seed))
    for part, least in (("train", 1), ("val", 0)):
        idx = out[part]
        n = min(idx.size, max(least, int(round(float(fraction) * idx.size))))
        out[part] = np.sort(rng.permutation(idx)[:n])
    if out["val"].size < min_val:
        out["val"] = np.zeros(0, dtype=np.int64)
    return out


def _trained_row(row: str, data: ExperimentData, encoder: SCNN) -> tuple[Any, str]:
    """The encoder and :func:`train_next_node` mode of a trained row (``"scone"``:
    TopoModelX's SCoNe from scratch; an unknown row: ``ValueError``)."""
    if row == "scone":
        from experiments.studies.next_node.scone import SCoNeEncoder

        return SCoNeEncoder(data.complex), "scratch"
    if row not in MODES:
        raise ValueError(f"`row` must be one of {ROWS} or 'scone', got {row!r}")
    return encoder, row


def next_node_cell(
    row: str,
    data: ExperimentData,
    samples: NextNodeSamples,
    encoder: SCNN,
    split: dict[str, np.ndarray],
    *,
    epochs: int = 100,
    seed: int = 0,
    device: str | torch.device = "cpu",
    predictions: bool = False,
    encoder_lr: float = 1e-3,
) -> dict[str, Any]:
    """One row of :data:`ROWS` (or ``"scone"``) on one split: ``{"test_accuracy"}`` for the
    baselines, plus ``val_accuracy``, ``train_accuracy`` and ``epoch`` for the trained rows
    (:func:`train_next_node` with the row as its mode, on ``device``; ``encoder_lr``: the
    fine-tuned row's) and, with ``predictions``, ``test_predictions``."""
    if not hasattr(split, "keys") or not {"train", "val", "test"} <= set(split.keys()):
        raise ValueError(
            "`split` must be a mapping with the sample indices 'train', 'val' and 'test' "
            f"(next_node_split), got {type(split).__name__}"
            + (f" with keys {sorted(split.keys())}" if hasattr(split, "keys") else "")
        )
    tr, va, te = split["train"], split["val"], split["test"]
    if row == "uniform":
        return {"test_accuracy": uniform_accuracy(samples, te)}
    if row == "markov":
        return {"test_accuracy": markov_accuracy(samples, tr, te)}
    encoder, mode = _trained_row(row, data, encoder)
    res = train_next_node(data, samples, encoder, mode, tr, va, te, epochs=epochs, seed=seed,
                          device=device, encoder_lr=encoder_lr)
    out = {"test_accuracy": res.test_accuracy,
           "val_accuracy": None if va.size == 0 else res.val_accuracy,
           "train_accuracy": res.train_accuracy, "epoch": res.epoch}  # fmt: skip
    if predictions:
        out["test_predictions"] = list(res.test_predictions)
    return out


def next_node_rows(
    encoder: SCNN,
    data: ExperimentData,
    seeds: list[int],
    *,
    epochs: int = 100,
    truncate: bool = True,
    progress: Any = None,
    device: str | torch.device = "cpu",
    scone: bool = False,
    fraction: float = 1.0,
) -> dict[str, Any]:
    """Every row of the next-node task for a saved ``encoder`` on ``data`` (its
    ``dataset.paths()``), per seed of ``seeds``: the paths cut with the seed (``truncate``:
    as SCoNe does), the dataset's split of the seed (:func:`next_node_split`) with
    ``fraction`` of its training and validation prefixes labelled (:func:`labelled_split`)
    and the rows of :data:`ROWS` (and, with ``scone``, TopoModelX's SCoNe) trained for
    ``epochs`` on ``device``; ``progress(row, seed, accuracy)`` after every cell.

    Returns:
        A dict with ``rows`` (per row: ``row``, ``label``, ``mean_accuracy`` and
        ``std_accuracy`` in percent, ``splits``: one dict per seed), ``seeds``, ``epochs``,
        ``samples``, ``fraction`` and ``labelled`` (per seed: the labelled training and
        validation prefixes and the split's totals).

    Raises:
        ValueError: empty or repeated ``seeds`` or bad counts, a dataset without node paths;
            see :func:`train_next_node`.
        TypeError: a seed, ``epochs``, ``fraction`` or flag of another type.
        ImportError: ``scone`` without TopoModelX (before any training).
    """
    from experiments.studies.next_node.samples import next_node_samples

    seeds = check_seeds(seeds)
    epochs = check_int(epochs, "epochs", 1, MAX_EPOCHS)
    fraction = check_real(fraction, "fraction", minimum=0.0, maximum=1.0, open_low=True)
    truncate, scone = check_bool(truncate, "truncate"), check_bool(scone, "scone")
    paths = require_paths(data)
    rows_run = ROWS + (("scone",) if scone else ())
    if scone:
        from experiments.studies.next_node.scone import SCoNeEncoder

        SCoNeEncoder(data.complex)  # refuses a missing TopoModelX before any training
    cells: dict[str, list[dict[str, Any]]] = {row: [] for row in rows_run}
    labelled = []
    for s in seeds:
        samples = next_node_samples(data.complex, paths, truncate=truncate, seed=int(s))
        full = next_node_split(data, int(s))
        split = labelled_split(full, fraction, int(s))
        labelled.append({"seed": int(s), "train": int(split["train"].size),
                         "train_total": int(full["train"].size), "val": int(split["val"].size),
                         "val_total": int(full["val"].size)})  # fmt: skip
        for row in rows_run:
            rec = next_node_cell(row, data, samples, encoder, split, epochs=epochs, seed=int(s),
                                 device=device)
            rec["seed"] = int(s)
            cells[row].append(rec)
            if progress is not None:
                progress(row, int(s), rec["test_accuracy"])
    return {"rows": row_table(cells, labels=True), "seeds": [int(s) for s in seeds],
            "epochs": int(epochs), "samples": len(paths), "fraction": float(fraction),
            "labelled": labelled}  # fmt: skip
