import numpy as np
import pytest
import torch
from scipy.spatial import Delaunay
from threadpoolctl import threadpool_limits

import topo_contrastive.hodge._iterative as iterative_module
import topo_contrastive.hodge._linalg as blocks_module
import topo_contrastive.hodge._linalg as linalg_module
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.hodge import COMPONENTS
from topo_contrastive.hodge._iterative import EdgeIterative, cocycles, dual_forest
from topo_contrastive.hodge._linalg import group_nodes, use_schur

BACKENDS = ["exact", "iterative"]


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    # the matrices here are small: multi-threaded BLAS only spins (badly so on a busy machine)
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def delaunay_with_holes(n=200, seed=0, holes=((0.2, 0.4), (0.6, 0.8))):
    pts = np.random.default_rng(seed).random((n, 2))
    tri = Delaunay(pts).simplices
    inside = np.zeros(n, dtype=bool)
    for lo, hi in holes:
        inside |= ((pts > lo) & (pts < hi)).all(1)
    tri = tri[~inside[tri].any(1)]
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(pairs, 1), axis=0)
    return ComplexOperators.from_simplices(edges, tri, n)


def filled_disc():
    # hexagon around centre 0, all six triangles filled
    edges = [[0, i] for i in range(1, 7)] + [[i, i % 6 + 1] for i in range(1, 7)]
    tris = [[0, i, i % 6 + 1] for i in range(1, 7)]
    return ComplexOperators.from_simplices(edges, tris)


def annulus():
    # square 0-1-2-3 around a hole, outer square 4-5-6-7, ring of 8 triangles
    inner = [[0, 1], [1, 2], [2, 3], [0, 3]]
    outer = [[4, 5], [5, 6], [6, 7], [4, 7]]
    spokes = [[0, 4], [1, 5], [2, 6], [3, 7], [0, 5], [1, 6], [2, 7], [3, 4]]
    tris = [[0, 4, 5], [0, 1, 5], [1, 5, 6], [1, 2, 6], [2, 6, 7], [2, 3, 7], [3, 7, 4], [3, 0, 4]]
    return ComplexOperators.from_simplices(inner + outer + spokes, tris)


