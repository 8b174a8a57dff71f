"""What every study run shares: its settings (:class:`Settings`, with :class:`DataOptions`)
and the scaffold plan -> cells -> report.

A study makes a *plan* (cell key -> a function computing the cell's record), hands it to
:meth:`~experiments.run_folder.RunFolder.cells` (every cell computed, or read back from the
run folder, :func:`open_cells`), summarises the records and writes its *report*
(:func:`write_report`). The commands build one :class:`Settings` from their options
(``experiments/cli/_options.py``) and pass it to the study.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments import _helpers
from experiments.run_folder import RunFolder


@dataclass(frozen=True)
class DataOptions:
    """Where a run's data come from (the data options of the commands).

    Attributes:
        root: folder of the generated and processed datasets (default ``data``).
        datasets: the paper's datasets by name.
        files: edge-flow files of one's own (``.npz``; only read).
        networks: TNTP road networks shipped by `pytspl`, by name.
        trips: routed trips per road network.
        samples: samples of the many-complexes default task (``None``: the study's).
        ocean_raw: the original ocean drifter file (``None``: the shipped task).
        trajectory_points, trajectory_split: the synthetic trajectory task's sizes.
    """

    root: Path = Path("data")
    datasets: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    networks: tuple[str, ...] = ()
    trips: int = 400
    samples: int | None = None
    ocean_raw: str | None = None
    trajectory_points: int = 400
    trajectory_split: tuple[int, int, int] = (200, 100, 100)

    def load(self, name: str) -> Any:
        """The :class:`~topo_contrastive.training.ExperimentData` of the paper's dataset
        ``name`` (a resolved name), built as these options say."""
        from topo_contrastive.training import ExperimentData, load_dataset

        ds = load_dataset(name, data_root=Path(self.root).expanduser(), ocean_raw=self.ocean_raw,
                          trajectory_points=self.trajectory_points,
                          trajectory_split=self.trajectory_split)  # fmt: skip
        return ExperimentData.from_dataset(ds, name)


@dataclass(frozen=True)
class Settings:
    """The settings of one study run, built once from the command's options (or by hand)
    and passed to the study; each study reads the fields it needs.

    Attributes:
        out: the output folder (the study writes into it).
        seed: the base seed; derived seeds are ``seed + s``.
        seeds: pre-training seeds (encoders per row).
        splits: evaluation splits.
        fractions: labelled (or unobserved) fractions (``None``: the study's default).
        draws: labelled subsets per fraction below 1.
        epochs: pre-training epochs (``None``: the configuration's).
        label_epochs: epochs of fine-tuning and of the supervised SCNN (``None``: the
            study's default).
        hidden: encoder width (``None``: the configuration's).
        layers, batch_size, budget, temperature: the encoder's depth, samples per batch,
            the masks' budget and the loss's temperature.
        rows: the rows to run (``None``: the study's default).
        editions: the editions of the encoder rows (``None``: the study's default).
        data: where the data come from.
        device: training device.
        threads: torch CPU threads (``None``: the idle cores).
        progress: show progress (a bar on a terminal, lines otherwise).
        resume: keep the finished cells of an earlier run in ``out``.
        overwrite: replace an earlier result in ``out`` once the new one is complete.
        command: the command line, recorded in the results.
    """

    out: Path
    seed: int = 0
    seeds: int = 1
    splits: int = 1
    fractions: Sequence[float] | None = None
    draws: int = 1
    epochs: int | None = None
    label_epochs: int | None = None
    hidden: int | None = None
    layers: int = 2
    batch_size: int = 64
    budget: float = 0.3
    temperature: float = 0.5
    rows: Sequence[str] | None = None
    editions: Sequence[str] | None = None
    data: DataOptions = field(default_factory=DataOptions)
    device: str = "cpu"
    threads: int | None = None
    progress: bool = False
    resume: bool = False
    overwrite: bool = False
    command: str = ""

    def replace(self, **changes: Any) -> Settings:
        """These settings with ``changes``."""
        return dataclasses.replace(self, **changes)

    def bar(self, desc: str) -> Callable[[int], Any]:
        """The progress display of ``n`` cells named ``desc`` (nothing unless
        :attr:`progress`), for :meth:`~experiments.run_folder.RunFolder.cells`."""
        return lambda n: _helpers.progress(self.progress, n, desc)

    def say(self, msg: str) -> None:
        """Print ``msg`` on stderr where :attr:`progress` is shown."""
        if self.progress:
            _helpers.say(msg)


def open_cells(settings: Settings, command: str, fingerprinted: Mapping[str, Any]) -> RunFolder:
    """The run folder ``<out>/cells/`` of a study written by ``command``: ``cells.json``
    holds every finished cell, a later call with the same ``fingerprinted`` settings reads
    them back, one with others is refused (naming them)."""
    return RunFolder(Path(settings.out) / "cells", command, fingerprinted, records="cells.json",
                     resume=True, csv=False,
                     restart="choose another --out, or run with --overwrite")  # fmt: skip


def write_report(
    folder: str | Path, name: str, summary: Mapping[str, Any], markdown: str,
    rows: Sequence[Mapping[str, Any]], plot: Callable[[Path], None] | None = None,
) -> str:  # fmt: skip
    """Write ``<name>.json`` (``summary``), ``.csv`` (``rows``), ``.md`` (``markdown``)
    and, with ``plot``, ``.png`` into ``folder``, each atomically; returns ``markdown``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _helpers.write_json(folder / f"{name}.json", summary)
    _helpers.write_csv(folder / f"{name}.csv", rows)
    _helpers.write_text(folder / f"{name}.md", markdown)
    if plot is not None:
        plot(folder / f"{name}.png")
    return markdown


def check_fractions(fractions: Sequence[float] | None, one: bool = True) -> list[float]:
    """``fractions`` sorted, each in ``(0, 1]`` (``one=False``: ``(0, 1)``), none twice.

    Raises:
        ValueError: no fraction, one outside the interval (or NaN), one given twice.
    """
    interval = "(0, 1]" if one else "(0, 1)"
    out = sorted(float(f) for f in fractions or ())
    if not out:
        raise ValueError(f"`fractions` is empty: give at least one fraction in {interval}")
    for f in out:
        if not (0 < f < 1 or (one and f == 1)):  # NaN fails too
            raise ValueError(f"`fractions` must lie in {interval}, got {f:g}")
    keys = [f"{f:g}" for f in out]
    for k in keys:
        if keys.count(k) > 1:
            raise ValueError(f"`fractions` names {k} twice: give each fraction once")
    return out


def check_names(given: Sequence[tuple[str, str]], what: str) -> None:
    """Every name of ``given`` (``(name, source)`` pairs, the source as the user gave it)
    given once; ``what`` names the kind of input.

    Raises:
        ValueError: naming both sources of a name given twice.
    """
    seen: dict[str, str] = {}
    for name, source in given:
        if name in seen:
            raise ValueError(
                f"{source} has the same name as {seen[name]} ({name!r}): give each {what} "
                "once (a data file is named by its stem; rename a copy)"
            )
        seen[name] = source


def check_counts(**counts: Any) -> None:
    """Every count given is a positive integer (``None`` is allowed where a default applies:
    pass only the counts that need a value).

    Raises:
        ValueError: naming the count and its value.
    """
    for name, value in counts.items():
        try:
            _helpers.check_int(value, name, 1)
        except (TypeError, ValueError):
            raise ValueError(f"`{name}` must be a positive integer, got {value!r}") from None


def summarize_runs(runs: Mapping[str, Sequence[float]]) -> dict[str, dict[str, Any]]:
    """``{key: {"mean", "std", "runs"}}`` of every list of accuracies in ``runs``."""
    import numpy as np

    return {k: {"mean": float(np.mean(v)), "std": float(np.std(v)), "runs": list(v)}
            for k, v in runs.items()}  # fmt: skip
