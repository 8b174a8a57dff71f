"""Next-node trajectory prediction with a pre-trained encoder, beside scratch training and
baselines.

The second downstream task (issue 28; SCoNe's task and data preparation,
:mod:`topo_contrastive.datasets.next_node`): per dataset and seed, SSCL_Spec (paper edition) is
pre-trained on all flows without labels, then a :class:`~topo_contrastive.nn.NextNodeHead` is
trained on its per-edge features, frozen or fine-tuned, beside the same SCNN trained from
scratch, a first-order Markov chain and a uniform choice; on the dataset's standard split
(the ocean drifters: 20 % of the training paths set aside for validation), the epoch chosen
on validation, the test split only scored. Every finished cell is appended to
``<out>/next_node.json`` at once (atomically) and a rerun skips it; ``next_node.md`` holds the
table (mean ± std over the seeds).

    python examples/next_node_prediction.py --datasets trajectory --seeds 1 --epochs 50
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from topo_contrastive._files import write_json, write_text

ROWS = ("uniform", "markov", "scratch", "frozen", "finetune")
LABELS = {
    "uniform": "uniform among the neighbours",
    "markov": "Markov chain (first order)",
    "scratch": "SCNN + head from scratch",
    "frozen": "SSCL_Spec pre-trained, frozen + head",
    "finetune": "SSCL_Spec pre-trained, fine-tuned + head",
}


def _table(records: list[dict[str, Any]]) -> str:
    lines = ["| dataset | row | test accuracy (%) | seeds | kept epoch |",
             "|---|---|---:|---:|---|"]  # fmt: skip
    for ds in dict.fromkeys(r["dataset"] for r in records):
        for row in ROWS:
            mine = [r for r in records if (r["dataset"], r["row"]) == (ds, row)]
            acc = [100 * r["test_accuracy"] for r in mine]
            ep = [str(r.get("epoch", "")) for r in mine]
            if acc:
                lines.append(f"| {ds} | {LABELS[row]} | {np.mean(acc):.1f} ± {np.std(acc):.1f} | "
                             f"{len(acc)} | {', '.join(ep)} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(datasets: list[str], seeds: int, epochs: int, out: Path, data_root: str,
         seed: int = 0, quick: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    """Run the missing cells; returns every record. ``quick``: a small trajectory complex
    (150 points, 20 / 10 / 10 paths), 1 pre-training epoch (a smoke test, not a result)."""
    from topo_contrastive.datasets import next_node_samples
    from topo_contrastive.experiments import get_config, pretrain
    from topo_contrastive.experiments import next_node as nn_
    from topo_contrastive.experiments.data import ExperimentData, load_dataset

    out.mkdir(parents=True, exist_ok=True)
    path = out / "next_node.json"
    records = json.loads(path.read_text())["records"] if path.is_file() else []
    done = {(r["dataset"], r["row"], r["seed"]) for r in records}
    for name in datasets:
        small = dict(trajectory_points=150, trajectory_split=(20, 10, 10)) if quick else {}
        data = ExperimentData.from_dataset(load_dataset(name, data_root=data_root, **small), name)
        for s in range(seed, seed + seeds):
            todo = [row for row in ROWS if (name, row, s) not in done]
            if not todo:
                continue
            samples = next_node_samples(data.complex, data.dataset.paths(), seed=s)
            split = nn_.next_node_split(data, s)
            cfg = get_config("SSCL_Spec", name)
            encoder = None
            for row in tqdm(todo, desc=f"{name} seed {s}"):
                t0 = time.perf_counter()
                if encoder is None and row not in ("uniform", "markov"):
                    # (scratch re-initialises a copy from the seed: the architecture is used)
                    encoder = pretrain(data, cfg, seed=s, epochs=1 if quick else None)
                    encoder = encoder.encoder.cpu().eval()
                rec: dict[str, Any] = {"dataset": name, "row": row, "seed": s}
                rec.update(nn_.next_node_cell(row, data, samples, encoder, split,
                                              epochs=epochs, seed=s))  # fmt: skip
                if "epoch" in rec:
                    rec["epochs"] = epochs
                rec["seconds"] = round(time.perf_counter() - t0, 1)
                records.append(rec)
                write_json(path, {"epochs": epochs, "records": records})
                tqdm.write(f"{name} seed {s} {row}: {100 * rec['test_accuracy']:.1f} %")
    write_text(out / "next_node.md", _table(records))
    return records


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["trajectory", "ocean"],
                   help="paper datasets (default: trajectory ocean)")
    p.add_argument("--seeds", type=int, default=5, help="seeds (split, cut, init; default 5)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--epochs", type=int, default=100, help="head training epochs (default 100)")
    p.add_argument("--out", type=Path, default=Path("results/next_node"),
                   help="output folder (default: results/next_node)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: a small trajectory task, 1 seed, 2 epochs (not a result)")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    if a.quick:
        a.datasets, a.seeds, a.epochs = ["trajectory"], 1, 2
    main(a.datasets, a.seeds, a.epochs, a.out, a.data_root, a.seed, quick=a.quick)
