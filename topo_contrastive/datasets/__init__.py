"""Edge-flow classification datasets of the paper's §5, your own data, and a plotting helper.

- :class:`SyntheticTrajectories`: random trajectories around two holes
  (generators :func:`generate_trajectory_complex`, :func:`generate_trajectories`).
- :class:`OceanDrifters`: drifter paths around Madagascar.
- :class:`RandomComplexTrajectories`: trajectories on many complexes, one random complex per
  sample.
- :class:`PowerGridFlows`: power flows on a real grid (pandapower's cases and solvers).
- :class:`WaterNetworkFlows`: pipe flows in a water network (EPANET's networks, via wntr).
- :class:`EdgeFlows`: your own edge flows on one complex or many (TopoNetX, incidence
  matrices, ``ComplexData`` samples or an ``.npz`` file), labelled or not; the base of the
  five above.
- :func:`plot_complex`: draw a complex with flows / paths (PNG).
"""

from topo_contrastive.datasets.edge_flows import EdgeFlows
from topo_contrastive.datasets.ocean_drifters import OceanDrifters
from topo_contrastive.datasets.plot import plot_complex
from topo_contrastive.datasets.power_grid_flows import PowerGridFlows
from topo_contrastive.datasets.random_complex_trajectories import RandomComplexTrajectories
from topo_contrastive.datasets.synthetic_trajectories import (
    SyntheticTrajectories,
    generate_trajectories,
    generate_trajectory_complex,
)
from topo_contrastive.datasets.water_network_flows import WaterNetworkFlows

__all__ = [
    "EdgeFlows",
    "OceanDrifters",
    "PowerGridFlows",
    "RandomComplexTrajectories",
    "SyntheticTrajectories",
    "WaterNetworkFlows",
    "generate_trajectories",
    "generate_trajectory_complex",
    "plot_complex",
]
