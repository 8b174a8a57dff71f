"""Benchmark: the weighted :class:`~topo_contrastive.HodgeDecomposition` (``"iterative"``
backend) against the unweighted one on the same complex.

Networks:

- pytspl's chicago-regional TNTP network (11,189 junctions, 18,830 roads, its 3-cliques
  filled), read from the installed package's data files (``experiments/studies/reuse/
  road_trips.py``); the metric is ``with_weights("resistance", edge=lengths)`` with each
  road's length from its junctions' coordinates. Without pytspl's files: a synthetic
  Delaunay network of as many edges (said in the report).
- a synthetic Delaunay network of about ``--large-edges`` edges (uniform random points in the
  unit square, a share ``--filled`` of the triangles filled, the rest holes like a road
  network's blocks), Euclidean lengths: the set-up only.

Each run is a fresh process that builds the complex (untimed), then times the set-up
(``with_weights``, which copies the complex without its cached operators, with the lengths or
without weights, and the constructor, which builds the Laplacians it factorises) and the
decomposition of ``--num-flows`` random flows (each stage the median of ``--inner`` calls on
chicago-regional), and reads its peak resident set (``VmHWM``, reset before each stage): the
memory of a stage is its first call's peak minus the resident set at its start. Weighted and
unweighted runs alternate (which comes first alternates too), so the machine's load affects
both alike; the medians over ``--repeats`` runs and the ratios weighted / unweighted are
reported (target: 1.5x). Each weighted run also checks its parts (untimed): they sum to the
flows and are orthogonal in ``W1``.

Usage::

    nice -n 10 python benchmarks/bench_weighted_hodge.py \
        --out benchmarks/results/bench_weighted_hodge
    python benchmarks/bench_weighted_hodge.py --repeats 1 --large-edges 0  # quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._complexes import delaunay_simplices  # noqa: E402
from benchmarks.bench_hodge import (  # noqa: E402
    _peak_rss_gib,
    _reset_peak_rss,
    _status_gib,
    _write_atomic,
)

TARGET_RATIO = 1.5
CHICAGO_EDGES = 18_830
STAGES = ("setup_s", "decompose_s", "setup_mib", "decompose_mib")


def delaunay_network(num_edges: int, filled: float, seed: int) -> dict[str, np.ndarray]:
    """A Delaunay network of about ``num_edges`` edges (``_complexes.delaunay_simplices``)
    with Euclidean lengths and a share ``filled`` of its triangles as 2-cells."""
    rng = np.random.default_rng(seed)  # the points delaunay_simplices draws from this seed
    pts = rng.random((int(num_edges / 2.95) + 3, 2))
    edges, tri, num_nodes = delaunay_simplices(len(pts), seed=seed)
    return {"edges": edges, "triangles": tri[rng.random(len(tri)) < filled],
            "num_nodes": np.int64(num_nodes),
            "lengths": np.linalg.norm(pts[edges[:, 0]] - pts[edges[:, 1]], axis=1)}  # fmt: skip


def chicago_regional(seed: int) -> tuple[dict[str, np.ndarray], str]:
    """chicago-regional's junction complex and road lengths, or (without pytspl's data
    files) a synthetic Delaunay network of as many edges; with the network's description."""
    from experiments.studies.reuse.road_trips import build_complex, find_network, load_tntp

    try:
        cx = build_complex(load_tntp(find_network("chicago-regional"), "chicago-regional"))
    except (ModuleNotFoundError, FileNotFoundError) as err:
        print(f"chicago-regional unavailable ({err}): a synthetic network", file=sys.stderr)
        return delaunay_network(CHICAGO_EDGES, 0.05, seed), "synthetic Delaunay (no pytspl)"
    e, pos = cx["edges"], cx["pos"]
    return {"edges": e, "triangles": cx["triangles"], "num_nodes": np.int64(len(pos)),
            "lengths": np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1)
            }, "chicago-regional (pytspl), road lengths from coordinates"  # fmt: skip


def worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """One run in its own process: build, set up, decompose; times and peak memory."""
    import torch

    from topo_contrastive import ComplexOperators, HodgeDecomposition

    small = delaunay_network(300, 0.1, 0)  # warm-up (untimed): libraries loaded, caches hot
    warm = ComplexOperators.from_simplices(small["edges"], small["triangles"])
    for ops in (warm, warm.with_weights("resistance", edge=small["lengths"])):
        HodgeDecomposition(ops, backend="iterative")(torch.randn(2, ops.num_edges))
    net = np.load(cfg["file"])
    ops = ComplexOperators.from_simplices(net["edges"], net["triangles"], int(net["num_nodes"]))
    x = torch.randn(cfg["num_flows"], ops.num_edges, dtype=getattr(torch, cfg["dtype"]),
                    generator=torch.Generator().manual_seed(cfg["seed"]))  # fmt: skip
    out: dict[str, Any] = {"weighted": cfg["weighted"], "load_avg_1min": os.getloadavg()[0],
                           "num_edges": ops.num_edges, "num_faces": ops.num_faces}  # fmt: skip

    def setup() -> HodgeDecomposition:  # a copy of the complex without cached operators
        metric = ops.with_weights("resistance" if cfg["weighted"] else None,
                                  edge=net["lengths"] if cfg["weighted"] else None)  # fmt: skip
        return HodgeDecomposition(metric, backend="iterative")

    hodge, out["setup_s"], out["setup_mib"] = _stage(setup, cfg["inner"])
    out["dims"] = hodge.dims
    if cfg["num_flows"]:
        parts, out["decompose_s"], out["decompose_mib"] = _stage(lambda: hodge(x), cfg["inner"])
        w = torch.from_numpy(net["lengths"] if cfg["weighted"] else np.ones(ops.num_edges))
        g, c, h = (p[:4].double() for p in parts)
        x4 = x[:4].double()
        norm2 = (x4 * w * x4).sum(1)
        out["sum_residual"] = float((g + c + h - x4).abs().max() / x4.abs().max())
        out["orthogonality_w1"] = max(float(((a * w * b).sum(1).abs() / norm2).max())
                                      for a, b in ((g, c), (g, h), (c, h)))  # fmt: skip
    return out


def _stage(fn: Any, inner: int) -> tuple[Any, float, float]:
    """``fn()``'s result, its median time over ``inner`` calls, and the memory (MiB) of the
    first call: its peak resident set minus the resident set before it."""
    _reset_peak_rss()
    rss, times = _status_gib("VmRSS"), []
    for i in range(inner):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if i == 0:
            mib = (_peak_rss_gib() - rss) * 1024
    return result, statistics.median(times), mib


