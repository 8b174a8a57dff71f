"""Signed operators of a simplicial complex of order two or three.

The class :class:`ComplexOperators` holds the signed incidence matrices
:math:`\\mathbf{B}_1` (nodes x edges), :math:`\\mathbf{B}_2` (edges x triangles) and,
where the complex has tetrahedra, :math:`\\mathbf{B}_3` (triangles x tetrahedra), and
derives the Hodge Laplacians of the paper's eq. (2):

.. math::
    \\mathbf{L}_0 = \\mathbf{B}_1 \\mathbf{B}_1^\\top, \\quad
    \\mathbf{L}_1 = \\underbrace{\\mathbf{B}_1^\\top \\mathbf{B}_1}_{\\mathbf{L}_{\\downarrow}}
    + \\underbrace{\\mathbf{B}_2 \\mathbf{B}_2^\\top}_{\\mathbf{L}_{\\uparrow}}, \\quad
    \\mathbf{L}_2 = \\mathbf{B}_2^\\top \\mathbf{B}_2 + \\mathbf{B}_3 \\mathbf{B}_3^\\top, \\quad
    \\mathbf{L}_3 = \\mathbf{B}_3^\\top \\mathbf{B}_3,

and in general :math:`\\mathbf{L}_k = \\mathbf{L}_{k,\\downarrow} + \\mathbf{L}_{k,\\uparrow}`
with :math:`\\mathbf{L}_{k,\\downarrow} = \\mathbf{B}_k^\\top \\mathbf{B}_k` and
:math:`\\mathbf{L}_{k,\\uparrow} = \\mathbf{B}_{k+1} \\mathbf{B}_{k+1}^\\top`
(:math:`\\mathbf{B}_0` and :math:`\\mathbf{B}_4` are empty). Without tetrahedra
:math:`\\mathbf{L}_2 = \\mathbf{B}_2^\\top \\mathbf{B}_2`.

Order and orientation (TopoNetX's convention for integer node labels): nodes are
``0 .. N0-1``; edges are sorted lexicographically by their node pair ``(u, v)``
with ``u < v`` and oriented ``u -> v`` (``B1[u, e] = -1``, ``B1[v, e] = +1``);
triangles ``(a, b, c)`` with ``a < b < c`` are sorted lexicographically and
oriented ``a -> b -> c``, so their boundary is ``[b,c] - [a,c] + [a,b]``;
tetrahedra ``(a, b, c, d)`` with ``a < b < c < d`` are sorted lexicographically with
boundary ``[b,c,d] - [a,c,d] + [a,b,d] - [a,b,c]`` (TopoNetX's ``incidence_matrix(3)``).
Complexes given by incidence matrices keep the columns in the order and with the
orientation of the matrices given.
"""

# The class is assembled in complex_operators.py from parts by responsibility:
# _build.py (construction and validation), _operators.py (incidence matrices and
# Laplacians, scipy and torch forms), _lookup.py (oriented edge look-ups and paths).
from topo_contrastive.complex.complex_operators import MAX_RANK as MAX_RANK
from topo_contrastive.complex.complex_operators import ComplexOperators
from topo_contrastive.complex.faces import edge_crossings, planar_faces, short_cycles
from topo_contrastive.complex.laplacians import Laplacians

__all__ = ["ComplexOperators", "Laplacians", "edge_crossings", "planar_faces", "short_cycles"]
