r"""A linear probe for few labels: regularised, scale-aware, with a selection
rule that works from one label per class.

Table 1's probe (:func:`~topo_contrastive.evaluation.linear_probe`: ``StandardScaler +
LinearSVC``, ``C`` by 10-fold CV) needs at least two labels per class and standardises
with statistics of the labelled samples, which with one or two labels per class turns every
feature that differs between them into :math:`\pm 1` (a feature with a tiny spread gets the
weight of any other). :func:`low_label_probe` is the probe of the ``label-efficiency``
command, the same rule for every row (encoder embeddings and reference features):

- **classifier**: ``"logistic"`` (default: L2-regularised logistic regression, liblinear;
  one-vs-rest for more than two classes), ``"svm"`` (``LinearSVC``, squared hinge) or
  ``"ridge"`` (a ridge classifier, :mod:`~topo_contrastive.evaluation.ridge_probe`: its
  penalty ``alpha`` takes the place of ``C``, :data:`LOW_LABEL_ALPHAS`, and every fold's whole
  path comes from one SVD, so the search costs one SVD per fold and scaling instead of a fit
  per grid point; the default of the ``label-efficiency`` command), after a scaling step;
- **where every class has at least** :data:`MIN_LABELS_FOR_CV` **(5) labels**: the scaling
  (``"standard"``: ``StandardScaler``; ``"l2"``: every sample scaled to unit norm,
  ``Normalizer``) and ``C`` (:data:`LOW_LABEL_CS`) are chosen by stratified k-fold
  cross-validation inside the labelled samples (k = 3 by default, lowered to the smallest
  class count); ties go to the first grid point (the scalings in the order given, then the
  smaller ``C``);
- **else** the fixed defaults :data:`DEFAULT_SCALING` = ``"l2"`` (a per-sample scaling: it
  fits nothing on the labelled samples) and :data:`DEFAULT_C` = 1 (the ridge classifier:
  :data:`DEFAULT_ALPHA` = 1).

The test samples are only scored, never used for a choice.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer, StandardScaler
from sklearn.svm import LinearSVC

from experiments import _names
from experiments._helpers import check_disjoint, check_indices, check_seed
from topo_contrastive.evaluation.ridge_probe import RIDGE_ALPHAS, ridge_path

#: The classifiers of :func:`low_label_probe`.
CLASSIFIERS: tuple[str, ...] = _names.CLASSIFIERS
#: The scalings searched (in this order) where cross-validation runs.
SCALINGS: tuple[str, ...] = ("standard", "l2")
#: Grid of the inverse regularisation ``C`` searched by cross-validation.
LOW_LABEL_CS: tuple[float, ...] = (1e-2, 1e-1, 1.0, 10.0, 100.0)
#: ``C`` without cross-validation (fewer than 5 labels in some class).
DEFAULT_C = 1.0
#: Grid of the ridge classifier's penalty ``alpha``, the strongest first (a tie goes to the
#: stronger penalty, as it goes to the smaller ``C``):
#: :data:`~topo_contrastive.evaluation.ridge_probe.RIDGE_ALPHAS`.
LOW_LABEL_ALPHAS: tuple[float, ...] = RIDGE_ALPHAS
#: The ridge classifier's ``alpha`` without cross-validation.
DEFAULT_ALPHA = 1.0
#: Scaling without cross-validation: unit-norm samples (nothing fitted on the few labels).
DEFAULT_SCALING = "l2"
#: Fewest labels every class needs for the cross-validated choice.
MIN_LABELS_FOR_CV = 5
#: Iteration limit of one fit.
MAX_ITER = 5000


@dataclass(frozen=True)
class LowLabelProbeResult:
    """Result of :func:`low_label_probe` (accuracies are fractions in ``[0, 1]``).

    Attributes:
        test_accuracy: accuracy on the test samples.
        train_accuracy: accuracy on the labelled samples.
        C: the ``C`` used (``nan`` for the ridge classifier).
        scaling: ``"standard"`` or ``"l2"``.
        selection: ``"cv"`` (chosen by cross-validation) or ``"default"``.
        cv_accuracy: mean fold accuracy of the choice (``nan`` without cross-validation).
        folds: folds of the cross-validation (0 without).
    """

    test_accuracy: float
    train_accuracy: float
    C: float
    scaling: str
    selection: str
    cv_accuracy: float = float("nan")
    folds: int = 0
    alpha: float = float("nan")


def _scaler(scaling: str) -> StandardScaler | Normalizer:
    return StandardScaler() if scaling == "standard" else Normalizer(norm="l2")


def _ridge(
    Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray, cv: bool, alphas: Sequence[float],
    scalings: Sequence[str], default_alpha: float, default_scaling: str, k: int, seed: int,
) -> tuple[np.ndarray, np.ndarray, float, str, float]:  # fmt: skip
    """The ridge classifier of :func:`low_label_probe`: with ``cv``, the scaling and ``alpha``
    of the best mean accuracy over stratified ``k``-fold CV (one :func:`ridge_path` per fold
    and scaling; ties to the first scaling, then the stronger penalty), else the defaults.
    Returns the predictions on ``Xtr`` and ``Xte``, ``alpha``, the scaling and the CV
    accuracy (``nan`` without ``cv``)."""
    if cv:
        alphas = [float(a) for a in alphas]
        folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(Xtr, ytr)
        score = np.zeros((len(scalings), len(alphas)))
        for fit, held in folds:
            for i, scaling in enumerate(scalings):
                scale = _scaler(scaling).fit(Xtr[fit])
                path = ridge_path(scale.transform(Xtr[fit]), ytr[fit], alphas)
                pred = path.predict(scale.transform(Xtr[held]))  # [m, A]
                score[i] += (pred == ytr[held][:, None]).mean(axis=0) / k
        i, j = np.unravel_index(int(np.argmax(score)), score.shape)  # the first maximum
        scaling, alpha, cv_acc = scalings[i], alphas[j], float(score[i, j])
    else:
        scaling, alpha, cv_acc = default_scaling, float(default_alpha), float("nan")
    scale = _scaler(scaling).fit(Xtr)
    path = ridge_path(scale.transform(Xtr), ytr, [alpha])
    return (path.predict(scale.transform(Xtr))[:, 0], path.predict(scale.transform(Xte))[:, 0],
            alpha, scaling, cv_acc)  # fmt: skip


def _pipeline(classifier: str, scaling: str, C: float, seed: int) -> Pipeline:
    scale = _scaler(scaling)
    if classifier == "logistic":
        model = LogisticRegression(C=C, solver="liblinear", max_iter=MAX_ITER, random_state=seed)
    else:
        model = LinearSVC(C=C, dual="auto", max_iter=MAX_ITER, random_state=seed)
    return Pipeline([("scale", scale), ("clf", model)])


def _checked(features: Any, labels: Any, train_idx: Any, test_idx: Any, seed: Any,
             classifier: Any, default_scaling: Any, scalings: Sequence[str]) -> tuple:
    """:func:`low_label_probe`'s inputs checked: ``X`` float64, ``y``, the indices, the seed."""
    for name, value, allowed in (("classifier", classifier, CLASSIFIERS),
                                 ("default_scaling", default_scaling, SCALINGS)):  # fmt: skip
        if not isinstance(value, str):
            raise TypeError(f"`{name}` must be a str, got {type(value).__name__}")
        if value not in allowed:
            raise ValueError(f"`{name}` must be one of {', '.join(allowed)}, got {value!r}")
    for s in scalings:
        if s not in SCALINGS:
            raise ValueError(f"`scalings` must hold {' or '.join(SCALINGS)}, got {s!r}")
    X = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels).reshape(-1)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(
            f"`features` must be [S, D] with S = len(labels) = {y.shape[0]}, got {X.shape}"
        )
    if not np.isfinite(X).all():
        raise ValueError("`features` contains NaN or inf values")
    train_idx = check_indices(train_idx, "train_idx", len(y))
    test_idx = check_indices(test_idx, "test_idx", len(y))
    check_disjoint({"train_idx": train_idx, "test_idx": test_idx})
    return X, y, train_idx, test_idx, check_seed(seed)