def hollow_tetrahedron():
    edges = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    return ComplexOperators.from_simplices(edges, [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "make, dims",
    [
        (filled_disc, {"gradient": 6, "curl": 6, "harmonic": 0}),
        (annulus, {"gradient": 7, "curl": 8, "harmonic": 1}),
        (hollow_tetrahedron, {"gradient": 3, "curl": 3, "harmonic": 0}),
        (lambda: delaunay_with_holes(), None),
    ],
)
def test_dimensions_equal_betti_numbers(make, dims, backend):
    ops = make()
    hodge = HodgeDecomposition(ops, backend=backend)
    if dims is None:  # two holes: beta_1 = 2
        assert hodge.dims["harmonic"] == 2
        b1, b2 = ops.B1.toarray(), ops.B2.toarray()
        assert hodge.dims["gradient"] == np.linalg.matrix_rank(b1)
        assert hodge.dims["curl"] == np.linalg.matrix_rank(b2)
    else:
        assert hodge.dims == dims


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_parts_on_hand_built_annulus(backend):
    ops = annulus()
    hodge = HodgeDecomposition(ops, backend=backend)
    # a pure gradient flow B1^T f
    f = torch.arange(8, dtype=torch.float64)
    grad_flow = torch.from_numpy(ops.B1.T @ f.numpy())
    parts = hodge(grad_flow)
    torch.testing.assert_close(parts.gradient, grad_flow, atol=1e-12, rtol=0)
    assert parts.curl.abs().max() < 1e-12 and parts.harmonic.abs().max() < 1e-12
    # a pure curl flow: boundary of one triangle
    curl_flow = torch.from_numpy(ops.B2.toarray()[:, 3])
    parts = hodge(curl_flow)
    torch.testing.assert_close(parts.curl, curl_flow, atol=1e-12, rtol=0)
    # the inner loop 0 -> 1 -> 2 -> 3 -> 0 has harmonic part = its projection on the
    # one-dimensional harmonic space; its remainder is orthogonal to the harmonic basis
    loop = ops.path_to_flow([0, 1, 2, 3, 0], dtype=torch.float64)
    parts = hodge(loop)
    u = hodge.basis("harmonic")[:, 0]
    torch.testing.assert_close(parts.harmonic, (u @ loop) * u, atol=1e-10, rtol=0)
    assert abs(float(u @ loop)) > 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_parts_orthogonal_and_sum_to_input(backend):
    ops = delaunay_with_holes(seed=1)
    hodge = HodgeDecomposition(ops, backend=backend)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(7, ops.num_edges, dtype=torch.float64, generator=gen)
    g, c, h = hodge(x)
    torch.testing.assert_close(g + c + h, x, atol=1e-12, rtol=0)
    scale = float((x * x).sum())
    for a, b in [(g, c), (g, h), (c, h)]:
        assert abs(float((a * b).sum())) < 1e-10 * scale
    # each part lies in its subspace
    assert np.abs(ops.B2.T @ g.numpy().T).max() < 1e-9  # gradients are curl-free
    assert np.abs(ops.B1 @ c.numpy().T).max() < 1e-9  # curls are divergence-free
    assert np.abs(ops.L1 @ h.numpy().T).max() < 1e-9  # harmonic: in ker L1


def test_backends_agree_and_auto_selects_by_size():
    ops = delaunay_with_holes(n=250, seed=2)
    exact = HodgeDecomposition(ops, backend="exact")
    iterative = HodgeDecomposition(ops, backend="iterative")
    small = annulus()
    assert HodgeDecomposition(small, max_exact_edges=small.num_edges).backend == "exact"
    assert HodgeDecomposition(small, max_exact_edges=small.num_edges - 1).backend == "iterative"
    x = torch.randn(4, ops.num_edges, dtype=torch.float64)
    for a, b in zip(exact(x), iterative(x), strict=True):
        assert float((a - b).norm() / x.norm()) < 1e-6
    supports = [torch.arange(12), torch.tensor([3, 500, 41, 7]), torch.tensor([], dtype=torch.long)]
    be, bi = exact.projector_blocks(supports), iterative.projector_blocks(supports)
    for k in COMPONENTS:
        for p, q in zip(be[k], bi[k], strict=True):
            assert p.shape == q.shape
            torch.testing.assert_close(p, q, atol=1e-9, rtol=0)


def test_projector_blocks_equal_dense_projectors():
    ops = annulus()
    hodge = HodgeDecomposition(ops, backend="exact")
    s = torch.tensor([2, 9, 0, 15])
    for k in COMPONENTS:
        u = hodge.basis(k)
        dense = u @ u.T
        torch.testing.assert_close(hodge.projector_block(s, k), dense[s][:, s])
    blocks = hodge.projector_blocks([s])
    total = sum(blocks[k][0] for k in COMPONENTS)
    torch.testing.assert_close(total, torch.eye(4, dtype=torch.float64))


def test_coordinates_match_projection_norms():
    ops = delaunay_with_holes(seed=3)
    hodge = HodgeDecomposition(ops, backend="exact")
    x = torch.randn(3, ops.num_edges)
    for k in COMPONENTS:
        coords = hodge.coordinates(x, k)
        assert coords.shape == (3, hodge.dims[k]) and coords.dtype == torch.float32
        norms = hodge.project(x, k).norm(dim=1)
        torch.testing.assert_close(coords.norm(dim=1), norms, rtol=1e-4, atol=1e-4)
    it = HodgeDecomposition(ops, backend="iterative")
    with pytest.raises(ValueError, match="needs the 'exact' backend"):
        it.coordinates(x, "gradient")
    assert it.coordinates(x, "harmonic").shape == (3, 2)


def test_complex_without_triangles_and_disconnected():
    # two disjoint triangles without faces: beta_0 = 2, beta_1 = 2
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [3, 5]])
    for backend in BACKENDS:
        hodge = HodgeDecomposition(ops, backend=backend)
        assert hodge.dims == {"gradient": 4, "curl": 0, "harmonic": 2}
        x = torch.randn(2, 6, dtype=torch.float64)
        parts = hodge(x)
        assert parts.curl.abs().max() == 0
        torch.testing.assert_close(sum(parts), x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_without_edges_and_empty_batches_give_empty_parts(backend):
    # three isolated nodes: every subspace has dimension 0, flows have N1 = 0 entries
    hodge = HodgeDecomposition(ComplexOperators.from_simplices([], num_nodes=3), backend=backend)
    assert hodge.dims == {"gradient": 0, "curl": 0, "harmonic": 0}
    for shape in [(0,), (4, 0), (0, 0)]:
        x = torch.zeros(shape, dtype=torch.float32)
        parts = hodge(x)
        assert all(p.shape == shape and p.dtype == torch.float32 for p in parts)
    assert hodge.coordinates(torch.zeros(2, 0), "harmonic").shape == (2, 0)
    assert hodge.project(torch.zeros(0), "curl").shape == (0,)
    # an empty batch on a complex with edges
    ops = annulus()
    parts = HodgeDecomposition(ops, backend=backend)(torch.zeros(0, ops.num_edges))
    assert all(p.shape == (0, ops.num_edges) for p in parts)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dtype_device_and_single_flow(backend):
    ops = annulus()
    hodge = HodgeDecomposition(ops, backend=backend)
    x = torch.randn(ops.num_edges, dtype=torch.float32)
    parts = hodge(x)
    assert all(p.shape == x.shape and p.dtype == torch.float32 for p in parts)
    ref = hodge(x.double())
    for p, r in zip(parts, ref, strict=True):
        torch.testing.assert_close(p.double(), r, atol=1e-6, rtol=0)
    xb = x.to(torch.bfloat16)
    parts = hodge(xb.unsqueeze(0))
    assert all(p.shape == (1, 16) and p.dtype == torch.bfloat16 for p in parts)


def test_bad_input():
    ops = annulus()
    hodge = HodgeDecomposition(ops)
    with pytest.raises(ValueError, match="NaN or inf"):
        hodge(torch.full((ops.num_edges,), float("nan")))
    with pytest.raises(ValueError, match="N1 = 16"):
        hodge(torch.zeros(3, 15))
    with pytest.raises(ValueError, match=r"\[N1\], \[N1, 1\], \[B, N1\]"):
        hodge(torch.zeros(2, 3, 16))
    with pytest.raises(TypeError, match="floating"):
        hodge(torch.zeros(16, dtype=torch.bool))
    with pytest.raises(ValueError, match="NaN or inf"):
        HodgeDecomposition(ops, backend="iterative")(torch.tensor([float("inf")] * 16))
    with pytest.raises(TypeError, match="floating"):
        hodge(torch.zeros(16, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        hodge(np.zeros(16))
    with pytest.raises(ValueError, match="`component`"):
        hodge.project(torch.zeros(16), "divergence")
    with pytest.raises(ValueError, match="`backend`"):
        HodgeDecomposition(ops, backend="svd")
    with pytest.raises(TypeError, match="ComplexOperators"):
        HodgeDecomposition(ops.B1)
    with pytest.raises(ValueError, match="outside"):
        hodge.projector_blocks([[0, 99]])
    with pytest.raises(ValueError, match="repeats"):
        hodge.projector_blocks([[1, 1]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_layouts_of_a_pyg_pipeline_give_parts_in_the_same_layout(backend):
    """[N1], [N1, 1], [B, N1], [B, N1, 1] and a PyG batch's [B * N1, 1] / [B * N1] (with the
    batch vector or num_graphs) all give the parts of the [B, N1] reference, laid out like
    the input."""
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader

    ops = annulus()
    hodge = HodgeDecomposition(ops, backend=backend)
    n1 = ops.num_edges
    x = torch.randn(3, n1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ref = hodge(x)  # [B, N1]
    cases = [
        (x[0], {}, [r[0] for r in ref]),
        (x[0].view(n1, 1), {}, [r[0].view(n1, 1) for r in ref]),
        (x.view(3, n1, 1), {}, [r.view(3, n1, 1) for r in ref]),
        (x.reshape(-1, 1), {"num_graphs": 3}, [r.reshape(-1, 1) for r in ref]),
        (x.reshape(-1), {"num_graphs": 3}, [r.reshape(-1) for r in ref]),
    ]
    for inp, kwargs, want in cases:
        got = hodge(inp, **kwargs)
        for g, w in zip(got, want, strict=True):
            assert g.shape == inp.shape and g.dtype == inp.dtype
            torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
    # a real DataLoader batch of Data(x_1=[N1, 1]) with its own batch vector
    data = [Data(x_1=x[i].view(n1, 1).float(), num_nodes=n1) for i in range(3)]
    batch = next(iter(DataLoader(data, batch_size=3)))
    got = hodge(batch.x_1, batch=batch.batch)
    assert got.harmonic.shape == (3 * n1, 1) and got.harmonic.dtype == torch.float32
    torch.testing.assert_close(got.harmonic.view(3, n1).double(), ref.harmonic, atol=1e-6, rtol=0)
    torch.testing.assert_close(
        hodge.project(batch.x_1, "curl", num_graphs=3).view(3, n1).double(), ref.curl,
        atol=1e-6, rtol=0,
    )
    coords = hodge.coordinates(batch.x_1, "harmonic", batch=batch.batch)  # one row per sample
    u = hodge.basis("harmonic")
    torch.testing.assert_close(coords.double(), x @ u, atol=1e-5, rtol=0)
    assert hodge.coordinates(x[0], "harmonic").shape == (u.shape[1],)


def test_batched_layout_errors_name_what_to_pass():
    ops = annulus()
    hodge = HodgeDecomposition(ops)
    n1 = ops.num_edges
    x = torch.zeros(2 * n1, 1)
    with pytest.raises(ValueError, match=r"32 rows = 2 x N1: .*pass `batch`.*`num_graphs`"):
        hodge(x)
    with pytest.raises(ValueError, match="not a multiple of the complex's N1 = 16"):
        hodge(torch.zeros(2 * n1 + 1, 1), num_graphs=2)
    with pytest.raises(ValueError, match="`num_graphs`=3 does not match"):
        hodge(x, num_graphs=3)
    with pytest.raises(TypeError, match="`num_graphs` must be an int"):
        hodge(x, num_graphs=2.0)
    interleaved = torch.arange(2).repeat(n1)  # not PyG's layout: samples interleaved
    with pytest.raises(ValueError, match="consecutive rows"):
        hodge(x, batch=interleaved)
    with pytest.raises(TypeError, match="integer tensor"):
        hodge(x, batch=torch.zeros(2 * n1))
    with pytest.raises(ValueError, match="not a PyG batch"):
        hodge(torch.zeros(2, n1), num_graphs=2)
    bad = torch.zeros(2 * n1, 1)
    bad[5] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        hodge(bad, num_graphs=2)


def _paths(ops, num, seed):
    """Edge supports of random self-avoiding walks of 2-8 edges."""
    rng = np.random.default_rng(seed)
    adj = ops.L0.tocsr()
    out = []
    for _ in range(num):
        walk = [int(rng.integers(ops.num_nodes))]
        for _ in range(int(rng.integers(2, 9))):
            nbrs = [v for v in adj.indices[adj.indptr[walk[-1]] : adj.indptr[walk[-1] + 1]]
                    if v not in walk]
            if not nbrs:
                break
            walk.append(int(nbrs[int(rng.integers(len(nbrs)))]))
        cols, _ = ops.edge_lookup(np.array(walk[:-1]), np.array(walk[1:]))
        out.append(torch.as_tensor(np.atleast_1d(cols)))
    return out


def _assert_blocks_close(a, b, atol=1e-9):
    for k in COMPONENTS:
        assert len(a[k]) == len(b[k])
        for p, q in zip(a[k], b[k], strict=True):
            assert p.shape == q.shape
            torch.testing.assert_close(p, q, atol=atol, rtol=0)


def test_exact_bases_are_grouped_eigenvectors_of_L1():
    ops = delaunay_with_holes(n=120, seed=5)
    hodge = HodgeDecomposition(ops, backend="exact")
    u = {k: hodge.basis(k).numpy() for k in COMPONENTS}
    full = np.concatenate([u[k] for k in COMPONENTS], axis=1)
    assert full.shape == (ops.num_edges, ops.num_edges)
    np.testing.assert_allclose(full.T @ full, np.eye(ops.num_edges), atol=1e-10)
    l1 = ops.L1.toarray()
    for k in ("gradient", "curl"):
        lam = u[k].T @ l1 @ u[k]  # diagonal: eigenvectors of L1
        np.testing.assert_allclose(lam, np.diag(np.diag(lam)), atol=1e-9)
        assert np.diag(lam).min() > 1e-6
    assert np.abs(l1 @ u["harmonic"]).max() < 1e-10
    assert np.abs(ops.B2.T @ u["gradient"]).max() < 1e-10  # gradient: curl-free
    assert np.abs(ops.B1 @ u["curl"]).max() < 1e-10  # curl: divergence-free


@pytest.mark.parametrize("group_nodes", [4096, 12])
def test_projector_blocks_schur_path_equals_solves_and_exact(monkeypatch, group_nodes):
    ops = delaunay_with_holes(n=200, seed=6)
    supports = _paths(ops, 16, seed=0)
    # edges at node 0 (a grounded node), a single edge, an empty set, a long set
    supports += [torch.tensor([0, 1]), torch.tensor([17]), torch.tensor([], dtype=torch.long),
                 torch.arange(40, 140)]
    exact = HodgeDecomposition(ops, backend="exact").projector_blocks(supports)
    iterative = HodgeDecomposition(ops, backend="iterative")
    monkeypatch.setattr(blocks_module, "_GROUP_MIN_NODES", group_nodes)
    monkeypatch.setattr(blocks_module, "_GROUP_MAX_NODES", group_nodes)
    monkeypatch.setattr(blocks_module, "_BLOCKS_METHOD", "schur")
    schur = iterative.projector_blocks(supports)
    monkeypatch.setattr(blocks_module, "_BLOCKS_METHOD", "solves")
    solves = iterative.projector_blocks(supports)
    _assert_blocks_close(schur, solves)
    _assert_blocks_close(schur, exact)


def test_blocks_cost_model_prefers_schur_for_many_nodes_on_large_factors():
    nnz = 20_000_000  # about the L0 factor of a 1,000,000-edge Delaunay complex
    assert use_schur(nnz, 1500) and not use_schur(nnz, 10)
    assert 256 <= group_nodes(nnz) <= 4096
    nnz = 100_000  # small complex: solves are cheap
    assert not use_schur(nnz, 1500)
    # the iterative backend asks the cost model with its own L0 factor
    backend = HodgeDecomposition(annulus(), backend="iterative")._backend
    assert backend._lu0.nnz > 0 and isinstance(backend, EdgeIterative)


def test_harmonic_basis_without_l2_factorisation(monkeypatch):
    ops = delaunay_with_holes(n=300, seed=7)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(5, ops.num_edges, dtype=torch.float64, generator=gen)

    def no_l2(self):
        raise AssertionError("L2 was factorised")

    with monkeypatch.context() as m:
        m.setattr(EdgeIterative, "_factor_l2", no_l2)
        sweep = HodgeDecomposition(ops, backend="iterative")  # cocycles by the dual sweep
    assert sweep.dims["harmonic"] == 2 and sweep._backend._l2 is None
    monkeypatch.setattr(iterative_module, "dual_forest", lambda ops: None)
    with_l2 = HodgeDecomposition(ops, backend="iterative")  # harmonic parts via L2 solves
    h1, h2 = sweep.basis("harmonic").numpy(), with_l2.basis("harmonic").numpy()
    np.testing.assert_allclose(h1 @ h1.T, h2 @ h2.T, atol=1e-12)
    np.testing.assert_allclose(h1.T @ h1, np.eye(2), atol=1e-12)
    for a, b in zip(sweep(x), with_l2(x), strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_cocycles_of_the_sweep_are_exact():
    ops = delaunay_with_holes(n=200, seed=8)
    forest = dual_forest(ops)
    z = cocycles(ops, forest, 6, np.random.default_rng(0))
    assert np.abs(ops.B2.T @ z).max() == 0  # integer arithmetic: exactly curl-free
    assert np.linalg.matrix_rank(z) == 6


def test_non_manifold_and_closed_complexes_use_l2(monkeypatch):
    # three triangles on the edge (0, 1) (not a surface) and an unfilled square 2-5-6-7
    edges = [[0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [0, 4], [1, 4],
             [2, 5], [5, 6], [6, 7], [2, 7]]
    book = ComplexOperators.from_simplices(edges, [[0, 1, 2], [0, 1, 3], [0, 1, 4]])
    calls = []
    original = EdgeIterative._factor_l2
    monkeypatch.setattr(
        EdgeIterative, "_factor_l2", lambda self: calls.append(1) or original(self)
    )
    for ops, beta1 in [(book, 1), (hollow_tetrahedron(), 0)]:
        calls.clear()
        iterative = HodgeDecomposition(ops, backend="iterative")
        assert calls, "expected the L2 route"
        exact = HodgeDecomposition(ops, backend="exact")
        assert iterative.dims == exact.dims and exact.dims["harmonic"] == beta1
        x = torch.randn(3, ops.num_edges, dtype=torch.float64)
        for a, b in zip(exact(x), iterative(x), strict=True):
            torch.testing.assert_close(a, b, atol=1e-9, rtol=0)
        s = [torch.arange(ops.num_edges), torch.tensor([0, 3])]
        _assert_blocks_close(exact.projector_blocks(s), iterative.projector_blocks(s))


def test_large_beta1_without_stored_harmonic_basis(monkeypatch):
    monkeypatch.setattr(iterative_module, "_MAX_HARMONIC_BASIS_ENTRIES", 0)
    x_gen = torch.Generator().manual_seed(2)
    no_triangles = ComplexOperators.from_simplices(
        [[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [2, 4], [4, 0]]
    )
    for ops in (delaunay_with_holes(n=150, seed=9), no_triangles):
        iterative = HodgeDecomposition(ops, backend="iterative")
        exact = HodgeDecomposition(ops, backend="exact")
        assert iterative.dims == exact.dims and iterative.dims["harmonic"] >= 2
        with pytest.raises(ValueError, match="too many to store"):
            iterative.basis("harmonic")
        x = torch.randn(3, ops.num_edges, dtype=torch.float64, generator=x_gen)
        for a, b in zip(exact(x), iterative(x), strict=True):
            torch.testing.assert_close(a, b, atol=1e-9, rtol=0)
        s = _paths(ops, 6, seed=1) + [torch.arange(min(ops.num_edges, 30))]
        _assert_blocks_close(exact.projector_blocks(s), iterative.projector_blocks(s))


def test_disconnected_complex_with_triangles_and_isolated_node():
    a = annulus()
    edges = np.concatenate([a.edges, a.edges + 8])
    tris = np.concatenate([a.triangles, a.triangles + 8])
    ops = ComplexOperators.from_simplices(edges, tris, num_nodes=17)  # node 16 isolated
    exact = HodgeDecomposition(ops, backend="exact")
    iterative = HodgeDecomposition(ops, backend="iterative")
    dims = {"gradient": 14, "curl": 16, "harmonic": 2}
    assert exact.dims == dims and iterative.dims == dims
    x = torch.randn(4, ops.num_edges, dtype=torch.float64)
    for p, q in zip(exact(x), iterative(x), strict=True):
        torch.testing.assert_close(p, q, atol=1e-10, rtol=0)
    s = [torch.tensor([0, 16, 17, 5]), torch.arange(32)]  # edges in both components
    _assert_blocks_close(exact.projector_blocks(s), iterative.projector_blocks(s))


def test_threaded_solves_give_identical_results(monkeypatch):
    ops = delaunay_with_holes(n=300, seed=10)
    hodge = HodgeDecomposition(ops, backend="iterative")
    x = torch.randn(11, ops.num_edges, dtype=torch.float64)
    supports = _paths(ops, 8, seed=2)
    serial, serial_blocks = hodge(x), hodge.projector_blocks(supports)
    monkeypatch.setattr(linalg_module, "_THREAD_MIN_ROWS", 0)
    monkeypatch.setattr(linalg_module, "_num_workers", lambda: 3)
    monkeypatch.setattr(blocks_module, "_BLOCKS_METHOD", "solves")
    threaded = hodge(x)
    for p, q in zip(serial, threaded, strict=True):
        assert torch.equal(p, q)
    _assert_blocks_close(serial_blocks, hodge.projector_blocks(supports), atol=1e-13)


@pytest.mark.parametrize("backend", ["exact", "iterative"])
def test_parts_keep_the_autograd_graph(backend):
    """Issue 26 case 5: parts of a flow that requires a gradient used to come back detached.
    The parts are orthogonal projections, so d/dx of sum_k <c_k, P_k x> is sum_k P_k c_k."""
    ops = ComplexOperators.from_simplices(
        [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3], [3, 4], [0, 4]], [[0, 1, 2]]
    )
    hodge = HodgeDecomposition(ops, backend=backend)
    x = torch.randn(3, ops.num_edges, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: tuple(hodge(v)), (x,))
    c = torch.randn(3, 3, ops.num_edges, dtype=torch.float64)  # one weight per part
    parts = hodge(x)
    sum((c[k] * parts[k]).sum() for k in range(3)).backward()
    dense = HodgeDecomposition(ops, backend="exact")
    expected = sum(dense(c[k])[k] for k in range(3))
    torch.testing.assert_close(x.grad, expected, rtol=0, atol=1e-8)
    # PyG layout and coordinates too; without requires_grad the parts stay plain tensors
    batched = x.detach().reshape(-1, 1).requires_grad_()
    assert hodge(batched, num_graphs=3).curl.requires_grad
    if backend == "exact":
        assert hodge.coordinates(x, "harmonic").requires_grad
    assert not hodge(x.detach()).gradient.requires_grad


def test_exact_backend_ignores_isolated_nodes():
    """60,000 nodes and 32 edges: L0 is taken on the 33 nodes with edges (a dense
    60,000 x 60,000 eigendecomposition would need 26.8 GiB); the parts and dimensions are
    those of the path alone."""
    edges = [[i, i + 1] for i in range(32)]
    wide = HodgeDecomposition(ComplexOperators.from_simplices(edges, None, 60_000), "exact")
    path = HodgeDecomposition(ComplexOperators.from_simplices(edges, None, 33), "exact")
    assert wide.dims == path.dims == {"gradient": 32, "curl": 0, "harmonic": 0}
    x = torch.randn(3, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for a, b in zip(wide(x), path(x), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    torch.testing.assert_close(wide(x).gradient, x, rtol=0, atol=1e-12)  # a tree: all gradient
