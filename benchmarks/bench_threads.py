"""Threads: a pre-training epoch and a slice of the quick preset at 1 vs 2 torch threads (and
the default), on an idle machine and with one other process keeping a core busy.

What it measures, each as a separate ``topo-contrastive`` process:

- ``pretrain --data-file`` on a user's network (the Chicago sketch road network shipped by
  ``pytspl``: 1,088 road segments, 1,000 routed trips, ``examples/pytspl_chicago.py``'s
  sampler), ``SSCL_Spec`` at its defaults: the epoch time (``pretrain.json``'s training
  seconds per epoch) and the set-up (wall time minus training);
- ``reproduce --quick`` restricted to one row (``--configs SCL --datasets trajectory
  --editions paper``): wall time;

under two conditions: idle, and with one busy loop (``python -c 'while True: pass'``) on the
other core. The ratios printed are against the idle 1-thread run of the same command, measured
in the same run. Results: ``benchmarks/results/bench_threads.{json,md}``.

    python benchmarks/bench_threads.py            # about 10 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def chicago_file(folder: Path, num_trips: int = 1000, seed: int = 0) -> Path:
    """The Chicago trips as an edge-flow file (``EdgeFlows`` format); needs ``pytspl``."""
    example = REPO / "examples" / "pytspl_chicago.py"
    spec = importlib.util.spec_from_file_location("chicago", example)
    chicago = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chicago)
    from topo_contrastive.datasets import EdgeFlows

    net = chicago.load_chicago_sketch(chicago.find_pytspl_data())
    paths, labels, ids = chicago.sample_trips(net, num_trips, np.random.default_rng(seed))
    ds = EdgeFlows.from_incidence(
        str(folder / "chicago"), net["B1"], net["B2"], paths=paths, labels=labels,
        pos=net["pos"], sample_ids=ids, log=False,
    )  # fmt: skip
    return Path(ds.raw_dir) / "edge_flows.npz"


def _cli(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "topo_contrastive.cli", *args],
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{res.stderr[-2000:]}")
    return wall, res.stderr


def measure(data_file: Path, tmp: Path, threads: str, epochs: int) -> dict[str, float]:
    """One ``pretrain`` and one quick-preset slice at ``threads`` ("1", "2" or "default")."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    flag = [] if threads == "default" else ["--threads", threads]
    out = tmp / f"pretrain_{threads}"
    wall, err = _cli(
        ["pretrain", "--data-file", str(data_file), "--config", "SSCL_Spec", "--epochs",
         str(epochs), "--out", str(out), "--overwrite", "--no-progress",
         "--data-root", str(tmp / "data"), *flag],
        env,
    )  # fmt: skip
    log = json.loads((out / "pretrain.json").read_text())
    used = next((ln for ln in err.splitlines() if "torch thread" in ln), "")
    quick_wall, _ = _cli(
        ["reproduce", "--quick", "--configs", "SCL", "--datasets", "trajectory", "--editions",
         "paper", "--out", str(tmp / f"quick_{threads}"), "--overwrite", "--no-progress",
         "--data-root", str(tmp / "data"), "--no-figure1", "--figure2-dataset", "none", *flag],
        env,
    )  # fmt: skip
    return {
        "epoch_s": log["seconds"] / epochs,
        "setup_s": wall - log["seconds"],
        "quick_slice_s": quick_wall,
        "threads_line": used,
    }


def render(results: dict, epochs: int) -> str:
    """The Markdown table of :func:`main`'s results, with ratios to the idle 1-thread run."""
    base = results["idle"]["1"]
    lines = [
        "| condition | threads | pretrain epoch (s) | ratio | set-up (s) | quick slice (s) "
        "| ratio | default: what pretrain chose |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for condition, rows in results.items():
        for t, r in rows.items():
            lines.append(
                f"| {condition} | {t} | {r['epoch_s']:.2f} | {r['epoch_s'] / base['epoch_s']:.2f} "
                f"| {r['setup_s']:.1f} | {r['quick_slice_s']:.1f} "
                f"| {r['quick_slice_s'] / base['quick_slice_s']:.2f} "
                f"| {r['threads_line'].split(': ', 1)[-1] if t == 'default' else ''} |"
            )
    default_ratio = results["one core busy"]["default"]["epoch_s"] / results["idle"]["default"][
        "epoch_s"
    ]
    md = (
        "# Threads: 1 vs 2 torch threads, idle and with one busy core\n\n"
        f"`python benchmarks/bench_threads.py` ({epochs} pre-training epoch(s), SSCL_Spec on "
        "the Chicago sketch trips, 1,088 edges, 1,000 trips; ratios against the idle 1-thread "
        "run of the same command; the quick slice's default is the quick preset's fixed 1 "
        "thread)\n\n" + "\n".join(lines) + "\n\n"
        f"Default threads, epoch with one core busy / idle: **{default_ratio:.2f}x** "
        "(target <= 2.5x).\n"
    )
    return md


def main(epochs: int = 1, seed: int = 0, out: Path = RESULTS) -> dict:
    """Run every measurement; write ``bench_threads.{json,md}`` into ``out``."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        data_file = chicago_file(tmp, seed=seed)
        for condition in ("idle", "one core busy"):
            busy = None
            if condition != "idle":
                busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                time.sleep(2)
            try:
                results[condition] = {
                    t: measure(data_file, tmp, t, epochs) for t in ("1", "2", "default")
                }
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
            print(condition, json.dumps(results[condition], indent=1), flush=True)
    md = render(results, epochs)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_threads.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "bench_threads.md").write_text(md)
    print(md)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1, help="pre-training epochs per run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the trip sample")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of the results")
    parser.add_argument(
        "--render", type=Path, default=None, help="only re-write the Markdown of this JSON"
    )
    a = parser.parse_args()
    if a.render is not None:
        text = render(json.loads(a.render.read_text()), a.epochs)
        (a.out / "bench_threads.md").write_text(text)
        print(text)
    else:
        main(epochs=a.epochs, seed=a.seed, out=a.out)
