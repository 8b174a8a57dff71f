"""Physical flows: power grids (pandapower) and water networks (EPANET via wntr).

Regenerates the tables of ``docs/results/physical_flows.md``:

1. **Sample making**: 1,000 AC power-flow samples of the outage task on case9241pegase in
   ``--jobs`` processes; the seconds inside pandapower's ``runpp`` against the seconds of the
   whole per-sample loop (the ratio the target bounds by 1.2), and the wall-clock.
2. **Hodge energy fractions** of the true flows (the ``state`` / ``demand`` task) in the unit
   metric and in the physical one (``W1 = diag(edge_weights)``: reactance, resistance), by
   the library's :class:`~topo_contrastive.HodgeDecomposition` of the complex
   ``with_weights("resistance", edge=...)``.
3. **Probe table** of every task: the task exported with ``to_npz``, then ``python -m
   topo_contrastive.cli pretrain`` (SSCL_Spec, the defaults) for each ``--seeds`` and
   ``evaluate --supervised --seeds <splits>`` on the same file (pre-trained encoder,
   untrained, raw flows, |flows|, harmonic coordinates, supervised SCNN); seconds and peak
   memory of every command (``/usr/bin/time``).
4. **Flow interpolation** by the protocol of Jia et al. (KDD 2019): a random fraction of the
   edges observed, the rest filled by :func:`~topo_contrastive.hodge.interpolate_flows`
   (their lambda = 0.1) or by zeros (their ZeroFill), the correlation with the true flows over
   all edges and the relative error, as their ``ssl_prediction`` computes them.

    python benchmarks/bench_physical_flows.py --out runs/physical --docs
    python benchmarks/bench_physical_flows.py --out runs/quick --quick   # minutes, small
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POWER = ("case118", "case1354pegase", "case9241pegase")
WATER = ("Net3", "ky10")
#: the networks whose tasks are probed (case9241pegase: one pretrain + evaluate, timed)
PROBED = ("case118", "Net3", "ky10", "case1354pegase")
RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def dataset(name: str, task: str, root: Path, samples: int, jobs: int, **kw: Any):
    """The dataset of one network and task (made on first use into ``root``); the state
    samples of case9241pegase are capped at 200 (enough for fractions and interpolation)."""
    from topo_contrastive.datasets import PowerGridFlows, WaterNetworkFlows

    if name == "case9241pegase" and task == "state":
        samples = min(samples, 200)
    folder = str(root / "data" / name)
    if name in POWER:
        return PowerGridFlows(folder, case=name, task=task, num_samples=samples, n_jobs=jobs,
                              log=False, **kw)  # fmt: skip
    return WaterNetworkFlows(folder, network=name, task=task, num_samples=samples, n_jobs=jobs,
                             log=False, **kw)  # fmt: skip


# ---------------------------------------------------------------------------- 1. making
def sample_making(root: Path, samples: int, jobs: int, name: str) -> dict[str, Any]:
    """Make (or re-open) the outage samples of ``name``; the recorded solver seconds."""
    start = time.perf_counter()
    ds = dataset(name, "outage", root, samples, jobs)
    sec = ds.settings["seconds"]
    wall = sec.get("wall", time.perf_counter() - start)  # the making's, where recorded
    return {
        "network": name, "samples": samples, "jobs": jobs,
        "solve_s": sec["solve"], "loop_s": sec["total"], "ratio": sec["total"] / sec["solve"],
        "wall_s": wall, "num_failed": ds.num_failed, "numba": ds.settings["numba"],
        "edges": ds.complex.num_edges,
    }  # fmt: skip


# ---------------------------------------------------------------------------- 2. energy
def energy_fractions(ops: Any, weights: np.ndarray, flows: np.ndarray) -> np.ndarray:
    """Each Hodge part's share of the energy of ``flows [S, N1]`` in the metric ``W1 =
    diag(weights)``, ``W0 = I`` (the unit metric for unit weights), ``[S, 3]``; the iterative
    backend, whose harmonic part is the remainder (the linearised metric's weights span
    twelve orders of magnitude)."""
    import torch

    from topo_contrastive import HodgeDecomposition

    hodge = HodgeDecomposition(ops.with_weights("resistance", edge=weights), backend="iterative")
    parts = hodge(torch.from_numpy(np.asarray(flows, dtype=np.float64)))
    energy = np.stack([(p.numpy() ** 2 * weights).sum(axis=1) for p in parts], axis=1)
    return energy / np.maximum(energy.sum(axis=1, keepdims=True), np.finfo(float).tiny)


def energy_rows(root: Path, samples: int, jobs: int, nets: tuple[str, ...]) -> list[dict]:
    """Mean (std) Hodge energy fractions of the true flows in the two metrics."""
    rows = []
    power = [n for n in nets if n in POWER]
    runs = [(n, "state", "ac") for n in power] + [(n, "state", "dc") for n in power]
    runs += [(n, "demand", "-") for n in nets if n not in POWER]
    for name, task, mode in runs:
        kw = {"mode": mode} if mode != "-" else {}
        ds = dataset(name, task, root, samples, jobs, **kw)
        ops, w, f = ds.complex, ds.edge_weights.numpy(), ds.flows.numpy()
        metrics = [("unit", np.ones_like(w)), ("physical", w)]
        if mode == "-":  # Hazen-Williams linearised at each sample: r |q|^0.852 (q in m^3/s)
            metrics.append(("linearised", None))
        for metric, weights in metrics:
            if weights is None:
                frac = np.concatenate([energy_fractions(ops, lin, f[s:s + 1])
                    for s in range(min(100, len(f)))
                    for lin in [w * np.maximum(np.abs(f[s]) / 1e3, 1e-9) ** 0.852]])  # fmt: skip
            else:
                frac = energy_fractions(ops, weights, f)
            rows.append({
                "network": name, "flows": mode.upper() if mode != "-" else "EPANET",
                "metric": metric, "N0": ops.num_nodes, "N1": ops.num_edges, "N2": ops.num_faces,
                **{f"{p}_mean": float(frac[:, i].mean()) for i, p in enumerate(PARTS)},
                **{f"{p}_std": float(frac[:, i].std()) for i, p in enumerate(PARTS)},
            })  # fmt: skip
    return rows


PARTS = ("gradient", "curl", "harmonic")


# ---------------------------------------------------------------------------- 3. probes
def timed(cmd: list[str], log: Path) -> dict[str, float]:
    """Run a command under ``/usr/bin/time``; its seconds and peak resident memory (GB)."""
    stats = log.with_suffix(".time")
    if stats.exists() and log.with_suffix(".done").exists():  # a finished run: reused
        seconds, kib, code = stats.read_text().split()[-2:] + [log.with_suffix(".done").read_text()]
        return {"seconds": float(seconds), "peak_gb": float(kib) / 2**20, "exit": int(code)}
    if os.environ.get("PHYSICAL_CACHED_ONLY"):  # tables from the finished runs alone
        return {"seconds": float("nan"), "peak_gb": float("nan"), "exit": -1}
    full = ["/usr/bin/time", "-f", "%e %M", "-o", str(stats), *cmd]
    with open(log, "w") as out:
        code = subprocess.run(full, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds, kib = stats.read_text().split()[-2:]
    log.with_suffix(".done").write_text(str(code))
    return {"seconds": float(seconds), "peak_gb": float(kib) / 2**20, "exit": code}


def probe(npz: Path, work: Path, seeds: int, splits: int, epochs: int | None) -> dict[str, Any]:
    """Pre-train ``seeds`` encoders on ``npz`` and evaluate each on ``splits`` splits."""
    cli = [sys.executable, "-m", "topo_contrastive.cli"]
    runs, costs = [], []
    for seed in range(seeds):
        out = work / f"seed{seed}"
        pre = [*cli, "pretrain", "--data-file", str(npz), "--config", "SSCL_Spec", "--seed",
               str(seed), "--out", str(out), "--no-progress", "--overwrite"]  # fmt: skip
        if epochs is not None:
            pre += ["--epochs", str(epochs)]
        ev = [*cli, "evaluate", "--checkpoint", str(out / "encoder.pt"), "--data-file", str(npz),
              "--out", str(out / "eval.json"), "--no-progress", "--overwrite"]  # fmt: skip
        if splits:  # the reference rows do not depend on the seed: once, with the supervised
            ev += ["--seeds", str(splits)] + (["--supervised"] if seed == 0 else
                                              ["--no-references"])  # fmt: skip
        cost = {"pretrain": timed(pre, work / f"pretrain{seed}.log")}
        if cost["pretrain"]["exit"] == 0:  # a killed run (out of memory) is recorded as such
            cost["evaluate"] = timed(ev, work / f"evaluate{seed}.log")
        cost = {k: c for k, c in cost.items() if c["exit"] != -1}  # -1: not run (cached only)
        if cost:
            costs.append(cost)
        if cost.get("evaluate", {}).get("exit") == 0:
            runs.append(json.loads((out / "eval.json").read_text()))
    rows = {}
    for i, run in enumerate(runs):
        for r in run["references"]["rows"] if "references" in run else [
                {"row": "encoder", "label": "encoder", "splits": run["splits"]}]:  # fmt: skip
            if r["row"] == "encoder" or i == 0:
                rows.setdefault(r["row"], {"label": r["label"], "acc": []})
                rows[r["row"]]["acc"] += [100 * s["test_accuracy"]
                                          for s in r["splits"]]  # fmt: skip
    return {"rows": rows, "costs": costs}


def probe_rows(root: Path, samples: int, jobs: int, seeds: int, splits: int,
               epochs: int | None, networks: tuple[str, ...],
               tasks: tuple[str, ...] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The probe table's rows of every network and task (``splits=0``: evaluate's
    defaults, 16 splits with the reference rows and without the supervised row)."""
    out = []
    for name in networks:
        for task in tasks or (("outage", "state") if name in POWER else ("leak", "demand")):
            ds = dataset(name, task, root, samples, jobs)
            npz = root / "npz" / f"{name}_{task}.npz"
            ds.to_npz(npz)
            work = root / "probe" / f"{name}_{task}"
            work.mkdir(parents=True, exist_ok=True)
            result = probe(npz, work, seeds, splits, epochs)
            chance = float(np.bincount(ds._data.y.numpy()).max() / len(ds))
            for row, r in result["rows"].items():
                acc = np.asarray(r["acc"], dtype=float)
                out.append({"network": name, "task": task, "row": row, "label": r["label"],
                            "mean": float(acc.mean()), "std": float(acc.std()), "n": acc.size,
                            "majority": 100 * chance})  # fmt: skip
            for c in result["costs"]:
                out.append({"network": name, "task": task, "row": "_cost", **{
                    f"{k}_{m}": v for k, d in c.items() for m, v in d.items()}})  # fmt: skip
    return out


