"""Hodge decomposition at every rank (topo_contrastive/hodge/): node, edge and triangle
signals on hand-built complexes with holes of dimension 1 and 2, against dense projectors."""

import pickle

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

import topo_contrastive.hodge._iterative as iterative_module
from tests._rank_complexes import (
    four_simplex_boundary,
    hollow_tetrahedron,
    solid_and_hollow,
    torus,
)
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.hodge import COMPONENTS

BACKENDS = ["exact", "iterative"]


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


COMPLEXES = {
    "hollow_tetrahedron": (hollow_tetrahedron, (1, 0, 1)),
    "torus": (torus, (1, 2, 1)),
    "solid_and_hollow": (solid_and_hollow, (2, 0, 1)),
    "four_simplex_boundary": (four_simplex_boundary, (1, 0, 0)),
}


def dense_projectors(ops: ComplexOperators, k: int) -> list[np.ndarray]:
    """P_G = B_k^T (B_k B_k^T)^+ B_k, P_C = B_{k+1} (B_{k+1}^T B_{k+1})^+ B_{k+1}^T, P_H = rest."""
    n = ops.num_simplices(k)
    pg = np.zeros((n, n))
    if k:
        b = ops.incidence(k).toarray()
        pg = b.T @ np.linalg.pinv(b @ b.T) @ b
    b = ops.incidence(k + 1).toarray()
    pc = b @ np.linalg.pinv(b.T @ b) @ b.T if b.size else np.zeros((n, n))
    return [pg, pc, np.eye(n) - pg - pc]


@pytest.mark.parametrize("name", list(COMPLEXES))
def test_boundary_of_boundary_is_zero(name):
    ops = COMPLEXES[name][0]()
    for k in range(1, ops.dim):
        prod = ops.incidence(k) @ ops.incidence(k + 1)
        assert prod.shape == (ops.num_simplices(k - 1), ops.num_simplices(k + 1))
        assert abs(prod).sum() == 0
    # Hodge Laplacians are the sums of their two parts
    for k in range(ops.dim + 1):
        diff = ops.hodge_laplacian(k) - ops.down_laplacian(k) - ops.up_laplacian(k)
        assert abs(diff).sum() == 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(COMPLEXES))
def test_every_rank_matches_dense_projectors(name, backend):
    factory, betti = COMPLEXES[name]
    ops = factory()
    gen = torch.Generator().manual_seed(0)
    for k in range(3):
        n = ops.num_simplices(k)
        hodge = HodgeDecomposition(ops, backend=backend, rank=k)
        assert hodge.rank == k and hodge.num_simplices == n
        projs = dense_projectors(ops, k)
        ranks = [int(round(np.trace(p))) for p in projs]
        assert hodge.dims == dict(zip(COMPONENTS, ranks, strict=True))
        assert hodge.dims["harmonic"] == betti[k]
        if k == 0:
            assert hodge.dims["gradient"] == 0  # B_0 = 0: no gradient part on nodes
        x = torch.randn(5, n, generator=gen, dtype=torch.float64)
        parts = hodge(x)
        for part, p in zip(parts, projs, strict=True):
            np.testing.assert_allclose(part.numpy(), x.numpy() @ p.T, atol=1e-8)
        # single signal layout
        single = hodge(x[0])
        for part, p in zip(single, projs, strict=True):
            np.testing.assert_allclose(part.numpy(), p @ x[0].numpy(), atol=1e-8)
        # projector blocks on index sets of rank-k simplices
        sets = [np.arange(n)[::-1].copy(), np.array([0]), np.array([], dtype=np.int64)]
        if n > 2:
            sets.append(np.array([n - 1, 1]))
        blocks = hodge.projector_blocks(sets)
        for comp, p in zip(COMPONENTS, projs, strict=True):
            for s, blk in zip(sets, blocks[comp], strict=True):
                np.testing.assert_allclose(blk.numpy(), p[np.ix_(s, s)], atol=1e-8)
        # harmonic basis spans ker L_k
        u = hodge.basis("harmonic").numpy()
        np.testing.assert_allclose(u @ u.T, projs[2], atol=1e-8)
        np.testing.assert_allclose(
            hodge.coordinates(x, "harmonic").numpy(), x.numpy() @ u, atol=1e-12
        )


