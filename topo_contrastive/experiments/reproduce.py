r"""Table 1 and Figures 1-2 of the paper, end to end (``topo-contrastive reproduce``).

**Protocol** (paper §5, DESIGN §2.8). For every contrastive row and dataset, encoders are
pre-trained on all samples without labels (transductive), and a linear SVM (C by 10-fold
cross-validation on the training split) is fitted on the embeddings :math:`\mathbf{h}` of the
training split of a random split and scored on its test split. The ``num_splits`` split seeds
``seed .. seed + num_splits - 1`` are shared out over ``pretrain_seeds`` encoders (encoder ``j``,
pre-trained with seed ``seed + j``, is evaluated on the splits ``s`` with
``(s - seed) % pretrain_seeds == j``), so the table's mean ± std runs over ``num_splits`` splits
and ``pretrain_seeds`` independently pre-trained encoders. The supervised SCNN is trained once per
split (seed = split seed). Figure 2 sweeps the uniform drop probability for SCL and SSCL.

**Outputs** in ``out``: ``runs.json`` and ``runs.csv`` (one record per row x dataset x split,
rewritten atomically after every run), ``table1.md`` (measured mean ± std beside the paper's
numbers, with the settings and the wall time), ``figure1.png``, ``figure2.png`` and, written
last, the marker ``COMPLETE``. A stale ``COMPLETE`` is removed before any work, so an
interrupted run never looks complete.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from topo_contrastive.experiments.configs import (
    CONFIG_NAMES,
    DATASET_NAMES,
    PAPER_TABLE1,
    ExperimentConfig,
    get_config,
    resolve_config_name,
    resolve_dataset_name,
)
from topo_contrastive.experiments.data import ExperimentData
from topo_contrastive.experiments.evaluation import linear_probe
from topo_contrastive.experiments.outputs import (
    check_output_dir,
    write_csv,
    write_json,
    write_text,
)
from topo_contrastive.experiments.supervised import train_supervised
from topo_contrastive.experiments.training import embed, pretrain

__all__ = [
    "PRESETS",
    "Preset",
    "ReproduceResult",
    "evaluate_encoder",
    "format_table",
    "reproduce",
    "summarize",
]

COMPLETE_MARKER = "COMPLETE"


@dataclass(frozen=True)
class Preset:
    """Settings of a ``reproduce`` run.

    Args:
        name: ``"full"`` or ``"quick"`` (or a custom name).
        epochs: epochs per dataset (``None``: each configuration's own).
        num_splits: evaluation splits per row and dataset.
        pretrain_seeds: pre-trained encoders per contrastive row, per dataset.
        figure2_dataset: dataset of Figure 2 (``None``: no Figure 2).
        figure2_probs: uniform drop probabilities of Figure 2.
        figure2_splits: evaluation splits per point of Figure 2.
        figure2_pretrain_seeds: encoders per point of Figure 2.
        figure2_epochs: epochs of Figure 2's runs (``None``: as ``epochs``).
        figure1_draws: masks per flow and method of Figure 1 (``0``: no Figure 1).
        reduced: whether the settings are smaller than the paper's protocol.
    """

    name: str
    epochs: dict[str, int | None]
    num_splits: int = 16
    pretrain_seeds: dict[str, int] = field(default_factory=lambda: {"trajectory": 2, "ocean": 4})
    figure2_dataset: str | None = "ocean"
    figure2_probs: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7)
    figure2_splits: int = 4
    figure2_pretrain_seeds: int = 2
    figure2_epochs: int | None = None
    figure1_draws: int = 20
    reduced: bool = False

    def epochs_for(self, dataset: str, config: ExperimentConfig) -> int:
        """Epochs of ``config`` on ``dataset`` under this preset."""
        value = self.epochs.get(dataset)
        return config.epochs if value is None else int(value)

    def describe(self) -> str:
        """One line naming the settings."""
        eps = ", ".join(
            f"{d}: {e}"
            if e is not None
            else f"{d}: {get_config('SCL', d).epochs} contrastive / "
            f"{get_config('SCNN', d).epochs} SCNN"
            for d, e in self.epochs.items()
        )
        seeds = ", ".join(f"{d}: {n}" for d, n in self.pretrain_seeds.items())
        return (
            f"preset {self.name!r}; epochs {eps}; {self.num_splits} evaluation splits per row; "
            f"pre-trained encoders per contrastive row {seeds}; batch size 100"
        )


#: ``full``: the configurations' epochs (trajectory / ocean: 30 / 60 contrastive, 50 / 60
#: SCNN), batch 100, 16 splits, shared out over fewer pre-trained encoders than splits (time
#: budget on 2 CPU cores; see docs/results.md). ``quick``: all six rows on both datasets in
#: about 2 minutes on 2 cores, with far fewer epochs, splits and encoders (its numbers are NOT
#: the paper's protocol).
PRESETS: dict[str, Preset] = {
    "full": Preset(
        name="full",
        epochs={"trajectory": None, "ocean": None},
        num_splits=16,
        pretrain_seeds={"trajectory": 2, "ocean": 2},
        figure2_dataset="ocean",
        figure2_probs=(0.1, 0.3, 0.5, 0.7),
        figure2_splits=4,
        figure2_pretrain_seeds=1,
        figure1_draws=20,
        reduced=False,
    ),
    "quick": Preset(
        name="quick",
        epochs={"trajectory": 6, "ocean": 20},
        num_splits=4,
        pretrain_seeds={"trajectory": 1, "ocean": 1},
        figure2_dataset="ocean",
        figure2_probs=(0.1, 0.3, 0.5, 0.7),
        figure2_splits=2,
        figure2_pretrain_seeds=1,
        figure2_epochs=10,
        figure1_draws=3,
        reduced=True,
    ),
}


@dataclass
class ReproduceResult:
    """What :func:`reproduce` returns.

    Attributes:
        records: one dict per run (row x dataset x split, and Figure 2's points).
        summary: ``summary[config][dataset] = (mean %, std %, n)`` of the Table 1 records.
        seconds: wall time.
        out: the output folder.
    """

    records: list[dict[str, Any]]
    summary: dict[str, dict[str, tuple[float, float, int]]]
    seconds: float
    out: Path


def _split_assignment(num_splits: int, encoders: int, seed: int) -> list[list[int]]:
    """Split seeds of each encoder: ``seed + s`` goes to encoder ``s % encoders``."""
    encoders = max(1, min(encoders, num_splits))
    return [[seed + s for s in range(num_splits) if s % encoders == j] for j in range(encoders)]


def evaluate_encoder(
    encoder: torch.nn.Module,
    data: ExperimentData,
    split_seeds: Sequence[int],
    device: str | torch.device = "cpu",
) -> list[dict[str, Any]]:
    """Linear-SVM evaluation of one encoder on several splits (one dict per split).

    Accuracies are fractions; see :func:`~topo_contrastive.experiments.linear_probe`.
    """
    emb = embed(encoder, data, device=device)  # [S, hidden]
    labels = data.labels.numpy()
    out = []
    for s in split_seeds:
        idx = data.split(int(s))
        res = linear_probe(emb, labels, idx["train"], idx["test"], val_idx=idx["val"], seed=int(s))
        out.append(
            {
                "split_seed": int(s),
                "test_accuracy": res.test_accuracy,
                "train_accuracy": res.train_accuracy,
                "val_accuracy": res.val_accuracy,
                "cv_accuracy": res.cv_accuracy,
                "C": res.C,
            }
        )
    return out


def summarize(
    records: Sequence[dict[str, Any]], experiment: str = "table1"
) -> dict[str, dict[str, tuple[float, float, int]]]:
    """``{config: {dataset: (mean %, std %, n)}}`` of test accuracies (``np.std``, ddof 0)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r.get("experiment") != experiment:
            continue
        groups.setdefault((r["config"], r["dataset"]), []).append(100.0 * r["test_accuracy"])
    out: dict[str, dict[str, tuple[float, float, int]]] = {}
    for (cfg, ds), vals in groups.items():
        arr = np.asarray(vals)
        out.setdefault(cfg, {})[ds] = (float(arr.mean()), float(arr.std()), int(arr.size))
    return out


def _fmt(cell: tuple[float, float, int] | None) -> str:
    return "—" if cell is None else f"{cell[0]:.1f} ± {cell[1]:.1f}"


def _checks(summary: dict[str, dict[str, tuple[float, float, int]]]) -> list[str]:
    lines = []
    for ds in DATASET_NAMES:
        for cfg in CONFIG_NAMES:
            got = summary.get(cfg, {}).get(ds)
            if got is None or cfg == "SCNN":
                continue
            mean, std = PAPER_TABLE1[cfg][ds]
            ok = got[0] >= mean - 2 * std
            lines.append(
                f"- {cfg} on {ds}: {got[0]:.1f} vs paper {mean} ± {std} -> "
                f"{'within 2 std or better' if ok else 'MISSED (below paper - 2 std)'}"
            )
        a, b = summary.get("SSCL_Spec", {}).get(ds), summary.get("SCNN", {}).get(ds)
        if a and b:
            verdict = "yes" if a[0] > b[0] else "NO"
            lines.append(f"- SSCL_Spec above supervised SCNN on {ds}: {verdict}")
        a, b = summary.get("SCL", {}).get(ds), summary.get("SCL_low", {}).get(ds)
        if a and b:
            lines.append(f"- SCL above SCL_low on {ds}: {'yes' if a[0] > b[0] else 'NO'}")
    return lines


def format_table(
    summary: dict[str, dict[str, tuple[float, float, int]]],
    preset: Preset,
    seconds: float,
    command: str,
    datasets: Sequence[str],
    configs: Sequence[str],
    extra: Sequence[str] = (),
) -> str:
    """The Markdown ``table1.md``: measured mean ± std beside the paper's numbers."""
    names = {"trajectory": "Trajectory", "ocean": "Ocean drifters"}
    head = "| Model |" + "".join(
        f" {names.get(d, d)} (measured) | {names.get(d, d)} (paper) |" for d in datasets
    )
    sep = "|---|" + "---|---|" * len(datasets)
    rows = []
    for cfg in configs:
        cells = []
        for d in datasets:
            got = summary.get(cfg, {}).get(d)
            paper = PAPER_TABLE1.get(cfg, {}).get(d)
            cells.append(
                f" {_fmt(got)} | {paper[0]} ± {paper[1]} |" if paper else f" {_fmt(got)} | — |"
            )
        rows.append(f"| {cfg} |" + "".join(cells))
    lines = ["# Table 1: test accuracy (%), mean ± std", ""]
    if preset.reduced:
        lines += [
            f"> **REDUCED SETTINGS (`--{preset.name}`): these numbers do not follow the paper's "
            "protocol** (fewer epochs, splits and encoders than the full preset). "
            "Use `topo-contrastive reproduce` without `--quick` for the full protocol.",
            "",
        ]
    lines += [head, sep, *rows, ""]
    counts = sorted({v[2] for c in summary.values() for v in c.values()})
    lines += [
        "## Settings",
        "",
        f"- {preset.describe()}",
        f"- splits per cell: {', '.join(map(str, counts)) or '—'}; std is over splits (ddof 0)",
        f"- command: `{command}`",
        f"- wall time: {seconds / 60:.1f} min ({seconds:.0f} s) on {platform.machine()} with "
        f"{torch.get_num_threads()} torch threads",
        f"- torch {torch.__version__}, Python {platform.python_version()}",
        *[f"- {e}" for e in extra],
        "",
        "## Targets",
        "",
        *(_checks(summary) or ["- (no contrastive cell measured)"]),
        "",
    ]
    return "\n".join(lines)


def _plot_figure2(
    points: dict[str, list[tuple[float, float, float]]], path: Path, title: str
) -> None:
    from matplotlib.figure import Figure

    from topo_contrastive.datasets._base import atomic_write

    fig = Figure(figsize=(4.8, 3.4))
    ax = fig.subplots()
    styles = {
        "SCL": ("tab:blue", "o", "SCL (InfoNCE)"),
        "SSCL": ("tab:orange", "s", "SSCL (reweighted)"),
    }
    for name, pts in points.items():
        if not pts:
            continue
        pts = sorted(pts)
        color, marker, label = styles.get(name, ("k", "o", name))
        ax.errorbar(
            [p[0] for p in pts],
            [p[1] for p in pts],
            yerr=[p[2] for p in pts],
            color=color,
            marker=marker,
            capsize=3,
            label=label,
        )
    ax.set_xlabel("uniform drop probability p")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=130))


