"""The linear evaluation protocol (linear SVM, C by stratified 10-fold CV)."""

from __future__ import annotations

import numpy as np
import pytest

from topo_contrastive.evaluation import linear_probe


def _blobs(n: int = 120, d: int = 8, gap: float = 6.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, d))
    X[:, 0] += gap * (y - 0.5)  # separable along the first axis
    return X, y


def test_separable_embeddings_are_classified_perfectly():
    X, y = _blobs()
    idx = np.random.default_rng(1).permutation(len(y))
    res = linear_probe(X, y, idx[:80], idx[80:], val_idx=idx[80:100])
    assert res.test_accuracy == 1.0 and res.train_accuracy == 1.0
    assert res.cv_accuracy == 1.0 and res.val_accuracy == 1.0
    assert res.C in (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


def test_random_labels_give_chance_level():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = rng.integers(0, 2, 400)
    res = linear_probe(X, y, np.arange(300), np.arange(300, 400))
    assert 0.35 < res.test_accuracy < 0.65
    assert np.isnan(res.val_accuracy)


def test_scale_invariant_and_deterministic():
    X, y = _blobs(gap=1.0, seed=3)
    tr, te = np.arange(0, 120, 2), np.arange(1, 120, 2)
    a = linear_probe(X, y, tr, te, seed=5)
    b = linear_probe(1000.0 * X + 7.0, y, tr, te, seed=5)  # StandardScaler removes this
    assert a.test_accuracy == b.test_accuracy and a.C == b.C
    again = linear_probe(X, y, tr, te, seed=5)
    assert (again.test_accuracy, again.C, again.cv_accuracy) == (
        a.test_accuracy,
        a.C,
        a.cv_accuracy,
    )


def test_few_samples_lower_the_number_of_folds():
    X, y = _blobs(n=12, d=2, gap=30.0)
    res = linear_probe(X, y, np.arange(0, 12, 2), np.arange(1, 12, 2))  # 3 per class
    assert res.test_accuracy == 1.0


def test_bad_input():
    X, y = _blobs()
    with pytest.raises(ValueError, match="two classes"):
        linear_probe(X, np.zeros_like(y), np.arange(50), np.arange(50, 60))
    with pytest.raises(ValueError, match="NaN or inf"):
        linear_probe(np.full_like(X, np.nan), y, np.arange(50), np.arange(50, 60))
    with pytest.raises(ValueError, match=r"\[S, D\]"):
        linear_probe(X[:10], y, np.arange(5), np.arange(5, 10))
    with pytest.raises(ValueError, match="must not be empty"):
        linear_probe(X, y, np.arange(50), np.array([], dtype=int))


def test_iteration_limit_keeps_the_protocol_and_caps_larger_problems():
    from topo_contrastive.evaluation.probe import MAX_ITER, MIN_ITER, max_iter_for

    # every training split of Table 1 / Figure 2 (at most 200 x 1,082) keeps 20,000
    for shape in ((200, 1082), (180, 1082), (160, 320), (200, 192), (144, 64), (200, 2)):
        assert max_iter_for(*shape) == MAX_ITER == 20000
    assert max_iter_for(201, 1082) < MAX_ITER
    assert max_iter_for(1000, 2000) == 2164  # about the work of one 200 x 1,082 fit
    assert max_iter_for(10**6, 10**4) == MIN_ITER == 1000
    assert max_iter_for(0, 0) == MAX_ITER


def test_wide_splits_are_solved_exactly_on_the_row_space():
    """RowSpace is an exact reduction of the L2-regularised SVM: the fit on X V has the
    objective value and the predictions of the fit on X (same liblinear primal solver);
    the probe takes it only above the protocol's largest split with more features than
    samples."""
    from sklearn.svm import LinearSVC

    from topo_contrastive.evaluation.probe import RowSpace, uses_row_space

    assert not uses_row_space(200, 1082) and not uses_row_space(180, 1082)  # Table 1 keeps its
    assert not uses_row_space(5000, 64) and not uses_row_space(600, 600)  # solver
    assert uses_row_space(201, 1082) and uses_row_space(600, 1088)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 300))
    X[40:] = X[:20]  # flipped duplicates: not separable
    y = (X[:, 0] > 0).astype(int)
    y[40:] = 1 - y[:20]
    rows = RowSpace().fit(X)
    assert rows.components_.shape == (300, 40)  # rank 40: the duplicates add nothing
    Z = rows.transform(X)

    def objective(w, b, C):
        margin = np.maximum(0.0, 1.0 - (2 * y - 1) * (X @ w + b))
        return 0.5 * (w @ w + b * b) + C * np.sum(margin**2)

    for C in (0.01, 1.0, 100.0):
        full = LinearSVC(dual=False, C=C, tol=1e-10, max_iter=10**5).fit(X, y)
        reduced = LinearSVC(dual=False, C=C, tol=1e-10, max_iter=10**5).fit(Z, y)
        w = rows.components_ @ reduced.coef_[0]
        assert objective(w, reduced.intercept_[0], C) == pytest.approx(
            objective(full.coef_[0], full.intercept_[0], C), rel=1e-6
        )
        test = rng.normal(size=(50, 300))
        np.testing.assert_array_equal(reduced.predict(rows.transform(test)), full.predict(test))


