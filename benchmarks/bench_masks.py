"""Benchmark of the Hodge-aware drop-probability optimiser and the masking transforms.

Two cases, each in its own child process (so that its peak memory is its own):

* ``trajectories``: all 400 samples of ``SyntheticTrajectories`` (about 1,080 edges), exact
  Hodge backend. Batched ``optimize_drop_probabilities`` against the naive per-sample loop
  (the same function called once per flow), and the cost of drawing one masked view of the
  whole dataset with ``HodgeSpectralMask`` (stored probabilities) and ``EdgeFlowMask``.
* ``large``: ``--num-flows`` sparse flows (self-avoiding random walks of 10-20 edges) on the
  Delaunay complex of random points with at least ``--num-edges`` edges (all triangles
  filled), iterative Hodge backend. Batched optimisation, split into the time spent in
  ``HodgeDecomposition.projector_blocks`` and the rest (padding + PGD), against the naive
  per-sample loop on the first ``--naive-flows`` flows and uniform masks of all flows.

Memory: peak resident set size (``VmHWM`` of ``/proc/self/status``), reset before each
timed phase by writing ``5`` to ``/proc/self/clear_refs`` (Linux); where the reset is not
available the process-wide ``resource.getrusage(...).ru_maxrss`` is reported instead (the
table says which). The peak includes everything the process holds at the time (the complex,
its factorisation, the flows).

    python benchmarks/bench_masks.py                 # both cases, 1,000,000 edges
    python benchmarks/bench_masks.py --case trajectories
    python benchmarks/bench_masks.py --case large --num-edges 300000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import torch

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, _ROOT)

TARGET_SECONDS = 60.0
TARGET_GIB = 4.0


# ---------------------------------------------------------------------------- memory
def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_gib() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


class Phase:
    """Time a phase and record its peak RSS."""

    def __init__(self, results: dict[str, Any], name: str) -> None:
        self.results, self.name = results, name

    def __enter__(self) -> Phase:
        self.reset = _reset_peak()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        seconds = time.perf_counter() - self.start
        self.results[self.name] = {
            "seconds": seconds,
            "peak_gib": _peak_gib(),
            "memory": "VmHWM (reset per phase)" if self.reset else "ru_maxrss (process)",
        }


# ---------------------------------------------------------------------------- cases
def case_trajectories(seed: int) -> dict[str, Any]:
    from torch_geometric.data import Batch

    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.datasets import SyntheticTrajectories
    from topo_contrastive.transforms import (
        EdgeFlowMask,
        HodgeSpectralMask,
        optimize_drop_probabilities,
    )

    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as root:
        ds = SyntheticTrajectories(root, seed=seed, log=False)
        x = ds.x_1.view(len(ds), -1)  # [400, N1], stacked samples
        res["info"] = {
            "num_flows": int(x.shape[0]),
            "torch_threads": torch.get_num_threads(),
            "num_edges": int(x.shape[1]),
            "mean_support": float((x != 0).sum(-1).double().mean()),
        }
        with Phase(res, "hodge (exact backend)"):
            hodge = HodgeDecomposition(ds.complex, backend="exact")
        with Phase(res, "optimise, batched (all flows)"):
            p, hist = optimize_drop_probabilities(x, hodge, 0.3, return_history=True)
        with Phase(res, "optimise, naive per-sample loop (baseline)"):
            naive = [optimize_drop_probabilities(r, hodge, 0.3, return_history=True) for r in x]
        # the problem is not convex: equally good solutions can differ (ties broken by
        # round-off), so compare the objective values reached
        final = torch.stack([h[-1, 0] for _, h in naive])
        res["info"]["max_objective_diff_batched_vs_loop"] = float((hist[-1] - final).abs().max())
        res["info"]["flows_with_other_p_than_loop"] = int(
            ((p - torch.stack([q for q, _ in naive])).abs().amax(-1) > 1e-6).sum()
        )
        mask = HodgeSpectralMask(0.3, hodge=hodge, generator=seed)
        with Phase(res, "HodgeSpectralMask.fit (dataset)"):
            mask.fit(ds)
        batch = Batch.from_data_list([ds[i] for i in range(len(ds))])
        with Phase(res, "HodgeSpectralMask view of 400 flows (stored p)"):
            for _ in range(10):
                mask(batch)
        res["HodgeSpectralMask view of 400 flows (stored p)"]["seconds"] /= 10
        uniform = EdgeFlowMask(0.3, generator=seed)
        with Phase(res, "EdgeFlowMask view of 400 flows"):
            for _ in range(10):
                uniform(batch)
        res["EdgeFlowMask view of 400 flows"]["seconds"] /= 10
    return res


def _delaunay_complex(num_edges: int, seed: int):
    from scipy.spatial import Delaunay

    from topo_contrastive import ComplexOperators

    rng = np.random.default_rng(seed)
    num_points = int(num_edges / 2.98) + 10  # a planar Delaunay graph has ~3 n edges
    while True:
        pts = rng.random((num_points, 2))
        tri = np.sort(Delaunay(pts).simplices, axis=1)
        pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
        edges = np.unique(pairs, axis=0)
        if len(edges) >= num_edges:
            return ComplexOperators.from_simplices(edges, tri, num_points), rng
        num_points = int(num_points * 1.01) + 10


def _random_walks(ops, num: int, rng: np.random.Generator) -> list[list[int]]:
    indptr, indices = ops.L0.indptr, ops.L0.indices
    paths = []
    while len(paths) < num:
        length = int(rng.integers(10, 21))
        v = int(rng.integers(ops.num_nodes))
        path, seen = [v], {v}
        for _ in range(length):
            nbrs = [u for u in indices[indptr[v] : indptr[v + 1]] if u != v and u not in seen]
            if not nbrs:
                break
            v = int(nbrs[rng.integers(len(nbrs))])
            path.append(v)
            seen.add(v)
        if len(path) == length + 1:
            paths.append(path)
    return paths


def case_large(num_edges: int, num_flows: int, naive_flows: int, seed: int) -> dict[str, Any]:
    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.transforms import EdgeFlowMask, optimize_drop_probabilities

    res: dict[str, Any] = {}
    with Phase(res, "build complex (Delaunay)"):
        ops, rng = _delaunay_complex(num_edges, seed)
    with Phase(res, "hodge (iterative backend)"):
        hodge = HodgeDecomposition(ops, backend="iterative")
    paths = _random_walks(ops, num_flows, rng)
    x = torch.stack([ops.path_to_flow(p) for p in paths])  # [F, N1] float32
    res["info"] = {
        "num_flows": num_flows,
        "torch_threads": torch.get_num_threads(),
        "num_edges": ops.num_edges,
        "num_nodes": ops.num_nodes,
        "num_triangles": ops.num_triangles,
        "mean_support": float((x != 0).sum(-1).double().mean()),
    }
    # time spent inside projector_blocks during the batched optimisation
    inner = {"seconds": 0.0, "calls": 0}
    original = hodge.projector_blocks

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = original(*args, **kwargs)
        inner["seconds"] += time.perf_counter() - start
        inner["calls"] += 1
        return out

    hodge.projector_blocks = timed  # type: ignore[method-assign]
    with Phase(res, "optimise, batched (all flows)"):
        optimize_drop_probabilities(x, hodge, 0.3)
    res["info"]["projector_blocks_seconds"] = inner["seconds"]
    res["info"]["projector_blocks_calls"] = inner["calls"]
    hodge.projector_blocks = original  # type: ignore[method-assign]
    name = f"optimise, naive per-sample loop on {naive_flows} flows (baseline)"
    with Phase(res, name):
        for r in x[:naive_flows]:
            optimize_drop_probabilities(r, hodge, 0.3)
    res[name]["per_flow_seconds"] = res[name]["seconds"] / max(1, naive_flows)
    with Phase(res, "EdgeFlowMask on all flows (uniform, baseline)"):
        EdgeFlowMask(0.3, generator=seed)(_as_data(x))
    return res


def _as_data(x: torch.Tensor):
    from torch_geometric.data import Data

    return Data(x_1=x.reshape(-1, 1))


# ---------------------------------------------------------------------------- driver
def _run_child(args: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", *args]
    env = {**os.environ}
    env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _table(title: str, res: dict[str, Any], baseline: str | None, target: str | None) -> str:
    info = res.pop("info")
    lines = [
        f"### {title}",
        "",
        ", ".join(
            f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in info.items()
        ),
        "",
    ]
    lines += ["| phase | seconds | peak RSS (GiB) | vs baseline |", "|---|---|---|---|"]
    base = res[baseline]["seconds"] if baseline else None
    if baseline and "per_flow_seconds" in res[baseline]:
        base = res[baseline]["per_flow_seconds"] * info["num_flows"]
    for name, r in res.items():
        ratio = ""
        if base and name.startswith("optimise"):
            ratio = f"{base / r['seconds']:.2f}x" if name != baseline else "1.00x"
        lines.append(f"| {name} | {r['seconds']:.3f} | {r['peak_gib']:.2f} | {ratio} |")
    memory = {r["memory"] for r in res.values()}
    lines += ["", f"Memory: {', '.join(sorted(memory))}."]
    if target:
        r = res[target]
        ok = r["seconds"] < TARGET_SECONDS and r["peak_gib"] < TARGET_GIB
        lines.append(
            f"Target (< {TARGET_SECONDS:.0f} s, < {TARGET_GIB:.0f} GiB): "
            f"{'met' if ok else 'NOT met'} ({r['seconds']:.1f} s, {r['peak_gib']:.2f} GiB; "
            f"projector_blocks {info.get('projector_blocks_seconds', float('nan')):.1f} s)."
        )
    if baseline and "per_flow_seconds" in res.get(baseline, {}):
        lines.append("The naive-loop ratio extrapolates its per-flow time to all flows.")
    return "\n".join(lines)


def main(
    case: str = "all",
    num_edges: int = 1_000_000,
    num_flows: int = 100,
    naive_flows: int = 10,
    seed: int = 0,
    out: str | None = None,
    threads: int | None = None,
) -> dict[str, Any]:
    """Run the cases in child processes, print Markdown tables, return the raw results."""
    extra = ["--threads", str(threads)] if threads else []
    results: dict[str, Any] = {}
    tables = []
    if case in ("all", "trajectories"):
        results["trajectories"] = _run_child(
            ["--case", "trajectories", "--seed", str(seed), *extra]
        )
        tables.append(
            _table(
                "400 trajectory flows (exact backend)",
                json.loads(json.dumps(results["trajectories"])),
                "optimise, naive per-sample loop (baseline)",
                None,
            )
        )
    if case in ("all", "large"):
        results["large"] = _run_child(
            [
                "--case",
                "large",
                "--num-edges",
                str(num_edges),
                "--num-flows",
                str(num_flows),
                "--naive-flows",
                str(naive_flows),
                "--seed",
                str(seed),
                *extra,
            ]
        )
        tables.append(
            _table(
                f"{num_flows} random-walk flows on a complex of >= {num_edges:,} edges "
                "(iterative backend)",
                json.loads(json.dumps(results["large"])),
                f"optimise, naive per-sample loop on {naive_flows} flows (baseline)",
                "optimise, batched (all flows)",
            )
        )
    print("\n\n".join(tables))
    if out:
        from topo_contrastive._utils.files import atomic_write

        def write(tmp: str) -> None:
            with open(tmp, "w") as f:
                json.dump(results, f, indent=2)

        atomic_write(out, write)
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--case",
        choices=("all", "trajectories", "large"),
        default="all",
        help="which case to run (default: all)",
    )
    parser.add_argument(
        "--num-edges",
        type=int,
        default=1_000_000,
        help="minimum number of edges of the large complex (default: 1000000)",
    )
    parser.add_argument(
        "--num-flows",
        type=int,
        default=100,
        help="random-walk flows on the large complex (default: 100)",
    )
    parser.add_argument(
        "--naive-flows",
        type=int,
        default=10,
        help="flows of the naive per-sample baseline loop (default: 10)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads in the children (default: torch's default)",
    )
    parser.add_argument("--out", default=None, help="also write the raw results as JSON here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    a = _parser().parse_args()
    if a.child:
        if a.threads:
            torch.set_num_threads(a.threads)
        if a.case == "trajectories":
            result = case_trajectories(a.seed)
        else:
            result = case_large(a.num_edges, a.num_flows, a.naive_flows, a.seed)
        print(json.dumps(result))
    else:
        main(a.case, a.num_edges, a.num_flows, a.naive_flows, a.seed, a.out, a.threads)
