r"""Label-efficiency curves (``python -m experiments label-efficiency``).

**Labelled subsets**: :func:`~experiments.studies.label_efficiency.labelled_subsets`
(stratified, at least one label per class, nested within a draw, the same for every row).
The split's validation samples are not used (they would be extra labels); the test samples
are only scored.

**Rows** (:data:`ROW_KINDS`; keys such as ``probe:SSCL_Spec:hodge``):

- ``probe:<method>:<edition>`` and ``finetune:<method>:<edition>``: SSCL_Spec and SCL
  (:data:`PRETRAINED_METHODS`) of both editions, each pre-trained **once** per pre-training
  seed on all flows without labels and saved in ``<out>/encoders/`` (a resume loads them),
  probed with :func:`~experiments.studies.label_efficiency.low_label_probe` and
  fine-tuned end to end with :func:`~topo_contrastive.evaluation.finetune.fine_tune`;
- ``control:<edition>``: the same fine-tuning from the untrained encoder (same architecture,
  initialised as the pre-training run starts);
- ``untrained:<edition>``: the untrained encoder, probed;
- ``supervised:<edition>``: the supervised SCNN, fine-tuned from scratch with the
  configuration's learning rate (:func:`~topo_contrastive.evaluation.finetune.
  supervised_from_scratch`);
- ``raw``, ``abs``, ``harmonic``: the probe on the flows, on :math:`|\mathbf{x}|` and on
  :math:`\mathbf{U}_H^\top \mathbf{x}`; when :math:`\beta_1 >` :data:`HARMONIC_MAX` (256),
  the harmonic row keeps the top 256 principal directions of :math:`\mathbf{U}_H^\top
  \mathbf{x}` over all flows (fitted without labels; the row's label says so).

Draw ``d`` uses the encoder of pre-training seed ``seed + d % pretrain_seeds``; fine-tuning
and the supervised SCNN use the seed ``seed + d``. Every selection happens inside the
labelled subset (:mod:`~topo_contrastive.evaluation.finetune`,
:mod:`~experiments.studies.label_efficiency.probe`).

**Resuming.** Every finished cell (row, fraction, draw) is appended to
``label_efficiency.json`` / ``.csv`` (rewritten atomically, ``"complete": false``) as soon as
it is done (a :class:`~experiments.run_folder.RunFolder`). ``resume=True``
keeps the finished cells of an earlier call and runs only the others; a folder written by
another command or with other settings (fingerprint of the library version, the data, the
split, the fractions, draws, seeds, epochs and every configuration; the message names those
that differ) is refused before anything is written. A stale ``COMPLETE`` marker is
removed before any work and written last.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

import topo_contrastive
from experiments import _names
from experiments._helpers import COMPLETE_MARKER, count, require_extra
from experiments.run_folder import RunFolder
from experiments.studies.label_efficiency import probe as llp
from experiments.studies.label_efficiency.report import (
    label_efficiency_markdown,
    plot_curves,
    summarize,
)
from experiments.studies.label_efficiency.subsets import DEFAULT_FRACTIONS, labelled_subsets
from experiments.study import Settings, check_counts
from topo_contrastive.evaluation import finetune as ft
from topo_contrastive.evaluation.probe import reference_features
from topo_contrastive.training.configs import EDITIONS, get_config, resolve_edition
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.loop import embed

#: The contrastive rows pre-trained for the curves.
PRETRAINED_METHODS: tuple[str, ...] = ("SSCL_Spec", "SCL")
#: The row kinds, in the order of the table.
ROW_KINDS: tuple[str, ...] = _names.ROW_KINDS
#: Largest number of harmonic coordinates kept as they are (above: principal directions).
HARMONIC_MAX = 256
#: The file of cell records.
RECORDS_FILE = "label_efficiency.json"
#: The entries :func:`label_efficiency` writes into its folder (an ``--overwrite`` removes an
#: earlier run's and keeps other files).
OUTPUTS = ("label_efficiency.*", "encoders", COMPLETE_MARKER)
COMMAND = "label-efficiency"


# ---------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class Row:
    """One row of the curves.

    Attributes:
        key: e.g. ``"finetune:SSCL_Spec:hodge"``, ``"control:paper"``, ``"raw"``.
        kind: one of :data:`ROW_KINDS`.
        method: the pre-trained configuration (``probe``/``finetune``), else ``None``.
        edition: the edition (encoder rows), else ``None``.
    """

    key: str
    kind: str
    method: str | None = None
    edition: str | None = None

    @property
    def label(self) -> str:
        """How the table and the figure name the row."""
        ed = {"paper": "paper", "hodge": "HodgeReadout"}.get(self.edition or "", "")
        return {
            "probe": f"{self.method} {ed}, probe",
            "finetune": f"{self.method} {ed}, fine-tuned",
            "control": f"fine-tune control (untrained) {ed}",
            "untrained": f"untrained encoder {ed}, probe",
            "supervised": f"supervised SCNN {ed}",
            "raw": "raw flows",
            "abs": "|flows|",
            "harmonic": "U_H^T x",
        }[self.kind]


def _all_rows(editions: Sequence[str]) -> list[Row]:
    rows = []
    for kind in ROW_KINDS:
        if kind in ("probe", "finetune"):
            rows += [Row(f"{kind}:{m}:{e}", kind, m, e) for m in PRETRAINED_METHODS
                     for e in editions]  # fmt: skip
        elif kind in ("control", "untrained", "supervised"):
            rows += [Row(f"{kind}:{e}", kind, None, e) for e in editions]
        else:
            rows.append(Row(kind, kind))
    return rows


def resolve_rows(
    rows: Sequence[str] | None = None, editions: Sequence[str] = EDITIONS
) -> list[Row]:
    """The rows of a run: every row of ``editions`` (``rows=None``), or those named by
    ``rows``: a kind of :data:`ROW_KINDS` (all its rows) or a full key such as
    ``finetune:SCL:paper`` (case-insensitive).

    Raises:
        ValueError: an unknown row or edition, an edition given twice, or an empty
            selection.
    """
    if isinstance(editions, str):
        editions = [editions]
    eds = [resolve_edition(e) for e in editions]
    if not eds:
        raise ValueError("choose at least one edition")
    if len(set(eds)) != len(eds):
        twice = next(e for e in eds if eds.count(e) > 1)
        raise ValueError(
            f"the edition {twice!r} is given twice ({', '.join(map(str, editions))}): the "
            "same rows twice; give each edition once"
        )
    every = _all_rows(eds)
    if rows is None:
        chosen = every
    else:
        want = [str(r).strip().lower() for r in rows]
        known = {r.key.lower() for r in every}
        for w in want:
            if w not in ROW_KINDS and w not in known:
                raise ValueError(
                    f"unknown row {w!r}; choose kinds of {', '.join(ROW_KINDS)} or keys such as "
                    f"{', '.join(r.key for r in every[:3])}, ..."
                )
        chosen = [r for r in every if r.kind in want or r.key.lower() in want]
    if not chosen:
        raise ValueError("choose at least one row")
    return chosen


# ---------------------------------------------------------------------------- the run
@dataclass
class LabelEfficiencyResult:
    """What :func:`label_efficiency` returns.

    Attributes:
        records: one dict per cell (row, fraction, draw).
        summary: :func:`~experiments.studies.label_efficiency.summarize`.
        out: the output folder.
        resumed_cells: cells taken from an earlier call.
        computed_cells: cells computed by this call.
        seconds: wall time of this call.
    """

    records: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    out: Path
    resumed_cells: int = 0
    computed_cells: int = 0
    seconds: float = 0.0


def _settings(data: ExperimentData, task: str, opts: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the cells' results depend on (fingerprinted by the run folder): the
    library version, the data, the task, every configuration and the options."""
    labels = data.require_labels("the label-efficiency curves").numpy().astype(np.int64)
    configs = {
        f"{e}/{m}": get_config(m, task, e, **opts["overrides"]).to_dict()
        for e in EDITIONS
        for m in (*PRETRAINED_METHODS, "SCNN")
    }
    return {
        "library_version": topo_contrastive.__version__,
        "data": {"complex": data.fingerprint, "samples": data.num_samples,
                 "flows": hashlib.sha256(data.flows.numpy().tobytes()).hexdigest()[:16],
                 "labels": hashlib.sha256(labels.tobytes()).hexdigest()[:16]},
        "task": task,
        "configs": configs,
        **{k: v for k, v in opts.items() if k != "overrides"},
    }  # fmt: skip


