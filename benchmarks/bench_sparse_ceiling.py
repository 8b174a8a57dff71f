"""Benchmark: how fast the library's SCNN step could be with free sparse products — the
measured ceiling of the target ("the step >= 85 % of the stacked-GEMM rate").

Every lever the target names (edge-major blocks, CSR threading, fused Laplacian powers,
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
(sample-major rows, one block-diagonal CSR per chunk, as the kernel runs it) and in every
other layout or kernel item 4 names (:func:`product_variants`): the same with one thread (CSR
threading), scipy's CSR kernel, a torch COO operator, the edge-major layout ``L [N1, B*C]``
(``torch.sparse.mm``; measured earlier as 25 % faster per product), and ``L (L X)`` against
one product with the precomputed ``L^2`` (fused powers), and, where ``numba`` is installed
(it is not a dependency), a hand-written CSR row loop compiled by numba (one thread: per row,
the weighted rows of its neighbours summed in place; the kernel a custom SpMM would start
from). ``torch_sparse`` has no wheel for this torch on the project's registries and is not
timed.

    python benchmarks/bench_sparse_ceiling.py              # ~2 min on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scnn import Case, build, gemm_rate, step, step_flops  # noqa: E402

from topo_contrastive import __version__  # noqa: E402
from topo_contrastive._utils.files import write_json, write_text  # noqa: E402
from topo_contrastive.complex import Laplacians  # noqa: E402
from topo_contrastive.nn._scnn_kernel import (  # noqa: E402
    _leading_blocks,
    chunk_samples,
    prepare_operator,
)
from topo_contrastive.nn.scnn import locality_order  # noqa: E402


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


def product_variants(L: torch.Tensor, x: torch.Tensor, batch: int) -> dict:
    """One ``L X`` of a batch in the library's layout and in the other layouts and kernels
    the target names as levers. ``fns[name]()`` computes the product as the timing sees
    it (a list of chunk products, or the edge-major ``[N1, B*C]``: nothing gathered), and
    ``rows(name, fns[name]())`` puts it into sample-major rows ``[B*N1, C]`` (so the variants
    can be checked against each other):

    - ``library``: one block-diagonal CSR product ``I_b (x) L`` per chunk (the kernel's);
    - ``scipy``: the same products with scipy's CSR kernel (single-threaded);
    - ``coo``: the same with the operators as torch COO tensors;
    - ``edge_major``: ``torch.sparse.mm`` of the CSR operator and edge-major ``[N1, B*C]``
      (the input transposed once, outside the timed call);
    - ``two_powers`` / ``fused_square``: ``L (L X)`` as two products against one product
      with the precomputed ``L^2`` (fused Laplacian powers); these give ``L^2 X``;
    - ``row_loop``: the same block products with :func:`_row_loop_kernel` (only where
      ``numba`` is installed).

    Args:
        L: sparse COO ``[N1, N1]`` float32.
        x: sample-major rows ``[B*N1, C]`` float32.
        batch: ``B``.
    """
    import scipy.sparse as sp

    n1, channels = L.shape[0], x.shape[1]
    b = chunk_samples(batch, n1, torch.device("cpu"))
    chunks = [(lo, min(lo + b, batch)) for lo in range(0, batch, b)]
    prepared = prepare_operator(Laplacians(L, None, symmetric=True), "down", False)
    blocks = {hi - lo: _leading_blocks(prepared.block(hi - lo)[:3], n1, hi - lo)
              for lo, hi in chunks}  # fmt: skip
    coo = {k: v.to_sparse_coo().coalesce() for k, v in blocks.items()}
    sci = {k: sp.csr_matrix((v.values().numpy(), v.col_indices().numpy(),
                             v.crow_indices().numpy()), shape=v.shape)
           for k, v in blocks.items()}  # fmt: skip
    Lc = L.coalesce()
    L_sp = sp.csr_matrix((Lc.values().numpy(), Lc.indices().numpy()), shape=Lc.shape)
    sq = torch.sparse_coo_tensor(*_indices_values(L_sp @ L_sp), L.shape,
                                 check_invariants=True).coalesce()  # fmt: skip
    sq_prepared = prepare_operator(Laplacians(sq, None), "down", False)
    sq_blocks = {k: _leading_blocks(sq_prepared.block(k)[:3], n1, k) for k in blocks}
    x_np = x.numpy()

    def run(ops: dict) -> list:
        return [torch.mm(ops[hi - lo], x[lo * n1 : hi * n1]) for lo, hi in chunks]

    def two_powers() -> list:
        return [torch.mm(blocks[hi - lo], torch.mm(blocks[hi - lo], x[lo * n1 : hi * n1]))
                for lo, hi in chunks]  # fmt: skip

    def scipy_run() -> list:
        return [sci[hi - lo] @ x_np[lo * n1 : hi * n1] for lo, hi in chunks]

    csr = Lc.to_sparse_csr()
    xe = x.view(batch, n1, channels).permute(1, 0, 2).reshape(n1, batch * channels)  # [N1, B*C]

    def rows(name: str, out) -> torch.Tensor:
        if name == "edge_major":  # [N1, B*C] -> [B*N1, C]
            return out.view(n1, batch, channels).permute(1, 0, 2).reshape(batch * n1, channels)
        return torch.cat([torch.as_tensor(o) for o in out])

    fns = {"library": lambda: run(blocks), "scipy": scipy_run, "coo": lambda: run(coo),
           "edge_major": lambda: torch.sparse.mm(csr, xe), "two_powers": two_powers,
           "fused_square": lambda: run(sq_blocks)}  # fmt: skip
    kernel = _row_loop_kernel()
    if kernel is not None:
        parts = {k: (v.crow_indices().numpy(), v.col_indices().numpy(), v.values().numpy())
                 for k, v in blocks.items()}  # fmt: skip

        def row_loop() -> list:
            outs = []
            for lo, hi in chunks:
                o = np.empty(((hi - lo) * n1, channels), dtype=np.float32)
                kernel(*parts[hi - lo], x_np[lo * n1 : hi * n1], o)
                outs.append(o)
            return outs

        fns["row_loop"] = row_loop
    return {"fns": fns, "rows": rows, "chunk_samples": b, "nnz": int(Lc._nnz()),
            "nnz_square": int(sq._nnz())}  # fmt: skip


def _row_loop_kernel():
    """``kernel(crow, col, val, X, out)``: ``out = L X`` for CSR ``L``, one row at a time
    (numba-compiled; ``None`` where numba is not installed)."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True, boundscheck=False)
    def kernel(crow, col, val, X, out):  # pragma: no cover - compiled
        for i in range(out.shape[0]):
            for c in range(out.shape[1]):
                out[i, c] = 0.0
            for j in range(crow[i], crow[i + 1]):
                v, r = val[j], col[j]
                for c in range(out.shape[1]):
                    out[i, c] += v * X[r, c]

    return kernel


def product_times(L: torch.Tensor, batch: int, channels: int, repeats: int) -> dict:
    """Seconds for one ``L X`` over the whole batch per variant of :func:`product_variants`
    (``<name>_s``; ``L`` in the kernel's edge order from ``nn._scnn_kernel.MIN_EDGES`` edges
    on), plus ``library_1thread_s``: the library's product with one torch thread
    (CSR threading: the second thread's speed-up is ``library_1thread_s / library_s``)."""
    order = locality_order(Laplacians(L, None, symmetric=True))
    if order is not None:  # the edge order the kernel runs in (nn/scnn.py)
        L = order.laplacians.down
    n1 = L.shape[0]
    x = torch.randn(batch * n1, channels)  # sample-major rows [B*N1, C]
    v = product_variants(L, x, batch)
    fns = v["fns"]
    out: dict = {k: v[k] for k in ("chunk_samples", "nnz", "nnz_square")}
    out["row_loop_s"] = None
    for name, fn in fns.items():
        fn()  # warm-up
        out[f"{name}_s"] = _median_time(fn, repeats)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fns["library"]()
        out["library_1thread_s"] = _median_time(fns["library"], repeats)
    finally:
        torch.set_num_threads(threads)
    return out


def _ms(seconds: float | None) -> str:
    return "n/a (numba not installed)" if seconds is None else f"{1e3 * seconds:.1f}"


def _indices_values(m) -> tuple[torch.Tensor, torch.Tensor]:
    """COO indices ``[2, nnz]`` and float32 values of a scipy sparse matrix."""
    c = m.tocoo()
    idx = torch.from_numpy(np.stack([c.row, c.col]).astype(np.int64))
    return idx, torch.from_numpy(c.data.astype(np.float32))


def main(
    num_points: int = 400,
    batch: int = 200,
    layers: tuple[int, ...] = (2, 4),
    repeats: int = 7,
    threads: int = 0,
    seed: int = 0,
    out: Path | None = None,
    width: int = 64,
) -> list[dict]:
    """Run, print a Markdown table, optionally write ``out.json`` / ``out.md``."""
    if threads > 0:
        torch.set_num_threads(threads)
    rows = []
    for nl in layers:
        case = Case(num_points, batch, nl, hidden=width, seed=seed)
        ops, x, laplacians, ours, _ = build(case)
        L_down, L_up = laplacians
        empty = Laplacians(empty_like(L_down), empty_like(L_up), symmetric=True)
        stacked = gemm_rate(batch * ops.num_edges, (1 + 2 * case.K) * case.hidden, case.hidden)
        for _ in range(2):  # warm-up: prepares both operator pairs
            step(ours, x, laplacians)
            step(ours, x, empty)
        real, free = [], []
        for _ in range(repeats):
            real.append(step(ours, x, laplacians))
            free.append(step(ours, x, empty))
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
            **{f"product_{k}": v for k, v in prod.items()},
        })  # fmt: skip
    head = (f"One training step (forward + backward) of the library's SCNN, width {width}, "
            f"K = 2, tanh, bias, mean readout, float32, {torch.get_num_threads()} threads, torch "
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
    levers = [
        "",
        f"One `L_down X` of the whole batch ({width} channels), ms, per layout and kernel (the "
        "levers of item 4; medians):",
        "",
        "| edges | layers | library (block CSR, torch) | same, 1 thread | 2nd thread speed-up | "
        "scipy CSR (1 thread) | torch COO | edge-major `[N1, B*C]` | `L (L X)`: two products | "
        "`L^2 X`: one fused product (nnz L / L^2) | CSR row loop (numba, 1 thread) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        levers.append(
            f"| {r['num_edges']:,} | {r['layers']} | {1e3 * r['product_library_s']:.1f} | "
            f"{1e3 * r['product_library_1thread_s']:.1f} | "
            f"{r['product_library_1thread_s'] / r['product_library_s']:.2f}x | "
            f"{1e3 * r['product_scipy_s']:.1f} | {1e3 * r['product_coo_s']:.1f} | "
            f"{1e3 * r['product_edge_major_s']:.1f} | {1e3 * r['product_two_powers_s']:.1f} | "
            f"{1e3 * r['product_fused_square_s']:.1f} ({r['product_nnz']:,} / "
            f"{r['product_nnz_square']:,}) | {_ms(r['product_row_loop_s'])} |"
        )
    text = head + "\n".join(table + levers) + "\n"
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
    p.add_argument("--width", type=int, default=64, help="encoder width (default 64)")
    p.add_argument("--out", type=Path, default=None,
                   help="write OUT.json and OUT.md (e.g. benchmarks/results/bench_sparse_ceiling)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(a.points, a.batch, tuple(a.layers), a.repeats, a.threads, a.seed, a.out, a.width)
