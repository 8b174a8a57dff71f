"""Collect per-seed ``predict-next --transfer`` runs (SCoNe's generalisation tests) into one
table for docs/results/next_node.md.

Reads every ``FOLDER/<dataset>_seed<k>.json`` (one finished ``predict-next --transfer
--seed k --seeds 1 --out ...`` run each; a run per seed so that an interrupted campaign keeps
its finished seeds), checks that they share the checkpoint and head epochs, and writes

- ``docs/_data/next_node/<name>.json`` (``--name``, default ``transfer``): per dataset, test
  and row, the accuracy of every seed and the mean ± std (percent);
- ``docs/_data/next_node/<name>.md``: the table (rows x {test, reversed, other region} per
  dataset, mean ± std over the seeds, the number of seeds).

    python docs/next_node_transfer_section.py runs/transfer5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/ beside the package
from experiments.studies.next_node.transfer import TESTS  # noqa: E402
from topo_contrastive._utils.files import write_json, write_text  # noqa: E402
from topo_contrastive.training.formatting import format_mean_std  # noqa: E402

LABELS = {
    "uniform": "uniform among the neighbours",
    "markov": "Markov chain (first order)",
    "scratch": "SCNN + head from scratch",
    "untrained": "untrained SCNN, frozen + head",
    "scone": "TopoModelX SCoNe (3 x 16) from scratch",
    "frozen": "SSCL_Spec pre-trained, frozen + head",
    "finetune": "SSCL_Spec pre-trained, fine-tuned + head",
}


def collect(folder: Path) -> dict[str, Any]:
    """``{dataset: {"seeds", "epochs", "checkpoint", "tests": {test: {row: [acc %...]}}}}``.

    Raises:
        ValueError: no run in ``folder``, or runs of one dataset with different checkpoints
            or head epochs, or a seed twice.
    """
    out: dict[str, Any] = {}
    files = sorted(folder.glob("*_seed*.json"))
    if not files:
        raise ValueError(f"no <dataset>_seed<k>.json run in {folder}")
    for f in files:
        m = re.fullmatch(r"(.+)_seed(\d+)\.json", f.name)
        if m is None:
            continue
        run = json.loads(f.read_text())
        ds = m.group(1)
        d = out.setdefault(ds, {"seeds": [], "epochs": run["epochs"],
                                "checkpoint": run["checkpoint"], "tests": {}})  # fmt: skip
        if (run["epochs"], run["checkpoint"]) != (d["epochs"], d["checkpoint"]):
            raise ValueError(f"{f}: another checkpoint or head epochs than the other {ds} runs")
        if set(run["seeds"]) & set(d["seeds"]):
            raise ValueError(f"{f}: seed {run['seeds']} twice")
        d["seeds"] += run["seeds"]
        for test in TESTS:
            for row in run["tests"][test]["rows"]:
                accs = d["tests"].setdefault(test, {}).setdefault(row["row"], [])
                accs += [100 * s["test_accuracy"] for s in row["splits"]]
    return out


def markdown(runs: dict[str, Any]) -> str:
    """One table: rows x (dataset, test), mean ± std over the seeds (a row run on fewer
    seeds than its dataset's says how many)."""
    head = ["| row |"]
    for ds, d in runs.items():
        head += [f" {ds}: {t} ({len(d['seeds'])} seeds) |" for t in TESTS]
    lines = ["".join(head), "|---|" + "---:|" * (len(TESTS) * len(runs))]
    for row, label in LABELS.items():
        cells = []
        for d in runs.values():
            for t in TESTS:
                acc = d["tests"].get(t, {}).get(row)
                part = f" ({len(acc)} seeds)" if acc and len(acc) < len(d["seeds"]) else ""
                cells.append(f"{format_mean_std(acc)}{part}" if acc else "")
        if any(cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(folder: Path, out: Path = Path("docs/_data/next_node"), name: str = "transfer"
         ) -> dict[str, Any]:  # fmt: skip
    """Collect ``folder`` and write ``out/<name>.{json,md}``; returns the collection."""
    runs = collect(folder)
    out.mkdir(parents=True, exist_ok=True)
    summary = {ds: dict(d, mean={t: {r: float(np.mean(a)) for r, a in rows.items()}
                                 for t, rows in d["tests"].items()},
                        std={t: {r: float(np.std(a)) for r, a in rows.items()}
                             for t, rows in d["tests"].items()})
               for ds, d in runs.items()}  # fmt: skip
    write_json(out / f"{name}.json", summary)
    text = markdown(runs)
    write_text(out / f"{name}.md", text)
    print(text)
    return summary


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="folder of <dataset>_seed<k>.json runs")
    p.add_argument("--out", type=Path, default=Path("docs/_data/next_node"),
                   help="output folder (default: docs/_data/next_node)")  # fmt: skip
    p.add_argument("--name", default="transfer",
                   help="output file name without suffix (default: transfer)")  # fmt: skip
    a = p.parse_args()
    main(a.folder, a.out, a.name)
