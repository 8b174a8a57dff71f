"""Many complexes: label efficiency when every sample lives on a complex of its own
(``python -m experiments many-complexes``; the protocol in :mod:`.protocol`).

The data (:mod:`.data`): the library's
:class:`~topo_contrastive.datasets.RandomComplexTrajectories`, or the samples of one's own
networks pooled. The rows (:mod:`.rows`, a registry: add one by adding an entry): encoders
pre-trained on all samples without labels (SSCL_Spec, SCL), the untrained encoder,
fine-tuning, the supervised SCNN, the encoders' part energies and the complex-agnostic
references. The tables and the figure: :mod:`.report`.
"""

from experiments.studies.many_complexes.data import (
    PooledSamples,
    pool_networks,
    trajectory_samples,
)
from experiments.studies.many_complexes.protocol import (
    DEFAULT_FRACTIONS,
    check_study,
    many_complexes_study,
    split,
)
from experiments.studies.many_complexes.report import OUTPUTS, write_many_complexes
from experiments.studies.many_complexes.rows import DEFAULT_ROWS, ROWS, Cell, Row
from topo_contrastive.training.embeddings import AGNOSTIC_ROWS as REFERENCES
from topo_contrastive.training.embeddings import agnostic_features as reference_features

__all__ = [
    "DEFAULT_FRACTIONS", "DEFAULT_ROWS", "OUTPUTS", "REFERENCES", "ROWS", "Cell",
    "PooledSamples", "Row", "check_study", "many_complexes_study", "pool_networks",
    "reference_features", "split", "trajectory_samples", "write_many_complexes",
]  # fmt: skip
