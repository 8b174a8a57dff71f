"""Edge-flow augmentations (paper §4): uniform and Hodge-aware masking, as PyG transforms.

- :class:`EdgeFlowMask`: drop every edge's flow with the same probability;
  :class:`SimplexSignalMask` does the same for signals of any rank (``x_0``, ``x_1``,
  ``x_2``).
- :class:`HodgeSpectralMask`: drop with per-edge probabilities optimised with respect to
  the Hodge decomposition (paper §4.1), computed once per sample (:meth:`HodgeSpectralMask.fit`,
  or ``fit_only=True`` as a ``pre_transform``) by :func:`optimize_drop_probabilities`.
- :class:`ContrastiveViews`: both views and the Hodge parts of the original flow in one
  ``Data``, the dataset transform of a contrastive PyG pipeline.
"""

from topo_contrastive.transforms.contrastive_views import ContrastiveViews
from topo_contrastive.transforms.hodge_spectral_mask import (
    HodgeSpectralMask,
    optimize_drop_probabilities,
)
from topo_contrastive.transforms.simplex_signal_mask import EdgeFlowMask, SimplexSignalMask

__all__ = [
    "ContrastiveViews",
    "EdgeFlowMask",
    "HodgeSpectralMask",
    "SimplexSignalMask",
    "optimize_drop_probabilities",
]
