"""Benchmark: one training step of the SCNN encoder vs. TopoModelX's SCNN layers.

Configuration (the issue's): 3 layers, width 64, ``K_down = K_up = 2``, tanh after
each layer, mean readout over the edges, a batch of 100 edge flows, float32 on CPU,
no bias (TopoModelX's ``SCNNLayer`` has none). One step = forward of the whole batch,
a scalar loss (sum of squared embeddings), backward.

- ours: ``topo_contrastive.nn.SCNN`` on the ``[B, N1, 1]`` batch (sparse CSR
  products, one per Laplacian power for the whole batch).
- TopoModelX: ``topomodelx.nn.simplicial.scnn_layer.SCNNLayer`` x 3, applied sample
  by sample (it has no batch dimension), graphs of all samples kept until the one
  backward (as a contrastive loss, which couples the samples, needs).

Complexes: Delaunay triangulations of uniform random points in the unit square,
every triangle filled (``SimplicialOperators.from_simplices``); the default point
counts give about 1,100 and 20,000 edges.

Timing: ours is the median of ``--repeats`` steps after a one-sample warm-up step;
TopoModelX is one step over ``--tmx-samples`` samples (after a one-sample warm-up on
complexes below 5,000 edges), scaled linearly to the batch size when fewer samples
than the batch are timed (its cost is a sum of identical per-sample costs); the
table says which. Timings of both are interleaved in one run, so the ratio is
meaningful on a shared machine even when the absolute times are not. TopoModelX's
many small per-sample operations make its time very sensitive to other processes
competing for the cores (OpenMP threads waiting on each other); ``--threads 1``
gives steadier ratios on a busy machine. PyTorch's CPU allocator page-faults every
large fresh buffer; ``THP_MEM_ALLOC_ENABLE=1`` (a PyTorch setting, read at start-up)
makes it use transparent huge pages, for both sides alike.

GFLOP/s: useful floating-point work of the step counted analytically (dense
products ``2 m k n``, sparse products ``2 nnz n``, forward and backward, without
TopoModelX's identity product) divided by the step time, next to the machine's
dense float32 matmul rate measured in the same run (``torch.mm`` of two 2048 x 2048
matrices).

Peak memory: each measurement runs in a fresh process (``multiprocessing`` spawn);
the kernel's peak resident set (``VmHWM``) is reset right before the step
(``/proc/self/clear_refs``) and read right after it; the table gives the peak minus
the resident set before the step, i.e. what the step itself needed on top of model,
operators and data. For TopoModelX at the large size the step over the full batch
does not fit in memory (each sample's graph keeps two dense ``N1 x N1`` identities),
so whenever TopoModelX is timed on fewer samples than the batch its peak is measured
with 1 and with ``max(2, --tmx-samples)`` samples and extrapolated linearly to the
batch size (the table says so).

Run (needs the ``topomodelx`` extra, e.g. ``/work/main/.venv-tmx``)::

    python benchmarks/bench_scnn.py            # about 2-3 minutes on 2 cores
    python benchmarks/bench_scnn.py --help
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import scipy.spatial
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo_contrastive import SimplicialOperators  # noqa: E402
from topo_contrastive.nn import SCNN  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")


# ---------------------------------------------------------------------- setup
def delaunay_complex(num_points: int, seed: int) -> SimplicialOperators:
    """Delaunay triangulation of ``num_points`` uniform points, all triangles filled."""
    rng = np.random.default_rng(seed)
    tri = scipy.spatial.Delaunay(rng.random((num_points, 2))).simplices
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    return SimplicialOperators.from_simplices(edges, tri, num_points)


@dataclass
class Config:
    num_points: int
    seed: int
    batch_size: int
    hidden: int
    layers: int
    K: int


def build(cfg: Config, which: str):
    """Complex, operators, input flows and the model (``which`` = ours / topomodelx)."""
    ops = delaunay_complex(cfg.num_points, cfg.seed)
    torch.manual_seed(cfg.seed)
    x = torch.randn(cfg.batch_size, ops.num_edges, 1)
    if which == "ours":
        L_down, L_up = ops.laplacians()
        model = SCNN(1, cfg.hidden, cfg.layers, cfg.K, cfg.K, act="tanh", bias=False)
    else:
        from topomodelx.nn.simplicial.scnn_layer import SCNNLayer

        # TopoModelX's own usage: sparse COO Laplacians.
        L_down, L_up = ops.laplacians()
        model = torch.nn.ModuleList(
            SCNNLayer(1 if i == 0 else cfg.hidden, cfg.hidden, cfg.K, cfg.K)
            for i in range(cfg.layers)
        )
    return ops, x, L_down, L_up, model


def step_ours(model, x, L_down, L_up) -> None:
    model.zero_grad(set_to_none=True)
    h = model(x, L_down, L_up)  # [B, hidden]
    h.pow(2).sum().backward()


def step_tmx(model, x, L_down, L_up, num_samples: int) -> None:
    model.zero_grad(set_to_none=True)
    hs = []
    for b in range(num_samples):
        e = x[b]  # [N1, 1]
        for layer in model:
            e = torch.tanh(layer(e, L_down, L_up))  # [N1, hidden]
        hs.append(e.mean(dim=0))
    torch.stack(hs).pow(2).sum().backward()


def step_flops(cfg: Config, n1: int, nnz_down: int, nnz_up: int) -> float:
    """Useful FLOPs of one step (forward + backward) over the batch."""
    B, K = cfg.batch_size, cfg.K
    nnz = K * (nnz_down + nnz_up)  # non-zeros touched per column, per pass over one side
    total = 0.0
    for i in range(cfg.layers):
        c_in = 1 if i == 0 else cfg.hidden
        c_out = cfg.hidden
        dense = 2.0 * n1 * B * (1 + 2 * K) * c_in * c_out
        width = B * min(c_in, c_out)
        sparse = 2.0 * nnz * width
        first = i == 0  # no gradient w.r.t. the input flows
        total += dense * (2 if first else 3)  # forward, weight grad (+ input grad)
        total += sparse * (1 if first else 2)
    return total


def dense_matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - t0)
    return 2.0 * n**3 / min(times) / 1e9


# ---------------------------------------------------------------------- memory
def _rss_kb() -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _memory_child(cfg_dict: dict, which: str, num_samples: int, queue) -> None:
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", torch.get_num_threads())))
    cfg = Config(**cfg_dict)
    ops, x, L_down, L_up, model = build(cfg, which)
    if which == "ours":  # operator preparation (CSR, cached) belongs to setup, not the step
        with torch.no_grad():
            model(x[:1], L_down, L_up)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
    except OSError:
        queue.put(None)
        return
    before, _ = _rss_kb()
    if which == "ours":
        step_ours(model, x, L_down, L_up)
    else:
        step_tmx(model, x, L_down, L_up, num_samples)
    _, peak = _rss_kb()
    queue.put((peak - before) / 2**20)  # GiB


def peak_memory_gib(cfg: Config, which: str, num_samples: int = 0) -> float | None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_memory_child, args=(asdict(cfg), which, num_samples, queue))
    proc.start()
    proc.join()
    return queue.get() if proc.exitcode == 0 and not queue.empty() else None


# ---------------------------------------------------------------------- main
def main(
    sizes: tuple[int, ...] = (400, 6700),
    batch_size: int = 100,
    hidden: int = 64,
    layers: int = 3,
    K: int = 2,
    repeats: int = 2,
    tmx_samples: tuple[int, ...] = (25, 1),
    threads: int = 0,
    memory: bool = True,
    seed: int = 0,
    out: Path | None = None,
) -> list[dict]:
    """Run the benchmark, print a Markdown table, optionally write JSON to ``out``."""
    try:
        import topomodelx  # noqa: F401
    except ImportError:
        sys.exit("this benchmark needs TopoModelX: pip install -e '.[topomodelx]'")
    if len(tmx_samples) != len(sizes):
        sys.exit("--tmx-samples needs one number per size")
    if threads > 0:
        torch.set_num_threads(threads)
        os.environ["BENCH_THREADS"] = str(threads)  # for the memory subprocesses
    from tqdm import tqdm

    gflops_dense = dense_matmul_gflops()
    rows = []
    for num_points, n_tmx in tqdm(list(zip(sizes, tmx_samples, strict=True)), desc="sizes"):
        n_tmx = min(n_tmx, batch_size)
        cfg = Config(num_points, seed, batch_size, hidden, layers, K)
        ops, x, L_down, L_up, ours = build(cfg, "ours")
        _, _, L_down_t, L_up_t, tmx = build(cfg, "topomodelx")
        n1 = ops.num_edges
        step_ours(ours, x[:1], L_down, L_up)  # warm-up (also prepares the CSR operators)
        if n1 < 5000:
            step_tmx(tmx, x, L_down_t, L_up_t, 1)
        t_ours, t_tmx = [], None
        for r in range(repeats):
            t0 = time.perf_counter()
            step_ours(ours, x, L_down, L_up)
            t_ours.append(time.perf_counter() - t0)
            if r == repeats // 2:  # TopoModelX in the middle of our repeats
                t0 = time.perf_counter()
                step_tmx(tmx, x, L_down_t, L_up_t, n_tmx)
                t_tmx = (time.perf_counter() - t0) * batch_size / n_tmx
        t_ours_med = statistics.median(t_ours)
        flops = step_flops(cfg, n1, L_down._nnz(), L_up._nnz())
        row = dict(
            num_points=num_points,
            num_edges=n1,
            num_triangles=ops.num_triangles,
            batch_size=batch_size,
            time_ours_s=t_ours_med,
            time_ours_all_s=t_ours,
            time_tmx_s=t_tmx,
            tmx_samples_timed=n_tmx,
            speedup=t_tmx / t_ours_med,
            gflop_per_step=flops / 1e9,
            gflops_ours=flops / t_ours_med / 1e9,
            gflops_tmx=flops / t_tmx / 1e9,
            gflops_dense_matmul=gflops_dense,
        )
        del ours, tmx, x, L_down, L_up, L_down_t, L_up_t
        if memory:
            row["peak_gib_ours"] = peak_memory_gib(cfg, "ours")
            if n_tmx >= batch_size:
                row["peak_gib_tmx"] = peak_memory_gib(cfg, "topomodelx", batch_size)
                row["peak_tmx_extrapolated"] = False
            else:
                n2 = max(2, n_tmx)
                m1 = peak_memory_gib(cfg, "topomodelx", 1)
                m2 = peak_memory_gib(cfg, "topomodelx", n2)
                row["peak_gib_tmx_1_sample"] = m1
                row["peak_gib_tmx_n_samples"] = m2
                row["peak_tmx_samples"] = n2
                if m1 is not None and m2 is not None:
                    slope = max(m2 - m1, 0.0) / (n2 - 1)
                    row["peak_gib_tmx"] = m1 + (batch_size - 1) * slope
                row["peak_tmx_extrapolated"] = True
        rows.append(row)

    print(
        f"\nOne training step (forward + backward), {layers} layers, width {hidden}, "
        f"K_down = K_up = {K}, batch of {batch_size} flows, float32, "
        f"{torch.get_num_threads()} threads. Dense matmul: {gflops_dense:.1f} GFLOP/s.\n"
    )
    head = (
        "| edges | ours (s/step) | TopoModelX (s/step) | speed-up | GFLOP/step "
        "| ours GFLOP/s | TopoModelX GFLOP/s | dense matmul GFLOP/s |"
    )
    if memory:
        head += " peak ours (GiB) | peak TopoModelX (GiB) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        tmx_note = ""
        if r["tmx_samples_timed"] < batch_size:
            tmx_note = f" (scaled from {r['tmx_samples_timed']} samples)"
        line = (
            f"| {r['num_edges']:,} | {r['time_ours_s']:.3f} | {r['time_tmx_s']:.2f}{tmx_note} "
            f"| {r['speedup']:.1f}x | {r['gflop_per_step']:.1f} | {r['gflops_ours']:.1f} "
            f"| {r['gflops_tmx']:.1f} | {r['gflops_dense_matmul']:.1f} |"
        )
        if memory:
            pt = r.get("peak_gib_tmx")
            pt_s = "n/a" if pt is None else f"{pt:.2f}"
            if r.get("peak_tmx_extrapolated") and pt is not None:
                pt_s += (
                    f" (extrapolated from {r['peak_gib_tmx_1_sample']:.2f} / "
                    f"{r['peak_gib_tmx_n_samples']:.2f} GiB for 1 / "
                    f"{r['peak_tmx_samples']} samples)"
                )
            po = r.get("peak_gib_ours")
            line += f" {'n/a' if po is None else f'{po:.2f}'} | {pt_s} |"
        print(line)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(rows, indent=2))
        os.replace(tmp, out)
    return rows


def _int_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--sizes", type=_int_tuple, default=(400, 6700),
        help="comma-separated point counts of the Delaunay complexes (default 400,6700: "
        "about 1,100 and 20,000 edges)",
    )
    p.add_argument("--batch-size", type=int, default=100, help="flows per step (default 100)")
    p.add_argument("--hidden", type=int, default=64, help="width of every layer (default 64)")
    p.add_argument("--layers", type=int, default=3, help="number of layers (default 3)")
    p.add_argument("--K", type=int, default=2, help="K_down = K_up (default 2)")
    p.add_argument(
        "--repeats", type=int, default=2, help="timed steps of ours per size (default 2)"
    )
    p.add_argument(
        "--tmx-samples", type=_int_tuple, default=(25, 1),
        help="samples TopoModelX is timed on, per size; fewer than the batch are scaled "
        "linearly (default 25,1)",
    )
    p.add_argument(
        "--threads", type=int, default=0,
        help="torch threads for both (default 0: PyTorch's default, one per core)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    p.add_argument("--seed", type=int, default=0, help="seed of points and flows (default 0)")
    p.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(
        sizes=a.sizes,
        batch_size=a.batch_size,
        hidden=a.hidden,
        layers=a.layers,
        K=a.K,
        repeats=a.repeats,
        tmx_samples=a.tmx_samples,
        threads=a.threads,
        memory=not a.no_memory,
        seed=a.seed,
        out=a.out,
    )
