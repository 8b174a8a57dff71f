"""Select the HodgeReadout edition's ``input_skip`` on validation data.

For each dataset (the trajectories, the ocean drifters and the two road networks of
``examples/road_networks.py``) and each variant, pre-trains SSCL_Spec of the HodgeReadout
edition once (seed 0, the configuration's epochs) and probes the embeddings of split 0 with
the label-efficiency probe (:func:`~experiments.studies.label_efficiency.probe.
low_label_probe`) on labelled subsets of the training split, scored on the **validation**
split (the test split is never read; the ocean drifters' split has no validation part, so a
stratified 20 % of its training samples is set aside as one). Variants:

- ``pretrained``: the edition as it is (the readout pools the last layer's features);
- ``pretrained+skip``: the same with ``input_skip=True`` (the readout also pools the input
  flow, so the embedding holds its harmonic coordinates ``U_H^T x`` exactly);
- ``untrained`` / ``untrained+skip``: the same encoders before pre-training;
- ``U_H^T x`` and ``raw flows``: the reference features (``U_H^T x`` reduced to its top 256
  principal directions over all flows when beta_1 > 256, as the label-efficiency command
  does).

Every finished cell (dataset, variant, fraction, draw) is appended to
``docs/_data/selection/input_skip.json`` at once (atomically), and a rerun skips the cells
it holds; the Markdown table ``input_skip.md`` (mean ± std of the validation accuracy over
the draws) is rewritten at the end.

    python examples/road_networks.py --out data/road_networks --no-probe
    python docs/select_input_skip.py --networks data/road_networks
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from topo_contrastive._utils.files import write_json, write_text
from topo_contrastive.training.formatting import format_mean_std

DOCS = Path(__file__).resolve().parent
OUT = DOCS / "_data" / "selection"
VARIANTS = ("pretrained", "pretrained+skip", "untrained", "untrained+skip", "harmonic", "raw",
            "pretrained|harmonic", "untrained|harmonic")
LABELS = {
    "pretrained": "SSCL_Spec HodgeReadout, probe",
    "pretrained+skip": "SSCL_Spec HodgeReadout + input_skip, probe",
    "untrained": "untrained HodgeReadout, probe",
    "untrained+skip": "untrained HodgeReadout + input_skip, probe",
    "harmonic": "U_H^T x",
    "raw": "raw flows",
    "pretrained|harmonic": "[SSCL_Spec HodgeReadout embedding, U_H^T x], probe",
    "untrained|harmonic": "[untrained HodgeReadout embedding, U_H^T x], probe",
}


def _data(name: str, networks: Path, data_root: str) -> tuple[Any, str]:
    """The ExperimentData of ``name`` and the task whose configurations apply."""
    from topo_contrastive.training.data import ExperimentData, load_data_file, load_dataset

    if name in ("trajectory", "ocean"):
        return ExperimentData.from_dataset(load_dataset(name, data_root=data_root), name), name
    path = networks / f"{name}.npz"
    ds = load_data_file(path, data_root=data_root)
    return ExperimentData.from_dataset(ds, path.stem), "ocean"  # a data file: ocean's settings


def _features(variant: str, data: Any, task: str, seed: int, log, cache: Path) -> np.ndarray:
    """The features of ``variant``; encoders' embeddings are kept in ``cache`` (``.npy``)."""
    if "|" in variant:  # an embedding and U_H^T x side by side
        parts = [_features(v, data, task, seed, log, cache) for v in variant.split("|")]
        return np.concatenate(parts, axis=1)
    path = cache / f"{data.name}-{variant}-seed{seed}.npy"
    if variant not in ("harmonic", "raw") and path.is_file():
        return np.load(path)
    feats = _compute(variant, data, task, seed, log)
    if variant not in ("harmonic", "raw"):
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, feats)
    return feats


