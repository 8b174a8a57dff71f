"""Lower bound on the wall time of a Table 1 protocol run: its encoders' dense FLOPs at the
stacked-GEMM rate of this machine.

Reads the ``runs.json`` that ``topo-contrastive reproduce`` writes and counts, per unit, the
useful dense floating-point work of the SCNN encoder (``2 m k n`` per product with the
filter weights; first layer without input gradient; sparse products, projection head, loss,
masks and the SVM not counted, so the bound is optimistic):

- a contrastive row: ``epochs x samples x 2 views`` training passes (forward + backward) of
  each pre-trained encoder, plus one forward pass over all samples to embed them;
- the supervised SCNN: ``epochs_run x`` (training passes over the training split + a forward
  pass over the validation split), plus a forward pass over the test split; the split sizes
  are the dataset's standard split, with the validation part carved out of the training
  split where the dataset has none (the ocean drifters: 128 / 32 / 40), as
  :func:`~topo_contrastive.experiments.supervised.train_supervised` does.

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
import inspect
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_scnn import gemm_rate  # noqa: E402
from topo_contrastive.datasets import OceanDrifters, SyntheticTrajectories  # noqa: E402
from topo_contrastive.experiments.supervised import VALIDATION_FRACTION  # noqa: E402

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


def supervised_split_sizes(dataset: str, samples: int) -> tuple[int, int, int]:
    """``(train, validation, test)`` sizes of the supervised SCNN's split of ``dataset``.

    The dataset's standard split (:class:`~topo_contrastive.datasets.OceanDrifters`: 160 / 0 /
    40; :class:`~topo_contrastive.datasets.SyntheticTrajectories` at its defaults: 200 / 100 /
    100); where it has no validation part, ``ceil(VALIDATION_FRACTION * train)`` training
    samples are held out (``carve_validation``, scikit-learn's rounding).

    Raises:
        ValueError: the split's sizes do not add up to ``samples``.
    """
    if dataset == "ocean":
        train, val, test = OceanDrifters.num_train, 0, OceanDrifters.num_test
    else:
        params = inspect.signature(SyntheticTrajectories.__init__).parameters
        train, val, test = (params[k].default for k in ("num_train", "num_val", "num_test"))
    if train + val + test != samples:
        raise ValueError(
            f"samples: the standard split of {dataset!r} has {train + val + test} samples, "
            f"the run has {samples}"
        )
    if val == 0:
        val = math.ceil(VALIDATION_FRACTION * train)
        train -= val
    return train, val, test


def unit_flops(
    record: dict[str, Any], config: dict[str, Any], n1: int, samples: int, dataset: str
) -> float:
    """Dense encoder FLOPs of one protocol unit (see the module docstring)."""
    k = config["K_down"] + config["K_up"]
    layers = config["num_layers"]
    train = encoder_flops(layers, n1, k, True)
    forward = encoder_flops(layers, n1, k, False)
    if config["method"] == "contrastive":
        return record["epochs"] * samples * 2 * train + samples * forward
    n_train, n_val, n_test = supervised_split_sizes(dataset, samples)
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
        samples = data[r["dataset"]]["samples"]
        out[group] = out.get(group, 0.0) + unit_flops(r, config, n1, samples, r["dataset"])
    return out


def main(
    runs_path: str, rate: float | None = None, threads: int = 2, out: str | None = None
) -> str:
    """Print (and optionally write) the FLOP lower bound of the protocol in ``runs_path``."""
    runs = json.loads(Path(runs_path).read_text())
    if not isinstance(runs, dict) or "records" not in runs or "settings" not in runs:
        raise ValueError(f"runs_path: expected a reproduce runs.json, got {runs_path!r}")
    torch.set_num_threads(threads)
    measured = rate is None
    # the stacked-GEMM bar of bench_scnn.py at the trajectory step's size (B = 200, 1,082 edges)
    rate = gemm_rate(200 * 1082, 5 * HIDDEN, HIDDEN) if rate is None else rate
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
