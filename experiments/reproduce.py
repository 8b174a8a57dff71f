r"""Table 1 and Figures 1-2 of the paper, end to end (``python -m experiments reproduce``).

**Protocol** (paper §5, docs/design.md §2.8). For every contrastive row, edition and dataset,
encoders are pre-trained on all samples without labels (transductive), and a linear SVM (C by
10-fold cross-validation on the training split) is fitted on the embeddings :math:`\mathbf{h}` of
the training split of a random split and scored on its test split. The ``num_splits`` split seeds
``seed .. seed + num_splits - 1`` are shared out over ``pretrain_seeds`` encoders (encoder ``j``,
pre-trained with seed ``seed + j``, is evaluated on the splits ``s`` with
``(s - seed) % pretrain_seeds == j``), so the table's mean ± std runs over ``num_splits`` splits
and ``pretrain_seeds`` independently pre-trained encoders. The supervised SCNN is trained once per
split (seed = split seed), until validation and training accuracy stall.

**Two editions** (:data:`~topo_contrastive.training.configs.EDITIONS`): the paper's encoder
(mean readout over edges) and the same rows with :class:`~topo_contrastive.nn.HodgeReadout`.
**Reference rows**, on the same splits: each edition's encoder at its initialisation
(``untrained``, the same weights the contrastive rows start from), and linear SVMs on the
harmonic coordinates :math:`\mathbf{U}_H^\top \mathbf{x}` and on the raw flows. Figure 2 sweeps
the uniform drop probability for SCL and SSCL (paper edition).

**Units and resuming.** The work is a list of *units* (one pre-trained encoder with its splits,
one supervised split, one reference row, one Figure 2 point), each with a key: the cells of a
:class:`~experiments.run_folder.RunFolder`. After every unit its records (one
per split, with the unit's key and wall time) are appended to ``runs.json`` / ``runs.csv``
atomically, with ``"complete": false``. ``resume=True`` reloads the records of finished units
and skips them; it refuses (before writing anything) a folder whose run used other settings
(preset, seed, datasets' complexes, the configurations of every row: their fingerprint is
stored; the message names the settings that differ). An interrupted run never looks complete:
a stale ``COMPLETE`` marker is removed before any work and written last.

**Outputs** in ``out``: ``runs.json``, ``runs.csv``, ``table1.md`` (both editions beside the
paper's numbers, reference rows, supervised training accuracy, settings, wall time, targets),
``figure1.png``, ``figure2.png`` and the marker ``COMPLETE``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

import topo_contrastive
from experiments._helpers import COMPLETE_MARKER, count, numerics, require_extra, write_text
from experiments.presets import PRESETS, Preset
from experiments.protocol import evaluate_encoder as evaluate_encoder  # tests import it here
from experiments.protocol import plan_units, run_unit, split_assignment
from experiments.run_folder import RunFolder
from experiments.study import Settings
from experiments.table import format_table, summarize
from topo_contrastive.training.configs import (
    CONFIG_NAMES,
    DATASET_NAMES,
    EDITIONS,
    get_config,
    resolve_config_name,
    resolve_dataset_name,
    resolve_edition,
)
from topo_contrastive.training.data import ExperimentData

#: The entries :func:`reproduce` writes into its folder (an ``--overwrite`` removes an earlier
#: run's and keeps other files).
OUTPUTS = ("runs.json", "runs.csv", "table1.md", "figure1.png", "figure2.png", COMPLETE_MARKER)

# kept under their old private names (tests and callers patch or import them)
_split_assignment = split_assignment
_run_unit = run_unit


@dataclass
class ReproduceResult:
    """What :func:`reproduce` returns.

    Attributes:
        records: one dict per run (row x edition x dataset x split, and Figure 2's points).
        summary: ``summary[(edition, row, dataset)] = (mean %, std %, n)`` of the Table 1
            records (edition-independent reference rows under ``"shared"``).
        seconds: wall time of this call (a resumed run adds the earlier calls' unit times).
        out: the output folder.
        resumed_units: units taken from an earlier run.
    """

    records: list[dict[str, Any]]
    summary: dict[tuple[str, str, str], tuple[float, float, int]]
    seconds: float
    out: Path
    resumed_units: int = 0


def _settings(preset: Preset, seed: int) -> dict[str, Any]:
    """The settings a finished unit's records depend on (library version, preset, seed, the
    configurations of every row), fingerprinted by the run folder. The selection of rows,
    editions and datasets is not part of them (it does not change a unit's records); the
    datasets' complexes are checked separately (:func:`_check_data`)."""
    configs = {
        f"{ed}/{d}/{r}": get_config(r, d, ed).to_dict()
        for ed in EDITIONS
        for d in DATASET_NAMES
        for r in CONFIG_NAMES
    }
    return {
        "library_version": topo_contrastive.__version__,
        "preset": {k: v for k, v in asdict(preset).items() if k != "name"},
        "seed": seed,
        "configs": configs,
    }


def _data_fingerprints(loaded: dict[str, ExperimentData]) -> dict[str, dict[str, Any]]:
    return {
        d: {"sizes": list(v.sizes), "complex": v.fingerprint, "samples": v.num_samples}
        for d, v in sorted(loaded.items())
    }


def _check_data(run: RunFolder, data: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The data fingerprints of the resumed run and this one (the other datasets' of the
    earlier run kept).

    Raises:
        ValueError: a dataset of this run was another one in the resumed run (nothing is
            written then).
    """
    old = ((run.previous or {}).get("settings") or {}).get("data") or {}
    for d, fp in data.items():
        if d in old and old[d] != fp:
            raise ValueError(
                f"cannot resume from '{run.folder}': its {d} dataset was another one "
                f"({old[d]} vs {fp} now). Nothing was overwritten."
            )
    return {**old, **data}


def _check_resumed(run: RunFolder, units: Sequence[Any]) -> None:
    """Refuse resumed records that were edited or damaged: every record holds its accuracies
    as fractions in ``[0, 1]`` (``val_accuracy`` may be ``null``) and its ``unit_seconds``,
    and a planned unit has one record per split of the unit.

    Raises:
        ValueError: naming the records file, the unit and what is wrong.
    """
    splits = {u.key: sorted(u.splits) for u in units}
    seen: dict[str, list[Any]] = {}
    for r in run.records:
        for field, most in (("test_accuracy", 1), ("train_accuracy", 1), ("val_accuracy", 1),
                            ("unit_seconds", float("inf"))):  # fmt: skip
            v = r.get(field)
            if field == "val_accuracy" and v is None:
                continue
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= most):
                given = "missing" if field not in r else f"{v!r}"
                want = "a fraction in [0, 1]" if most == 1 else "a number of seconds"
                _damaged(run, r["unit"], f"its {field} is {given}, expected {want}")
        seen.setdefault(r["unit"], []).append(r.get("split_seed"))
    for unit, got in seen.items():
        if unit in splits and sorted(got, key=repr) != sorted(splits[unit], key=repr):
            _damaged(run, unit, f"it has records for the splits {got}, expected one for each "
                                f"of {splits[unit]}")  # fmt: skip


def _damaged(run: RunFolder, unit: str, what: str) -> None:
    raise ValueError(
        f"cannot resume from '{run.path}': the record of unit {unit!r} was edited or damaged "
        f"({what}). Nothing was overwritten; {run.restart}"
    )


def reproduce(
    datasets: dict[str, ExperimentData] | Callable[[str], ExperimentData],
    settings: Settings,
    preset: Preset | str = "full",
    log: Callable[[str], None] | None = None,
) -> ReproduceResult:
    """Run Table 1 (both editions, reference rows) and Figures 1-2; write all outputs to
    ``settings.out``.

    Args:
        datasets: prepared datasets by name, or a function that prepares one from its name
            (called after the output folder was checked).
        settings: the run's ``out`` (created; must be writable), ``data.datasets`` (the
            datasets to run; empty: both), ``rows`` (the rows; ``None``: all six),
            ``editions`` (``None``: the preset's), ``seed`` (of splits and pre-training),
            ``device``, ``progress`` (a bar of the units), ``command`` (written into
            ``table1.md``) and ``resume`` (keep the finished units of an earlier run in
            ``out`` and run only the rest).
        preset: a :class:`Preset` or the name of one of :data:`PRESETS`.
        log: called with one line per finished unit (default: nothing).

    Returns:
        :class:`ReproduceResult`.

    Raises:
        ValueError: unknown preset, dataset, edition or row name; an unwritable ``out`` (before
            any work); a name given twice; ``resume`` on a folder whose run used other
            settings, on a non-empty folder that another command wrote (no ``reproduce``
            ``runs.json``), or on records that were edited or damaged (an accuracy outside
            ``[0, 1]`` or missing, a unit's split recorded twice; the message names the file
            and the unit): refused before any data is loaded, nothing is written then.
        MissingExtraError: matplotlib is not installed (the ``plot`` extra) and the preset
            draws a figure (before any work).
    """
    s, say = settings, log or (lambda _msg: None)
    preset, ds_names, rows, eds = _selection(preset, s.data.datasets or DATASET_NAMES,
                                             s.rows or CONFIG_NAMES, s.editions)  # fmt: skip
    if draws_figures(preset, ds_names):
        require_extra("matplotlib", "Figures 1-2 of reproduce")  # before any work
    start = time.perf_counter()
    # refuses a folder of another command or settings before the data is loaded
    run = RunFolder(s.out, "reproduce", _settings(preset, s.seed), key="unit", resume=s.resume)
    fig2 = resolve_dataset_name(preset.figure2_dataset) if preset.figure2_dataset else None
    fig2 = fig2 if fig2 in ds_names and preset.figure2_probs else None
    units = plan_units(preset, ds_names, rows, eds, s.seed, fig2)
    _check_resumed(run, units)  # an edited or damaged record, before the data is loaded
    loaded = {d: datasets[d] if isinstance(datasets, dict) else datasets(d) for d in ds_names}
    data_fp = _check_data(run, _data_fingerprints(loaded))
    done = sum(run.done(u.key) for u in units)
    if run.records:
        say(f"resuming: {done} of {len(units)} units already done")
    run.start(data=data_fp, **_run_settings(ds_names, rows, eds, s.device, s.command))

    def said(key: str, new: list[dict[str, Any]]) -> None:
        accs = ", ".join(f"{100 * r['test_accuracy']:.1f}" for r in new)
        say(f"{key}: test acc {accs} % ({new[0]['unit_seconds']:.0f} s)")

    plan = {u.key: (lambda u=u: _run_unit(u, loaded[u.dataset], preset, s.device))
            for u in units}  # fmt: skip
    run.cells(plan, s.bar("reproduce"), timer="unit_seconds", digits=3, after=said)
    extra: list[str] = []
    fig2_points = _figure2(preset, run.records, fig2, run.folder, extra) if fig2 else {}
    if preset.figure1_draws > 0:
        _figure1(preset, loaded, s.seed, run.folder, extra)
    seconds = time.perf_counter() - start
    unit_total = sum({r["unit"]: r["unit_seconds"] for r in run.records}.values())
    extra.append(f"sum of the units' wall times: {unit_total / 60:.1f} min"
                 + (f" ({done} units resumed from an earlier call)" if done else ""))
    summary = summarize(run.records)
    write_text(run.folder / "table1.md", format_table(
        summary, run.records, title_note=f"preset {preset.name!r}", reduced=preset.reduced,
        preset_line=preset.describe(eds), seconds=seconds, command=s.command,
        datasets=ds_names, configs=rows, editions=eds, extra=extra,
    ))  # fmt: skip
    run.finish(
        f"completed in {seconds:.1f} s", wall_time_s=round(seconds, 1),
        units_wall_time_s=round(unit_total, 1),
        summary=[[*k, *v] for k, v in summary.items()],
        figure2={c: [list(p) for p in pts] for c, pts in fig2_points.items()},
    )  # fmt: skip
    return ReproduceResult(records=run.records, summary=summary, seconds=seconds,
                           out=run.folder, resumed_units=done)  # fmt: skip


def _run_settings(
    ds_names: list[str], rows: list[str], eds: list[str], device: Any, command: str
) -> dict[str, Any]:
    """What ``runs.json`` records of a call besides the fingerprints: the selection, the
    device, the command line, the torch version, its number of threads and the numeric
    code paths (``code_paths``: whether they are pinned, and the pinning variables)."""
    import os

    return {
        "datasets": ds_names,
        "configs": rows,
        "editions": eds,
        "device": str(device),
        "command": command,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "code_paths": {
            "pinned": numerics.runs_pinned(),
            **{key: os.environ.get(key) for key in numerics.PINNED_ENV},
        },
    }


def _selection(
    preset: Preset | str,
    dataset_names: Sequence[str],
    config_names: Sequence[str],
    editions: Sequence[str] | None,
) -> tuple[Preset, list[str], list[str], list[str]]:
    """The preset, the canonical dataset, row and edition names of a call to
    :func:`reproduce` (the editions default to the preset's).

    Raises:
        ValueError: an unknown name, a name given twice (aliases included), or no dataset,
            row or edition.
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
        preset = PRESETS[preset]
    ds_names = [resolve_dataset_name(d) for d in dataset_names]
    rows = [resolve_config_name(c) for c in config_names]
    eds = [resolve_edition(e) for e in (preset.editions if editions is None else editions)]
    if not ds_names or not rows or not eds:
        raise ValueError("choose at least one dataset, one configuration and one edition")
    chosen = (
        ("datasets", "dataset_names", dataset_names, ds_names),
        ("configs", "config_names", config_names, rows),
        ("editions", "editions", editions, eds),
    )
    for flag, what, given, names in chosen:
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(
                f"--{flag} (`{what}`) names {', '.join(twice)} more than once ("
                f"{' '.join(map(str, given or names))}): give each once"
            )
    return preset, ds_names, rows, eds


def draws_figures(preset: Preset, dataset_names: Sequence[str]) -> bool:
    """Whether :func:`reproduce` with ``preset`` on ``dataset_names`` (resolved names) draws
    Figure 1 or Figure 2 (and so needs matplotlib, the ``plot`` extra)."""
    fig2 = resolve_dataset_name(preset.figure2_dataset) if preset.figure2_dataset else None
    return preset.figure1_draws > 0 or bool(fig2 in dataset_names and preset.figure2_probs)


def _figure2(
    preset: Preset, records: list[dict[str, Any]], fig2: str, folder: Path, extra: list[str]
) -> dict[str, list[tuple[float, float, float]]]:
    """Draw ``figure2.png`` from the Figure 2 records; return its points ``{row: [(p, mean,
    std)]}`` (accuracies in %) and add its line to ``extra``."""
    from experiments.figures import plot_figure2

    fig2_points: dict[str, list[tuple[float, float, float]]] = {}
    for row in ("SCL", "SSCL"):
        for p in preset.figure2_probs:
            accs = [
                100 * r["test_accuracy"]
                for r in records
                if r["experiment"] == "figure2"
                and r["config"] == row
                and r.get("drop_prob") == float(p)
            ]
            fig2_points.setdefault(row, []).append(
                (float(p), float(np.mean(accs)), float(np.std(accs)))
            )
    eps = preset.figure2_epochs or preset.epochs_for(fig2, get_config("SCL", fig2))
    plot_figure2(
        fig2_points,
        folder / "figure2.png",
        f"{fig2}: {count(eps, 'epoch')}, {count(preset.figure2_splits, 'split')}"
        + (" (REDUCED SETTINGS)" if preset.reduced else ""),
    )
    extra.append(
        f"Figure 2: {fig2}, p in {list(preset.figure2_probs)}, {count(eps, 'epoch')}, "
        f"{count(preset.figure2_splits, 'split')} over "
        f"{count(preset.figure2_pretrain_seeds, 'encoder')} per point"
    )
    return fig2_points


def _figure1(
    preset: Preset, loaded: dict[str, ExperimentData], seed: int, folder: Path, extra: list[str]
) -> None:
    """Draw ``figure1.png`` on the trajectory data (else the first dataset); add its line to
    ``extra``."""
    from experiments.figures import figure1_from_data

    fig1 = "trajectory" if "trajectory" in loaded else next(iter(loaded))
    figure1_from_data(
        loaded[fig1],
        get_config("SSCL_Spec", fig1),
        preset.figure1_draws,
        seed,
        folder / "figure1.png",
    )
    extra.append(f"Figure 1: {fig1}, {preset.figure1_draws} masks per flow and method")
