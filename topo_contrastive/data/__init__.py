"""The data layout of signals on complexes (:class:`ComplexData`): one sample per complex,
a PyG ``Batch`` of many complexes as one block-diagonal complex, or many samples on one
complex stored once."""

from topo_contrastive.data._layouts import MixedLayoutError
from topo_contrastive.data.complex_data import ComplexData, as_complex

__all__ = ["ComplexData", "MixedLayoutError", "as_complex"]
