r"""SCoNe's generalisation tests of next-node prediction (Roddenberry, Glaze & Segarra, ICML
2021, §5; their ``trajectory_experiments.py`` options ``reverse`` and ``regional``): a model
trained on the training paths is scored on the **test paths** (:func:`.next_node_rows`'
number), on the **test paths reversed** (walked backwards, then cut as usual: a model that
learnt the complex's shape, not the direction of the traffic, scores alike) and, trained and
selected on the training paths of one region only, on the test paths of **another region**.
A path's region is its class label (both paper datasets label a path by where it runs:
which hole it passes, which side of Madagascar); trained on class 0, scored on class 1; data
without labels have no region test. Every row (and, with ``scone=True``, TopoModelX's SCoNe)
is scored under each test, on the same seeds and cuts of the paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch

from experiments._helpers import check_seeds
from experiments.studies.next_node.rows import (
    ROWS,
    _trained_row,
    next_node_cell,
    next_node_split,
    require_paths,
    row_table,
    train_next_node,
)
from experiments.studies.next_node.samples import NextNodeSamples, next_node_samples
from topo_contrastive.nn import SCNN
from topo_contrastive.training.data import ExperimentData

#: The generalisation tests, in order.
TESTS: tuple[str, ...] = ("test", "reversed", "other region")


def concat_samples(first: NextNodeSamples, second: NextNodeSamples) -> NextNodeSamples:
    """The samples of ``first`` followed by those of ``second`` (same complex).

    Raises:
        ValueError: the two sets come from complexes of other sizes.
    """
    if first.flows.shape[1] != second.flows.shape[1] or (
        first.candidates.shape[1] != second.candidates.shape[1]
    ):
        raise ValueError(
            f"cannot join samples of complexes with N1 = {first.flows.shape[1]} and "
            f"{second.flows.shape[1]} edges (N0 = {first.candidates.shape[1]} and "
            f"{second.candidates.shape[1]})"
        )
    return NextNodeSamples(
        torch.cat([first.flows, second.flows]),
        torch.cat([first.last_nodes, second.last_nodes]),
        torch.cat([first.targets, second.targets]),
        torch.cat([first.candidates, second.candidates]),
        list(first.prefixes) + list(second.prefixes),
    )


def transfer_splits(
    data: ExperimentData, seed: int, truncate: bool = True
) -> tuple[NextNodeSamples, dict[str, dict[str, np.ndarray] | None]]:
    """The samples and the split of every test of :data:`TESTS` for seed ``seed``
    (``ValueError`` for data without node paths).

    Returns:
        ``(samples, splits)``: ``samples`` holds the forward samples of every path
        (indices ``0 .. M-1``) followed by the reversed ones (``M .. 2M-1``), both cut with
        ``seed``; ``splits[test]`` is ``{"train", "val", "test"}`` indices into ``samples``
        (``None`` for ``"other region"`` where the data have no labels or either region
        lacks training, validation or test paths).
    """
    paths = require_paths(data)
    forward = next_node_samples(data.complex, paths, truncate=truncate, seed=int(seed))
    backward = next_node_samples(data.complex, paths, truncate=truncate, reverse=True,
                                 seed=int(seed))  # fmt: skip
    samples = concat_samples(forward, backward)
    split = next_node_split(data, int(seed))
    m = len(forward)
    splits: dict[str, dict[str, np.ndarray] | None] = {
        "test": split,
        "reversed": {"train": split["train"], "val": split["val"], "test": split["test"] + m},
        "other region": None,
    }
    if data.labels is not None:
        labels = data.labels.numpy()
        region = {k: v[labels[v] == 0] for k, v in split.items()}
        other = split["test"][labels[split["test"]] == 1]
        if min(region["train"].size, region["val"].size, other.size) > 0:
            splits["other region"] = {"train": region["train"], "val": region["val"],
                                      "test": other}  # fmt: skip
    return samples, splits


def next_node_transfer(
    encoder: SCNN,
    data: ExperimentData,
    seeds: list[int],
    *,
    epochs: int = 100,
    truncate: bool = True,
    device: str | torch.device = "cpu",
    progress: Any = None,
    scone: bool = False,
    rows: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every row of :data:`.ROWS` (``rows``: only these, in this order; with ``scone``, also
    TopoModelX's SCoNe) under every test of :data:`TESTS`, on the seeds ``seeds``, as
    :func:`.next_node_rows` does (``epochs``, ``truncate``, ``device``); ``progress(test, row,
    seed, accuracy)`` after every cell. The test and the reversed test share one training
    run per row and seed; the other region trains its own.

    Returns:
        A dict with ``tests`` (per test that applies to the data: ``rows``, per row ``row``,
        ``mean_accuracy`` and ``std_accuracy`` in percent and ``splits``), ``seeds`` and
        ``epochs``.

    Raises:
        TypeError: ``seeds`` not a sequence of ints.
        ValueError: no seeds, a seed twice or out of range; an unknown row; data without
            node paths; see :func:`.train_next_node`.
        ImportError: ``scone`` without TopoModelX (before any training).
    """
    seeds = check_seeds(seeds)  # no seeds used to give empty results
    rows_run = ROWS + (("scone",) if scone else ())
    if rows is not None:
        unknown = [r for r in rows if r not in ROWS + ("scone",)]
        if unknown or not rows:
            raise ValueError(f"`rows` must be a non-empty selection of {ROWS + ('scone',)}, "
                             f"got {tuple(rows)!r}")  # fmt: skip
        rows_run = tuple(rows)
    if "scone" in rows_run:
        from experiments.studies.next_node.scone import SCoNeEncoder

        SCoNeEncoder(data.complex)  # refuses a missing TopoModelX before any training
    cells: dict[str, dict[str, list[dict[str, Any]]]] = {
        t: {r: [] for r in rows_run} for t in TESTS
    }
    for s in seeds:
        samples, splits = transfer_splits(data, s, truncate)
        for row in rows_run:
            recs: dict[str, dict[str, Any]] = {}
            if row in ("uniform", "markov"):  # nothing to train: every test on its own
                for test in TESTS:
                    if splits[test] is not None:
                        recs[test] = next_node_cell(row, data, samples, encoder, splits[test])
            else:
                recs["test"], recs["reversed"] = _score_both(
                    row, data, samples, encoder, splits, epochs, int(s), device
                )
                if splits["other region"] is not None:
                    recs["other region"] = next_node_cell(
                        row, data, samples, encoder, splits["other region"], epochs=epochs,
                        seed=int(s), device=device,
                    )  # fmt: skip
            for test, rec in recs.items():
                cells[test][row].append({**rec, "seed": int(s)})
                if progress is not None:
                    progress(test, row, int(s), rec["test_accuracy"])
    tables = {test: row_table(cells[test]) for test in TESTS}
    return {"tests": {t: {"rows": rows} for t, rows in tables.items() if rows},
            "seeds": [int(s) for s in seeds], "epochs": int(epochs)}  # fmt: skip


