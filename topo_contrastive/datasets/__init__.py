"""Edge-flow classification datasets of the paper's §5 and a plotting helper.

- :class:`SyntheticTrajectories`: random trajectories around two holes
  (generators :func:`generate_trajectory_complex`, :func:`generate_trajectories`).
- :class:`OceanDrifters`: drifter paths around Madagascar.
- :class:`RandomComplexTrajectories`: trajectories on many complexes, one random
  complex per sample (:func:`random_holes`).
- :class:`EdgeFlows`: your own complex and edge flows (TopoNetX, incidence matrices or
  an ``.npz`` file), labelled or not.
- :class:`ManyComplexFlows`: many complexes (one per sample) from one ``.npz`` file, written
  by :func:`write_many_complexes` (read back by :func:`read_many_complexes`;
  :func:`is_many_complex_file` tells the layout from a file).
- :class:`PowerGridFlows`: power flows on a real grid (pandapower's cases and solvers).
- :class:`WaterNetworkFlows`: pipe flows in a water network (EPANET's networks, via wntr).
- :func:`plot_complex`: draw a complex with flows / paths (PNG).
"""

from topo_contrastive.datasets._many_complex_file import (
    ManyComplexFlows,
    is_many_complex_file,
    read_many_complexes,
    write_many_complexes,
)
from topo_contrastive.datasets.edge_flows import EdgeFlows
from topo_contrastive.datasets.ocean_drifters import OceanDrifters
from topo_contrastive.datasets.plot import plot_complex
from topo_contrastive.datasets.power_grid_flows import PowerGridFlows
from topo_contrastive.datasets.random_complex_trajectories import (
    RandomComplexTrajectories,
    random_holes,
)
from topo_contrastive.datasets.synthetic_trajectories import (
    SyntheticTrajectories,
    generate_trajectories,
    generate_trajectory_complex,
)
from topo_contrastive.datasets.water_network_flows import WaterNetworkFlows

__all__ = [
    "EdgeFlows",
    "ManyComplexFlows",
    "OceanDrifters",
    "PowerGridFlows",
    "RandomComplexTrajectories",
    "SyntheticTrajectories",
    "WaterNetworkFlows",
    "generate_trajectories",
    "generate_trajectory_complex",
    "is_many_complex_file",
    "plot_complex",
    "random_holes",
    "read_many_complexes",
    "write_many_complexes",
]
