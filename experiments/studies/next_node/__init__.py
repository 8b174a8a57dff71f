"""Next-node trajectory prediction (SCoNe's task) as a second downstream task.

Reuse of a pre-trained encoder, frozen and fine-tuned, beside the same SCNN from scratch,
a first-order Markov chain and a uniform choice (``python -m experiments predict-next``):

- :func:`next_node_samples` (:class:`NextNodeSamples`): node paths as prefix flows, next
  nodes and candidates;
- :class:`NextNodeHead`: SCoNe's output map ``B1 H w`` over the candidates;
- :func:`train_next_node`, :func:`next_node_rows`, :func:`next_node_cell` and the splits
  (:func:`next_node_split`, :func:`labelled_split`); the baselines
  :func:`markov_accuracy` and :func:`uniform_accuracy`;
- :func:`next_node_transfer`: SCoNe's generalisation tests (reversed paths, another region);
- :class:`SCoNeEncoder`: TopoModelX's SCoNe as a baseline (:func:`scone_available`).
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
    "NextNodeHead",
    "NextNodeResult",
    "NextNodeSamples",
    "SCoNeEncoder",
    "concat_samples",
    "labelled_split",
    "markov_accuracy",
    "next_node_cell",
    "next_node_rows",
    "next_node_samples",
    "next_node_split",
    "next_node_transfer",
    "require_paths",
    "scone_available",
    "train_next_node",
    "transfer_splits",
    "uniform_accuracy",
]
