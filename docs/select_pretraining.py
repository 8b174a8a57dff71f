"""Select the pre-training's temperature, epochs and mask budget on validation data (issue
25 item 5: the levers not measured before).

For each dataset (by default the two road networks of ``examples/road_networks.py``; the
trajectories and the ocean drifters on request) and each pre-training variant, pre-trains
SSCL_Spec of the HodgeReadout edition (seed 0) and probes the embeddings of split 0 with the
label-efficiency probe (:func:`~experiments.studies.label_efficiency.probe.
low_label_probe`) on labelled subsets of the training split, scored on the **validation**
split: the test split is never read (the ocean drifters' split has no validation part, so a
stratified 20 % of its training samples is set aside, as in ``select_input_skip.py``).

Variants (every other setting is the edition's):

- ``T=<t>, <e> ep.``: temperature ``t`` and ``e`` epochs. One run per temperature trains for
  the largest epoch count and keeps snapshots of the encoder after the smaller ones (the
  optimiser has no schedule, so a snapshot after 20 epochs is the 20-epoch run).
- ``budget=<b>``: the spectral mask's budget (the expected fraction of a flow's support
  that is dropped; the mask is already scaled to each flow's support) at the default
  temperature and epochs.
- ``support pool``: the default encoder, with the support-weighted mean
  ``sum_e |x_e| H_e / sum_e |x_e|`` of its last layer's per-edge features put beside its
  embedding at probe time (a diagnostic of a readout that keeps where the flow runs; the
  encoder is the same).
- ``untrained``, ``U_H^T x``, ``raw flows``: the reference rows, on the same subsets.

Every finished cell is appended to ``docs/_data/selection/pretraining.json`` at once
(atomically) and a rerun skips the cells it holds; ``pretraining.md`` holds mean ± std of
the validation accuracy over the draws and the final pre-training loss against chance.

    python docs/select_pretraining.py --networks data/road_networks
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from topo_contrastive._utils.files import write_json, write_text
from topo_contrastive.training.formatting import format_mean_std

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))
from select_input_skip import _data, _subsets, _train_val  # noqa: E402

OUT = DOCS / "_data" / "selection"
DEFAULT_TEMPERATURE = 0.2
DEFAULT_EPOCHS = 20


def variants(temperatures: list[float], epochs: list[int], budgets: list[float]) -> list[str]:
    """The variant names, in table order."""
    names = [f"T={t:g}, {e} ep." for t in temperatures for e in epochs]
    names += [f"budget={b:g}" for b in budgets]
    return names + ["support pool", "untrained", "U_H^T x", "raw flows"]


def _embeddings(encoder: Any, data: Any) -> np.ndarray:
    from topo_contrastive.training.loop import embed

    return embed(encoder.cpu().eval(), data)


@torch.no_grad()
def _support_pool(encoder: Any, data: Any) -> np.ndarray:
    """``[S, C]``: the support-weighted mean of the last layer's per-edge features."""
    encoder = encoder.cpu().eval()
    laplacians = data.complex.laplacians()
    out = []
    for start in range(0, data.num_samples, 200):
        x = data.flows[start : start + 200]  # [b, N1]
        h = encoder.edge_embeddings(x.unsqueeze(-1), laplacians)  # [b, N1, C]
        w = x.abs() / x.abs().sum(dim=1, keepdim=True).clamp_min(1e-12)  # [b, N1]
        out.append(torch.einsum("be,bec->bc", w.to(h.dtype), h))
    return torch.cat(out).numpy()


