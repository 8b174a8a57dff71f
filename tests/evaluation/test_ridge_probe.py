"""The fast ridge probe (:mod:`topo_contrastive.evaluation.ridge_probe`) against scikit-learn's
``RidgeClassifier`` refitted for every penalty and every left-out sample."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import RidgeClassifier
from sklearn.preprocessing import StandardScaler

from topo_contrastive.evaluation.probe import check_probe, check_probe_splits, probe_splits
from topo_contrastive.evaluation.ridge_probe import RIDGE_ALPHAS, ridge_path, ridge_probe

ALPHAS = (100.0, 1.0, 0.01)


def _problem(n: int, d: int, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=d)
    y = rng.integers(0, classes, size=n)
    y[:classes] = np.arange(classes)
    return X, 3 * y + 1  # labels that are not 0..C-1


@pytest.mark.parametrize("n,d,classes", [(30, 50, 2), (40, 10, 3), (25, 25, 2)])
def test_path_is_sklearns_ridge_classifier_for_every_penalty(n, d, classes):
    X, y = _problem(n, d, classes)
    Xt = np.random.default_rng(1).normal(size=(7, d))
    path = ridge_path(X, y, ALPHAS)
    assert np.array_equal(path.classes, np.unique(y))
    for j, a in enumerate(ALPHAS):
        ref = RidgeClassifier(alpha=a).fit(X, y)
        assert np.allclose(path.decision(Xt)[:, j], ref.decision_function(Xt).reshape(7, -1),
                           atol=1e-9)  # fmt: skip
        assert np.array_equal(path.predict(Xt)[:, j], ref.predict(Xt))


@pytest.mark.parametrize("n,d,classes", [(20, 35, 2), (24, 6, 3)])
def test_leave_one_out_values_are_refits_without_the_sample(n, d, classes):
    X, y = _problem(n, d, classes, seed=2)
    y[classes : 2 * classes] = np.unique(y)  # every class keeps a sample when one is left out
    path = ridge_path(X, y, ALPHAS)
    for i in range(n):
        keep = np.arange(n) != i
        for j, a in enumerate(ALPHAS):
            ref = RidgeClassifier(alpha=a).fit(X[keep], y[keep])
            assert np.allclose(path.loo[i, j], ref.decision_function(X[i : i + 1]).reshape(-1),
                               atol=1e-8), (i, a)  # fmt: skip


@pytest.mark.parametrize("classes", [2, 3])
def test_probe_picks_the_smallest_leave_one_out_squared_hinge_on_standardised_features(classes):
    X, y = _problem(60, 40, classes, seed=3)
    train, test, val = np.arange(40), np.arange(40, 50), np.arange(50, 60)
    res = ridge_probe(X, y, train, test, val_idx=val, alphas=ALPHAS)
    Z = StandardScaler().fit(X[train])
    Xs, ys = Z.transform(X[train]), y[train]
    loss, hits = [], []
    for a in ALPHAS:  # the naive rule: refit without each sample, the SVM's loss of its value
        fits = [RidgeClassifier(alpha=a).fit(np.delete(Xs, i, 0), np.delete(ys, i))
                for i in range(len(ys))]  # fmt: skip
        f = np.array([m.decision_function(Xs[i : i + 1]).reshape(-1) for i, m in enumerate(fits)])
        labels = np.unique(ys)
        t = np.where(ys[:, None] == labels[None, 1:], 1.0, -1.0) if classes == 2 else \
            np.where(ys[:, None] == labels[None, :], 1.0, -1.0)  # fmt: skip
        loss.append(np.mean(np.sum(np.maximum(0.0, 1.0 - t * f) ** 2, axis=1)))
        pred = labels[(f[:, 0] > 0).astype(int)] if classes == 2 else labels[f.argmax(1)]
        hits.append(np.mean(pred == ys))
    best = int(np.argmin(loss))
    ref = RidgeClassifier(alpha=ALPHAS[best]).fit(Xs, ys)
    assert res.alpha == ALPHAS[best] and res.cv_accuracy == pytest.approx(hits[best])
    assert res.test_accuracy == np.mean(ref.predict(Z.transform(X[test])) == y[test])
    assert res.val_accuracy == np.mean(ref.predict(Z.transform(X[val])) == y[val])
    assert res.train_accuracy == np.mean(ref.predict(Xs) == ys)
    assert res.probe == "ridge" and np.isnan(res.C)
    assert list(RIDGE_ALPHAS) == sorted(RIDGE_ALPHAS, reverse=True)  # ties: stronger penalty


def test_bad_input_is_refused():
    X, y = _problem(20, 4, 2)
    with pytest.raises(ValueError, match="two classes"):
        ridge_probe(X, np.zeros(20, dtype=int), np.arange(10), np.arange(10, 20))
    y1 = np.zeros(20, dtype=int)
    y1[0] = 1
    with pytest.raises(ValueError, match=">= 2 samples each"):
        ridge_probe(X, y1, np.arange(10), np.arange(10, 20))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ridge_probe(bad, y, np.arange(10), np.arange(10, 20))
    with pytest.raises(ValueError, match="alphas"):
        ridge_path(X, y, [1.0, 0.0])
    with pytest.raises(ValueError, match="must be \\[n, D\\]"):
        ridge_path(X, y[:5])


class _Data:
    """The parts of ExperimentData that probe_splits reads."""

    def __init__(self, labels: np.ndarray, splits: dict[int, dict[str, np.ndarray]]):
        import torch

        self.labels = torch.as_tensor(labels)
        self._splits = splits

    def require_labels(self, what: str):
        return self.labels

    def split(self, seed: int) -> dict[str, np.ndarray]:
        return self._splits[seed]


def test_unknown_probe_and_impossible_splits_fail_before_any_fit(monkeypatch):
    import topo_contrastive.evaluation.probe as ev
    import topo_contrastive.evaluation.ridge_probe as rp

    def no_fit(*a, **k):
        raise AssertionError("a probe was fitted")

    monkeypatch.setattr(ev, "linear_probe", no_fit)
    monkeypatch.setattr(rp, "ridge_probe", no_fit)
    labels = np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 1])
    ok = {"train": np.arange(6), "val": np.array([6, 7]), "test": np.array([8, 9])}
    rare = {"train": np.array([0, 1, 2, 3]), "val": np.array([6]), "test": np.array([8, 9])}
    data = _Data(labels, {0: ok, 1: rare})
    X = np.ones((10, 3))
    with pytest.raises(ValueError, match="`probe` must be one of ridge, svm, got 'lasso'"):
        check_probe("lasso")
    with pytest.raises(TypeError, match="`probe` must be a str"):
        check_probe(None)
    for probe in ("svm", "ridge"):  # split 1: one sample of class 1, found before split 0's fit
        with pytest.raises(ValueError, match=rf"the {probe} probe cannot run on split 1: .*"
                           r"\{0: 3, 1: 1\}"):  # fmt: skip
            probe_splits(X, data, [0, 1], probe=probe)
    with pytest.raises(ValueError, match="k-fold"):
        check_probe_splits(data, [1], "svm")
    with pytest.raises(ValueError, match="`probe` must be one of"):
        probe_splits(X, data, [0], probe="SVM")


def _separable_but_noisy(seed: int = 4):
    """80 samples of 6 features on scales from 1e-3 to 1e3, two classes along a mix of them
    (a test accuracy well between chance and 1)."""
    rng = np.random.default_rng(seed)
    y = np.arange(80) % 2
    X = rng.normal(size=(80, 6)) + 0.9 * np.outer(2 * y - 1, [1.0, 0.5, 0, 0, -0.7, 0])
    return X * np.array([1e-3, 1.0, 1e3, 10.0, 0.1, 1.0]), y


@pytest.mark.parametrize("factor", [1e160, 1e-160, 2.0**-600, 3.0])
def test_probe_does_not_depend_on_the_scale_of_the_features(factor):
    X, y = _separable_but_noisy()
    train, test, val = np.arange(50), np.arange(50, 70), np.arange(70, 80)
    base = ridge_probe(X, y, train, test, val_idx=val)
    assert 0.6 < base.test_accuracy < 1.0  # a probe that can be wrong
    got = ridge_probe(X * factor, y, train, test, val_idx=val)
    assert (got.test_accuracy, got.val_accuracy, got.train_accuracy, got.cv_accuracy,
            got.alpha) == (base.test_accuracy, base.val_accuracy, base.train_accuracy,
                           base.cv_accuracy, base.alpha)  # fmt: skip
    # one feature alone scaled by 1e160 as well
    one = X.copy()
    one[:, 2] *= 1e160
    assert ridge_probe(one, y, train, test, val_idx=val).test_accuracy == base.test_accuracy


def test_ordinary_features_are_standardised_as_scikit_learn_does():
    X, y = _separable_but_noisy()
    train, test = np.arange(50), np.arange(50, 80)
    res = ridge_probe(X, y, train, test)
    Z = StandardScaler().fit(X[train])
    ref = RidgeClassifier(alpha=res.alpha).fit(Z.transform(X[train]), y[train])
    assert res.test_accuracy == np.mean(ref.predict(Z.transform(X[test])) == y[test])
