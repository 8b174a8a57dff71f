r"""The missing-measurements protocol: probes trained on complete flows, tested on flows with
unobserved edges, the unobserved entries set to zero or interpolated.

For every dataset and split :math:`s`:

1. **Encoder.** The SSCL_Spec encoder of the HodgeReadout edition is pre-trained once per
   dataset on all its flows without labels (the configuration tuned for the dataset, for
   road networks and data files the ocean task's), at the configuration's epochs.
2. **Probes.** Every row's features of the training split's complete flows are standardised
   and probed with scikit-learn's ``RidgeClassifierCV`` (``alpha`` by leave-one-out on the
   training split among :data:`ALPHAS`). Rows (:data:`ROWS`): the encoder's embeddings, the
   raw flows, :math:`|\mathbf{x}|` and the harmonic coordinates
   :math:`\mathbf{U}_H^\top\mathbf{x}`
   (:func:`~topo_contrastive.nn.canonical_harmonic_basis`; a seeded sketch where the basis
   does not fit the budget, :func:`~topo_contrastive.nn.harmonic_features.harmonic_matrix`).
3. **Unobserved edges.** For every mode (:data:`~.masks.MODES`) and fraction :math:`f`,
   every test flow loses :math:`\operatorname{round}(f N_1)` edges
   (:func:`~.masks.unobserved_masks`; one generator seeded ``(seed, s)`` draws the masks of
   the split, mode after mode in the order of :data:`~.masks.MODES`, fractions in
   increasing order). The unobserved entries are set to zero (``"zeros"``) or filled by the
   flow-conservation interpolation of Jia et al., KDD 2019
   (:func:`~topo_contrastive.hodge.interpolate_flows`, ``"interpolated"``; its minimum-norm
   limit ``smoothing = 0``, with which the published results were made, not the function's
   default, the authors' ``smoothing = 0.01``), and each probe scores the test flows.
   ``"complete"``: the test flows as they are.

A cell (dataset x split) is written to ``<out>/cells/cells.json`` as soon as it is finished
(each dataset's encoder to ``<out>/encoders/``); a later call with the same settings reads it
back instead of recomputing it, and may add splits or datasets.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from experiments.studies.missing_measurements.masks import MODES, unobserved_masks
from experiments.study import (
    DataOptions,
    Settings,
    check_counts,
    check_fractions,
    check_names,
    open_cells,
)

#: The paper's datasets the study runs on by name.
PAPER_DATASETS: tuple[str, ...] = ("trajectory", "ocean")
#: The unobserved fractions of the edges.
DEFAULT_FRACTIONS: tuple[float, ...] = (0.1, 0.3, 0.5)
#: The rows, in the order of the tables.
ROWS: tuple[str, ...] = ("SSCL_Spec encoder", "raw flows", "|flows|", "U_H^T x")
#: What takes the place of the unobserved entries.
FILLS: tuple[str, ...] = ("zeros", "interpolated")
#: The ridge penalties the probe chooses from (leave-one-out on the training split).
ALPHAS: np.ndarray = np.logspace(-3, 6, 19)


@dataclass(frozen=True)
class StudyData:
    """One dataset of the study: its ``name`` in the tables (a paper dataset, a `pytspl`
    network, a file's stem), ``source`` (as the user gave it, ``"--networks anaheim"``),
    ``data`` (its :class:`~topo_contrastive.training.ExperimentData`, flows and labels) and
    ``task`` (whose configuration pre-trains its encoder: ``"trajectory"`` or ``"ocean"``)."""

    name: str
    source: str
    data: Any
    task: str


def data_fingerprint(data: Any) -> str:
    """16 hex digits of sha256 over a dataset's complex, flows ``float32 [S, N1]`` and labels:
    a resumed cell is refused when its dataset changed."""
    h = hashlib.sha256(data.fingerprint.encode())
    h.update(np.ascontiguousarray(data.flows.float().numpy()).tobytes())
    if data.labels is not None:
        h.update(np.ascontiguousarray(data.labels.numpy()).tobytes())
    return h.hexdigest()[:16]


def _check_labels(items: Sequence[StudyData]) -> None:
    for item in items:
        labels = item.data.labels
        if labels is None or labels.numel() == 0:
            raise ValueError(
                f"`datasets`: {item.source} has no labels: the probes need a label per flow "
                "(the 'labels' key of the data file)"
            )
        if torch.unique(labels).numel() < 2:
            raise ValueError(f"`datasets`: {item.source} has a single class: nothing to classify")


def load_study_data(data: DataOptions, seed: int = 0) -> list[StudyData]:
    """The datasets of the study, in this order: the paper's ``data.datasets`` (built as
    ``data`` says), the `pytspl` road networks ``data.networks`` with ``data.trips`` routed
    trips (seed ``seed``; built once into ``<data.root>/road_networks``) and the labelled
    edge-flow files ``data.files`` (named by their stem). Every name is checked before
    anything is built, the data files (cheap) are read before the trips are routed.

    Raises:
        ValueError: an unknown paper dataset; two datasets of the same name; an invalid data
            file (the message names the key), one without labels or with one class.
        FileNotFoundError: a data file that does not exist; a network `pytspl` lacks.
        ModuleNotFoundError: networks without `pytspl` installed.
    """
    from experiments._helpers import require_file
    from experiments.studies.reuse import load_networks
    from experiments.studies.reuse.road_trips import find_network
    from topo_contrastive.training import ExperimentData, load_data_file
    from topo_contrastive.training.configs import resolve_dataset_name

    paper = [resolve_dataset_name(d) for d in data.datasets]
    for name in data.networks:
        find_network(name)
    files = [require_file(Path(f).expanduser(), "data file") for f in data.files]
    check_names([(d, f"--datasets {d}") for d in paper]
                 + [(n, f"--networks {n}") for n in data.networks]
                 + [(f.stem, f"--data-file {f}") for f in files], "dataset")  # fmt: skip
    root = Path(data.root).expanduser()
    own = [StudyData(f.stem, f"--data-file {f}", ExperimentData.from_dataset(
        load_data_file(f, root), f.stem), "ocean") for f in files]  # fmt: skip
    _check_labels(own)  # before the networks' trips are routed
    out = [StudyData(name, f"--datasets {name}", data.load(name), name)
           for name in paper]  # fmt: skip
    for net in load_networks(data.networks, (), root / "road_networks", data.trips, seed):
        data_ = ExperimentData.from_dataset(net.dataset, net.name)
        out.append(StudyData(net.name, net.source, data_, "ocean"))
    return out + own


def check_study(items: Sequence[StudyData], settings: Settings,
                modes: Sequence[str] = MODES) -> tuple[list[float], list[str]]:  # fmt: skip
    """Check the study's arguments (``settings.fractions``, ``splits`` and ``epochs``)
    before any work; returns the sorted fractions and modes.

    Raises:
        ValueError: as :func:`missing_measurements_study`.
    """
    if not items:
        raise ValueError("`datasets` is empty: give at least one dataset, network or data file")
    check_names([(i.name, i.source) for i in items], "dataset")
    _check_labels(items)
    fr = check_fractions(settings.fractions, one=False)
    for m in modes:
        if m not in MODES:
            raise ValueError(f"`modes` must be among {', '.join(MODES)}, got {m!r}")
    if not modes or len(set(modes)) != len(modes):
        raise ValueError(f"`modes` must name each of {', '.join(MODES)} at most once and at "
                         f"least one, got {list(modes)}")  # fmt: skip
    check_counts(splits=settings.splits,
                 **({} if settings.epochs is None else {"epochs": settings.epochs}))
    return fr, [m for m in MODES if m in modes]


def cell_names(fractions: Sequence[float], modes: Sequence[str]) -> list[str]:
    """The columns of a row: ``"complete"``, then ``"<mode> <fraction>"`` (``"random 0.3"``)
    for every mode and fraction."""
    return ["complete"] + [f"{m} {f:g}" for m in modes for f in fractions]


def _embed(encoder: torch.nn.Module, data: Any, flows: torch.Tensor) -> np.ndarray:
    """Embeddings ``float64 [S, D]`` of flows ``[S, N1]`` on the data's complex."""
    laplacians = data.complex.laplacians()
    out = []
    with torch.no_grad():
        for chunk in flows.split(200):
            out.append(encoder(chunk.float().unsqueeze(-1), laplacians))
    return torch.cat(out).double().numpy()


