r"""The label-efficiency protocol on many complexes: every sample on a complex of its own.

Where samples live on different complexes, raw flows and harmonic coordinates are
coordinates of different spaces; an SCNN's weights do not depend on the complex. For each
pre-training seed ``s`` (seed ``seed + s``):

1. **Split.** An 80 / 20 % training / test split of all samples (a permutation with seed
   ``seed + 1000 + s``); the labelled subsets of the training split as in the
   label-efficiency study (stratified, at least one label per class, ``draws`` per fraction
   below 1, one draw at 100 %;
   :func:`~experiments.studies.label_efficiency.subsets.study_subsets`).
2. **Rows** (:data:`~experiments.studies.many_complexes.rows.ROWS`, or those chosen):
   a probed row's features of every sample are scored on every labelled subset by the
   label-efficiency probe (:func:`~experiments.studies.label_efficiency.low_label_probe`,
   logistic regression, its scaling and ``C`` by 3-fold cross-validation inside the
   labelled subset where every class has 5 labels: no selection on test or unlabelled
   data); a trained row gives a test accuracy per labelled subset. The encoders are
   pre-trained on all samples without labels, once per seed, and shared by the rows.

A cell (seed x row) is written to ``<out>/cells/cells.json`` as soon as it is finished; a
later call with the same settings reads it back instead of computing it (a folder of other
settings, other rows included, is refused, naming them).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Mapping
from typing import Any

import numpy as np

from experiments.studies.label_efficiency.subsets import study_subsets
from experiments.studies.many_complexes.rows import ROWS, Cell, Row
from experiments.studies.reuse.encoders import require_own_complexes
from experiments.studies.reuse.protocol import fraction_key
from experiments.study import Settings, check_counts, check_fractions, open_cells, summarize_runs

#: The labelled fractions of the training split.
DEFAULT_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.1, 1.0)


def split(num_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The 80 / 20 % training / test split: sorted ``int64`` indices of the first
    ``int(0.8 * num_samples)`` and the rest of a permutation with ``seed``."""
    perm = np.random.default_rng(seed).permutation(num_samples)
    cut = int(0.8 * num_samples)
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def _labels(dataset: Any) -> np.ndarray:
    require_own_complexes(dataset)
    y = np.array([int(d.y) for d in dataset], dtype=np.int64)
    values = np.unique(y)
    if values.size < 2 or not np.array_equal(values, np.arange(values.size)):
        raise ValueError(
            "`dataset`: the labels must be class ids 0 .. C-1 of at least two classes, got "
            f"the values {values.tolist()[:10]}"
        )
    return y


def _rows(rows: Any, registry: Mapping[str, Row]) -> list[str]:
    """The chosen rows (default: those that need no extra), in the registry's order."""
    chosen = [r for r, row in registry.items() if row.extra is None] if rows is None else list(rows)
    unknown = [r for r in chosen if r not in registry]
    if unknown or not chosen:
        raise ValueError(
            f"`rows`: unknown row(s) {unknown}; the rows are {list(registry)}" if unknown
            else f"`rows` is empty: choose among {list(registry)}"
        )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"`rows` names a row twice: {chosen}")
    for r in chosen:
        extra = registry[r].extra
        if extra is not None and importlib.util.find_spec(extra) is None:
            raise ValueError(
                f"`rows`: the row {r!r} needs {extra}, which is not installed (TopoModelX: "
                "pip install --no-deps topomodelx==0.0.1, see docs/install.md)"
            )
    return [r for r in registry if r in chosen]


def check_study(dataset: Any, settings: Settings, registry: Mapping[str, Row] | None = None
                ) -> tuple[list[float], list[str], np.ndarray]:  # fmt: skip
    """Check the study's arguments before any work (see :func:`many_complexes_study`).

    Returns:
        The sorted fractions, the rows (in the registry's order) and the labels ``int64 [S]``.

    Raises:
        ValueError: as :func:`many_complexes_study`.
    """
    s = settings
    fr = check_fractions(s.fractions)
    check_counts(draws=s.draws, seeds=s.seeds, epochs=s.epochs)
    chosen = _rows(s.rows, ROWS if registry is None else registry)
    labels = _labels(dataset)
    for i in range(s.seeds):  # the subsets of every seed can be drawn, before any training
        study_subsets(labels, split(labels.size, s.seed + 1000 + i)[0], fr, s.draws, s.seed + i)
    return fr, chosen, labels