def _score_both(
    row: str,
    data: ExperimentData,
    samples: NextNodeSamples,
    encoder: SCNN,
    splits: dict[str, dict[str, np.ndarray] | None],
    epochs: int,
    seed: int,
    device: str | torch.device,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train ``row`` on the forward training paths once; its scores on the forward and on the
    reversed test paths (the same kept epoch, chosen on the forward validation paths).
    ``"scone"`` trains TopoModelX's SCoNe from scratch in ``encoder``'s place."""
    fwd, rev = cast(dict, splits["test"]), cast(dict, splits["reversed"])  # always made
    joint = {"train": fwd["train"], "val": fwd["val"],
             "test": np.concatenate([fwd["test"], rev["test"]])}  # fmt: skip
    encoder, mode = _trained_row(row, data, encoder)
    res = train_next_node(data, samples, encoder, mode, joint["train"], joint["val"],
                          joint["test"], epochs=epochs, seed=seed, device=device,
                          test_parts=(fwd["test"].size, rev["test"].size))  # fmt: skip
    first, second = res.test_parts
    common = {"val_accuracy": res.val_accuracy, "train_accuracy": res.train_accuracy,
              "epoch": res.epoch}  # fmt: skip
    return {"test_accuracy": first, **common}, {"test_accuracy": second, **common}
