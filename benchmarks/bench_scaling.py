"""Benchmark: how one SCNN training step scales with the complex, from 1k to 1M edges.

Complexes: Delaunay triangulations of uniform random points in the unit square with the
trajectory task's two square holes (``benchmarks/_complexes.py``), at ``--edges`` sizes
(default 1k, 4k, 16k, 64k, 256k, 1M: six sizes, a factor 4 apart). The batch ``B``, the
width ``C``, the depth and ``K_down = K_up`` are fixed across sizes (default 8 flows, 32
channels, 2 layers, K = 2, tanh, bias, mean readout, float32), so that a step's work is
linear in the number of edges ``N1`` and in the non-zeros of ``L_down`` and ``L_up``.

Per size, in a fresh process (``spawn``), so that one size's caches and peak memory do
not leak into the next: the complex and its operators are built (timed as set-up), one
warm-up step prepares the kernel's operators, then ``--repeats`` steps (forward, a scalar
loss ``sum h^2``, backward) are timed; the median is reported. Peak memory is the step's
peak above the memory held before it: on the CPU the peak resident set (``VmHWM`` reset
through ``/proc/self/clear_refs``), on a GPU ``torch.cuda.max_memory_allocated``.

Reported: step seconds, step time per edge, GFLOP/s of the step's useful work (as
``bench_scnn.py`` counts it), peak memory and peak bytes per edge, and the least-squares
log-log slope of step time against ``N1`` over all sizes and over the sizes from 16k edges
on (below that the step is overhead-bound). A slope of 1 is linear scaling; a dense
``N1 x N1`` object anywhere on the path would show as a slope near 2 and as peak bytes per
edge that grow with ``N1`` (and would not fit at all at 1M edges: 4 TB in float32).

Run::

    python benchmarks/bench_scaling.py --out benchmarks/results/bench_scaling   # ~6 min
    python benchmarks/bench_scaling.py --edges 1000,4000,16000 --repeats 2       # quick
    python benchmarks/bench_scaling.py --device cuda                             # on a GPU
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._complexes import delaunay_complex  # noqa: E402
from benchmarks.bench_masks import _reset_peak as reset_peak  # noqa: E402
from benchmarks.protocol_flops import encoder_flops  # noqa: E402
from topo_contrastive._utils.files import write_text  # noqa: E402
from topo_contrastive.nn import SCNN  # noqa: E402

DEFAULT_EDGES = (1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000)


def step_flops(n1: int, nnz: int, batch: int, hidden: int, layers: int, k: int) -> float:
    """Useful FLOPs of one training step: ``batch`` samples of
    :func:`benchmarks.protocol_flops.encoder_flops` (``1 + 2K`` filter terms; ``nnz`` is
    ``K * (nnz(L_down) + nnz(L_up))``, the non-zeros touched per column by one pass over both
    sides), the count of ``bench_scnn.step_flops``."""
    return batch * encoder_flops(layers, n1, 2 * k, True, hidden=hidden, nnz=nnz)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _rss_kib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _hwm_kib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def measure(
    num_edges: int,
    batch: int,
    hidden: int,
    layers: int,
    k: int,
    repeats: int,
    device: str,
    threads: int,
    seed: int,
) -> dict[str, Any]:
    """Build one complex and time ``repeats`` training steps on it (see the module docstring).

    Returns:
        A dict: ``edges``, ``nnz`` (``nnz(L_down) + nnz(L_up)``), ``setup_s``, ``step_s``
        (median), ``steps_s`` (all), ``gflops`` (per step), ``peak_mib`` (``None`` where the
        platform cannot reset the peak) and ``device``.
    """
    warnings.filterwarnings("ignore")
    if threads:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    t0 = time.perf_counter()
    ops = delaunay_complex(num_edges, seed=seed)
    laplacians = ops.laplacians(device=dev)
    setup = time.perf_counter() - t0
    n1 = ops.num_edges
    nnz = int(laplacians.down._nnz() + laplacians.up._nnz())
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n1, 1, generator=gen).to(dev)  # [B, N1, 1]
    torch.manual_seed(seed)
    model = SCNN(1, hidden, layers, k, k, act="tanh", bias=True).to(dev)

    def one_step() -> float:
        model.zero_grad(set_to_none=True)
        _sync(dev)
        start = time.perf_counter()
        h = model(x, laplacians)  # [B, C]
        h.pow(2).sum().backward()
        _sync(dev)
        return time.perf_counter() - start

    one_step()  # warm-up: the kernel prepares its operators
    peak = None
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
        before = torch.cuda.memory_allocated(dev)
        times = [one_step() for _ in range(repeats)]
        peak = (torch.cuda.max_memory_allocated(dev) - before) / 2**20
    elif reset_peak():  # VmHWM reset to the current resident set
        before = _rss_kib()
        times = [one_step() for _ in range(repeats)]
        peak = (_hwm_kib() - before) / 1024
    else:
        times = [one_step() for _ in range(repeats)]
    step = statistics.median(times)
    return {
        "edges": n1,
        "nnz": nnz,
        "setup_s": setup,
        "step_s": step,
        "steps_s": times,
        "gflops": step_flops(n1, k * nnz, batch, hidden, layers, k) / 1e9,
        "peak_mib": peak,
        "device": str(dev),
    }


def _child(kwargs: dict[str, Any], queue: Any) -> None:
    try:
        queue.put(measure(**kwargs))
    except Exception as exc:  # reported by the parent, with the size that failed
        queue.put({"error": f"{type(exc).__name__}: {exc}"})


def measure_in_child(**kwargs: Any) -> dict[str, Any]:
    """:func:`measure` in a fresh ``spawn`` process (its own caches and peak memory)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kwargs, queue))
    proc.start()
    result = queue.get()
    proc.join()
    if "error" in result:
        raise RuntimeError(f"{kwargs['num_edges']} edges: {result['error']}")
    return result


