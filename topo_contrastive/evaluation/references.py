r"""Reference rows beside an encoder's linear-probe accuracy (``topo-contrastive evaluate``).

An accuracy alone does not say whether pre-training helped: on a road network an encoder
probed at 65 % was below an untrained encoder (70 %), the raw flows (93.5 %) and the harmonic
coordinates (93 %). :func:`reference_rows` probes, **on the same splits, with the same
classifier and the same selection rule** as the encoder
(:func:`~topo_contrastive.evaluation.probe.probe_splits`; by default the fast ridge
probe, :func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`: ``StandardScaler`` and
a ridge classifier, its penalty by the leave-one-out squared hinge loss on the training
split; with
``probe="svm"`` the paper's ``StandardScaler + LinearSVC``, ``C`` by stratified k-fold
cross-validation on the training split):

- ``untrained``: an untrained encoder of the same architecture, initialised from the same seed
  as the pre-training run (:func:`untrained_like`);
- ``raw``: the flows :math:`\mathbf{x}` (:math:`N_1` features);
- ``abs``: their magnitudes :math:`|\mathbf{x}|` (:math:`N_1` features; direction removed);
- ``harmonic``: the harmonic coordinates :math:`\mathbf{U}_H^\top \mathbf{x}` when
  :math:`\beta_1 > 0` (:math:`\beta_1` features, in the canonical basis of
  :func:`~topo_contrastive.nn.canonical_harmonic_basis`, as Table 1's harmonic row).

**Large** :math:`\beta_1`. The harmonic row keeps all :math:`\beta_1` coordinates (no
reduction) where the exact basis fits the memory budget
(:func:`~topo_contrastive.nn.harmonic_features.plan_harmonic_features`, 256 MiB by default,
``--harmonic-budget``): :math:`\beta_1 \le N_1`, so the row never costs more than the raw
row. Beyond it the row is the seeded sketch :math:`\mathbf{G}^\top\mathbf{P}_H\mathbf{x}`
of :math:`k` directions (at most 256), which keeps norms and inner products of the harmonic
parts within the factor of
:func:`~topo_contrastive.nn.harmonic_features.sketch_distortion_bound`; its label says so.
It is omitted, with the reason in ``omitted``, when :math:`\beta_1 = 0` or when the budget
holds not one sketch direction.

:func:`below_line` states in one line which rows beat the encoder; :func:`references_markdown`
is the Markdown table written beside ``evaluate``'s JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from topo_contrastive import io
from topo_contrastive.evaluation.probe import (
    DEFAULT_CS,
    DEFAULT_FOLDS,
    DEFAULT_PROBE,
    check_probe_splits,
    probe_splits,
)
from topo_contrastive.nn import SCNN
from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.formatting import format_mean_std
from topo_contrastive.training.loop import embed

#: The reference rows, in the order they are probed and printed.
REFERENCE_ROWS: tuple[str, ...] = ("untrained", "raw", "abs", "harmonic")

_LABELS = {
    "encoder": "encoder",
    "untrained": "untrained encoder",
    "raw": "raw flows",
    "abs": "|flows|",
    "harmonic": "harmonic coordinates",
    "finetune": "fine-tuned encoder",
    "finetune_control": "fine-tune control (untrained)",
    "supervised": "supervised SCNN (same architecture, from scratch)",
}

#: The rows ``evaluate --fine-tune`` adds (:func:`fine_tune_rows`).
FINE_TUNE_ROWS: tuple[str, ...] = ("finetune", "finetune_control")

#: The row ``evaluate --supervised`` adds (:func:`supervised_row`).
SUPERVISED_ROW = "supervised"


def untrained_like(encoder: SCNN, data: ExperimentData, seed: int = 0) -> SCNN:
    """An untrained encoder of ``encoder``'s architecture, initialised as a pre-training run
    with ``seed`` starts (``torch.manual_seed(seed)``, then the encoder is built: what
    :func:`~topo_contrastive.training.pretrain` does before its first step).

    The architecture is read from ``encoder`` as :func:`topo_contrastive.io.save_encoder`
    stores it, so this works for a loaded checkpoint and for an encoder built in Python; the
    global random state is left as it was.

    Args:
        encoder: the (trained) encoder.
        data: the dataset (its Hodge decomposition rebuilds a ``HodgeReadout``).
        seed: the pre-training seed (default: 0).

    Returns:
        The untrained :class:`~topo_contrastive.nn.SCNN`, in eval mode on the CPU.

    Raises:
        TypeError, ValueError: a readout that cannot be rebuilt (see
            :func:`topo_contrastive.io.save_encoder`).
    """
    arch = io._architecture(encoder, data.complex)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        fresh = io._build("the encoder", arch, data.hodge)
    return fresh.eval()


def _split_sizes(data: ExperimentData, split_seeds: Sequence[int]) -> dict[str, Any]:
    sizes = {k: set() for k in ("train", "val", "test")}
    folds = set()
    labels = data.require_labels("the linear evaluation").numpy()
    for s in split_seeds:
        idx = data.split(int(s))
        for k in sizes:
            sizes[k].add(int(len(idx[k])))
        _, counts = np.unique(labels[idx["train"]], return_counts=True)
        folds.add(int(max(2, min(DEFAULT_FOLDS, counts.min()))))
    out: dict[str, Any] = {}
    for k, v in sizes.items():
        out[k] = min(v) if len(v) == 1 else [min(v), max(v)]
    out["folds"] = min(folds) if len(folds) == 1 else sorted(folds)
    return out


def protocol_summary(
    data: ExperimentData, split_seeds: Sequence[int], probe: str = "svm"
) -> dict[str, Any]:
    """The splits and the selection rule every row is probed with (JSON-ready).

    Args:
        data: the prepared dataset, with labels.
        split_seeds: the splits.
        probe: ``"svm"`` (default) or ``"ridge"``
            (:func:`~topo_contrastive.evaluation.probe.probe_splits`).

    Returns:
        ``{"probe", "split_seeds", "train", "val", "test", "folds", "C_grid" (the SVM) or
        "alpha_grid" (the ridge probe), "classifier", "selection", "score"}``: a size is an
        int, or ``[min, max]`` when it differs between splits; ``folds`` likewise (the SVM:
        lowered below 10 when a class of the training split has fewer samples; the ridge
        probe: ``"loo"``, leave-one-out).

    Raises:
        ValueError: ``data`` has no labels; an unknown ``probe``.
    """
    from topo_contrastive.evaluation.probe import check_probe

    check_probe(probe)
    sizes = _split_sizes(data, split_seeds)
    if probe == "ridge":
        from topo_contrastive.evaluation.ridge_probe import RIDGE_ALPHAS

        return {
            "probe": probe,
            "split_seeds": [int(s) for s in split_seeds],
            **sizes,
            "folds": "loo",
            "alpha_grid": list(RIDGE_ALPHAS),
            "classifier": "ridge classifier (squared loss on +-1 targets, L2) on standardised "
            "features",
            "selection": "alpha by the leave-one-out squared hinge loss on the training split "
            "(one factorisation)",
            "score": "accuracy on the test split",
        }
    return {
        "probe": probe,
        "split_seeds": [int(s) for s in split_seeds],
        **sizes,
        "C_grid": list(DEFAULT_CS),
        "classifier": "LinearSVC (squared hinge, L2) on standardised features",
        "selection": "C by stratified k-fold cross-validation on the training split",
        "score": "accuracy on the test split",
    }


def reference_names(data: ExperimentData) -> tuple[str, ...]:
    """The reference rows :func:`reference_rows` probes on ``data`` by default, in order: the
    untrained encoder, then ``data``'s encoder-free rows
    (:meth:`~topo_contrastive.training.ExperimentData.reference_features`)."""
    from topo_contrastive.training.embeddings import AGNOSTIC_ROWS

    return ("untrained", *(AGNOSTIC_ROWS if data.complex is None else REFERENCE_ROWS[1:]))


def _probe_row(
    out: list[dict[str, Any]], name: str, label: str, features: np.ndarray, data: Any,
    split_seeds: Sequence[int], progress: Any, probe: str,
) -> None:  # fmt: skip
    """Probe ``features`` on the splits and append the row to ``out``."""
    tick = None if progress is None else (lambda r: progress(name, r))
    splits = probe_splits(features, data, split_seeds, tick, probe=probe)
    out.append(_row(name, label, features.shape[1], splits))


def _row(name: str, label: str, features: int, splits: list[dict[str, Any]]) -> dict[str, Any]:
    acc = 100 * np.array([r["test_accuracy"] for r in splits])
    return {
        "row": name,
        "label": label,
        "features": int(features),
        "mean_accuracy": float(acc.mean()),
        "std_accuracy": float(acc.std()),
        "splits": splits,
    }


def reference_rows(
    encoder: SCNN,
    data: ExperimentData,
    split_seeds: Sequence[int],
    encoder_splits: list[dict[str, Any]],
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Callable[[str, dict[str, Any]], None] | None = None,
    rows: Sequence[str] | None = None,
    fine_tune: bool = False,
    supervised: ExperimentConfig | None = None,
    probe: str = DEFAULT_PROBE,
) -> dict[str, Any]:
    r"""The encoder's accuracy and the reference rows, probed on the same splits.

    Args:
        encoder: the evaluated encoder (for its architecture and width).
        data: the prepared dataset, with labels.
        split_seeds: the splits the encoder was probed on.
        encoder_splits: the encoder's per-split results
            (:func:`~topo_contrastive.evaluation.probe.probe_splits`).
        seed: the pre-training seed of the encoder; the untrained row starts from it
            (default: 0).
        device: the device of the untrained encoder's forward passes (default: ``"cpu"``).
        progress: called as ``progress(row, split_result)`` after every split of every
            reference row (default: nothing).
        rows: the reference rows to probe (default ``None``: the untrained encoder and
            every row of ``data.reference_features()``: :data:`REFERENCE_ROWS` on one complex,
            the complex-agnostic rows on complexes of their own).
        fine_tune: add the rows of :func:`fine_tune_rows` (the encoder fine-tuned, and the
            same recipe from the untrained encoder) on the same splits (default: ``False``).
        supervised: the supervised configuration whose learning rate, weight decay, batch
            size and epochs train the row of :func:`supervised_row` on the same splits
            (default ``None``: no such row).
        probe: the probe of every row, ``"ridge"`` (default) or ``"svm"``
            (:func:`~topo_contrastive.evaluation.probe.probe_splits`); the encoder's
            ``encoder_splits`` must come from the same probe.

    Returns:
        ``{"protocol", "rows", "omitted", "below", "line"}``: :func:`protocol_summary`; one
        dict per row (the encoder first): ``row``, ``label``, ``features``,
        ``mean_accuracy`` / ``std_accuracy`` (percent over the splits) and ``splits`` (one
        dict per split as :func:`probe_splits`'); ``omitted``: ``{row: reason}``;
        ``below``: the rows whose mean beats the encoder's, best first; ``line``:
        :func:`below_line`.

    Raises:
        ValueError: ``data`` has no labels; an unknown ``probe``, or splits it cannot run on
            (before any fit).
    """
    check_probe_splits(data, split_seeds, probe)
    protocol = protocol_summary(data, split_seeds, probe)
    width = int(getattr(encoder, "out_channels", 0)) or None
    rows_out = [_row("encoder", _LABELS["encoder"], width or 0, encoder_splits)]
    omitted: dict[str, str] = {}
    data_rows = [n for n in reference_names(data)[1:] if rows is None or n in rows]
    if rows is None or "untrained" in rows:
        fresh = untrained_like(encoder, data, seed)
        label = f"untrained encoder (same architecture, seed {int(seed)})"
        _probe_row(rows_out, "untrained", label, embed(fresh, data, device=device), data,
                   split_seeds, progress, probe)  # fmt: skip
    for name, (label, features) in data.reference_features(data_rows).items():
        if isinstance(features, str):
            omitted[name] = features
            continue
        _probe_row(rows_out, name, label, features, data, split_seeds, progress, probe)
    if fine_tune:
        rows_out += fine_tune_rows(encoder, data, split_seeds, seed, device, progress)
    if supervised is not None:
        rows_out.append(supervised_row(encoder, data, split_seeds, supervised, device, progress))
    enc = rows_out[0]["mean_accuracy"]
    better = sorted(
        (r for r in rows_out[1:] if r["mean_accuracy"] > enc), key=lambda r: -r["mean_accuracy"]
    )
    out = {
        "protocol": protocol,
        "rows": rows_out,
        "omitted": omitted,
        "below": [r["row"] for r in better],
    }
    if fine_tune:
        out["fine_tune"] = fine_tune_line()
    if supervised is not None:
        out["supervised"] = supervised_line(supervised)
    out["line"] = below_line(out)
    return out


def fine_tune_line() -> str:
    """How the rows of :func:`fine_tune_rows` are trained, in one line."""
    from topo_contrastive.evaluation import finetune as ft

    return (
        f"fine-tuned rows: linear head (Adam, lr {ft.DEFAULT_HEAD_LR:g}) on the encoder trained "
        f"end to end (lr {ft.DEFAULT_ENCODER_LR:g}), cross-entropy on the training split, the "
        f"epoch (<= {ft.DEFAULT_EPOCHS}) with the best validation accuracy (no validation "
        "split: 3-fold CV inside the training split), test accuracy"
    )


def _tuned_splits(
    data: ExperimentData,
    split_seeds: Sequence[int],
    name: str,
    start: Callable[[int], SCNN],
    progress: Callable[[str, dict[str, Any]], None] | None,
    config: ExperimentConfig | None,
    **options: Any,
) -> list[dict[str, Any]]:
    """:func:`~topo_contrastive.evaluation.finetune.fine_tune` of ``start(split_seed)`` on
    every split (its training part, the epoch on its validation part, the split seed as the
    run's seed), one record per split; ``progress(name, record)`` after each."""
    from topo_contrastive.evaluation.finetune import fine_tune

    splits = []
    for s in split_seeds:
        idx = data.split(int(s))
        res = fine_tune(data, start(int(s)), config, idx["train"], idx["test"],
                        val_idx=idx["val"], seed=int(s), **options)  # fmt: skip
        splits.append({"split_seed": int(s), "test_accuracy": res.test_accuracy,
                       "train_accuracy": res.train_accuracy, "epochs": res.selection.epochs,
                       "selection": res.selection.rule})  # fmt: skip
        if progress is not None:
            progress(name, splits[-1])
    return splits


def fine_tune_rows(
    encoder: SCNN,
    data: ExperimentData,
    split_seeds: Sequence[int],
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Callable[[str, dict[str, Any]], None] | None = None,
    max_epochs: int | None = None,
) -> list[dict[str, Any]]:
    """The encoder fine-tuned end to end (``finetune``) and the same recipe from the
    untrained encoder of the same architecture and seed (``finetune_control``), on the
    splits ``split_seeds`` (:func:`~topo_contrastive.evaluation.finetune.fine_tune` with its
    defaults; the epochs selected on each split's validation part, else by cross-validation
    inside its training part; the run's seed is the split seed).

    Args:
        encoder: the evaluated encoder (copied, not changed).
        data: the prepared dataset, with labels.
        split_seeds: the splits.
        seed: the pre-training seed of the encoder (the control starts from it).
        device: training device.
        progress: called as ``progress(row, split_result)`` after every split.
        max_epochs: the largest epoch count (default ``None``: 40,
            :data:`~topo_contrastive.evaluation.finetune.DEFAULT_EPOCHS`).

    Returns:
        Two rows as :func:`reference_rows` gives them (``splits``: ``split_seed``,
        ``test_accuracy``, ``train_accuracy``, ``epochs``, ``selection``).
    """
    from topo_contrastive.evaluation.finetune import DEFAULT_EPOCHS

    starts = {"finetune": encoder, "finetune_control": untrained_like(encoder, data, seed)}
    out = []
    for name, start in starts.items():
        splits = _tuned_splits(
            data, split_seeds, name, lambda _s, e=start: e, progress, config=None,
            device=device, max_epochs=max_epochs or DEFAULT_EPOCHS,
        )  # fmt: skip
        label = _LABELS[name] + ("" if name == "finetune" else f" (seed {int(seed)})")
        out.append(_row(name, label, int(getattr(encoder, "out_channels", 0)), splits))
    return out


def supervised_line(config: ExperimentConfig) -> str:
    """How the row of :func:`supervised_row` is trained, in one line."""
    return (
        f"supervised row: an SCNN of the encoder's architecture from scratch (split seed) and "
        f"a linear head, trained end to end with Adam (lr {config.lr:g}, weight decay "
        f"{config.weight_decay:g}, configuration {config.name!r}), cross-entropy on the "
        f"training split, the epoch (<= {config.epochs}) with the best validation accuracy "
        "(no validation split: 3-fold CV inside the training split), test accuracy"
    )


def supervised_row(
    encoder: SCNN,
    data: ExperimentData,
    split_seeds: Sequence[int],
    config: ExperimentConfig,
    device: str | torch.device = "cpu",
    progress: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The supervised SCNN on the same labels: on every split, an encoder of ``encoder``'s
    architecture initialised from the split seed and a linear head, trained end to end on
    the split's training part with ``config``'s learning rate, weight decay and batch size,
    the epoch (at most ``config.epochs``) selected on its validation part
    (:func:`~topo_contrastive.evaluation.finetune.fine_tune`; the recipe of
    :func:`~topo_contrastive.evaluation.finetune.supervised_from_scratch` with the
    evaluated encoder's architecture).

    Args:
        encoder: the evaluated encoder (only its architecture is used).
        data: the prepared dataset, with labels.
        split_seeds: the splits.
        config: a configuration for the training (e.g. ``get_config("SCNN", task,
            edition)``).
        device: training device.
        progress: called as ``progress("supervised", split_result)`` after every split.

    Returns:
        One row as :func:`reference_rows` gives them (``splits``: ``split_seed``,
        ``test_accuracy``, ``train_accuracy``, ``epochs``, ``selection``).

    Raises:
        TypeError: ``config`` is not an :class:`ExperimentConfig`.
    """
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"`config` must be an ExperimentConfig, got {type(config).__name__}")
    splits = _tuned_splits(
        data, split_seeds, SUPERVISED_ROW, lambda s: untrained_like(encoder, data, s), progress,
        config=config, head="linear", frozen=False, max_epochs=config.epochs,
        encoder_lr=config.lr, head_lr=config.lr, weight_decay=config.weight_decay,
        device=device,
    )  # fmt: skip
    width = int(getattr(encoder, "out_channels", 0))
    return _row(SUPERVISED_ROW, _LABELS[SUPERVISED_ROW], width, splits)


def below_line(references: Mapping[str, Any]) -> str:
    """One line: the reference rows whose mean accuracy beats the encoder's, best first
    (``"the encoder (65.0 %) is below: raw flows 93.5 %, ..."``), or that none does.

    Args:
        references: the dict of :func:`reference_rows`.
    """
    rows = {r["row"]: r for r in references["rows"]}
    enc = rows["encoder"]["mean_accuracy"]
    if not references["below"]:
        return f"the encoder ({enc:.1f} %) is at or above every reference row"
    def short(n: str) -> str:  # the sketched harmonic row is named as such
        return "harmonic sketch" if rows[n]["label"].startswith("harmonic sketch") else _LABELS[n]

    parts = [f"{short(n)} {rows[n]['mean_accuracy']:.1f} %" for n in references["below"]]
    return f"the encoder ({enc:.1f} %) is below: {', '.join(parts)}"


def _size(value: Any) -> str:
    return str(value) if isinstance(value, int) else f"{value[0]}-{value[1]}"


def protocol_line(protocol: Mapping[str, Any]) -> str:
    """The splits and the selection rule in one line (printed and in the Markdown)."""
    seeds = protocol["split_seeds"]
    span = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
    head = (
        f"{len(seeds)} split(s) ({span}) of {_size(protocol['train'])} train / "
        f"{_size(protocol['val'])} val / {_size(protocol['test'])} test samples; every row: "
    )
    if protocol.get("probe") == "ridge":
        a = protocol["alpha_grid"]
        return head + (
            f"ridge classifier on standardised features, alpha in {len(a)} values "
            f"{min(a):g}-{max(a):g} by leave-one-out squared hinge loss on the training split, "
            "test "
            "accuracy"
        )
    grid = ", ".join(f"{c:g}" for c in protocol["C_grid"])
    return head + (
        f"LinearSVC on standardised features, C in {{{grid}}} by stratified "
        f"{_size(protocol['folds'])}-fold CV on the training split, test accuracy"
    )


def references_markdown(summary: Mapping[str, Any]) -> str:
    """The Markdown report of an evaluation with reference rows: a title, the protocol line,
    a table (row, features, test accuracy mean ± std over the splits) and the below line.

    Args:
        summary: the dict of :func:`~topo_contrastive.cli._runs.evaluate_saved` (with
            its ``references`` block).

    Raises:
        KeyError: ``summary`` has no ``references`` block.
    """
    refs = summary["references"]
    name = summary.get("metadata", {}).get("config", "encoder")
    lines = [
        f"# {name} on {summary.get('dataset', '?')}: linear probe with reference rows",
        "",
        protocol_line(refs["protocol"]) + ".",
        "",
        "| row | features | test accuracy (%) |",
        "|---|---:|---:|",
    ]
    for r in refs["rows"]:
        label = r["label"].replace("|", "\\|")
        if r["row"] == "encoder":
            label = f"{label} ({name})"
        lines.append(
            f"| {label} | {r['features']} | "
            f"{format_mean_std(r['mean_accuracy'], r['std_accuracy'])} |"
        )
    for row, why in refs["omitted"].items():
        lines += ["", f"{_LABELS[row]}: omitted ({why})."]
    for key in ("fine_tune", "supervised"):
        if refs.get(key):
            lines += ["", refs[key][0].upper() + refs[key][1:] + "."]
    lines += ["", refs["line"][0].upper() + refs["line"][1:] + ".", ""]
    return "\n".join(lines)
