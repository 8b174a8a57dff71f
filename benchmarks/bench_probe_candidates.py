"""Candidates for the fast probe of ``evaluate``: time per split and test accuracy of each on
the reference rows of a road network, the paper's SVM protocol as the baseline of the run.

Candidates (all on features standardised on the training split):

- ``svm``: Table 1's protocol (:func:`~topo_contrastive.evaluation.linear_probe`: LinearSVC,
  ``C`` from 6 values by stratified 10-fold CV, 61 fits per split);
- ``svm3``: the same with 3 folds (19 fits);
- ``logistic``: ``LogisticRegressionCV`` (L-BFGS, warm-started along 7 values of ``C``,
  3-fold CV);
- ``ridge``: scikit-learn's ``RidgeClassifierCV`` (its efficient leave-one-out over the whole
  ``alpha`` path, the squared error selecting);
- ``ridge_acc``: the same selecting by leave-one-out accuracy (ties to the first ``alpha``);
- ``library``: the library's ridge probe
  (:func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`: leave-one-out squared hinge,
  ties to the larger ``alpha``).

Rows: the untrained HodgeReadout encoder of the data file's default configuration (seed 0),
the raw flows, ``|flows|`` and ``U_H^T x``. Prints, per row and candidate, the mean test
accuracy ± the standard error over the splits, wall and CPU seconds per split, and the ratio
of the SVM's time to each candidate's.

    python examples/road_networks.py --out data/road_networks --no-probe
    python benchmarks/bench_probe_candidates.py --data-file data/road_networks/anaheim.npz
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

CANDIDATES = ("svm", "svm3", "logistic", "ridge", "ridge_acc", "library")
ROWS = ("untrained", "raw", "abs", "harmonic")


def fit(candidate: str, X: np.ndarray, y: np.ndarray, tr: np.ndarray, te: np.ndarray,
        seed: int) -> float:  # fmt: skip
    """Test accuracy of ``candidate`` trained on ``tr``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegressionCV, RidgeClassifierCV
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from topo_contrastive.evaluation.probe import linear_probe
    from topo_contrastive.evaluation.ridge_probe import RIDGE_ALPHAS, ridge_probe

    if candidate in ("svm", "svm3"):
        folds = 10 if candidate == "svm" else 3
        return linear_probe(X, y, tr, te, seed=seed, folds=folds).test_accuracy
    if candidate == "library":
        return ridge_probe(X, y, tr, te).test_accuracy
    scale = StandardScaler().fit(X[tr])
    Xtr, Xte = scale.transform(X[tr]), scale.transform(X[te])
    if candidate == "logistic":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegressionCV(
                Cs=np.logspace(-4, 2, 7), max_iter=200,
                cv=StratifiedKFold(3, shuffle=True, random_state=seed),
            ).fit(Xtr, y[tr])  # fmt: skip
    else:
        scoring = "accuracy" if candidate == "ridge_acc" else None
        model = RidgeClassifierCV(alphas=sorted(RIDGE_ALPHAS), scoring=scoring).fit(Xtr, y[tr])
    return float(np.mean(model.predict(Xte) == y[te]))


def main(data_file: Path, splits: int, candidates: list[str], data_root: str) -> None:
    """Time every candidate on every row; print one line per row and candidate."""
    import torch

    from topo_contrastive.evaluation.probe import reference_features
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.data import ExperimentData, load_data_file
    from topo_contrastive.training.formatting import format_mean_std
    from topo_contrastive.training.loop import embed

    data = ExperimentData.from_dataset(load_data_file(data_file, data_root), data_file.stem)
    y = data.labels.numpy()
    for row in ROWS:
        if row == "untrained":
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                enc = data.encoder(get_config("SCL", "ocean", "hodge")).eval()
            X = embed(enc, data)
        else:
            X = reference_features(data, row)
        base = None
        for c in candidates:
            accs, w0, c0 = [], time.perf_counter(), time.process_time()
            for s in range(splits):
                idx = data.split(s)
                accs.append(fit(c, X, y, idx["train"], idx["test"], s))
            wall = (time.perf_counter() - w0) / splits
            cpu = (time.process_time() - c0) / splits
            base = cpu if c == "svm" else base
            acc = 100 * np.array(accs)
            sem = acc.std(ddof=1) / np.sqrt(acc.size) if acc.size > 1 else float("nan")
            ratio = f", svm / this {base / cpu:.0f}x CPU" if base and c != "svm" else ""
            score = format_mean_std(acc.mean(), sem, widths=(5, 0))
            print(f"{row:9s} D={X.shape[1]:5d} {c:9s} {score} %  "
                  f"{wall:7.2f} s wall {cpu:7.2f} s CPU per split{ratio}", flush=True)  # fmt: skip


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-file", type=Path, default=Path("data/road_networks/anaheim.npz"),
                   help="an edge-flow data file with labels (default: anaheim's)")
    p.add_argument("--splits", type=int, default=3, help="splits 0..N-1 (default: 3)")
    p.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=CANDIDATES,
                   help="candidates, the SVM first for the ratios (default: all)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    a = p.parse_args()
    main(a.data_file, a.splits, a.candidates, a.data_root)
