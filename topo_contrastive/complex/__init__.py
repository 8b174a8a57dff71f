"""Simplicial and cell complexes: their signed incidence matrices and Hodge Laplacians
(:class:`ComplexOperators`, paper eq. 2), the operators a layer filters with
(:class:`Laplacians`), and 2-cells for a network (:func:`planar_faces`, :func:`short_cycles`,
:func:`edge_crossings`)."""

from topo_contrastive.complex.complex_operators import ComplexOperators
from topo_contrastive.complex.faces import edge_crossings, planar_faces, short_cycles
from topo_contrastive.complex.laplacians import Laplacians

__all__ = ["ComplexOperators", "Laplacians", "edge_crossings", "planar_faces", "short_cycles"]
