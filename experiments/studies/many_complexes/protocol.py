r"""The label-efficiency protocol on many complexes: every sample on a complex of its own.

Where samples live on different complexes, raw flows and harmonic coordinates are
coordinates of different spaces; an SCNN's weights do not depend on the complex. For each
pre-training seed ``s`` (seed ``seed + s``):

1. **Split.** An 80 / 20 % training / test split of all samples (a permutation with seed
   ``seed + 1000 + s``); the labelled subsets of the training split as in the
   label-efficiency study (stratified, at least one label per class, ``draws`` per fraction
   below 1, one draw at 100 %;
   :func:`~experiments.studies.label_efficiency.labelled_subsets`).
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
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.studies.many_complexes.rows import ROWS, Cell, Row
from experiments.studies.reuse.protocol import fraction_key
from topo_contrastive.utils.checks import check_int

__all__ = ["DEFAULT_FRACTIONS", "check_study", "many_complexes_study", "split"]

#: The labelled fractions of the training split.
DEFAULT_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.1, 1.0)


def split(num_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The 80 / 20 % training / test split: sorted ``int64`` indices of the first
    ``int(0.8 * num_samples)`` and the rest of a permutation with ``seed``."""
    perm = np.random.default_rng(seed).permutation(num_samples)
    cut = int(0.8 * num_samples)
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def _subsets(labels: np.ndarray, train: np.ndarray, fractions: Sequence[float], draws: int,
             seed: int) -> dict[tuple[float, int], np.ndarray]:  # fmt: skip
    from experiments.studies.label_efficiency import labelled_subsets

    below = [f for f in fractions if f < 1]
    subsets = labelled_subsets(labels, train, below, draws, seed) if below else {}
    if 1.0 in fractions:
        subsets[(1.0, 0)] = train  # every label: one draw
    return subsets


def _labels(dataset: Any) -> np.ndarray:
    from topo_contrastive.data import ComplexData

    if len(dataset) == 0 or not isinstance(dataset[0], ComplexData) or dataset[0].is_shared:
        raise ValueError(
            "`dataset` must hold samples with complexes of their own (ComplexData with "
            f"incidences), got {'no sample' if len(dataset) == 0 else type(dataset[0]).__name__}"
            " without one"
        )
    y = np.array([int(d.y) for d in dataset], dtype=np.int64)
    values = np.unique(y)
    if values.size < 2 or not np.array_equal(values, np.arange(values.size)):
        raise ValueError(
            "`dataset`: the labels must be class ids 0 .. C-1 of at least two classes, got "
            f"the values {values.tolist()[:10]}"
        )
    return y


def check_study(
    dataset: Any,
    rows: Sequence[str] | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    draws: int = 5,
    seeds: int = 3,
    epochs: int = 20,
    seed: int = 0,
    registry: Mapping[str, Row] | None = None,
) -> tuple[list[float], list[str], np.ndarray]:
    """Check the study's arguments before any work (see :func:`many_complexes_study`).

    Returns:
        The sorted fractions, the rows (in the registry's order) and the labels ``int64 [S]``.

    Raises:
        ValueError: as :func:`many_complexes_study`.
    """
    registry = ROWS if registry is None else registry
    fr = sorted(float(f) for f in fractions)
    if not fr:
        raise ValueError("`fractions` is empty: give at least one labelled fraction in (0, 1]")
    for f in fr:
        if not 0 < f <= 1:
            raise ValueError(f"`fractions` must lie in (0, 1], got {f:g}")
    if len(set(fr)) != len(fr):
        raise ValueError(f"`fractions` names a fraction twice: {[f'{f:g}' for f in fr]}")
    for name, value in (("draws", draws), ("seeds", seeds), ("epochs", epochs)):
        try:
            check_int(value, name, 1)
        except (TypeError, ValueError):
            raise ValueError(f"`{name}` must be a positive integer, got {value!r}") from None
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
    labels = _labels(dataset)
    for s in range(seeds):  # the subsets of every seed can be drawn, before any training
        _subsets(labels, split(labels.size, seed + 1000 + s)[0], fr, draws, seed + s)
    return fr, [r for r in registry if r in chosen], labels


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


def _run_row(row: Row, cell: Cell, subsets: Mapping[tuple[float, int], np.ndarray]
             ) -> dict[str, list[float]]:  # fmt: skip
    """The test accuracies of one row on every labelled subset of one seed."""
    from experiments.studies.label_efficiency import low_label_probe

    X = row.features(cell) if row.features is not None else None
    out: dict[str, list[float]] = {}
    for (f, d), sub in subsets.items():
        if X is not None:
            acc = float(low_label_probe(X, cell.labels, sub, cell.test, seed=d).test_accuracy)
        else:
            acc = float(row.accuracy(cell, sub, d))
        out.setdefault(fraction_key(f), []).append(acc)
    return out


