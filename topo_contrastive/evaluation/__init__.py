"""Linear evaluation of a pre-trained encoder, with the reference rows beside it.

- :func:`linear_probe` (the paper's protocol: ``StandardScaler`` + ``LinearSVC``, ``C`` by
  10-fold cross-validation on the training split) and :class:`ProbeResult`;
  :func:`evaluate_encoder` over several splits; the faster ridge probe
  (:mod:`~topo_contrastive.evaluation.ridge_probe`).
- :func:`reference_rows`: an untrained encoder of the same architecture, the raw flows,
  ``|flows|`` and the harmonic coordinates on the same splits
  (:mod:`~topo_contrastive.evaluation.references`); fine-tuning and the supervised SCNN
  (:func:`train_supervised`, :mod:`~topo_contrastive.evaluation.finetune`).
"""

import typing as _typing

from topo_contrastive._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:  # the lazy exports below, for type checkers and IDEs
    from topo_contrastive.evaluation.probe import evaluate_encoder, linear_probe
    from topo_contrastive.evaluation.probe_result import ProbeResult
    from topo_contrastive.evaluation.references import reference_rows
    from topo_contrastive.evaluation.supervised import SupervisedResult, train_supervised

#: name -> module of this package that holds it, imported on first access (scikit-learn
#: loads only when a probe runs)
_LAZY = {
    "evaluate_encoder": "probe",
    "linear_probe": "probe",
    "ProbeResult": "probe_result",
    "reference_rows": "references",
    "SupervisedResult": "supervised",
    "train_supervised": "supervised",
}

__all__ = [
    "ProbeResult",
    "SupervisedResult",
    "evaluate_encoder",
    "linear_probe",
    "reference_rows",
    "train_supervised",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)
