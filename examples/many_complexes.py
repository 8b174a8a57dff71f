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

Rows (test accuracy, linear probe with its penalty chosen on the validation split, mean ±
std over seeds; each seed re-draws the train/val/test split and re-trains every encoder):

- **SSCL_Spec** (Hodge-aware masks, Hodge-debiased loss with energy-fraction weights) and
  **SCL** (uniform masks, InfoNCE), pre-trained on all samples without labels;
- **untrained encoder** (the same architecture at its random initialisation);
- **supervised SCNN** (the same encoder and a linear layer, trained with cross-entropy on the
  training split, epoch chosen on validation);
- complex-agnostic **references**: the energy fractions of the three Hodge parts; the flow's
  length (edges on its support) and total absolute flow; both; both with their pairwise
  products.

Writes ``many_complexes.json``, ``.csv``, ``.md`` and ``many_complexes.png`` to ``--out``;
every finished seed is kept in ``--out``/seeds/ and an interrupted run resumes from there (with
the same settings).

    python examples/many_complexes.py --out runs/many_complexes            # full (minutes)
    python examples/many_complexes.py --out /tmp/mc --quick                # a smoke test
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROWS = ("SSCL_Spec", "SCL", "untrained", "supervised SCNN")
REFERENCES = ("energy fractions", "length, total flow", "fractions + length",
              "fractions + length, products")  # fmt: skip


def _encoder(hidden: int, layers: int):
    from topo_contrastive.nn import SCNN, HodgeReadout

    # bias-free odd layers: per-edge features turn with the edges, so the energies of the
    # basis-free readout do not depend on the (random) edge orientations
    return SCNN(1, hidden, num_layers=layers, K_down=2, K_up=2, bias=False,
                readout=HodgeReadout(None, energies=True))  # fmt: skip


def _embed(encoder, loader) -> tuple[np.ndarray, np.ndarray]:
    encoder.eval()
    hs, ys = [], []
    with torch.no_grad():
        for batch in loader:
            hs.append(encoder(batch.x_1, *batch.laplacians(), batch.batch_1))
            ys.append(batch.y)
    return torch.cat(hs).numpy(), torch.cat(ys).numpy()


def _pretrain(ds, config: str, hidden: int, layers: int, epochs: int, batch_size: int,
              seed: int, budget: float, temperature: float) -> torch.nn.Module:  # fmt: skip
    from torch_geometric.loader import DataLoader

    from topo_contrastive import ContrastiveViews, EdgeFlowMask, HodgeSpectralMask
    from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE
    from topo_contrastive.nn import ProjectionHead

    torch.manual_seed(seed)
    encoder = _encoder(hidden, layers)
    head = ProjectionHead(encoder.out_channels, hidden, hidden)
    if config == "SSCL_Spec":
        views = ContrastiveViews(HodgeSpectralMask(budget=budget, generator=seed))
        loss_fn = HodgeDebiasedInfoNCE(temperature)
    else:
        views = ContrastiveViews(EdgeFlowMask(budget, generator=seed), hodge_parts=False)
        loss_fn = InfoNCE(temperature)
    ds = ds.copy()
    ds.transform = views
    ds = views.fit(ds)  # drop probabilities and Hodge parts, each on its own complex
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))  # fmt: skip
    encoder.train()
    for _ in range(epochs):
        for batch in loader:
            L = batch.laplacians()  # block-diagonal [sum N1, sum N1]
            z1 = head(encoder(batch.x_1_view1, *L, batch.batch_1))
            z2 = head(encoder(batch.x_1_view2, *L, batch.batch_1))
            if config == "SSCL_Spec":
                loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts, batch=batch.batch_1)
            else:
                loss = loss_fn(z1, z2)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return encoder


