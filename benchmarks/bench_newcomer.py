"""A new user's three cases, timed: the README's pipeline as the docs write it on 100 small
complexes of different sizes, on a TopoNetX cell complex with string node labels, and on a
50,000-edge network.

Each case builds its data with the public API, draws the views with ``ContrastiveViews``,
trains the README's encoder, head and Hodge-debiased loss for ``--epochs`` epochs and embeds
every sample; the seconds of each stage and the peak resident memory are printed and written
to ``benchmarks/results/bench_newcomer.{json,md}``.

    python benchmarks/bench_newcomer.py --seed 0
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _complexes import delaunay_complex, random_node_paths  # noqa: E402

from topo_contrastive import (  # noqa: E402
    SCNN,
    ContrastiveViews,
    HodgeDebiasedInfoNCE,
    HodgeSpectralMask,
    ProjectionHead,
)
from topo_contrastive._utils.files import write_json, write_text  # noqa: E402


def _train(ds, epochs: int, batch_size: int, many: bool) -> dict[str, float]:
    """The README's loop on ``ds`` (fitted views), then the embeddings of every sample."""
    from torch_geometric.loader import DataLoader

    torch.manual_seed(0)
    encoder, head = SCNN(hidden_channels=32), ProjectionHead(32, 32, 16)
    loss_fn = HodgeDebiasedInfoNCE(temperature=0.5)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
    t0 = time.perf_counter()
    for _ in range(epochs):
        for batch in DataLoader(ds, batch_size=batch_size, shuffle=True):
            L = batch.laplacians() if many else ds.complex.laplacians()
            z1 = head(encoder(batch.x_1_view1, L, batch.batch_1))
            z2 = head(encoder(batch.x_1_view2, L, batch.batch_1))
            extra = {"batch": batch.batch_1} if many else {}
            loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts, **extra)
            opt.zero_grad()
            loss.backward()
            opt.step()
    t1 = time.perf_counter()
    with torch.no_grad():
        for batch in DataLoader(ds, batch_size=batch_size):
            L = batch.laplacians() if many else ds.complex.laplacians()
            encoder(batch.x_1, L, batch.batch_1)
    return {"train_s": t1 - t0, "embed_s": time.perf_counter() - t1, "loss": float(loss)}


def small_complexes(root: Path, epochs: int, seed: int) -> dict:
    """100 small complexes of different sizes (RandomComplexTrajectories)."""
    from topo_contrastive.datasets import RandomComplexTrajectories

    t0 = time.perf_counter()
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=seed))
    ds = views.fit(RandomComplexTrajectories(str(root / "rct"), num_samples=100, num_train=50,
                                             num_val=25, seed=seed, transform=views))  # fmt: skip
    data_s = time.perf_counter() - t0
    sizes = ds._data.cell_counts.reshape(-1, 3)[:, 1]
    return {"case": "100 small complexes", "edges": f"{int(sizes.min())}-{int(sizes.max())} "
            "per sample", "data_s": data_s, **_train(ds, epochs, 25, many=True)}  # fmt: skip


def string_cell_complex(root: Path, epochs: int, seed: int) -> dict:
    """A TopoNetX cell complex with string node labels: a street grid of squares."""
    import toponetx as tnx

    from topo_contrastive import ComplexOperators
    from topo_contrastive.datasets import EdgeFlows

    t0 = time.perf_counter()
    n = 12
    name = lambda i, j: f"x{i}-y{j}"  # noqa: E731
    cc = tnx.CellComplex()
    for i in range(n - 1):
        for j in range(n - 1):
            if (i, j) not in ((3, 3), (7, 8)):  # two blocks without a 2-cell: holes
                cc.add_cell([name(i, j), name(i + 1, j), name(i + 1, j + 1), name(i, j + 1)],
                            rank=2)  # fmt: skip
    ops = ComplexOperators.from_toponetx(cc)
    rng = np.random.default_rng(seed)
    paths, labels = [], []
    for k in range(200):  # around the hole at (3, 3) on one side or the other
        row = int(rng.integers(0, 3)) if k % 2 else int(rng.integers(5, n))
        paths.append([name(c, row) for c in range(n)])
        labels.append(k % 2)
    flows = np.stack([ops.path_to_flow(p).numpy() for p in paths])
    flows += rng.normal(0, 0.1, flows.shape)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=seed))
    ds = EdgeFlows.from_toponetx(str(root / "cells"), cc, flows=flows, labels=labels,
                                 transform=views)  # fmt: skip
    ds = views.fit(ds)
    return {"case": "TopoNetX cell complex, string labels",
            "edges": f"{ops.num_edges} ({ops.num_faces} 2-cells)",
            "data_s": time.perf_counter() - t0, **_train(ds, epochs, 50, many=False)}  # fmt: skip


def large_network(root: Path, epochs: int, seed: int) -> dict:
    """A 50,000-edge Delaunay network with 64 path flows."""
    from topo_contrastive.datasets import EdgeFlows

    t0 = time.perf_counter()
    ops = delaunay_complex(50_000, seed=seed)
    paths = random_node_paths(ops, 64, seed=seed)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=seed))
    ds = EdgeFlows.from_incidence(str(root / "large"), ops.B1, ops.B2,
                                  paths=[list(p) for p in paths], transform=views)  # fmt: skip
    ds = views.fit(ds)
    return {"case": "50,000-edge network", "edges": str(ops.num_edges),
            "data_s": time.perf_counter() - t0, **_train(ds, epochs, 16, many=False)}  # fmt: skip


def main(epochs: int = 3, seed: int = 0, out: Path | None = None) -> list[dict]:
    """Run the three cases; returns their rows."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in (small_complexes, string_cell_complex, large_network):
            row = case(Path(tmp), epochs, seed)
            row["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            rows.append(row)
            print(row, flush=True)
    if out is not None:
        write_json(out.with_suffix(".json"), {"epochs": epochs, "seed": seed, "rows": rows})
        lines = ["| case | edges | data + views s | train s | embed s | peak RSS GB (so far) |",
                 "|---|---|---|---|---|---|"]  # fmt: skip
        lines += [f"| {r['case']} | {r['edges']} | {r['data_s']:.1f} | {r['train_s']:.1f} | "
                  f"{r['embed_s']:.1f} | {r['peak_rss_gb']:.2f} |" for r in rows]  # fmt: skip
        write_text(out.with_suffix(".md"), f"{epochs} epochs, seed {seed}.\n\n"
                   + "\n".join(lines) + "\n")  # fmt: skip
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3, help="training epochs per case (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and the runs")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench_newcomer",
                   help="results path without suffix")  # fmt: skip
    a = p.parse_args()
    main(a.epochs, a.seed, a.out)
