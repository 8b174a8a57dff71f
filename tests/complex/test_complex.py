import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from topo_contrastive import ComplexOperators


def square_with_diagonal():
    # 0-1-2-3 square with diagonal (0, 2); triangle (0, 1, 2) filled, (0, 2, 3) empty.
    edges = [[2, 3], [0, 1], [1, 2], [0, 3], [2, 0]]
    return ComplexOperators.from_simplices(edges, [[2, 1, 0]])


def test_exact_operators_on_hand_built_complex():
    ops = square_with_diagonal()
    assert ops.edges.tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]]
    assert ops.triangles.tolist() == [[0, 1, 2]]
    expected_b1 = np.array(
        [[-1, -1, -1, 0, 0], [1, 0, 0, -1, 0], [0, 1, 0, 1, -1], [0, 0, 1, 0, 1]], dtype=float
    )
    np.testing.assert_array_equal(ops.B1.toarray(), expected_b1)
    # boundary of [0,1,2] = [1,2] - [0,2] + [0,1]
    np.testing.assert_array_equal(ops.B2.toarray().ravel(), [1, -1, 0, 1, 0])
    np.testing.assert_array_equal((ops.B1 @ ops.B2).toarray(), 0)
    np.testing.assert_array_equal(ops.L_down.toarray(), expected_b1.T @ expected_b1)
    b2 = ops.B2.toarray()
    np.testing.assert_array_equal(ops.L_up.toarray(), b2 @ b2.T)
    np.testing.assert_array_equal(ops.L1.toarray(), expected_b1.T @ expected_b1 + b2 @ b2.T)
    np.testing.assert_array_equal(ops.L0.toarray(), expected_b1 @ expected_b1.T)
    np.testing.assert_array_equal(ops.L2.toarray(), [[3.0]])


def test_matches_toponetx_order_and_signs():
    tnx = pytest.importorskip("toponetx")
    rng = np.random.default_rng(0)
    pts = rng.random((30, 2))
    from scipy.spatial import Delaunay

    tri = Delaunay(pts).simplices
    sc = tnx.SimplicialComplex([list(map(int, t)) for t in tri])
    a = ComplexOperators.from_toponetx(sc)
    edges = np.array([list(e) for e in sc.skeleton(1)])
    b = ComplexOperators.from_simplices(edges[::-1], tri)
    assert (a.B1 != b.B1).nnz == 0
    assert (a.B2 != b.B2).nnz == 0
    np.testing.assert_array_equal(a.B1.toarray(), sc.incidence_matrix(1).toarray())
    np.testing.assert_array_equal(a.B2.toarray(), sc.incidence_matrix(2).toarray())


def test_from_incidence_keeps_order_and_accepts_torch():
    ops = square_with_diagonal()
    b1 = torch.tensor(ops.B1.toarray())
    b2 = torch.tensor(ops.B2.toarray()).to_sparse()
    c = ComplexOperators.from_incidence(b1, b2)
    assert (c.B1 != ops.B1).nnz == 0 and (c.B2 != ops.B2).nnz == 0
    # reversed columns and orientation are kept as given
    perm = [4, 3, 2, 1, 0]
    b1r = -ops.B1.toarray()[:, perm]
    b2r = -ops.B2.toarray()[perm]
    r = ComplexOperators.from_incidence(sp.csr_matrix(b1r), b2r)
    np.testing.assert_array_equal(r.B1.toarray(), b1r)
    assert r.edges.tolist() == [[3, 2], [2, 1], [3, 0], [2, 0], [1, 0]]
    col, sign = r.edge_lookup(2, 3)
    assert int(col) == 0 and float(sign) == -1.0


