"""Neural network layers: the simplicial convolution, the SCNN encoder, the projection head."""

from topo_contrastive.nn.projection_head import ProjectionHead
from topo_contrastive.nn.scnn import SCNN
from topo_contrastive.nn.scnn_conv import SCNNConv

__all__ = ["SCNNConv", "SCNN", "ProjectionHead"]