def _pretrained(data: Any, task: str, temperature: float, epochs: list[int], budget: float | None,
                seed: int, log) -> dict[int, tuple[Any, float, float]]:  # fmt: skip
    """``{epochs: (encoder, last loss, chance loss)}`` from one run of the largest count."""
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.loop import pretrain

    cfg = get_config("SSCL_Spec", task, "hodge").replace(temperature=temperature)
    if budget is not None:
        cfg = cfg.replace(budget=budget)
    t0 = time.perf_counter()
    res = pretrain(data, cfg, seed=seed, epochs=max(epochs), snapshot_epochs=tuple(epochs))
    log(f"  pre-trained T={temperature:g} budget={cfg.budget:g}: loss "
        f"{res.losses[0]:.3f} -> {res.losses[-1]:.3f} (chance {res.chance_losses[-1]:.3f}) "
        f"in {time.perf_counter() - t0:.0f} s")  # fmt: skip
    out = {}
    for e in epochs:
        enc = copy.deepcopy(res.encoder)
        enc.load_state_dict(res.snapshots[e])
        out[e] = (enc, res.losses[e - 1], res.chance_losses[e - 1])
    return out


def _features(data: Any, task: str, names: list[str], temperatures: list[float],
              epochs: list[int], budgets: list[float], seed: int, log, cache: Path
              ) -> dict[str, tuple[np.ndarray, dict[str, Any]]]:  # fmt: skip
    """Features (and pre-training facts) of every variant in ``names``; cached as ``.npz``."""
    from experiments.studies.label_efficiency.curves import reduce_harmonic
    from topo_contrastive.evaluation.probe import reference_features
    from topo_contrastive.training.configs import get_config

    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, tuple[np.ndarray, dict[str, Any]]] = {}

    def cached(name: str) -> bool:
        path = cache / f"{data.name}-{_slug(name)}-seed{seed}.npz"
        if path.is_file():
            z = np.load(path, allow_pickle=False)
            out[name] = (z["features"], json.loads(str(z["facts"])))
            return True
        return False

    def keep(name: str, feats: np.ndarray, facts: dict[str, Any]) -> None:
        path = cache / f"{data.name}-{_slug(name)}-seed{seed}.npz"
        np.savez(path, features=feats, facts=json.dumps(facts))
        out[name] = (feats, facts)

    wanted = [n for n in names if not cached(n)]
    for t in temperatures:
        mine = [f"T={t:g}, {e} ep." for e in epochs]
        need_support = t == DEFAULT_TEMPERATURE and "support pool" in wanted
        if not (set(mine) & set(wanted)) and not need_support:
            continue
        runs = _pretrained(data, task, t, epochs, None, seed, log)
        for e, (enc, loss, chance) in runs.items():
            facts = {"loss": loss, "chance": chance}
            keep(f"T={t:g}, {e} ep.", _embeddings(enc, data), facts)
            if need_support and e == DEFAULT_EPOCHS:
                base = out[f"T={t:g}, {e} ep."][0]
                keep("support pool", np.concatenate([base, _support_pool(enc, data)], 1), facts)
    for b in budgets:
        if f"budget={b:g}" in wanted:
            (enc, loss, chance), = _pretrained(data, task, DEFAULT_TEMPERATURE,
                                               [DEFAULT_EPOCHS], b, seed, log).values()  # fmt: skip
            keep(f"budget={b:g}", _embeddings(enc, data), {"loss": loss, "chance": chance})
    if "untrained" in wanted:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            enc = data.encoder(get_config("SSCL_Spec", task, "hodge"))
        keep("untrained", _embeddings(enc, data), {})
    if "U_H^T x" in names:
        out["U_H^T x"] = (reduce_harmonic(reference_features(data, "harmonic")), {})
    if "raw flows" in names:
        out["raw flows"] = (reference_features(data, "raw"), {})
    return out


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c == "." else "_" for c in name)


