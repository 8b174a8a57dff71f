"""topo_contrastive: Hodge-aware contrastive learning on simplicial complexes.

Implements "Hodge-Aware Contrastive Learning" (Moellers, Immer, Fortuin, Isufi,
ICASSP 2024) for the PyTorch Geometric / TopoModelX ecosystem.
"""

from topo_contrastive.complex import SimplicialOperators
from topo_contrastive.hodge import HodgeDecomposition, HodgeParts

__version__ = "0.1.0"

__all__ = ["HodgeDecomposition", "HodgeParts", "SimplicialOperators", "__version__"]
