"""Missing measurements: edge flows with unobserved edges at test time.

A sensor network never sees every edge. This example trains every row's probe on complete
flows and tests it on flows of which a fraction of the edges is unobserved, with the
unobserved entries either set to zero or filled in by the flow-conservation interpolation
of Jia et al. (KDD 2019, :func:`topo_contrastive.hodge.interpolate_flows`: the entries that
minimise the divergence ``||B1 x||^2``).

Datasets: the paper's trajectories and ocean drifters, and the road networks anaheim and
chicago-sketch with routed trips (``examples/road_networks.py``; they need ``pytspl``, see
docs/install.md). Unobserved edges, per test flow (seeded): ``random``, a uniform sample of
the edges; ``region``, the edges nearest to a random node (by hops), as a region whose
sensors are down. Fractions 10, 30 and 50 % (and 0 %, the complete flows).

Rows, all probed with standardised features and scikit-learn's ``RidgeClassifierCV``
(``alpha`` by leave-one-out on the training split, 19 values 1e-3..1e6), trained on the
complete flows of the training split: the SSCL_Spec encoder (HodgeReadout edition,
pre-trained on all flows of the dataset without labels, at its configuration's epochs),
raw flows, ``|flows|`` and the harmonic coordinates ``U_H^T x``; each on the zero-filled and
on the interpolated test flows. Test accuracy, mean ± std over ``--splits`` splits.

Writes ``missing_measurements.json``, ``.csv``, ``.md`` and ``missing_measurements.png`` to
``--out``; every finished dataset is kept in ``--out``/datasets.json (its data and pre-trained
encoder in ``--out``/datasets/) and an interrupted run resumes from there (a folder of other
settings is refused, naming them).

    python examples/missing_measurements.py --out runs/missing          # all four (an hour)
    python examples/missing_measurements.py --out /tmp/mm --quick       # a smoke test
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATASETS = ("trajectory", "ocean", "anaheim", "chicago-sketch")
FRACTIONS = (0.1, 0.3, 0.5)
MODES = ("random", "region")
ROWS = ("SSCL_Spec encoder", "raw flows", "|flows|", "U_H^T x")
FILLS = ("zeros", "interpolated")
ALPHAS = np.logspace(-3, 6, 19)


def _data(name: str, folder: Path, trips: int, seed: int):
    """The :class:`~topo_contrastive.experiments.ExperimentData` of ``name``."""
    from topo_contrastive.experiments.data import ExperimentData, load_data_file, load_dataset

    if name in ("trajectory", "ocean"):
        return ExperimentData.from_dataset(load_dataset(name, folder / "data"), name)
    path = folder / f"{name}.npz"
    if not path.is_file():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import road_networks as rn

        rn.write_network(name, path, trips, seed)
    return ExperimentData.from_dataset(load_data_file(path, folder / "data"), name)


def _encoder(data, name: str, folder: Path, epochs: int | None, seed: int):
    """The SSCL_Spec encoder of the HodgeReadout edition, pre-trained once and kept."""
    from topo_contrastive.experiments import get_config, pretrain
    from topo_contrastive.io import load_encoder, save_encoder

    path = folder / f"encoder_{name}.pt"
    if path.is_file():
        return load_encoder(path, complex=data.hodge)[0]
    task = name if name in ("trajectory", "ocean") else "ocean"
    result = pretrain(data, get_config("SSCL_Spec", task, "hodge"), seed=seed, epochs=epochs)
    encoder = result.encoder.cpu().eval()
    save_encoder(encoder, path, complex=data.hodge)
    return encoder


def _embed(encoder, data, flows: torch.Tensor) -> np.ndarray:
    """Embeddings ``[S, D]`` of flows ``[S, N1]`` on the data's complex."""
    L_down, L_up = data.laplacians()
    out = []
    with torch.no_grad():
        for chunk in flows.split(200):
            out.append(encoder(chunk.float().unsqueeze(-1), L_down, L_up))
    return torch.cat(out).double().numpy()


