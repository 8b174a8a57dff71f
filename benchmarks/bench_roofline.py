"""Benchmark: a ``pretrain`` epoch against its roofline, and the set-up time as a network grows.

**Epoch vs roofline** (``--data-file`` or ``--dataset``, repeatable): runs the real command,
``topo-contrastive pretrain ... --epochs E`` at its defaults otherwise (configuration,
edition, thread rule), in a subprocess, idle and (``--busy``) beside one other process that
keeps a core busy; the epoch time is the command's training-loop seconds over ``E`` (its
``pretrain.json``), the median of ``--repeats`` runs (this 2-core machine's epoch times
vary by 20-40 % between runs). The same data and configuration are then loaded here to count one
epoch's work (every sample seen twice, as two masked views, in batches of the
configuration's size):

- **dense**: the SCNN's products with the filter weights (``2 N1 (1 + K_down + K_up)
  C_in C_out`` per view and layer; forward, weight gradient, and input gradient after the
  first layer), the HodgeReadout's harmonic coordinates ``U_H^T H`` (``2 N1 k c`` with
  ``k`` the basis's columns, beta_1 or a sketch's size; forward and input gradient), the
  projection head and the loss's similarity matrix;
- **sparse**: the Laplacian products (``2 nnz`` per column, ``K_down`` on ``L_down`` and
  ``K_up`` on ``L_up``, at the narrower width, forward and, after the first layer,
  backward);
- **traffic**: bytes that must cross the memory bus at least once: every layer's output
  written in the forward pass and read in the backward pass, its input gradient written
  and read, the operators read once per sample (the kernel's block-diagonal layout), the
  flows and masks of both views.

The bound is a roofline, ``max(compute time, traffic time)`` with all FLOPs at the measured
stacked-GEMM rate (the step's dense products as one ``[2B N1, (1+K) C] @ [(1+K) C, C]``
GEMM, ``bench_scnn.py``'s bar) and all bytes at the measured copy bandwidth (a 256 MiB
tensor copy, read + write), both at the thread count the command used. The ratio is the
measured epoch over the bound (the target: at most 2).

**Peak memory**: the command's peak resident set (``wait4``) beside :func:`memory_model`, a
stated bytes-per-edge model (the data's flows per sample, the encoder activations of the
views held at once, the harmonic basis, the allocator's kept memory, the import-only
process).

**City-scale networks** (``--synthetic-edges``): Delaunay networks of that many edges with
``--synthetic-flows`` random path flows, written as a ``--data-file`` and run like one.

**Set-up as the network grows** (``--setup-sizes``): Delaunay complexes with two holes and
``--setup-samples`` random path flows; timed: the prepared data (Hodge decomposition, the
flows' Hodge parts), the spectral drop probabilities and the encoder (the HodgeReadout's
harmonic basis), as ``pretrain`` does them; and one training step of ``--setup-batch`` flows
at the default configuration, scaled to a 20-epoch run of all samples (a step's cost is a
sum of identical per-view costs). Reported: set-up as a share of that run (target < 10 %).

Run::

    python examples/road_networks.py --out data/road_networks --no-probe      # 2 s
    python benchmarks/bench_roofline.py --data-file data/road_networks/chicago_sketch.npz \\
        --data-file data/road_networks/anaheim.npz --busy \\
        --setup-sizes 1e3,4e3,16e3,32e3,64e3,100e3 --out benchmarks/results/bench_roofline
    python benchmarks/bench_roofline.py --data-file chicago-regional.npz \
        --synthetic-edges 100e3 --synthetic-flows 200 --epochs 1 --repeats 1 --threads 1 \
        --out benchmarks/results/bench_roofline_city
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

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._complexes import delaunay_complex, random_path_supports  # noqa: E402
from benchmarks.bench_scaling import _sizes, _sync  # noqa: E402
from benchmarks.bench_scnn import gemm_rate  # noqa: E402
from topo_contrastive._utils.files import write_text  # noqa: E402
from topo_contrastive._utils.numerics import KEEP_FREED_BYTES  # noqa: E402


# ---------------------------------------------------------------------- machine
def copy_bandwidth(device: torch.device, mib: int = 256, repeats: int = 5) -> float:
    """GB/s of a ``mib`` MiB float32 tensor copy, counting the bytes read and written."""
    n = mib * 2**20 // 4
    a = torch.ones(n, device=device)
    b = torch.empty(n, device=device)
    b.copy_(a)
    best = math.inf
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        b.copy_(a)
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n * 4 / best / 1e9


# ---------------------------------------------------------------------- work model
def epoch_work(encoder: Any, head_dims: tuple[int, int], n1: int, nnz_down: int, nnz_up: int,
               samples: int, batch: int) -> dict[str, float]:
    """FLOPs and bytes of one contrastive epoch (see the module docstring).

    Args:
        encoder: the :class:`~topo_contrastive.nn.SCNN` (its convolutions and readout are read).
        head_dims: ``(in, out)`` channels of the two-layer projection head.
        n1: edges; nnz_down / nnz_up: non-zeros of ``L_down`` / ``L_up``.
        samples: flows per epoch; batch: flows per batch (two views each).

    Returns:
        ``{"dense_flops", "sparse_flops", "bytes"}`` per epoch.
    """
    views = 2 * samples
    dense = sparse = traffic = 0.0
    for i, conv in enumerate(encoder.convs):
        c_in, c_out = conv.in_channels, conv.out_channels
        terms = 1 + conv.K_down + conv.K_up
        first = i == 0
        d = 2.0 * n1 * terms * c_in * c_out
        dense += d * (2 if first else 3)
        s = 2.0 * (conv.K_down * nnz_down + conv.K_up * nnz_up) * min(c_in, c_out)
        sparse += s * (1 if first else 2)
        # output written + read back; input gradient written + read; operators per sample
        traffic += 4.0 * n1 * c_out * 2 + (0 if first else 4.0 * n1 * c_in * 2)
        ops_bytes = 12.0 * (conv.K_down * nnz_down + conv.K_up * nnz_up)
        traffic += ops_bytes * (1 if first else 2)
    readout = encoder.readout
    # the columns of its harmonic basis: beta_1, or k of a sketch of a large harmonic space
    beta = int(getattr(readout, "harmonic_dim", 0) or 0)
    if beta:
        c = readout._kept(encoder.hidden_channels)
        dense += 2.0 * 2.0 * n1 * beta * c  # forward + input gradient
    traffic += 4.0 * n1 * 2 * 2  # the flow and its mask, per view
    dense *= views
    sparse *= views
    traffic *= views
    d_in, d_out = head_dims
    dense += 3.0 * views * (2.0 * d_in * d_out + 2.0 * d_out * d_out)
    batches = math.ceil(samples / batch)
    dense += 3.0 * batches * 2.0 * (2 * batch) ** 2 * d_out
    return {"dense_flops": dense, "sparse_flops": sparse, "bytes": traffic}


def roofline_seconds(work: dict[str, float], gflops: float, gbps: float) -> dict[str, float]:
    """``{"compute_s", "traffic_s", "bound_s"}``: all FLOPs at ``gflops`` GFLOP/s, all bytes
    at ``gbps`` GB/s, the bound their maximum.

    Raises:
        ValueError: a rate that is not positive.
    """
    if gflops <= 0 or gbps <= 0:
        raise ValueError(f"rates must be positive, got {gflops} GFLOP/s and {gbps} GB/s")
    compute = (work["dense_flops"] + work["sparse_flops"]) / gflops / 1e9
    traffic = work["bytes"] / gbps / 1e9
    return {"compute_s": compute, "traffic_s": traffic, "bound_s": max(compute, traffic)}


# ---------------------------------------------------------------------- the command
def run_pretrain(data_args: list[str], epochs: int, device: str, busy: bool,
                 workdir: Path, threads: int | None = None) -> dict[str, Any]:
    """``topo-contrastive pretrain --config SSCL_Spec`` at its defaults in a subprocess;
    returns its ``pretrain.json`` plus ``wall_s``, the thread line and ``peak_rss_bytes``
    (the command's peak resident memory, from ``wait4``)."""
    out = workdir / ("busy" if busy else "idle")
    cmd = [sys.executable, "-c", _PEAK_WRAPPER, "pretrain", "--config", "SSCL_Spec",
           *data_args, "--epochs", str(epochs), "--out", str(out), "--overwrite",
           "--no-progress", "--device", device, "--data-root", str(workdir / "data")]
    if threads:
        cmd += ["--threads", str(threads)]
    spinner = None
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.5)
    try:
        with tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak memory
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            stderr = err.read().decode(errors="replace")
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{stderr[-2000:]}")
    record = json.loads((out / "pretrain.json").read_text())
    record["wall_s"] = wall
    record["thread_line"] = stderr.splitlines()[0] if stderr else ""
    record["peak_rss_bytes"] = _peak_bytes(stderr, usage)
    return record


