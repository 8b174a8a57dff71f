"""Benchmark of the contrastive data pipeline: seconds per epoch of two views (+ Hodge parts).

All 400 samples of ``SyntheticTrajectories`` (about 1,080 edges), batches of 100, the
spectral mask ``HodgeSpectralMask(budget=0.3)``; only the data side is timed (no encoder).
Paths compared:

* ``unfitted transform``: the mask as a dataset transform on samples without stored drop
  probabilities, so that every access optimises them again (one view per access; timed on
  ``--unfitted-samples`` samples and scaled to the epoch);
* ``ContrastiveViews, workers=W``: the fitted views transform as the dataset's transform
  (both views and the Hodge parts of every sample), ``DataLoader(num_workers=W)``;
* ``batch masks``: a plain fitted dataset, two ``mask(batch)`` calls per batch in the main
  process (the path of the experiments), the reference.

The one-time ``fit`` (drop probabilities and Hodge parts of all 400 flows) is reported
separately. Results: a Markdown table on stdout and JSON in ``--out``.

    python benchmarks/bench_pipeline.py
    python benchmarks/bench_pipeline.py --epochs 5 --out benchmarks/results/pipeline.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

import torch

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, _ROOT)


def _seconds(fn: Callable[[], None], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def run(root: str, epochs: int, batch_size: int, unfitted_samples: int, seed: int) -> dict:
    """Time every path; returns ``{"rows": [...], "fit_seconds": ..., ...}``."""
    from torch_geometric.loader import DataLoader

    from topo_contrastive import ContrastiveViews, HodgeSpectralMask, SyntheticTrajectories

    torch.manual_seed(seed)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=seed))
    ds = SyntheticTrajectories(os.path.join(root, "trajectories"), transform=views, log=False)
    start = time.perf_counter()
    views.fit(ds)
    fit_seconds = time.perf_counter() - start
    rows = []

    # the unfitted transform: optimisation at every access
    bare = SyntheticTrajectories(os.path.join(root, "trajectories"), log=False)
    bare.transform = HodgeSpectralMask(0.3, hodge=views.hodge, generator=seed)
    n = min(unfitted_samples, len(bare))
    per_sample = _seconds(lambda: [bare[i] for i in range(n)], 1) / n
    rows.append(("unfitted transform (one view)", 0, per_sample * len(bare), f"{n} samples"))

    def epoch(loader_ds, workers: int, per_batch: Callable | None = None) -> None:
        loader = DataLoader(loader_ds, batch_size=batch_size, shuffle=True, num_workers=workers)
        for batch in loader:
            if per_batch is not None:
                per_batch(batch)

    for workers in (0, 2):
        t = _seconds(lambda w=workers: epoch(ds, w), epochs)
        rows.append(("ContrastiveViews (two views + parts)", workers, t, f"median of {epochs}"))

    plain = SyntheticTrajectories(os.path.join(root, "trajectories"), log=False)
    mask = HodgeSpectralMask(0.3, hodge=views.hodge, generator=seed)
    mask.fit(plain)
    t = _seconds(lambda: epoch(plain, 0, lambda b: (mask(b), mask(b))), epochs)
    rows.append(("batch masks (two views, main process)", 0, t, f"median of {epochs}"))
    return {
        "samples": len(ds),
        "num_edges": ds.complex.num_edges,
        "batch_size": batch_size,
        "fit_seconds": fit_seconds,
        "torch_threads": torch.get_num_threads(),
        "rows": [
            {"path": p, "workers": w, "seconds_per_epoch": s, "note": note}
            for p, w, s, note in rows
        ],
    }


def format_table(result: dict) -> str:
    """Markdown table of :func:`run`'s result, with ratios to the batch-mask path."""
    ref = next(r for r in result["rows"] if r["path"].startswith("batch"))["seconds_per_epoch"]
    lines = [
        f"Data pipeline, {result['samples']} flows on {result['num_edges']} edges, batches of "
        f"{result['batch_size']}; one-time fit (drop probabilities + Hodge parts): "
        f"{result['fit_seconds']:.1f} s; {result['torch_threads']} torch threads",
        "",
        "| path | workers | s / epoch | vs batch masks | timing |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['path']} | {r['workers']} | {r['seconds_per_epoch']:.2f} | "
            f"{r['seconds_per_epoch'] / ref:.1f}x | {r['note']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per path (default 3)")
    parser.add_argument("--batch-size", type=int, default=100, help="batch size (default 100)")
    parser.add_argument(
        "--unfitted-samples",
        type=int,
        default=50,
        help="samples timed on the unfitted path, scaled to the epoch (default 50)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--root", default=None, help="dataset folder (default: a temporary one)")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    if args.root is None:
        with tempfile.TemporaryDirectory() as root:
            result = run(root, args.epochs, args.batch_size, args.unfitted_samples, args.seed)
    else:
        result = run(args.root, args.epochs, args.batch_size, args.unfitted_samples, args.seed)
    print(format_table(result))
    if args.out:
        from topo_contrastive._utils.files import write_json

        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
