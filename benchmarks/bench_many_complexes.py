"""Benchmark: a batch of many different complexes through the public pipeline.

Data: ``--complexes`` Delaunay complexes of uniform random points (40-95 points each: about
100-270 edges), every triangle filled, one random-walk flow each, as
:class:`topo_contrastive.data.ComplexData` samples (their own incidences).

Measured in one run, on this machine:

1. **Preparation** (``ContrastiveViews(HodgeSpectralMask(0.3)).fit``): the Hodge parts and
   the drop probabilities of ``--fit-complexes`` samples, each on its own complex (chunks of
   samples on their block-diagonal complex, the ``"blocks"`` backend). Wall time, and the
   time of the same work done one sample at a time for ``--loop-samples`` samples
   (scaled linearly) as the baseline.
2. **Training step** on one batch of ``--complexes`` samples: the batch's block-diagonal
   Laplacians, the encoder (``--layers`` SCNN layers of width 64, ``K = 2``, tanh, bias,
   mean readout) on both views, the projection head, the Hodge-debiased loss with
   energy-fraction weights, backward. Medians of ``--repeats`` steps (the Laplacians of a
   new batch are timed apart: they are built once per batch).
3. **Stacked-GEMM bound** of that step: the dense work of every layer (forward, weight
   gradient, input gradient; both views) at the rate of one large GEMM
   ``[sum N1, 5 * 64] @ [5 * 64, 64]`` measured in the same run; the ratio bound / step is
   the share of the step spent at GEMM speed (the sparse products and the rest cost the
   remainder).
4. **TopoModelX per sample** (needs ``topomodelx`` installed, as docs/install.md says): its
   ``SCNNLayer`` stack applied sample by sample, both views, one backward; timed on
   ``--tmx-samples`` samples and scaled to the batch.
5. **Peak memory** of one step: the running sum of the tensor memory each operator
   allocates and frees, from torch's profiler.
6. **The sparse products** of the step timed alone: the bound leaves them out, so
   ``bound / (bound + sparse)`` is the ceiling of the ratio ``bound / step``.

Prints a Markdown table of times and ratios; ``--out`` writes it with a JSON record.

    python benchmarks/bench_many_complexes.py --out benchmarks/results/bench_many_complexes
    (TopoModelX is timed where it is installed)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.spatial
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo_contrastive import ComplexOperators  # noqa: E402
from topo_contrastive.data import ComplexData  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks")


def make_samples(num: int, seed: int) -> list[ComplexData]:
    """``num`` Delaunay complexes of 40-95 points with a random-walk flow each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(num):
        n = int(rng.integers(40, 96))
        tri = scipy.spatial.Delaunay(rng.random((n, 2))).simplices
        edges = np.unique(np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]],
                                                  tri[:, [0, 2]]]), axis=1), axis=0)  # fmt: skip
        ops = ComplexOperators.from_simplices(edges, tri, n)
        nbrs = [[] for _ in range(n)]
        for u, v in edges.tolist():
            nbrs[u].append(v)
            nbrs[v].append(u)
        path = [int(rng.integers(n))]
        for _ in range(15):
            options = [v for v in nbrs[path[-1]] if v not in path]
            if not options:
                break
            path.append(int(rng.choice(options)))
        out.append(ComplexData.from_complex(ops, x_1=ops.path_to_flow(path).view(-1, 1)))
    return out


def _gemm_rate(m: int, k: int, n: int, repeats: int = 5) -> float:
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    torch.mm(a, b, out=out)
    best = min(_timed(lambda: torch.mm(a, b, out=out)) for _ in range(repeats))
    return 2.0 * m * k * n / best


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _step_flops(rows: int, layers: int, hidden: int, K: int) -> float:
    """Dense FLOPs of the encoder on both views: forward, weight and input gradients."""
    total = 0.0
    for i in range(layers):
        c_in = 1 if i == 0 else hidden
        dense = 2.0 * rows * (1 + 2 * K) * c_in * hidden
        total += dense * (2 if i == 0 else 3)
    return 2 * total  # two views


def _peak_tensor_mib(fn) -> float:
    """Peak of the tensor memory allocated while ``fn`` runs, in MiB (torch's profiler)."""
    from torch.profiler import profile

    with profile(profile_memory=True) as prof:
        fn()
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    current = peak = 0
    for e in events:
        current += e.self_cpu_memory_usage
        peak = max(peak, current)
    return peak / 2**20


