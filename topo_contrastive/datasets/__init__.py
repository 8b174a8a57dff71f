"""Edge-flow classification datasets of the paper's §5 and a plotting helper.

- :class:`SyntheticTrajectories`: random trajectories around two holes
  (generators :func:`generate_trajectory_complex`, :func:`generate_trajectories`).
- :class:`OceanDrifters`: drifter paths around Madagascar.
- :func:`plot_complex`: draw a complex with flows / paths (PNG).
"""

from topo_contrastive.datasets.ocean_drifters import OceanDrifters
from topo_contrastive.datasets.plot import plot_complex
from topo_contrastive.datasets.synthetic_trajectories import (
    SyntheticTrajectories,
    generate_trajectories,
    generate_trajectory_complex,
)

__all__ = [
    "OceanDrifters",
    "SyntheticTrajectories",
    "generate_trajectories",
    "generate_trajectory_complex",
    "plot_complex",
]