def _figure1(
    data: ExperimentData, config: ExperimentConfig, draws: int, seed: int, path: Path
) -> None:
    from topo_contrastive.experiments.figure1 import (
        METHODS,
        Figure1Result,
        embedding_distances,
        plot_figure1,
    )

    flows = data.flows.double()
    p_opt = data.drop_probabilities_for(config).double()
    support = flows != 0
    size = support.sum(-1, keepdim=True).clamp_min(1).double()
    p_unif = support * (p_opt.sum(-1, keepdim=True) / size)  # same expected drops per flow
    gen = torch.Generator().manual_seed(seed)
    distances = {
        m: embedding_distances(flows, data.hodge, p, draws, generator=gen, progress=False)
        for m, p in zip(METHODS, (p_unif, p_opt), strict=True)
    }
    plot_figure1(Figure1Result(distances, p_opt, p_unif, config.budget), path)


def reproduce(
    datasets: dict[str, ExperimentData] | Callable[[str], ExperimentData],
    out: str | Path,
    preset: Preset | str = "full",
    dataset_names: Sequence[str] = DATASET_NAMES,
    config_names: Sequence[str] = CONFIG_NAMES,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
    command: str = "",
    log: Callable[[str], None] | None = None,
) -> ReproduceResult:
    """Run Table 1 (and Figures 1-2) and write all outputs to ``out``.

    Args:
        datasets: prepared datasets by name, or a function that prepares one from its name
            (called after the output folder was checked).
        out: output folder (created; must be writable).
        preset: a :class:`Preset` or the name of one of :data:`PRESETS`.
        dataset_names: datasets to run (default both).
        config_names: rows to run (default all six).
        seed: base seed of splits and pre-training (default 0).
        device: training device (default ``"cpu"``).
        progress: show a tqdm bar (default ``False``).
        command: the command line, written into ``table1.md``.
        log: called with one line per finished run (default: nothing).

    Returns:
        :class:`ReproduceResult`.

    Raises:
        ValueError: unknown preset, dataset or row name; an unwritable ``out`` (before any
            work).
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
        preset = PRESETS[preset]
    ds_names = [resolve_dataset_name(d) for d in dataset_names]
    cfg_names = [resolve_config_name(c) for c in config_names]
    if not ds_names or not cfg_names:
        raise ValueError("choose at least one dataset and one configuration")
    folder = check_output_dir(out)
    marker = folder / COMPLETE_MARKER
    if marker.exists():
        marker.unlink()
    start = time.perf_counter()
    say = log or (lambda _msg: None)

    loaded: dict[str, ExperimentData] = {}
    for d in ds_names:
        loaded[d] = datasets[d] if isinstance(datasets, dict) else datasets(d)

    fig2_ds = preset.figure2_dataset
    fig2_ds = resolve_dataset_name(fig2_ds) if fig2_ds else None
    fig2_on = bool(fig2_ds and fig2_ds in loaded and preset.figure2_probs)
    fig2_configs = [c for c in ("SCL", "SSCL")] if fig2_on else []
    total = 0
    for d in ds_names:
        for c in cfg_names:
            if c == "SCNN":
                total += preset.num_splits
            else:
                total += len(
                    _split_assignment(preset.num_splits, preset.pretrain_seeds.get(d, 1), seed)
                )
    if fig2_on:
        total += (
            len(fig2_configs)
            * len(preset.figure2_probs)
            * min(preset.figure2_pretrain_seeds, preset.figure2_splits)
        )
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="reproduce", unit="run", disable=not progress, file=sys.stderr)
    records: list[dict[str, Any]] = []
    settings = {
        "preset": dataclasses.asdict(preset),
        "datasets": ds_names,
        "configs": cfg_names,
        "seed": seed,
        "device": str(device),
        "command": command,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }

    def save_partial() -> None:
        payload = {"complete": False, "settings": settings, "records": records}
        write_json(folder / "runs.json", payload)
        write_csv(folder / "runs.csv", records)

    def emit(rec: dict[str, Any]) -> None:
        records.append(rec)
        save_partial()
        msg = (
            f"[{rec['experiment']}] {rec['dataset']:>10} {rec['config']:<9} "
            f"split {rec['split_seed']:>2} test acc {100 * rec['test_accuracy']:.1f}%"
        )
        say(msg)

    for d in ds_names:
        data = loaded[d]
        for c in cfg_names:
            cfg = get_config(c, d)
            epochs = preset.epochs_for(d, cfg)
            if not cfg.is_contrastive:
                for s in range(preset.num_splits):
                    split_seed = seed + s
                    bar.set_description(f"{d} {c} split {split_seed}")
                    res = train_supervised(
                        data,
                        cfg,
                        data.split(split_seed),
                        seed=split_seed,
                        epochs=epochs,
                        device=device,
                    )
                    emit(
                        {
                            "experiment": "table1",
                            "dataset": d,
                            "config": c,
                            "split_seed": split_seed,
                            "pretrain_seed": None,
                            "epochs": epochs,
                            "test_accuracy": res.test_accuracy,
                            "train_accuracy": res.train_accuracy,
                            "val_accuracy": res.val_accuracy,
                            "best_epoch": res.best_epoch,
                            "seconds": round(res.seconds, 3),
                        }
                    )
                    bar.update(1)
                continue
            for j, splits in enumerate(
                _split_assignment(preset.num_splits, preset.pretrain_seeds.get(d, 1), seed)
            ):
                bar.set_description(f"{d} {c} encoder {j + 1}")
                res = pretrain(data, cfg, seed=seed + j, epochs=epochs, device=device)
                for ev in evaluate_encoder(res.encoder, data, splits, device=device):
                    emit(
                        {
                            "experiment": "table1",
                            "dataset": d,
                            "config": c,
                            "pretrain_seed": seed + j,
                            "epochs": epochs,
                            **ev,
                            "final_loss": res.losses[-1],
                            "seconds": round(res.seconds, 3),
                        }
                    )
                bar.update(1)

    fig2_points: dict[str, list[tuple[float, float, float]]] = {c: [] for c in fig2_configs}
    if fig2_on:
        data = loaded[fig2_ds]
        for c in fig2_configs:
            cfg = get_config(c, fig2_ds)
            epochs = preset.figure2_epochs or preset.epochs_for(fig2_ds, cfg)
            for p in preset.figure2_probs:
                accs = []
                for j, splits in enumerate(
                    _split_assignment(preset.figure2_splits, preset.figure2_pretrain_seeds, seed)
                ):
                    bar.set_description(f"figure 2 {c} p={p} encoder {j + 1}")
                    res = pretrain(
                        data, cfg, seed=seed + j, epochs=epochs, device=device, drop_prob=p
                    )
                    for ev in evaluate_encoder(res.encoder, data, splits, device=device):
                        accs.append(100 * ev["test_accuracy"])
                        emit(
                            {
                                "experiment": "figure2",
                                "dataset": fig2_ds,
                                "config": c,
                                "drop_prob": p,
                                "pretrain_seed": seed + j,
                                "epochs": epochs,
                                **ev,
                                "final_loss": res.losses[-1],
                                "seconds": round(res.seconds, 3),
                            }
                        )
                    bar.update(1)
                fig2_points[c].append((p, float(np.mean(accs)), float(np.std(accs))))
    bar.close()

    extra = []
    if fig2_on:
        eps = preset.figure2_epochs or preset.epochs_for(fig2_ds, get_config("SCL", fig2_ds))
        _plot_figure2(
            fig2_points,
            folder / "figure2.png",
            f"{fig2_ds}: {eps} epochs, {preset.figure2_splits} splits"
            + (" (REDUCED SETTINGS)" if preset.reduced else ""),
        )
        extra.append(
            f"Figure 2: {fig2_ds}, p in {list(preset.figure2_probs)}, {eps} epochs, "
            f"{preset.figure2_splits} splits over {preset.figure2_pretrain_seeds} encoders "
            "per point"
        )
    fig1_ds = "trajectory" if "trajectory" in loaded else next(iter(loaded))
    if preset.figure1_draws > 0:
        _figure1(
            loaded[fig1_ds],
            get_config("SSCL_Spec", fig1_ds),
            preset.figure1_draws,
            seed,
            folder / "figure1.png",
        )
        extra.append(f"Figure 1: {fig1_ds}, {preset.figure1_draws} masks per flow and method")
    seconds = time.perf_counter() - start
    summary = summarize(records)
    table = format_table(summary, preset, seconds, command, ds_names, cfg_names, extra)
    write_text(folder / "table1.md", table)
    write_json(
        folder / "runs.json",
        {
            "complete": True,
            "settings": settings,
            "wall_time_s": round(seconds, 1),
            "summary": {c: {d: list(v) for d, v in dv.items()} for c, dv in summary.items()},
            "figure2": {c: [list(p) for p in pts] for c, pts in fig2_points.items()},
            "records": records,
        },
    )
    write_csv(folder / "runs.csv", records)
    write_text(marker, f"completed in {seconds:.1f} s\n")
    return ReproduceResult(records=records, summary=summary, seconds=seconds, out=folder)


def _finite(x: float) -> bool:  # pragma: no cover - tiny helper
    return isinstance(x, float) and math.isfinite(x)
