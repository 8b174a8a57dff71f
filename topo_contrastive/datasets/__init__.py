"""Edge-flow classification datasets of the paper's §5 and a plotting helper.

- :class:`SyntheticTrajectories`: random trajectories around two holes.
- :class:`OceanDrifters`: drifter paths around Madagascar.
- :func:`plot_complex`: draw a complex with flows / paths (PNG).
"""

from topo_contrastive.datasets.ocean_drifters import OceanDrifters
from topo_contrastive.datasets.plot import plot_complex
from topo_contrastive.datasets.synthetic_trajectories import SyntheticTrajectories

__all__ = ["OceanDrifters", "SyntheticTrajectories", "plot_complex"]