def unobserved_masks(ops, num: int, fraction: float, mode: str,
                     rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    """``bool [num, N1]``: ``True`` where an edge is unobserved, ``round(fraction * N1)`` per
    flow; ``random``: uniform; ``region``: the edges nearest (in hops, ties at random) to a
    uniformly drawn node."""
    from scipy.sparse.csgraph import shortest_path

    n1 = ops.num_edges
    k = int(round(fraction * n1))
    masks = np.zeros((num, n1), dtype=bool)
    if k == 0:
        return masks
    tail, head = np.asarray(ops.edges[:, 0]), np.asarray(ops.edges[:, 1])  # [N1] each
    adjacency = abs(ops.B1) @ abs(ops.B1).T  # nodes sharing an edge (and the diagonal)
    for i in range(num):
        if mode == "random":
            masks[i, rng.choice(n1, size=k, replace=False)] = True
            continue
        source = int(rng.integers(ops.num_nodes))
        hops = shortest_path(adjacency, unweighted=True, indices=source)
        hops = np.where(np.isfinite(hops), hops, np.inf)
        distance = np.minimum(hops[tail], hops[head])
        order = np.lexsort((rng.random(n1), distance))  # nearest first, ties at random
        masks[i, order[:k]] = True
    return masks


def _features(kind: str, flows: torch.Tensor, data, encoder, basis: np.ndarray) -> np.ndarray:
    if kind == "SSCL_Spec encoder":
        return _embed(encoder, data, flows)
    x = flows.double().numpy()
    if kind == "raw flows":
        return x
    if kind == "|flows|":
        return np.abs(x)
    return x @ basis  # U_H^T x


def _probe(train: np.ndarray, y_train: np.ndarray):
    from sklearn.linear_model import RidgeClassifierCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=ALPHAS)).fit(train, y_train)


