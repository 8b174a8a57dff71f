"""Benchmark of :class:`~topo_contrastive.hodge.HodgeDecomposition`: exact vs iterative backend.

For Delaunay complexes of increasing size (random points in the unit square with the two
square holes of the trajectory complex, so ``beta_1 = 2``), every configuration runs in a
fresh subprocess, which builds the complex, sets up the decomposition, decomposes
``--num-flows`` random edge flows and computes the projector blocks ``P_k[S, S]`` of
``--num-paths`` random paths of 10-20 edges. Peak memory is the subprocess's own peak
resident set size, ``VmHWM`` of ``/proc/self/status``; it is reset (``/proc/self/clear_refs``)
after building the complex, so the table shows the peak of set-up + decomposition (flows and
parts included) and the peak of the whole run.

Afterwards (untimed) each run checks its result: the parts sum to the input, are mutually
orthogonal and lie in their subspaces (float64 re-run of 4 flows), and, where the exact
backend runs, the iterative backend agrees with it. The Markdown table goes to stdout,
the raw numbers optionally to a JSON file.

On a busy machine, multi-threaded OpenBLAS spins badly (the exact backend's ``eigh``
slowed down tenfold in our runs); ``--blas-threads 1`` avoids that.

Usage::

    python benchmarks/bench_hodge.py --blas-threads 1  # full run, about 5 minutes on 2 cores
    python benchmarks/bench_hodge.py --quick         # small sizes only, seconds
    python benchmarks/bench_hodge.py --sizes 1000,1000000 --json results.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_SIZES = (100, 300, 1_000, 3_000, 10_000, 100_000, 300_000, 1_000_000)
QUICK_SIZES = (100, 300, 1_000, 3_000, 10_000)


def _status_gib(field: str) -> float:
    """The memory figure ``field`` of ``/proc/self/status`` (``VmHWM``: the peak resident
    set, ``VmRSS``: the current one) of this process in GiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 2**20
    return float("nan")  # pragma: no cover - non-Linux


def _peak_rss_gib() -> float:
    """Peak resident set size (``VmHWM``) of this process in GiB."""
    return _status_gib("VmHWM")


def _reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:  # pragma: no cover - depends on the kernel
        return False


def _check_parts(x: Any, parts: Any, chunk: int = 8) -> dict[str, float]:
    """Relative residuals of the sum and of the pairwise inner products of the parts.

    Computed in float64, a few flows at a time (bounded memory).
    """
    sum_res, ortho = 0.0, 0.0
    scale = float(x.abs().max())
    for lo in range(0, x.shape[0], chunk):
        x64 = x[lo : lo + chunk].double()
        g, c, h = (p[lo : lo + chunk].double() for p in parts)
        sum_res = max(sum_res, float((g + c + h - x64).abs().max()) / scale)
        norm2 = (x64 * x64).sum(1)  # [b]
        for a, b in ((g, c), (g, h), (c, h)):
            ortho = max(ortho, float(((a * b).sum(1).abs() / norm2).max()))
    return {"sum_residual": sum_res, "orthogonality": ortho}


def _warm_up() -> None:
    """Load the linear-algebra libraries once (untimed), so rows time steady-state work."""
    import torch

    from benchmarks._complexes import delaunay_complex
    from topo_contrastive.hodge import HodgeDecomposition

    ops = delaunay_complex(60)
    for backend in ("exact", "iterative"):
        hodge = HodgeDecomposition(ops, backend=backend)
        hodge(torch.randn(3, ops.num_edges))
        hodge.projector_blocks([[0, 1, 2]])


def worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration (in its own process) and return its measurements."""
    import numpy as np
    import torch

    from benchmarks._complexes import TRAJECTORY_HOLES, delaunay_complex, random_path_supports
    from topo_contrastive.hodge import COMPONENTS, HodgeDecomposition

    torch.manual_seed(cfg["seed"])
    holes = TRAJECTORY_HOLES if cfg["holes"] else ()
    dtype = getattr(torch, cfg["dtype"])
    out: dict[str, Any] = {"size": cfg["size"], "backend": cfg["backend"], "dtype": cfg["dtype"]}
    out["load_avg_1min"] = os.getloadavg()[0]  # other processes on the machine
    limits = None
    if cfg.get("blas_threads"):
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=cfg["blas_threads"], user_api="blas")
    _warm_up()

    t0 = time.perf_counter()
    ops = delaunay_complex(cfg["size"], holes=holes, seed=cfg["seed"])
    out["build_s"] = time.perf_counter() - t0
    out.update(num_nodes=ops.num_nodes, num_edges=ops.num_edges, num_triangles=ops.num_triangles)
    out["peak_build_gib"] = _peak_rss_gib()
    out["peak_reset"] = _reset_peak_rss()

    gen = torch.Generator().manual_seed(cfg["seed"])
    x = torch.randn(cfg["num_flows"], ops.num_edges, generator=gen, dtype=dtype)
    t0 = time.perf_counter()
    hodge = HodgeDecomposition(ops, backend=cfg["backend"])
    out["setup_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    parts = hodge(x)
    out["decompose_s"] = time.perf_counter() - t0
    out["peak_gib"] = _peak_rss_gib()  # set-up + decomposition, flows and parts included
    out["peak_total_gib"] = max(out["peak_gib"], out["peak_build_gib"])
    out["dims"] = hodge.dims
    out.update(_check_parts(x, parts))  # untimed
    del parts

    supports = random_path_supports(ops, cfg["num_paths"], 10, 20, seed=cfg["seed"])
    _reset_peak_rss()
    t0 = time.perf_counter()
    blocks = hodge.projector_blocks(supports)
    out["blocks_s"] = time.perf_counter() - t0
    out["peak_blocks_gib"] = _peak_rss_gib()
    out["touched_nodes"] = int(np.unique(np.concatenate([ops.edges[s] for s in supports])).size)

    # ---- checks (untimed) ----
    x64 = x[:4].double()
    p64 = hodge(x64)
    chk = _check_parts(x64, p64)
    out["sum_residual_f64"], out["orthogonality_f64"] = chk["sum_residual"], chk["orthogonality"]
    g, c, h = (p.numpy().T for p in p64)
    scale = float(x64.abs().max())
    out["subspace_residual_f64"] = max(
        float(np.abs(ops.B2.T @ g).max(initial=0.0)),  # gradients are curl-free
        float(np.abs(ops.B1 @ c).max(initial=0.0)),  # curls are divergence-free
        float(np.abs(ops.B1 @ h).max(initial=0.0)),  # harmonic: both
        float(np.abs(ops.B2.T @ h).max(initial=0.0)),
    ) / scale
    blocks_ok = 0.0
    for i, s in enumerate(supports):
        total = sum(blocks[k][i] for k in COMPONENTS) - torch.eye(len(s), dtype=torch.float64)
        blocks_ok = max(blocks_ok, float(total.abs().max()) if len(s) else 0.0)
    out["blocks_identity_residual"] = blocks_ok
    if cfg["backend"] == "exact":
        other = HodgeDecomposition(ops, backend="iterative")
        q64 = other(x64)
        out["max_rel_diff_vs_iterative"] = max(
            float(((a - b).norm(dim=1) / x64.norm(dim=1)).max())
            for a, b in zip(p64, q64, strict=True)
        )
        ob = other.projector_blocks(supports)
        out["blocks_max_diff_vs_iterative"] = max(
            float((p - q).abs().max()) for k in COMPONENTS for p, q in zip(blocks[k], ob[k],
                                                                          strict=True)
            if p.numel()
        )
    elif cfg["simple_blocks_paths"]:
        # the per-node solve path on a subset of the paths, for comparison with the fast path
        import topo_contrastive.hodge._linalg as blocks_module

        sub = supports[: cfg["simple_blocks_paths"]]
        nodes = int(np.unique(np.concatenate([ops.edges[s] for s in sub])).size)
        saved = blocks_module._BLOCKS_METHOD
        blocks_module._BLOCKS_METHOD = "solves"
        try:
            t0 = time.perf_counter()
            simple = hodge.projector_blocks(sub)
            dt = time.perf_counter() - t0
        finally:
            blocks_module._BLOCKS_METHOD = saved
        out["simple_blocks_paths"] = len(sub)
        out["simple_blocks_nodes"] = nodes
        out["simple_blocks_s"] = dt
        out["simple_blocks_est_s"] = dt / max(nodes, 1) * out["touched_nodes"]
        out["blocks_max_diff_simple_vs_fast"] = max(
            float((p - q).abs().max()) for k in COMPONENTS
            for p, q in zip(simple[k], blocks[k][: len(sub)], strict=True) if p.numel()
        )
    if limits is not None:
        limits.restore_original_limits()
    return out


def _run_worker(cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_worker", json.dumps(cfg)]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT), check=False
        )
    except subprocess.TimeoutExpired:
        return {"size": cfg["size"], "backend": cfg["backend"], "error": f"timeout {timeout}s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"size": cfg["size"], "backend": cfg["backend"], "error": " | ".join(tail)}
    return json.loads(lines[-1])


def _fmt(v: float | None, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.{digits}f}"


def crossover(results: list[dict[str, Any]]) -> str:
    """Smallest measured size from which the iterative backend (set-up + decompose) is faster.

    Between the last size where the exact backend wins and the first where the iterative one
    does, the crossing is interpolated on a log-log scale.
    """
    t = {}
    for r in results:
        if "error" not in r:
            t[(r["size"], r["backend"])] = (r["setup_s"] + r["decompose_s"], r["num_edges"])
    sizes = sorted({s for s, b in t if b == "exact" and (s, "iterative") in t})
    if not sizes:
        return "no size was run with both backends"
    faster = [t[(s, "iterative")][0] < t[(s, "exact")][0] for s in sizes]
    if not any(faster):
        return f"exact backend faster at every size run with both (up to {sizes[-1]} edges)"
    i = faster.index(True)
    if not all(faster[i:]):
        return "no clean crossover: " + ", ".join(
            f"{s}: {'iterative' if f else 'exact'}" for s, f in zip(sizes, faster, strict=True)
        )
    if i == 0:
        return f"iterative backend faster at every size run with both (from {sizes[0]} edges)"
    lo, hi = sizes[i - 1], sizes[i]
    (e_lo, n_lo), (e_hi, n_hi) = t[(lo, "exact")], t[(hi, "exact")]
    i_lo, i_hi = t[(lo, "iterative")][0], t[(hi, "iterative")][0]
    # log(ratio exact/iterative) is linear in log(N1): find its zero
    r_lo, r_hi = math.log(e_lo / i_lo), math.log(e_hi / i_hi)
    frac = r_lo / (r_lo - r_hi) if r_lo != r_hi else 0.5
    n_cross = math.exp(math.log(n_lo) + frac * (math.log(n_hi) - math.log(n_lo)))
    return (
        f"iterative faster from about {n_cross:,.0f} edges (exact faster at {n_lo:,}, "
        f"iterative faster at {n_hi:,}; set-up + decompose)"
    )


def markdown_table(results: list[dict[str, Any]]) -> str:
    """The results as a Markdown table (one row per size and backend)."""
    exact_time = {
        r["size"]: r["setup_s"] + r["decompose_s"]
        for r in results
        if r.get("backend") == "exact" and "error" not in r
    }
    head = (
        "| edges | triangles | backend | build s | set-up s | decompose s | set-up + decompose s "
        "| total incl. build s | speed-up vs exact "
        "| peak RSS GiB (set-up + decompose / incl. build) "
        "| projector blocks s (peak RSS GiB) | check: sum / orthogonality (float64) "
        "| max rel. diff exact vs iterative |"
    )
    rows = [head, "|" + "---|" * 13]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['size']:,} | | {r['backend']} | error: {r['error']} |" + " |" * 9)
            continue
        st = r["setup_s"] + r["decompose_s"]
        ratio = exact_time.get(r["size"])
        speed = f"{ratio / st:.2f}x" if ratio is not None else "—"
        diff = r.get("max_rel_diff_vs_iterative")
        rows.append(
            f"| {r['num_edges']:,} | {r['num_triangles']:,} | {r['backend']} "
            f"| {_fmt(r['build_s'])} "
            f"| {_fmt(r['setup_s'])} | {_fmt(r['decompose_s'])} | {_fmt(st)} "
            f"| {_fmt(st + r['build_s'])} | {speed} "
            f"| {_fmt(r['peak_gib'])} / {_fmt(r['peak_total_gib'])} "
            f"| {_fmt(r['blocks_s'])} ({_fmt(r['peak_blocks_gib'])}) "
            f"| {r['sum_residual_f64']:.0e} / {r['orthogonality_f64']:.0e} "
            f"| {'—' if diff is None else f'{diff:.0e}'} |"
        )
    return "\n".join(rows)


def blocks_table(results: list[dict[str, Any]]) -> str:
    """Projector blocks: fast (Schur complement) path against one solve per touched node."""
    head = (
        "| edges | paths | touched nodes | fast path s | per-node solves s (measured on) "
        "| per-node solves, all paths s (est.) | ratio | max abs diff |"
    )
    rows = [head, "|" + "---|" * 8]
    for r in results:
        if "error" in r or "simple_blocks_s" not in r:
            continue
        rows.append(
            f"| {r['num_edges']:,} | {r['num_paths']} | {r['touched_nodes']:,} "
            f"| {_fmt(r['blocks_s'])} | {_fmt(r['simple_blocks_s'])} "
            f"({r['simple_blocks_paths']} paths, {r['simple_blocks_nodes']:,} nodes) "
            f"| {_fmt(r['simple_blocks_est_s'])} | {r['simple_blocks_est_s'] / r['blocks_s']:.1f}x "
            f"| {r['blocks_max_diff_simple_vs_fast']:.0e} |"
        )
    return "\n".join(rows)


def main(
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    max_edges: int | None = None,
    max_exact_edges: int = 10_000,
    num_flows: int = 100,
    num_paths: int = 100,
    dtype: str = "float32",
    holes: bool = True,
    seed: int = 0,
    json_path: str | None = None,
    timeout: float = 900.0,
    blas_threads: int | None = None,
    markdown_path: str | None = None,
) -> list[dict[str, Any]]:
    """Run all configurations, print the tables (optionally also to a Markdown file) and
    optionally write the raw results as JSON; return the results."""
    from tqdm import tqdm

    sizes = tuple(sorted(s for s in sizes if max_edges is None or s <= max_edges))
    configs = []
    for s in sizes:
        backends = ("exact", "iterative") if s <= max_exact_edges else ("iterative",)
        for b in backends:
            configs.append(
                {
                    "size": s,
                    "backend": b,
                    "num_flows": num_flows,
                    "num_paths": num_paths,
                    "dtype": dtype,
                    "holes": holes,
                    "seed": seed,
                    "blas_threads": blas_threads,
                    # the per-node solve path is slow: measure it on a subset at large sizes
                    "simple_blocks_paths": (num_paths if s <= 300_000 else max(1, num_paths // 10))
                    if b == "iterative"
                    else 0,
                }
            )
    results = []
    for cfg in tqdm(configs, desc="hodge benchmark", file=sys.stderr):
        r = _run_worker(cfg, timeout)
        r["num_paths"] = num_paths
        results.append(r)
    lines: list[str] = []

    def emit(text: str = "") -> None:
        print(text)
        lines.append(text)

    emit(
        f"HodgeDecomposition, Delaunay complexes {'with two holes (beta_1 = 2)' if holes else ''}, "
        f"{num_flows} random {dtype} flows, {num_paths} random paths of 10-20 edges, seed {seed}, "
        f"{os.cpu_count()} CPU cores, BLAS threads: {blas_threads or 'default'}. Times in seconds "
        "(wall clock, after an untimed warm-up); peak RSS = VmHWM of a fresh subprocess per row, "
        "reset after building the complex and again before the projector blocks.\n"
    )
    loads = [r["load_avg_1min"] for r in results if "load_avg_1min" in r]
    if loads:
        emit(
            f"Machine load (1-min load average at the start of each row): {min(loads):.1f} to "
            f"{max(loads):.1f} on {os.cpu_count()} cores.\n"
        )
    emit(markdown_table(results))
    emit(f"\nCrossover: {crossover(results)}.\n")
    emit("Projector blocks P_k[S, S] (all three components) of the random paths:\n")
    emit(blocks_table(results))
    big = [r for r in results if "error" not in r and r["backend"] == "iterative"]
    if big:
        r = max(big, key=lambda r: r["num_edges"])
        emit(
            f"\nChecks at {r['num_edges']:,} edges (iterative): {dtype} run sum residual "
            f"{r['sum_residual']:.1e}, orthogonality {r['orthogonality']:.1e}; float64 re-run: "
            f"sum {r['sum_residual_f64']:.1e}, orthogonality {r['orthogonality_f64']:.1e}, "
            f"subspace residual {r['subspace_residual_f64']:.1e}; blocks sum to I within "
            f"{r['blocks_identity_residual']:.1e}; dims {r['dims']}."
        )
    if json_path:
        _write_atomic(Path(json_path), json.dumps(results, indent=2))
    if markdown_path:
        _write_atomic(Path(markdown_path), "\n".join(lines) + "\n")
    return results


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as fh:
        fh.write(text)
        tmp = fh.name
    os.replace(tmp, path)


def _parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(float(s)) for s in text.split(",") if s.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"--sizes must be comma-separated integers: {err}"
        ) from err
    if not sizes or min(sizes) < 3:
        raise argparse.ArgumentTypeError("--sizes needs at least one size >= 3")
    return sizes


def _cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_parse_sizes, default=None,
                        help="comma-separated numbers of edges (default: "
                        f"{','.join(map(str, DEFAULT_SIZES))})")
    parser.add_argument("--max-edges", type=int, default=None,
                        help="skip sizes above this many edges (default: no limit)")
    parser.add_argument("--max-exact-edges", type=int, default=10_000,
                        help="run the exact backend up to this size (default: %(default)s)")
    parser.add_argument("--num-flows", type=int, default=100,
                        help="random flows decomposed per size (default: %(default)s)")
    parser.add_argument("--num-paths", type=int, default=100,
                        help="random paths for the projector blocks (default: %(default)s)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="dtype of the timed flows (default: %(default)s)")
    parser.add_argument("--no-holes", action="store_true",
                        help="filled square (beta_1 = 0) instead of two holes (beta_1 = 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help=f"default sizes {','.join(map(str, QUICK_SIZES))}, exact backend up "
                        "to 3000 edges")
    parser.add_argument("--json", default=None, help="also write the raw results to this file")
    parser.add_argument("--markdown", default=None,
                        help="also write the printed tables to this Markdown file")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds per configuration (default: %(default)s)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="limit BLAS/LAPACK threads in every run (default: library default)")
    parser.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._worker is not None:
        print(json.dumps(worker(json.loads(args._worker))), flush=True)
        return
    sizes, max_exact = args.sizes, args.max_exact_edges
    if args.quick:
        sizes, max_exact = sizes or QUICK_SIZES, min(max_exact, 3_000)
    sizes = sizes or DEFAULT_SIZES
    main(
        sizes=sizes,
        max_edges=args.max_edges,
        max_exact_edges=max_exact,
        num_flows=args.num_flows,
        num_paths=args.num_paths,
        dtype=args.dtype,
        holes=not args.no_holes,
        seed=args.seed,
        json_path=args.json,
        timeout=args.timeout,
        blas_threads=args.blas_threads,
        markdown_path=args.markdown,
    )


if __name__ == "__main__":
    _cli()
