"""Contrastive pre-training across many complexes: every sample on a complex of its own.

The task (:class:`topo_contrastive.datasets.RandomComplexTrajectories`): a trajectory
from the top-left to the bottom-right corner through the bottom-left (label 0) or the
top-right corner (label 1), each on a new random complex with two holes at random places
(a large one on the lower left, a small one on the upper right), nodes numbered at random.
Raw flows and harmonic coordinates of different samples live in different spaces, so only
complex-agnostic features can be stacked into one design matrix.

Everything runs through the public PyG pipeline, with no glue code::

    views = ContrastiveViews(HodgeSpectralMask(budget=0.3))   # no complex bound
    ds = views.fit(RandomComplexTrajectories(root, transform=views))
    for batch in DataLoader(ds, batch_size=64, shuffle=True):
        L = batch.laplacians()                                   # block-diagonal
        z1 = head(encoder(batch.x_1_view1, *L, batch.batch_1))
        z2 = head(encoder(batch.x_1_view2, *L, batch.batch_1))
        loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts, batch=batch.batch_1)

The label-efficiency protocol: each seed draws an 80 / 20 % train / test split and
re-trains every encoder; for every labelled fraction of the training split (default 1, 5,
10, 100 %) ``--draws`` stratified labelled subsets (at least one label per class; one draw at
100 %), each row probed with the library's label-efficiency probe (logistic regression, its
scaling and ``C`` by 3-fold cross-validation inside the labelled subset where every class has
5 labels, else fixed defaults: no selection on test or unlabelled data). Test accuracy, mean
± std over seeds and draws. Rows:

- **SSCL_Spec** (Hodge-aware masks, Hodge-debiased loss with energy-fraction weights) and
  **SCL** (uniform masks, InfoNCE), pre-trained on all samples without labels;
- **untrained encoder** (the same architecture at its random initialisation);
- **SSCL_Spec fine-tuned** and the **supervised SCNN** (the pre-trained / a new encoder and a
  linear layer, trained with cross-entropy on the labelled subset for a fixed number of
  epochs, ``max(epochs, 5)``);
- **SSCL_Spec, part energies** and **untrained, part energies**: the same encoders read out
  by the energy fractions of every channel's gradient, curl and harmonic parts
  (:func:`~topo_contrastive.studies.reuse.part_energy_features`; the encoders' own readout
  has no harmonic energy);
- complex-agnostic **references**: the energy fractions of the three Hodge parts; the flow's
  length (edges on its support) and total absolute flow; both; both with their pairwise
  products.

Writes ``many_complexes.json``, ``.csv``, ``.md`` and ``many_complexes.png`` to ``--out``;
every finished seed is kept in ``--out``/seeds.json and an interrupted run resumes from there
(a folder of other settings is refused, naming them).

    python examples/many_complexes.py --out runs/many_complexes            # full (minutes)
    python examples/many_complexes.py --out /tmp/mc --quick                # a smoke test
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROWS = ("SSCL_Spec", "SCL", "untrained", "SSCL_Spec fine-tuned", "supervised SCNN",
        "SSCL_Spec, part energies", "untrained, part energies")  # fmt: skip
FRACTIONS = (0.01, 0.05, 0.1, 1.0)
REFERENCES = ("energy fractions", "length, total flow", "fractions + length",
              "fractions + length, products")  # fmt: skip


def _reference_features(ds) -> dict[str, np.ndarray]:
    """The complex-agnostic references of every sample."""
    from torch_geometric.loader import DataLoader

    from topo_contrastive import ContrastiveViews, EdgeFlowMask
    from topo_contrastive.losses import energy_fractions

    views = ContrastiveViews(EdgeFlowMask(0.0))
    fitted = views.fit(ds.copy())
    b = next(iter(DataLoader(fitted, batch_size=len(fitted))))
    frac = energy_fractions(b.hodge_parts.double(), b.batch_1, len(fitted)).numpy()
    x = b.x_1[:, 0].abs().double()
    length = np.bincount(b.batch_1.numpy(), weights=(x > 0).numpy().astype(float))
    total = np.bincount(b.batch_1.numpy(), weights=x.numpy())
    base = np.column_stack([length, total])
    both = np.column_stack([frac, base])
    i, j = np.triu_indices(both.shape[1])
    products = np.column_stack([both, both[:, i] * both[:, j]])
    return dict(zip(REFERENCES, (frac, base, both, products), strict=True))


def _probe(features: np.ndarray, y: np.ndarray, train_idx: np.ndarray,
           test_idx: np.ndarray, seed: int) -> float:  # fmt: skip
    """The label-efficiency probe (logistic regression; scaling and ``C`` by 3-fold CV inside
    the labelled subset where every class has 5 labels, else fixed defaults)."""
    from topo_contrastive.studies.label_efficiency import low_label_probe

    return float(low_label_probe(features, y, train_idx, test_idx, seed=seed).test_accuracy)


def main(
    out: Path,
    samples: int = 1000,
    seeds: int = 3,
    epochs: int = 20,
    hidden: int = 32,
    layers: int = 2,
    batch_size: int = 64,
    budget: float = 0.3,
    temperature: float = 0.5,
    seed: int = 0,
    data_root: Path | None = None,
    quick: bool = False,
    fractions: tuple[float, ...] = FRACTIONS,
    draws: int = 5,
) -> dict:
    """Run every row on ``seeds`` seeds and every labelled fraction; write the tables and
    the figure; return the results. A finished seed is kept in ``out/seeds.json`` and not
    run again.

    Raises:
        ValueError: ``out`` holds a run of other settings (named), or other files.
    """
    from topo_contrastive._outputs import output_run
    from topo_contrastive.datasets import RandomComplexTrajectories
    from topo_contrastive.experiments.run_folder import RunFolder
    from topo_contrastive.studies.label_efficiency import labelled_subsets

    if quick:
        samples, seeds, epochs, hidden, draws = 40, 1, 1, 8, 2
        fractions = (0.25, 1.0)
    fractions = tuple(sorted(float(f) for f in fractions))
    settings = {"samples": samples, "epochs": epochs, "hidden": hidden, "layers": layers,
                "batch_size": batch_size, "budget": budget, "temperature": temperature,
                "seed": seed, "quick": quick, "fractions": list(fractions),
                "draws": draws, "rows": list(ROWS)}  # fmt: skip
    with output_run(out, resume=True) as folder:  # a lock: one run at a time writes there
        run = RunFolder(folder, "many-complexes", settings, records="seeds.json", resume=True,
                        csv=False, restart=f"choose another --out, or remove '{out}' to start "
                        "over")  # fmt: skip
        run.start()
        root = data_root or folder / "data"
        num_train, num_val = int(0.6 * samples), int(0.2 * samples)
        ds = RandomComplexTrajectories(str(root), num_samples=samples, num_train=num_train,
                                       num_val=num_val, seed=seed, log=False)  # fmt: skip
        y = np.array([int(d.y) for d in ds])
        refs = _reference_features(ds)
        rows = (*ROWS, *REFERENCES)
        results: dict[str, dict[str, list[float]]] = {r: {_key(f): [] for f in fractions}
                                                      for r in rows}  # fmt: skip
        seconds: list[float] = []  # per seed, resumed seeds included
        for s in tqdm(range(seeds), desc="seeds"):
            if not run.done(f"seed {s}"):
                t0 = time.perf_counter()
                per_row = _one_seed(ds, y, refs, s, settings, labelled_subsets)
                run.save(f"seed {s}", {"seed": s, "rows": per_row,
                                       "seconds": round(time.perf_counter() - t0, 1)})
            (record,) = run.load(f"seed {s}")
            seconds.append(record["seconds"])
            for row, per in record["rows"].items():
                for f, accs in per.items():
                    results[row][f].extend(accs)
        summary = {
            "settings": {**settings, "seeds": seeds},
            "mean_edges": float(np.mean([int(d.num_cells(1).sum()) for d in ds])),
            "seconds_per_seed": seconds,
            "rows": {r: {f: {"mean": float(np.mean(v)), "std": float(np.std(v)), "runs": v}
                         for f, v in per.items()} for r, per in results.items()},  # fmt: skip
        }
        _write(summary, run, fractions)
        run.finish(f"{seeds} seed(s) done")
    return summary


def _key(f: float) -> str:
    return f"{f:g}"


def _one_seed(ds, y: np.ndarray, refs: dict[str, np.ndarray], s: int, settings: dict,
              labelled_subsets) -> dict[str, dict[str, list[float]]]:  # fmt: skip
    """Every row on seed ``s``: its split (80 % train, 20 % test), the encoders pre-trained
    on all samples without labels, then every labelled subset of the training split."""
    st = settings
    seed = st["seed"] + s
    samples = len(y)
    perm = np.random.default_rng(st["seed"] + 1000 + s).permutation(samples)
    cut = int(0.8 * samples)
    train, test = np.sort(perm[:cut]), np.sort(perm[cut:])
    below = [f for f in st["fractions"] if f < 1]
    subsets = labelled_subsets(y, train, below, st["draws"], seed) if below else {}
    if 1.0 in st["fractions"]:
        subsets[(1.0, 0)] = train  # every label: one draw
    from topo_contrastive.studies.reuse import (
        embed_samples,
        part_energy_features,
        pretrain_encoder,
        scnn_encoder,
        train_with_labels,
    )

    features: dict[str, np.ndarray] = {}
    encoders = {}
    for row in ("SSCL_Spec", "SCL"):
        encoders[row] = pretrain_encoder(ds, row, hidden=st["hidden"], layers=st["layers"],
                                         epochs=st["epochs"], batch_size=st["batch_size"],
                                         seed=seed, budget=st["budget"],
                                         temperature=st["temperature"])  # fmt: skip
        features[row] = embed_samples(encoders[row], ds)[0]
    torch.manual_seed(seed)
    untrained = scnn_encoder(st["hidden"], st["layers"])
    features["untrained"] = embed_samples(untrained, ds)[0]
    # the same encoders read out by the energy fractions of every channel's Hodge parts
    # (with the harmonic part, which the encoder's own readout leaves out)
    features["SSCL_Spec, part energies"] = part_energy_features(encoders["SSCL_Spec"], ds)
    features["untrained, part energies"] = part_energy_features(untrained, ds)
    features.update(refs)
    out: dict[str, dict[str, list[float]]] = {}
    for (f, d), sub in subsets.items():
        for row, X in features.items():
            acc = _probe(X, y, sub, test, seed=d)
            out.setdefault(row, {}).setdefault(_key(f), []).append(acc)
        for row, start in (("SSCL_Spec fine-tuned", encoders["SSCL_Spec"]),
                           ("supervised SCNN", None)):  # fmt: skip
            acc = train_with_labels(ds, sub, test, hidden=st["hidden"], layers=st["layers"],
                                    epochs=max(st["epochs"], 5), batch_size=st["batch_size"],
                                    seed=seed + d, encoder=start)  # fmt: skip
            out.setdefault(row, {}).setdefault(_key(f), []).append(acc)
    return out


def _write(summary: dict, run, fractions: tuple[float, ...]) -> None:
    """``many_complexes.{json,csv,md,png}`` into the run's folder."""
    from topo_contrastive.experiments.formatting import format_mean_std

    st = summary["settings"]
    head = " | ".join(f"{100 * f:g} %" for f in fractions)
    lines = [
        f"Test accuracy in %, mean ± std over {st['seeds']} seed(s) x {st['draws']} draw(s) "
        f"of the labelled subset (one draw at 100 %); {st['samples']} samples, "
        f"{summary['mean_edges']:.0f} edges per complex on average.",
        "",
        f"| row | {head} |",
        "|---|" + "---:|" * len(fractions),
    ]
    table = []
    for row, per in summary["rows"].items():
        cells = []
        for f in fractions:
            v = per[_key(f)]
            cells.append(format_mean_std(v["mean"], v["std"], scale=100))
            table.append({"row": row, "fraction": f, "mean": v["mean"], "std": v["std"],
                          "runs": " ".join(f"{r:.4f}" for r in v["runs"])})  # fmt: skip
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    run.write_tables("many_complexes", data=summary, rows=table,
                     markdown="\n".join(lines) + "\n")  # fmt: skip
    _figure(summary, fractions, run.folder / "many_complexes.png")
    print("\n".join(lines))