def test_rank_two_harmonic_part_is_the_cavity():
    # hollow tetrahedron: ker B2 is spanned by the boundary of the (missing) solid
    ops = hollow_tetrahedron()
    hodge = HodgeDecomposition(ops, rank=2)
    boundary = np.array([-1.0, 1.0, -1.0, 1.0])  # [b,c,d] - [a,c,d] + [a,b,d] - [a,b,c]
    np.testing.assert_array_equal(ops.B2.toarray() @ boundary, 0.0)
    x = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    np.testing.assert_allclose(hodge(x).harmonic.numpy(), boundary * (-1.0 / 4.0), atol=1e-14)
    # the gradient part is the curl B2^T x_1 of an edge flow
    flow = torch.randn(6, dtype=torch.float64)
    curl_of_flow = torch.from_numpy(ops.B2.T @ flow.numpy())
    parts = hodge(curl_of_flow)
    np.testing.assert_allclose(parts.gradient.numpy(), curl_of_flow.numpy(), atol=1e-12)
    assert float(parts.harmonic.abs().max()) < 1e-12


def test_rank_zero_parts_are_component_means():
    ops = solid_and_hollow()  # two components of four nodes
    for backend in BACKENDS:
        hodge = HodgeDecomposition(ops, backend=backend, rank=0)
        x = torch.arange(8, dtype=torch.float64)
        parts = hodge(x)
        np.testing.assert_allclose(parts.harmonic.numpy(), [1.5] * 4 + [5.5] * 4, atol=1e-12)
        np.testing.assert_array_equal(parts.gradient.numpy(), 0.0)
        # the "curl" part at rank 0 is a divergence B1 x_1 of an edge flow
        div = torch.from_numpy(ops.B1 @ np.random.default_rng(0).standard_normal(12))
        np.testing.assert_allclose(hodge(div).curl.numpy(), div.numpy(), atol=1e-12)


@pytest.mark.parametrize("name", ["torus", "solid_and_hollow", "four_simplex_boundary"])
def test_iterative_fallbacks_without_bases(name, monkeypatch):
    """No rank-1 harmonic basis (conjugate gradients on L1) and no rank-2 basis (curl by solves
    with B3^T B3, harmonic as the remainder): the same parts."""
    ops = COMPLEXES[name][0]()
    monkeypatch.setattr(iterative_module, "_MAX_HARMONIC_BASIS_ENTRIES", 0)  # every rank
    hodge = HodgeDecomposition(ops, backend="iterative", rank=2)
    projs = dense_projectors(ops, 2)
    x = torch.randn(3, ops.num_triangles, generator=torch.Generator().manual_seed(1)).double()
    for part, p in zip(hodge(x), projs, strict=True):
        np.testing.assert_allclose(part.numpy(), x.numpy() @ p.T, atol=1e-8)
    s = np.arange(ops.num_triangles)
    blocks = hodge.projector_blocks([s])
    for comp, p in zip(COMPONENTS, projs, strict=True):
        np.testing.assert_allclose(blocks[comp][0].numpy(), p, atol=1e-8)
    if hodge.dims["harmonic"]:
        with pytest.raises(ValueError, match="too many to store"):
            hodge.basis("harmonic")


def test_dtype_device_and_pickle():
    ops = torus()
    hodge = HodgeDecomposition(ops, backend="iterative", rank=2)
    x = torch.randn(2, ops.num_triangles)
    parts = hodge(x)
    assert all(p.dtype == torch.float32 and p.shape == x.shape for p in parts)
    torch.testing.assert_close(sum(parts), x)
    exact = HodgeDecomposition(ops, backend="exact", rank=2)  # (SuperLU factors do not pickle)
    clone = pickle.loads(pickle.dumps(exact))
    assert isinstance(clone, HodgeDecomposition) and clone.rank == 2
    torch.testing.assert_close(clone(x).harmonic, parts.harmonic)
    assert isinstance(hodge, HodgeDecomposition)
    assert repr(hodge).startswith("HodgeDecomposition(rank=2, backend='iterative'")
    # one class at every rank
    assert type(hodge) is type(clone) is HodgeDecomposition
    assert type(HodgeDecomposition(ops)) is HodgeDecomposition
    assert type(HodgeDecomposition(ops, rank=np.int64(1))) is HodgeDecomposition


