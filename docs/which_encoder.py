"""The table "Which encoder for a user's network" of docs/user_data.md, from one run.

For each road network of ``examples/road_networks.py`` and each encoder variant: SSCL_Spec
with the configuration a data file takes (the ocean task's hyper-parameters) pre-trained
20 epochs on all 1,000 trips without labels (seed 0), its embeddings probed with the
library's linear SVM (``probe_splits``: ``C`` by cross-validation on the training split)
on splits 0 and 1, the **validation** accuracy reported (mean of the 2 splits; the test
split is not read for this table); an untrained encoder of the same architecture and seed
beside it. Variants:

- ``paper``: the paper's encoder (4 layers, mean readout over the edges);
- ``paper-nobias-norm``: the same without bias and with normalised Laplacians;
- ``hodge-all``: the HodgeReadout edition keeping every channel's harmonic coordinates;
- ``hodge-1024`` / ``hodge-4096``: the edition keeping at most 1,024 / 4,096 harmonic
  features (``max_harmonic_features``; 4,096 is the default).

Every finished row is appended to ``docs/_data/selection/which_encoder.json`` at once
(atomically) and a rerun skips it; the Markdown table is written beside it.

    python docs/which_encoder.py --networks data/road_networks
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from topo_contrastive._utils.files import write_json, write_text

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))
from select_input_skip import _data  # noqa: E402

OUT = DOCS / "_data" / "selection"
VARIANTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "paper": ("paper", "paper (4 layers, mean readout)", {}),
    "paper-nobias-norm": ("paper", "paper, without bias, Laplacians normalised",
                          {"bias": False, "normalize": True}),  # fmt: skip
    "hodge-all": ("hodge", "HodgeReadout edition, every channel",
                  {"max_harmonic_features": 10**7}),  # fmt: skip
    "hodge-1024": ("hodge", "HodgeReadout edition, at most 1,024 harmonic features",
                   {"max_harmonic_features": 1024}),  # fmt: skip
    "hodge-4096": ("hodge", "HodgeReadout edition, at most 4,096 harmonic features (default)",
                   {}),  # fmt: skip
}
DEFAULT_ROWS = {
    "anaheim": ["paper", "paper-nobias-norm", "hodge-all", "hodge-1024", "hodge-4096"],
    "chicago_sketch": ["paper", "hodge-1024", "hodge-4096"],
}


def run_row(data: Any, variant: str, seed: int, splits: list[int]) -> dict[str, Any]:
    """Pre-train, embed and probe one variant (and its untrained twin) on ``data``."""
    from topo_contrastive.evaluation.probe import probe_splits
    from topo_contrastive.evaluation.references import untrained_like
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.loop import embed, pretrain

    edition, label, overrides = VARIANTS[variant]
    cfg = get_config("SSCL_Spec", "ocean", edition).replace(**overrides)
    t0 = time.perf_counter()
    res = pretrain(data, cfg, seed=seed)
    feats = embed(res.encoder.cpu().eval(), data)
    feats_u = embed(untrained_like(res.encoder, data, seed), data)
    val = [r["val_accuracy"] for r in probe_splits(feats, data, splits)]
    val_u = [r["val_accuracy"] for r in probe_splits(feats_u, data, splits)]
    return {"dataset": data.name, "variant": variant, "label": label,
            "embedding": int(feats.shape[1]), "loss_first": res.losses[0],
            "loss_last": res.losses[-1], "val_accuracy": float(np.mean(val)),
            "untrained_val_accuracy": float(np.mean(val_u)), "splits": splits,
            "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip


def table(records: list[dict[str, Any]]) -> str:
    names = {"anaheim": "anaheim", "chicago_sketch": "chicago-sketch"}
    lines = ["| network | encoder | embedding | loss (first -> last epoch) | validation % | "
             "untrained % |", "|---|---|---|---|---|---|"]  # fmt: skip
    for r in records:
        lines.append(f"| {names.get(r['dataset'], r['dataset'])} | {r['label']} | "
                     f"{r['embedding']:,} | {r['loss_first']:.2f} -> {r['loss_last']:.2f} | "
                     f"{100 * r['val_accuracy']:.1f} | {100 * r['untrained_val_accuracy']:.1f} |")
    return "\n".join(lines) + "\n"


def main(networks: Path, datasets: list[str], seed: int, data_root: str,
         out: Path = OUT) -> list[dict[str, Any]]:  # fmt: skip
    """Run the missing rows; write ``out/which_encoder.json`` / ``.md``; return the records."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "which_encoder.json"
    records = json.loads(path.read_text())["records"] if path.is_file() else []
    done = {(r["dataset"], r["variant"]) for r in records}
    for name in datasets:
        todo = [v for v in DEFAULT_ROWS[name] if (name, v) not in done]
        if not todo:
            continue
        data, _ = _data(name, networks, data_root)
        for v in todo:
            rec = run_row(data, v, seed, [0, 1])
            print(f"{name} {v}: val {100 * rec['val_accuracy']:.1f} % (untrained "
                  f"{100 * rec['untrained_val_accuracy']:.1f} %) in {rec['seconds']} s",
                  flush=True)  # fmt: skip
            records.append(rec)
            write_json(path, {"settings": {"seed": seed, "splits": [0, 1], "epochs": 20,
                                           "threads": torch.get_num_threads()},
                              "records": records})  # fmt: skip
    order = {(n, v): i for i, (n, v) in enumerate(
        (n, v) for n in DEFAULT_ROWS for v in DEFAULT_ROWS[n])}  # fmt: skip
    records.sort(key=lambda r: order.get((r["dataset"], r["variant"]), 10**6))
    write_text(out / "which_encoder.md", table(records))
    return records


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", type=Path, default=Path("data/road_networks"),
                   help="folder of the road networks' data files (default: data/road_networks)")
    p.add_argument("--datasets", nargs="+", default=list(DEFAULT_ROWS),
                   help="networks (default: anaheim chicago_sketch)")
    p.add_argument("--seed", type=int, default=0, help="seed of pre-training (default 0)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    main(a.networks, a.datasets, a.seed, a.data_root)
