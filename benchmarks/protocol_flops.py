"""Lower bound on the wall time of a Table 1 protocol run: its encoders' dense FLOPs at the
stacked-GEMM rate of this machine.

Reads the ``runs.json`` that ``python -m experiments reproduce`` writes and counts, per unit, the
useful dense floating-point work of the SCNN encoder (``2 m k n`` per product with the
filter weights; first layer without input gradient; sparse products, projection head, loss,
masks and the SVM not counted, so the bound is optimistic):

- a contrastive row: ``epochs x samples x 2 views`` training passes (forward + backward) of
  each pre-trained encoder, plus one forward pass over all samples to embed them;
- the supervised SCNN: ``epochs_run x`` (training passes over the training split + a forward
  pass over the validation split), plus a forward pass over the test split; the split sizes
  are the dataset's standard split, with the validation part carved out of the training
  split where the dataset has none (the ocean drifters: 128 / 32 / 40), as
  :func:`~topo_contrastive.evaluation.supervised.train_supervised` does.

The time at the stacked-GEMM rate (``[rows, 5*64] @ [5*64, 64]``, measured here unless
``--rate`` is given, the bar of ``bench_scnn.py``) is what the protocol would take if every
dense product ran at that rate and everything else were free: no implementation of the same
protocol on the same machine can be faster. Prints a Markdown table per edition, dataset and
kind of row, and writes it with ``--out``.

Run::

    python benchmarks/protocol_flops.py docs/_data/table1_full_runs.json
    python benchmarks/protocol_flops.py docs/_data/table1_full_runs.json --data-root data
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
from topo_contrastive.evaluation.supervised import VALIDATION_FRACTION  # noqa: E402

HIDDEN = 64


def encoder_flops(
    layers: int, n1: int, k_total: int, train: bool, hidden: int = HIDDEN, nnz: int = 0
) -> float:
    """FLOPs of one sample through a ``layers``-deep SCNN (``1 + k_total`` filter terms).

    Dense products with the filter weights; with ``nnz`` (the non-zeros touched by one pass
    over both sides, ``K_down * nnz(L_down) + K_up * nnz(L_up)``) also the sparse Laplacian
    products, ``2 nnz`` per column at the narrower width (``bench_scnn.step_flops``'s count).
    """
    total = 0.0
    for i in range(layers):
        c_in = 1 if i == 0 else hidden
        dense = 2.0 * n1 * (1 + k_total) * c_in * hidden
        sparse = 2.0 * nnz * min(c_in, hidden)
        # forward; backward: weight gradient (+ input gradient after the first layer)
        total += dense * ((2 if i == 0 else 3) if train else 1)
        total += sparse * ((1 if i == 0 else 2) if train else 1)
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
    record: dict[str, Any],
    config: dict[str, Any],
    n1: int,
    samples: int,
    dataset: str,
    nnz: tuple[int, int] | None = None,
) -> float:
    """Encoder FLOPs of one protocol unit (see the module docstring): dense only, or with the
    sparse products where ``nnz = (nnz(L_down), nnz(L_up))`` is given."""
    k = config["K_down"] + config["K_up"]
    layers = config["num_layers"]
    touched = 0 if nnz is None else config["K_down"] * nnz[0] + config["K_up"] * nnz[1]
    train = encoder_flops(layers, n1, k, True, nnz=touched)
    forward = encoder_flops(layers, n1, k, False, nnz=touched)
    if config["method"] == "contrastive":
        return record["epochs"] * samples * 2 * train + samples * forward
    n_train, n_val, n_test = supervised_split_sizes(dataset, samples)
    return record["epochs_run"] * (n_train * train + n_val * forward) + n_test * forward


def protocol_flops(
    runs: dict[str, Any], nnz: dict[str, tuple[int, int]] | None = None
) -> dict[tuple[str, str, str], float]:
    """FLOPs per ``(edition, dataset, "contrastive" | "SCNN")``; one pre-training is
    counted once, however many splits it serves. ``nnz`` maps a dataset to
    ``(nnz(L_down), nnz(L_up))`` to count the sparse products too."""
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
        pair = None if nnz is None else nnz[r["dataset"]]
        out[group] = out.get(group, 0.0) + unit_flops(r, config, n1, samples, r["dataset"], pair)
    return out


def probe_fits(runs: dict[str, Any]) -> tuple[int, float]:
    """``(fits, seconds per fit)``: the linear-SVM probe fits of the run (one per record of
    every probed row: all but the supervised SCNN) and their time per fit as measured on the
    reference rows of the same run (``harmonic`` / ``raw``: units that only fit probes; the
    median over those units of unit seconds / splits).

    Raises:
        ValueError: the run has no reference-row units to measure the fits on.
    """
    configs = runs["settings"]["fingerprint_parts"]["configs"]
    fits = 0
    per_unit: dict[str, list[float]] = {}
    for r in runs["records"]:
        key = f"{r['edition']}/{r['dataset']}/{r['config']}"
        if key in configs and configs[key]["method"] == "supervised":
            continue
        fits += 1
        if r["config"] in ("harmonic", "raw"):
            per_unit.setdefault(r["unit"], []).append(float(r["unit_seconds"]))
    if not per_unit:
        raise ValueError("runs: no reference-row (harmonic / raw) units to time the probes on")
    per_fit = sorted(v[0] / len(v) for v in per_unit.values())
    return fits, per_fit[len(per_fit) // 2]


def laplacian_nnz(datasets: list[str], data_root: str) -> dict[str, tuple[int, int]]:
    """``{dataset: (nnz(L_down), nnz(L_up))}`` of the paper datasets, built under
    ``data_root``."""
    from topo_contrastive.training.data import ExperimentData, load_dataset

    out = {}
    for name in datasets:
        data = ExperimentData.from_dataset(load_dataset(name, data_root), name)
        L_down, L_up = data.complex.laplacians(rank=data.rank)
        out[name] = (int(L_down._nnz()), int(L_up._nnz()))
    return out


def main(
    runs_path: str,
    rate: float | None = None,
    threads: int = 2,
    out: str | None = None,
    nnz: dict[str, tuple[int, int]] | None = None,
) -> str:
    """Print (and optionally write) the lower bound of the protocol in ``runs_path``: the
    dense encoder FLOPs at the stacked-GEMM rate (the table); with ``nnz`` (see
    :func:`protocol_flops`) also the sparse products at that rate, plus the probe fits at
    their measured time (:func:`probe_fits`), and the measured run's ratio to that bound."""
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
    if nnz is not None:
        with_sparse = sum(protocol_flops(runs, nnz).values())
        sparse = with_sparse - total
        fits, per_fit = probe_fits(runs)
        bound = with_sparse / rate / 1e9 + fits * per_fit
        wall = sum(seconds.values())
        lines += [
            "",
            f"Sparse Laplacian products (K_down / K_up per side at the narrower width, nnz of "
            f"the datasets' L_down and L_up): {sparse / 1e12:.1f} TFLOP, "
            f"{sparse / rate / 1e9 / 60:.1f} min at the same rate.",
            f"Linear-SVM probe fits (one per split of every probed row): {fits} at "
            f"{per_fit:.2f} s per fit, the time measured on the reference rows of the same "
            f"run (units that only fit probes): {fits * per_fit / 60:.1f} min.",
            f"Bound (dense + sparse at the stacked-GEMM rate + probe fits): "
            f"{bound / 60:.1f} min; the run took {wall / 60:.1f} min: "
            f"**{wall / bound:.2f}x** the bound.",
        ]
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
    parser.add_argument("runs", help="runs.json written by python -m experiments reproduce")
    parser.add_argument("--rate", type=float, default=None,
                        help="stacked-GEMM GFLOP/s to use (default: measure it here)")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads for the measurement (default: %(default)s)")
    parser.add_argument("--out", default=None, help="also write the Markdown table here")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the GEMM operands (default: %(default)s)")
    parser.add_argument("--data-root", default=None,
                        help="build the datasets here to count the sparse products and add "
                        "the probe fits to the bound (default: dense products only)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    torch.manual_seed(args.seed)
    runs_data = json.loads(Path(args.runs).read_text())
    nnz = None
    if args.data_root is not None:
        nnz = laplacian_nnz(list(runs_data["settings"]["data"]), args.data_root)
    main(args.runs, args.rate, args.threads, args.out, nnz=nnz)
