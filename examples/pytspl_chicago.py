"""Real data nobody here wrote: car trips on the Chicago road network, from the `pytspl` package.

The `pytspl` package (MIT, on PyPI) ships the *Chicago sketch* transportation network (Chicago
Area Transportation Study, via the Transportation Networks for Research collection) as a
simplicial complex: signed incidence matrices ``B1`` (546 road junctions x 1,088 road segments)
and ``B2`` (112 filled triangles), junction coordinates, the link table (free-flow travel times)
and the origin-destination trip table of 387 zones (1.26 million trips). The files are read from
the installed package, never copied into this project.

What the script does:

1. loads the complex through :meth:`EdgeFlows.from_incidence` **in its own edge orientation**
   (every segment there runs from the higher to the lower junction id);
2. builds many edge flows from the trips: it draws origin-destination pairs in proportion to
   their demand (among those whose fastest path uses at least 8 road segments: most trips
   of the table are local), routes each along the fastest path (free-flow times, one-way
   links respected) and turns the node path into a signed edge flow; the label of a trip is
   its direction, northbound (1) or southbound (0);
3. pre-trains an SCNN with a configuration of Table 1 (default ``SSCL_Spec``: Hodge-aware
   masks and the debiased loss, hyper-parameters as tuned for the ocean drifters), embeds
   every trip, and fits the linear SVM of the paper's protocol on a few random splits (and, as
   a reference, on the raw flows);
4. writes ``embeddings.npz`` / ``.csv``, ``results.json``, ``results.md`` and two figures:
   ``chicago_trips.png`` (the complex with a few trips) and ``chicago_embeddings.png`` (a 2-D
   PCA of the embeddings coloured by direction and by the harmonic share of each trip's
   energy, :math:`\\|\\mathbf{x}_H\\|^2 / \\|\\mathbf{x}\\|^2`).

Needs ``pip install --no-deps pytspl==0.1.5`` (its data files only; its own dependencies are
not needed). ``--quick`` runs a small version (CI).

    python examples/pytspl_chicago.py --quick --out results/pytspl_chicago_quick
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import torch
from tqdm.auto import tqdm

from topo_contrastive._utils.files import atomic_write, write_json, write_text
from topo_contrastive.datasets import EdgeFlows, plot_complex
from topo_contrastive.evaluation import linear_probe
from topo_contrastive.training import ExperimentData, embed, get_config, pretrain, write_embeddings
from topo_contrastive.training.formatting import format_mean_std

#: Where the Chicago sketch network lies inside the installed package.
CHICAGO = Path("data") / "transportation_networks" / "chicago-sketch"
#: The link table numbers the 387 zone centroids 1..387 and the junctions 388..933; the
#: incidence matrices hold the junctions only (row i = junction 388 + i), and zone z reaches
#: the road network through its one connector junction 546 + z.
_FIRST_JUNCTION = 388
_NUM_ZONES = 387
_CONNECTOR = 546  # zone n (one-based) is linked to junction 546 + n only


def find_pytspl_data() -> Path:
    """The folder of the Chicago sketch files inside the installed `pytspl` package.

    Found with ``importlib.util.find_spec`` (the package is not imported: its own
    dependencies are not needed).

    Raises:
        ModuleNotFoundError: `pytspl` is not installed.
        FileNotFoundError: the installed version lacks the Chicago sketch files.
    """
    spec = importlib.util.find_spec("pytspl")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the `pytspl` package is not installed; install its data files with "
            "`pip install --no-deps pytspl==0.1.5`"
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / CHICAGO
    if not (folder / "B1_chicago_sketch.csv").is_file():
        raise FileNotFoundError(f"'{folder}' lacks B1_chicago_sketch.csv (pytspl 0.1.5 has it)")
    return folder


def load_chicago_sketch(folder: Path) -> dict[str, Any]:
    """Read the Chicago sketch network (incidences, coordinates, link times, trip table).

    Returns:
        ``{"B1": csr [546, 1088], "B2": csr [1088, 112], "pos": float [546, 2] (feet),
        "links": csr [546, 546] free-flow minutes of the directed road links,
        "demand": float [387, 387] trips from zone o to zone d (zero-based)}``.
    """
    B1 = sp.csr_matrix(np.loadtxt(folder / "B1_chicago_sketch.csv", delimiter=","))
    B2 = sp.csr_matrix(np.loadtxt(folder / "B2t_chicago_sketch.csv", delimiter=",").T)
    coords = np.loadtxt(folder / "coordinates_chicago_sketch.csv", delimiter=",", skiprows=1)
    pos = coords[np.argsort(coords[:, 0]), 1:]  # rows Id 0..N0-1: (X, Y)
    rows = [
        line.split()
        for line in (folder / "chicago-sketch_net.tntp").read_text().splitlines()
        if line.strip()[:1].isdigit()
    ]
    table = np.array([[float(v) for v in r[:5]] for r in rows])  # tail, head, cap, length, fftt
    tail, head = table[:, 0].astype(int), table[:, 1].astype(int)
    road = (tail >= _FIRST_JUNCTION) & (head >= _FIRST_JUNCTION)
    n0 = B1.shape[0]
    links = sp.csr_matrix(
        (table[road, 4], (tail[road] - _FIRST_JUNCTION, head[road] - _FIRST_JUNCTION)),
        shape=(n0, n0),
    )
    demand = np.zeros((_NUM_ZONES, _NUM_ZONES))
    text = (folder / "chicago-sketch_trips.tntp").read_text()
    for origin, block in re.findall(r"Origin\s+(\d+)(.*?)(?=Origin|\Z)", text, flags=re.S):
        for dest, value in re.findall(r"(\d+)\s*:\s*([0-9.eE+-]+)\s*;", block):
            demand[int(origin) - 1, int(dest) - 1] = float(value)
    return {"B1": B1, "B2": B2, "pos": pos, "links": links, "demand": demand}


def zone_junction(zone: np.ndarray) -> np.ndarray:
    """Row of ``B1`` (junction) where zero-based zone ``zone`` joins the road network."""
    return _CONNECTOR + (zone + 1) - _FIRST_JUNCTION


def sample_trips(
    net: dict[str, Any], num_trips: int, rng: np.random.Generator, min_edges: int = 8
) -> tuple[list[list[int]], np.ndarray, list[str]]:
    """Draw ``num_trips`` distinct origin-destination pairs in proportion to their demand,
    among those whose fastest path (free-flow times, one-way links respected) uses at least
    ``min_edges`` road segments, and route each along that path.

    Returns:
        ``(paths, labels, ids)``: node paths (rows of ``B1``), direction labels (1 northbound,
        0 southbound) and ids ``"o->d"`` (one-based zone numbers of the trip table).

    Raises:
        ValueError: fewer than ``num_trips`` pairs qualify.
    """
    demand = net["demand"].copy()
    np.fill_diagonal(demand, 0.0)
    prob = demand.ravel() / demand.sum()
    # a demand-weighted random order of the pairs (without replacement), then the first
    # num_trips long enough ones
    order = rng.choice(prob.size, size=int(np.count_nonzero(prob)), replace=False, p=prob)
    _, pred = csgraph.dijkstra(
        net["links"], indices=zone_junction(np.arange(_NUM_ZONES)), return_predecessors=True
    )  # [zones, N0]
    paths, pairs = [], []
    for pair in order.tolist():
        origin, dest = divmod(pair, _NUM_ZONES)
        s, d = int(zone_junction(origin)), int(zone_junction(dest))
        path = [d]
        while path[-1] != s and pred[origin, path[-1]] >= 0:
            path.append(int(pred[origin, path[-1]]))
        if path[-1] == s and len(path) > min_edges:
            paths.append(path[::-1])
            pairs.append((origin, dest))
            if len(paths) == num_trips:
                break
    if len(paths) < num_trips:
        raise ValueError(f"only {len(paths)} trips have >= {min_edges} road segments")
    origin, dest = np.array(pairs).T
    pos = net["pos"]
    labels = (pos[zone_junction(dest), 1] > pos[zone_junction(origin), 1]).astype(np.int64)
    ids = [f"{o + 1}->{t + 1}" for o, t in pairs]
    return paths, labels, ids


def _plot_embeddings(emb: np.ndarray, labels: np.ndarray, harmonic: np.ndarray, path: str) -> None:
    """2-D PCA of the embeddings, coloured by direction and by the harmonic energy share."""
    from matplotlib.figure import Figure
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    xy = PCA(n_components=2, random_state=0).fit_transform(StandardScaler().fit_transform(emb))
    fig = Figure(figsize=(11, 4.8))
    ax1, ax2 = fig.subplots(1, 2)
    # the colours of plot_complex's classes 0 and 1
    for c, name, colour in ((0, "southbound", "#d62728"), (1, "northbound", "#1f77b4")):
        m = labels == c
        ax1.scatter(xy[m, 0], xy[m, 1], s=8, c=colour, label=name, alpha=0.7, linewidths=0)
    ax1.legend(loc="best", fontsize=8)
    ax1.set_title("embeddings (PCA), by direction of travel")
    sc = ax2.scatter(xy[:, 0], xy[:, 1], s=8, c=harmonic, cmap="viridis", vmin=0, vmax=1,
                     linewidths=0)  # fmt: skip
    fig.colorbar(sc, ax=ax2, label=r"harmonic share $\|x_H\|^2 / \|x\|^2$")
    ax2.set_title("embeddings (PCA), by harmonic energy")
    for ax in (ax1, ax2):
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=130))


def main(
    out: str = "results/pytspl_chicago",
    quick: bool = False,
    num_trips: int | None = None,
    min_edges: int = 8,
    epochs: int | None = None,
    config_name: str = "SSCL_Spec",
    splits: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Load the Chicago trips, pre-train, embed, evaluate and draw; return the results.

    Args:
        out: output folder (the dataset goes to ``out/data``).
        quick: small run (200 trips, 2 epochs, 2 splits) instead of 1,000 trips, 20 epochs
            and 8 splits.
        num_trips: trips to draw (default: 200 quick, 1000 otherwise).
        min_edges: shortest trip kept, in road segments (default 8).
        epochs: pre-training epochs (default: 2 quick, 20 otherwise; a third of the ocean
            configurations' 60, for 2 CPU cores).
        config_name: a contrastive row of Table 1 (default ``"SSCL_Spec"``).
        splits: random train/val/test splits of the linear evaluation (default 2 quick, 8).
        seed: seed of the trip sample, the pre-training and the splits.
        progress: show progress bars.

    Raises:
        ModuleNotFoundError: `pytspl` is not installed.
    """
    start = time.perf_counter()
    folder = find_pytspl_data()
    num_trips = num_trips or (200 if quick else 1000)
    splits = splits or (2 if quick else 8)
    net = load_chicago_sketch(folder)
    paths, labels, ids = sample_trips(net, num_trips, np.random.default_rng(seed), min_edges)
    os.makedirs(out, exist_ok=True)
    ds = EdgeFlows.from_incidence(
        os.path.join(out, "data"), net["B1"], net["B2"], paths=paths, labels=labels,
        pos=net["pos"], sample_ids=ids, log=False,
    )  # fmt: skip
    data = ExperimentData.from_dataset(ds, "chicago-trips")
    config = get_config(config_name, "ocean")
    epochs = epochs or (2 if quick else 20)
    bar = tqdm(total=epochs, desc=f"{config.name} pre-training", disable=not progress)

    def tick(epoch: int, loss: float) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}")

    result = pretrain(data, config, seed=seed, epochs=epochs, progress=tick)
    bar.close()
    emb = embed(result.encoder, data)  # [S, D]
    write_embeddings(out, emb, ds.sample_ids, labels, metadata={"config": config.name})
    accuracy = {"embeddings": [], "raw flows": []}
    for s in range(seed, seed + splits):
        idx = data.split(s)
        for name, features in (("embeddings", emb), ("raw flows", data.flows.numpy())):
            res = linear_probe(features, labels, idx["train"], idx["test"], seed=s)
            accuracy[name].append(100 * res.test_accuracy)
    parts = torch.stack(list(data.hodge(data.flows.double())))  # [3, S, N1]
    energy = (parts**2).sum(-1)  # [3, S]
    share = (energy / energy.sum(0).clamp_min(1e-12)).T.numpy()  # [S, 3]
    shown = [int(np.flatnonzero(labels == c)[k]) for c in (0, 1) for k in range(3)]
    plot_complex(
        ds, paths=[paths[i] for i in shown], labels=labels[shown],
        path=os.path.join(out, "chicago_trips.png"),
        title="Chicago sketch: 3 southbound (red) and 3 northbound (blue) trips",
    )  # fmt: skip
    _plot_embeddings(emb, labels, share[:, 2], os.path.join(out, "chicago_embeddings.png"))
    ops = data.complex
    summary = {
        "data": str(folder),
        "complex": {"nodes": ops.num_nodes, "edges": ops.num_edges, "triangles": ops.num_triangles},
        "hodge_dims": data.hodge.dims,
        "edges_low_to_high": float(np.mean(ops.edges[:, 0] < ops.edges[:, 1])),
        "num_trips": num_trips,
        "min_edges": min_edges,
        "northbound": int(labels.sum()),
        "mean_path_edges": float(np.mean([len(p) - 1 for p in paths])),
        "energy_share_mean": dict(
            zip(("gradient", "curl", "harmonic"), share.mean(0).tolist(), strict=True)
        ),
        "config": config.name,
        "epochs": epochs,
        "final_loss": result.losses[-1],
        "pretrain_seconds": result.seconds,
        "splits": splits,
        "accuracy": {k: {"mean": float(np.mean(v)), "std": float(np.std(v)), "values": v}
                     for k, v in accuracy.items()},  # fmt: skip
        "seed": seed,
        "quick": quick,
        "seconds": time.perf_counter() - start,
    }
    write_json(os.path.join(out, "results.json"), summary)
    acc = summary["accuracy"]
    lines = [
        f"Chicago sketch ({ops.num_nodes} junctions, {ops.num_edges} road segments, "
        f"{ops.num_triangles} triangles; Hodge dimensions {data.hodge.dims}): {num_trips} trips of "
        f">= {min_edges} road segments, "
        f"{config.name} ({epochs} epochs, tuned for the ocean drifters), seed {seed}.",
        "",
        "| features | direction accuracy (%) | splits |",
        "|---|---|---|",
        *(f"| {k} | {format_mean_std(v['mean'], v['std'])} | {splits} |" for k, v in acc.items()),
        "",
        "Mean energy share of a trip: "
        + ", ".join(f"{k} {v:.2f}" for k, v in summary["energy_share_mean"].items())
        + ".",
    ]
    write_text(os.path.join(out, "results.md"), "\n".join(lines) + "\n")
    return summary


def build_parser() -> argparse.ArgumentParser:
    """The script's command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="results/pytspl_chicago", help="output folder")
    p.add_argument("--quick", action="store_true", help="small run: 200 trips, 2 epochs (CI)")
    p.add_argument("--num-trips", type=int, default=None, help="trips (default 200 / 1000)")
    p.add_argument("--min-edges", type=int, default=8, help="shortest trip kept (segments)")
    p.add_argument("--epochs", type=int, default=None, help="pre-training epochs (2 / 20)")
    p.add_argument("--config", default="SSCL_Spec", help="a contrastive row of Table 1")
    p.add_argument("--splits", type=int, default=None, help="evaluation splits (2 / 8)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


if __name__ == "__main__":
    args = build_parser().parse_args()
    main(
        args.out, args.quick, args.num_trips, args.min_edges, args.epochs, args.config,
        args.splits, args.seed, progress=not args.no_progress,
    )  # fmt: skip
    print(Path(args.out, "results.md").read_text())