def test_probe_of_a_wide_split_that_is_not_separable_matches_the_full_primal_fit(
    tmp_path, monkeypatch
):
    """The probe's pipeline on a wide split that is not separable (scaler, row space, primal)
    predicts as the SVM fitted on all features does, and leaves no cache folder behind."""
    import glob
    import tempfile

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from topo_contrastive.evaluation import probe as ev

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the probe's cache goes here
    rng = np.random.default_rng(1)
    X = rng.normal(size=(360, 1000))
    y = (X @ rng.normal(size=1000) > 0).astype(int)
    X[200:260], y[200:260] = X[:60], 1 - y[:60]
    tr, te = np.arange(260), np.arange(260, 360)
    assert ev.uses_row_space(tr.size, 1000)
    res = ev.linear_probe(X, y, tr, te, Cs=(1.0,), folds=2)
    full = make_pipeline(StandardScaler(), LinearSVC(dual=False, C=1.0, tol=1e-8, max_iter=10**5))
    full.fit(X[tr], y[tr])
    assert res.test_accuracy == pytest.approx(np.mean(full.predict(X[te]) == y[te]), abs=0.02)
    assert res.train_accuracy == pytest.approx(np.mean(full.predict(X[tr]) == y[tr]), abs=0.02)
    assert ev.uses_row_space(tr.size, 1000) and list(tmp_path.iterdir()) == []  # cache removed
    assert not glob.glob(f"{tmp_path}/topo-contrastive-probe-*")


def test_wide_svc_takes_the_dual_where_it_converges_and_the_primal_elsewhere():
    """WideLinearSVC: separable data converge in the dual (same model as LinearSVC's dual);
    data that are not separable fall back to the primal, whose objective is below the dual's
    after the same pass cap; the estimator's parameters are left as they were."""
    from sklearn.svm import LinearSVC

    from topo_contrastive.evaluation.probe import DUAL_PASSES, WideLinearSVC

    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 400))
    y = (X[:, :5].sum(1) > 0).astype(int)
    wide = WideLinearSVC(C=1.0, max_iter=5000, random_state=0).fit(X, y)
    dual = LinearSVC(dual=True, C=1.0, max_iter=DUAL_PASSES, random_state=0).fit(X, y)
    assert wide.n_iter_ < DUAL_PASSES
    np.testing.assert_array_equal(wide.coef_, dual.coef_)
    assert wide.get_params()["dual"] == "auto" and wide.max_iter == 5000
    X[60:], y[60:] = X[:20], 1 - y[:20]  # flipped duplicates

    def objective(m, C=100.0):
        margin = np.maximum(0.0, 1.0 - (2 * y - 1) * (X @ m.coef_[0] + m.intercept_[0]))
        return 0.5 * (m.coef_[0] @ m.coef_[0] + m.intercept_[0] ** 2) + C * np.sum(margin**2)

    import warnings

    wide = WideLinearSVC(C=100.0, max_iter=5000, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        capped = LinearSVC(dual=True, C=100.0, max_iter=DUAL_PASSES, random_state=0).fit(X, y)
    assert capped.n_iter_ == DUAL_PASSES  # the dual did not converge
    assert objective(wide) < objective(capped)
    assert wide.get_params()["dual"] == "auto" and wide.max_iter == 5000
