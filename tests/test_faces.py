"""2-cells for a network: the faces of its planar embedding and its short cycles (exact
faces of hand-built drawings, Euler's formula on random planar graphs, the limits)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import Delaunay

from topo_contrastive import HodgeDecomposition, SimplicialOperators
from topo_contrastive.complex import planar_faces, short_cycles


def _grid(n: int) -> tuple[list[list[int]], np.ndarray]:
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


def test_grid_faces_are_its_squares_and_fill_every_hole():
    edges, pos = _grid(3)
    faces = planar_faces(edges, pos)
    assert faces == [[0, 1, 4, 3], [1, 2, 5, 4], [3, 4, 7, 6], [4, 5, 8, 7]]  # counter-clockwise
    ops = SimplicialOperators.from_cells(edges, faces)
    assert HodgeDecomposition(ops).dims == {"gradient": 8, "curl": 4, "harmonic": 0}
    assert planar_faces(edges, pos, max_area=0.5) == []
    assert planar_faces(edges, pos, max_length=3) == []
    assert short_cycles(edges, 4) == faces  # the chordless 4-cycles, same orientation here
    assert short_cycles(edges, 3) == []


def test_a_large_face_is_left_as_a_hole():
    edges, pos = _grid(4)
    hole = {5, 6, 9, 10}  # remove the 2 x 2 block of nodes inside: a hole of side 3
    kept = [e for e in edges if not set(e) & hole]
    small = planar_faces(kept, pos, max_area=1.0)
    assert len(small) == 0  # only the ring around the hole is left: one face of area 9
    (ring,) = planar_faces(kept, pos)
    assert len(ring) == 12
    ops = SimplicialOperators.from_cells(kept, small or None, 16)
    assert HodgeDecomposition(ops).dims["harmonic"] == 1


@pytest.mark.parametrize("seed", range(4))
def test_delaunay_faces_are_its_triangles(seed):
    """A triangulation's bounded faces are its triangles: beta_1 = 0 once filled (Euler)."""
    rng = np.random.default_rng(seed)
    pos = rng.random((30, 2))
    tri = np.sort(Delaunay(pos).simplices, axis=1)
    edges = np.unique(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), axis=0)
    faces = planar_faces(edges, pos)
    assert sorted(tuple(sorted(f)) for f in faces) == sorted(map(tuple, tri.tolist()))
    ops = SimplicialOperators.from_cells(edges, faces)
    assert HodgeDecomposition(ops).dims["harmonic"] == 0
    # the 3-cycles are the 3-cliques: every Delaunay triangle, each listed once
    threes = [tuple(sorted(c)) for c in short_cycles(edges, 3)]
    assert len(threes) == len(set(threes)) and set(map(tuple, tri.tolist())) <= set(threes)


def test_bad_input():
    edges, pos = _grid(2)
    with pytest.raises(ValueError, match="`pos` must be a finite"):
        planar_faces(edges, pos[:, :1])
    with pytest.raises(ValueError, match="`pos` has 4 rows"):
        planar_faces([[0, 9]], pos)
    with pytest.raises(ValueError, match="self-loop"):
        planar_faces([[1, 1]], pos)
    with pytest.raises(ValueError, match="`max_area` must be a positive"):
        planar_faces(edges, pos, max_area=0)
    with pytest.raises(TypeError, match="`max_length`"):
        planar_faces(edges, pos, max_length="4")
    with pytest.raises(ValueError, match=">= 3"):
        short_cycles(edges, 2)