# The command run in a process that reports its own peak resident set at exit (VmHWM):
# wait4's ru_maxrss of a child also counts the parent's memory at the fork (vfork + exec).
_PEAK_WRAPPER = """
import atexit, runpy, sys
def _peak():
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    sys.stderr.write('peak-rss-kb ' + line.split()[1] + '\\n')
    except OSError:
        pass
atexit.register(_peak)
sys.argv = ['topo-contrastive', *sys.argv[1:]]
runpy.run_module('topo_contrastive.cli', run_name='__main__', alter_sys=True)
"""


def _peak_bytes(stderr: str, usage: Any) -> int:
    """The peak resident bytes the wrapped process reported (``ru_maxrss`` where none)."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("peak-rss-kb "):
            return int(line.split()[1]) * 1024
    return usage.ru_maxrss * 1024  # kilobytes on Linux


def baseline_rss() -> int:
    """Peak resident bytes of a process that only imports what ``pretrain`` imports
    (torch, PyG, the package): the constant of the memory model."""
    code = ("import torch, torch_geometric, scipy.sparse, topo_contrastive.cli, "
            "topo_contrastive.cli._runs\n" + _PEAK_WRAPPER.split("atexit.register")[0]
            + "_peak()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE,
                            text=True)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the import-only process failed:\n{err[-2000:]}")
    return _peak_bytes(err, None)


#: Rows of the GEMM whose rate is the roofline's (at most; a step's ``2 B N1`` rows would
#: take 25 GB at 100k edges, and the rate is flat well before).
GEMM_ROWS = 2**19


#: The memory model's bytes per edge and per flow of the data set: the flow (float32, one
#: tensor shared by the prepared data, the dataset and its fitted copy) and the spectral
#: mask's drop probabilities stored on every sample (float32).
DATA_BYTES_PER_EDGE_PER_SAMPLE = 8
#: Bytes per edge and sample of a batch while its views are drawn: the collated flows and
#: drop probabilities and the two views (float32 each); the step then keeps the views only.
BATCH_BYTES_PER_EDGE_PER_SAMPLE = 16


def memory_model(n1: int, samples: int, views: int, per_view: int, basis_columns: int,
                 base: int, retained: int = 0, batch: int = 0, kept_views: int = 0,
                 kept_per_view: int = 0) -> dict[str, float]:
    """Predicted peak resident bytes of a ``pretrain`` run:
    ``base + N1 * (8 S + max(16 B, 8 B + V * A + W * K) + 4 k) + R``, with ``S`` flows,
    ``B`` samples per batch (drawing their views, then holding them through the step), ``V``
    views whose activations are held at once (a gradient-caching chunk, else the batch's
    ``2B``), ``A = activation_bytes / N1`` bytes per edge and view
    (``topo_contrastive.training.loop.activation_bytes``), ``W`` views whose autograd graphs
    gradient caching keeps beside the running chunk at ``K = kept_bytes / N1`` bytes per
    edge and view (``topo_contrastive.training.loop.kept_bytes``), ``k`` columns of the harmonic
    basis (float32), ``base`` the import-only process and ``R`` the freed memory the
    command's allocator keeps for reuse (at most ``_numerics.KEEP_FREED_BYTES`` and at most
    the activations' ``V * A * N1``, the blocks it frees and keeps; 0 where it keeps none).

    Returns:
        ``{"predicted_bytes", "data_bytes", "batch_bytes", "activation_bytes",
        "basis_bytes", "base_bytes", "retained_bytes"}``.
    """
    data = float(n1) * samples * DATA_BYTES_PER_EDGE_PER_SAMPLE
    act = float(views) * per_view + float(kept_views) * kept_per_view
    drawing = float(n1) * batch * BATCH_BYTES_PER_EDGE_PER_SAMPLE
    held = float(n1) * batch * BATCH_BYTES_PER_EDGE_PER_SAMPLE / 2  # the two views
    step = max(drawing, held + act + retained)
    basis = 4.0 * n1 * basis_columns
    return {"predicted_bytes": base + data + step + basis, "data_bytes": data,
            "batch_bytes": drawing, "activation_bytes": act, "basis_bytes": basis,
            "base_bytes": float(base), "retained_bytes": float(retained)}


def _load(data_args: list[str], workdir: Path) -> tuple[Any, Any, str]:
    """The command's data and configuration, parsed by its own parser."""
    from topo_contrastive.cli import _common as common
    from topo_contrastive.cli import _inputs as inputs
    from topo_contrastive.cli import build_parser
    from topo_contrastive.training.configs import get_config

    args = build_parser().parse_args(
        ["pretrain", "--config", "SSCL_Spec", *data_args, "--out", str(workdir / "unused"),
         "--data-root", str(workdir / "data")]
    )
    task = inputs.config_task(args)
    config = get_config(args.config, task, common.edition(args), **common.edition_overrides(args))
    return inputs.load_data(args), config, common.edition(args)


