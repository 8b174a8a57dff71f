import numpy as np
import pytest
import torch
from scipy.spatial import Delaunay

from topo_contrastive import HodgeDecomposition, SimplicialOperators
from topo_contrastive.hodge import COMPONENTS

BACKENDS = ["exact", "iterative"]


def delaunay_with_holes(n=300, seed=0, holes=((0.2, 0.4), (0.6, 0.8))):
    pts = np.random.default_rng(seed).random((n, 2))
    tri = Delaunay(pts).simplices
    inside = np.zeros(n, dtype=bool)
    for lo, hi in holes:
        inside |= ((pts > lo) & (pts < hi)).all(1)
    tri = tri[~inside[tri].any(1)]
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(pairs, 1), axis=0)
    return SimplicialOperators.from_simplices(edges, tri, n)


def filled_disc():
    # hexagon around centre 0, all six triangles filled
    edges = [[0, i] for i in range(1, 7)] + [[i, i % 6 + 1] for i in range(1, 7)]
    tris = [[0, i, i % 6 + 1] for i in range(1, 7)]
    return SimplicialOperators.from_simplices(edges, tris)


def annulus():
    # square 0-1-2-3 around a hole, outer square 4-5-6-7, ring of 8 triangles
    inner = [[0, 1], [1, 2], [2, 3], [0, 3]]
    outer = [[4, 5], [5, 6], [6, 7], [4, 7]]
    spokes = [[0, 4], [1, 5], [2, 6], [3, 7], [0, 5], [1, 6], [2, 7], [3, 4]]
    tris = [[0, 4, 5], [0, 1, 5], [1, 5, 6], [1, 2, 6], [2, 6, 7], [2, 3, 7], [3, 7, 4], [3, 0, 4]]
    return SimplicialOperators.from_simplices(inner + outer + spokes, tris)


def hollow_tetrahedron():
    edges = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    return SimplicialOperators.from_simplices(edges, [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])


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
    ops = delaunay_with_holes(n=400, seed=2)
    exact = HodgeDecomposition(ops, backend="exact")
    iterative = HodgeDecomposition(ops, backend="iterative")
    assert HodgeDecomposition(ops, max_exact_edges=ops.num_edges).backend == "exact"
    assert HodgeDecomposition(ops, max_exact_edges=ops.num_edges - 1).backend == "iterative"
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
    ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [3, 5]])
    for backend in BACKENDS:
        hodge = HodgeDecomposition(ops, backend=backend)
        assert hodge.dims == {"gradient": 4, "curl": 0, "harmonic": 2}
        x = torch.randn(2, 6, dtype=torch.float64)
        parts = hodge(x)
        assert parts.curl.abs().max() == 0
        torch.testing.assert_close(sum(parts), x)


def test_dtype_device_and_single_flow():
    ops = annulus()
    hodge = HodgeDecomposition(ops)
    x = torch.randn(ops.num_edges, dtype=torch.float32)
    parts = hodge(x)
    assert all(p.shape == x.shape and p.dtype == torch.float32 for p in parts)
    assert x.requires_grad is False


def test_bad_input():
    ops = annulus()
    hodge = HodgeDecomposition(ops)
    with pytest.raises(ValueError, match="NaN or inf"):
        hodge(torch.full((ops.num_edges,), float("nan")))
    with pytest.raises(ValueError, match="N1 = 16"):
        hodge(torch.zeros(3, 15))
    with pytest.raises(TypeError, match="floating"):
        hodge(torch.zeros(16, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        hodge(np.zeros(16))
    with pytest.raises(ValueError, match="`component`"):
        hodge.project(torch.zeros(16), "divergence")
    with pytest.raises(ValueError, match="`backend`"):
        HodgeDecomposition(ops, backend="svd")
    with pytest.raises(TypeError, match="SimplicialOperators"):
        HodgeDecomposition(ops.B1)
    with pytest.raises(ValueError, match="outside"):
        hodge.projector_blocks([[0, 99]])
    with pytest.raises(ValueError, match="repeats"):
        hodge.projector_blocks([[1, 1]])
