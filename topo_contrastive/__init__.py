"""topo_contrastive: Hodge-aware contrastive learning on simplicial complexes.

Implements "Hodge-Aware Contrastive Learning" (Moellers, Immer, Fortuin, Isufi,
ICASSP 2024) for the PyTorch Geometric / TopoModelX ecosystem.
"""

from topo_contrastive.complex import SimplicialOperators

__version__ = "0.1.0"

__all__ = ["SimplicialOperators", "__version__"]
