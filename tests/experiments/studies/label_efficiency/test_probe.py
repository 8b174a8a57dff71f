"""The ridge classifier of the low-label probe (``classifier="ridge"``, the default of
``label-efficiency``) against scikit-learn's grid search over the same grid, folds and tie
rule, refitting ``RidgeClassifier`` at every grid point."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import RidgeClassifier
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from experiments.studies.label_efficiency.probe import (
    DEFAULT_ALPHA,
    LOW_LABEL_ALPHAS,
    low_label_probe,
)


def _problem(n: int, d: int, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(classes, d))
    y = np.arange(n) % classes
    X = centres[y] + 2.0 * rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=d)
    return X, y


@pytest.mark.parametrize("d,classes", [(60, 2), (8, 3)])
def test_ridge_selection_is_the_grid_search_over_the_same_grid(d, classes):
    X, y = _problem(120, d, classes)
    train, test = np.arange(0, 45), np.arange(60, 120)
    res = low_label_probe(X, y, train, test, classifier="ridge", seed=4)
    grid = [{"scale": [StandardScaler() if s == "standard" else Normalizer()],
             "clf__alpha": list(LOW_LABEL_ALPHAS)} for s in ("standard", "l2")]  # fmt: skip
    search = GridSearchCV(
        Pipeline([("scale", StandardScaler()), ("clf", RidgeClassifier())]), grid,
        cv=StratifiedKFold(n_splits=3, shuffle=True, random_state=4), scoring="accuracy",
    ).fit(X[train], y[train])  # fmt: skip
    best = search.best_estimator_
    scaling = "standard" if isinstance(best.named_steps["scale"], StandardScaler) else "l2"
    assert (res.scaling, res.alpha) == (scaling, search.best_params_["clf__alpha"])
    assert res.cv_accuracy == pytest.approx(search.best_score_)
    assert res.test_accuracy == np.mean(best.predict(X[test]) == y[test])
    assert res.train_accuracy == np.mean(best.predict(X[train]) == y[train])
    assert res.selection == "cv" and res.folds == 3 and np.isnan(res.C)


def test_ridge_defaults_below_five_labels_per_class():
    X, y = _problem(40, 12, 2, seed=1)
    train, test = np.array([0, 1, 2, 3, 4, 5]), np.arange(20, 40)  # 3 labels per class
    res = low_label_probe(X, y, train, test, classifier="ridge")
    ref = Pipeline([("s", Normalizer()), ("c", RidgeClassifier(alpha=DEFAULT_ALPHA))])
    ref.fit(X[train], y[train])
    assert (res.selection, res.scaling, res.alpha, res.folds) == ("default", "l2", 1.0, 0)
    assert res.test_accuracy == np.mean(ref.predict(X[test]) == y[test])
    assert np.isnan(res.cv_accuracy)