def _features(row: str, flows: torch.Tensor, data: Any, encoder: Any,
              basis: np.ndarray) -> np.ndarray:  # fmt: skip
    if row == "SSCL_Spec encoder":
        return _embed(encoder, data, flows)
    x = flows.double().numpy()
    if row == "raw flows":
        return x
    if row == "|flows|":
        return np.abs(x)
    return x @ basis  # U_H^T x


def _probe(train: np.ndarray, y_train: np.ndarray) -> Any:
    from sklearn.linear_model import RidgeClassifierCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=ALPHAS)).fit(train, y_train)


def _cell(item: StudyData, encoder: Any, basis: np.ndarray, split: int,
          st: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:  # fmt: skip
    """Every row's test accuracy on split ``split``: ``{row: {fill: {cell: accuracy}}}``."""
    from topo_contrastive.hodge import interpolate_flows

    data = item.data
    y, flows = data.labels.numpy(), data.flows
    idx = data.split(split)
    test, y_test = flows[idx["test"]], y[idx["test"]]
    probes = {r: _probe(_features(r, flows[idx["train"]], data, encoder, basis),
                        y[idx["train"]]) for r in ROWS}  # fmt: skip
    out: dict[str, dict[str, dict[str, float]]] = {r: {f: {} for f in FILLS} for r in ROWS}
    for r in ROWS:
        acc = float(probes[r].score(_features(r, test, data, encoder, basis), y_test))
        for fill in FILLS:
            out[r][fill]["complete"] = acc
    rng = np.random.default_rng([st["seed"], split])
    for mode in st["modes"]:
        for fraction in st["fractions"]:
            hidden = unobserved_masks(data.complex, len(test), fraction, mode, rng)
            observed = torch.from_numpy(~hidden)
            zeroed = torch.where(observed, test, torch.zeros_like(test))
            filled = interpolate_flows(
                data.complex, zeroed.double(), observed, smoothing=0.0
            ).float()
            for fill, x in (("zeros", zeroed), ("interpolated", filled)):
                for r in ROWS:
                    acc = probes[r].score(_features(r, x, data, encoder, basis), y_test)
                    out[r][fill][f"{mode} {fraction:g}"] = float(acc)
    return out


class _Encoders:
    """Each dataset's pre-trained encoder: in memory, else read back from ``folder``, else
    pre-trained and written there (atomically)."""

    def __init__(self, folder: Path, epochs: int | None, seed: int, device: Any) -> None:
        self.folder, self.epochs, self.seed, self.device = folder, epochs, seed, device
        self._kept: dict[str, Any] = {}

    def __call__(self, item: StudyData, fingerprint: str) -> Any:
        from topo_contrastive.io import load_encoder, save_encoder
        from topo_contrastive.training import get_config, pretrain

        if item.name in self._kept:
            return self._kept[item.name]
        path = self.folder / f"{item.name}_{fingerprint}.pt"
        if path.is_file():
            encoder = load_encoder(path, complex=item.data.hodge)[0].eval()
        else:
            config = get_config("SSCL_Spec", item.task, "hodge")
            result = pretrain(item.data, config, seed=self.seed, epochs=self.epochs,
                              device=self.device)  # fmt: skip
            encoder = result.encoder.cpu().eval()
            self.folder.mkdir(parents=True, exist_ok=True)
            save_encoder(encoder, path, complex=item.data.hodge)
        self._kept = {item.name: encoder}  # one dataset's encoder at a time
        return encoder


def missing_measurements_study(items: Sequence[StudyData], settings: Settings,
                               modes: Sequence[str] = MODES) -> dict[str, Any]:  # fmt: skip
    """Run the protocol (module docstring) on every dataset into ``settings.out`` and return
    its summary.

    Args:
        items: :func:`load_study_data`'s output (labelled datasets of distinct names).
        settings: the run's ``out`` (the finished cells go to ``<out>/cells/``, the
            encoders to ``<out>/encoders/``), ``fractions`` (unobserved fractions of the
            edges, in ``(0, 1)``), ``splits`` (random splits ``0 .. splits - 1`` of every
            dataset), ``epochs`` (pre-training epochs; ``None``: the configuration's),
            ``seed`` (of the pre-training and of the masks), ``device`` (of the
            pre-training; the probes run on the CPU) and progress.
        modes: ``"random"`` and/or ``"region"`` (default both).

    Returns:
        A dict with ``settings``, ``datasets`` (per dataset: ``source``, ``fingerprint``,
        ``sizes`` (``N1``, ``flows``, ``beta_1``), ``rows``: ``{row: {fill: {cell: [test
        accuracy per split]}}}`` with the cells of :func:`cell_names`, and ``seconds`` per
        split), ``computed`` and ``resumed`` (cells).

    Raises:
        ValueError: no dataset, two of the same name, one without labels or with one class;
            a fraction outside ``(0, 1)`` or given twice; an unknown mode, or one given twice;
            ``splits`` or ``epochs`` not a positive integer; ``out`` holds a run of other
            settings (named) or a finished cell of a dataset that has changed since (all
            before anything is written).
    """
    from topo_contrastive.nn import harmonic_matrix

    s = settings
    fr, md = check_study(items, s, modes)
    st = {"fractions": fr, "modes": md, "epochs": s.epochs, "seed": s.seed}
    prints = {item.name: data_fingerprint(item.data) for item in items}
    run = open_cells(s, "missing-measurements", st)
    for item in items:  # a finished cell of a dataset changed since: refused before writing
        for i in range(s.splits):
            key = f"{item.name}__split{i}"
            if run.done(key) and run.load(key)[0]["fingerprint"] != prints[item.name]:
                raise ValueError(
                    f"cannot resume in '{s.out}': {item.source} has changed since its cell "
                    f"{key} was computed (data fingerprint {run.load(key)[0]['fingerprint']} "
                    f"then, {prints[item.name]} now). Nothing was overwritten; choose another "
                    "--out, or run with --overwrite"
                )
    encoders = _Encoders(Path(s.out) / "encoders", s.epochs, s.seed, s.device)
    bases: dict[str, np.ndarray] = {}

    def compute(item: StudyData, i: int) -> dict[str, Any]:
        if item.name not in bases:
            bases[item.name] = harmonic_matrix(item.data.hodge)[0]  # U_H, or a sketch at scale
        basis = bases[item.name]
        accs = _cell(item, encoders(item, prints[item.name]), basis, i, st)
        return {"dataset": item.name, "split": i, "fingerprint": prints[item.name], "rows": accs}

    plan = {f"{item.name}__split{i}": (lambda item=item, i=i: compute(item, i))
            for item in items for i in range(s.splits)}  # fmt: skip
    done = run.cells(plan, s.bar("missing-measurements"))
    results: dict[str, Any] = {}
    for item in items:
        records = [done[f"{item.name}__split{i}"][0] for i in range(s.splits)]
        rows = {r: {f: {c: [rec["rows"][r][f][c] for rec in records]
                        for c in records[0]["rows"][r][f]} for f in FILLS}
                for r in ROWS}  # fmt: skip
        data = item.data
        results[item.name] = {
            "source": item.source, "fingerprint": prints[item.name],
            "sizes": {"N1": int(data.complex.num_edges), "flows": int(data.flows.shape[0]),
                      "beta_1": int(data.hodge.dims["harmonic"])},
            "rows": rows, "seconds": [rec["seconds"] for rec in records],
        }  # fmt: skip
    run.finish(f"{run.computed} cells computed, {run.resumed} resumed")
    return {"settings": {**st, "splits": s.splits}, "datasets": results,
            "computed": run.computed, "resumed": run.resumed}  # fmt: skip
