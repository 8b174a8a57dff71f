"""Benchmark: the real commands on synthetic road-like networks from 10k to 1M edges.

Networks: planar Delaunay triangulations of uniform random points in the unit square with
the trajectory task's two square holes (``benchmarks/_complexes.py``), every triangle filled
(``beta_1 = 2``), at ``--edges`` sizes (default 10k, 100k, 1M). On each, ``--flows`` random
simple paths (self-avoiding walks of 10-20 edges; default 256) are written as an edge-flow
file (``EdgeFlows.write_npz``), and the user's commands run on it in fresh processes, as a
user would run them:

- ``topo-contrastive pretrain --data-file ... --config SSCL_Spec --epochs 1`` with
  ``--hidden-channels`` (default 32) and ``--set batch_size=...`` (default 256: one
  contrastive batch of every flow), its other settings at their defaults (the HodgeReadout
  edition, the activation budget that turns on gradient caching where the batch does not
  fit); **set-up** is the command's wall time less its training loop (``pretrain.json``'s
  ``seconds``: reading the file, the Hodge parts and spectral drop probabilities of every
  flow, the encoder), **epoch** the training loop;
- ``topo-contrastive embed`` with the checkpoint: wall time.

Each command's peak memory is its peak resident set (``/usr/bin/time``'s maximum RSS). The
epoch's FLOP bound is ``bench_roofline.py``'s count of the epoch's dense and sparse FLOPs at
the stacked-GEMM rate measured here (``[rows, (1 + K) C] @ [(1 + K) C, C]``, rows capped at
2^20, where the rate has long saturated). Reported: a table per size, the least-squares
log-log slopes of time and memory against the edges, and a log-log figure.

Run::

    python benchmarks/bench_city_scaling.py --out benchmarks/results/bench_city_scaling
    python benchmarks/bench_city_scaling.py --edges 2000,8000 --flows 32 --out /tmp/cs  # quick
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._complexes import delaunay_complex, random_node_paths  # noqa: E402
from benchmarks.bench_roofline import epoch_work  # noqa: E402
from benchmarks.bench_scaling import _sizes, loglog_slope  # noqa: E402
from benchmarks.bench_scnn import gemm_rate  # noqa: E402
from topo_contrastive.datasets import EdgeFlows  # noqa: E402
from topo_contrastive.io import load_encoder  # noqa: E402

#: the slopes the issue asks for: time and memory at most this power of the edges
TARGET_SLOPE = 1.15
#: the 1M-edge epoch: at most this multiple of its FLOP bound, and at most this peak
TARGET_RATIO = 2.5
TARGET_PEAK_GB = 12.0


def timed(cmd: list[str], cwd: Path) -> dict[str, Any]:
    """Run ``cmd`` under ``/usr/bin/time``: ``{"wall_s", "peak_gb", "stderr"}``.

    Raises:
        RuntimeError: the command failed (its last lines of stderr).
    """
    marker = "@@peak_kib="
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", f"{marker}%M", *cmd], capture_output=True,
                          text=True, cwd=cwd)  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    peak = [ln for ln in proc.stderr.splitlines() if ln.startswith(marker)]
    return {"wall_s": wall, "peak_gb": int(peak[-1][len(marker):]) * 1024 / 1e9,
            "stderr": proc.stderr}  # fmt: skip


def one_size(num_edges: int, flows: int, width: int, batch: int, seed: int,
             workdir: Path) -> dict[str, Any]:
    """Write the network of ``num_edges`` edges with its flows; time its commands."""
    t0 = time.perf_counter()
    ops = delaunay_complex(num_edges, seed=seed)
    paths = random_node_paths(ops, flows, seed=seed)
    data_file = workdir / f"network_{num_edges}.npz"
    EdgeFlows.write_npz(data_file, ops, paths=paths)
    build_s = time.perf_counter() - t0
    cli = [sys.executable, "-m", "topo_contrastive.cli"]
    common = ["--data-file", str(data_file), "--no-progress", "--data-root", str(workdir)]
    out = workdir / f"pretrain_{num_edges}"
    pre = timed([*cli, "pretrain", "--config", "SSCL_Spec", "--epochs", "1",
                 "--hidden-channels", str(width), "--set", f"batch_size={batch}",
                 "--out", str(out), "--overwrite", "--seed", str(seed), *common], ROOT)  # fmt: skip
    record = json.loads((out / "pretrain.json").read_text())
    emb_out = workdir / f"embed_{num_edges}"
    emb = timed([*cli, "embed", "--checkpoint", str(out / "encoder.pt"),
                 "--out", str(emb_out), "--overwrite", *common], ROOT)  # fmt: skip
    encoder, _ = load_encoder(out / "encoder.pt", complex=ops)
    L_down, L_up = ops.L_down, ops.L_up
    work = epoch_work(encoder, (encoder.out_channels, record["config"]["projection_channels"]),
                      ops.num_edges, int(L_down.nnz), int(L_up.nnz), flows, batch)  # fmt: skip
    terms = 1 + record["config"]["K_down"] + record["config"]["K_up"]
    threads = int(record.get("threads") or torch.get_num_threads())
    torch.set_num_threads(threads)
    rate = gemm_rate(min(2 * batch * ops.num_edges, 2**20), terms * width, width)
    bound = (work["dense_flops"] + work["sparse_flops"]) / rate / 1e9
    epoch = float(record["seconds"])
    return {
        "edges": ops.num_edges, "triangles": ops.num_faces, "flows": flows, "width": width,
        "batch": batch, "threads": threads, "build_s": build_s,
        "setup_s": pre["wall_s"] - epoch, "epoch_s": epoch, "pretrain_peak_gb": pre["peak_gb"],
        "embed_s": emb["wall_s"], "embed_peak_gb": emb["peak_gb"],
        "gflop": (work["dense_flops"] + work["sparse_flops"]) / 1e9, "gemm_gflops": rate,
        "bound_s": bound, "ratio": epoch / bound, "loss": record["final_loss"],
        "chunk_line": next((ln for ln in pre["stderr"].splitlines() if "caching" in ln), ""),
    }  # fmt: skip


def slopes(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Log-log slopes of every timed and measured column against the edges."""
    edges = [r["edges"] for r in rows]
    keys = ("setup_s", "epoch_s", "embed_s", "pretrain_peak_gb", "embed_peak_gb")
    return {k: loglog_slope(edges, [r[k] for r in rows]) for k in keys} if len(rows) > 1 else {}