def loglog_slope(edges: list[int], seconds: list[float]) -> float:
    """Least-squares slope of ``log(seconds)`` against ``log(edges)`` (1: linear scaling).

    Raises:
        ValueError: fewer than two sizes, or sizes and times of different lengths.
    """
    if len(edges) != len(seconds) or len(edges) < 2:
        raise ValueError(
            f"need at least two (edges, seconds) pairs of equal length, got {len(edges)} "
            f"edges and {len(seconds)} times"
        )
    return float(np.polyfit(np.log(edges), np.log(seconds), 1)[0])


def report(rows: list[dict[str, Any]], settings: dict[str, Any]) -> str:
    """The Markdown table and slopes of ``rows`` (one per size)."""
    lines = [
        f"One SCNN training step (forward + backward) per complex size: batch "
        f"{settings['batch']}, width {settings['hidden']}, {settings['layers']} layers, "
        f"K_down = K_up = {settings['k']}, tanh, bias, mean readout, float32, "
        f"{settings['device']}, {settings['threads'] or 'default'} threads, torch "
        f"{torch.__version__}. Median of {settings['repeats']} steps after one warm-up, each "
        "size in a fresh process.",
        "",
        "| edges | nnz(L_down)+nnz(L_up) | set-up s | step s | ns per edge | GFLOP/s "
        "| peak MiB | peak bytes per edge |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        peak = "n/a" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"
        per_edge = "n/a" if r["peak_mib"] is None else f"{r['peak_mib'] * 2**20 / r['edges']:.0f}"
        lines.append(
            f"| {r['edges']:,} | {r['nnz']:,} | {r['setup_s']:.2f} | {r['step_s']:.4f} | "
            f"{r['step_s'] / r['edges'] * 1e9:.1f} | {r['gflops'] / r['step_s']:.1f} | "
            f"{peak} | {per_edge} |"
        )
    edges = [r["edges"] for r in rows]
    times = [r["step_s"] for r in rows]
    lines.append("")
    if len(rows) >= 2:
        lines.append(
            f"Log-log slope of step time against edges: {loglog_slope(edges, times):.3f} over "
            f"all {len(rows)} sizes"
        )
        big = [(e, t) for e, t in zip(edges, times, strict=True) if e >= 16_000]
        if len(big) >= 2:
            lines[-1] += (
                f", {loglog_slope(*map(list, zip(*big, strict=True))):.3f} from 16k edges on"
            )
        lines[-1] += " (target <= 1.15)."
    return "\n".join(lines) + "\n"


def main(
    edges: tuple[int, ...] = DEFAULT_EDGES,
    batch: int = 8,
    hidden: int = 32,
    layers: int = 2,
    k: int = 2,
    repeats: int = 3,
    device: str = "cpu",
    threads: int = 0,
    seed: int = 0,
    out: Path | None = None,
) -> list[dict[str, Any]]:
    """Measure every size, print the table, and write ``OUT.json`` / ``OUT.md``.

    Raises:
        ValueError: a size below 3 edges, or a non-positive batch, width, depth, K or repeats.
    """
    for name, value in (("batch", batch), ("hidden", hidden), ("layers", layers), ("k", k),
                        ("repeats", repeats)):
        if value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value}")
    if min(edges) < 3:
        raise ValueError(f"edges: every size must be at least 3, got {min(edges)}")
    settings = dict(batch=batch, hidden=hidden, layers=layers, k=k, repeats=repeats,
                    device=device, threads=threads, seed=seed)  # fmt: skip
    rows = []
    for n in edges:
        row = measure_in_child(num_edges=n, **settings)
        rows.append(row)
        print(
            f"{row['edges']:>9,} edges: step {row['step_s']:.4f} s, set-up {row['setup_s']:.1f} s,"
            f" peak {row['peak_mib'] if row['peak_mib'] is None else round(row['peak_mib'], 1)}"
            " MiB",
            flush=True,
        )
    text = report(rows, settings)
    print(text, end="")
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out.with_suffix(".json"), json.dumps({"settings": settings, "rows": rows},
                                                        indent=1) + "\n")
        write_text(out.with_suffix(".md"), text)
    return rows


def _sizes(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(float(v)) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated edge counts, got {text!r}"
        ) from exc


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edges", type=_sizes, default=DEFAULT_EDGES,
                   help="comma-separated edge counts (default 1e3,4e3,16e3,64e3,256e3,1e6)")
    p.add_argument("--batch", type=int, default=8, help="flows per step (default 8)")
    p.add_argument("--hidden", type=int, default=32, help="channels per layer (default 32)")
    p.add_argument("--layers", type=int, default=2, help="SCNN layers (default 2)")
    p.add_argument("--k", type=int, default=2, help="K_down = K_up (default 2)")
    p.add_argument("--repeats", type=int, default=3, help="timed steps per size (default 3)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--threads", type=int, default=0,
                   help="torch CPU threads (default 0: PyTorch's default)")
    p.add_argument("--seed", type=int, default=0, help="seed of points, flows, weights")
    p.add_argument("--out", type=Path, default=None,
                   help="write OUT.json and OUT.md (e.g. benchmarks/results/bench_scaling)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(edges=a.edges, batch=a.batch, hidden=a.hidden, layers=a.layers, k=a.k,
         repeats=a.repeats, device=a.device, threads=a.threads, seed=a.seed, out=a.out)