def many_complexes_study(
    dataset: Any,
    out: str | Path,
    *,
    rows: Sequence[str] | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    draws: int = 5,
    seeds: int = 3,
    epochs: int = 20,
    label_epochs: int | None = None,
    hidden: int = 32,
    layers: int = 2,
    batch_size: int = 64,
    budget: float = 0.3,
    temperature: float = 0.5,
    seed: int = 0,
    data: Mapping[str, Any] | None = None,
    registry: Mapping[str, Row] | None = None,
    progress: Callable[[int], Any] | None = None,
) -> dict[str, Any]:
    """Run the many-complexes protocol (module docstring) and return its summary.

    Args:
        dataset: an ``InMemoryDataset`` of :class:`~topo_contrastive.data.ComplexData`, each
            sample on its own complex (``x_1`` ``[N1, 1]``, ``y`` class ids ``0 .. C-1``):
            :func:`~experiments.studies.many_complexes.trajectory_samples` or
            :func:`~experiments.studies.many_complexes.pool_networks`.
        out: the folder of the finished cells (``<out>/cells/``).
        rows: the rows to run, by name (default: every row of ``registry`` that needs no
            extra, ``Row.extra``); run and shown in
            the registry's order.
        fractions: labelled fractions of the training split, in ``(0, 1]`` (default 1, 5,
            10, 100 %).
        draws: labelled subsets per fraction below 1 (default 5).
        seeds: pre-training seeds, each with its own split (default 3).
        epochs: pre-training epochs (default 20).
        label_epochs: epochs of fine-tuning and of the supervised SCNN (default
            ``max(epochs, 5)``).
        hidden, layers, batch_size, budget, temperature: the encoder's width and depth, the
            samples per batch, the masks' budget and the loss's temperature (default 32, 2,
            64, 0.3, 0.5).
        seed: base seed (default 0): seed ``s`` trains with ``seed + s``.
        data: a description of the data for the summary and the settings (default: none).
        registry: the rows to choose from (default
            :data:`~experiments.studies.many_complexes.rows.ROWS`).
        progress: ``progress(total)`` returns a bar with ``update()``, called per cell.

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
    from experiments.run_folder import RunFolder

    registry = ROWS if registry is None else registry
    fr, chosen, labels = check_study(dataset, rows, fractions, draws, seeds, epochs, seed,
                                     registry)  # fmt: skip
    edges = [int(d.num_cells(1).sum()) if hasattr(d, "num_cells") else int(d.x_1.shape[0])
             for d in dataset]  # fmt: skip
    info = {**(data or {}), "samples": int(labels.size), "classes": int(labels.max()) + 1,
            "fingerprint": _fingerprint(dataset)}  # fmt: skip
    st = {"data": info, "fractions": fr, "draws": draws, "epochs": epochs,
          "label_epochs": label_epochs or max(epochs, 5), "hidden": hidden, "layers": layers,
          "batch_size": batch_size, "budget": budget, "temperature": temperature, "seed": seed,
          "rows": chosen}  # fmt: skip
    files = RunFolder(Path(out) / "cells", "many-complexes", st, records="cells.json",
                      resume=True, csv=False,
                      restart="choose another --out, or run with --overwrite")  # fmt: skip
    files.start()
    bar = progress(seeds * len(chosen)) if progress else None
    runs: dict[str, dict[str, list[float]]] = {r: {fraction_key(f): [] for f in fr}
                                               for r in chosen}  # fmt: skip
    seconds: dict[str, list[float]] = {r: [] for r in chosen}
    shared: dict[Any, Any] = {}
    computed = resumed = 0
    for s in range(seeds):
        cell: Cell | None = None
        subsets: dict[tuple[float, int], np.ndarray] = {}
        for row in chosen:
            key = f"seed {s}: {row}"
            if files.done(key):
                (record,) = files.load(key)
                resumed += 1
            else:
                if cell is None:  # the split, subsets and cache of this seed
                    train, test = split(labels.size, seed + 1000 + s)
                    subsets = _subsets(labels, train, fr, draws, seed + s)
                    cell = Cell(dataset, labels, int(labels.max()) + 1, st, s, seed + s, train,
                                test, shared=shared)  # fmt: skip
                t0 = time.perf_counter()
                accs = _run_row(registry[row], cell, subsets)
                record = {"seed": s, "row": row, "runs": accs,
                          "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
                files.save(key, record)
                computed += 1
            seconds[row].append(record["seconds"])
            for f, accs in record["runs"].items():
                runs[row][f].extend(accs)
            if bar is not None:
                bar.update(1)
    if bar is not None and hasattr(bar, "close"):
        bar.close()
    files.finish(f"{computed} cells computed, {resumed} resumed")
    return {
        "settings": {**st, "seeds": seeds},
        "data": {**info, "mean_edges": float(np.mean(edges))},
        "rows": {r: {f: {"mean": float(np.mean(v)), "std": float(np.std(v)), "runs": v}
                     for f, v in per.items()} for r, per in runs.items()},  # fmt: skip
        "seconds": seconds,
        "computed": computed,
        "resumed": resumed,
    }
