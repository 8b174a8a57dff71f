"""Lower bound on the wall time of a Table 1 protocol run: its encoders' dense FLOPs at the
stacked-GEMM rate of this machine.

Reads the ``runs.json`` that ``topo-contrastive reproduce`` writes and counts, per unit, the
useful dense floating-point work of the SCNN encoder (``2 m k n`` per product with the
filter weights; first layer without input gradient; sparse products, projection head, loss,
masks and the SVM not counted, so the bound is optimistic):

- a contrastive row: ``epochs x samples x 2 views`` training passes (forward + backward) of
  each pre-trained encoder, plus one forward pass over all samples to embed them;
- the supervised SCNN: ``epochs_run x`` (training passes over the training split + a forward
  pass over the validation split), plus a forward pass over the test split.

The time at the stacked-GEMM rate (``[rows, 5*64] @ [5*64, 64]``, measured here unless
``--rate`` is given, the bar of ``bench_scnn.py``) is what the protocol would take if every
dense product ran at that rate and everything else were free: no implementation of the same
protocol on the same machine can be faster. Prints a Markdown table per edition, dataset and
kind of row, and writes it with ``--out``.

Run::

    python benchmarks/protocol_flops.py docs/_data/table1_full_runs.json
    python benchmarks/protocol_flops.py results/full/runs.json --rate 117.9
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

HIDDEN = 64


def encoder_flops(layers: int, n1: int, k_total: int, train: bool, hidden: int = HIDDEN) -> float:
    """Dense FLOPs of one sample through a ``layers``-deep SCNN (``1 + k_total`` filter terms)."""
    total = 0.0
    for i in range(layers):
        c_in = 1 if i == 0 else hidden
        dense = 2.0 * n1 * (1 + k_total) * c_in * hidden
        # forward; backward: weight gradient (+ input gradient after the first layer)
        total += dense * ((2 if i == 0 else 3) if train else 1)
    return total


def unit_flops(record: dict[str, Any], config: dict[str, Any], n1: int, samples: int) -> float:
    """Dense encoder FLOPs of one protocol unit (see the module docstring)."""
    k = config["K_down"] + config["K_up"]
    layers = config["num_layers"]
    train = encoder_flops(layers, n1, k, True)
    forward = encoder_flops(layers, n1, k, False)
    if config["method"] == "contrastive":
        return record["epochs"] * samples * 2 * train + samples * forward
    n_train, n_val = samples // 2, samples // 4
    n_test = samples - n_train - n_val
    return record["epochs_run"] * (n_train * train + n_val * forward) + n_test * forward


def protocol_flops(runs: dict[str, Any]) -> dict[tuple[str, str, str], float]:
    """FLOPs per ``(edition, dataset, "contrastive" | "SCNN")``; one pre-training is
    counted once, however many splits it serves."""
    configs = runs["settings"]["fingerprint_parts"]["configs"]
    data = runs["settings"]["data"]
    out: dict[tuple[str, str, str], float] = {}
    seen: set[tuple[Any, ...]] = set()
    for r in runs["records"]:
        key = f"{r['edition']}/{r['dataset']}/{r['config']}"
        if key not in configs:  # reference rows: no encoder training
            continue
        config = configs[key]
        if config["method"] == "contrastive":
            encoder = (r["experiment"], key, r["pretrain_seed"], r.get("drop_prob"))
            if encoder in seen:
                continue
            seen.add(encoder)
        _, n1, _ = data[r["dataset"]]["sizes"]
        kind = "SCNN" if config["method"] == "supervised" else "contrastive"
        group = (r["edition"], r["dataset"], kind)
        out[group] = out.get(group, 0.0) + unit_flops(r, config, n1, data[r["dataset"]]["samples"])
    return out


def stacked_gemm_rate(rows: int = 200 * 1082, repeats: int = 5) -> float:
    """GFLOP/s of ``[rows, 5*64] @ [5*64, 64]`` into a preallocated output (best of ``repeats``)."""
    k = 5 * HIDDEN
    a, b = torch.randn(rows, k), torch.randn(k, HIDDEN)
    out = torch.empty(rows, HIDDEN)
    torch.mm(a, b, out=out)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * rows * k * HIDDEN / best / 1e9


def main(
    runs_path: str, rate: float | None = None, threads: int = 2, out: str | None = None
) -> str:
    """Print (and optionally write) the FLOP lower bound of the protocol in ``runs_path``."""
    runs = json.loads(Path(runs_path).read_text())
    if not isinstance(runs, dict) or "records" not in runs or "settings" not in runs:
        raise ValueError(f"runs_path: expected a reproduce runs.json, got {runs_path!r}")
    torch.set_num_threads(threads)
    measured = rate is None
    rate = stacked_gemm_rate() if rate is None else rate
    if rate <= 0:
        raise ValueError(f"rate: expected a positive GFLOP/s, got {rate}")
    groups = protocol_flops(runs)
    seconds = {r["unit"]: r["unit_seconds"] for r in runs["records"]}
    lines = [
        f"Stacked-GEMM rate: {rate:.1f} GFLOP/s ("
        + (f"measured here, {threads} threads" if measured else "given")
        + f"); measured wall time of the run: {sum(seconds.values()) / 60:.1f} min "
        f"(sum of {len(seconds)} units).",
        "",
        "| edition | dataset | rows | dense TFLOP | minutes at the stacked-GEMM rate |",
        "|---|---|---|---|---|",
    ]
    total = 0.0
    for (edition, dataset, kind), flops in sorted(groups.items()):
        total += flops
        minutes = flops / rate / 1e9 / 60
        lines.append(f"| {edition} | {dataset} | {kind} | {flops / 1e12:.1f} | {minutes:.1f} |")
    lines.append(f"| all | | | {total / 1e12:.1f} | {total / rate / 1e9 / 60:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out is not None:
        target = Path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    return text


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="runs.json written by topo-contrastive reproduce")
    parser.add_argument("--rate", type=float, default=None,
                        help="stacked-GEMM GFLOP/s to use (default: measure it here)")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads for the measurement (default: %(default)s)")
    parser.add_argument("--out", default=None, help="also write the Markdown table here")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the GEMM operands (default: %(default)s)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    torch.manual_seed(args.seed)
    main(args.runs, args.rate, args.threads, args.out)
