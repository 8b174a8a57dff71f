"""Hand-built complexes with holes of dimension 1 and 2 for the tests of signals on every rank."""

import itertools

from topo_contrastive import ComplexOperators


def hollow_tetrahedron() -> ComplexOperators:
    """Boundary of a tetrahedron: beta = (1, 0, 1)."""
    tet = range(4)
    return ComplexOperators.from_simplices(
        list(itertools.combinations(tet, 2)), list(itertools.combinations(tet, 3))
    )


def torus(n: int = 3, m: int = 4) -> ComplexOperators:
    """Triangulated n x m grid with periodic sides: beta = (1, 2, 1)."""

    def idx(i, j):
        return (i % n) * m + (j % m)

    tris = []
    for i, j in itertools.product(range(n), range(m)):
        a, b, c, d = idx(i, j), idx(i + 1, j), idx(i, j + 1), idx(i + 1, j + 1)
        tris += [sorted((a, b, d)), sorted((a, c, d))]
    edges = sorted({tuple(sorted(e)) for t in tris for e in itertools.combinations(t, 2)})
    return ComplexOperators.from_simplices(edges, tris)


def solid_and_hollow() -> ComplexOperators:
    """A solid tetrahedron (nodes 0-3) beside a hollow one (nodes 4-7): at rank 2 a curl
    part (the solid one's boundary) and a harmonic part (the cavity); beta = (2, 0, 1)."""
    tris, edges = [], []
    for base in (0, 4):
        tet = range(base, base + 4)
        edges += list(itertools.combinations(tet, 2))
        tris += list(itertools.combinations(tet, 3))
    return ComplexOperators.from_simplices(edges, tris, tetrahedra=[[0, 1, 2, 3]])


def four_simplex_boundary() -> ComplexOperators:
    """Boundary of a 4-simplex: a closed 3-cycle (B3^T B3 singular); beta = (1, 0, 0, 1)."""
    nodes = range(5)
    return ComplexOperators.from_simplices(
        list(itertools.combinations(nodes, 2)),
        list(itertools.combinations(nodes, 3)),
        tetrahedra=list(itertools.combinations(nodes, 4)),
    )
