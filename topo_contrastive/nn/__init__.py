"""Neural network layers: the simplicial convolution, the SCNN encoder, the Hodge-aware
readout, the projection head, and the adapter of TopoModelX's simplicial models."""

from topo_contrastive.nn.harmonic_features import (
    canonical_harmonic_basis,
    harmonic_matrix,
    harmonic_sketch,
)
from topo_contrastive.nn.hodge_readout import HodgeReadout
from topo_contrastive.nn.projection_head import ProjectionHead
from topo_contrastive.nn.scnn import SCNN
from topo_contrastive.nn.scnn_conv import SCNNConv
from topo_contrastive.nn.topomodelx_encoder import TopoModelXEncoder

__all__ = [
    "SCNNConv",
    "SCNN",
    "HodgeReadout",
    "ProjectionHead",
    "TopoModelXEncoder",
    "canonical_harmonic_basis",
    "harmonic_matrix",
    "harmonic_sketch",
]
