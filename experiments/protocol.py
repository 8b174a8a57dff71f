"""The units of work of ``reproduce`` and how one is run (private).

A *unit* is one pre-trained encoder with the splits it is evaluated on, one supervised split,
one reference row on all splits, or one point of Figure 2; its key names it in ``runs.json``
so that an interrupted run can be resumed unit by unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from experiments.presets import Preset
from experiments.table import SHARED_EDITION
from topo_contrastive.evaluation.probe import (
    evaluate_encoder,
    probe_splits,
    reference_features,
)
from topo_contrastive.evaluation.supervised import train_supervised
from topo_contrastive.training.configs import get_config
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.loop import pretrain


def split_assignment(num_splits: int, encoders: int, seed: int) -> list[list[int]]:
    """Split seeds of each encoder: ``seed + s`` goes to encoder ``s % encoders``."""
    encoders = max(1, min(encoders, num_splits))
    return [[seed + s for s in range(num_splits) if s % encoders == j] for j in range(encoders)]


@dataclass(frozen=True)
class Unit:
    """One unit of work; ``kind`` is ``"contrastive"``, ``"supervised"``, ``"untrained"``,
    ``"harmonic"`` or ``"raw"``, ``experiment`` is ``"table1"`` or ``"figure2"``."""

    key: str
    experiment: str  # "table1" or "figure2"
    kind: str  # "contrastive", "supervised", "untrained", "harmonic", "raw"
    edition: str
    dataset: str
    row: str
    splits: tuple[int, ...]
    pretrain_seed: int | None = None
    drop_prob: float | None = None


def _encoder_units(key: str, experiment: str, kind: str, edition: str, dataset: str, row: str,
                   groups: list[list[int]], seed: int, drop_prob: float | None = None
                   ) -> list[Unit]:  # fmt: skip
    """One unit per pre-trained encoder ``j`` (seed ``seed + j``) and its splits."""
    return [Unit(f"{key}/encoder{j}", experiment, kind, edition, dataset, row, tuple(splits),
                 seed + j, drop_prob) for j, splits in enumerate(groups)]  # fmt: skip


def plan_units(
    preset: Preset,
    datasets: Sequence[str],
    rows: Sequence[str],
    editions: Sequence[str],
    seed: int,
    fig2: str | None,
) -> list[Unit]:
    """Every unit of a run, in running order (references, then rows, per dataset and edition;
    Figure 2 last)."""
    units: list[Unit] = []
    every = tuple(seed + s for s in range(preset.num_splits))
    for d in datasets:
        groups = split_assignment(preset.num_splits, preset.pretrain_seeds.get(d, 1), seed)
        if preset.references:
            units += [Unit(f"table1/{d}/{kind}", "table1", kind, SHARED_EDITION, d, kind, every)
                      for kind in ("harmonic", "raw")]  # fmt: skip
        for ed in editions:
            for row in rows:
                if row == "SCNN":
                    units += [Unit(f"table1/{ed}/{d}/SCNN/split{s}", "table1", "supervised", ed,
                                   d, row, (s,)) for s in every]  # fmt: skip
                else:
                    units += _encoder_units(f"table1/{ed}/{d}/{row}", "table1", "contrastive",
                                            ed, d, row, groups, seed)  # fmt: skip
            if preset.references:
                units += _encoder_units(f"table1/{ed}/{d}/untrained", "table1", "untrained", ed,
                                        d, "untrained", groups, seed)  # fmt: skip
    if fig2 is not None:
        groups = split_assignment(preset.figure2_splits, preset.figure2_pretrain_seeds, seed)
        for row in ("SCL", "SSCL"):
            for p in preset.figure2_probs:
                units += _encoder_units(f"figure2/{fig2}/{row}/p{p}", "figure2", "contrastive",
                                        "paper", fig2, row, groups, seed, float(p))  # fmt: skip
    return units


def _reference(unit: Unit, data: ExperimentData, preset: Preset, device: Any) -> tuple:
    evals = probe_splits(reference_features(data, unit.kind), data, unit.splits)
    return evals, {"pretrain_seed": None, "epochs": 0}


def _supervised(unit: Unit, data: ExperimentData, preset: Preset, device: Any) -> tuple:
    cfg = get_config("SCNN", unit.dataset, unit.edition)
    epochs = preset.epochs_for(unit.dataset, cfg)
    (s,) = unit.splits
    res = train_supervised(data, cfg, data.split(s), seed=s, epochs=epochs, device=device)
    evals = [{"split_seed": s, "test_accuracy": res.test_accuracy,
              "train_accuracy": res.train_accuracy, "val_accuracy": res.val_accuracy}]
    return evals, {
        "pretrain_seed": None, "epochs": epochs, "epochs_run": res.epochs_run,
        "best_epoch": res.best_epoch,
        "final_train_accuracy": res.train_history[-1] if res.train_history else None,
        "train_seconds": round(res.seconds, 3),
    }  # fmt: skip


def _untrained(unit: Unit, data: ExperimentData, preset: Preset, device: Any) -> tuple:
    cfg = get_config("SCL", unit.dataset, unit.edition)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(unit.pretrain_seed)  # the initialisation pretrain() starts from
        encoder = data.encoder(cfg)
    evals = evaluate_encoder(encoder.eval(), data, unit.splits, device=device)
    return evals, {"pretrain_seed": unit.pretrain_seed, "epochs": 0}


def _contrastive(unit: Unit, data: ExperimentData, preset: Preset, device: Any) -> tuple:
    cfg = get_config(unit.row, unit.dataset, unit.edition)
    if unit.experiment == "figure2" and preset.figure2_epochs:
        epochs = preset.figure2_epochs
    else:
        epochs = preset.epochs_for(unit.dataset, cfg)
    res = pretrain(data, cfg, seed=unit.pretrain_seed, epochs=epochs, device=device,
                   drop_prob=unit.drop_prob)  # fmt: skip
    evals = evaluate_encoder(res.encoder, data, unit.splits, device=device)
    extra = {"pretrain_seed": unit.pretrain_seed, "epochs": epochs,
             "final_loss": res.losses[-1], "train_seconds": round(res.seconds, 3)}  # fmt: skip
    if unit.drop_prob is not None:
        extra["drop_prob"] = unit.drop_prob
    return evals, extra


_RUNS = {"harmonic": _reference, "raw": _reference, "supervised": _supervised,
         "untrained": _untrained, "contrastive": _contrastive}  # fmt: skip


def run_unit(
    unit: Unit, data: ExperimentData, preset: Preset, device: str | torch.device
) -> list[dict[str, Any]]:
    """Run one unit and return its records (one per split; the run folder adds the unit's
    wall time, ``unit_seconds``)."""
    base = {"unit": unit.key, "experiment": unit.experiment, "edition": unit.edition,
            "dataset": unit.dataset, "config": unit.row}  # fmt: skip
    evals, extra = _RUNS[unit.kind](unit, data, preset, device)
    return [{**base, **extra, **ev} for ev in evals]
