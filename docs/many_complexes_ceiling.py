"""The ceiling check of docs/results/many_complexes.md: how much of the label the
complex-agnostic features of the many-complexes task carry.

For every reference feature set of the study
(:func:`~experiments.studies.many_complexes.reference_features`) and for the part
energies of the untrained one-layer encoder (the best encoder row), on all samples of the default
task (1,000): the training accuracy of standardised logistic regression fitted on every sample
(``C`` by 5-fold cross-validation, scikit-learn's ``LogisticRegressionCV``), its 5-fold
cross-validated test accuracy, and the 5-fold accuracy of gradient-boosted trees
(``HistGradientBoostingClassifier``, defaults), a non-linear reader of the same features. A
training accuracy near the test accuracy says the features, not the probe, set the limit.

Writes ``docs/_data/many_complexes/ceiling.{json,md}`` (the Markdown is included by the page).

    python docs/many_complexes_ceiling.py --data-root runs/mc_data
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "_data" / "many_complexes"


def main(data_root: Path, out: Path = OUT, seed: int = 0, hidden: int = 32,
         samples: int = 1000) -> dict:
    """Compute the table; write ``ceiling.json`` and ``ceiling.md`` into ``out``."""
    import torch
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from experiments.studies.many_complexes import reference_features, trajectory_samples
    from experiments.studies.reuse import part_energy_features, scnn_encoder
    from topo_contrastive._utils.files import write_json, write_text

    dataset = trajectory_samples(data_root / "many_complexes", samples, seed)  # as the command
    y = np.array([int(d.y) for d in dataset])
    features = dict(reference_features(dataset))
    torch.manual_seed(seed)
    features["untrained 1 layer, part energies"] = part_energy_features(
        scnn_encoder(hidden, 1), dataset
    )
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # liblinear/lbfgs convergence notes
        for name, X in features.items():
            X = np.asarray(X, dtype=float)
            logistic = make_pipeline(StandardScaler(), LogisticRegressionCV(max_iter=5000))
            train = float(logistic.fit(X, y).score(X, y))
            test = float(cross_val_score(logistic, X, y, cv=folds).mean())
            trees = HistGradientBoostingClassifier(random_state=seed)
            boosted = float(cross_val_score(trees, X, y, cv=folds).mean())
            rows[name] = {"train": train, "cv": test, "trees_cv": boosted}
            print(f"{name}: train {train:.3f}, 5-fold {test:.3f}, trees {boosted:.3f}")
    lines = [
        "| features | logistic, training accuracy | logistic, 5-fold | boosted trees, 5-fold |",
        "|---|---:|---:|---:|",
        *(f"| {n} | {100 * r['train']:.1f} | {100 * r['cv']:.1f} | {100 * r['trees_cv']:.1f} |"
          for n, r in rows.items()),  # fmt: skip
    ]
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "ceiling.json", {"samples": len(y), "seed": seed, "hidden": hidden,
                                      "rows": rows})  # fmt: skip
    write_text(out / "ceiling.md", "\n".join(lines) + "\n")
    return rows


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-root", type=Path, default=Path("data"),
                   help="the command's --data-root (default: data)")  # fmt: skip
    p.add_argument("--out", type=Path, default=OUT, help=f"output folder (default: {OUT})")
    p.add_argument("--seed", type=int, default=0, help="seed of the task and folds (0)")
    p.add_argument("--hidden", type=int, default=32, help="the encoder's width (32)")
    p.add_argument("--samples", type=int, default=1000, help="samples of the task (1000)")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    main(a.data_root, a.out, a.seed, a.hidden, a.samples)