def main(
    complexes: int = 256,
    fit_complexes: int = 10_000,
    loop_samples: int = 200,
    layers: int = 2,
    repeats: int = 7,
    tmx_samples: int = 16,
    seed: int = 0,
    out: Path | None = None,
) -> dict:
    """Run the benchmark; print and optionally write the table; return the record."""
    from torch_geometric.data import Batch

    from topo_contrastive import ContrastiveViews, HodgeDecomposition, HodgeSpectralMask
    from topo_contrastive.losses import HodgeDebiasedInfoNCE
    from topo_contrastive.nn import SCNN, ProjectionHead
    from topo_contrastive.transforms import optimize_drop_probabilities

    record: dict = {"threads": torch.get_num_threads(), "complexes": complexes}
    # 1. preparation of many samples, and the same one sample at a time
    fit_samples = make_samples(fit_complexes, seed + 1)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=seed))
    t0 = time.perf_counter()
    views.fit(fit_samples)
    record["fit_s"] = time.perf_counter() - t0
    record["fit_complexes"] = fit_complexes
    record["fit_edges"] = int(sum(int(s.num_cells(1)) for s in fit_samples))
    t0 = time.perf_counter()
    for s in fit_samples[:loop_samples]:  # the baseline: one sample at a time
        hodge = HodgeDecomposition(s.complex())
        hodge(s.x_1.view(1, -1))
        optimize_drop_probabilities(s.x_1.view(1, -1), hodge, 0.3)
    record["loop_s_scaled"] = (time.perf_counter() - t0) * fit_complexes / loop_samples
    del fit_samples

    # 2. one training step on a batch of `complexes` samples
    samples = views.fit(make_samples(complexes, seed))
    batch = views(Batch.from_data_list(samples))
    rows = int(batch.num_cells(1).sum())
    record["edges"] = rows
    torch.manual_seed(seed)
    encoder = SCNN(1, 64, num_layers=layers, K_down=2, K_up=2)
    head = ProjectionHead(64, 64, 64)
    loss_fn = HodgeDebiasedInfoNCE(0.5)
    params = [*encoder.parameters(), *head.parameters()]

    def laplacians() -> tuple:
        fresh = Batch.from_data_list(samples)  # a new batch has no cached operators
        return fresh.laplacians()

    def step(L) -> None:
        for p in params:
            p.grad = None
        z1 = head(encoder(batch.x_1_view1, L, batch.batch_1))
        z2 = head(encoder(batch.x_1_view2, L, batch.batch_1))
        loss_fn(z1, z2, hodge_parts=batch.hodge_parts, batch=batch.batch_1).backward()

    L = laplacians()
    # 5. peak memory of one step: the running sum of the tensor memory that each operator
    # allocates and frees (torch's profiler), in the order they ran; the resident set cannot
    # show it (the allocator keeps freed memory for reuse)
    record["peak_mib"] = _peak_tensor_mib(lambda: step(L))
    for _ in range(2):
        step(L)
    steps, lap = [], []
    for _ in range(repeats):
        lap.append(_timed(laplacians))
        steps.append(_timed(lambda: step(L)))
    record["step_s"] = statistics.median(steps)
    record["laplacians_s"] = statistics.median(lap)
    # 3. the stacked-GEMM bound
    rate = _gemm_rate(rows, 5 * 64, 64)
    record["gemm_gflops"] = rate / 1e9
    record["bound_s"] = _step_flops(rows, layers, 64, 2) / rate
    # the sparse products of the step, which the bound leaves out: per layer and view,
    # K_down + K_up products forward and as many in the backward pass (the input gradient;
    # the first layer recomputes its basis instead, as profiled), on the batch's
    # block-diagonal Laplacians in CSR form
    csr = [lap.coalesce().to_sparse_csr() for lap in L]
    record["sparse_s"] = 0.0
    for i in range(layers):
        x = torch.randn(rows, 1 if i == 0 else 64)
        products = 2 * 2 * 2  # two Laplacians, K = 2 each, forward and backward
        per = statistics.median(
            _timed(lambda x=x: [torch.sparse.mm(c, x) for c in csr]) for _ in range(repeats)
        )
        record["sparse_s"] += 2 * products * per / len(csr)  # two views
    # 4. TopoModelX, sample by sample
    try:
        from topomodelx.nn.simplicial.scnn_layer import SCNNLayer
    except ImportError:
        record["tmx_s_scaled"] = None
    else:
        torch.manual_seed(seed)
        tmx = torch.nn.ModuleList(SCNNLayer(1 if i == 0 else 64, 64, 2, 2) for i in range(layers))
        per = [(s.laplacians(), s) for s in samples[:tmx_samples]]

        def tmx_step() -> None:
            outs = []
            for view in ("x_1_view1", "x_1_view2"):
                for (Ld, Lu), s in per:
                    e = s.x_1 if view == "x_1_view1" else -s.x_1
                    for layer in tmx:
                        e = torch.tanh(layer(e, Ld, Lu))
                    outs.append(e.mean(0))
            torch.stack(outs).pow(2).sum().backward()

        tmx_step()
        t = statistics.median(_timed(tmx_step) for _ in range(repeats))
        record["tmx_s_scaled"] = t * complexes / tmx_samples
    _report(record, out)
    return record