def test_complex_without_triangles():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2]])
    assert ops.B2.shape == (2, 0)
    assert ops.L_up.nnz == 0 and ops.L_up.shape == (2, 2)
    assert ops.operator("L_up").to_dense().abs().sum() == 0
    tnx = pytest.importorskip("toponetx")
    t = ComplexOperators.from_toponetx(tnx.SimplicialComplex([[0, 1], [1, 2]]))
    assert t.num_triangles == 0 and t.L_up.shape == (2, 2)


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_operators(layout, dtype):
    ops = square_with_diagonal()
    for name in ["B1", "B2", "L0", "L_down", "L_up", "L1", "L2"]:
        t = ops.operator(name, dtype=dtype, layout=layout)
        assert t.layout == layout and t.dtype == dtype
        np.testing.assert_array_equal(t.to_dense().numpy(), getattr(ops, name).toarray())
    ld, lu = ops.laplacians(dtype=torch.float64)
    assert ld.is_sparse and lu.is_sparse


def test_edge_lookup_and_path_flow():
    ops = square_with_diagonal()
    col, sign = ops.edge_lookup([0, 2, 3], [1, 0, 2])
    assert col.tolist() == [0, 1, 4] and sign.tolist() == [1.0, -1.0, -1.0]
    # 3 -> 2 -> 0 -> 1 -> 2 -> 0 traverses (0,2) backwards twice
    flow = ops.path_to_flow([3, 2, 0, 1, 2, 0], dtype=torch.float64)
    assert flow.tolist() == [1.0, -2.0, 0.0, 1.0, -1.0]
    div = ops.divergence(flow)
    assert torch.nonzero(div).ravel().tolist() == [0, 3]


def test_bad_input_messages():
    with pytest.raises(ValueError, match="face \\[0, 2\\].*not in `edges`"):
        ComplexOperators.from_simplices([[0, 1], [1, 2]], [[0, 1, 2]])
    with pytest.raises(ValueError, match="self-loop"):
        ComplexOperators.from_simplices([[0, 0]])
    with pytest.raises(ValueError, match="twice"):
        ComplexOperators.from_simplices([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="shape \\[n, 2\\]"):
        ComplexOperators.from_simplices([[0, 1, 2]])
    with pytest.raises(TypeError, match="integer"):
        ComplexOperators.from_simplices([[0.5, 1]])
    ops = square_with_diagonal()
    with pytest.raises(ValueError, match="column 0 is unsigned"):
        ComplexOperators.from_incidence(np.abs(ops.B1.toarray()))
    with pytest.raises(ValueError, match="shape mismatch"):
        ComplexOperators.from_incidence(ops.B1, np.ones((3, 1)))
    bad_b2 = ops.B2.toarray().copy()
    bad_b2[0] *= -1
    with pytest.raises(ValueError, match="B1 @ B2 != 0"):
        ComplexOperators.from_incidence(ops.B1, bad_b2)
    wrong_faces = np.zeros((5, 1))
    wrong_faces[[0, 2, 4], 0] = [1, -1, 1]
    with pytest.raises(ValueError, match="do not form the boundary"):
        ComplexOperators.from_incidence(ops.B1, wrong_faces)
    with pytest.raises(ValueError, match="step 1 of the path, 1 -> 3, is not an edge"):
        ops.path_to_flow([0, 1, 3])
    with pytest.raises(ValueError, match="not an edge"):
        ops.edge_lookup(1, 3)
    with pytest.raises(ValueError, match="must be one of"):
        ops.operator("L4")
    with pytest.raises(TypeError):
        ComplexOperators(ops.B1, ops.B2)
    with pytest.raises(TypeError, match="toponetx"):
        ComplexOperators.from_toponetx([[0, 1]])


def test_large_construction_is_vectorised():
    from scipy.spatial import Delaunay

    pts = np.random.default_rng(1).random((20000, 2))
    tri = Delaunay(pts).simplices
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(pairs, 1), axis=0)
    ops = ComplexOperators.from_simplices(edges, tri)
    assert ops.num_edges == len(edges) and ops.num_triangles == len(tri)
    assert abs(ops.B1 @ ops.B2).sum() == 0


def two_tetrahedra():
    """Two solid tetrahedra sharing the triangle (1, 2, 3): nodes 0..4."""
    tets = [[0, 1, 2, 3], [1, 2, 3, 4]]
    tris = sorted({tuple(sorted(f)) for t in tets for f in itertools.combinations(t, 3)})
    edges = sorted({tuple(sorted(e)) for t in tris for e in itertools.combinations(t, 2)})
    return ComplexOperators.from_simplices(edges, tris, tetrahedra=tets[::-1])