def _run_worker(cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    """:func:`worker` in a fresh process (its own peak resident set)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_worker", json.dumps(cfg)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              cwd=str(ROOT), check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"weighted": cfg["weighted"], "error": f"timeout {timeout:g} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return {"weighted": cfg["weighted"], "error": " | ".join(proc.stderr.splitlines()[-3:])}
    return json.loads(lines[-1])


def compare(name: str, arrays: dict[str, np.ndarray], repeats: int, cfg: dict[str, Any],
            folder: Path, timeout: float) -> dict[str, Any]:  # fmt: skip
    """Interleaved weighted / unweighted runs on one network; medians and ratios."""
    from tqdm import tqdm

    file = folder / f"{name}.npz"
    np.savez(file, **arrays)
    runs: list[dict[str, Any]] = []
    for r in tqdm(range(repeats), desc=name, file=sys.stderr):
        for weighted in ((False, True) if r % 2 == 0 else (True, False)):
            runs.append(_run_worker({**cfg, "file": str(file), "weighted": weighted}, timeout))
    failed = [r["error"] for r in runs if "error" in r]
    if failed:
        raise RuntimeError(f"{name}: {failed[0]}")
    median = {m: {k: statistics.median(r[k] for r in runs if r["weighted"] == w)
                  for k in STAGES if k in runs[0]}
              for m, w in (("unweighted", False), ("weighted", True))}  # fmt: skip
    ratio = {k: median["weighted"][k] / median["unweighted"][k] for k in median["weighted"]}
    return {"network": name, "num_edges": runs[0]["num_edges"], "num_faces":
            runs[0]["num_faces"], "dims": runs[0]["dims"], "repeats": repeats,
            "median": median, "ratio": ratio, "runs": runs}  # fmt: skip


def main(repeats: int = 5, inner: int = 5, num_flows: int = 64, dtype: str = "float32",
         large_edges: int = 1_000_000, large_repeats: int = 3, filled: float = 0.1,
         seed: int = 0, timeout: float = 900.0, out: Path | None = None) -> dict[str, Any]:
    """Compare both metrics on chicago-regional (set-up and decomposition) and on a large
    Delaunay network (set-up); print the report, write ``out``'s ``.json`` and ``.md``."""
    arrays, described = chicago_regional(seed)
    cfg = {"num_flows": num_flows, "dtype": dtype, "seed": seed, "inner": inner}
    with tempfile.TemporaryDirectory(prefix="weighted_hodge_") as tmp:
        results = [compare("chicago-regional", arrays, repeats, cfg, Path(tmp), timeout)]
        results[0]["description"] = described
        if large_edges:
            big = delaunay_network(large_edges, filled, seed)
            large = {**cfg, "num_flows": 0, "inner": 1}
            results.append(compare(f"delaunay-{large_edges}", big, large_repeats, large,
                                   Path(tmp), timeout))  # fmt: skip
            results[1]["description"] = f"synthetic Delaunay, {filled:g} of the triangles filled"
    report = {"settings": {"repeats": repeats, "inner": inner, "num_flows": num_flows,
                           "dtype": dtype, "large_edges": large_edges,
                           "large_repeats": large_repeats, "filled": filled, "seed": seed,
                           "cpus": os.cpu_count()},
              "results": results}  # fmt: skip
    text = markdown(report)
    print(text)
    if out is not None:
        _write_atomic(out.with_suffix(".json"), json.dumps(report, indent=1))
        _write_atomic(out.with_suffix(".md"), text)
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one table per network, medians and ratios."""
    s = report["settings"]
    lines = [
        "Weighted (`with_weights(\"resistance\", edge=lengths)`) against unweighted "
        "`HodgeDecomposition(backend=\"iterative\")`: medians over fresh processes (each the "
        f"median of {s['inner']} calls per stage on chicago-regional, one on the large "
        "network), weighted and unweighted runs interleaved; the memory of a stage is that of its "
        f"first call; {s['num_flows']} random {s['dtype']} flows decomposed; "
        "memory = a stage's peak resident set (VmHWM) minus the resident set at its start; "
        f"{s['cpus']} CPU cores shared with other work (1-min load average per network "
        f"below). Target: weighted within {TARGET_RATIO:g}x of unweighted.", ""]  # fmt: skip
    for r in report["results"]:
        loads = [run["load_avg_1min"] for run in r["runs"]]
        lines += [
            f"**{r['network']}** ({r['description']}; {r['num_edges']:,} edges, "
            f"{r['num_faces']:,} 2-cells, dims {r['dims']}; {r['repeats']} repeats; load "
            f"{min(loads):.1f}-{max(loads):.1f}):", "",
            "| metric | " + " | ".join(_HEAD[k] for k in r["ratio"]) + " |",
            "|---|" + "---|" * len(r["ratio"]),
        ]  # fmt: skip
        for m in ("unweighted", "weighted"):
            lines.append(f"| {m} | " + " | ".join(f"{r['median'][m][k]:.3g}" for k in r["ratio"])
                         + " |")  # fmt: skip
        ok = all(v <= TARGET_RATIO for v in r["ratio"].values())
        lines.append("| **ratio** | " + " | ".join(f"**{v:.2f}x**" for v in r["ratio"].values())
                     + " |")  # fmt: skip
        checks = [run for run in r["runs"] if run["weighted"] and "sum_residual" in run]
        lines += ["", f"Within {TARGET_RATIO:g}x: {'yes' if ok else 'NO'}."
                  + (f" Weighted parts ({s['dtype']} flows): sum residual "
                     f"{max(c['sum_residual'] for c in checks):.0e}"
                     f", W1-orthogonality {max(c['orthogonality_w1'] for c in checks):.0e}."
                     if checks else ""), ""]  # fmt: skip
    return "\n".join(lines)


_HEAD = {"setup_s": "set-up s", "decompose_s": "decompose s", "setup_mib": "set-up MiB",
         "decompose_mib": "decompose MiB"}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5,
                   help="runs per metric on chicago-regional (default: %(default)s)")
    p.add_argument("--inner", type=int, default=5,
                   help="timed calls of each stage per chicago-regional run, their median "
                   "taken (memory: the first call's) (default: %(default)s)")
    p.add_argument("--num-flows", type=int, default=64,
                   help="random flows decomposed per run (default: %(default)s)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                   help="dtype of the flows (default: %(default)s)")
    p.add_argument("--large-edges", type=int, default=1_000_000,
                   help="edges of the large Delaunay network, set-up only; 0 skips it "
                   "(default: %(default)s)")
    p.add_argument("--large-repeats", type=int, default=3,
                   help="runs per metric on the large network (default: %(default)s)")
    p.add_argument("--filled", type=float, default=0.1,
                   help="share of the large network's triangles filled (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the flows and the synthetic network (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds per run (default: %(default)s)")
    p.add_argument("--out", type=Path, default=None,
                   help="write the report to OUT.json and OUT.md (default: print only)")
    p.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    if args._worker is not None:
        print(json.dumps(worker(json.loads(args._worker))), flush=True)
    else:
        main(args.repeats, args.inner, args.num_flows, args.dtype, args.large_edges,
             args.large_repeats, args.filled, args.seed, args.timeout, args.out)
