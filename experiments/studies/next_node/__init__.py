"""Next-node trajectory prediction (SCoNe's task) as a second downstream task
(``python -m experiments predict-next``): a pre-trained encoder reused frozen and fine-tuned,
beside the same SCNN from scratch, a Markov chain and a uniform choice. The samples
(:mod:`.samples`), SCoNe's output map (:mod:`.head`), the models and rows (:mod:`.rows`),
SCoNe's generalisation tests (:mod:`.transfer`), TopoModelX's SCoNe (:mod:`.scone`) and the
tables (:mod:`.report`).
"""

from experiments.studies.next_node.head import NextNodeHead
from experiments.studies.next_node.rows import (
    NextNodeResult,
    labelled_split,
    markov_accuracy,
    next_node_cell,
    next_node_rows,
    next_node_split,
    require_paths,
    train_next_node,
    uniform_accuracy,
)
from experiments.studies.next_node.samples import NextNodeSamples, next_node_samples
from experiments.studies.next_node.scone import SCoNeEncoder, scone_available
from experiments.studies.next_node.transfer import (
    concat_samples,
    next_node_transfer,
    transfer_splits,
)

__all__ = [
    "NextNodeHead", "NextNodeResult", "NextNodeSamples", "SCoNeEncoder", "concat_samples",
    "labelled_split", "markov_accuracy", "next_node_cell", "next_node_rows",
    "next_node_samples", "next_node_split", "next_node_transfer", "require_paths",
    "scone_available", "train_next_node", "transfer_splits", "uniform_accuracy",
]  # fmt: skip