def test_bad_ranks_and_signals():
    graph = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]])  # no triangles
    no_triangles = (
        r"`rank` = 2 is not a rank of this complex: it has no triangles \(N2 = 0; sizes N0..N3 "
        r"= \(3, 3, 0, 0\)\), so its ranks are 0..1"
    )
    with pytest.raises(ValueError, match=no_triangles):
        HodgeDecomposition(graph, rank=2)
    with pytest.raises(ValueError, match="must lie in 0..3, got 5"):
        HodgeDecomposition(graph, rank=5)
    with pytest.raises(TypeError, match="`rank` must be an int"):
        HodgeDecomposition(graph, rank="2")
    with pytest.raises(TypeError, match="`rank` must be an int"):
        HodgeDecomposition(graph, rank=True)
    solid = solid_and_hollow()
    with pytest.raises(ValueError, match=r"ranks \(0, 1, 2\).*not for tetrahedra"):
        HodgeDecomposition(solid, rank=3)
    hodge = HodgeDecomposition(torus(), rank=2)  # N2 = 24
    with pytest.raises(ValueError, match=r"`x` has 36 rows, not a multiple of the complex's "
                       r"N2 = 24 triangles \(signals of another complex\?\)"):
        hodge(torch.zeros(36))
    with pytest.raises(ValueError, match=r"must have shape \[N2\], \[N2, 1\], \[B, N2\].*"
                       r"N2 = 24; got \(2, 36\)"):
        hodge(torch.zeros(2, 36))
    with pytest.raises(TypeError, match="floating tensor \\(rank-2 signals\\)"):
        hodge(torch.zeros(24, dtype=torch.long))
    with pytest.raises(ValueError, match=r"rank-2 simplex indices outside \[0, 24\)"):
        hodge.projector_blocks([[0, 24]])
    with pytest.raises(ValueError, match="repeats a rank-2 simplex index"):
        hodge.projector_blocks([[3, 3]])
    with pytest.raises(ValueError, match="NaN"):
        hodge(torch.full((24,), float("nan")))
    node_hodge = HodgeDecomposition(graph, rank=0)
    with pytest.raises(ValueError, match=r"N0 = 3; got \(2, 4\)"):
        node_hodge(torch.zeros(2, 4))


def test_pyg_layouts_at_rank_two():
    """x_2 of one sample [N2, 1] and of a PyG batch [B * N2, 1] give parts in their layout."""
    ops = torus()
    hodge = HodgeDecomposition(ops, rank=2)
    x = torch.randn(3, ops.num_triangles, dtype=torch.float64)
    ref = hodge(x)
    one = hodge(x[0].view(-1, 1))
    torch.testing.assert_close(one.harmonic, ref.harmonic[0].view(-1, 1))
    batched = hodge(x.reshape(-1, 1), num_graphs=3)
    torch.testing.assert_close(batched.curl, ref.curl.reshape(-1, 1))
    batch = torch.arange(3).repeat_interleave(ops.num_triangles)
    torch.testing.assert_close(hodge(x.reshape(-1), batch=batch).gradient, ref.gradient.reshape(-1))


def test_laplacians_of_every_rank():
    ops = solid_and_hollow()
    for k in range(4):
        down, up = ops.laplacians(rank=k, dtype=torch.float64)
        n = ops.num_simplices(k)
        assert down.shape == up.shape == (n, n)
        np.testing.assert_array_equal(down.to_dense().numpy(), ops.down_laplacian(k).toarray())
        np.testing.assert_array_equal(up.to_dense().numpy(), ops.up_laplacian(k).toarray())
    np.testing.assert_array_equal(ops.down_laplacian(0).toarray(), 0.0)
    np.testing.assert_array_equal(ops.up_laplacian(3).toarray(), 0.0)
    b2, b3 = ops.B2.toarray(), ops.B3.toarray()
    np.testing.assert_array_equal(ops.L2.toarray(), b2.T @ b2 + b3 @ b3.T)
    np.testing.assert_array_equal(ops.L2_down.toarray(), b2.T @ b2)
    with pytest.raises(ValueError, match="`rank` = 3 is not a rank of this complex"):
        hollow_tetrahedron().laplacians(rank=3)