def _supervised(ds, split, hidden: int, layers: int, epochs: int, batch_size: int,
                seed: int) -> float:  # fmt: skip
    """Test accuracy of the encoder + a linear layer trained with cross-entropy (the epoch
    with the best validation accuracy)."""
    from torch_geometric.loader import DataLoader

    torch.manual_seed(seed)
    encoder = _encoder(hidden, layers)
    linear = torch.nn.Linear(encoder.out_channels, 2)
    opt = torch.optim.Adam([*encoder.parameters(), *linear.parameters()], lr=1e-3)
    train = DataLoader(ds[split["train"]], batch_size=batch_size, shuffle=True,
                       generator=torch.Generator().manual_seed(seed))  # fmt: skip

    def accuracy(idx) -> float:
        encoder.eval()
        with torch.no_grad():
            b = next(iter(DataLoader(ds[idx], batch_size=len(idx))))
            pred = linear(encoder(b.x_1, *b.laplacians(), b.batch_1)).argmax(1)
        encoder.train()
        return float((pred == b.y).float().mean())

    best = (-1.0, 0.0)
    for _ in range(epochs):
        for b in train:
            loss = torch.nn.functional.cross_entropy(
                linear(encoder(b.x_1, *b.laplacians(), b.batch_1)), b.y
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
        val = accuracy(split["val"])
        if val > best[0]:
            best = (val, accuracy(split["test"]))
    return best[1]


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


def _probe(features: np.ndarray, y: np.ndarray, split: dict[str, np.ndarray]) -> float:
    """Logistic regression, penalty chosen on the validation split, test accuracy."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    best = (-1.0, 0.0)
    for c in (0.01, 0.1, 1.0, 10.0, 100.0):
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
        model.fit(features[split["train"]], y[split["train"]])
        val = model.score(features[split["val"]], y[split["val"]])
        if val > best[0]:
            best = (val, model.score(features[split["test"]], y[split["test"]]))
    return float(best[1])


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
) -> dict:
    """Run every row on ``seeds`` seeds; write the tables and the figure; return the results."""
    from topo_contrastive._files import write_json, write_text
    from topo_contrastive.datasets import RandomComplexTrajectories
    from topo_contrastive.experiments.formatting import format_mean_std

    if quick:
        samples, seeds, epochs, hidden = 40, 1, 1, 8
    root = data_root or out / "data"
    num_train, num_val = int(0.6 * samples), int(0.2 * samples)
    ds = RandomComplexTrajectories(str(root), num_samples=samples, num_train=num_train,
                                   num_val=num_val, seed=seed, log=False)  # fmt: skip
    y = ds._data.y.numpy() if ds._data is not None else np.array([d.y.item() for d in ds])
    refs = _reference_features(ds)
    results: dict[str, list[float]] = {r: [] for r in (*ROWS, *REFERENCES)}
    from torch_geometric.loader import DataLoader

    settings = {"samples": samples, "seeds": seeds, "epochs": epochs, "hidden": hidden,
                "layers": layers, "batch_size": batch_size, "budget": budget,
                "temperature": temperature, "seed": seed, "quick": quick}  # fmt: skip
    done_dir = out / "seeds"  # one finished seed per file: an interrupted run resumes
    done_dir.mkdir(parents=True, exist_ok=True)
    seconds: list[float] = []  # per seed, resumed seeds included
    for s in tqdm(range(seeds), desc="seeds"):
        done = done_dir / f"seed_{s}.json"
        if done.exists():
            record = json.loads(done.read_text())
            if record["settings"] == {**settings, "seeds": None}:
                for k, v in record["rows"].items():
                    results[k].append(v)
                seconds.append(record["seconds"])
                continue
        t0 = time.perf_counter()
        row_results: dict[str, float] = {}
        perm = np.random.default_rng(seed + 1000 + s).permutation(samples)
        split = {"train": perm[:num_train], "val": perm[num_train:num_train + num_val],
                 "test": perm[num_train + num_val:]}  # fmt: skip
        loader = DataLoader(ds, batch_size=256)
        for row in ("SSCL_Spec", "SCL"):
            enc = _pretrain(ds, row, hidden, layers, epochs, batch_size, seed + s, budget,
                            temperature)  # fmt: skip
            h, _ = _embed(enc, loader)
            row_results[row] = _probe(h, y, split)
        torch.manual_seed(seed + s)
        h, _ = _embed(_encoder(hidden, layers), loader)
        row_results["untrained"] = _probe(h, y, split)
        split_t = {k: torch.from_numpy(v) for k, v in split.items()}
        row_results["supervised SCNN"] = _supervised(
            ds, split_t, hidden, layers, max(epochs, 5), batch_size, seed + s
        )
        for name, feats in refs.items():
            row_results[name] = _probe(feats, y, split)
        write_json(done, {"settings": {**settings, "seeds": None}, "rows": row_results,
                          "seconds": round(time.perf_counter() - t0, 1)})  # fmt: skip
        seconds.append(round(time.perf_counter() - t0, 1))
        for k, v in row_results.items():
            results[k].append(v)
    summary = {
        "settings": settings,
        "mean_edges": float(ds._data.x_1.shape[0] / samples),
        "seconds_per_seed": seconds,
        "rows": {k: {"mean": float(np.mean(v)), "std": float(np.std(v)), "runs": v}
                 for k, v in results.items()},  # fmt: skip
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "many_complexes.json", summary)
    lines = ["| row | test accuracy % (mean ± std) |", "|---|---:|"]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["row", "mean", "std", "runs"])
    for k, v in summary["rows"].items():
        lines.append(f"| {k} | {format_mean_std(v['mean'], v['std'], scale=100)} |")
        writer.writerow([k, v["mean"], v["std"], " ".join(f"{r:.4f}" for r in v["runs"])])
    write_text(out / "many_complexes.md", "\n".join(lines) + "\n")
    write_text(out / "many_complexes.csv", buf.getvalue())
    _figure(summary, out / "many_complexes.png")
    print("\n".join(lines))
    return summary


def _figure(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from topo_contrastive._files import atomic_write

    names = list(summary["rows"])
    mean = [100 * summary["rows"][n]["mean"] for n in names]
    std = [100 * summary["rows"][n]["std"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    colors = ["C0"] * 2 + ["C7", "C1"] + ["C2"] * len(REFERENCES)
    ax.barh(range(len(names)), mean, xerr=std, color=colors)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("test accuracy (%)")
    ax.axvline(50, color="k", lw=0.5, ls=":")
    ax.set_title("Trajectories on many complexes (one random complex per sample)")
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
    return p.parse_args(argv)


if __name__ == "__main__":
    a = _parse()
    main(a.out, a.samples, a.seeds, a.epochs, a.hidden, a.layers, a.batch_size, a.budget,
         a.temperature, a.seed, a.data_root, a.quick)  # fmt: skip