# ---------------------------------------------------------------------------- 4. interpolation
def interpolation_rows(root: Path, samples: int, jobs: int, flows: int, seeds: int,
                       nets: tuple[str, ...]) -> list[dict[str, Any]]:  # fmt: skip
    """Jia et al.'s protocol on ``flows`` true flows of every network, ``seeds`` draws each."""
    import torch

    from topo_contrastive.hodge import interpolate_flows

    rows = []
    for name in nets:
        ds = dataset(name, "state" if name in POWER else "demand", root, samples, jobs)
        x = ds.flows[:flows]
        for ratio in RATIOS:
            corr = {"FlowSSL": [], "ZeroFill": []}
            err = {"FlowSSL": [], "ZeroFill": []}
            start = time.perf_counter()
            for seed in range(seeds):
                rng = np.random.default_rng([seed, int(ratio * 100)])
                mask = torch.zeros(x.shape[1], dtype=torch.bool)
                mask[rng.permutation(x.shape[1])[: int(round(ratio * x.shape[1]))]] = True
                filled = {"FlowSSL": interpolate_flows(ds.complex, x, mask),
                          "ZeroFill": torch.where(mask, x, 0.0)}  # fmt: skip
                for key, y in filled.items():
                    for truth, guess in zip(x.numpy(), y.numpy(), strict=True):
                        corr[key].append(np.corrcoef(truth, guess)[0, 1])
                        err[key].append(np.linalg.norm(truth - guess) / np.linalg.norm(truth))
            seconds = (time.perf_counter() - start) / seeds
            for key in corr:
                rows.append({"network": name, "method": key, "ratio": ratio,
                             "corr_mean": float(np.mean(corr[key])),
                             "corr_std": float(np.std(corr[key])),
                             "relerr_mean": float(np.mean(err[key])),
                             "seconds_per_draw": seconds if key == "FlowSSL" else 0.0})  # fmt: skip
    return rows