def low_label_probe(
    features: np.ndarray,
    labels: np.ndarray,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    classifier: str = "logistic",
    Cs: Sequence[float] = LOW_LABEL_CS,
    scalings: Sequence[str] = SCALINGS,
    default_C: float = DEFAULT_C,
    default_scaling: str = DEFAULT_SCALING,
    folds: int = 3,
    seed: int = 0,
    alphas: Sequence[float] = LOW_LABEL_ALPHAS,
    default_alpha: float = DEFAULT_ALPHA,
) -> LowLabelProbeResult:
    r"""Fit a scaled, regularised linear classifier on the labelled samples ``train_idx``
    and score it on ``test_idx``.

    Args:
        features: ``[S, D]`` features of all samples (embeddings or reference features).
        labels: ``[S]`` integer labels (only ``labels[train_idx]`` and ``labels[test_idx]``
            are read; the test labels only for the score).
        train_idx: ``[n]`` labelled samples, at least one per class of the task.
        test_idx: ``[m]`` test samples.
        classifier: ``"logistic"`` (default), ``"svm"`` or ``"ridge"``.
        Cs: ``C`` grid of the cross-validation (default :data:`LOW_LABEL_CS`).
        scalings: scalings of the cross-validation (default ``("standard", "l2")``).
        default_C: ``C`` without cross-validation (default 1).
        default_scaling: scaling without cross-validation (default ``"l2"``).
        folds: folds of the cross-validation (default 3; lowered to the smallest class
            count).
        seed: seed of the folds and of the solver (default 0).
        alphas: the ridge classifier's ``alpha`` grid of the cross-validation, in the order
            of the tie rule (default :data:`LOW_LABEL_ALPHAS`, the strongest first).
        default_alpha: the ridge classifier's ``alpha`` without cross-validation (default 1).

    Returns:
        :class:`LowLabelProbeResult`.

    Raises:
        TypeError: ``classifier`` or a scaling is not a string.
        ValueError: an unknown classifier or scaling, mismatching shapes, non-finite
            features, an empty split, fewer than two classes among the labelled samples,
            overlapping training and test samples.
    """
    X, y, train_idx, test_idx, seed = _checked(features, labels, train_idx, test_idx, seed,
                                               classifier, default_scaling, scalings)  # fmt: skip
    classes, counts = np.unique(y[train_idx], return_counts=True)
    if classes.size < 2:
        raise ValueError(f"the labelled samples need at least two classes, got {classes.tolist()}")
    Xtr, ytr = X[train_idx], y[train_idx]
    grid = alphas if classifier == "ridge" else Cs
    cv = bool(counts.min() >= MIN_LABELS_FOR_CV and (len(grid) > 1 or len(scalings) > 1))
    k = int(max(2, min(folds, counts.min()))) if cv else 0
    if classifier == "ridge":
        fitted, pred, alpha, scale, cv_acc = _ridge(
            Xtr, ytr, X[test_idx], cv, alphas, scalings, default_alpha, default_scaling, k, seed
        )
        return LowLabelProbeResult(
            test_accuracy=float(np.mean(pred == y[test_idx])),
            train_accuracy=float(np.mean(fitted == ytr)), C=float("nan"), scaling=scale,
            selection="cv" if cv else "default", cv_accuracy=cv_acc, folds=k, alpha=alpha,
        )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if cv:
            grid_ = [{"scale": [_scaler(s)], "clf__C": [float(c) for c in Cs]} for s in scalings]
            search = GridSearchCV(
                _pipeline(classifier, scalings[0], float(Cs[0]), seed), grid_,
                cv=StratifiedKFold(n_splits=k, shuffle=True, random_state=seed),
                scoring="accuracy",
            ).fit(Xtr, ytr)  # fmt: skip
            model = search.best_estimator_
            scale = "standard" if isinstance(model.named_steps["scale"], StandardScaler) else "l2"
            C, cv_acc = float(search.best_params_["clf__C"]), float(search.best_score_)
        else:
            C, scale, cv_acc = float(default_C), default_scaling, float("nan")
            model = _pipeline(classifier, scale, C, seed).fit(Xtr, ytr)
    return LowLabelProbeResult(
        test_accuracy=float(np.mean(model.predict(X[test_idx]) == y[test_idx])),
        train_accuracy=float(np.mean(model.predict(Xtr) == ytr)), C=C, scaling=scale,
        selection="cv" if cv else "default", cv_accuracy=cv_acc, folds=k,
    )  # fmt: skip
