"""Cell complexes: 2-cells of any length >= 3 (squares, pentagons, hexagons).

Exact values on hand-built complexes (dimensions of the three Hodge subspaces, incidence
entries, node cycles), projectors against dense ones from their definition (paper eq. 1:
``P_G = B1^T L0^+ B1``, ``P_C = B2 L2^+ B2^T``), re-orienting edges and 2-cells, TopoNetX's
``CellComplex``, and the bad inputs of a 2-cell's boundary.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import toponetx as tnx
import torch

from tests._cell_complexes import (
    cycle_edges,
    hexagon,
    random_planar_cell_complex,
    square_annulus,
    square_cylinder,
    square_pentagon_loop,
)
from topo_contrastive import ComplexOperators, HodgeDecomposition


def dense_projectors(ops: ComplexOperators) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    B1, B2 = ops.B1.toarray(), ops.B2.toarray()
    PG = B1.T @ np.linalg.pinv(B1 @ B1.T) @ B1
    PC = B2 @ np.linalg.pinv(B2.T @ B2) @ B2.T if ops.num_faces else np.zeros((ops.num_edges,) * 2)
    return PG, PC, np.eye(ops.num_edges) - PG - PC


@pytest.mark.parametrize(
    ("make", "sizes", "dims"),
    [
        (hexagon, (6, 6, 1), {"gradient": 5, "curl": 1, "harmonic": 0}),
        (square_annulus, (8, 12, 4), {"gradient": 7, "curl": 4, "harmonic": 1}),
        (square_cylinder, (8, 12, 4), {"gradient": 7, "curl": 4, "harmonic": 1}),
        (square_pentagon_loop, (9, 11, 2), {"gradient": 8, "curl": 2, "harmonic": 1}),
    ],
)
@pytest.mark.parametrize("backend", ["exact", "iterative"])
def test_hand_built_cell_complexes(make, sizes, dims, backend):
    ops = make()
    assert ops.sizes[:3] == sizes and not ops.is_simplicial
    assert abs(ops.B1 @ ops.B2).max() == 0
    hodge = HodgeDecomposition(ops, backend=backend)
    assert hodge.dims == dims
    PG, PC, PH = dense_projectors(ops)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((5, ops.num_edges)))
    parts = hodge(x)
    for got, P in zip(parts, (PG, PC, PH), strict=True):
        torch.testing.assert_close(got, x @ torch.from_numpy(P), rtol=0, atol=1e-9)
    blocks = hodge.projector_blocks([np.arange(ops.num_edges)], dtype=torch.float64)
    for name, P in zip(("gradient", "curl", "harmonic"), (PG, PC, PH), strict=True):
        torch.testing.assert_close(blocks[name][0], torch.from_numpy(P), rtol=0, atol=1e-9)


def test_square_incidence_and_node_cycles():
    sq = ComplexOperators.from_cells([[0, 1], [1, 2], [2, 3], [0, 3]], [[0, 1, 2, 3]])
    # edges (0,1), (0,3), (1,2), (2,3): the cycle 0 -> 1 -> 2 -> 3 -> 0 runs (0,3) backwards
    assert sq.B2.toarray().ravel().tolist() == [1.0, -1.0, 1.0, 1.0]
    assert sq.faces == [[0, 1, 2, 3]] and sq.face_sizes.tolist() == [4]
    turned = ComplexOperators.from_cells(sq.edges, [[0, 3, 2, 1]])  # the other way round
    assert (turned.B2 != -sq.B2).nnz == 0 and turned.faces == [[0, 3, 2, 1]]
    with pytest.raises(ValueError, match="num_faces"):
        _ = sq.num_triangles
    with pytest.raises(ValueError, match="faces"):
        _ = sq.triangles
    assert "num_faces=1" in repr(sq)


def test_node_cycles_start_at_the_smallest_node_and_follow_the_orientation():
    ops = square_pentagon_loop()
    assert ops.faces == [[0, 1, 2, 3], [1, 4, 5, 6, 2]]
    # reading B2 back: consecutive nodes are the edges with the cycle's sign
    for f, cycle in enumerate(ops.faces):
        col = ops.B2.tocsc()[:, f]
        for u, v in cycle_edges(cycle):
            e, sign = ops.edge_lookup(u, v)
            assert col[int(e), 0] == sign


def test_triangles_of_a_cell_complex_are_a_simplicial_complex():
    tri = [[0, 1, 2], [1, 2, 3]]
    edges = [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]]
    cells = ComplexOperators.from_cells(edges, tri)
    simp = ComplexOperators.from_simplices(edges, tri)
    assert cells.is_simplicial and cells.triangles.tolist() == simp.triangles.tolist()
    assert cells.fingerprint() == simp.fingerprint()
    assert cells.faces == [[0, 1, 2], [1, 2, 3]]


def test_fingerprint_tells_cell_complexes_apart():
    a, b = square_annulus(), square_cylinder()
    assert a.fingerprint() == b.fingerprint()  # the same cells on the same edges
    flipped = ComplexOperators.from_incidence(a.B1, a.B2 @ sp.diags([1, 1, 1, -1]))
    assert flipped.fingerprint() != a.fingerprint()  # a re-oriented 2-cell
    fewer = ComplexOperators.from_incidence(a.B1, a.B2[:, :3])
    assert fewer.fingerprint() != a.fingerprint()


def test_reorienting_edges_and_cells_conjugates_the_projectors():
    ops = square_pentagon_loop()
    rng = np.random.default_rng(1)
    s = rng.choice([-1.0, 1.0], ops.num_edges)
    t = rng.choice([-1.0, 1.0], ops.num_faces)
    turned = ComplexOperators.from_incidence(
        ops.B1 @ sp.diags(s), sp.diags(s) @ ops.B2 @ sp.diags(t)
    )
    for P, Q in zip(dense_projectors(ops), dense_projectors(turned), strict=True):
        np.testing.assert_allclose(Q, np.diag(s) @ P @ np.diag(s), atol=1e-12)
    x = torch.from_numpy(rng.standard_normal((2, ops.num_edges)))
    for a, b in zip(HodgeDecomposition(ops)(x), HodgeDecomposition(turned)(x * torch.from_numpy(s)),
                    strict=True):  # fmt: skip
        torch.testing.assert_close(b, a * torch.from_numpy(s), rtol=0, atol=1e-12)


def test_toponetx_cell_complex_with_a_square_a_pentagon_and_an_unfilled_loop():
    cc = tnx.CellComplex()
    cc.add_cell([0, 1, 2, 3], rank=2)
    cc.add_cell([1, 4, 5, 6, 2], rank=2)
    for u, v in ((3, 7), (7, 8), (8, 0)):
        cc.add_edge(u, v)
    ops = ComplexOperators.from_toponetx(cc)
    assert ops.sizes[:3] == (9, 11, 2)
    np.testing.assert_array_equal(ops.B2.toarray(), cc.incidence_matrix(2, signed=True).toarray())
    assert HodgeDecomposition(ops).dims["harmonic"] == 1
    assert sorted(map(sorted, ops.faces)) == [[0, 1, 2, 3], [1, 2, 4, 5, 6]]


def test_random_planar_cell_complexes_have_euler_characteristic_betti_numbers():
    for seed in range(5):
        rng = np.random.default_rng(seed)
        ops = random_planar_cell_complex(rng, 30, fill=0.7)
        dims = HodgeDecomposition(ops, backend="exact").dims
        # planar, connected: beta_0 = 1, beta_2 = 0 -> beta_1 = N1 - N0 + 1 - N2
        assert dims["harmonic"] == ops.num_edges - ops.num_nodes + 1 - ops.num_faces
        assert dims["curl"] == ops.num_faces
        assert (ops.face_sizes == 4).any()


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("column", "match"),
    [
        ("two", "column 0 has 2 non-zeros.*at least three"),
        ("value", "column 0 has entries.*\\+1 or -1"),
        ("open", "B1 @ B2 != 0 at column 0"),
        ("eight", "column 0 is not a simple cycle: node"),
        ("two_cycles", "column 0 is not a simple cycle.*2 separate cycles"),
    ],
)
def test_bad_2_cell_columns(column, match):
    ops = square_annulus()
    B2 = ops.B2.toarray()
    cell = B2[:, 0].copy()
    col = np.zeros(ops.num_edges)
    if column == "two":
        col[np.flatnonzero(cell)[:2]] = cell[np.flatnonzero(cell)[:2]]
    elif column == "value":
        col = cell * 2
    elif column == "open":
        col = B2[:, 0] + B2[:, 1]  # a hexagon around two trapezoids (the spoke cancels)
        col[np.flatnonzero(col)[0]] = 0  # a path of five edges: not closed
    elif column == "eight":
        grid = ComplexOperators.from_cells(
            [[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [2, 4]], None
        )
        bowtie = np.zeros(6)  # 0 -> 1 -> 2 -> 0 and 2 -> 3 -> 4 -> 2: twice through node 2
        for u, v in cycle_edges([0, 1, 2]) + cycle_edges([2, 3, 4]):
            e, sgn = grid.edge_lookup(u, v)
            bowtie[int(e)] = sgn
        with pytest.raises(ValueError, match=match):
            ComplexOperators.from_incidence(grid.B1, bowtie[:, None])
        return
    elif column == "two_cycles":
        outer = ComplexOperators.from_cells(
            cycle_edges([0, 1, 2]) + cycle_edges([3, 4, 5]), None
        )
        both = np.zeros(6)
        for cyc in ([0, 1, 2], [3, 4, 5]):
            for u, v in cycle_edges(cyc):
                e, sgn = outer.edge_lookup(u, v)
                both[int(e)] = sgn
        with pytest.raises(ValueError, match=match):
            ComplexOperators.from_incidence(outer.B1, both[:, None])
        return
    with pytest.raises(ValueError, match=match):
        ComplexOperators.from_incidence(ops.B1, col[:, None])


def test_repeated_2_cell_and_bad_node_cycles():
    ops = square_annulus()
    with pytest.raises(ValueError, match="columns 0 and 4 are the same 2-cell"):
        ComplexOperators.from_incidence(
            ops.B1, np.hstack([ops.B2.toarray(), -ops.B2[:, :1].toarray()])
        )
    edges = cycle_edges([0, 1, 2, 3])
    with pytest.raises(ValueError, match="entry 0 has 2 node"):
        ComplexOperators.from_cells(edges, [[0, 1]])
    with pytest.raises(ValueError, match="entry 0 .* repeats a node"):
        ComplexOperators.from_cells(edges, [[0, 1, 2, 1]])
    with pytest.raises(ValueError, match="steps from node 3 to node 1, which is not an edge"):
        ComplexOperators.from_cells(edges, [[1, 2, 3]])
    with pytest.raises(ValueError, match="same 2-cell"):
        ComplexOperators.from_cells(edges, [[0, 1, 2, 3], [1, 2, 3, 0]])
    with pytest.raises(TypeError, match="integer node ids"):
        ComplexOperators.from_cells(edges, [[0.5, 1, 2]])
    with pytest.raises(ValueError, match="num_nodes"):
        ComplexOperators.from_cells(edges, [[0, 1, 2, 3]], num_nodes=3)
    with pytest.raises(ValueError, match="tetrahedra .* simplicial complexes only"):
        ComplexOperators.from_incidence(ops.B1, ops.B2, np.ones((4, 1)))
    with pytest.raises(TypeError, match="SimplicialComplex or toponetx.CellComplex"):
        ComplexOperators.from_toponetx(tnx.CombinatorialComplex())


def test_toponetx_cell_complex_keeps_its_node_labels_and_paths_use_them():
    ops = ComplexOperators.from_toponetx(tnx.CellComplex([[5, 1, 9, 3]]))
    assert ops.node_labels == (1, 3, 5, 9)
    # edges in rows of B1: (1, 5), (1, 9), (3, 5), (3, 9), each oriented low -> high
    assert ops.edges.tolist() == [[0, 2], [0, 3], [1, 2], [1, 3]]
    assert ops.path_to_flow([5, 1]).tolist() == [-1.0, 0.0, 0.0, 0.0]
    assert ops.path_to_flow([5, 1, 9, 3, 5]).tolist() == [-1.0, 1.0, 1.0, -1.0]
    with pytest.raises(ValueError, match=r"step 0 of the path, 1 -> 3, is not an edge"):
        ops.path_to_flow([1, 3])
    with pytest.raises(ValueError, match="node 1 of the path, 0, is not a node label"):
        ops.path_to_flow([5, 0])


def test_toponetx_cell_complex_with_tuple_and_string_labels():
    import networkx as nx

    cc = tnx.CellComplex(nx.grid_2d_graph(2, 3))
    cc.add_cell([(0, 0), (0, 1), (1, 1), (1, 0)], rank=2)
    ops = ComplexOperators.from_toponetx(cc)
    assert ops.node_labels == ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2))
    # edges (0,0)-(0,1), (0,0)-(1,0), (0,1)-(0,2), (0,1)-(1,1), (0,2)-(1,2), (1,0)-(1,1), ...
    assert ops.path_to_flow([(0, 0), (0, 1), (1, 1)]).tolist() == [1, 0, 0, 1, 0, 0, 0]
    assert ops.path_to_flow([(1, 1), (1, 0), (0, 0)]).tolist() == [0, -1, 0, 0, 0, -1, 0]
    # a tuple label read back from an array arrives as a list
    assert ops.path_to_flow(np.array([(0, 1), (0, 0)])).tolist() == [-1, 0, 0, 0, 0, 0, 0]
    assert ops.faces == [[0, 1, 4, 3]]
    named = ComplexOperators.from_toponetx(tnx.CellComplex([["a", "b", "c", "d"]]))
    assert named.node_labels == ("a", "b", "c", "d")
    assert named.path_to_flow(["a", "b", "c"]).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert named.path_to_flow(["a", "d"]).tolist() == [0.0, 1.0, 0.0, 0.0]


def test_toponetx_labels_its_incidence_matrices_cannot_take():
    # a SimplicialComplex with tuple labels (TopoNetX: unhashable numpy.ndarray) and a
    # CellComplex with ints and strings (TopoNetX: '<' not supported) are built from their
    # lists: the same operators as the relabelled complex, paths in the labels
    labels = [(0, 0), (0, 1), (1, 1), (2, 2)]
    sc = tnx.SimplicialComplex([labels[:3], labels[2:], [labels[0], labels[3]]])
    ops = ComplexOperators.from_toponetx(sc)
    ints = ComplexOperators.from_toponetx(tnx.SimplicialComplex([[0, 1, 2], [2, 3], [0, 3]]))
    assert ops.node_labels == tuple(labels)
    for name in ("B1", "B2"):
        assert (abs(getattr(ops, name) - getattr(ints, name))).nnz == 0
    walk = [(0, 0), (0, 1), (1, 1), (2, 2), (0, 0)]
    assert ops.path_to_flow(walk).tolist() == ints.path_to_flow([0, 1, 2, 3, 0]).tolist()
    mixed = tnx.CellComplex([[0, "a", 1, "b"], [1, "c", "b"]])
    mixed.add_edge("c", 7)
    ops = ComplexOperators.from_toponetx(mixed)
    assert set(ops.node_labels) == {0, 1, 7, "a", "b", "c"} and ops.sizes[:3] == (6, 7, 2)
    assert abs(ops.B1 @ ops.B2).nnz == 0
    for f, cycle in enumerate(([0, "a", 1, "b"], [1, "c", "b"])):  # oriented along the cycle
        np.testing.assert_array_equal(ops.path_to_flow(cycle + cycle[:1]).numpy(),
                                      ops.B2[:, f].toarray().ravel())  # fmt: skip
    assert ops.path_to_flow(["c", 7]).abs().sum() == 1
    assert HodgeDecomposition(mixed).dims == {"gradient": 5, "curl": 2, "harmonic": 0}


def test_a_toponetx_2_cell_that_is_not_a_simple_cycle_is_refused():
    # TopoNetX's B2 cancels the back-and-forth 1 -> 2 -> 1: it used to become [0, 1, 3]
    cc = tnx.CellComplex([[0, 1, 2, 1, 3]], regular=False)
    with pytest.raises(ValueError, match=r"the 2-cell \[0, 1, 2, 1, 3\] of `complex` is not "
                       "a simple cycle"):  # fmt: skip
        ComplexOperators.from_toponetx(cc)
