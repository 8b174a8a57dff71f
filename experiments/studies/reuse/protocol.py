r"""The leave-one-network-out protocol: pre-train on some networks, probe on one never seen.

For each held-out network :math:`H` among the networks given, and each pre-training seed:

1. **Split.** :math:`H`'s trips are split 80 / 20 % into training and test trips, per class
   (seed ``seed + s``); the labelled subsets of the training split are drawn as in the
   label-efficiency study (stratified, at least one label per class, ``draws`` per fraction
   below 1, one draw at 100 %;
   :func:`~experiments.studies.label_efficiency.subsets.study_subsets`).
2. **Encoders.** The *transferred* encoder is pre-trained (SSCL_Spec: Hodge-aware masks and
   the Hodge-debiased loss) on the unlabelled trips of every network but :math:`H` (one
   sample per trip, each on its network's complex; a batch mixes networks); the *in-domain*
   encoder on :math:`H`'s own unlabelled trips (all of them, test trips included, as in the
   label-efficiency study); the *untrained* encoder is the same SCNN at its initialisation.
3. **Rows.** On every labelled subset: each encoder's embeddings probed
   (:func:`~experiments.studies.label_efficiency.low_label_probe`: selection inside the
   labelled subset only), the transferred encoder *fine-tuned* with a linear layer, the
   *supervised SCNN* (the same architecture from scratch), and :math:`H`'s own reference
   rows on its one complex: raw flows, :math:`|\mathbf{x}|` and
   :math:`\mathbf{U}_H^\top\mathbf{x}` (top 256 principal directions where
   :math:`\beta_1 > 256`).

A cell (held-out network x seed) is written to ``<out>/cells/`` as soon as it is finished;
a later call with the same settings reads it back instead of recomputing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import InMemoryDataset

from experiments.studies.label_efficiency.subsets import study_subsets
from experiments.studies.reuse.encoders import (
    embed_samples,
    pretrain_encoder,
    scnn_encoder,
    train_with_labels,
)
from experiments.study import Settings, check_counts, check_fractions, open_cells, summarize_runs

#: The rows, in the order of the tables.
ROWS: tuple[str, ...] = (
    "transferred, probed", "transferred, fine-tuned", "in-domain, probed", "untrained, probed",
    "supervised SCNN", "raw flows", "|flows|", "U_H^T x",
)  # fmt: skip


@dataclass(frozen=True)
class Network:
    """One network's trips: its ``name`` (a `pytspl` network, or a data file's stem),
    ``source`` (as the user gave it, ``"--networks anaheim"``), ``dataset`` (its
    :class:`~topo_contrastive.datasets.EdgeFlows`), ``labels`` (``int64 [S]`` class ids in
    increasing order of the label values, or ``None``) and the complex's ``fingerprint``."""

    name: str
    source: str
    dataset: Any
    labels: np.ndarray | None
    fingerprint: str


def fraction_key(f: float) -> str:
    """The key of fraction ``f`` in the results (``"0.01"``, ``"1"``)."""
    return f"{f:g}"


def _open(file: Path, source: str, name: str, root: Path) -> Network:
    from experiments._helpers import require_file
    from topo_contrastive.datasets import EdgeFlows

    file = require_file(file, "data file")
    ds = EdgeFlows(str(root / "edge_flows" / file.stem), file=str(file), log=False)
    labels = None
    if ds.has_labels:
        raw = np.array([int(ds[i].y) for i in range(len(ds))])
        labels = np.unique(raw, return_inverse=True)[1].astype(np.int64)
    return Network(name, source, ds, labels, ds.complex.fingerprint())


