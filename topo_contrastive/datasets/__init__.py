"""Edge-flow classification datasets of the paper's §5, your own data, and a plotting helper.

- :class:`SyntheticTrajectories`: random trajectories around two holes
  (generators :func:`generate_trajectory_complex`, :func:`generate_trajectories`).
- :class:`OceanDrifters`: drifter paths around Madagascar.
- :class:`RandomComplexTrajectories`: trajectories on many complexes, one random complex per
  sample.
- :class:`EdgeFlows`: your own edge flows on one complex or many (TopoNetX, incidence
  matrices, ``ComplexData`` samples or an ``.npz`` file), labelled or not; the base of the
  three above.
- :func:`plot_complex`: draw a complex with flows / paths (PNG).
"""

from topo_contrastive.datasets.edge_flows import EdgeFlows
from topo_contrastive.datasets.ocean_drifters import OceanDrifters
from topo_contrastive.datasets.plot import plot_complex
from topo_contrastive.datasets.random_complex_trajectories import RandomComplexTrajectories
from topo_contrastive.datasets.synthetic_trajectories import (
    SyntheticTrajectories,
    generate_trajectories,
    generate_trajectory_complex,
)

__all__ = [
    "EdgeFlows",
    "OceanDrifters",
    "RandomComplexTrajectories",
    "SyntheticTrajectories",
    "generate_trajectories",
    "generate_trajectory_complex",
    "plot_complex",
]