def test_tetrahedra_from_simplices_exact_signs():
    ops = two_tetrahedra()
    assert ops.sizes == (5, 9, 7, 2) and ops.dim == 3
    assert ops.tetrahedra.tolist() == [[0, 1, 2, 3], [1, 2, 3, 4]]
    tris = [tuple(t) for t in ops.triangles.tolist()]
    b3 = ops.B3.toarray()
    # boundary of [a,b,c,d] = [b,c,d] - [a,c,d] + [a,b,d] - [a,b,c]
    for col, (a, b, c, d) in enumerate(ops.tetrahedra.tolist()):
        expected = np.zeros(len(tris))
        for face, sign in (((b, c, d), 1), ((a, c, d), -1), ((a, b, d), 1), ((a, b, c), -1)):
            expected[tris.index(face)] = sign
        np.testing.assert_array_equal(b3[:, col], expected)
    assert abs(ops.B2 @ ops.B3).sum() == 0
    np.testing.assert_array_equal(ops.L3.toarray(), b3.T @ b3)
    np.testing.assert_array_equal(ops.L3.toarray(), [[4.0, -1.0], [-1.0, 4.0]])
    b2 = ops.B2.toarray()
    np.testing.assert_array_equal(ops.L2.toarray(), b2.T @ b2 + b3 @ b3.T)
    assert repr(ops).endswith("num_triangles=7, num_tetrahedra=2)")
    assert ops.operator("B3", dtype=torch.float64).to_dense().numpy().tolist() == b3.tolist()


def test_tetrahedra_match_toponetx():
    tnx = pytest.importorskip("toponetx")
    sc = tnx.SimplicialComplex([[0, 1, 2, 3], [1, 2, 3, 4], [4, 5, 6]])
    a = ComplexOperators.from_toponetx(sc)
    np.testing.assert_array_equal(a.B3.toarray(), sc.incidence_matrix(3).toarray())
    np.testing.assert_array_equal(a.B2.toarray(), sc.incidence_matrix(2).toarray())
    tets = [sorted(s) for s in sc.skeleton(3)]
    b = ComplexOperators.from_simplices(
        [sorted(e) for e in sc.skeleton(1)], [sorted(t) for t in sc.skeleton(2)], tetrahedra=tets
    )
    assert (a.B3 != b.B3).nnz == 0
    np.testing.assert_array_equal(
        a.hodge_laplacian(2).toarray(), sc.hodge_laplacian_matrix(2).toarray()
    )


def test_from_incidence_with_b3_and_reoriented_triangles():
    ops = two_tetrahedra()
    flip = np.diag([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0])  # re-orient triangles 1 and 4
    c = ComplexOperators.from_incidence(ops.B1, ops.B2 @ flip, flip @ ops.B3.toarray())
    assert c.num_tetrahedra == 2 and c.tetrahedra.tolist() == ops.tetrahedra.tolist()
    assert abs(c.B2 @ c.B3).sum() == 0


