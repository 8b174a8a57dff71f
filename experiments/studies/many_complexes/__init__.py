"""Many complexes: label efficiency when every sample lives on a complex of its own.

The label-efficiency protocol (``python -m experiments many-complexes``) on a dataset of many
complexes: the library's :class:`~topo_contrastive.datasets.RandomComplexTrajectories`, or
the samples of one's own networks pooled. The encoders pre-trained on all samples without
labels (SSCL_Spec, SCL), the untrained encoder, fine-tuning, the supervised SCNN, the
encoders' part energies and the complex-agnostic references, each a row of a registry.

- :func:`trajectory_samples`, :func:`pool_networks`: the data;
- :func:`reference_features`: the complex-agnostic reference features;
- :data:`ROWS`, :data:`DEFAULT_ROWS`, :class:`Row`, :class:`Cell`: the rows (add one by
  adding an entry);
- :func:`check_study`, :func:`many_complexes_study`: the protocol (resumable per seed and
  row); :func:`many_complexes_markdown`, :func:`plot_many_complexes`,
  :func:`write_many_complexes`: the tables and the figure.
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
from experiments.studies.many_complexes.report import (
    OUTPUTS,
    many_complexes_markdown,
    plot_many_complexes,
    write_many_complexes,
)
from experiments.studies.many_complexes.rows import DEFAULT_ROWS, ROWS, Cell, Row
from topo_contrastive.training.embeddings import AGNOSTIC_ROWS as REFERENCES
from topo_contrastive.training.embeddings import agnostic_features as reference_features

__all__ = [
    "DEFAULT_FRACTIONS",
    "DEFAULT_ROWS",
    "OUTPUTS",
    "REFERENCES",
    "ROWS",
    "Cell",
    "PooledSamples",
    "Row",
    "check_study",
    "many_complexes_markdown",
    "many_complexes_study",
    "plot_many_complexes",
    "pool_networks",
    "reference_features",
    "split",
    "trajectory_samples",
    "write_many_complexes",
]
