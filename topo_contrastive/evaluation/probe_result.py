"""The result of a linear probe (:func:`~topo_contrastive.evaluation.linear_probe` and
:func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeResult:
    """Result of :func:`~topo_contrastive.evaluation.linear_probe` and
    :func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe` (accuracies are fractions in
    ``[0, 1]``).

    Attributes:
        test_accuracy: accuracy on the test samples.
        train_accuracy: accuracy on the training samples.
        cv_accuracy: mean cross-validation accuracy of the chosen ``C`` (the ridge probe:
            leave-one-out accuracy of the chosen ``alpha``).
        C: the chosen penalty of the SVM (``nan`` for the ridge probe).
        val_accuracy: accuracy on the validation samples (``nan`` when none were given).
        alpha: the chosen penalty of the ridge probe (``nan`` for the SVM).
        probe: ``"svm"`` or ``"ridge"``.
    """

    test_accuracy: float
    train_accuracy: float
    cv_accuracy: float
    C: float
    val_accuracy: float = float("nan")
    alpha: float = float("nan")
    probe: str = "svm"
