"""``evaluate`` at its defaults on a user's road network: the fast ridge probe against the
paper's SVM (``--probe svm``), wall and CPU time, ratios in one run; and a label-efficiency
cell, ridge against the logistic probe.

The networks, each with 1,000 routed trips labelled by the side of a landmark their route
passes (``examples/road_networks.py``'s recipe):

- ``synthetic``: a synthetic road map of 1,595 roads (``benchmarks/_road_network.py``);
- ``chicago_sketch``: chicago-sketch, 1,088 roads (``examples/road_networks.py``; needs
  ``pip install --no-deps pytspl==0.1.5``).

On each, as separate ``topo-contrastive`` processes (wall time, and CPU time of the process
from ``getrusage``):

1. ``pretrain --data-file <net> --config SSCL_Spec`` at its defaults (the HodgeReadout edition,
   20 epochs; ``--epochs`` shortens it: the probe's cost does not depend on it), or, with
   ``--checkpoints DIR``, the run of such a command in ``DIR/<network>/`` (its
   ``pretrain.json`` must name the same data and 20 epochs; its seconds are reported);
2. ``evaluate --checkpoint ... --data-file <net>`` at its defaults (16 splits, the encoder and
   its four reference rows: untrained encoder, raw flows, ``|flows|``, harmonic coordinates),
   that is the ridge probe, on all 16 splits;
3. the same with ``--probe svm`` on the first ``--svm-splits`` splits only (default 2: the SVM
   takes about 30 minutes for 16 splits on an idle 2-core machine), **extrapolated linearly**
   to 16 splits (its time is the data's set-up plus a near-constant time per split: the
   set-up, measured as the ridge run's time outside the probe, is not scaled);
4. ``label-efficiency`` with the probe rows that need no pre-training (``untrained`` of the
   HodgeReadout edition, ``raw``, ``abs``, ``harmonic``) at ``--fractions 1.0`` and
   ``--draws 2``: ``--classifier ridge`` (the default) against ``--classifier logistic``
   (before): seconds per cell from the records (the probe alone), and the mean accuracy of
   every row (the reading).

Results: ``benchmarks/results/bench_evaluate.{json,md}``. The ratios compare runs made in the
same invocation on the same machine; on a shared machine they move with the other load.

    python benchmarks/bench_evaluate.py                      # ~15 min at --svm-splits 2
    python benchmarks/bench_evaluate.py --networks synthetic --epochs 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
sys.path.insert(0, str(REPO / "benchmarks"))
NETWORKS: tuple[str, ...] = ("synthetic", "chicago_sketch")
SPLITS = 16  # evaluate's default


def network_file(name: str, folder: Path, seed: int = 0) -> tuple[Path, dict[str, Any]]:
    """The data file of network ``name`` in ``folder`` and its sizes."""
    path = folder / f"{name}.npz"
    if name == "synthetic":
        from _road_network import synthetic_road_network

        return path, synthetic_road_network(path, num_edges=1595, num_trips=1000, seed=seed)
    sys.path.insert(0, str(REPO / "examples"))
    import road_networks as rn


    built = rn.write_network(name.replace("_", "-"), path, 1000, seed)
    n0, n1, n2 = built["stats"]["sizes"]
    return path, {"N0": n0, "N1": n1, "N2": n2, "trips": 1000,
                  "class_1_share": built["stats"]["class_1_share"]}  # fmt: skip


def cli(args: list[str]) -> dict[str, Any]:
    """Run ``topo-contrastive args`` as a process: wall and CPU seconds (user + system)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "topo_contrastive.cli", *args],
                         capture_output=True, text=True, env=env, timeout=4 * 3600)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{res.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stdout": res.stdout, "stderr": res.stderr}


def evaluate(net: Path, ckpt: Path, out: Path, data_root: Path, probe: str,
             splits: int) -> dict[str, Any]:  # fmt: skip
    """One ``evaluate`` run; its timing and the rows' mean accuracies."""
    run = cli(["evaluate", "--checkpoint", str(ckpt), "--data-file", str(net), "--seeds",
               str(splits), "--probe", probe, "--out", str(out), "--overwrite", "--no-progress",
               "--data-root", str(data_root)])  # fmt: skip
    res = json.loads(out.read_text())
    rows = {r["row"]: {"mean": r["mean_accuracy"], "std": r["std_accuracy"],
                       "test": [s["test_accuracy"] for s in r["splits"]]}
            for r in res["references"]["rows"]}  # fmt: skip
    return {"wall_s": run["wall_s"], "cpu_s": run["cpu_s"], "splits": splits, "rows": rows}


def label_cells(net: Path, out: Path, data_root: Path, classifier: str) -> dict[str, Any]:
    """A ``label-efficiency`` run of the probe rows without pre-training; per-cell seconds."""
    run = cli(["label-efficiency", "--data-file", str(net), "--out", str(out), "--overwrite",
               "--rows", "untrained", "raw", "abs", "harmonic", "--editions", "hodge",
               "--fractions", "1.0", "--draws", "2", "--classifier", classifier,
               "--no-progress", "--data-root", str(data_root)])  # fmt: skip
    records = json.loads((out / "label_efficiency.json").read_text())["records"]
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        rows.setdefault(r["row"], []).append(r)
    return {
        "wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
        "cell_s": float(np.mean([r["seconds"] for r in records])),
        "rows": {k: {"mean": 100 * float(np.mean([r["test_accuracy"] for r in v])),
                     "cell_s": float(np.mean([r["seconds"] for r in v]))}
                 for k, v in rows.items()},
    }  # fmt: skip


def probe_cells(net: Path, data_root: Path, ckpt: Path, draws: int = 2,
                fractions: tuple[float, ...] = (0.1, 1.0)) -> dict[str, Any]:
    """The probe of a label-efficiency cell alone, in this process: ``low_label_probe`` with
    the logistic and the ridge classifier on the same features (the encoder of ``ckpt``,
    its untrained twin, raw flows, ``|flows|``, ``U_H^T x``) and labelled subsets of split 0;
    wall and CPU seconds per cell and the mean test accuracy (the reading) per row."""
    import torch

    from experiments.studies.label_efficiency.curves import labelled_subsets
    from experiments.studies.label_efficiency.probe import low_label_probe
    from topo_contrastive import io
    from topo_contrastive.evaluation.probe import reference_features
    from topo_contrastive.evaluation.references import untrained_like
    from topo_contrastive.training.data import ExperimentData, load_data_file
    from topo_contrastive.training.loop import embed

    torch.set_num_threads(2)
    data = ExperimentData.from_dataset(load_data_file(net, data_root), net.stem)
    encoder, _ = io.load_encoder(ckpt, complex=data.hodge)
    feats = {"encoder": embed(encoder, data),
             "untrained": embed(untrained_like(encoder, data), data),
             **{k: reference_features(data, k) for k in ("raw", "abs", "harmonic")}}  # fmt: skip
    y = data.labels.numpy()
    idx = data.split(0)
    subsets = labelled_subsets(y, idx["train"], fractions, draws, 0)
    out: dict[str, Any] = {"fractions": list(fractions), "draws": draws, "rows": {}}
    for row, X in feats.items():
        out["rows"][row] = {"features": int(X.shape[1])}
        for c in ("logistic", "ridge"):
            wall, cpu, acc = [], [], []
            for (_f, d), sub in subsets.items():
                w0, c0 = time.perf_counter(), time.process_time()
                res = low_label_probe(X, y, sub, idx["test"], classifier=c, seed=d)
                wall.append(time.perf_counter() - w0)
                cpu.append(time.process_time() - c0)
                acc.append(100 * res.test_accuracy)
            out["rows"][row][c] = {"wall_s": float(np.mean(wall)), "cpu_s": float(np.mean(cpu)),
                                   "mean": float(np.mean(acc))}  # fmt: skip
        r = out["rows"][row]
        print(f"  cell probe {row}: logistic {r['logistic']['cpu_s']:.2f} s CPU "
              f"({r['logistic']['mean']:.1f} %), ridge {r['ridge']['cpu_s']:.2f} s CPU "
              f"({r['ridge']['mean']:.1f} %)", flush=True)  # fmt: skip
    return out


def main(networks: list[str], svm_splits: int, epochs: int | None, seed: int,
         out: Path = RESULTS, work: Path | None = None,
         checkpoints: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """Run every measurement; write ``bench_evaluate.{json,md}`` into ``out``."""
    results: dict[str, Any] = {"svm_splits": svm_splits, "splits": SPLITS, "epochs": epochs,
                               "cpus": os.cpu_count(), "networks": {}}  # fmt: skip
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(work) if work is not None else Path(name)
        tmp.mkdir(parents=True, exist_ok=True)
        data_root = tmp / "data"
        for net_name in networks:
            net, sizes = network_file(net_name, tmp, seed)
            print(f"{net_name}: {sizes}", flush=True)
            pre = tmp / f"pretrain_{net_name}"
            given = None if checkpoints is None else checkpoints / net_name
            if given is not None and (given / "encoder.pt").is_file():
                pre, log = given, json.loads((given / "pretrain.json").read_text())
                from topo_contrastive.training.data import ExperimentData, load_data_file

                mine = ExperimentData.from_dataset(load_data_file(net, data_root), net.stem)
                if log["data_fingerprint"] != mine.fingerprint or not log.get("complete"):
                    raise ValueError(f"{given} was pre-trained on other data")
                p = {"wall_s": log["seconds"], "cpu_s": float("nan"), "reused": str(given)}
            else:
                flags = [] if epochs is None else ["--epochs", str(epochs)]
                p = cli(["pretrain", "--data-file", str(net), "--config", "SSCL_Spec", "--out",
                         str(pre), "--overwrite", "--no-progress", "--data-root",
                         str(data_root), *flags])  # fmt: skip
                log = json.loads((pre / "pretrain.json").read_text())
            entry: dict[str, Any] = {"sizes": sizes, "pretrain": {
                "wall_s": p["wall_s"], "cpu_s": p["cpu_s"], "epochs": log["epochs"],
                "reused": p.get("reused")}}  # fmt: skip
            print(f"  pretrain: {p['wall_s']:.0f} s wall", flush=True)
            ckpt = pre / "encoder.pt"
            # a one-split ridge run: the set-up (data, encoder, embeddings, harmonic basis)
            one = evaluate(net, ckpt, tmp / f"one_{net_name}.json", data_root, "ridge", 1)
            ridge = evaluate(net, ckpt, tmp / f"ridge_{net_name}.json", data_root, "ridge",
                             SPLITS)  # fmt: skip
            per_split = max(0.0, (ridge["wall_s"] - one["wall_s"]) / (SPLITS - 1))
            setup = max(0.0, one["wall_s"] - per_split)
            svm = evaluate(net, ckpt, tmp / f"svm_{net_name}.json", data_root, "svm", svm_splits)
            svm["extrapolated_wall_s"] = setup + (svm["wall_s"] - setup) * SPLITS / svm_splits
            cpu_setup = max(0.0, one["cpu_s"] - (ridge["cpu_s"] - one["cpu_s"]) / (SPLITS - 1))
            svm["extrapolated_cpu_s"] = cpu_setup + (svm["cpu_s"] - cpu_setup) * SPLITS / svm_splits
            svm["setup_s"], svm["cpu_setup_s"] = setup, cpu_setup
            entry.update(ridge=ridge, svm=svm)
            print(f"  evaluate: ridge {ridge['wall_s']:.0f} s, svm ({svm_splits} splits) "
                  f"{svm['wall_s']:.0f} s -> {svm['extrapolated_wall_s']:.0f} s at {SPLITS}",
                  flush=True)  # fmt: skip
            if net_name == networks[0]:
                entry["label_efficiency"] = {
                    c: label_cells(net, tmp / f"le_{c}_{net_name}", data_root, c)
                    for c in ("logistic", "ridge")
                }
                entry["cell_probe"] = probe_cells(net, data_root, ckpt)
            results["networks"][net_name] = entry
            out.mkdir(parents=True, exist_ok=True)  # what is done so far, in case of a stop
            (out / "bench_evaluate.json").write_text(json.dumps(results, indent=1) + "\n")
    md = render(results)
    (out / "bench_evaluate.md").write_text(md)
    print(md)
    return results


def render(results: dict[str, Any]) -> str:
    """The Markdown report of :func:`main`'s results."""
    k, n = results["svm_splits"], results["splits"]
    lines = [
        "# evaluate at its defaults: the ridge probe against the SVM",
        "",
        f"`python benchmarks/bench_evaluate.py` ({results['cpus']} CPUs; the SVM measured on "
        f"{k} split(s) and extrapolated linearly to {n}: set-up + {n}/{k} x the rest).",
        "",
        "| network | N1 | pretrain wall s | evaluate ridge wall s | CPU s | evaluate SVM wall s "
        f"(x{n}/{k}) | CPU s | SVM / ridge wall | CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, e in results["networks"].items():
        r, s = e["ridge"], e["svm"]
        lines.append(
            f"| {name} | {e['sizes']['N1']:,} | {e['pretrain']['wall_s']:.0f} "
            f"({e['pretrain']['epochs']} epochs{', reused' if e['pretrain'].get('reused') else ''})"
            f" | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | "
            f"{s['extrapolated_wall_s']:.0f} | {s['extrapolated_cpu_s']:.0f} | "
            f"{s['extrapolated_wall_s'] / r['wall_s']:.1f}x | "
            f"{s['extrapolated_cpu_s'] / r['cpu_s']:.1f}x |"
        )
    lines += ["", f"Mean test accuracy (%) of every row on the SVM's {k} split(s):", "",
              "| network | row | SVM | ridge |", "|---|---|---:|---:|"]  # fmt: skip
    for name, e in results["networks"].items():
        for row, v in e["svm"]["rows"].items():
            w = 100 * np.mean(e["ridge"]["rows"][row]["test"][:k])  # the same splits
            lines.append(f"| {name} | {row} | {v['mean']:.1f} | {w:.1f} |")
    for name, e in results["networks"].items():
        le = e.get("label_efficiency")
        if not le:
            continue
        lo, ri = le["logistic"], le["ridge"]
        lines += ["", f"label-efficiency on {name} (fraction 1.0, 2 draws; seconds per cell from "
                  "the records):", "", "| row | logistic s/cell | ridge s/cell | ratio | "
                  "logistic % | ridge % |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for row, v in lo["rows"].items():
            w = ri["rows"][row]
            lines.append(f"| {row} | {v['cell_s']:.2f} | {w['cell_s']:.2f} | "
                         f"{v['cell_s'] / max(w['cell_s'], 1e-9):.1f}x | {v['mean']:.1f} | "
                         f"{w['mean']:.1f} |")  # fmt: skip
        lines.append(f"| all cells | {lo['cell_s']:.2f} | {ri['cell_s']:.2f} | "
                     f"{lo['cell_s'] / max(ri['cell_s'], 1e-9):.1f}x | | |")  # fmt: skip
        cp = e.get("cell_probe")
        if cp:
            lines += ["", f"The probe of a cell alone on {name} (in one process, 2 threads; "
                      f"fractions {', '.join(f'{f:g}' for f in cp['fractions'])} of split 0's "
                      f"training part, {cp['draws']} draws each; mean per cell):", "",
                      "| row | features | logistic CPU s | ridge CPU s | ratio | logistic wall s "
                      "| ridge wall s | logistic % | ridge % |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
            for row, v in cp["rows"].items():
                lo_, ri_ = v["logistic"], v["ridge"]
                lines.append(f"| {row} | {v['features']:,} | {lo_['cpu_s']:.2f} | "
                             f"{ri_['cpu_s']:.2f} | {lo_['cpu_s'] / max(ri_['cpu_s'], 1e-9):.1f}x"
                             f" | {lo_['wall_s']:.2f} | {ri_['wall_s']:.2f} | {lo_['mean']:.1f} "
                             f"| {ri_['mean']:.1f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS,
                        help="networks (default: both)")
    parser.add_argument("--svm-splits", type=int, default=2,
                        help="splits of the SVM run, extrapolated to 16 (default: 2)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="pre-training epochs (default: the configuration's 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the networks' trips")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of the results")
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the data and runs in this folder (default: a temporary one)")
    parser.add_argument("--checkpoints", type=Path, default=None,
                        help="reuse the pretrain runs DIR/<network>/ (default: pre-train)")
    parser.add_argument("--cells-only", action="store_true",
                        help="only measure the cell probes on the first network, into --out's "
                        "bench_evaluate.json (with --checkpoints and --work of an earlier run)")
    parser.add_argument("--render", action="store_true",
                        help="only re-write the Markdown from --out's bench_evaluate.json")
    a = parser.parse_args()
    if a.cells_only:
        res = json.loads((a.out / "bench_evaluate.json").read_text())
        name = a.networks[0]
        res["networks"][name]["cell_probe"] = probe_cells(
            a.work / f"{name}.npz", a.work / "data", a.checkpoints / name / "encoder.pt")
        (a.out / "bench_evaluate.json").write_text(json.dumps(res, indent=1) + "\n")
        a.render = True
    if a.render:
        text = render(json.loads((a.out / "bench_evaluate.json").read_text()))
        (a.out / "bench_evaluate.md").write_text(text)
        print(text)
    else:
        main(a.networks, a.svm_splits, a.epochs, a.seed, a.out, a.work, a.checkpoints)
