"""2-cells for a network: the faces of its planar embedding and its short cycles (exact
faces of hand-built drawings, Euler's formula on random planar graphs, the limits)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import Delaunay

from tests._cell_complexes import street_grid
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.complex import edge_crossings, planar_faces, short_cycles


def test_grid_faces_are_its_squares_and_fill_every_hole():
    edges, pos = street_grid(3)
    faces = planar_faces(edges, pos)
    assert faces == [[0, 1, 4, 3], [1, 2, 5, 4], [3, 4, 7, 6], [4, 5, 8, 7]]  # counter-clockwise
    ops = ComplexOperators.from_cells(edges, faces)
    assert HodgeDecomposition(ops).dims == {"gradient": 8, "curl": 4, "harmonic": 0}
    assert planar_faces(edges, pos, max_area=0.5) == []
    assert planar_faces(edges, pos, max_length=3) == []
    assert short_cycles(edges, 4) == faces  # the chordless 4-cycles, same orientation here
    assert short_cycles(edges, 3) == []


def test_a_large_face_is_left_as_a_hole():
    edges, pos = street_grid(4)
    hole = {5, 6, 9, 10}  # remove the 2 x 2 block of nodes inside: a hole of side 3
    kept = [e for e in edges if not set(e) & hole]
    small = planar_faces(kept, pos, max_area=1.0)
    assert len(small) == 0  # only the ring around the hole is left: one face of area 9
    (ring,) = planar_faces(kept, pos)
    assert len(ring) == 12
    ops = ComplexOperators.from_cells(kept, small or None, 16)
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
    ops = ComplexOperators.from_cells(edges, faces)
    assert HodgeDecomposition(ops).dims["harmonic"] == 0
    # the 3-cycles are the 3-cliques: every Delaunay triangle, each listed once
    threes = [tuple(sorted(c)) for c in short_cycles(edges, 3)]
    assert len(threes) == len(set(threes)) and set(map(tuple, tri.tolist())) <= set(threes)


def test_bad_input():
    edges, pos = street_grid(2)
    with pytest.raises(ValueError, match="`pos` must be a finite"):
        planar_faces(edges, pos[:, :1])
    with pytest.raises(ValueError, match="`pos` has 4 rows"):
        planar_faces([[0, 9]], pos)
    with pytest.raises(ValueError, match="self-loop"):
        planar_faces([[1, 1]], pos)
    with pytest.raises(ValueError, match="`max_area` must be a finite number > 0, got 0.0"):
        planar_faces(edges, pos, max_area=0)
    with pytest.raises(TypeError, match="`max_length`"):
        planar_faces(edges, pos, max_length="4")
    with pytest.raises(ValueError, match=">= 3"):
        short_cycles(edges, 2)
    with pytest.raises(ValueError, match="`max_steps` must be >= 1, got 0"):
        short_cycles(edges, 4, max_steps=0)
    with pytest.raises(TypeError, match="`max_steps` must be an int, got float"):
        short_cycles(edges, 4, max_steps=1e7)


def _networkx_cycles(edges, max_length):
    """networkx.chordless_cycles in the order and orientation of short_cycles."""
    import networkx as nx

    out = []
    for c in nx.chordless_cycles(nx.Graph(list(map(tuple, edges))), length_bound=max_length):
        if len(c) >= 3:
            k = int(np.argmin(c))
            c = c[k:] + c[:k]
            out.append(c if c[1] < c[-1] else [c[0], *reversed(c[1:])])
    return sorted(out, key=lambda c: (len(c), c))


def test_short_cycles_are_networkx_chordless_cycles():
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(3, 13))
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
        if edges:
            length = int(rng.integers(3, 9))
            assert short_cycles(edges, length) == _networkx_cycles(edges, length)
    edges, _ = street_grid(6)
    assert short_cycles(edges, 8) == _networkx_cycles(edges, 8)  # 25 squares, 16 rings
    assert [len(c) for c in short_cycles(edges, 8)] == [4] * 25 + [8] * 16


def test_a_huge_length_bound_is_refused_by_its_cost_not_run_for_hours():
    # networkx's enumeration on a 30 x 30 grid with a bound of 1000 gave no cycle in 60 s
    edges, _ = street_grid(30)
    with pytest.raises(ValueError, match=r"at most max_length = 1000 edges take more than "
                       r"max_steps = 100000 steps .* lower max_length"):  # fmt: skip
        short_cycles(edges, 1000, max_steps=10**5)
    assert len(short_cycles(edges, 4)) == 29 * 29  # the squares, in a fraction of a second
    # a huge bound on a small network: as many cycles as there are
    assert short_cycles([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], 10**9) == [[0, 1, 2], [0, 2, 3]]


def _harmonic(edges, faces, n):
    return HodgeDecomposition(ComplexOperators.from_cells(edges, faces or None, n)).dims[
        "harmonic"
    ]


def test_a_dead_end_inside_a_face_does_not_keep_it_open():
    # a square block with a dead-end street 0 - 4 - 5 hanging into it
    pos = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [0.5, 0.5], [1.0, 1.5]], dtype=float)
    edges = [[0, 1], [1, 2], [2, 3], [0, 3], [0, 4], [4, 5]]
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert faces == [[0, 1, 2, 3]]
    assert skipped["outer"] == 1 and skipped["pinched"] == []
    assert _harmonic(edges, faces, 6) == 0
    # a dead end through the walk's start: the same face, whichever half-edge starts it
    pos2 = pos.copy()
    pos2[4] = [1.9, 1.0]
    edges2 = [[0, 1], [1, 2], [2, 3], [0, 3], [1, 4]]
    assert planar_faces(edges2, pos2[:5]) == [[0, 1, 2, 3]]


def test_a_face_touching_itself_is_not_filled():
    # a small block inside a large one, meeting it at node 0 only: the face between them
    # walks through node 0 twice (its boundary is the large cycle minus the small one)
    pos = np.array([[0, 0], [4, 0], [4, 4], [0, 4], [2, 1], [2, 2], [1, 2]], dtype=float)
    edges = [[0, 1], [1, 2], [2, 3], [0, 3], [0, 4], [4, 5], [5, 6], [0, 6]]
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert faces == [[0, 4, 5, 6]]
    (walk,) = skipped["pinched"]
    assert sorted(walk) == [0, 0, 1, 2, 3, 4, 5, 6]
    assert _harmonic(edges, faces, 7) == 1


def test_crossing_edges_are_set_aside_and_leave_one_hole_each():
    edges, pos = street_grid(3)
    overpass = [0, 5]  # (0, 0) -> (2, 1) crosses the street 1 - 4 at (1, 0.5)
    edges = [*edges, overpass]
    crossing = edge_crossings(edges, pos)
    assert crossing.tolist() == [[edges.index([1, 4]), len(edges) - 1]]
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert faces == [[0, 1, 4, 3], [1, 2, 5, 4], [3, 4, 7, 6], [4, 5, 8, 7]]
    assert skipped["set_aside"].tolist() == [overpass] and skipped["crossings"] == 1
    assert _harmonic(edges, faces, 9) == 1  # the cycle over the overpass and back
    # an edge running through a node that is not its end crosses the edges there that do
    # not share one of its ends, and overlaps those that do: (0, 1) -> (2, 1) through
    # node 4 meets 1 - 4 and 4 - 7 there, and runs along 3 - 4 and 4 - 5
    grid = street_grid(3)[0]
    found = edge_crossings([*grid, [3, 5]], pos)
    assert found.tolist() == [[grid.index(e), 12] for e in ([1, 4], [3, 4], [4, 5], [4, 7])]


def test_limits_sort_the_faces_left_open():
    edges, pos = street_grid(4)
    hole = {5, 6, 9, 10}
    kept = [e for e in edges if not set(e) & hole]
    kept += [[0, 5], [5, 1]]  # a triangle in the corner, with node 5 back in the drawing
    faces, skipped = planar_faces(kept, pos, max_length=4, return_skipped=True)
    assert faces == [[0, 1, 5]]
    assert [len(c) for c in skipped["too_long"]] == [13] and skipped["too_large"] == []
    faces, skipped = planar_faces(kept, pos, max_area=2.0, return_skipped=True)
    assert faces == [[0, 1, 5]] and [len(c) for c in skipped["too_large"]] == [13]


@pytest.mark.parametrize("seed", range(3))
def test_edge_crossings_equal_a_naive_loop(seed):
    rng = np.random.default_rng(seed)
    pos = rng.integers(0, 6, size=(25, 2)).astype(float)  # a small grid: many collinear cases
    pos = np.unique(pos, axis=0)
    n = pos.shape[0]
    pairs = {tuple(sorted(rng.choice(n, 2, replace=False).tolist())) for _ in range(40)}
    edges = np.array(sorted(pairs))

    def meet(a, b, c, d):
        def orient(p, q, r):
            return np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))

        def on(p, q, r):  # r on the segment p q, given collinear
            lo, hi = np.minimum(p, q), np.maximum(p, q)
            return bool((lo <= r).all() and (r <= hi).all())

        o1, o2, o3, o4 = orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b)
        if o1 * o2 < 0 and o3 * o4 < 0:
            return True
        return bool(
            (o1 == 0 and on(a, b, c)) or (o2 == 0 and on(a, b, d))
            or (o3 == 0 and on(c, d, a)) or (o4 == 0 and on(c, d, b))
        )  # fmt: skip

    def along(s, u, w):  # two edges s - u and s - w overlap: collinear, the same way
        cross = (u[0] - s[0]) * (w[1] - s[1]) - (u[1] - s[1]) * (w[0] - s[0])
        return bool(cross == 0 and np.dot(u - s, w - s) > 0)

    def crossing(e, f):
        (s,) = set(e) & set(f) or {None}
        if s is None:
            return meet(*pos[e], *pos[f])
        (u,), (w,) = set(e) - {s}, set(f) - {s}
        return along(pos[s], pos[u], pos[w])

    naive = [
        [i, j]
        for i in range(len(edges))
        for j in range(i + 1, len(edges))
        if crossing(edges[i].tolist(), edges[j].tolist())
    ]
    assert any(set(edges[i]) & set(edges[j]) for i, j in naive)  # overlaps at a shared end
    assert edge_crossings(edges, pos).tolist() == naive


@pytest.mark.parametrize("seed", range(3))
def test_planar_faces_of_a_thinned_triangulation_leave_only_pinched_faces_open(seed):
    """Euler: on a planar drawing every bounded face is filled except those whose boundary
    touches itself, so beta_1 counts those; dead ends and several components included."""
    rng = np.random.default_rng(seed)
    pos = rng.random((40, 2))
    tri = Delaunay(pos).simplices
    edges = np.unique(np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]),
                              axis=1), axis=0)  # fmt: skip
    edges = edges[rng.random(len(edges)) < 0.55]
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert skipped["set_aside"].size == 0 and skipped["crossings"] == 0
    assert _harmonic(edges, faces, 40) == len(skipped["pinched"])


def test_collinear_edges_along_a_common_stretch_cross_whether_or_not_they_share_an_end():
    line = np.array([[0, 0], [1, 0], [2, 0], [3, 0]], dtype=float)
    assert edge_crossings([[0, 2], [0, 1]], line).tolist() == [[0, 1]]  # a shared end
    assert edge_crossings([[0, 2], [1, 3]], line).tolist() == [[0, 1]]  # none shared
    assert edge_crossings([[0, 1], [1, 2]], line).tolist() == []  # end to end: a path
    assert edge_crossings([[0, 1], [2, 3]], line).tolist() == []  # on one line, apart
    # a block whose lower side 0 - 1 - 2 is drawn twice, once as the edge 0 - 2 over
    # node 1: the cycle 0 - 1 - 2 of zero area was traced as an outer face, a hole
    # nobody reported; now 0 - 2 crosses both halves and is set aside, its cycle said
    pos = np.array([[0, 0], [1, 0], [2, 0], [2, 2], [0, 2]], dtype=float)
    edges = [[0, 1], [1, 2], [2, 3], [3, 4], [0, 4], [0, 2]]
    assert edge_crossings(edges, pos).tolist() == [[0, 5], [1, 5]]
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert faces == [[0, 1, 2, 3, 4]]
    assert skipped["set_aside"].tolist() == [[0, 2]]
    assert skipped["crossings"] == skipped["overlaps"] == 2
    assert skipped["nodes_on_edges"].tolist() == [[1, 5]]  # node 1 inside row 5, (0, 2)
    assert _harmonic(edges, faces, 5) == len(skipped["set_aside"]) == 1


def test_a_node_inside_an_edge_is_reported():
    # a block 0 1 2 3; node 4 on its lower side, a street 4 - 2 from it but the side not
    # split there (a T-junction); node 5 on its left side, with no street at all
    pos = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 0], [0, 1]], dtype=float)
    edges = [[0, 1], [1, 2], [2, 3], [0, 3], [2, 4]]
    assert edge_crossings(edges, pos).tolist() == [[0, 4]]  # 4 - 2 touches 0 - 1 at 4
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert skipped["nodes_on_edges"].tolist() == [[4, 0], [5, 3]]
    assert skipped["set_aside"].tolist() == [[2, 4]]  # the longer of the two
    assert skipped["crossings"] == 1 and skipped["overlaps"] == 0
    assert faces == [[0, 1, 2, 3]]


def _corner_drawing():
    """A 4 x 4 grid without its inner 2 x 2 nodes and with a triangle in a corner: faces
    of 3 and 13 nodes, a node on no face."""
    edges, pos = street_grid(4)
    hole = {5, 6, 9, 10}
    return [e for e in edges if not set(e) & hole] + [[0, 5], [5, 1]], np.asarray(pos, float)


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e-320])
def test_faces_do_not_depend_on_the_scale_or_offset_of_the_coordinates(scale):
    edges, pos = _corner_drawing()
    faces, skipped = planar_faces(edges, pos, return_skipped=True)
    assert [len(f) for f in faces] == [3, 13]
    # 1e300: the products of the turns overflowed (the outer face was filled); 1e-300 and
    # 1e-320 (subnormal): they underflowed to zero (no face); both exact here, the
    # coordinates being small integers times the scale
    for moved in (pos * scale, pos + 1e6, pos * scale + 3 * scale):
        assert planar_faces(edges, moved) == faces
        assert edge_crossings([*edges, [0, 15]], moved).tolist() == \
            edge_crossings([*edges, [0, 15]], pos).tolist() != []  # fmt: skip
    # areas in the units of `pos`: 0.5 and 9 squared units
    for s in (1e150, 1e-150):
        got, left = planar_faces(edges, pos * s, max_area=2.0 * s * s, return_skipped=True)
        assert got == [faces[0]] and left["too_large"] == [faces[1]]


@pytest.mark.parametrize("seed", range(2))
def test_a_random_drawing_has_the_same_faces_at_any_scale(seed):
    rng = np.random.default_rng(seed)
    pos = rng.random((30, 2))
    tri = np.sort(Delaunay(pos).simplices, axis=1)
    edges = np.unique(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), axis=0)
    faces = planar_faces(edges, pos)
    assert len(faces) == len(tri)
    for moved in (pos * 1e300, pos * 1e-300, pos + 1e6, pos * 1e200 - 1e200):
        assert planar_faces(edges, moved) == faces
