"""Flows in physical units at the commands' defaults: Anaheim's published link flows.

pytspl's Anaheim network (416 nodes; its directed links merged into undirected edges, the
net volume oriented low -> high; the graph's triangles as 2-cells) with its published link
volumes (vehicles per hour, values in the thousands). ``--samples`` noisy copies: every
edge's volume times a factor drawn from N(1, noise); half of the copies add ``--detour``
vehicles per hour along one route between two far nodes, the others along a second route
(the label). Three runs of ``pretrain`` + ``evaluate`` at the defaults, one process each:

- ``as given, --flow-scale none``: the flows in vehicles per hour (what the library did
  before it scaled flows);
- ``as given (default)``: the same file at the defaults (``--flow-scale rms``);
- ``divided by their RMS``: a file of the flows divided by their RMS, at the defaults;
- ``centred``: a file of the flows minus their mean over the samples (the copies share one
  large flow; what tells them apart is the noise and the detour), at the defaults.

Results: ``benchmarks/results/bench_physical_units.{json,md}``.

    python benchmarks/bench_physical_units.py --seed 0
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topo_contrastive._utils.files import write_json, write_text  # noqa: E402

RUNS = (("as given, --flow-scale none", "raw", ["--flow-scale", "none"]),
        ("as given (default)", "raw", []), ("divided by their RMS", "rms", []),
        ("centred (mean flow subtracted), default", "centred", []))  # fmt: skip


def anaheim_flows(samples: int, noise: float, detour: float, seed: int) -> dict:
    """The Anaheim complex and ``samples`` labelled noisy copies of its link volumes."""
    import importlib.util

    import networkx as nx

    from topo_contrastive import ComplexOperators

    spec = importlib.util.find_spec("pytspl")  # its data files only: pytspl is not imported
    folder = Path(spec.submodule_search_locations[0]) / "data" / "transportation_networks"
    folder = folder / "anaheim"
    rows = [line.split() for line in (folder / "anaheim_flow.tntp").read_text().splitlines()[1:]]
    volume: dict[tuple[int, int], float] = {}
    for a, b, v, *_ in rows:
        u, w = int(a) - 1, int(b) - 1
        key, sign = ((u, w), 1.0) if u < w else ((w, u), -1.0)
        volume[key] = volume.get(key, 0.0) + sign * float(v)
    graph = nx.Graph(list(volume))
    triangles = [c for c in nx.enumerate_all_cliques(graph) if len(c) == 3]
    ops = ComplexOperators.from_simplices(list(volume), triangles or None)
    base = np.zeros(ops.num_edges)
    for (u, w), v in volume.items():
        base[ops.edge_lookup(np.array([u]), np.array([w]))[0][0]] = v
    rng = np.random.default_rng(seed)
    core = graph.subgraph(max(nx.biconnected_components(graph), key=len))
    a = min(core.nodes)
    b = max(core.nodes, key=lambda n: nx.shortest_path_length(core, a, n))
    first = nx.shortest_path(core, a, b)  # two routes without a common interior node
    second = nx.shortest_path(core.subgraph(set(core.nodes) - set(first[1:-1])), a, b)
    labels = np.arange(samples) % 2
    flows = base[None, :] * rng.normal(1.0, noise, size=(samples, ops.num_edges))
    for i, label in enumerate(labels):
        flows[i] += detour * ops.path_to_flow(second if label else first).numpy()
    return {"ops": ops, "flows": flows, "labels": labels}


def _run(argv: list[str]) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "topo_contrastive.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def main(samples: int = 400, noise: float = 0.1, detour: float = 500.0, seed: int = 0,
         config: str = "SSCL_Spec", out: Path | None = None) -> list[dict]:  # fmt: skip
    """Build the data, run the three cases, write the results; returns their rows."""
    from topo_contrastive.datasets import EdgeFlows

    task = anaheim_flows(samples, noise, detour, seed)
    flows = task["flows"].astype(np.float32)  # as the dataset stores them
    nonzero = flows[flows != 0].astype(np.float64)
    rms = float(np.sqrt(np.mean(nonzero**2)))  # as ExperimentData.flow_rms computes it
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # the RMS-scaled file as the library scales: float32 flows times float32(1 / RMS)
        centred = flows - flows.mean(axis=0, keepdims=True)  # what tells the samples apart
        for name, x in (("raw", flows), ("rms", flows * np.float32(1.0 / rms)),
                        ("centred", centred)):  # fmt: skip
            EdgeFlows.write_npz(work / f"{name}.npz", task["ops"], flows=x,
                                labels=task["labels"])  # fmt: skip
        for label, file, extra in RUNS:
            run = work / label.replace(" ", "_").replace(",", "").replace("-", "")
            common = ["--data-file", str(work / f"{file}.npz"), "--data-root", str(work / "d"),
                      "--seed", str(seed), "--no-progress"]  # fmt: skip
            rc, said = _run(["pretrain", "--config", config, "--out", str(run), *common, *extra])
            if rc:
                raise RuntimeError(f"pretrain failed ({label}):\n{said}")
            rc, said = _run(["evaluate", "--checkpoint", str(run / "encoder.pt"), "--out",
                             str(run / "eval.json"), *common])  # fmt: skip
            if rc:
                raise RuntimeError(f"evaluate failed ({label}):\n{said}")
            log = json.loads((run / "pretrain.json").read_text())
            summary = json.loads((run / "eval.json").read_text())
            refs = {r["row"]: r for r in summary["references"]["rows"]}
            diag = log["diagnostics"]
            rows.append({
                "flows": label, "input_scale": log["input_scale"],
                "final_loss": diag["final_loss"], "chance_loss": diag["chance_loss"],
                "loss_drop": diag["loss_drop"], "warnings": diag["warnings"],
                **{f"{k}_acc": [refs[k]["mean_accuracy"], refs[k]["std_accuracy"]]
                   for k in ("encoder", "untrained", "raw", "abs", "harmonic") if k in refs},
            })  # fmt: skip
            print(f"{label}: encoder {rows[-1]['encoder_acc'][0]:.1f} %, loss drop "
                  f"{100 * diag['loss_drop']:.1f} %", flush=True)
    report = {"samples": samples, "noise": noise, "detour": detour, "seed": seed,
              "config": config, "rms": rms, "rows": rows}  # fmt: skip
    if out is not None:
        write_json(out.with_suffix(".json"), report)
        write_text(out.with_suffix(".md"), markdown(report))
    return rows


def markdown(report: dict) -> str:
    """The results as a Markdown table."""
    lines = [
        f"Anaheim's link flows (RMS {report['rms']:.0f} vehicles per hour), "
        f"{report['samples']} noisy copies, {report['config']} at the defaults, seed "
        f"{report['seed']}; accuracy % over the evaluation's splits (mean ± std).", "",
        "| flows | input scale | loss below chance | encoder | untrained | raw flows | "
        "\\|flows\\| | harmonic |", "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in report["rows"]:
        acc = [f"{r[k][0]:.1f} ± {r[k][1]:.1f}" if k in r else "—"
               for k in ("encoder_acc", "untrained_acc", "raw_acc", "abs_acc", "harmonic_acc")]
        lines.append(f"| {r['flows']} | {r['input_scale']:.3g} | {100 * r['loss_drop']:.1f} % | "
                     + " | ".join(acc) + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=400, help="noisy copies (default 400)")
    p.add_argument("--noise", type=float, default=0.1, help="std of the factors (default 0.1)")
    p.add_argument("--detour", type=float, default=500.0,
                   help="vehicles per hour moved to the label's route (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and the runs")
    p.add_argument("--config", default="SSCL_Spec", help="the configuration (default SSCL_Spec)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" /
                   "bench_physical_units", help="results path without suffix")  # fmt: skip
    a = p.parse_args()
    main(a.samples, a.noise, a.detour, a.seed, a.config, a.out)
