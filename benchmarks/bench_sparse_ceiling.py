"""Benchmark: how fast the library's SCNN step could be with free sparse products — the
measured ceiling of issue 27 item 4 ("the step >= 85 % of the stacked-GEMM rate").

Every lever item 4 names (edge-major blocks, CSR threading, fused Laplacian powers,
``torch_sparse``) changes only how the products ``L X`` are done; the dense work (the
``1 + K_down + K_up`` products with the weights per layer, forward and backward), the
activation and the readout stay. So the step cannot get faster than the same step whose
sparse products cost nothing. This script measures that step directly: the same encoder,
batch and weights, run once with the complex's Laplacians and once with **empty** sparse
operators of the same shape (no non-zeros: every ``L X`` is an all-zero product of the same
shape, which costs a pass over its output and no gathers). Both are timed interleaved step
by step in the same run, beside the stacked-GEMM rate (``bench_scnn.gemm_rate``: the layer's
dense work as one ``[B*N1, 5*64] @ [5*64, 64]`` product).

Columns: the library step and its share of the stacked-GEMM rate (useful FLOPs of the real
step, sparse included, over its time: what ``bench_scnn.md`` reports); the step with free
sparse products; the **ceiling** = the same useful FLOPs over the free step's time, i.e. the
best share any sparse layout could reach; and the share of the step the sparse products
take today. A target above the ceiling is below the measured bound.

Also timed, per sparse product, one layer's ``L X`` of the batch in the library's layout
(sample-major rows, one block-diagonal CSR per chunk, as the kernel runs it) and in the
edge-major layout ``L [N1, B*C]`` (``torch.sparse.mm`` on the CSR operator): the lever
measured earlier as 25 % faster per product.

    python benchmarks/bench_sparse_ceiling.py              # ~2 min on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scnn import Case, build, gemm_rate, step, step_flops  # noqa: E402

from topo_contrastive import __version__  # noqa: E402
from topo_contrastive._files import write_json, write_text  # noqa: E402
from topo_contrastive.nn._scnn_kernel import chunk_samples, prepare_operator  # noqa: E402


def empty_like(L: torch.Tensor) -> torch.Tensor:
    """A sparse COO operator of ``L``'s shape and dtype without any non-zero."""
    return torch.sparse_coo_tensor(
        torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=L.dtype), L.shape,
        check_invariants=True,
    ).coalesce()


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def product_times(L: torch.Tensor, batch: int, channels: int, repeats: int) -> dict:
    """Seconds for one ``L X`` over the whole batch, library layout vs edge-major."""
    n1 = L.shape[0]
    x = torch.randn(batch * n1, channels)  # sample-major rows [B*N1, C]
    b = chunk_samples(batch, n1, torch.device("cpu"))
    block = prepare_operator(L, normalize=False).block(b)[0]  # block-diagonal CSR
    chunks = [(lo, min(lo + b, batch)) for lo in range(0, batch, b)]

    def library() -> None:
        for lo, hi in chunks:
            rows = (hi - lo) * n1
            blk = block if hi - lo == b else prepare_operator(L, False).block(hi - lo)[0]
            torch.mm(blk, x[lo * n1 : lo * n1 + rows])

    csr = L.coalesce().to_sparse_csr()
    xe = torch.randn(n1, batch * channels)  # edge-major [N1, B*C]

    def edge_major() -> None:
        torch.sparse.mm(csr, xe)

    library(), edge_major()  # warm-up
    return {"library_s": _median_time(library, repeats),
            "edge_major_s": _median_time(edge_major, repeats), "chunk_samples": b}  # fmt: skip


