"""Missing measurements: edge flows with unobserved edges at test time
(``python -m experiments missing-measurements``; the protocol in :mod:`.protocol`).

A sensor network never sees every edge. The study trains every row's probe on complete
flows and tests it on flows of which a fraction of the edges is unobserved, at random or a
region around a node (:mod:`.masks`), with the unobserved entries set to zero or filled in
by the flow-conservation interpolation of Jia et al. (KDD 2019,
:func:`~topo_contrastive.hodge.interpolate_flows`). Rows: the pre-trained SSCL_Spec encoder
(HodgeReadout edition), raw flows, ``|flows|`` and ``U_H^T x``. Tables and figure:
:mod:`.report`.
"""

from experiments.studies.missing_measurements.masks import MODES, unobserved_masks
from experiments.studies.missing_measurements.protocol import (
    FILLS,
    ROWS,
    StudyData,
    cell_names,
    check_study,
    load_study_data,
    missing_measurements_study,
)
from experiments.studies.missing_measurements.report import OUTPUTS, write_missing

__all__ = [
    "FILLS", "MODES", "OUTPUTS", "ROWS", "StudyData", "cell_names", "check_study",
    "load_study_data", "missing_measurements_study", "unobserved_masks", "write_missing",
]  # fmt: skip
