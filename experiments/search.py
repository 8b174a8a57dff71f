"""The small hyper-parameter search behind the frozen configurations (never on a test split).

Score of a point: for a contrastive row, the linear SVM's accuracy on the **validation** split
when a validation split exists (trajectory task), else the 10-fold **cross-validation**
accuracy on the training split (ocean drifters, which have no validation split); for the
supervised SCNN, the best validation accuracy during training (on the ocean drifters on 20%
carved out of the training split). Averaged over ``seeds`` pre-training seeds / splits.

**Outputs** (with ``out``, e.g. ``search.csv``): the CSV, rewritten after every grid point;
``search.csv.json``, the run's status (``"complete": false`` and the points done while it runs);
and, written last, the marker ``search.csv.COMPLETE``. A stale marker and the previous CSV and
status are removed before the first point, so an interrupted search never looks complete.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from experiments._helpers import (
    begin_outputs,
    count,
    mark_complete,
    marker_beside,
    write_csv,
    write_json,
)
from experiments.protocol import evaluate_encoder
from topo_contrastive.evaluation.supervised import train_supervised
from topo_contrastive.training.configs import ExperimentConfig, grid_point_config
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.loop import pretrain


def selection_score(data: ExperimentData, result: Mapping[str, Any]) -> float:
    """Validation accuracy if the dataset has a validation split, else CV accuracy."""
    has_val = bool(data.dataset.val_mask.any())
    return float(result["val_accuracy"] if has_val else result["cv_accuracy"])


def _scores(data: ExperimentData, config: ExperimentConfig, epochs: int | None, seeds: int,
            device: Any, eval_epochs: Sequence[int], splits_per_seed: int
            ) -> dict[int | None, list[float]]:  # fmt: skip
    """The selection scores of one grid point, per epoch count of ``eval_epochs`` (``None``:
    after the last epoch), over ``seeds`` encoders (or supervised runs) and their splits."""
    snaps = sorted({int(e) for e in eval_epochs}) if config.is_contrastive else []
    scores: dict[int | None, list[float]] = {e: [] for e in snaps} if snaps else {None: []}
    for seed in range(seeds):
        split_seeds = [seed + 1000 * j for j in range(splits_per_seed)]
        if not config.is_contrastive:
            for s in split_seeds:
                sup = train_supervised(data, config, data.split(s), seed=seed, epochs=epochs,
                                       device=device)  # fmt: skip
                scores[None].append(sup.val_accuracy)
            continue
        res = pretrain(data, config, seed=seed, epochs=snaps[-1] if snaps else epochs,
                       device=device, snapshot_epochs=snaps)  # fmt: skip
        for e in scores:
            if e is not None:
                res.encoder.load_state_dict(res.snapshots[e])
            for ev in evaluate_encoder(res.encoder, data, split_seeds, device=device):
                scores[e].append(selection_score(data, ev))
    return scores


def grid_search(
    data: ExperimentData,
    base: ExperimentConfig,
    grid: Mapping[str, Sequence[Any]],
    epochs: int | None = None,
    seeds: int = 2,
    device: str | torch.device = "cpu",
    out: str | os.PathLike | None = None,
    log: Callable[[str], None] | None = None,
    eval_epochs: Sequence[int] = (),
    splits_per_seed: int = 1,
) -> list[dict[str, Any]]:
    """Evaluate every combination of ``grid`` (fields of ``base``) by its selection score.

    Args:
        data: the prepared dataset.
        base: the configuration whose fields are varied.
        grid: ``{field: [values]}``; the Cartesian product is run. The key ``"K"`` sets
            both ``K_down`` and ``K_up`` (the paper ties them).
        epochs: epochs per run (default ``None``: the configuration's).
        seeds: pre-training seeds (contrastive) or splits (supervised) per point (default 2);
            split seed = pre-training seed.
        device: training device.
        out: CSV file rewritten after every point, with its status file ``<out>.json`` and,
            once every point is done, the marker ``<out>.COMPLETE`` (default ``None``).
        log: called with one line per point.
        eval_epochs: for contrastive rows, score the encoder after each of these epochs of one
            training run (its largest is the run's length; ``epochs`` is then ignored); one
            result row per point and epoch count, with an ``epochs`` column (default: only
            after the last epoch).
        splits_per_seed: evaluation splits per pre-trained encoder (default 1; encoder seed
            ``s`` is scored on split seeds ``s, s + 1000, s + 2000, ...``).

    Returns:
        One dict per point (and epoch count): the varied values, ``score`` (mean selection
        accuracy), ``score_std`` and ``seconds``.

    Raises:
        ValueError: an unknown field or invalid value.
    """
    keys = list(grid)
    rows: list[dict[str, Any]] = []
    total = math.prod(len(grid[k]) for k in keys)
    status: dict[str, Any] = {
        "complete": False,
        "points_done": 0,
        "points_total": total,
        "dataset": data.name,
        "config": base.name,
        "grid": {k: [list(v) if isinstance(v, tuple) else v for v in grid[k]] for k in keys},
        "epochs": epochs,
        "eval_epochs": sorted({int(e) for e in eval_epochs}),
        "seeds": seeds,
        "splits_per_seed": splits_per_seed,
    }
    if out is not None:
        out = Path(out)
        status_path = out.with_name(f"{out.name}.json")
        marker = marker_beside(out)
        begin_outputs(marker, stale=[out, status_path])
        write_json(status_path, status)
    start_all = time.perf_counter()
    for values in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, values, strict=True))
        config = grid_point_config(base, point)
        start = time.perf_counter()
        scores = _scores(data, config, epochs, seeds, device, eval_epochs, splits_per_seed)
        for e, vals in scores.items():
            row = {
                **{k: (list(v) if isinstance(v, tuple) else v) for k, v in point.items()},
                **({"epochs": e} if e is not None else {}),
                "score": float(np.mean(vals)),
                "score_std": float(np.std(vals)),
                "seconds": round(time.perf_counter() - start, 1),
            }
            rows.append(row)
            if log is not None:
                at = f" after {count(e, 'epoch')}" if e is not None else ""
                log(f"{base.name} {data.name} {point}{at}: score {100 * row['score']:.1f}%")
        status["points_done"] += 1
        if out is not None:
            write_csv(out, rows)
            write_json(status_path, status)
    if out is not None:
        seconds = time.perf_counter() - start_all
        write_json(status_path, {**status, "complete": True, "seconds": round(seconds, 1)})
        mark_complete(marker, f"{total} grid points in {seconds:.1f} s")
    return rows
