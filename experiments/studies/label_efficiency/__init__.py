"""Label efficiency: test accuracy against the labelled fraction of the training split
(``python -m experiments label-efficiency``): pre-trained encoders probed and fine-tuned, the
fine-tune control, the supervised SCNN and reference rows on nested stratified subsets
(:mod:`.subsets`), the low-label probe (:mod:`.probe`), the curves (:mod:`.curves`) and their
tables and figure (:mod:`.report`).
"""

from experiments.studies.label_efficiency.curves import (
    LabelEfficiencyResult,
    Row,
    label_efficiency,
    reduce_harmonic,
    resolve_rows,
)
from experiments.studies.label_efficiency.probe import LowLabelProbeResult, low_label_probe
from experiments.studies.label_efficiency.report import (
    best_line,
    label_efficiency_markdown,
    plot_curves,
    summarize,
)
from experiments.studies.label_efficiency.subsets import labelled_subsets, subset_sizes

__all__ = [
    "LabelEfficiencyResult", "LowLabelProbeResult", "Row", "best_line", "label_efficiency",
    "label_efficiency_markdown", "labelled_subsets", "low_label_probe", "plot_curves",
    "reduce_harmonic", "resolve_rows", "subset_sizes", "summarize",
]  # fmt: skip
