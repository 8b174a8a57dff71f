"""Linear evaluation protocol (docs/design.md §2.8): a linear SVM on frozen embeddings (the
paper's, :func:`linear_probe`), or the fast ridge probe of ``evaluate``
(:func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`), on several splits
(:func:`probe_splits`)."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from joblib import Memory, parallel_config
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from topo_contrastive import _names
from topo_contrastive.evaluation.probe_result import ProbeResult

if TYPE_CHECKING:
    import torch

    from topo_contrastive.training.data import ExperimentData


#: The probes of :func:`probe_splits`: ``"ridge"`` (the fast probe,
#: :func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`) and ``"svm"`` (the paper's,
#: :func:`linear_probe`).
PROBES: tuple[str, ...] = _names.PROBES
#: The probe of ``evaluate`` and of :func:`~topo_contrastive.cli._runs.evaluate_saved`
#: (``reproduce`` and every Table 1 protocol keep ``"svm"``).
DEFAULT_PROBE = _names.DEFAULT_PROBE
#: Grid of the SVM penalty ``C`` searched by cross-validation.
DEFAULT_CS: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
#: Cross-validation folds of the penalty search (paper §5: 10-fold).
DEFAULT_FOLDS = 10
#: Iteration limit of one liblinear fit (the paper's protocol: every fit of Table 1 and
#: Figure 2 runs under it).
MAX_ITER = 20000
#: Work budget of one fit in sample-feature visits: :data:`MAX_ITER` iterations over the
#: largest training split of the paper's protocol, 200 trajectories x 1,082 raw flows (the
#: raw-flows reference row of Table 1). Larger problems get fewer iterations
#: (:func:`max_iter_for`), so that a fit that does not converge stops after about the same
#: work as the largest one of the protocol instead of ``N * D / 216,400`` times more.
WORK_BUDGET = MAX_ITER * 200 * 1082
#: The fewest iterations a fit gets, however large the problem.
MIN_ITER = 1000


def max_iter_for(num_samples: int, num_features: int) -> int:
    """Iteration limit of the SVM fits of :func:`linear_probe` on a training split of
    ``num_samples x num_features``: :data:`MAX_ITER` (20,000) up to
    :data:`WORK_BUDGET` / :data:`MAX_ITER` = 216,400 sample-features (200 x 1,082, the largest
    training split of the paper's protocol, so that Table 1 and Figure 2 are unchanged), above
    that ``WORK_BUDGET // (num_samples * num_features)``, at least :data:`MIN_ITER` (1,000).

    Only fits that do not converge (a large ``C`` on data that are not separable, e.g. equal
    samples with different labels) reach the limit; the others stop at the same iteration
    under either limit and give the same numbers.

    Args:
        num_samples: training samples of the fit.
        num_features: features.

    Returns:
        The ``max_iter`` of ``LinearSVC``.

    Example:
        >>> max_iter_for(200, 1082), max_iter_for(1000, 2000), max_iter_for(10**5, 10**3)
        (20000, 2164, 1000)
    """
    size = max(1, int(num_samples) * int(num_features))
    return int(min(MAX_ITER, max(MIN_ITER, WORK_BUDGET // size)))


def uses_row_space(num_samples: int, num_features: int) -> bool:
    """Whether :func:`linear_probe` solves a fit on ``num_samples x num_features`` in the
    primal on the row space (:class:`RowSpace`): when the features outnumber the samples and
    the split is larger than the paper's protocol's largest (:data:`WORK_BUDGET` /
    :data:`MAX_ITER` = 216,400 sample-features), so that Table 1 and Figure 2 keep their
    solver.

    Example:
        >>> uses_row_space(200, 1082), uses_row_space(1000, 2000), uses_row_space(5000, 64)
        (False, True, False)
    """
    n, d = int(num_samples), int(num_features)
    return d > n and n * d > WORK_BUDGET // MAX_ITER


class RowSpace(TransformerMixin, BaseEstimator):
    r"""Coordinates of samples in the row space of the training samples:
    :math:`\mathbf{Z} = \mathbf{X} \mathbf{V}` with :math:`\mathbf{X}_{train} =
    \mathbf{U} \mathbf{S} \mathbf{V}^\top` (thin SVD; singular directions below
    ``rtol`` times the largest are dropped), ``[S, r]`` with :math:`r \le
    \min(n_{train}, D)`.

    An exact reduction for an L2-regularised linear model (Schölkopf, Herbrich & Smola, "A
    generalized representer theorem", COLT 2001): its optimal weights lie in the span of the
    training samples, :math:`\mathbf{w} = \mathbf{V}\mathbf{u}`, so :math:`\mathbf{x}^\top
    \mathbf{w} = (\mathbf{V}^\top \mathbf{x})^\top \mathbf{u}` and
    :math:`\lVert\mathbf{w}\rVert = \lVert\mathbf{u}\rVert`: the model fitted on
    :math:`\mathbf{Z}` has the same objective value and the same predictions. With more
    features than samples the fit then costs :math:`O(n^2)` instead of :math:`O(nD)` per pass.

    Args:
        rtol (float): relative cut-off of the singular values (default ``1e-10``).

    Shapes:
        - **fit:** ``X [n, D]``, float.
        - **transform:** ``X [m, D]`` -> ``[m, r]`` (``components_`` is ``[D, r]``).
    """

    def __init__(self, rtol: float = 1e-10) -> None:
        self.rtol = rtol

    def fit(self, X: np.ndarray, y: Any = None) -> RowSpace:
        """Keep the right singular vectors of ``X`` (``components_ [D, r]``)."""
        _, s, vt = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
        keep = s > (s[0] if s.size else 0.0) * self.rtol
        self.components_ = vt[keep].T
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """``X @ components_``, ``[m, r]``."""
        return np.asarray(X, dtype=np.float64) @ self.components_


#: Passes of the dual coordinate descent that a wide fit (:class:`WideLinearSVC`) tries before
#: it solves the primal instead.
DUAL_PASSES = 200


class WideLinearSVC(LinearSVC):
    """``LinearSVC`` for wide splits: a fit first runs the dual coordinate descent for at most
    :data:`DUAL_PASSES` passes (it converges in a few dozen on separable data) and, where that
    did not converge, solves the same problem in the primal (liblinear's trust-region Newton,
    which converges in a few steps where the dual needs thousands: data that are not
    separable and a large ``C``). Same parameters, attributes and optimum as ``LinearSVC``
    (its ``dual`` is ignored).
    """

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: Any = None) -> WideLinearSVC:
        """Fit as the class says; returns ``self``."""
        dual, max_iter = self.dual, self.max_iter
        try:
            self.dual, self.max_iter = True, min(DUAL_PASSES, max_iter)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                super().fit(X, y, sample_weight)
            if int(np.max(self.n_iter_)) < self.max_iter:  # converged
                return self
            self.dual, self.max_iter = False, max_iter
            return super().fit(X, y, sample_weight)
        finally:
            self.dual, self.max_iter = dual, max_iter


def linear_probe(
    embeddings: np.ndarray,
    labels: np.ndarray,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    val_idx: np.ndarray | None = None,
    Cs: Sequence[float] | None = None,
    folds: int | None = None,
    seed: int = 0,
    n_jobs: int | None = None,
) -> ProbeResult:
    r"""Fit ``StandardScaler + LinearSVC`` on the training embeddings, ``C`` by stratified
    ``folds``-fold cross-validation on the training split, and score it on the test split.

    Paper §5 ("we fit a linear support vector machine (SVM) on the obtained embeddings ...
    10-fold cross-validation on the training set to estimate the penalty parameter").

    Args:
        embeddings: ``[S, D]`` embeddings :math:`\mathbf{h}` of all samples.
        labels: ``[S]`` integer labels.
        train_idx: indices of the training samples.
        test_idx: indices of the test samples.
        val_idx: indices of validation samples to score too (default ``None``).
        Cs: penalties to search (default ``None``: :data:`DEFAULT_CS`).
        folds: cross-validation folds (default ``None``: :data:`DEFAULT_FOLDS` = 10; lowered
            to the smallest class count of the training split when that is smaller, minimum 2).
        seed: seed of the fold assignment and of liblinear's coordinate descent (default 0).
        n_jobs: threads of the cross-validation (default ``None``: ``torch``'s intra-op
            thread count; liblinear releases the GIL, so the folds run in parallel).

    Returns:
        :class:`ProbeResult`.

    The SVM is solved in the primal or the dual, whichever scikit-learn's ``dual="auto"``
    picks for the shape (the dual when features outnumber samples); both give the same
    optimum, the choice only changes the time (the primal on 180 samples with 1,082 features
    takes several times longer). A fit stops after :func:`max_iter_for` iterations: 20,000 on
    every training split of the paper's protocol (up to 200 x 1,082), fewer on larger splits
    (e.g. 2,164 on 1,000 x 2,000), where a fit that does not converge (a large ``C`` on data
    that are not separable) would otherwise run for minutes; fits that converge are the same.

    **Wide splits** (more features than samples, larger than the protocol's largest split:
    :func:`uses_row_space`, e.g. a road network's raw flows): the same SVM is solved on the
    row space of the fold's training samples (:class:`RowSpace`, an exact reduction: same
    optimum, same predictions), the scaler and the reduction computed once per fold for every
    ``C``, by :class:`WideLinearSVC`: the dual for at most :data:`DUAL_PASSES` passes, else the
    primal. The dual alone needs thousands of passes on data that are not separable and
    stopped far from the optimum there (on 900 x 2,000 with 200 flipped duplicates and ``C`` =
    100, at an objective of 37,546 against the optimum's 20,000); the primal reaches it in a
    few Newton steps. ``benchmarks/bench_probe.py`` times the probe against the dual alone.

    Raises:
        ValueError: mismatching shapes, non-finite embeddings, an empty split, a training
            split with a single class or fewer than two samples of some class.
    """
    X = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray(labels).reshape(-1)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(
            f"`embeddings` must be [S, D] with S = len(labels) = {y.shape[0]}, got {X.shape}"
        )
    if not np.isfinite(X).all():
        raise ValueError("`embeddings` contains NaN or inf values (did the training diverge?)")
    train_idx = np.asarray(train_idx, dtype=np.int64)
    test_idx = np.asarray(test_idx, dtype=np.int64)
    if train_idx.size == 0 or test_idx.size == 0:
        raise ValueError("the training and test splits must not be empty")
    classes, counts = np.unique(y[train_idx], return_counts=True)
    if classes.size < 2 or counts.min() < 2:
        raise ValueError(
            f"the training split needs two classes with >= 2 samples each, got counts "
            f"{dict(zip(classes.tolist(), counts.tolist(), strict=True))}"
        )
    Cs = DEFAULT_CS if Cs is None else Cs
    folds = DEFAULT_FOLDS if folds is None else folds
    k = int(max(2, min(folds, counts.min())))
    max_iter = max_iter_for(train_idx.size, X.shape[1])
    wide = uses_row_space(train_idx.size, X.shape[1])
    svm = (WideLinearSVC if wide else LinearSVC)(dual="auto", max_iter=max_iter, random_state=seed)
    steps = [("scale", StandardScaler())] + ([("rows", RowSpace())] if wide else [])
    cache = tempfile.TemporaryDirectory(prefix="topo-contrastive-probe-") if wide else None
    memory = None if cache is None else Memory(cache.name, verbose=0)
    pipe = Pipeline([*steps, ("svm", svm)], memory=memory)  # one scaler and SVD per fold
    if n_jobs is None:
        import torch

        n_jobs = torch.get_num_threads()
    search = GridSearchCV(
        pipe,
        {"svm__C": list(Cs)},
        cv=StratifiedKFold(n_splits=k, shuffle=True, random_state=seed),
        scoring="accuracy",
        n_jobs=n_jobs,
    )
    try:
        with warnings.catch_warnings(), parallel_config(backend="threading"):
            warnings.simplefilter("ignore", ConvergenceWarning)
            search.fit(X[train_idx], y[train_idx])
    finally:
        if cache is not None:
            cache.cleanup()
    model = search.best_estimator_
    val = float("nan")
    if val_idx is not None and len(val_idx):
        val_idx = np.asarray(val_idx, dtype=np.int64)
        val = float(np.mean(model.predict(X[val_idx]) == y[val_idx]))
    return ProbeResult(
        test_accuracy=float(np.mean(model.predict(X[test_idx]) == y[test_idx])),
        train_accuracy=float(np.mean(model.predict(X[train_idx]) == y[train_idx])),
        cv_accuracy=float(search.best_score_),
        C=float(search.best_params_["svm__C"]),
        val_accuracy=val,
    )


def check_probe(probe: str) -> str:
    """``probe`` if it is one of :data:`PROBES`.

    Raises:
        TypeError: ``probe`` is not a string.
        ValueError: an unknown probe.
    """
    if not isinstance(probe, str):
        raise TypeError(f"`probe` must be a str, one of {', '.join(PROBES)}; got "
                        f"{type(probe).__name__}")  # fmt: skip
    if probe not in PROBES:
        raise ValueError(f"`probe` must be one of {', '.join(PROBES)}, got {probe!r}")
    return probe


def check_probe_splits(data: Any, split_seeds: Sequence[int], probe: str = "svm") -> None:
    """Check, before any fit, that ``probe`` can run on the training part of every split:
    at least two classes, and at least two samples of every class (the SVM's stratified
    k-fold cross-validation needs two folds; it lowers its 10 folds to the smallest class
    count; the ridge probe's leave-one-out needs a class left in every fold).

    Args:
        data: the :class:`~topo_contrastive.training.ExperimentData` (labels, splits).
        split_seeds: the splits.
        probe: one of :data:`PROBES` (default ``"svm"``).

    Raises:
        TypeError, ValueError: an unknown probe (:func:`check_probe`); data without labels;
            a split whose training part has one class, or a class with a single sample (the
            message names the split, the probe and the class counts).
    """
    check_probe(probe)
    labels = data.require_labels("the linear evaluation").numpy()
    for s in split_seeds:
        train = data.split(int(s))["train"]
        classes, counts = np.unique(labels[train], return_counts=True)
        if classes.size < 2 or (counts.size and counts.min() < 2):
            need = ("stratified k-fold cross-validation (at least 2 folds)" if probe == "svm"
                    else "leave-one-out selection")  # fmt: skip
            got = dict(zip(classes.tolist(), counts.tolist(), strict=True))
            raise ValueError(
                f"the {probe} probe cannot run on split {int(s)}: its training part needs "
                f"two classes with >= 2 samples each for the {need}, got class counts {got} "
                f"({len(train)} training samples); label more samples of the rare class(es)"
            )


def probe_splits(
    features: np.ndarray,
    data: Any,
    split_seeds: Sequence[int],
    progress: Callable[[dict[str, Any]], None] | None = None,
    probe: str = "svm",
) -> list[dict[str, Any]]:
    """:func:`linear_probe` (or the ridge probe) of fixed features on several splits of a
    prepared dataset.

    Args:
        features: ``[S, D]`` features of all samples (embeddings, or a reference feature).
        data: the :class:`~topo_contrastive.training.ExperimentData` (labels, splits).
        split_seeds: the splits (``data.split(seed)``); the probe's folds use the same seed.
        progress: called with each split's dict as soon as it is done (default: nothing).
        probe: ``"svm"`` (default: the paper's protocol, :func:`linear_probe`) or ``"ridge"``
            (:func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`).

    Returns:
        One dict per split: ``split_seed``, ``test_accuracy``, ``train_accuracy``,
        ``val_accuracy``, ``cv_accuracy`` and the chosen penalty, ``C`` (the SVM) or
        ``alpha`` (the ridge probe; ``cv_accuracy`` is then its leave-one-out accuracy)
        (accuracies as fractions).

    Raises:
        TypeError, ValueError: an unknown probe, or splits the probe cannot run on
            (:func:`check_probe_splits`, before any fit).
    """
    check_probe_splits(data, split_seeds, probe)
    labels = data.require_labels("the linear evaluation").numpy()
    if probe == "ridge":
        from topo_contrastive.evaluation.ridge_probe import ridge_probe
    out = []
    for s in split_seeds:
        idx = data.split(int(s))
        if probe == "ridge":
            res = ridge_probe(features, labels, idx["train"], idx["test"], val_idx=idx["val"])
        else:
            res = linear_probe(
                features, labels, idx["train"], idx["test"], val_idx=idx["val"], seed=int(s)
            )
        out.append(
            {
                "split_seed": int(s),
                "test_accuracy": res.test_accuracy,
                "train_accuracy": res.train_accuracy,
                "val_accuracy": res.val_accuracy,
                "cv_accuracy": res.cv_accuracy,
                **({"alpha": res.alpha} if probe == "ridge" else {"C": res.C}),
            }
        )
        if progress is not None:
            progress(out[-1])
    return out


def reference_features(data: Any, kind: str) -> np.ndarray:
    """The encoder-free features ``float64 [S, D]`` of one reference row of ``data`` (an
    :class:`~topo_contrastive.training.ExperimentData`; the rows and their features are its
    :meth:`~topo_contrastive.training.ExperimentData.reference_features`: ``"raw"``,
    ``"abs"``, ``"harmonic"`` on one complex).

    Raises:
        ValueError: not a row of ``data``, or a row omitted (the message says why).
    """
    _, features = data.reference_features([kind])[kind]
    if isinstance(features, str):
        raise ValueError(f"the {kind!r} row is omitted: {features}")
    return features


def evaluate_encoder(
    encoder: torch.nn.Module,
    data: ExperimentData,
    split_seeds: Sequence[int],
    device: str | torch.device = "cpu",
    progress: Callable[[dict[str, Any]], None] | None = None,
    probe: str = "svm",
) -> list[dict[str, Any]]:
    """Linear-SVM evaluation of one encoder on several splits (one dict per split).

    Accuracies are fractions; see :func:`~topo_contrastive.evaluation.linear_probe`.
    ``progress``, if given, is called with each split's dict as soon as it is done; ``probe``
    is ``"svm"`` (default, the paper's protocol) or ``"ridge"``
    (:func:`~topo_contrastive.evaluation.probe.probe_splits`).

    Raises:
        ValueError: no split seeds, a seed given twice or outside ``[0, 2**31 - 1]``; a split
            the probe cannot run on.
    """
    from topo_contrastive._utils.checks import check_seeds
    from topo_contrastive.training.loop import embed

    split_seeds = check_seeds(split_seeds, "split_seeds")
    check_probe_splits(data, split_seeds, probe)  # before the forward passes
    features = embed(encoder, data, device=device)
    return probe_splits(features, data, split_seeds, progress, probe=probe)