def load_networks(names: Sequence[str] = (), data_files: Sequence[str | Path] = (),
                  folder: str | Path = "data/reuse", trips: int = 400,
                  seed: int = 0) -> list[Network]:  # fmt: skip
    """The networks of a study: `pytspl` networks by name (``trips`` trips with ``seed``,
    built once with :func:`~experiments.studies.reuse.road_trips.write_trips_file` into
    ``folder``), then data files of one's own (named by their stem; only read).

    Raises:
        FileNotFoundError: a data file that does not exist; a network `pytspl` lacks.
        ModuleNotFoundError: ``names`` without `pytspl` installed.
        ValueError: an invalid data file (the message names the key).
    """
    from experiments.studies.reuse.road_trips import write_trips_file

    folder = Path(folder).expanduser()
    out = []
    for name in names:
        file = folder / f"{name.replace('-', '_')}_{trips}trips_seed{seed}.npz"
        if not file.is_file():
            file.parent.mkdir(parents=True, exist_ok=True)
            write_trips_file(name, file, trips, seed)
        out.append(_open(file, f"--networks {name}", name, folder))
    for path in map(Path, data_files):
        path = path.expanduser()
        out.append(_open(path, f"--data-file {path}", path.stem, folder))
    return out


def check_networks(networks: Sequence[Network], held_out: Sequence[str] | None) -> list[str]:
    """Check the networks and the held-out ones; returns the held-out names (default: every
    network in turn).

    Raises:
        ValueError: fewer than two networks; a network given twice, by name or by its
            complex; a held-out name not among the networks, or named twice; a held-out
            network without labelled trips, or with one class.
    """
    if len(networks) < 2:
        raise ValueError(
            f"`networks`: the reuse study needs at least two networks (one held out, the others "
            f"to pre-train on), got {len(networks)}"
        )
    seen: dict[str, Network] = {}
    for net in networks:
        for key, what in ((net.name, "name"), (net.fingerprint, "complex")):
            if key in seen:
                raise ValueError(
                    f"`networks`: {net.source} has the same {what} as {seen[key].source} "
                    f"({key!r}): a network held out would also be among the pre-training "
                    "networks; give each network once"
                )
            seen[key] = net
    by_name = {n.name: n for n in networks}
    held = list(by_name) if held_out is None else list(held_out)
    for name in held:
        if name not in by_name:
            raise ValueError(f"`held_out`: {name!r} is not among the networks {list(by_name)}")
    if len(set(held)) != len(held):
        raise ValueError(f"`held_out` names a network twice: {held}")
    for name in held:
        labels = by_name[name].labels
        if labels is None or len(labels) == 0:
            raise ValueError(
                f"`held_out`: network {name!r} ({by_name[name].source}) has no labelled trips: "
                "it cannot be evaluated; hold out only labelled networks (it may still be "
                "pre-trained on)"
            )
        if np.unique(labels).size < 2:
            raise ValueError(
                f"`held_out`: network {name!r} has a single class in its labels: nothing to "
                "classify"
            )
    return held


def trip_samples(networks: Sequence[Network]) -> list[Any]:
    """One :class:`~topo_contrastive.data.ComplexData` per trip of every network, on its
    network's complex: ``x_1`` ``[N1, 1]``, ``y`` (class id, ``-1`` without labels),
    ``network`` (the network's position in ``networks``) and ``trip`` (its index there)."""
    from topo_contrastive.data import ComplexData

    out = []
    for k, net in enumerate(networks):
        for i in range(len(net.dataset)):
            y = -1 if net.labels is None else int(net.labels[i])
            out.append(ComplexData.from_complex(
                net.dataset.complex, x_1=net.dataset[i].x_1, y=torch.tensor([y]),
                network=torch.tensor([k]), trip=torch.tensor([i])))  # fmt: skip
    return out


def pretraining_indices(network_of: np.ndarray, held: int) -> np.ndarray:
    """The samples the transferred encoder is pre-trained on: every trip of every network but
    ``held`` (``network_of``: ``int [S]`` the network of every sample)."""
    return np.flatnonzero(np.asarray(network_of) != held)


