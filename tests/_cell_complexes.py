"""Hand-built and random planar cell complexes for the tests (2-cells of any length).

- :func:`hexagon`: one filled hexagon (beta_1 = 0).
- :func:`square_annulus`: an outer and an inner square joined by four spokes, the four
  trapezoids between them filled, the inner square a hole (beta_1 = 1).
- :func:`square_cylinder`: a ring of four squares (two 4-cycles joined by four edges),
  a cylinder (beta_1 = 1, beta_2 = 0).
- :func:`square_pentagon_loop`: a square and a pentagon sharing an edge, and an unfilled
  loop beside them (the issue's TopoNetX example: beta_1 = 1).
- :func:`street_grid`: the edges and node positions of an ``n x n`` grid of junctions
  (no 2-cells: what :func:`~topo_contrastive.complex.planar_faces` fills).
- :func:`random_planar_cell_complex`: a Delaunay triangulation of random points whose
  triangles are merged in disjoint pairs into quadrilaterals (the shared edge removed),
  a random subset of the faces filled.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import Delaunay

from topo_contrastive import ComplexOperators


def cycle_edges(cycle: list[int]) -> list[list[int]]:
    return [[cycle[i], cycle[(i + 1) % len(cycle)]] for i in range(len(cycle))]


def hexagon() -> ComplexOperators:
    cell = [0, 1, 2, 3, 4, 5]
    return ComplexOperators.from_cells(cycle_edges(cell), [cell])


def square_annulus() -> ComplexOperators:
    outer, inner = [0, 1, 2, 3], [4, 5, 6, 7]
    edges = cycle_edges(outer) + cycle_edges(inner) + [[i, i + 4] for i in range(4)]
    cells = [[i, (i + 1) % 4, (i + 1) % 4 + 4, i + 4] for i in range(4)]
    return ComplexOperators.from_cells(edges, cells)


def square_cylinder() -> ComplexOperators:
    bottom, top = [0, 1, 2, 3], [4, 5, 6, 7]
    edges = cycle_edges(bottom) + cycle_edges(top) + [[i, i + 4] for i in range(4)]
    cells = [[i, (i + 1) % 4, (i + 1) % 4 + 4, i + 4] for i in range(4)]
    return ComplexOperators.from_cells(edges, cells)


def square_pentagon_loop() -> ComplexOperators:
    square, pentagon, loop = [0, 1, 2, 3], [1, 4, 5, 6, 2], [3, 7, 8, 0]
    edges = {tuple(sorted(e)) for c in (square, pentagon, loop) for e in cycle_edges(c)}
    return ComplexOperators.from_cells(sorted(edges), [square, pentagon])


def random_planar_cell_complex(
    rng: np.random.Generator, n: int, fill: float, merge: float = 0.5
) -> ComplexOperators:
    """A random planar cell complex on ``n`` points (see the module docstring)."""
    pts = rng.random((n, 2))
    tri = np.sort(Delaunay(pts).simplices, axis=1)
    edge_of = {}
    for t, (a, b, c) in enumerate(tri):
        for e in ((a, b), (a, c), (b, c)):
            edge_of.setdefault(e, []).append(t)
    used = np.zeros(len(tri), dtype=bool)
    removed = set()
    faces = []
    inner = [e for e, ts in edge_of.items() if len(ts) == 2]
    for i in rng.permutation(len(inner)):
        e = inner[i]
        s, t = edge_of[e]
        if used[s] or used[t] or rng.random() >= merge:
            continue
        used[s] = used[t] = True
        removed.add(e)
        a = [v for v in tri[s] if v not in e][0]
        b = [v for v in tri[t] if v not in e][0]
        faces.append([e[0], a, e[1], b])  # the quadrilateral around the removed edge
    faces += [list(tri[t]) for t in np.flatnonzero(~used)]
    edges = [list(e) for e in edge_of if e not in removed]
    filled = [f for f in faces if rng.random() < fill]
    return ComplexOperators.from_cells(edges, filled or None, n)


def street_grid(n: int) -> tuple[list[list[int]], np.ndarray]:
    """Edges ``[[i, j], ...]`` and positions ``float [n * n, 2]`` of an ``n x n`` grid of
    junctions (node ``n * y + x`` at ``(x, y)``)."""
    pos = np.array([[x, y] for y in range(n) for x in range(n)], dtype=float)
    edges = []
    for y in range(n):
        for x in range(n):
            i = n * y + x
            if x < n - 1:
                edges.append([i, i + 1])
            if y < n - 1:
                edges.append([i, i + n])
    return edges, pos