def _compute(variant: str, data: Any, task: str, seed: int, log) -> np.ndarray:
    from experiments.studies.label_efficiency.curves import reduce_harmonic
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.loop import embed, pretrain

    if variant in ("harmonic", "raw"):
        from topo_contrastive.evaluation.probe import reference_features

        feats = reference_features(data, variant)
        return reduce_harmonic(feats) if variant == "harmonic" else feats
    cfg = get_config("SSCL_Spec", task, "hodge")
    if variant.endswith("+skip"):
        cfg = cfg.replace(input_skip=True)
    if variant.startswith("untrained"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            encoder = data.encoder(cfg)
    else:
        t0 = time.perf_counter()
        result = pretrain(data, cfg, seed=seed)
        encoder = result.encoder
        log(f"  pre-trained {variant}: loss {result.losses[0]:.3f} -> {result.losses[-1]:.3f} "
            f"in {time.perf_counter() - t0:.0f} s")  # fmt: skip
    return embed(encoder.cpu().eval(), data)


def _train_val(data: Any, labels: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Split 0's training and validation samples; a split without validation samples (the
    ocean drifters' 160 / 40) gives a stratified 20 % of its training samples to validation,
    as the supervised SCNN's carve-out does."""
    from topo_contrastive.evaluation.supervised import carve_validation

    idx = data.split(0)
    if len(idx["val"]):
        return idx
    train, val = carve_validation(idx["train"], labels, seed)
    return {"train": np.sort(train), "val": np.sort(val)}


def _subsets(labels: np.ndarray, train: np.ndarray, fractions: list[float], draws: int,
             seed: int) -> dict[tuple[float, int], np.ndarray]:  # fmt: skip
    """``{(fraction, draw): labelled training samples}``, stratified
    (:func:`~experiments.studies.label_efficiency.labelled_subsets`); a fraction too
    small for a label per class takes one label per class instead."""
    from experiments.studies.label_efficiency.subsets import labelled_subsets

    least = np.unique(labels[train]).size / len(train)
    actual = {f: max(f, least) for f in fractions}
    drawn = labelled_subsets(labels, train, sorted(set(actual.values())), draws, seed)
    return {(f, d): drawn[(actual[f], d)] for f in fractions for d in range(draws)}


def _table(records: list[dict[str, Any]], fractions: list[float]) -> str:
    lines = ["| dataset | variant | " + " | ".join(f"{100 * f:g} %" for f in fractions) + " |",
             "|---|---|" + "---:|" * len(fractions)]  # fmt: skip
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    for ds in datasets:
        for v in VARIANTS:
            cells = []
            for f in fractions:
                acc = [r["val_accuracy"] for r in records
                       if (r["dataset"], r["variant"], r["fraction"]) == (ds, v, f)]  # fmt: skip
                cells.append(format_mean_std(acc, scale=100) if acc else "")
            if any(cells):
                lines.append(f"| {ds} | {LABELS[v]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(
    datasets: list[str],
    networks: Path,
    fractions: list[float],
    draws: int,
    seed: int,
    data_root: str,
    out: Path = OUT,
) -> list[dict[str, Any]]:
    """Run the missing cells and write ``out/input_skip.json`` / ``.md``; returns the records."""
    from experiments.studies.label_efficiency import probe as llp

    out.mkdir(parents=True, exist_ok=True)
    path = out / "input_skip.json"
    records = json.loads(path.read_text())["records"] if path.is_file() else []
    done = {(r["dataset"], r["variant"], r["fraction"], r["draw"]) for r in records}
    settings = {"fractions": fractions, "draws": draws, "seed": seed, "split": 0,
                "scored_on": "validation", "config": "SSCL_Spec, HodgeReadout edition"}  # fmt: skip
    for name in datasets:
        todo = [(v, f, d) for v in VARIANTS for f in fractions for d in range(draws)
                if (name, v, f, d) not in done]  # fmt: skip
        if not todo:
            continue
        data, task = _data(name, networks, data_root)
        labels = data.require_labels("the selection").numpy()
        idx = _train_val(data, labels, seed)
        subsets = _subsets(labels, idx["train"], fractions, draws, seed)
        for variant in VARIANTS:
            cells = [(f, d) for v, f, d in todo if v == variant]
            if not cells:
                continue
            tqdm.write(f"{name}: {variant}")
            feats = _features(variant, data, task, seed, tqdm.write, Path(data_root) / "selection")
            for f, d in tqdm(cells, desc=f"{name} {variant}", leave=False):
                res = llp.low_label_probe(feats, labels, subsets[(f, d)], idx["val"], seed=seed + d)
                records.append({"dataset": name, "variant": variant, "fraction": f, "draw": d,
                                "labelled": int(subsets[(f, d)].size),
                                "val_accuracy": res.test_accuracy,
                                "train_accuracy": res.train_accuracy,
                                "scaling": res.scaling, "C": res.C})  # fmt: skip
                write_json(path, {"settings": settings, "records": records})
    write_text(out / "input_skip.md", _table(records, fractions))
    return records


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["trajectory", "ocean", "anaheim",
                   "chicago_sketch"], help="datasets (default: the four)")  # fmt: skip
    p.add_argument("--networks", type=Path, default=Path("data/road_networks"),
                   help="folder of the road networks' data files (default: data/road_networks)")
    p.add_argument("--fractions", type=float, nargs="+", default=[0.01, 0.05, 0.1, 1.0],
                   help="labelled fractions of the training split (default: 0.01 0.05 0.1 1)")
    p.add_argument("--draws", type=int, default=5, help="draws per fraction (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of draws and pre-training (0)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    main(a.datasets, a.networks, a.fractions, a.draws, a.seed, a.data_root)