def _split(labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """80 / 20 % training / test positions, per class."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        cut = int(round(0.8 * members.size))
        train.append(members[:cut])
        test.append(members[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def _references(net: Network) -> dict[str, np.ndarray]:
    """The held-out network's own reference features, on its one complex."""
    from experiments.studies.label_efficiency.curves import reduce_harmonic
    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.nn import harmonic_matrix

    ds = net.dataset
    flows = torch.cat([ds[i].x_1.view(1, -1) for i in range(len(ds))]).double().numpy()
    basis, _ = harmonic_matrix(HodgeDecomposition(ds.complex))  # U_H, or a sketch at scale
    return {"raw flows": flows, "|flows|": np.abs(flows), "U_H^T x": reduce_harmonic(flows @ basis)}


class PooledSamples(InMemoryDataset):
    """An in-memory dataset of the given samples (no files): ``samples`` are
    :class:`~topo_contrastive.data.ComplexData`, each on its own complex."""

    def __init__(self, samples: Sequence[Any]) -> None:
        super().__init__(None, log=False)
        self.data, self.slices = self.collate(list(samples))


class _Trips:
    """The samples of every network, fitted once (drop probabilities and Hodge parts, per
    complex) when a cell first needs them."""

    def __init__(self, networks: Sequence[Network], budget: float) -> None:
        self.networks, self.budget, self._data = networks, budget, None

    @property
    def data(self) -> Any:
        if self._data is None:
            from topo_contrastive import ContrastiveViews, HodgeSpectralMask

            views = ContrastiveViews(HodgeSpectralMask(budget=self.budget))
            self._data = views.fit(PooledSamples(trip_samples(self.networks)))
        return self._data


def _cell(trips: _Trips, k: int, s: int, st: dict[str, Any]) -> dict[str, Any]:
    """Every row of held-out network ``k`` on seed ``s``: ``{"rows": {row: {fraction:
    [test accuracy per draw]}}}``."""
    from experiments.studies.label_efficiency import low_label_probe

    seed, net, data = st["seed"] + s, trips.networks[k], trips.data
    network_of = data.network.view(-1).numpy()
    own = np.flatnonzero(network_of == k)
    y = net.labels
    train, test = _split(y, seed + 1000)
    subsets = study_subsets(y, train, st["fractions"], st["draws"], seed)
    enc = {"hidden": st["hidden"], "layers": st["layers"], "batch_size": st["batch_size"]}
    pre = {**enc, "epochs": st["epochs"], "budget": st["budget"],
           "temperature": st["temperature"], "seed": seed, "fit": False}  # fmt: skip
    transferred = pretrain_encoder(data[torch.as_tensor(pretraining_indices(network_of, k))],
                                   "SSCL_Spec", **pre)  # fmt: skip
    in_domain = pretrain_encoder(data[torch.as_tensor(own)], "SSCL_Spec", **pre)
    torch.manual_seed(seed)
    untrained = scnn_encoder(st["hidden"], st["layers"])
    held = data[torch.as_tensor(own)]
    features = {"transferred, probed": embed_samples(transferred, held)[0],
                "in-domain, probed": embed_samples(in_domain, held)[0],
                "untrained, probed": embed_samples(untrained, held)[0], **_references(net)}
    out: dict[str, dict[str, list]] = {row: {} for row in ROWS}
    for (f, d), sub in subsets.items():
        key = fraction_key(f)
        for row, X in features.items():
            res = low_label_probe(X, y, sub, test, classifier="ridge", seed=d)
            out[row].setdefault(key, []).append(float(res.test_accuracy))
        for row, start in (("supervised SCNN", None), ("transferred, fine-tuned", transferred)):
            acc = train_with_labels(held, sub, test, **enc, epochs=st["label_epochs"],
                                    seed=seed + d, encoder=start, num_classes=int(y.max()) + 1)
            out[row].setdefault(key, []).append(acc)
    return {"rows": out}


def check_study(networks: Sequence[Network], settings: Settings,
                held_out: Sequence[str] | None = None) -> tuple[list[float], list[str]]:
    """Check the study's arguments before any work (see :func:`reuse_study`); returns the
    sorted fractions and the held-out names.

    Raises:
        ValueError: as :func:`reuse_study`.
    """
    fr = check_fractions(settings.fractions)
    check_counts(draws=settings.draws, seeds=settings.seeds, epochs=settings.epochs)
    held = check_networks(networks, held_out)
    by_name = {n.name: n for n in networks}
    for name in held:  # subsets possible on every split, before any training
        labels = by_name[name].labels
        for s in range(settings.seeds):
            study_subsets(labels, _split(labels, settings.seed + s + 1000)[0], fr,
                          settings.draws, settings.seed + s)  # fmt: skip
    return fr, held


def reuse_study(networks: Sequence[Network], settings: Settings,
                held_out: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """Run the leave-one-network-out protocol (module docstring) into ``settings.out`` and
    return its summary.

    Args:
        networks: :func:`load_networks`' output (at least two).
        settings: the run's ``out``, ``fractions``, ``draws``, ``seeds`` (pre-training
            seeds, each with its own split), ``epochs``, ``label_epochs`` (default
            ``max(epochs, 5)``), ``hidden``, ``layers``, ``batch_size``, ``budget``,
            ``temperature``, ``seed`` (seed ``s`` runs with ``seed + s``) and progress.
        held_out: the names of the networks held out in turn (default: every one).

    Returns:
        A dict with ``settings``, ``networks`` (each network's sizes), ``held_out`` (per
        held-out network: ``rows``, the mean, std and runs of every row at every fraction,
        and ``seconds``), ``computed`` and ``resumed`` (cells).

    Raises:
        ValueError: see :func:`check_networks`; a fraction outside ``(0, 1]``; ``draws``,
            ``seeds`` or ``epochs`` not a positive integer; a fraction too small for one label
            per class of a held-out network, or more draws than distinct subsets; a folder of
            other settings (named).
    """
    s = settings
    fr, held = check_study(networks, s, held_out)
    st = {"fractions": fr, "draws": s.draws, "epochs": s.epochs,
          "label_epochs": s.label_epochs or max(s.epochs, 5), "hidden": s.hidden or 32,
          "layers": s.layers, "batch_size": s.batch_size, "budget": s.budget,
          "temperature": s.temperature, "seed": s.seed,
          "networks": {n.name: n.fingerprint for n in networks}}  # fmt: skip
    run, trips = open_cells(s, "reuse", st), _Trips(networks, s.budget)
    names = [n.name for n in networks]
    plan = {f"{name}__seed{i}": partial(_cell, trips, names.index(name), i, st)
            for name in held for i in range(s.seeds)}  # fmt: skip
    done = run.cells(plan, s.bar("reuse"))
    results = {}
    for name in held:
        records = [done[f"{name}__seed{i}"][0] for i in range(s.seeds)]
        runs = {row: {} for row in ROWS}
        for record in records:
            for row, per in record["rows"].items():
                for f, accs in per.items():
                    runs[row].setdefault(f, []).extend(accs)
        results[name] = {"seconds": [r["seconds"] for r in records],
                         "rows": {row: summarize_runs(per) for row, per in runs.items()}}
    run.finish(f"{run.computed} cells computed, {run.resumed} resumed")
    sizes = {n.name: {"source": n.source, "trips": len(n.dataset),
                      "sizes": [int(v) for v in n.dataset.complex.sizes[:3]],
                      "labelled": n.labels is not None,
                      "class_1_share": None if n.labels is None else float(n.labels.mean())}
             for n in networks}  # fmt: skip
    return {"settings": {**st, "seeds": s.seeds}, "networks": sizes, "held_out": results,
            "computed": run.computed, "resumed": run.resumed}  # fmt: skip
