r"""The leave-one-network-out protocol: pre-train on some networks, probe on one never seen.

For each held-out network :math:`H` among the networks given, and each pre-training seed:

1. **Split.** :math:`H`'s trips are split 80 / 20 % into training and test trips, per class
   (seed ``seed + s``); the labelled subsets of the training split are drawn as in the
   label-efficiency study (stratified, at least one label per class, ``draws`` per fraction
   below 1, one draw at 100 %;
   :func:`~experiments.studies.label_efficiency.labelled_subsets`).
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from experiments.studies.reuse.encoders import (
    embed_samples,
    pretrain_encoder,
    scnn_encoder,
    train_with_labels,
)
from topo_contrastive.utils.checks import check_int

__all__ = [
    "DEFAULT_FRACTIONS",
    "ROWS",
    "Network",
    "check_networks",
    "check_study",
    "fraction_key",
    "load_networks",
    "pretraining_indices",
    "reuse_study",
    "trip_samples",
]

#: The rows, in the order of the tables.
ROWS: tuple[str, ...] = (
    "transferred, probed", "transferred, fine-tuned", "in-domain, probed", "untrained, probed",
    "supervised SCNN", "raw flows", "|flows|", "U_H^T x",
)  # fmt: skip
#: The labelled fractions of the training split.
DEFAULT_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.1, 1.0)
#: Largest number of harmonic coordinates kept as they are (above: principal directions).
HARMONIC_MAX = 256


@dataclass(frozen=True)
class Network:
    """One network's trips.

    Attributes:
        name: the network's name (a `pytspl` network, or a data file's stem).
        source: where it came from, as the user gave it (``"--networks anaheim"``, ...).
        dataset: its :class:`~topo_contrastive.datasets.EdgeFlows` (one shared complex).
        labels: ``int64 [S]`` class ids ``0 .. C-1`` in increasing order of the file's label
            values, or ``None`` (no labels).
        fingerprint: the complex's :meth:`~topo_contrastive.ComplexOperators.fingerprint`.
    """

    name: str
    source: str
    dataset: Any
    labels: np.ndarray | None
    fingerprint: str


def fraction_key(f: float) -> str:
    """The key of fraction ``f`` in the results (``"0.01"``, ``"1"``)."""
    return f"{f:g}"


def _open(file: Path, source: str, name: str, root: Path) -> Network:
    from topo_contrastive.datasets import EdgeFlows
    from topo_contrastive.utils.files import require_file

    file = require_file(file, "data file")
    ds = EdgeFlows(str(root / "edge_flows" / file.stem), file=str(file), log=False)
    labels = None
    if ds.has_labels:
        raw = np.array([int(ds[i].y) for i in range(len(ds))])
        labels = np.unique(raw, return_inverse=True)[1].astype(np.int64)
    return Network(name, source, ds, labels, ds.complex.fingerprint())


def load_networks(
    names: Sequence[str] = (),
    data_files: Sequence[str | Path] = (),
    folder: str | Path = "data/reuse",
    trips: int = 400,
    seed: int = 0,
) -> list[Network]:
    """The networks of the study: `pytspl` networks by name (their trips built once with
    :func:`~experiments.studies.reuse.road_trips.write_trips_file` into ``folder`` and
    read back from there), then data files of one's own (the ``.npz`` format of
    :class:`~topo_contrastive.datasets.EdgeFlows`, named by their stem).

    Args:
        names: `pytspl` network names (``"anaheim"``, ``"chicago-sketch"``, ``"goldcoast"``).
        data_files: ``.npz`` files (only read).
        folder: where the networks' trips and the processed datasets go (default
            ``"data/reuse"``).
        trips: trips per `pytspl` network (default 400).
        seed: seed of their trips (default 0).

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
    for path in data_files:
        path = Path(path).expanduser()
        out.append(_open(path, f"--data-file {path}", path.stem, folder))
    return out