def test_bad_tetrahedra_and_ranks():
    ops = two_tetrahedra()
    edges, tris = ops.edges, ops.triangles
    with pytest.raises(ValueError, match=r"tetrahedron \[0, 1, 2, 4\] has the face \[0, 2, 4\]"):
        ComplexOperators.from_simplices(edges, tris, tetrahedra=[[0, 1, 2, 4]])
    with pytest.raises(ValueError, match="repeats a node"):
        ComplexOperators.from_simplices(edges, tris, tetrahedra=[[0, 1, 2, 2]])
    with pytest.raises(ValueError, match=r"contains the tetrahedron \[0, 1, 2, 3\] twice"):
        ComplexOperators.from_simplices(edges, tris, tetrahedra=[[0, 1, 2, 3], [3, 2, 1, 0]])
    with pytest.raises(ValueError, match=r"shape \[n, 4\]"):
        ComplexOperators.from_simplices(edges, tris, tetrahedra=[[0, 1, 2]])
    b3 = ops.B3.toarray()
    bad = b3.copy()
    bad[0, 0] = -bad[0, 0]
    with pytest.raises(ValueError, match="B2 @ B3 != 0 at column 0 of `B3`"):
        ComplexOperators.from_incidence(ops.B1, ops.B2, bad)
    with pytest.raises(ValueError, match="`B3` column 0 has 3 non-zeros"):
        missing_face = np.where(np.arange(7)[:, None] == 0, 0, b3)
        ComplexOperators.from_incidence(ops.B1, ops.B2, missing_face)
    with pytest.raises(ValueError, match="`B2` has 7 columns .* `B3` has 6 rows"):
        ComplexOperators.from_incidence(ops.B1, ops.B2, b3[:6])
    with pytest.raises(ValueError, match="`B3` needs `B2`"):
        ComplexOperators.from_incidence(ops.B1, None, b3)
    graph = ComplexOperators.from_simplices([[0, 1], [1, 2]])
    assert graph.dim == 1
    with pytest.raises(ValueError, match=r"`rank` = 2 is not a rank of this complex: it has no "
                       r"triangles \(N2 = 0; sizes N0..N3 = \(3, 2, 0, 0\)\)"):
        graph.check_rank(2)
    with pytest.raises(ValueError, match="must lie in 0..3"):
        graph.check_rank(-1)
    with pytest.raises(TypeError, match="must be an int"):
        graph.down_laplacian(1.0)
    with pytest.raises(ValueError, match="not a rank of this complex"):
        graph.laplacians(rank=2)
    assert graph.up_laplacian(1).nnz == 0 and graph.num_simplices(3) == 0


def test_path_to_flow_takes_the_toponetx_complex_own_node_labels():
    """String labels (and integer labels that are not 0 .. N0 - 1) of a TopoNetX complex: the
    path's flow equals the one of the same walk in rows of B1, with the sign of each edge."""
    import toponetx as tnx

    sc = tnx.SimplicialComplex([["a", "b", "c"], ["c", "d"], ["a", "d"]])
    ops = ComplexOperators.from_toponetx(sc)
    assert ops.node_labels == ("a", "b", "c", "d")
    rows = ComplexOperators.from_incidence(ops.B1, ops.B2)
    assert rows.node_labels is None
    walk = ["a", "b", "c", "d", "a"]
    want = rows.path_to_flow([ops.node_labels.index(v) for v in walk])
    torch.testing.assert_close(ops.path_to_flow(walk), want)
    # by hand: edges (a,b) (a,c) (a,d) (b,c) (c,d); d -> a runs against (a, d)
    assert ops.path_to_flow(walk).tolist() == [1.0, 0.0, -1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"node 1 of the path, 'x', is not a node label"):
        ops.path_to_flow(["a", "x"])
    with pytest.raises(ValueError, match=r"step 0 of the path, 'b' -> 'd', is not an edge"):
        ops.path_to_flow(["b", "d"])
    sparse = ComplexOperators.from_toponetx(tnx.SimplicialComplex([[10, 20, 30], [30, 40]]))
    assert sparse.path_to_flow([10, 20, 30, 40]).tolist() == [1.0, 0.0, 1.0, 1.0]
    assert sparse.path_to_flow(torch.tensor([40, 30])).tolist() == [0.0, 0.0, 0.0, -1.0]


def test_laplacians_cached_per_dtype_and_rank_and_exact():
    ops = square_with_diagonal()
    L_down, L_up = ops.laplacians()
    # the same tensors on every call (the layers' operator cache is keyed by them)
    assert ops.laplacians()[0] is L_down and ops.laplacians(device="cpu")[1] is L_up
    d64, u64 = ops.laplacians(dtype=torch.float64)
    assert d64.dtype == torch.float64 and d64 is not L_down
    np.testing.assert_array_equal(d64.to_dense().numpy(), (ops.B1.T @ ops.B1).toarray())
    np.testing.assert_array_equal(u64.to_dense().numpy(), (ops.B2 @ ops.B2.T).toarray())
    L0_down, L0_up = ops.laplacians(rank=0)
    assert ops.laplacians(rank=0)[1] is L0_up and L0_up.shape == (ops.num_nodes,) * 2
