"""Benchmark: the training step of the paper's trajectory encoder, eager and under
``torch.compile``.

One step of the paper edition's trajectory rows: two masked views (uniform drop 0.1) of
``--batch`` Gaussian flows on the synthetic trajectory complex (400 points, two holes,
``generate_trajectory_complex()``), stacked in PyG's layout ``[2 B N1, 1]`` with the batch
vector, through ``SCNN(1, 64, num_layers=4, K_down=K_up=2, tanh, mean)`` and
``ProjectionHead(64, 64, 64)``, ``InfoNCE(temperature=0.2)``, backward and an Adam step, float32
on the CPU. Compiled: ``torch.compile`` of the encoder with ``fullgraph=True`` (the kernel is an
opaque custom op) and of the head with the loss (graph breaks allowed: the graph breaks of
each part are counted with ``torch._dynamo.explain`` and reported). Both variants start from
the same weights; the compiled step's loss is checked against the eager one.

Timing: medians of ``--repeats`` steps after ``--warmup`` steps (the compilation is timed in
the first warm-up step and reported apart), the two variants interleaved step by step, so that
drifts of a shared machine hit both alike. Results: ``benchmarks/results/bench_compile.{json,md}``.

Run::

    python benchmarks/bench_compile.py            # about 2 min on 2 cores
    python benchmarks/bench_compile.py --help
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo_contrastive._utils.files import write_json, write_text  # noqa: E402
from topo_contrastive.datasets import generate_trajectory_complex  # noqa: E402
from topo_contrastive.losses import InfoNCE  # noqa: E402
from topo_contrastive.nn import SCNN, ProjectionHead  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
RESULTS = Path(__file__).resolve().parent / "results"


def _breaks(fn, *args) -> dict:
    """Graph breaks of ``fn(*args)`` under ``torch._dynamo.explain`` (tracing only)."""
    explained = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    reasons = sorted({r.reason.splitlines()[0][:120] for r in explained.break_reasons})
    return {"graph_breaks": explained.graph_break_count, "reasons": reasons}


def _model(seed: int):
    torch.manual_seed(seed)
    encoder = SCNN(1, 64, num_layers=4, K_down=2, K_up=2, act="tanh", readout="mean")
    return encoder, ProjectionHead(64, 64, 64)


def _step(encoder, head_loss, optimizer, x, batch, laplacians) -> float:
    optimizer.zero_grad(set_to_none=True)
    loss = head_loss(encoder(x, laplacians, batch))
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def main(batch: int = 100, repeats: int = 10, warmup: int = 3, seed: int = 0,
         threads: int | None = None, out: Path = RESULTS) -> dict:  # fmt: skip
    """Time the eager and the compiled step; write ``bench_compile.{json,md}`` into ``out``."""
    if threads is not None:
        torch.set_num_threads(threads)
    ops, _ = generate_trajectory_complex()
    laplacians, n1 = ops.laplacians(), ops.num_edges
    g = torch.Generator().manual_seed(seed)
    flows = torch.randn(batch, n1, 1, generator=g)
    views = [flows * (torch.rand(batch, n1, 1, generator=g) >= 0.1) for _ in range(2)]
    x = torch.cat(views).reshape(-1, 1)  # [2 B N1, 1], PyG's layout
    ids = torch.arange(2 * batch).repeat_interleave(n1)
    loss_fn = InfoNCE(temperature=0.2)
    runs = {}
    for name in ("eager", "compiled"):
        encoder, head = _model(seed)

        def head_loss(h, head=head):
            z = head(h)
            return loss_fn(z[:batch], z[batch:])

        with torch.no_grad():
            encoder(x, laplacians, ids)  # prepares the operators (once per value)
        if name == "compiled":
            parts = {"encoder": _breaks(encoder, x, laplacians, ids)}
            parts["head and loss"] = _breaks(head_loss, torch.randn(2 * batch, 64))
            encoder = torch.compile(encoder, fullgraph=True)
            head_loss = torch.compile(head_loss)
        opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=0.003)
        runs[name] = {"encoder": encoder, "head_loss": head_loss, "opt": opt, "times": [],
                      "losses": []}  # fmt: skip
    for i in range(warmup + repeats):
        for run in runs.values():
            start = time.perf_counter()
            loss = _step(run["encoder"], run["head_loss"], run["opt"], x, ids, laplacians)
            seconds = time.perf_counter() - start
            run["losses"].append(loss)
            if i == 0:
                run["first_step_s"] = seconds  # the compilation
            elif i >= warmup:
                run["times"].append(seconds)
        losses = ", ".join(f"{k} {v['losses'][-1]:.5f}" for k, v in runs.items())
        print(f"step {i + 1}/{warmup + repeats}: loss {losses}", flush=True)
    eager, compiled = (statistics.median(runs[k]["times"]) for k in ("eager", "compiled"))
    result = {
        "torch": torch.__version__, "threads": torch.get_num_threads(), "N1": n1,
        "batch": batch, "views": 2 * batch, "repeats": repeats, "warmup": warmup, "seed": seed,
        "eager_step_s": eager, "compiled_step_s": compiled, "eager_over_compiled": eager / compiled,
        "first_step_s": {k: v["first_step_s"] for k, v in runs.items()},
        "times_s": {k: v["times"] for k, v in runs.items()},
        "first_loss": {k: v["losses"][0] for k, v in runs.items()}, "graph_breaks": parts,
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "bench_compile.json", result)
    write_text(out / "bench_compile.md", render(result))
    print(render(result))
    return result


def render(r: dict) -> str:
    """The Markdown table of :func:`main`'s results."""
    breaks = "; ".join(f"{k}: {v['graph_breaks']}" + (f" ({', '.join(v['reasons'])})"
                                                       if v["reasons"] else "")
                       for k, v in r["graph_breaks"].items())  # fmt: skip
    return (
        "# torch.compile of the training step\n\n"
        f"Trajectory complex (N1 = {r['N1']}), {r['views']} views, SCNN 4 x 64, "
        f"torch {r['torch']}, {r['threads']} threads; medians of {r['repeats']} steps.\n\n"
        "| step | median (s) | first step (s) |\n|---|---|---|\n"
        f"| eager | {r['eager_step_s']:.3f} | {r['first_step_s']['eager']:.2f} |\n"
        f"| compiled | {r['compiled_step_s']:.3f} | {r['first_step_s']['compiled']:.2f} |\n\n"
        f"Eager / compiled: **{r['eager_over_compiled']:.2f}x**. First loss eager "
        f"{r['first_loss']['eager']:.6f}, compiled {r['first_loss']['compiled']:.6f}. "
        f"Graph breaks: {breaks}.\n"
    )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=100, help="flows per step (two views each)")
    p.add_argument("--repeats", type=int, default=10, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (compilation)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights, flows and masks")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--out", type=Path, default=RESULTS, help="folder of the results")
    a = p.parse_args()
    main(a.batch, a.repeats, a.warmup, a.seed, a.threads, a.out)