def report(rows: list[dict[str, Any]], fitted: dict[str, float]) -> str:
    """The Markdown table, the slopes and the 1M-edge targets."""
    lines = [
        "| edges | set-up s | epoch s | FLOP bound s | epoch / bound | pretrain peak GB "
        "| embed s | embed peak GB | loss |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['edges']:,} | {r['setup_s']:.1f} | {r['epoch_s']:.1f} | {r['bound_s']:.1f} "
            f"| {r['ratio']:.2f}x | {r['pretrain_peak_gb']:.2f} | {r['embed_s']:.1f} "
            f"| {r['embed_peak_gb']:.2f} | {r['loss']:.4f} |"
        )
    if fitted:
        listed = ", ".join(f"{k} {v:.2f}" for k, v in fitted.items())
        lines += ["", f"Log-log slopes against the edges (target at most {TARGET_SLOPE}): {listed}"]
    big = [r for r in rows if r["edges"] >= 10**6]
    for r in big:
        ok = r["ratio"] <= TARGET_RATIO and r["pretrain_peak_gb"] <= TARGET_PEAK_GB
        lines += ["", f"At {r['edges']:,} edges: the epoch is {r['ratio']:.2f}x its FLOP bound "
                  f"(target {TARGET_RATIO}x) at a peak of {r['pretrain_peak_gb']:.2f} GB (target "
                  f"{TARGET_PEAK_GB:g} GB): {'met' if ok else 'NOT met'}."]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Time and peak memory against the edges, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = np.array([r["edges"] for r in rows], dtype=float)
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9, 3.6))
    for key, label in (("setup_s", "set-up"), ("epoch_s", "one epoch"), ("embed_s", "embed")):
        ax_t.loglog(edges, [r[key] for r in rows], "o-", label=label)
    ax_t.loglog(edges, edges / edges[0] * rows[0]["epoch_s"], "k:", label="linear")
    ax_t.set(xlabel="edges", ylabel="seconds", title="time")
    ax_t.legend()
    for key, label in (("pretrain_peak_gb", "pretrain"), ("embed_peak_gb", "embed")):
        ax_m.loglog(edges, [r[key] for r in rows], "o-", label=label)
    ax_m.set(xlabel="edges", ylabel="peak resident memory (GB)", title="memory")
    ax_m.legend()
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)
    plt.close(fig)


def main(edges: tuple[int, ...], flows: int = 256, width: int = 32, batch: int = 256,
         seed: int = 0, out: Path | None = None) -> list[dict[str, Any]]:
    """Measure every size (resumable: sizes already in ``<out>.json`` are kept)."""
    done: dict[int, dict[str, Any]] = {}
    if out is not None and out.with_suffix(".json").is_file():
        done = {r["target_edges"]: r for r in json.loads(out.with_suffix(".json").read_text())}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in tqdm(edges, desc="sizes"):
            row = done.get(n) or {"target_edges": n, **one_size(n, flows, width, batch, seed,
                                                                Path(tmp))}  # fmt: skip
            rows.append(row)
            if out is not None:
                out.parent.mkdir(parents=True, exist_ok=True)
                tmp_json = out.with_suffix(".json.tmp")
                tmp_json.write_text(json.dumps(rows, indent=1))
                tmp_json.replace(out.with_suffix(".json"))
    fitted = slopes(rows)
    text = report(rows, fitted)
    print(text)
    if out is not None:
        out.with_suffix(".md").write_text(text)
        plot(rows, out.with_suffix(".png"))
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edges", type=_sizes, default=(10_000, 100_000, 1_000_000),
                   help="comma-separated edge counts, e.g. 1e4,1e5,1e6 (default)")
    p.add_argument("--flows", type=int, default=256, help="path flows per network (default 256)")
    p.add_argument("--width", type=int, default=32, help="encoder width (default 32)")
    p.add_argument("--batch", type=int, default=256, help="contrastive batch (default 256)")
    p.add_argument("--seed", type=int, default=0, help="seed of the network, flows and run")
    p.add_argument("--out", type=Path, default=None,
                   help="write <out>.json (resumable), <out>.md and <out>.png")  # fmt: skip
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(a.edges, a.flows, a.width, a.batch, a.seed, a.out)
