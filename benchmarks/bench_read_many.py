"""Benchmark: reading a many-complex file of ``S`` tiny complexes, ``S`` = 10^3 to 10^5.

Data: ``S`` one-triangle complexes (3 nodes, 3 edges, the triangle filled), every edge
oriented at random (``B2``'s signs follow), a random edge flow each, labels ``i % 2``,
written as one many-complex ``.npz`` file (the layout of
``EdgeFlows.write_npz`` of ``S`` samples; the arrays are built directly, the writer's own
``Batch`` of ``S`` samples is not what is timed).

Timed per size (median of ``--repeats``, each from the file on disk):

1. the reader: every sample's complex checked (as ``from_incidence`` checks one) on the
   block-diagonal incidences at once, the samples stored collated;
2. ``EdgeFlows(root, file=...)``: the same read plus the standard split and the processed file
   written and read back (what ``pretrain``, ``evaluate`` and ``embed --data-file`` open);
3. the baseline, measured in the same run up to ``--baseline-max`` samples: the reader of
   one sample at a time (``ComplexOperators.from_incidence`` and
   ``ComplexData.from_complex`` per sample, then ``InMemoryDataset.collate``), the path the
   reader took before; its storage is checked equal to the fast reader's.

Printed: a Markdown table of the times and the baseline ratios, and the least-squares
log-log slope of each reader's time against ``S`` (1 is linear). With ``--pretrain-epoch``
the largest file also goes through ``topo-contrastive pretrain --epochs 1`` (in a child
process), and the epoch's seconds are reported beside the read.

Run::

    python benchmarks/bench_read_many.py --out benchmarks/results/bench_read_many  # ~3 min
    python benchmarks/bench_read_many.py --sizes 1000,10000 --baseline-max 1000     # quick
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topo_contrastive._utils.files import write_text  # noqa: E402

DEFAULT_SIZES = (1_000, 10_000, 100_000)


def write_triangles(path: Path, num: int, seed: int) -> None:
    """A many-complex file of ``num`` one-triangle complexes with random edge orientations."""
    rng = np.random.default_rng(seed)
    s = np.arange(num)[:, None]
    flip = rng.random((num, 3)) < 0.5  # edge (0,1), (1,2), (0,2) reversed
    tail = np.where(flip, [1, 2, 2], [0, 1, 0]) + 3 * s
    head = np.where(flip, [0, 1, 0], [1, 2, 2]) + 3 * s
    edge = np.broadcast_to(np.arange(3) + 3 * s, (num, 3))
    rows = np.stack([tail, head], axis=-1).reshape(-1)
    cols = np.repeat(edge.reshape(-1), 2)
    values = np.tile([-1, 1], 3 * num)
    signs = np.where(flip, -1, 1) * np.array([1, 1, -1])  # the boundary 0 -> 1 -> 2 -> 0
    np.savez_compressed(
        path,
        cell_counts=np.tile([3, 3, 1], (num, 1)),
        incidence_1_index=np.stack([rows, cols]),
        incidence_1_value=values.astype(np.int8),
        incidence_2_index=np.stack([edge.reshape(-1), np.repeat(np.arange(num), 3)]),
        incidence_2_value=signs.reshape(-1).astype(np.int8),
        x_1=rng.standard_normal(3 * num).astype(np.float32),
        y=np.arange(num) % 2,
    )


def read_one_by_one(path: Path) -> tuple[Any, dict[str, torch.Tensor]]:
    """The baseline: every sample built and checked alone, then collated by PyG."""
    from torch_geometric.data import InMemoryDataset

    from topo_contrastive import ComplexOperators
    from topo_contrastive.data import ComplexData

    with np.load(path) as f:
        a = dict(f)
    counts = a["cell_counts"]
    ends = [np.concatenate([[0], np.cumsum(counts[:, r])]) for r in range(3)]
    samples = []
    for s, (n0, n1, n2) in enumerate(counts.tolist()):
        mats = []
        for k, shape in ((1, (n0, n1)), (2, (n1, n2))):  # entries in column order (written so)
            index, value = a[f"incidence_{k}_index"], a[f"incidence_{k}_value"]
            lo, hi = np.searchsorted(index[1], ends[k][s : s + 2])
            local = (index[0, lo:hi] - ends[k - 1][s], index[1, lo:hi] - ends[k][s])
            mats.append(sp.csr_matrix((value[lo:hi].astype(np.float64), local), shape=shape))
        ops = ComplexOperators.from_incidence(mats[0], mats[1] if n2 else None)
        x = torch.from_numpy(a["x_1"][ends[1][s] : ends[1][s + 1]].copy()).view(-1, 1)
        samples.append(ComplexData.from_complex(ops, x_1=x, y=torch.tensor([int(a["y"][s])])))
    return InMemoryDataset.collate(samples)


def read_collated(path: Path) -> tuple[Any, dict[str, torch.Tensor]]:
    """The reader: the file's samples checked and collated (no processed file)."""
    from topo_contrastive.datasets._file import collated, read_file

    return collated(read_file(path))


