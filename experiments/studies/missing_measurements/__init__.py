"""Missing measurements: edge flows with unobserved edges at test time.

A sensor network never sees every edge. The study (``topo-contrastive
missing-measurements``) trains every row's probe on complete flows and tests it on flows of
which a fraction of the edges is unobserved, at random or a region around a node, with the
unobserved entries set to zero or filled in by the flow-conservation interpolation of Jia et
al. (KDD 2019, :func:`~topo_contrastive.hodge.interpolate_flows`). Rows: the pre-trained
SSCL_Spec encoder (HodgeReadout edition), raw flows, ``|flows|`` and ``U_H^T x``.

- :func:`unobserved_masks`: which edges go unobserved (:data:`MODES`);
- :func:`load_study_data`, :func:`check_study`, :func:`missing_measurements_study`: the
  datasets (paper datasets, `pytspl` road networks with routed trips, data files of one's
  own) and the protocol, resumable per dataset and split;
- :func:`missing_markdown`, :func:`missing_rows`, :func:`plot_missing`,
  :func:`write_missing`: the tables and the figure.
"""

from experiments.studies.missing_measurements.masks import MODES, unobserved_masks
from experiments.studies.missing_measurements.protocol import (
    ALPHAS,
    DEFAULT_FRACTIONS,
    FILLS,
    PAPER_DATASETS,
    ROWS,
    StudyData,
    cell_names,
    check_study,
    data_fingerprint,
    load_study_data,
    missing_measurements_study,
)
from experiments.studies.missing_measurements.report import (
    OUTPUTS,
    missing_markdown,
    missing_rows,
    plot_missing,
    write_missing,
)

__all__ = [
    "ALPHAS",
    "DEFAULT_FRACTIONS",
    "FILLS",
    "MODES",
    "OUTPUTS",
    "PAPER_DATASETS",
    "ROWS",
    "StudyData",
    "cell_names",
    "check_study",
    "data_fingerprint",
    "load_study_data",
    "missing_markdown",
    "missing_measurements_study",
    "missing_rows",
    "plot_missing",
    "unobserved_masks",
    "write_missing",
]