def _figure(summary: dict, fractions: tuple[float, ...], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from topo_contrastive._files import atomic_write

    fig, ax = plt.subplots(figsize=(7, 4))
    styles = {"SSCL_Spec": ("C0", "-"), "SCL": ("C9", "-"), "untrained": ("C7", "--"),
              "supervised SCNN": ("C1", "-"), "SSCL_Spec fine-tuned": ("C0", "--"),
              "SSCL_Spec, part energies": ("C3", "-"),
              "untrained, part energies": ("C3", "--")}  # fmt: skip
    x = [100 * f for f in fractions]
    for i, (row, per) in enumerate(summary["rows"].items()):
        color, ls = styles.get(row, (f"C{2 + i % 6}", ":"))
        mean = np.array([100 * per[_key(f)]["mean"] for f in fractions])
        std = np.array([100 * per[_key(f)]["std"] for f in fractions])
        ax.plot(x, mean, color=color, ls=ls, marker="o", ms=3, label=row)
        ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.12)
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{v:g} %" for v in x])
    ax.set_xlabel("labelled fraction of the training split")
    ax.set_ylabel("test accuracy (%)")
    ax.axhline(50, color="k", lw=0.5, ls=":")
    ax.set_title("Trajectories on many complexes (one random complex per sample)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--samples", type=int, default=1000, help="samples (complexes) (1000)")
    p.add_argument("--seeds", type=int, default=3, help="seeds: splits and trainings (3)")
    p.add_argument("--epochs", type=int, default=20, help="pre-training epochs (20)")
    p.add_argument("--hidden", type=int, default=32, help="encoder width (32)")
    p.add_argument("--layers", type=int, default=2, help="encoder layers (2)")
    p.add_argument("--batch-size", type=int, default=64, help="samples per batch (64)")
    p.add_argument("--budget", type=float, default=0.3, help="mask budget (0.3)")
    p.add_argument("--temperature", type=float, default=0.5, help="loss temperature (0.5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and the runs (0)")
    p.add_argument("--data-root", type=Path, default=None, help="dataset folder (<out>/data)")
    p.add_argument("--quick", action="store_true", help="tiny settings (a smoke test)")
    p.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS),
                   help="labelled fractions of the training split (0.01 0.05 0.1 1)")
    p.add_argument("--draws", type=int, default=5,
                   help="labelled subsets drawn per fraction below 1 (5)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = _parse()
    main(a.out, a.samples, a.seeds, a.epochs, a.hidden, a.layers, a.batch_size, a.budget,
         a.temperature, a.seed, a.data_root, a.quick, tuple(a.fractions), a.draws)  # fmt: skip