def _median_time(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def loglog_slope(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of ``log(seconds)`` against ``log(sizes)``."""
    if len(sizes) < 2 or len(sizes) != len(seconds):
        raise ValueError(f"need at least two (size, seconds) pairs, got {len(sizes)}")
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def _same_storage(fast: Any, slow: tuple[Any, dict[str, torch.Tensor]]) -> bool:
    data, slices = slow
    got = fast._data
    same = [torch.equal(got[k], v) if torch.is_tensor(v) else got[k] == v for k, v in data.items()]
    return set(data.keys()) == set(got.keys()) and all(same) and all(
        torch.equal(fast.slices[k], v) for k, v in slices.items())


def pretrain_epoch(path: Path, seed: int) -> float:
    """Seconds of one ``pretrain --epochs 1`` epoch on ``path`` (a child process; the
    seconds the command reports for its training)."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-m", "topo_contrastive.cli", "pretrain", "--data-file", str(path),
             "--config", "SCL", "--epochs", "1", "--seed", str(seed), "--out", f"{out}/run",
             "--data-root", f"{out}/data", "--no-progress"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return float(re.search(r"1 epoch, ([0-9.]+) s", done.stdout + done.stderr)[1])


def report(rows: list[dict[str, Any]], settings: dict[str, Any]) -> str:
    """The Markdown table and slopes of ``rows`` (one per size)."""
    lines = [
        f"Reading a many-complex file of S one-triangle complexes (3 nodes, 3 edges, 1 "
        f"triangle each, random edge orientations), median of {settings['repeats']} reads, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads. Baseline: one sample at "
        "a time (from_incidence + ComplexData.from_complex per sample, then PyG's collate), in "
        "the same run; its storage is equal to the fast reader's.",
        "",
        "| S complexes | file MB | read s | EdgeFlows s | baseline s "
        "| baseline / read |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        base = "—" if r["baseline_s"] is None else f"{r['baseline_s']:.2f}"
        ratio = "—" if r["baseline_s"] is None else f"{r['baseline_s'] / r['read_s']:.0f}x"
        lines.append(f"| {r['complexes']:,} | {r['file_mb']:.2f} | {r['read_s']:.3f} | "
                     f"{r['dataset_s']:.3f} | {base} | {ratio} |")  # fmt: skip
    sizes = [r["complexes"] for r in rows]
    lines.append("")
    if len(rows) >= 2:
        slopes = [loglog_slope(sizes, [r[k] for r in rows]) for k in ("read_s", "dataset_s")]
        lines.append(f"Log-log slope of the time against S: read {slopes[0]:.3f}, "
                     f"EdgeFlows {slopes[1]:.3f} (target <= 1.1).")  # fmt: skip
    if settings.get("epoch_s") is not None:
        lines.append(
            f"One `pretrain --data-file` epoch (SCL, 1 epoch) on the {sizes[-1]:,}-complex "
            f"file: {settings['epoch_s']:.1f} s; its read ({rows[-1]['dataset_s']:.2f} s) is "
            f"{100 * rows[-1]['dataset_s'] / settings['epoch_s']:.1f} % of it."
        )
    return "\n".join(lines) + "\n"


def main(
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    repeats: int = 3,
    baseline_max: int = 10_000,
    seed: int = 0,
    epoch: bool = False,
    out: Path | None = None,
) -> list[dict[str, Any]]:
    """Measure every size, print the table, and write ``OUT.json`` / ``OUT.md``.

    Raises:
        ValueError: a size below 1 or a non-positive ``repeats``.
        AssertionError: the baseline's storage differs from the fast reader's.
    """
    from topo_contrastive.datasets import EdgeFlows

    if min(sizes) < 1 or repeats < 1:
        raise ValueError(f"sizes and repeats must be positive, got {sizes} and {repeats}")
    torch.manual_seed(seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for num in sizes:
            path = Path(tmp) / f"triangles_{num}.npz"
            write_triangles(path, num, seed)
            read_s, _ = _median_time(lambda path=path: read_collated(path), repeats)
            dataset_s, fast = _median_time(lambda path=path: EdgeFlows(
                f"{tmp}/ds", file=path, force_reload=True, log=False), repeats)  # fmt: skip
            baseline_s = None
            if num <= baseline_max:
                baseline_s, slow = _median_time(lambda path=path: read_one_by_one(path), 1)
                assert _same_storage(fast, slow), f"the readers disagree at {num} complexes"
            rows.append(dict(complexes=num, file_mb=path.stat().st_size / 1e6, read_s=read_s,
                             dataset_s=dataset_s, baseline_s=baseline_s))  # fmt: skip
            print(f"{num:>9,} complexes: read {read_s:.3f} s, dataset {dataset_s:.3f} s, "
                  f"baseline {baseline_s if baseline_s is None else round(baseline_s, 2)} s",
                  flush=True)  # fmt: skip
        epoch_s = pretrain_epoch(path, seed) if epoch else None
    settings = dict(sizes=list(sizes), repeats=repeats, baseline_max=baseline_max, seed=seed,
                    epoch_s=epoch_s)  # fmt: skip
    text = report(rows, settings)
    print(text, end="")
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out.with_suffix(".json"), json.dumps({"settings": settings, "rows": rows},
                                                        indent=1) + "\n")  # fmt: skip
        write_text(out.with_suffix(".md"), text)
    return rows


def _sizes(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(float(v)) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated counts, got {text!r}") from exc


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=_sizes, default=DEFAULT_SIZES,
                   help="comma-separated numbers of complexes (default 1e3,1e4,1e5)")
    p.add_argument("--repeats", type=int, default=3, help="timed reads per size (default 3)")
    p.add_argument("--baseline-max", type=int, default=10_000,
                   help="time the one-sample-at-a-time baseline up to this size (default 1e4; "
                   "about 1 ms per complex)")
    p.add_argument("--seed", type=int, default=0, help="seed of orientations and flows (default 0)")
    p.add_argument("--pretrain-epoch", action="store_true",
                   help="also time one `pretrain --data-file` epoch on the largest file")
    p.add_argument("--out", type=Path, default=None,
                   help="write OUT.json and OUT.md (e.g. benchmarks/results/bench_read_many)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(sizes=a.sizes, repeats=a.repeats, baseline_max=a.baseline_max, seed=a.seed,
         epoch=a.pretrain_epoch, out=a.out)