def _table(records: list[dict[str, Any]], fractions: list[float], names: list[str]) -> str:
    lines = ["| dataset | variant | loss / chance | "
             + " | ".join(f"{100 * f:g} %" for f in fractions) + " |",
             "|---|---|---:|" + "---:|" * len(fractions)]  # fmt: skip
    for ds in dict.fromkeys(r["dataset"] for r in records):
        for v in names:
            rows = [r for r in records if (r["dataset"], r["variant"]) == (ds, v)]
            if not rows:
                continue
            facts = rows[0].get("facts", {})
            loss = f"{facts['loss']:.2f} / {facts['chance']:.2f}" if "loss" in facts else ""
            cells = []
            for f in fractions:
                acc = [r["val_accuracy"] for r in rows if r["fraction"] == f]
                cells.append(format_mean_std(acc, scale=100) if acc else "")
            lines.append(f"| {ds} | {v} | {loss} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(
    datasets: list[str],
    networks: Path,
    fractions: list[float],
    draws: int,
    temperatures: list[float],
    epochs: list[int],
    budgets: list[float],
    seed: int,
    data_root: str,
    out: Path = OUT,
) -> list[dict[str, Any]]:
    """Run the missing cells; write ``out/pretraining.json`` / ``.md``; return the records."""
    from experiments.studies.label_efficiency import probe as llp

    if DEFAULT_TEMPERATURE not in temperatures or DEFAULT_EPOCHS not in epochs:
        raise ValueError(f"the variants must include the defaults T={DEFAULT_TEMPERATURE} and "
                         f"{DEFAULT_EPOCHS} epochs, got {temperatures} and {epochs}")  # fmt: skip
    names = variants(temperatures, epochs, budgets)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "pretraining.json"
    records = json.loads(path.read_text())["records"] if path.is_file() else []
    done = {(r["dataset"], r["variant"], r["fraction"], r["draw"]) for r in records}
    settings = {"fractions": fractions, "draws": draws, "seed": seed, "split": 0,
                "scored_on": "validation", "config": "SSCL_Spec, HodgeReadout edition",
                "threads": torch.get_num_threads()}  # fmt: skip
    for name in datasets:
        todo = [(v, f, d) for v in names for f in fractions for d in range(draws)
                if (name, v, f, d) not in done]  # fmt: skip
        if not todo:
            continue
        data, task = _data(name, networks, data_root)
        labels = data.require_labels("the selection").numpy()
        idx = _train_val(data, labels, seed)
        subsets = _subsets(labels, idx["train"], fractions, draws, seed)
        tqdm.write(f"{name}: features")
        feats = _features(data, task, sorted({v for v, _, _ in todo}, key=names.index),
                          temperatures, epochs, budgets, seed, tqdm.write,
                          Path(data_root) / "selection")  # fmt: skip
        for v, f, d in tqdm(todo, desc=name, leave=False):
            x, facts = feats[v]
            res = llp.low_label_probe(x, labels, subsets[(f, d)], idx["val"], seed=seed + d)
            records.append({"dataset": name, "variant": v, "fraction": f, "draw": d,
                            "labelled": int(subsets[(f, d)].size),
                            "val_accuracy": res.test_accuracy,
                            "train_accuracy": res.train_accuracy,
                            "scaling": res.scaling, "C": res.C, "facts": facts})  # fmt: skip
            write_json(path, {"settings": settings, "records": records})
        write_text(out / "pretraining.md", _table(records, fractions, names))
    return records


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["anaheim", "chicago_sketch"],
                   help="datasets (default: anaheim chicago_sketch; also trajectory, ocean)")
    p.add_argument("--networks", type=Path, default=Path("data/road_networks"),
                   help="folder of the road networks' data files (default: data/road_networks)")
    p.add_argument("--fractions", type=float, nargs="+", default=[0.01, 0.05, 0.1, 1.0],
                   help="labelled fractions of the training split (default: 0.01 0.05 0.1 1)")
    p.add_argument("--draws", type=int, default=5, help="draws per fraction (default: 5)")
    p.add_argument("--temperatures", type=float, nargs="+", default=[0.1, 0.2, 0.5],
                   help="InfoNCE temperatures (default: 0.1 0.2 0.5; must include 0.2)")
    p.add_argument("--epochs", type=int, nargs="+", default=[20, 50],
                   help="epoch counts, snapshots of one run (default: 20 50; must include 20)")
    p.add_argument("--budgets", type=float, nargs="+", default=[0.5],
                   help="spectral-mask budgets besides the default 0.3 (default: 0.5)")
    p.add_argument("--seed", type=int, default=0, help="seed of draws and pre-training (0)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    main(a.datasets, a.networks, a.fractions, a.draws, a.temperatures, a.epochs, a.budgets,
         a.seed, a.data_root)