def run_dataset(name: str, folder: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """Every cell of one dataset: ``{row: {fill: {"<mode> <fraction>": [accuracy per split]}}}``
    with ``"complete"`` for 0 %."""
    from topo_contrastive.hodge import interpolate_flows
    from topo_contrastive.nn import canonical_harmonic_basis

    data = _data(name, folder, settings["trips"], settings["seed"])
    encoder = _encoder(data, name, folder, settings["epochs"], settings["seed"])
    basis, _ = canonical_harmonic_basis(data.hodge)
    y = data.labels.numpy()
    flows = data.flows
    out: dict[str, Any] = {r: {f: {} for f in FILLS} for r in ROWS}
    for split in range(settings["splits"]):
        idx = data.split(split)
        test_flows = flows[idx["test"]]
        probes = {r: _probe(_features(r, flows[idx["train"]], data, encoder, basis),
                            y[idx["train"]]) for r in ROWS}  # fmt: skip
        for r in ROWS:
            acc = probes[r].score(_features(r, test_flows, data, encoder, basis), y[idx["test"]])
            for fill in FILLS:
                out[r][fill].setdefault("complete", []).append(float(acc))
        rng = np.random.default_rng([settings["seed"], split])
        for mode in MODES:
            for fraction in settings["fractions"]:
                hidden = unobserved_masks(data.complex, len(test_flows), fraction, mode, rng)
                observed = torch.from_numpy(~hidden)
                zeroed = torch.where(observed, test_flows, torch.zeros_like(test_flows))
                filled = interpolate_flows(data.complex, zeroed.double(), observed).float()
                for fill, x in (("zeros", zeroed), ("interpolated", filled)):
                    for r in ROWS:
                        acc = probes[r].score(_features(r, x, data, encoder, basis),
                                              y[idx["test"]])  # fmt: skip
                        out[r][fill].setdefault(f"{mode} {fraction:g}", []).append(float(acc))
    return {"sizes": {"N1": int(data.complex.num_edges), "flows": int(flows.shape[0]),
                      "beta_1": int(basis.shape[1])}, "rows": out}  # fmt: skip


def main(
    out: Path,
    datasets: tuple[str, ...] = DATASETS,
    fractions: tuple[float, ...] = FRACTIONS,
    splits: int = 3,
    epochs: int | None = None,
    trips: int = 1000,
    seed: int = 0,
    quick: bool = False,
) -> dict[str, Any]:
    """Run every dataset (resumable per dataset: a finished one is kept in
    ``out/datasets.json``, its data and encoder in ``out/datasets/``); write the tables and
    the figure.

    Raises:
        ValueError: a fraction outside ``(0, 1)`` (before anything is written); ``out`` holds
            a run of other settings (named), or other files.
    """
    from topo_contrastive._outputs import output_run
    from topo_contrastive.experiments.run_folder import RunFolder

    if quick:
        datasets, fractions, splits, epochs = ("ocean",), (0.3,), 1, 1
    for f in fractions:
        if not 0 < f < 1:
            raise ValueError(f"`fractions` must lie in (0, 1), got {f}")
    settings = {"fractions": [float(f) for f in fractions], "splits": splits,
                "epochs": epochs, "trips": trips, "seed": seed, "quick": quick}  # fmt: skip
    with output_run(out, resume=True) as folder:  # a lock: one run at a time writes there
        run = RunFolder(folder, "missing-measurements", settings, records="datasets.json",
                        resume=True, csv=False, restart=f"choose another --out, or remove "
                        f"'{out}' to start over")  # fmt: skip
        run.start()
        cache = folder / "datasets"
        cache.mkdir(exist_ok=True)
        results: dict[str, Any] = {}
        for name in tqdm(datasets, desc="datasets"):
            if not run.done(name):
                t0 = time.perf_counter()
                record = run_dataset(name, cache, settings)
                run.save(name, {**record, "seconds": round(time.perf_counter() - t0, 1)})
            (results[name],) = run.load(name)
        summary = {"settings": settings, "datasets": results}
        _write(summary, run)
        run.finish(f"{len(datasets)} dataset(s) done")
    return summary


def _cells(settings: dict[str, Any]) -> list[str]:
    return ["complete"] + [f"{m} {f:g}" for m in MODES for f in settings["fractions"]]


def _write(summary: dict[str, Any], run) -> None:
    """``missing_measurements.{json,csv,md,png}`` into the run's folder."""
    from topo_contrastive.experiments.formatting import format_mean_std

    cells = _cells(summary["settings"])
    head = ["complete"] + [f"{m} {100 * float(f):g} %" for m in MODES
                           for f in summary["settings"]["fractions"]]  # fmt: skip
    lines = [f"Test accuracy in %, mean ± std over {summary['settings']['splits']} split(s); "
             "probes trained on complete flows, tested with the edges unobserved.", ""]  # fmt: skip
    table = []
    for name, rec in summary["datasets"].items():
        s = rec["sizes"]
        lines += [f"**{name}** ({s['N1']:,} edges, {s['flows']:,} flows, beta_1 = "
                  f"{s['beta_1']}):", "",
                  "| row | unobserved entries | " + " | ".join(head) + " |",
                  "|---|---|" + "---:|" * len(head)]  # fmt: skip
        for row in ROWS:
            for fill in FILLS:
                per = rec["rows"][row][fill]
                text = []
                for c in cells:
                    v = 100 * np.asarray(per[c])
                    text.append(format_mean_std(v))
                    table.append({"dataset": name, "row": row, "fill": fill, "cell": c,
                                  "mean": v.mean(), "std": v.std(),
                                  "runs": " ".join(f"{a:.2f}" for a in v)})  # fmt: skip
                label = row.replace("|", "\\|")
                lines.append(f"| {label} | {fill} | " + " | ".join(text) + " |")
        lines.append("")
    run.write_tables("missing_measurements", data=summary, rows=table,
                     markdown="\n".join(lines))  # fmt: skip
    _figure(summary, run.folder / "missing_measurements.png")
    print("\n".join(lines))


def _figure(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from topo_contrastive._files import atomic_write

    names = list(summary["datasets"])
    fractions = [0.0, *summary["settings"]["fractions"]]
    fig, axes = plt.subplots(len(MODES), len(names), figsize=(3.2 * len(names), 5.5),
                             squeeze=False, sharey=True)  # fmt: skip
    for j, name in enumerate(names):
        rows = summary["datasets"][name]["rows"]
        for i, mode in enumerate(MODES):
            ax = axes[i][j]
            cells = ["complete"] + [f"{mode} {f:g}" for f in fractions[1:]]
            for k, row in enumerate(ROWS):
                for fill, ls in (("zeros", ":"), ("interpolated", "-")):
                    v = [100 * np.asarray(rows[row][fill][c]) for c in cells]
                    mean = np.array([a.mean() for a in v])
                    std = np.array([a.std() for a in v])
                    x = [100 * f for f in fractions]
                    ax.plot(x, mean, ls=ls, color=f"C{k}", marker="o", ms=2,
                            label=f"{row}, {fill}" if (i, j) == (0, 0) else None)  # fmt: skip
                    ax.fill_between(x, mean - std, mean + std, color=f"C{k}", alpha=0.08)
            ax.set_title(f"{name}, {mode}", fontsize=9)
            ax.set_xlabel("unobserved edges (%)")
            if j == 0:
                ax.set_ylabel("test accuracy (%)")
    fig.legend(loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS,
                   help="datasets (default: all four)")
    p.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS),
                   help="unobserved fractions of the edges, each in (0, 1) (0.1 0.3 0.5)")
    p.add_argument("--splits", type=int, default=3, help="random splits (3)")
    p.add_argument("--epochs", type=int, default=None,
                   help="pre-training epochs (default: the configuration's)")
    p.add_argument("--trips", type=int, default=1000, help="trips per road network (1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the masks, trips, training (0)")
    p.add_argument("--quick", action="store_true", help="tiny settings (a smoke test)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = _parse()
    main(a.out, tuple(a.datasets), tuple(a.fractions), a.splits, a.epochs, a.trips, a.seed,
         a.quick)  # fmt: skip