def main(
    num_points: int = 400,
    batch: int = 200,
    layers: tuple[int, ...] = (2, 4),
    repeats: int = 7,
    threads: int = 0,
    seed: int = 0,
    out: Path | None = None,
) -> list[dict]:
    """Run, print a Markdown table, optionally write ``out.json`` / ``out.md``."""
    if threads > 0:
        torch.set_num_threads(threads)
    rows = []
    for nl in layers:
        case = Case(num_points, batch, nl, seed=seed)
        ops, x, L_down, L_up, ours, _ = build(case)
        E_down, E_up = empty_like(L_down), empty_like(L_up)
        stacked = gemm_rate(batch * ops.num_edges, (1 + 2 * case.K) * case.hidden, case.hidden)
        for _ in range(2):  # warm-up: prepares both operator pairs
            step(ours, x, L_down, L_up)
            step(ours, x, E_down, E_up)
        real, free = [], []
        for _ in range(repeats):
            real.append(step(ours, x, L_down, L_up))
            free.append(step(ours, x, E_down, E_up))
        flops = step_flops(case, ops.num_edges, L_down._nnz(), L_up._nnz())
        t_real, t_free = statistics.median(real), statistics.median(free)
        prod = product_times(L_down, batch, case.hidden, repeats)
        rows.append({
            "num_edges": ops.num_edges, "batch_size": batch, "layers": nl,
            "gflop_per_step": flops / 1e9, "stacked_gemm_gflops": stacked,
            "step_s": t_real, "step_runs_s": real, "free_step_s": t_free, "free_runs_s": free,
            "share_of_stacked": flops / t_real / 1e9 / stacked,
            "ceiling_share_of_stacked": flops / t_free / 1e9 / stacked,
            "sparse_share_of_step": 1.0 - t_free / t_real,
            "product_library_s": prod["library_s"], "product_edge_major_s": prod["edge_major_s"],
            "chunk_samples": prod["chunk_samples"],
        })  # fmt: skip
    head = (f"One training step (forward + backward) of the library's SCNN, width 64, K = 2, "
            f"tanh, bias, mean readout, float32, {torch.get_num_threads()} threads, torch "
            f"{torch.__version__}, topo_contrastive {__version__}; medians of {repeats} steps, "
            "real and free steps interleaved.\n\n")  # fmt: skip
    table = [
        "| edges | batch | layers | stacked GEMM GFLOP/s | step s | step / stacked | step with "
        "free sparse products s | **ceiling** / stacked | sparse share of the step | one `L X`:"
        " library layout ms | edge-major ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(
            f"| {r['num_edges']:,} | {r['batch_size']} | {r['layers']} | "
            f"{r['stacked_gemm_gflops']:.1f} | {r['step_s']:.3f} | "
            f"{100 * r['share_of_stacked']:.0f} % | {r['free_step_s']:.3f} | "
            f"**{100 * r['ceiling_share_of_stacked']:.0f} %** | "
            f"{100 * r['sparse_share_of_step']:.0f} % | {1e3 * r['product_library_s']:.1f} | "
            f"{1e3 * r['product_edge_major_s']:.1f} |"
        )
    text = head + "\n".join(table) + "\n"
    print(text)
    if out is not None:
        write_json(out.with_suffix(".json"), {"rows": rows, "threads": torch.get_num_threads(),
                                              "torch": torch.__version__})  # fmt: skip
        write_text(out.with_suffix(".md"), text)
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, default=400,
                   help="Delaunay points (default 400: about 1,100 edges)")  # fmt: skip
    p.add_argument("--batch", type=int, default=200, help="samples per step (default 200)")
    p.add_argument("--layers", type=int, nargs="+", default=[2, 4],
                   help="layer counts (default 2 4)")  # fmt: skip
    p.add_argument("--repeats", type=int, default=7, help="timed steps each (default 7)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    p.add_argument("--seed", type=int, default=0, help="seed of points, flows, weights (0)")
    p.add_argument("--out", type=Path, default=None,
                   help="write OUT.json and OUT.md (e.g. benchmarks/results/bench_sparse_ceiling)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(a.points, a.batch, tuple(a.layers), a.repeats, a.threads, a.seed, a.out)