def check_networks(networks: Sequence[Network], held_out: Sequence[str] | None) -> list[str]:
    """Check the networks and the held-out ones; returns the held-out names (default: every
    network in turn).

    Raises:
        ValueError: fewer than two networks (``networks``); a network given twice, by name or
            by its complex (the same fingerprint: it would be held out and pre-trained on at
            once); a held-out name that is not among the networks, or named twice
            (``held_out``); a held-out network without labelled trips, or with one class.
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
    names = [n.name for n in networks]
    held = list(names) if held_out is None else list(held_out)
    for name in held:
        if name not in names:
            raise ValueError(f"`held_out`: {name!r} is not among the networks {names}")
    if len(set(held)) != len(held):
        raise ValueError(f"`held_out` names a network twice: {held}")
    by_name = {n.name: n for n in networks}
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
        ops = net.dataset.complex
        for i in range(len(net.dataset)):
            y = -1 if net.labels is None else int(net.labels[i])
            out.append(ComplexData.from_complex(
                ops, x_1=net.dataset[i].x_1, y=torch.tensor([y]),
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
    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.nn.harmonic_features import harmonic_matrix

    ds = net.dataset
    flows = torch.cat([ds[i].x_1.view(1, -1) for i in range(len(ds))]).double().numpy()
    basis, _ = harmonic_matrix(HodgeDecomposition(ds.complex))  # U_H, or a sketch at scale
    harmonic = flows @ basis
    if harmonic.shape[1] > HARMONIC_MAX:  # an unsupervised reduction, fitted without labels
        centred = harmonic - harmonic.mean(axis=0)
        vt = np.linalg.svd(centred, full_matrices=False)[2]
        harmonic = centred @ vt[:HARMONIC_MAX].T
    return {"raw flows": flows, "|flows|": np.abs(flows), "U_H^T x": harmonic}


class _Trips:
    """The fitted samples of every network (fitted once, when a cell first needs them)."""

    def __init__(self, networks: Sequence[Network], budget: float) -> None:
        self.networks, self.budget = networks, budget
        self._data: Any = None

    @property
    def data(self) -> Any:
        if self._data is None:
            from torch_geometric.data import InMemoryDataset

            from topo_contrastive import ContrastiveViews, HodgeSpectralMask

            class Samples(InMemoryDataset):
                def __init__(self, items: list[Any]) -> None:
                    super().__init__(None, log=False)
                    self.data, self.slices = self.collate(items)

            ds = Samples(trip_samples(self.networks))
            views = ContrastiveViews(HodgeSpectralMask(budget=self.budget))
            self._data = views.fit(ds)  # drop probabilities and Hodge parts, per complex
        return self._data

    def network_of(self) -> np.ndarray:
        return self.data.network.view(-1).numpy()


def _cell(trips: _Trips, k: int, s: int, st: dict[str, Any]) -> dict[str, dict[str, list]]:
    """Every row of held-out network ``k`` on seed ``s``."""
    from experiments.studies.label_efficiency import labelled_subsets, low_label_probe

    seed = st["seed"] + s
    net = trips.networks[k]
    network_of = trips.network_of()
    own = np.flatnonzero(network_of == k)
    y = net.labels
    train, test = _split(y, seed + 1000)
    below = [f for f in st["fractions"] if f < 1]
    subsets = labelled_subsets(y, train, below, st["draws"], seed) if below else {}
    if 1.0 in st["fractions"]:
        subsets[(1.0, 0)] = train  # every label: one draw
    enc = {"hidden": st["hidden"], "layers": st["layers"], "batch_size": st["batch_size"]}
    pre = {**enc, "epochs": st["epochs"], "budget": st["budget"],
           "temperature": st["temperature"], "seed": seed, "fit": False}  # fmt: skip
    data = trips.data
    transferred = pretrain_encoder(data[torch.as_tensor(pretraining_indices(network_of, k))],
                                   "SSCL_Spec", **pre)  # fmt: skip
    in_domain = pretrain_encoder(data[torch.as_tensor(own)], "SSCL_Spec", **pre)
    torch.manual_seed(seed)
    untrained = scnn_encoder(st["hidden"], st["layers"])
    held = data[torch.as_tensor(own)]
    features = {
        "transferred, probed": embed_samples(transferred, held)[0],
        "in-domain, probed": embed_samples(in_domain, held)[0],
        "untrained, probed": embed_samples(untrained, held)[0],
        **_references(net),
    }
    out: dict[str, dict[str, list]] = {row: {} for row in ROWS}
    classes = int(y.max()) + 1
    for (f, d), sub in subsets.items():
        key = fraction_key(f)
        for row, X in features.items():
            res = low_label_probe(X, y, sub, test, classifier="ridge", seed=d)
            out[row].setdefault(key, []).append(float(res.test_accuracy))
        for row, start in (("supervised SCNN", None), ("transferred, fine-tuned", transferred)):
            acc = train_with_labels(held, sub, test, **enc, epochs=st["label_epochs"],
                                    seed=seed + d, encoder=start, num_classes=classes)  # fmt: skip
            out[row].setdefault(key, []).append(acc)
    return out


def _check_options(fractions: Sequence[float], draws: int, seeds: int, epochs: int) -> list[float]:
    out = sorted(float(f) for f in fractions)
    if not out:
        raise ValueError("`fractions` is empty: give at least one labelled fraction in (0, 1]")
    for f in out:
        if not 0 < f <= 1:
            raise ValueError(f"`fractions` must lie in (0, 1], got {f:g}")
    for name, value in (("draws", draws), ("seeds", seeds), ("epochs", epochs)):
        try:
            check_int(value, name, 1)
        except (TypeError, ValueError):
            raise ValueError(f"`{name}` must be a positive integer, got {value!r}") from None
    return out


def check_study(
    networks: Sequence[Network],
    held_out: Sequence[str] | None,
    fractions: Sequence[float],
    draws: int,
    seeds: int,
    epochs: int = 1,
    seed: int = 0,
) -> tuple[list[float], list[str]]:
    """Check the study's arguments before any work (see :func:`reuse_study`); returns the
    sorted fractions and the held-out names.

    Raises:
        ValueError: as :func:`reuse_study`.
    """
    from experiments.studies.label_efficiency import labelled_subsets

    fr = _check_options(fractions, draws, seeds, epochs)
    held = check_networks(networks, held_out)
    names = [n.name for n in networks]
    below = [f for f in fr if f < 1]
    for name in held:  # subsets possible on every split, before any training
        net = networks[names.index(name)]
        for s in range(seeds):
            if below:
                labelled_subsets(net.labels, _split(net.labels, seed + s + 1000)[0], below,
                                 draws, seed + s)  # fmt: skip
    return fr, held


def reuse_study(
    networks: Sequence[Network],
    out: str | Path,
    *,
    held_out: Sequence[str] | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    draws: int = 5,
    seeds: int = 2,
    epochs: int = 5,
    label_epochs: int | None = None,
    hidden: int = 32,
    layers: int = 2,
    batch_size: int = 64,
    budget: float = 0.3,
    temperature: float = 0.5,
    seed: int = 0,
    progress: Callable[[int], Any] | None = None,
) -> dict[str, Any]:
    """Run the leave-one-network-out protocol (module docstring) and return its summary.

    Args:
        networks: :func:`load_networks`' output (at least two).
        out: the folder of the finished cells (``<out>/cells/``).
        held_out: the names of the networks held out in turn (default: every one).
        fractions: labelled fractions of the held-out network's training split, in ``(0, 1]``
            (default 1, 5, 10, 100 %).
        draws: labelled subsets per fraction below 1 (default 5).
        seeds: pre-training seeds (each with its own split; default 2).
        epochs: pre-training epochs (default 5).
        label_epochs: epochs of the supervised SCNN and of fine-tuning (default
            ``max(epochs, 5)``).
        hidden, layers, batch_size, budget, temperature: the encoder, the batches, the masks'
            budget and the loss's temperature (default 32, 2, 64, 0.3, 0.5).
        seed: base seed (default 0): seed ``s`` runs with ``seed + s``.
        progress: ``progress(total)`` returns a bar with ``update()``, called per cell.

    Returns:
        A dict with ``settings``, ``networks`` (each network's sizes), ``held_out`` (per
        held-out network: ``rows``, the mean, std and runs of every row at every fraction,
        and ``seconds``), ``computed`` and ``resumed`` (cells).

    Raises:
        ValueError: see :func:`check_networks`; a fraction outside ``(0, 1]``; ``draws``,
            ``seeds`` or ``epochs`` not a positive integer; a fraction too small for one label
            per class of a held-out network, or more draws than distinct subsets.
    """
    fr, held = check_study(networks, held_out, fractions, draws, seeds, epochs, seed)
    names = [n.name for n in networks]
    st = {"fractions": fr, "draws": draws, "epochs": epochs,
          "label_epochs": label_epochs or max(epochs, 5), "hidden": hidden, "layers": layers,
          "batch_size": batch_size, "budget": budget, "temperature": temperature, "seed": seed,
          "networks": {n.name: n.fingerprint for n in networks}}  # fmt: skip
    from experiments.run_folder import RunFolder

    restart = "choose another --out, or run with --overwrite"
    files = RunFolder(Path(out) / "cells", "reuse", st, records="cells.json", resume=True,
                      csv=False, restart=restart)  # fmt: skip
    files.start()
    trips = _Trips(networks, budget)
    bar = progress(len(held) * seeds) if progress else None
    results: dict[str, Any] = {}
    computed = resumed = 0
    for name in held:
        runs: dict[str, dict[str, list]] = {row: {} for row in ROWS}
        seconds = []
        for s in range(seeds):
            key = f"{name}__seed{s}"
            if files.done(key):
                record = files.load(key)[0]
                resumed += 1
            else:
                import time

                t0 = time.perf_counter()
                rows = _cell(trips, names.index(name), s, st)
                record = {"rows": rows, "seconds": round(time.perf_counter() - t0, 1)}
                files.save(key, record)
                computed += 1
            seconds.append(record["seconds"])
            for row, per in record["rows"].items():
                for f, accs in per.items():
                    runs[row].setdefault(f, []).extend(accs)
            if bar is not None:
                bar.update(1)
        results[name] = {"seconds": seconds, "rows": {
            row: {f: {"mean": float(np.mean(v)), "std": float(np.std(v)), "runs": v}
                  for f, v in per.items()} for row, per in runs.items()}}  # fmt: skip
    if bar is not None and hasattr(bar, "close"):
        bar.close()
    files.finish(f"{computed} cells computed, {resumed} resumed")
    sizes = {n.name: {"source": n.source, "trips": len(n.dataset),
                      "sizes": [int(v) for v in n.dataset.complex.sizes[:3]],
                      "labelled": n.labels is not None,
                      "class_1_share": None if n.labels is None else float(n.labels.mean())}
             for n in networks}  # fmt: skip
    return {"settings": {**st, "seeds": seeds}, "networks": sizes, "held_out": results,
            "computed": computed, "resumed": resumed}  # fmt: skip
