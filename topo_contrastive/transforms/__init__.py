"""Edge-flow augmentations (paper §4): uniform and Hodge-aware masking.

- :class:`EdgeFlowMask`: drop every edge's flow with the same probability;
  :class:`SimplexSignalMask` does the same for signals of any rank (``x_0``, ``x_1``,
  ``x_2``).
- :class:`HodgeSpectralMask`: drop with per-edge probabilities optimised with respect to
  the Hodge decomposition (paper §4.1; any rank, from the rank of its
  :class:`~topo_contrastive.HodgeDecomposition`), computed once per sample by
  :class:`ComputeDropProbabilities` (or :meth:`HodgeSpectralMask.fit`).
- :class:`ContrastiveViews`: both views and the Hodge parts of the original flow in one
  ``Data``, the dataset transform of a contrastive PyG pipeline.
- The functional optimiser :func:`optimize_drop_probabilities`, its closed-form
  objective (:func:`expected_hodge_distortion`, :func:`expected_hodge_distortion_grad`,
  :func:`hodge_mask_objective`) and the projection :func:`project_capped_simplex`.
"""

from topo_contrastive.transforms.compute_drop_probabilities import ComputeDropProbabilities
from topo_contrastive.transforms.contrastive_views import ContrastiveViews
from topo_contrastive.transforms.edge_flow_mask import EdgeFlowMask
from topo_contrastive.transforms.hodge_spectral_mask import HodgeSpectralMask
from topo_contrastive.transforms.simplex_signal_mask import SimplexSignalMask
from topo_contrastive.transforms.spectral_mask_optimizer import (
    expected_hodge_distortion,
    expected_hodge_distortion_grad,
    hodge_mask_objective,
    optimize_drop_probabilities,
    project_capped_simplex,
)

__all__ = [
    "ComputeDropProbabilities",
    "ContrastiveViews",
    "EdgeFlowMask",
    "HodgeSpectralMask",
    "SimplexSignalMask",
    "expected_hodge_distortion",
    "expected_hodge_distortion_grad",
    "hodge_mask_objective",
    "optimize_drop_probabilities",
    "project_capped_simplex",
]
