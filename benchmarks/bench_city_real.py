"""Benchmark: a user's regional road network end to end at the defaults.

pytspl's chicago-regional TNTP network (11,189 junctions, 18,830 edges, its 3-cliques filled,
``beta_1 = 6,835``) with ``--trips`` routed trips written by the reuse study's
``write_trips_file`` (each labelled by the side of a landmark its route passes), then, as a
new user would run them, each in a fresh process:

1. ``topo-contrastive pretrain --data-file chicago-regional.npz --config SSCL_Spec`` (every
   default: the HodgeReadout edition, its 20 epochs, the harmonic sketch and the activation
   budget the command chooses by size),
2. ``topo-contrastive evaluate --checkpoint ... --data-file ...`` (every reference row: the
   untrained encoder, raw flows, ``|flows|``, the harmonic coordinates or their sketch).

Reported: each command's wall time and peak resident memory (``/usr/bin/time``), the total
against the targets (30 min, 4 GB), the final loss against chance, the warnings the commands
printed, and the evaluation's rows; as JSON and a Markdown table.

Run (pytspl installed without its dependencies: ``pip install --no-deps pytspl==0.1.5``)::

    python benchmarks/bench_city_real.py --out benchmarks/results/bench_city_real
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_city_scaling import timed  # noqa: E402

TARGET_MINUTES = 30.0
TARGET_PEAK_GB = 4.0


def main(trips: int = 1000, seed: int = 0, data_file: Path | None = None,
         out: Path | None = None, network: str = "chicago-regional") -> dict[str, Any]:
    """Write the trips (unless ``data_file`` exists), run both commands, report."""
    from experiments.studies.reuse.road_trips import write_trips_file

    work = Path(tempfile.mkdtemp(prefix="city_"))
    if data_file is None:
        data_file = work / f"{network}.npz"
    if not data_file.is_file():
        write_trips_file(network, str(data_file), trips, seed)
    cli = [sys.executable, "-m", "topo_contrastive.cli"]
    run = work / "pretrain"
    pre = timed([*cli, "pretrain", "--data-file", str(data_file), "--config", "SSCL_Spec",
                 "--out", str(run), "--seed", str(seed), "--no-progress"], ROOT)  # fmt: skip
    record = json.loads((run / "pretrain.json").read_text())
    summary = work / "evaluate.json"
    ev = timed([*cli, "evaluate", "--checkpoint", str(run / "encoder.pt"), "--data-file",
                str(data_file), "--out", str(summary), "--no-progress"], ROOT)  # fmt: skip
    result = {
        "network": network, "trips": trips, "seed": seed,
        "pretrain_s": pre["wall_s"], "pretrain_peak_gb": pre["peak_gb"],
        "epochs": record["epochs"], "loop_s": record["seconds"],
        "final_loss": record["final_loss"], "chance_loss": record["diagnostics"]["chance_loss"],
        "diagnostic_warnings": record["diagnostics"]["warnings"],
        "evaluate_s": ev["wall_s"], "evaluate_peak_gb": ev["peak_gb"],
        "total_min": (pre["wall_s"] + ev["wall_s"]) / 60,
        "peak_gb": max(pre["peak_gb"], ev["peak_gb"]),
        "warnings": [ln for ln in (pre["stderr"] + ev["stderr"]).splitlines()
                     if "warning" in ln.lower()],
        "pretrain_lines": pre["stderr"].splitlines()[:12],
        "evaluate_markdown": (summary.with_suffix(".md").read_text()
                              if summary.with_suffix(".md").is_file() else ""),
    }  # fmt: skip
    text = report(result)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        for suffix, body in ((".json", json.dumps(result, indent=1)), (".md", text)):
            tmp = out.with_suffix(suffix + ".tmp")
            tmp.write_text(body)
            tmp.replace(out.with_suffix(suffix))
    return result


def report(r: dict[str, Any]) -> str:
    """The run as Markdown: time, memory, loss against chance, warnings, the probe's rows."""
    ok = r["total_min"] <= TARGET_MINUTES and r["peak_gb"] <= TARGET_PEAK_GB
    chance = r.get("chance_loss")
    below = (f" ({100 * (1 - r['final_loss'] / chance):.1f} % below chance {chance:.4f})"
             if chance else "")
    lines = [
        f"`pretrain` + `evaluate` at their defaults on {r['network']} ({r['trips']} trips):",
        "",
        "| command | wall s | peak GB |",
        "|---|---|---|",
        f"| pretrain ({r['epochs']} epochs; loop {r['loop_s']:.0f} s) | {r['pretrain_s']:.0f} "
        f"| {r['pretrain_peak_gb']:.2f} |",
        f"| evaluate | {r['evaluate_s']:.0f} | {r['evaluate_peak_gb']:.2f} |",
        "",
        f"Total {r['total_min']:.1f} min at a peak of {r['peak_gb']:.2f} GB (targets "
        f"{TARGET_MINUTES:g} min, {TARGET_PEAK_GB:g} GB): {'met' if ok else 'NOT met'}. "
        f"Final loss {r['final_loss']:.4f}{below}. Warnings: "
        + ("; ".join(r["warnings"]) if r["warnings"] else "none") + ".",
        "",
        r["evaluate_markdown"],
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trips", type=int, default=1000, help="routed trips (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the trips and the run")
    p.add_argument("--network", default="chicago-regional", help="pytspl TNTP network")
    p.add_argument("--data-file", type=Path, default=None,
                   help="reuse this trips file (written there if missing)")  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="write <out>.json and <out>.md")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(a.trips, a.seed, a.data_file, a.out, a.network)