# ---------------------------------------------------------------------------- tables
def _pm(mean: float, std: float, digits: int = 3) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown(results: dict[str, Any]) -> dict[str, str]:
    """The page's tables, of the parts done so far."""
    tables = {}
    if "making" in results:
        m = results["making"]
        tables["making"] = "\n".join([
            "| network | samples | processes | inside `runpp` (s) | whole loop (s) | ratio | "
            "wall (s) | failed solves |", "|---|---:|---:|---:|---:|---:|---:|---:|",
            f"| {m['network']} | {m['samples']:,} | {m['jobs']} | {m['solve_s']:.1f} | "
            f"{m['loop_s']:.1f} | {m['ratio']:.3f} | {m['wall_s']:.1f} | {m['num_failed']} |",
        ])  # fmt: skip
    if "energy" in results:
        lines = ["| network | N0 / N1 / N2 | flows | metric | gradient | curl | harmonic |",
                 "|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in results["energy"]:
            lines.append(
                f"| {r['network']} | {r['N0']:,} / {r['N1']:,} / {r['N2']:,} | {r['flows']} | "
                f"{r['metric']} | "
                + " | ".join(_pm(r[f"{p}_mean"], r[f"{p}_std"]) for p in PARTS) + " |"
            )
        tables["energy"] = "\n".join(lines)
    probe = results.get("probe", []) + results.get("target", [])
    if probe:
        tables["probe"], tables["costs"] = _probe_tables(probe)
    if "interpolation" in results:
        header = "| network | method | " + " | ".join(f"{int(r * 100)} %" for r in RATIOS) + " |"
        lines = [header, "|---|---|" + "---:|" * len(RATIOS)]
        by: dict[tuple[str, str], dict[float, dict]] = {}
        for r in results["interpolation"]:
            by.setdefault((r["network"], r["method"]), {})[r["ratio"]] = r
        for (net, method), rs in by.items():
            lines.append(f"| {net} | {method} | " + " | ".join(
                f"{rs[q]['corr_mean']:.2f}" for q in RATIOS) + " |")  # fmt: skip
        tables["interpolation"] = "\n".join(lines)
    return tables


def _probe_tables(probe: list[dict[str, Any]]) -> tuple[str, str]:
    lines = ["| network | task | majority | encoder | untrained | raw flows | \\|flows\\| | "
             "harmonic | supervised SCNN |", "|---|---|---:|---|---|---|---|---|---|"]  # fmt: skip
    order = ("encoder", "untrained", "raw", "abs", "harmonic", "supervised")
    keyed: dict[tuple[str, str], dict[str, Any]] = {}
    for r in probe:
        if r["row"] != "_cost":
            keyed.setdefault((r["network"], r["task"]), {})[r["row"]] = r
    for (net, task), rows in keyed.items():
        cells = [_pm(rows[k]["mean"], rows[k]["std"], 1) if k in rows else "-" for k in order]
        majority = next(iter(rows.values()))["majority"]
        lines.append(f"| {net} | {task} | {majority:.1f} | " + " | ".join(cells) + " |")
    costs = ["| network | task | pretrain (s) | pretrain peak (GB) | evaluate (s) | "
             "evaluate peak (GB) |", "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for r in probe:
        if r["row"] == "_cost":
            cells = []
            for step in ("pretrain", "evaluate"):
                if f"{step}_seconds" not in r:
                    cells += ["not run", "-"]
                    continue
                killed = f" (exit {r[f'{step}_exit']})" if r[f"{step}_exit"] else ""
                cells += [f"{r[f'{step}_seconds']:.0f}{killed}", f"{r[f'{step}_peak_gb']:.2f}"]
            costs.append(f"| {r['network']} | {r['task']} | " + " | ".join(cells) + " |")
    return "\n".join(lines), "\n".join(costs)


def main(out: str, seed: int = 0, samples: int = 500, big_samples: int = 1000, jobs: int = 2,
         seeds: int = 2, large_seeds: int = 1, splits: int = 5, epochs: int | None = None,
         flows: int = 20,
         draws: int = 3, quick: bool = False, docs: bool = False) -> dict[str, Any]:  # fmt: skip
    """Run every part and write ``physical_flows.{json,md}`` (and the CSVs) into ``out``;
    with ``docs``, the Markdown tables into ``docs/_data/physical_flows/``."""
    root = Path(out).resolve()
    root.mkdir(parents=True, exist_ok=True)
    networks, every, big = PROBED, POWER + WATER, "case9241pegase"
    if quick:
        samples, big_samples, seeds, splits, epochs, flows, draws = 40, 40, 1, 2, 2, 4, 1
        networks = every = ("case118", "Net3")
        big = "case118"
    results: dict[str, Any] = {"settings": {
        "seed": seed, "samples": samples, "big_samples": big_samples, "jobs": jobs,
        "pretrain_seeds": seeds, "large_seeds": large_seeds, "splits": splits,
        "epochs": epochs, "flows": flows, "draws": draws}}  # fmt: skip
    stages = [
        ("making", lambda: sample_making(root, big_samples, jobs, big)),
        ("energy", lambda: energy_rows(root, samples, jobs, every)),
        ("interpolation", lambda: interpolation_rows(root, samples, jobs, flows, draws, every)),
    ]
    for name in networks:  # one stage a network: its rows are saved as soon as they exist
        n = large_seeds if name in ("case1354pegase", "ky10") else seeds
        stages.append((f"probe {name}", lambda name=name, n=n: probe_rows(
            root, samples, jobs, n, splits, epochs, (name,))))  # fmt: skip
    if not quick:  # the 15-minute, 4-GB target: one pretrain + evaluate at the defaults
        stages.append(("target", lambda: probe_rows(root, big_samples, jobs, 1, 0, None,
                                                    (big,), tasks=("outage",))))  # fmt: skip
    earlier = root / "physical_flows.json"
    if os.environ.get("PHYSICAL_CACHED_ONLY") and earlier.exists():  # reuse the cheap parts
        old = json.loads(earlier.read_text())
        results.update({k: old[k] for k in ("making", "energy", "interpolation") if k in old})
    for i, (key, run) in enumerate(stages):
        print(f"{i + 1}/{len(stages)} {key}", flush=True)
        if key in results:
            continue
        if key.startswith("probe"):
            results["probe"] = results.get("probe", []) + run()
        else:
            results[key] = run()
        _save(root, results, docs)  # every stage's tables as soon as they exist
    return results


def _save(root: Path, results: dict[str, Any], docs: bool) -> None:
    from topo_contrastive._utils.files import write_csv, write_json, write_text

    write_json(root / "physical_flows.json", results)
    for key in ("energy", "probe", "interpolation", "target"):
        if key in results:
            write_csv(root / f"physical_flows_{key}.csv", results[key])
    tables = markdown(results)
    write_text(root / "physical_flows.md", "\n\n".join(tables.values()) + "\n")
    if docs:
        (ROOT / "docs" / "_data" / "physical_flows").mkdir(parents=True, exist_ok=True)
        for key, text in tables.items():
            write_text(ROOT / "docs" / "_data" / "physical_flows" / f"{key}.md", text + "\n")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder (datasets, runs, tables)")
    ap.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    ap.add_argument("--samples", type=int, default=500, help="samples of a task (default 500)")
    ap.add_argument("--big-samples", type=int, default=1000,
                    help="samples on case9241pegase (default 1000)")
    ap.add_argument("--jobs", type=int, default=2, help="processes making samples (default 2)")
    ap.add_argument("--seeds", type=int, default=2, help="pre-training seeds (default 2)")
    ap.add_argument("--large-seeds", type=int, default=1,
                    help="pre-training seeds on case1354pegase and ky10 (default 1)")
    ap.add_argument("--splits", type=int, default=5, help="evaluation splits (default 5)")
    ap.add_argument("--epochs", type=int, default=None,
                    help="pre-training epochs (default: the configuration's)")
    ap.add_argument("--flows", type=int, default=20,
                    help="flows per network in the interpolation (default 20)")
    ap.add_argument("--draws", type=int, default=3,
                    help="random edge subsets per ratio (default 3)")
    ap.add_argument("--quick", action="store_true", help="a small run of every part (minutes)")
    ap.add_argument("--docs", action="store_true",
                    help="write the tables into docs/_data/physical_flows/")
    return ap


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    main(**vars(_parser().parse_args()))
