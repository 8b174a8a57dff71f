"""Benchmark: one training step of the SCNN encoder, against the machine's roofline, a plain
batched PyTorch reference and TopoModelX's ``SCNNLayer``.

Encoder (the paper-depth encoder of Table 1): ``L`` SCNN layers of width 64,
``K_down = K_up = 2``, tanh after each layer, a bias, mean readout over the edges, float32 on
the CPU. One step = forward of the whole batch, a scalar loss (sum of squared embeddings),
backward. Three implementations of the same function, all with the same weights:

- **library**: ``topo_contrastive.nn.SCNN`` (chunked, fused kernel of ``nn/_scnn_kernel.py``).
- **plain batched reference**: what one writes in plain PyTorch without thinking about the
  CPU: the batch in edge-major layout ``[N1, B*C]``, one ``torch.sparse.mm`` per Laplacian
  power, ``(1 + K_down + K_up)`` products with the weights, bias, ``torch.tanh``; autograd
  does the backward.
- **TopoModelX**: ``topomodelx.nn.simplicial.scnn_layer.SCNNLayer`` applied sample by
  sample (it has no batch dimension; it is bias-free, so a bias parameter is added after
  each layer), graphs of all samples kept until one backward (as a contrastive loss needs).
  It is timed on ``--tmx-samples`` samples and scaled linearly to the batch (its cost is a
  sum of identical per-sample costs); it needs the ``topomodelx`` extra and is skipped
  without it.

Complexes: Delaunay triangulations of uniform random points in the unit square, every
triangle filled; the default point counts give about 1,100 edges (batch 200: one step of
the paper's protocol, 100 flows x 2 views) and 20,000 edges (batch 16).

**Roofline**, measured in the same run: the rate of the layer's dense work done as one large
GEMM, ``[B*N1, 5*64] @ [5*64, 64]`` (all five filter terms of a layer stacked, output
preallocated), and of a ``2048 x 2048`` square GEMM. GFLOP/s count the step's useful
floating-point work analytically (dense products ``2 m k n``, sparse products ``2 nnz n``,
forward and backward, no input gradient in the first layer), divided by the median step
time. The stacked-GEMM rate is the bar: a step cannot do its dense work faster than the
large GEMM the dense work can be rearranged into, except where cache-resident chunks beat
a memory-bound large GEMM.

Timing: medians of ``--repeats`` steps after warm-up steps, the implementations interleaved
step by step (library, reference, library, reference, ...), so that drifts of a shared
machine hit both alike. Peak memory (``--memory``) runs each implementation in a fresh
process and reports the peak resident set of one step above the set before it.

Run::

    python benchmarks/bench_scnn.py                       # library and reference, ~3 min
    .venv/bin/python benchmarks/bench_scnn.py             # with topomodelx installed
    python benchmarks/bench_scnn.py --help
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
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

from topo_contrastive import ComplexOperators  # noqa: E402
from topo_contrastive.nn import SCNN  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")


# ---------------------------------------------------------------------- set-up
def delaunay_complex(num_points: int, seed: int) -> ComplexOperators:
    """Delaunay triangulation of ``num_points`` uniform points, all triangles filled."""
    rng = np.random.default_rng(seed)
    tri = scipy.spatial.Delaunay(rng.random((num_points, 2))).simplices
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    return ComplexOperators.from_simplices(edges, tri, num_points)


@dataclass
class Case:
    num_points: int
    batch_size: int
    layers: int
    hidden: int = 64
    K: int = 2
    seed: int = 0


class PlainReference(torch.nn.Module):
    """The SCNN encoder in plain batched PyTorch (edge-major layout, autograd backward)."""

    def __init__(self, encoder: SCNN):
        super().__init__()
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(c.weight.detach().clone()) for c in encoder.convs]
        )
        self.biases = torch.nn.ParameterList(
            [torch.nn.Parameter(c.bias.detach().clone()) for c in encoder.convs]
        )
        self.K = encoder.K_down

    def forward(self, x: torch.Tensor, laplacians) -> torch.Tensor:
        B, n1, _ = x.shape
        h = x
        for w, b in zip(self.weights, self.biases, strict=True):
            c_in = h.shape[-1]
            xe = h.transpose(0, 1).reshape(n1, B * c_in)  # [N1, B*C_in]
            terms = [xe]
            for L in laplacians:
                p = xe
                for _ in range(self.K):
                    p = torch.sparse.mm(L, p)
                    terms.append(p)
            y = sum(
                t.view(n1, B, c_in) @ w[k] for k, t in enumerate(terms)
            )  # [N1, B, C_out]
            h = torch.tanh(y + b).transpose(0, 1)  # [B, N1, C_out]
        return h.mean(dim=1)


class TopoModelXEncoder(torch.nn.Module):
    """TopoModelX ``SCNNLayer`` stack, sample by sample, with a bias after each layer."""

    def __init__(self, encoder: SCNN):
        super().__init__()
        from topomodelx.nn.simplicial.scnn_layer import SCNNLayer

        self.layers = torch.nn.ModuleList()
        self.biases = torch.nn.ParameterList()
        for c in encoder.convs:
            layer = SCNNLayer(c.in_channels, c.out_channels, c.K_down, c.K_up)
            with torch.no_grad():
                layer.weight.copy_(c.weight.detach().permute(1, 2, 0))
            self.layers.append(layer)
            self.biases.append(torch.nn.Parameter(c.bias.detach().clone()))

    def forward(self, x, laplacians, num_samples: int) -> torch.Tensor:
        hs = []
        for s in range(num_samples):
            e = x[s]  # [N1, 1]
            for layer, b in zip(self.layers, self.biases, strict=True):
                e = torch.tanh(layer(e, *laplacians) + b)  # [N1, hidden]
            hs.append(e.mean(dim=0))
        return torch.stack(hs)


def build(case: Case):
    """Complex, operators, flows and the three implementations with the same weights."""
    ops = delaunay_complex(case.num_points, case.seed)
    torch.manual_seed(case.seed)
    x = torch.randn(case.batch_size, ops.num_edges, 1)
    laplacians = ops.laplacians()
    ours = SCNN(1, case.hidden, case.layers, case.K, case.K, act="tanh", bias=True)
    with torch.no_grad():  # non-zero biases, so that every implementation adds them
        for c in ours.convs:
            c.bias.normal_(0.0, 0.1)
    return ops, x, laplacians, ours, PlainReference(ours)


def step(model, x, laplacians, *extra) -> float:
    model.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    h = model(x, laplacians, *extra)
    h.pow(2).sum().backward()
    return time.perf_counter() - t0


def step_flops(case: Case, n1: int, nnz_down: int, nnz_up: int) -> float:
    """Useful FLOPs of one step (forward + backward) over the batch."""
    B, K = case.batch_size, case.K
    nnz = K * (nnz_down + nnz_up)  # non-zeros touched per column, per pass over both sides
    total = 0.0
    for i in range(case.layers):
        c_in = 1 if i == 0 else case.hidden
        c_out = case.hidden
        dense = 2.0 * n1 * B * (1 + 2 * K) * c_in * c_out
        sparse = 2.0 * nnz * B * min(c_in, c_out)
        first = i == 0  # no gradient with respect to the input flows
        total += dense * (2 if first else 3)  # forward, weight gradient (+ input gradient)
        total += sparse * (1 if first else 2)
    return total


def gemm_rate(
    m: int, k: int, n: int, repeats: int = 5, device: str | torch.device = "cpu"
) -> float:
    """GFLOP/s of ``[m, k] @ [k, n]`` into a preallocated output on ``device`` (best of
    ``repeats``; a GPU is synchronised around each product)."""
    dev = torch.device(device)
    a, b = torch.randn(m, k).to(dev), torch.randn(k, n).to(dev)
    out = torch.empty(m, n, device=dev)
    torch.mm(a, b, out=out)
    times = []
    for _ in range(repeats):
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
    return 2.0 * m * k * n / min(times) / 1e9


# ---------------------------------------------------------------------- memory
def _rss_kb() -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _memory_child(case_dict: dict, which: str, threads: int, queue) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    case = Case(**case_dict)
    ops, x, laplacians, ours, ref = build(case)
    model = ours if which == "library" else ref
    step(model, x[:2], laplacians)  # operator preparation belongs to set-up
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
    except OSError:
        queue.put(None)
        return
    before, _ = _rss_kb()
    step(model, x, laplacians)
    _, peak = _rss_kb()
    queue.put((peak - before) / 2**20)  # GiB


def peak_memory_gib(case: Case, which: str, threads: int) -> float | None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_memory_child, args=(asdict(case), which, threads, queue))
    proc.start()
    proc.join()
    return queue.get() if proc.exitcode == 0 and not queue.empty() else None


# ---------------------------------------------------------------------- main
def main(
    cases: tuple[tuple[int, int], ...] = ((400, 200), (6700, 16)),
    layers: tuple[int, ...] = (2, 4),
    repeats: int = 5,
    tmx_samples: tuple[int, ...] = (20, 1),
    threads: int = 0,
    memory: bool = False,
    seed: int = 0,
    out: Path | None = None,
) -> list[dict]:
    """Run the benchmark, print a Markdown table, optionally write JSON and Markdown to
    ``out`` (``out.json`` / ``out.md``)."""
    from tqdm import tqdm

    if threads > 0:
        torch.set_num_threads(threads)
    try:
        import topomodelx  # noqa: F401

        have_tmx = True
    except ImportError:
        have_tmx = False
    if len(tmx_samples) != len(cases):
        sys.exit("--tmx-samples needs one number per case")
    square = gemm_rate(2048, 2048, 2048)
    rows = []
    work = [(c, n_tmx, nl) for c, n_tmx in zip(cases, tmx_samples, strict=True) for nl in layers]
    for (num_points, batch), n_tmx, nl in tqdm(work, desc="cases", file=sys.stderr):
        case = Case(num_points, batch, nl, seed=seed)
        ops, x, laplacians, ours, ref = build(case)
        n1 = ops.num_edges
        # same function: the three implementations agree
        with torch.no_grad():
            h_ours = ours(x[:2], laplacians)
            torch.testing.assert_close(ref(x[:2], laplacians), h_ours, rtol=1e-4, atol=1e-5)
        stacked = gemm_rate(batch * n1, (1 + 2 * case.K) * case.hidden, case.hidden)
        for _ in range(2):  # warm-up (prepares the CSR operators)
            step(ours, x, laplacians)
            step(ref, x, laplacians)
        t_ours, t_ref = [], []
        for _ in range(repeats):
            t_ours.append(step(ours, x, laplacians))
            t_ref.append(step(ref, x, laplacians))
        t_tmx = None
        if have_tmx:
            tmx = TopoModelXEncoder(ours)
            n = min(n_tmx, batch)
            with torch.no_grad():
                torch.testing.assert_close(
                    tmx(x, laplacians, 2), h_ours, rtol=1e-4, atol=1e-5
                )
            if n1 < 5000:
                step(tmx, x, laplacians, 1)  # warm-up
            t_tmx = step(tmx, x, laplacians, n) * batch / n
            del tmx
        flops = step_flops(case, n1, laplacians.down._nnz(), laplacians.up._nnz())
        med, med_ref = statistics.median(t_ours), statistics.median(t_ref)
        row = dict(
            num_edges=n1,
            batch_size=batch,
            layers=nl,
            gflop_per_step=flops / 1e9,
            time_library_s=med,
            time_reference_s=med_ref,
            time_topomodelx_s=t_tmx,
            topomodelx_samples_timed=min(n_tmx, batch) if have_tmx else None,
            samples_per_s=batch / med,
            gflops_library=flops / med / 1e9,
            gflops_reference=flops / med_ref / 1e9,
            gflops_stacked_gemm=stacked,
            gflops_square_gemm=square,
            fraction_of_stacked=flops / med / 1e9 / stacked,
            speedup_vs_reference=med_ref / med,
            speedup_vs_topomodelx=None if t_tmx is None else t_tmx / med,
            times_library_s=t_ours,
            times_reference_s=t_ref,
        )
        if memory:
            th = torch.get_num_threads()
            row["peak_gib_library"] = peak_memory_gib(case, "library", th)
            row["peak_gib_reference"] = peak_memory_gib(case, "reference", th)
        rows.append(row)
        del ours, ref, x

    lines = [
        f"One training step (forward + backward), width 64, K_down = K_up = 2, tanh, bias, "
        f"mean readout, float32, {torch.get_num_threads()} threads, torch {torch.__version__}. "
        f"Square 2048^2 GEMM: {square:.1f} GFLOP/s. Times are medians of {repeats} steps.",
        "",
        "| edges | batch | layers | GFLOP/step | library s/step | samples/s | library GFLOP/s "
        "| stacked GEMM GFLOP/s | library / stacked | reference s/step | vs reference "
        "| TopoModelX s/step | vs TopoModelX |"
        + (" peak library / reference (GiB) |" if memory else ""),
        "|" + "---|" * (13 + (1 if memory else 0)),
    ]
    for r in rows:
        tmx = (
            f"{r['time_topomodelx_s']:.2f} (from {r['topomodelx_samples_timed']} samples) "
            f"| {r['speedup_vs_topomodelx']:.1f}x"
            if r["time_topomodelx_s"] is not None
            else "not installed | —"
        )
        line = (
            f"| {r['num_edges']:,} | {r['batch_size']} | {r['layers']} | {r['gflop_per_step']:.1f} "
            f"| {r['time_library_s']:.3f} | {r['samples_per_s']:.0f} | {r['gflops_library']:.1f} "
            f"| {r['gflops_stacked_gemm']:.1f} | {100 * r['fraction_of_stacked']:.0f} % "
            f"| {r['time_reference_s']:.3f} | {r['speedup_vs_reference']:.2f}x | {tmx} |"
        )
        if memory:
            line += f" {r['peak_gib_library']:.2f} / {r['peak_gib_reference']:.2f} |"
        lines.append(line)
    text = "\n".join(lines)
    print("\n" + text)
    if out is not None:
        from topo_contrastive._utils.files import write_json, write_text

        write_json(out.with_suffix(".json"), rows)
        write_text(out.with_suffix(".md"), text + "\n")
    return rows


def _pairs(text: str) -> tuple[tuple[int, int], ...]:
    out = []
    for item in text.split(","):
        points, batch = item.split(":")
        out.append((int(points), int(batch)))
    return tuple(out)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--cases", type=_pairs, default=((400, 200), (6700, 16)),
        help="comma-separated POINTS:BATCH pairs (default 400:200,6700:16: about 1,100 edges "
        "with 200 flows and 20,000 edges with 16 flows)",
    )
    p.add_argument("--layers", type=_ints, default=(2, 4), help="layer counts (default 2,4)")
    p.add_argument("--repeats", type=int, default=5, help="timed steps each (default 5)")
    p.add_argument(
        "--tmx-samples", type=_ints, default=(20, 1),
        help="samples TopoModelX is timed on, per case; scaled to the batch (default 20,1)",
    )
    p.add_argument(
        "--threads", type=int, default=0, help="torch threads (default 0: PyTorch's default)"
    )
    p.add_argument("--memory", action="store_true", help="also measure peak memory per step")
    p.add_argument("--seed", type=int, default=0, help="seed of points, flows, weights")
    p.add_argument(
        "--out", type=Path, default=None,
        help="write OUT.json and OUT.md (e.g. benchmarks/results/bench_scnn)",
    )
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(
        cases=a.cases,
        layers=a.layers,
        repeats=a.repeats,
        tmx_samples=a.tmx_samples,
        threads=a.threads,
        memory=a.memory,
        seed=a.seed,
        out=a.out,
    )