def _fingerprint(dataset: Any) -> str:
    """sha256 (16 hex) of every tensor of every sample: the data the results depend on."""
    import torch

    h = hashlib.sha256()
    for d in dataset:
        for key in sorted(d.keys()):
            value = d[key]
            if isinstance(value, torch.Tensor):
                h.update(f"{key}{tuple(value.shape)}{value.dtype}".encode())
                h.update(value.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _cell(row: Row, seed_cell: Any, i: int) -> dict[str, Any]:
    """One row on every labelled subset of seed ``i``: ``{"seed", "row", "runs": {fraction:
    [test accuracy per draw]}}`` (``seed_cell(i)``: the seed's :class:`Cell` and subsets)."""
    from experiments.studies.label_efficiency import low_label_probe

    cell, subsets = seed_cell(i)
    X = row.features(cell) if row.features is not None else None
    out: dict[str, list[float]] = {}
    for (f, d), sub in subsets.items():
        if X is not None:
            acc = float(low_label_probe(X, cell.labels, sub, cell.test, seed=d).test_accuracy)
        else:
            acc = float(row.accuracy(cell, sub, d))
        out.setdefault(fraction_key(f), []).append(acc)
    return out


def many_complexes_study(dataset: Any, settings: Settings, data: Mapping[str, Any] | None = None,
                         registry: Mapping[str, Row] | None = None) -> dict[str, Any]:  # fmt: skip
    """Run the many-complexes protocol (module docstring) into ``settings.out`` and return
    its summary.

    Args:
        dataset: an ``InMemoryDataset`` of :class:`~topo_contrastive.data.ComplexData`, each
            sample on its own complex (``x_1`` ``[N1, 1]``, ``y`` class ids ``0 .. C-1``):
            :func:`~experiments.studies.many_complexes.trajectory_samples` or
            :func:`~experiments.studies.many_complexes.pool_networks`.
        settings: the run's ``out``, ``rows`` (by name; default: every row of ``registry``
            that needs no extra, run in the registry's order), ``fractions``, ``draws``,
            ``seeds`` (each with its own split), ``epochs``, ``label_epochs`` (default
            ``max(epochs, 5)``), ``hidden``, ``layers``, ``batch_size``, ``budget``,
            ``temperature``, ``seed`` (seed ``s`` trains with ``seed + s``) and progress.
        data: a description of the data for the summary and the settings (default: none).
        registry: the rows to choose from (default
            :data:`~experiments.studies.many_complexes.rows.ROWS`).

    Returns:
        A dict with ``settings``, ``data`` (``samples``, ``classes``, ``mean_edges`` and the
        description), ``rows`` (the mean, std and runs of every row at every fraction, over
        seeds and draws), ``seconds`` (per row, per seed), ``computed`` and ``resumed``
        (cells).

    Raises:
        ValueError: an empty dataset or one without complexes of its own, labels that are not
            class ids of two classes or more (``dataset``); a fraction outside ``(0, 1]`` or
            named twice; ``draws``, ``seeds`` or ``epochs`` not a positive integer; an
            unknown or repeated row; a fraction too small for one label per class, or more
            draws than distinct subsets; ``out`` holds a run of other settings (named).
    """
    registry, s = ROWS if registry is None else registry, settings
    fr, chosen, labels = check_study(dataset, s, registry)
    edges = [int(d.num_cells(1).sum()) if hasattr(d, "num_cells") else int(d.x_1.shape[0])
             for d in dataset]  # fmt: skip
    info = {**(data or {}), "samples": int(labels.size), "classes": int(labels.max()) + 1,
            "fingerprint": _fingerprint(dataset)}  # fmt: skip
    st = {"data": info, "fractions": fr, "draws": s.draws, "epochs": s.epochs,
          "label_epochs": s.label_epochs or max(s.epochs, 5), "hidden": s.hidden or 32,
          "layers": s.layers, "batch_size": s.batch_size, "budget": s.budget,
          "temperature": s.temperature, "seed": s.seed, "rows": chosen}  # fmt: skip
    run, cells, shared = open_cells(s, "many-complexes", st), {}, {}

    def seed_cell(i: int) -> tuple[Cell, dict]:  # the split, subsets and cache of seed i
        if i not in cells:
            train, test = split(labels.size, s.seed + 1000 + i)
            cells[i] = (Cell(dataset, labels, int(labels.max()) + 1, st, i, s.seed + i, train,
                             test, shared=shared),
                        study_subsets(labels, train, fr, s.draws, s.seed + i))  # fmt: skip
        return cells[i]

    plan = {f"seed {i}: {row}": (lambda row=row, i=i: {"seed": i, "row": row, "runs": _cell(
        registry[row], seed_cell, i)}) for i in range(s.seeds) for row in chosen}  # fmt: skip
    done = run.cells(plan, s.bar("many-complexes"))
    runs = {r: {fraction_key(f): [] for f in fr} for r in chosen}
    seconds: dict[str, list[float]] = {r: [] for r in chosen}
    for (record,) in done.values():
        seconds[record["row"]].append(record["seconds"])
        for f, accs in record["runs"].items():
            runs[record["row"]][f].extend(accs)
    run.finish(f"{run.computed} cells computed, {run.resumed} resumed")
    return {"settings": {**st, "seeds": s.seeds},
            "data": {**info, "mean_edges": float(np.mean(edges))},
            "rows": {r: summarize_runs(per) for r, per in runs.items()}, "seconds": seconds,
            "computed": run.computed, "resumed": run.resumed}  # fmt: skip