def epoch_case(data_args: list[str], epochs: int, device: str, busy: bool,
               workdir: Path, repeats: int = 1, threads: int | None = None,
               base_rss: int = 0) -> dict[str, Any]:
    """One data set's epoch against its roofline (idle and, with ``busy``, beside a busy
    process), and the command's peak memory against :func:`memory_model`."""
    from topo_contrastive.training.gradient_caching import activation_bytes, kept_bytes

    data, config, edition = _load(data_args, workdir)
    encoder = data.encoder(config)
    L_down, L_up = data.complex.laplacians(rank=data.rank)
    n1 = data.sizes[1]
    work = epoch_work(encoder, (encoder.out_channels, config.projection_channels), n1,
                      int(L_down._nnz()), int(L_up._nnz()), data.num_samples, config.batch_size)
    dev = torch.device(device)
    rows = []
    for is_busy in ((False, True) if busy else (False,)):
        records = [run_pretrain(data_args, epochs, device, is_busy, workdir, threads)
                   for _ in range(repeats)]
        records.sort(key=lambda r: r["seconds"] / r["epochs"])
        epochs_s = [r["seconds"] / r["epochs"] for r in records]
        record = records[len(records) // 2]  # the median run; the bound at its thread count
        used = int(record["threads"]) if record.get("threads") else torch.get_num_threads()
        torch.set_num_threads(used)
        terms = 1 + config.K_down + config.K_up
        gemm_rows = min(2 * config.batch_size * n1, GEMM_ROWS)  # the rate no longer grows
        rate = gemm_rate(gemm_rows, terms * config.hidden_channels, config.hidden_channels,
                         device=dev)
        bandwidth = copy_bandwidth(dev)
        bound = roofline_seconds(work, rate, bandwidth)
        epoch = epochs_s[len(epochs_s) // 2]  # the median run
        chunk = record.get("chunk_samples")
        total = 2 * min(config.batch_size, data.num_samples)
        views = int(chunk) if chunk else total
        # the graphs gradient caching keeps beside the running chunk
        kept_views = min(total, views * int(record.get("kept_chunks") or 1)) - views
        kept_views = kept_views if chunk else 0
        basis_columns = int(getattr(encoder.readout, "harmonic_dim", 0) or 0)
        # what the allocator keeps is freed memory: at most the activations' blocks
        kept = KEEP_FREED_BYTES if sys.platform.startswith("linux") else 0
        held = views * activation_bytes(n1, config) + kept_views * kept_bytes(n1, config)
        retained = min(kept, held)
        memory = memory_model(n1, data.num_samples, views, activation_bytes(n1, config),
                              basis_columns, base_rss, retained,
                              batch=min(config.batch_size, data.num_samples),
                              kept_views=kept_views, kept_per_view=kept_bytes(n1, config))
        peak = max(r["peak_rss_bytes"] for r in records)
        rows.append({
            "data": data.name, "edition": edition, "busy": is_busy, "threads": used,
            "edges": n1, "samples": data.num_samples, "epochs": record["epochs"],
            "epoch_s": epoch, "epoch_runs_s": epochs_s,
            "run_threads": [int(r.get("threads") or 0) for r in records],
            "setup_s": sorted(r["wall_s"] - r["seconds"] for r in records)[len(records) // 2],
            "gemm_gflops": rate, "copy_gbps": bandwidth, **work, **bound,
            "ratio": epoch / bound["bound_s"], "final_loss": record["final_loss"],
            "views_held": views, "views_kept": kept_views, "gradient_caching": bool(chunk),
            **memory,
            "peak_rss_bytes": peak, "memory_ratio": peak / memory["predicted_bytes"],
        })  # fmt: skip
    return {"rows": rows}


# ---------------------------------------------------------------------- set-up scaling
def write_synthetic_file(path: Path, num_edges: int, samples: int, seed: int) -> Path:
    """An edge-flow ``.npz`` as ``pretrain --data-file`` reads it: a Delaunay complex of at
    least ``num_edges`` edges with two holes and ``samples`` random path flows (unit flow on
    the edges of a random walk of 10-40 edges)."""
    from topo_contrastive.datasets import EdgeFlows

    ops = delaunay_complex(num_edges, seed=seed)
    flows = np.zeros((samples, ops.num_edges), dtype=np.float32)
    for i, cols in enumerate(random_path_supports(ops, samples, 10, 40, seed=seed)):
        flows[i, cols] = 1.0
    EdgeFlows.write_npz(path, ops, flows)  # a user's own file
    return path


def setup_case(num_edges: int, samples: int, batch: int, seed: int) -> dict[str, Any]:
    """Set-up seconds of ``pretrain`` on a Delaunay network with ``samples`` path flows, and
    a 20-epoch run estimated from one timed step of ``batch`` flows."""
    from torch_geometric.data import Batch

    from topo_contrastive.datasets import EdgeFlows
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.data import ExperimentData
    from topo_contrastive.training.loop import _contrastive_model, _make_loss

    with tempfile.TemporaryDirectory() as tmp:
        file = write_synthetic_file(Path(tmp) / "net.npz", num_edges, samples, seed)
        config = get_config("SSCL_Spec", "ocean", "hodge")
        t0 = time.perf_counter()
        ds = EdgeFlows(str(Path(tmp) / "root"), file=str(file), log=False)
        data = ExperimentData.from_dataset(ds, "delaunay")
        n1 = data.sizes[1]
        t1 = time.perf_counter()
        views = data.contrastive_views(config, torch.Generator().manual_seed(seed))
        dataset = data.contrastive_dataset(views)  # drop probabilities, Hodge parts
        t2 = time.perf_counter()
        dev = torch.device("cpu")
        model, net = _contrastive_model(data, config, seed, dev, False)
        t3 = time.perf_counter()
        loss_fn = _make_loss(config, False)
        b = min(batch, samples)
        for _ in range(2):  # warm-up, then timed
            s0 = time.perf_counter()
            one = views(Batch.from_data_list([dataset[i] for i in range(b)]))
            x = torch.cat([one.x_1_view1, one.x_1_view2])  # [2 b N1, 1]
            L = data.laplacians()
            _, z = net(x, L, L.batch_vector(2 * b))
            loss = loss_fn(z[:b], z[b:], hodge_parts=one.hodge_parts)
            loss.backward()
            step = time.perf_counter() - s0
    run20 = 20 * step * samples / b
    setup = t3 - t0
    return {"edges": n1, "samples": samples, "data_s": t1 - t0, "drop_prob_s": t2 - t1,
            "encoder_s": t3 - t2, "setup_s": setup, "step_s": step, "step_flows": b,
            "run20_s": run20, "share": setup / (setup + run20)}


# ---------------------------------------------------------------------- report
def report(epochs: list[dict[str, Any]], setups: list[dict[str, Any]], device: str) -> str:
    """Markdown tables of the epoch rows and the set-up rows."""
    lines = []
    if epochs:
        lines += [
            f"`topo-contrastive pretrain --config SSCL_Spec` at its defaults on {device} "
            f"(torch {torch.__version__}); epoch = training-loop seconds / epochs of the "
            "command (median of its runs); roofline = max(all FLOPs at the stacked-GEMM "
            "rate, compulsory bytes at the copy bandwidth), both measured at the command's "
            "thread count.",
            "",
            "| data | edition | other process | threads | edges | samples | dense GFLOP "
            "| sparse GFLOP | traffic GB | GEMM GFLOP/s | copy GB/s | bound s | epoch s "
            "| ratio | set-up s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in epochs:
            lines.append(
                f"| {r['data']} | {r['edition']} | {'busy' if r['busy'] else 'idle'} | "
                f"{r['threads']} | {r['edges']:,} | {r['samples']:,} | "
                f"{r['dense_flops'] / 1e9:.0f} | {r['sparse_flops'] / 1e9:.1f} | "
                f"{r['bytes'] / 1e9:.2f} | {r['gemm_gflops']:.1f} | {r['copy_gbps']:.1f} | "
                f"{r['bound_s']:.2f} | {r['epoch_s']:.2f} | {r['ratio']:.2f}x | "
                f"{r['setup_s']:.1f} |"
            )
        lines.append("")
        if any("predicted_bytes" in r for r in epochs):
            lines += [
                "Peak memory of the command (its peak resident set, VmHWM at exit) against "
                "the model `base + N1 * (8 S + max(16 B, 8 B + V * A + W * K) + 4 k) + R`: "
                "`base` "
                "the peak of a process that only imports the package, `S` flows at 8 bytes "
                "per edge (the flow, one tensor for the prepared data and the dataset, and "
                "its drop probabilities), `B` samples per batch at 16 bytes per edge while "
                "their views are drawn (collated flows and probabilities, both views) and 8 "
                "through the step (the views), `V` views whose encoder activations are held "
                "at once (a "
                "gradient-caching chunk, else the batch's 2B views), `A = 4 C (L + 3)` "
                "bytes per edge and view (`topo_contrastive.training.loop.activation_bytes`), "
                "`W` views whose autograd graphs gradient caching keeps beside the running "
                "chunk at `K = 4 (C max(L - 1, 1) + 2)` bytes per edge and view "
                "(`topo_contrastive.training.loop.kept_bytes`: the first layer's output is "
                "recomputed), `k` "
                "columns of the harmonic basis (float32), `R` the freed memory the "
                "command's allocator keeps for reuse (`_numerics.KEEP_FREED_BYTES`, at most "
                "the activations).",
                "",
                "| data | edges | samples | V (caching) | W | base GB | data GB | batch GB "
                "| activations GB | basis GB | kept GB | predicted GB | peak GB "
                "| peak / predicted |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for r in epochs:
                if "predicted_bytes" not in r:
                    continue
                lines.append(
                    f"| {r['data']} | {r['edges']:,} | {r['samples']:,} | {r['views_held']} "
                    f"({'yes' if r['gradient_caching'] else 'no'}) | {r.get('views_kept', 0)} | "
                    f"{r['base_bytes'] / 1e9:.2f} | {r['data_bytes'] / 1e9:.2f} | "
                    f"{r.get('batch_bytes', 0.0) / 1e9:.2f} | "
                    f"{r['activation_bytes'] / 1e9:.2f} | {r['basis_bytes'] / 1e9:.3f} | "
                    f"{r.get('retained_bytes', 0.0) / 1e9:.2f} | "
                    f"{r['predicted_bytes'] / 1e9:.2f} | {r['peak_rss_bytes'] / 1e9:.2f} | "
                    f"{r['memory_ratio']:.2f}x |"
                )
            lines.append("")
    if setups:
        lines += [
            "Set-up of `pretrain` (SSCL_Spec, HodgeReadout edition) on Delaunay networks "
            "with random path flows: prepared data (Hodge decomposition and parts), spectral "
            "drop probabilities, encoder (harmonic basis); a 20-epoch run estimated from one "
            "timed step.",
            "",
            "| edges | samples | data s | drop prob. s | encoder s | set-up s | step s "
            "(flows) | 20-epoch run s (est.) | set-up share |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in setups:
            lines.append(
                f"| {r['edges']:,} | {r['samples']:,} | {r['data_s']:.2f} | "
                f"{r['drop_prob_s']:.2f} | {r['encoder_s']:.2f} | {r['setup_s']:.2f} | "
                f"{r['step_s']:.3f} ({r['step_flows']}) | {r['run20_s']:.0f} | "
                f"{100 * r['share']:.1f} % |"
            )
        lines.append("")
    return "\n".join(lines)


def main(
    data_files: tuple[str, ...] = (),
    datasets: tuple[str, ...] = (),
    epochs: int = 5,
    repeats: int = 3,
    busy: bool = False,
    device: str = "cpu",
    setup_sizes: tuple[int, ...] = (),
    setup_samples: int = 1000,
    setup_batch: int = 10,
    seed: int = 0,
    out: Path | None = None,
    synthetic_edges: tuple[int, ...] = (),
    synthetic_flows: int = 1000,
    threads: int | None = None,
) -> dict[str, Any]:
    """Run the epoch cases and the set-up sizes; print and write the tables.

    Raises:
        ValueError: nothing to measure, or ``epochs`` / ``setup_samples`` / ``setup_batch``
            / ``synthetic_flows`` below 1.
    """
    if not (data_files or datasets or setup_sizes or synthetic_edges):
        raise ValueError("give --data-file, --dataset, --synthetic-edges or --setup-sizes")
    for name, value in (("epochs", epochs), ("repeats", repeats), ("setup_samples", setup_samples),
                        ("setup_batch", setup_batch), ("synthetic_flows", synthetic_flows)):
        if value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value}")
    epoch_rows: list[dict[str, Any]] = []
    setup_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [["--data-file", str(Path(f).resolve())] for f in data_files]
        cases += [["--dataset", d] for d in datasets]
        for n in synthetic_edges:
            name = f"delaunay{n // 1000}k" if n % 1000 == 0 else f"delaunay{n}"
            file = write_synthetic_file(Path(tmp) / f"{name}.npz", n, synthetic_flows, seed)
            cases.append(["--data-file", str(file)])
        base = baseline_rss() if cases else 0
        for case in cases:
            rows = epoch_case(case, epochs, device, busy, Path(tmp), repeats, threads,
                              base)["rows"]
            for r in rows:
                print(f"{r['data']} ({'busy' if r['busy'] else 'idle'}): epoch "
                      f"{r['epoch_s']:.2f} s, bound {r['bound_s']:.2f} s, {r['ratio']:.2f}x; "
                      f"peak memory {r['peak_rss_bytes'] / 1e9:.2f} GB, predicted "
                      f"{r['predicted_bytes'] / 1e9:.2f} GB", flush=True)
            epoch_rows += rows
    for n in setup_sizes:
        r = setup_case(n, setup_samples, setup_batch, seed)
        print(f"{r['edges']:,} edges: set-up {r['setup_s']:.1f} s, "
              f"{100 * r['share']:.1f} % of a 20-epoch run", flush=True)
        setup_rows.append(r)
    text = report(epoch_rows, setup_rows, device)
    print(text)
    result = {"epochs": epoch_rows, "setup": setup_rows, "device": device,
              "torch": torch.__version__}
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out.with_suffix(".json"), json.dumps(result, indent=1) + "\n")
        write_text(out.with_suffix(".md"), text)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-file", action="append", default=[],
                   help="an edge-flow .npz to pre-train on (repeatable)")
    p.add_argument("--dataset", action="append", default=[],
                   help="a paper dataset to pre-train on (repeatable)")
    p.add_argument("--epochs", type=int, default=5, help="timed epochs per run (default 5)")
    p.add_argument("--repeats", type=int, default=3,
                   help="runs of the command per case; the median epoch is reported (default 3)")
    p.add_argument("--busy", action="store_true",
                   help="also run each case beside one process that keeps a core busy")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--setup-sizes", type=_sizes, default=(),
                   help="edge counts of the set-up scaling (e.g. 1e3,4e3,16e3,32e3,64e3,100e3)")
    p.add_argument("--setup-samples", type=int, default=1000,
                   help="flows per set-up network (default 1000, as the road networks)")
    p.add_argument("--setup-batch", type=int, default=10,
                   help="flows of the timed step at each set-up size (default 10)")
    p.add_argument("--synthetic-edges", type=_sizes, default=(),
                   help="also pre-train on Delaunay networks of these edge counts with "
                        "--synthetic-flows random path flows (e.g. 100e3)")
    p.add_argument("--synthetic-flows", type=int, default=1000,
                   help="flows of every --synthetic-edges network (default 1000)")
    p.add_argument("--threads", type=int, default=None,
                   help="the command's --threads (default: its own rule, the idle cores)")
    p.add_argument("--seed", type=int, default=0, help="seed of the set-up networks and flows")
    p.add_argument("--out", type=Path, default=None,
                   help="write OUT.json and OUT.md (e.g. benchmarks/results/bench_roofline)")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(data_files=tuple(a.data_file), datasets=tuple(a.dataset), epochs=a.epochs,
         repeats=a.repeats, busy=a.busy, device=a.device, setup_sizes=a.setup_sizes,
         setup_samples=a.setup_samples, setup_batch=a.setup_batch, seed=a.seed, out=a.out,
         synthetic_edges=a.synthetic_edges, synthetic_flows=a.synthetic_flows,
         threads=a.threads)