def _report(r: dict, out: Path | None) -> None:
    lines = [
        f"Batch of {r['complexes']} complexes, {r['edges']} edges, {r['threads']} threads.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| preparation of {r['fit_complexes']} complexes ({r['fit_edges']} edges), batched | "
        f"{r['fit_s']:.1f} s |",
        f"| the same one sample at a time (scaled) | {r['loop_s_scaled']:.1f} s "
        f"({r['loop_s_scaled'] / r['fit_s']:.1f}x) |",
        f"| training step (2 views, encoder, head, debiased loss, backward) | "
        f"{1e3 * r['step_s']:.1f} ms |",
        f"| the batch's Laplacians (once per batch) | {1e3 * r['laplacians_s']:.1f} ms |",
        f"| stacked-GEMM bound of the step ({r['gemm_gflops']:.0f} GFLOP/s) | "
        f"{1e3 * r['bound_s']:.1f} ms |",
        f"| bound / step | {r['bound_s'] / r['step_s']:.2f} |",
        f"| the step's sparse products alone (outside the bound) | "
        f"{1e3 * r['sparse_s']:.1f} ms |",
        f"| ceiling of bound / step: bound / (bound + sparse products) | "
        f"{r['bound_s'] / (r['bound_s'] + r['sparse_s']):.2f} |",
        f"| bound / (step + Laplacians) | "
        f"{r['bound_s'] / (r['step_s'] + r['laplacians_s']):.2f} |",
    ]
    if r.get("peak_mib") is not None:
        lines.append(
            f"| peak tensor memory of one step (above the batch and the model) "
            f"| {r['peak_mib']:.0f} MiB |"
        )
    if r.get("tmx_s_scaled") is not None:
        lines.append(
            f"| TopoModelX SCNNLayer per sample (scaled) | {1e3 * r['tmx_s_scaled']:.0f} ms "
            f"({r['tmx_s_scaled'] / r['step_s']:.1f}x the step) |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if out is not None:
        from topo_contrastive._utils.files import write_json, write_text

        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out.with_suffix(".md"), text)
        write_json(out.with_suffix(".json"), r)


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--complexes", type=int, default=256, help="complexes in the batch (256)")
    p.add_argument("--fit-complexes", type=int, default=10_000,
                   help="complexes prepared by fit (10000)")  # fmt: skip
    p.add_argument("--loop-samples", type=int, default=200,
                   help="samples of the one-at-a-time baseline (200)")  # fmt: skip
    p.add_argument("--layers", type=int, default=2, help="SCNN layers (2)")
    p.add_argument("--repeats", type=int, default=7, help="timed steps (7)")
    p.add_argument("--tmx-samples", type=int, default=16, help="TopoModelX samples (16)")
    p.add_argument("--seed", type=int, default=0, help="seed (0)")
    p.add_argument("--out", type=Path, default=None, help="write <out>.md and <out>.json")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = _parse()
    main(a.complexes, a.fit_complexes, a.loop_samples, a.layers, a.repeats, a.tmx_samples,
         a.seed, a.out)  # fmt: skip