def reduce_harmonic(features: np.ndarray, keep: int = HARMONIC_MAX) -> np.ndarray:
    r"""The harmonic row's reduction when :math:`\beta_1 >` ``keep``: the coordinates of the
    centred :math:`\mathbf{U}_H^\top \mathbf{x}` of all flows on their top ``keep``
    principal directions (an unsupervised reduction, fitted without labels).

    Args:
        features: ``float64 [S, beta_1]`` harmonic coordinates of all samples.
        keep: the directions kept (default :data:`HARMONIC_MAX`, 256).

    Returns:
        ``float64 [S, min(keep, S, beta_1)]``; ``features`` unchanged when
        :math:`\beta_1 \le` ``keep``.
    """
    if features.shape[1] <= keep:
        return features
    centred = features - features.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:keep].T


class _Features:
    """The features of every row's cells, computed once per encoder or reference."""

    def __init__(self, data: ExperimentData, task: str, folder: Path, opts: Mapping[str, Any],
                 log: Callable[[str], None]) -> None:  # fmt: skip
        self.data, self.task, self.folder, self.opts, self.log = data, task, folder, opts, log
        self.cache: dict[Any, Any] = {}
        self.harmonic_label = "U_H^T x"

    def config(self, method: str, edition: str) -> Any:
        return get_config(method, self.task, edition, **self.opts["overrides"])

    def untrained(self, edition: str, pseed: int) -> Any:
        key = ("untrained", edition, pseed)
        if key not in self.cache:
            with torch.random.fork_rng(devices=[]):  # as `pretrain` starts its encoder
                torch.manual_seed(pseed)
                self.cache[key] = self.data.encoder(self.config("SCL", edition))
            self.cache[key].eval()
        return self.cache[key]

    def pretrained(self, method: str, edition: str, pseed: int) -> Any:
        key = ("pretrained", method, edition, pseed)
        if key in self.cache:
            return self.cache[key]
        from experiments._helpers import pretrain_to_folder
        from topo_contrastive import io

        cfg = self.config(method, edition)
        epochs = self.opts["pretrain_epochs"] or cfg.epochs
        run_dir = self.folder / "encoders" / f"{method}-{edition}-seed{pseed}"
        log_file = run_dir / "pretrain.json"
        done = (run_dir / COMPLETE_MARKER).is_file() and log_file.is_file()
        if done:
            try:
                meta = json.loads(log_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # unreadable (truncated, edited): pre-train again
                self.log(f"{log_file} is not readable JSON: pre-training {method} again")
                meta = {}
            ran = cfg.replace(epochs=epochs) if epochs != cfg.epochs else cfg
            done = isinstance(meta, dict) and meta.get("config") == json.loads(
                json.dumps(ran.to_dict())) and (meta.get("seed"), meta.get("epochs")) == (
                pseed, epochs)  # fmt: skip
        if done:
            encoder, _ = io.load_encoder(run_dir / "encoder.pt", complex=self.data.hodge)
            self.log(f"loaded the pre-trained {method} ({edition}, seed {pseed}) from {run_dir}")
        else:
            run_dir.mkdir(parents=True, exist_ok=True)
            self.log(f"pre-training {method} ({edition}, seed {pseed}, {count(epochs, 'epoch')})")
            result = pretrain_to_folder(
                self.data, cfg, run_dir, seed=pseed, epochs=epochs,
                record={"command": COMMAND},
            )  # fmt: skip
            encoder = result.encoder.cpu().eval()
        self.cache[key] = encoder
        return encoder

    def embeddings(self, encoder: Any) -> np.ndarray:
        key = ("emb", id(encoder))
        if key not in self.cache:
            self.cache[key] = embed(encoder, self.data, device=self.opts["device"])
        return self.cache[key]

    def reference(self, kind: str) -> np.ndarray:
        key = ("ref", kind)
        if key not in self.cache:
            feats = reference_features(self.data, kind)
            if kind == "harmonic":
                beta = feats.shape[1]
                self.harmonic_label = f"U_H^T x (beta_1 = {beta})"
                if beta > HARMONIC_MAX:
                    feats = reduce_harmonic(feats)
                    self.harmonic_label = (
                        f"U_H^T x (beta_1 = {beta}; top {HARMONIC_MAX} principal directions "
                        "over all flows)"
                    )
            self.cache[key] = feats
        return self.cache[key]


def _cell(
    row: Row, subset: np.ndarray, test_idx: np.ndarray, draw: int, feats: _Features,
    opts: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """Run one cell; returns its record (without the row/fraction/draw fields)."""
    data, labels = feats.data, feats.data.labels.numpy()
    pseed = opts["seed"] + draw % opts["pretrain_seeds"]
    run_seed = opts["seed"] + draw
    rec: dict[str, Any] = {"pretrain_seed": None}
    probe = dict(classifier=opts["classifier"], seed=run_seed)
    tune = dict(max_epochs=opts["max_epochs"] or ft.DEFAULT_EPOCHS, seed=run_seed,
                device=opts["device"])  # fmt: skip
    if row.kind in ("probe", "finetune", "control", "untrained"):
        rec["pretrain_seed"] = pseed
        enc = (
            feats.pretrained(row.method, row.edition, pseed)
            if row.kind in ("probe", "finetune")
            else feats.untrained(row.edition, pseed)
        )
        cfg = feats.config("SCL", row.edition)
        if row.kind in ("probe", "untrained"):
            res = llp.low_label_probe(feats.embeddings(enc), labels, subset, test_idx, **probe)
        else:
            res = ft.fine_tune(data, enc, cfg, subset, test_idx, **tune)
    elif row.kind == "supervised":
        cfg = feats.config("SCNN", row.edition)
        tune["max_epochs"] = opts["max_epochs"] or cfg.epochs
        res = ft.supervised_from_scratch(data, cfg, subset, test_idx, **tune)
    else:
        res = llp.low_label_probe(feats.reference(row.kind), labels, subset, test_idx, **probe)
    if isinstance(res, ft.FineTuneResult):
        rec.update(res.record())
    else:
        rec.update(test_accuracy=res.test_accuracy, train_accuracy=res.train_accuracy,
                   selection=res.selection, C=res.C, scaling=res.scaling,
                   selection_score=res.cv_accuracy)  # fmt: skip
        if opts["classifier"] == "ridge":
            rec["alpha"] = res.alpha
    return rec


def label_efficiency(data: ExperimentData, settings: Settings, task: str,
                     classifier: str = "ridge", split: int = 0) -> LabelEfficiencyResult:
    r"""Test accuracy against the labelled fraction for every row; writes
    ``label_efficiency.json``, ``.csv``, ``.md``, ``.png`` and, last, ``COMPLETE`` into
    ``settings.out`` (the pre-trained encoders into ``<out>/encoders/``).

    Args:
        data: the prepared dataset, with labels.
        settings: the run's ``out``, ``fractions`` of the training split (default
            :data:`DEFAULT_FRACTIONS`), ``draws`` per fraction, ``seed`` (of the draws, of
            the pre-training, ``seed + j``, and of the fine-tuning runs, ``seed + draw``),
            ``seeds`` (encoders pre-trained per method and edition), ``rows``
            (:func:`resolve_rows`; ``None``: all), ``editions`` (of the encoder rows;
            ``None``: both), ``epochs`` (of pre-training; ``None``: the configurations'),
            ``label_epochs`` (the largest epoch count of fine-tuning and the supervised
            SCNN; ``None``: 40 and the configuration's 200), ``hidden`` (the encoders' width;
            ``None``: the configurations'), ``device``, ``resume``, ``command`` and progress
            (a line per pre-training, a display of the cells).
        task: the task whose configurations apply (``"trajectory"`` or ``"ocean"``).
        classifier: the low-label probe's classifier, ``"ridge"`` (default: the fast probe,
            one SVD per fold and scaling for the whole penalty path), ``"logistic"`` or
            ``"svm"`` (:func:`~experiments.studies.label_efficiency.low_label_probe`).
        split: the standard split whose training part is subsampled and whose test part
            scores (default 0).

    Returns:
        :class:`LabelEfficiencyResult`.

    Raises:
        ValueError: data without labels; a fraction outside ``(0, 1]`` or too small for a
            label per class; an unknown row, edition or classifier; ``resume`` into another
            command's folder or a run of other settings (nothing is written then).
        MissingExtraError: matplotlib is not installed (the ``plot`` extra), before any work.
    """
    start, s = time.perf_counter(), settings
    require_extra("matplotlib", "the label-efficiency figure")  # before any work
    if classifier not in llp.CLASSIFIERS:
        raise ValueError(
            f"`classifier` must be one of {', '.join(llp.CLASSIFIERS)}, got {classifier!r}"
        )
    labels = data.require_labels("the label-efficiency curves").numpy()
    chosen = resolve_rows(s.rows, EDITIONS if s.editions is None else s.editions)
    idx = data.split(int(split))
    test_idx = np.asarray(idx["test"], dtype=np.int64)
    fractions = DEFAULT_FRACTIONS if s.fractions is None else s.fractions
    subsets = labelled_subsets(labels, idx["train"], fractions, s.draws, s.seed)
    check_counts(draws=s.draws, pretrain_seeds=s.seeds)
    opts = _options(fractions, s, split, classifier)
    run = RunFolder(s.out, COMMAND, _settings(data, task, opts), records=RECORDS_FILE,
                    resume=s.resume, restart="use another --out, or run without --resume (and "
                    "with --overwrite) to start over")  # fmt: skip
    opts["device"] = str(s.device)
    run.start(task=task, dataset=data.name,
              data={"sizes": list(data.sizes), "complex": data.fingerprint,
                    "samples": data.num_samples}, **opts, command=s.command,
              torch=torch.__version__, threads=torch.get_num_threads())  # fmt: skip
    feats = _Features(data, task, run.folder, opts, s.say)

    def cell(row: Row, f: float, d: int) -> dict[str, Any]:
        subset = subsets[(f, d)]
        rec = _cell(row, subset, test_idx, d, feats, opts)
        label = feats.harmonic_label if row.kind == "harmonic" else row.label
        return {"row": row.key, "kind": row.kind, "method": row.method, "edition": row.edition,
                "label": label, "fraction": f, "draw": d, "labelled": int(subset.size),
                "split": int(split), "subset": hashlib.sha256(subset.tobytes()).hexdigest()[:12],
                **rec}  # fmt: skip

    plan = {f"{row.key}|{f:g}|{d}": partial(cell, row, f, d)
            for row in chosen for f in opts["fractions"] for d in range(s.draws)}  # fmt: skip
    run.cells(plan, s.bar(f"label-efficiency {data.name}"), digits=3, finished_at=True)
    summary = summarize(run.records, [r.key for r in chosen])
    _write_report(run, summary, data.name, opts, len(idx["train"]), test_idx.size)
    seconds = time.perf_counter() - start
    run.finish(f"completed in {seconds:.1f} s", wall_time_s=round(seconds, 1))
    return LabelEfficiencyResult(
        records=run.records, summary=summary, out=run.folder, resumed_cells=run.resumed,
        computed_cells=run.computed, seconds=seconds,
    )  # fmt: skip


def _options(fractions: Sequence[float], s: Settings, split: int,
             classifier: str) -> dict[str, Any]:  # fmt: skip
    """The settings of :func:`label_efficiency` that decide its numbers (fingerprinted: a
    resume with others is refused), with the probe's and fine-tuning's fixed choices."""
    return {
        "fractions": [float(f) for f in fractions], "draws": int(s.draws), "split": int(split),
        "seed": int(s.seed), "pretrain_seeds": int(s.seeds), "pretrain_epochs": s.epochs,
        "max_epochs": s.label_epochs, "classifier": classifier,
        "overrides": {"hidden_channels": s.hidden} if s.hidden else {},
        "probe": {"Cs": list(llp.LOW_LABEL_CS), "default_C": llp.DEFAULT_C,
                  "default_scaling": llp.DEFAULT_SCALING, "min_labels_for_cv": 5}
        if classifier != "ridge" else
        {"alphas": list(llp.LOW_LABEL_ALPHAS), "default_alpha": llp.DEFAULT_ALPHA,
         "default_scaling": llp.DEFAULT_SCALING, "min_labels_for_cv": 5},
        "finetune": {"head": "linear", "head_lr": ft.DEFAULT_HEAD_LR,
                     "encoder_lr": ft.DEFAULT_ENCODER_LR, "folds": ft.DEFAULT_FOLDS},
    }  # fmt: skip


def _write_report(
    run: RunFolder, summary: list[dict[str, Any]], dataset: str, opts: Mapping[str, Any],
    train_size: int, test_size: int,
) -> None:
    """Write ``label_efficiency.md`` (the table with its notes) and ``label_efficiency.png``
    (the curves) of ``summary`` into the run's folder."""
    classifier = opts["classifier"]
    title = (f"Label efficiency on {dataset} (split {opts['split']}, {opts['draws']} draws per "
             "fraction)")  # fmt: skip
    notes = [
        f"Training split: {train_size} samples, test split: {test_size} "
        "(the validation split is not used). Subsets stratified with >= 1 label per class, "
        "nested within a draw, the same for every row.",
        {"logistic": "Probe: logistic regression", "svm": "Probe: linear SVM",
         "ridge": "Probe: ridge classifier"}[classifier],
    ]  # fmt: skip
    penalty = "alpha" if classifier == "ridge" else "C"
    notes[-1] += (
        f" on standardised or L2-normalised features, both and {penalty} chosen by 3-fold CV "
        "inside the labelled subset where every class has >= 5 labels, else L2-normalised, "
        f"{penalty} = 1. "
        "Fine-tuning: linear head (lr 1e-2), encoder lr 1e-3, Adam; epochs by 3-fold CV "
        "inside the labelled subset where possible, else the maximum. The test split only "
        "scores."
    )
    run.write_tables("label_efficiency",
                     markdown=label_efficiency_markdown(summary, opts["fractions"], title, notes))
    plot_curves(summary, run.folder / "label_efficiency.png", title)
