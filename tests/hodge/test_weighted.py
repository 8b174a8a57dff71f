"""The Hodge decomposition in a metric (a complex ``with_weights``): every backend against the
dense projector formulas and a dense eigendecomposition of the symmetric Hodge Laplacian, on
hand-built and seeded random complexes; W1-orthogonal parts, the unweighted dimensions, the
W1-orthonormal harmonic basis, the adjoint in the backward pass, and DC power flows that are
gradient flows in the reactance metric."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.hodge import _iterative

BACKENDS = ("exact", "iterative", "blocks")


def _grid(n: int, holes=(), seed: int = 0):
    """A triangulated ``n x n`` grid of nodes with the squares ``holes`` left open."""
    node = lambda i, j: i * n + j  # noqa: E731
    edges, tris = set(), []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = node(i, j), node(i, j + 1), node(i + 1, j), node(i + 1, j + 1)
            edges |= {(a, b), (a, c), (b, d), (c, d), (a, d)}
            if (i, j) not in holes:
                tris += [[a, b, d], [a, c, d]]
    return ComplexOperators.from_simplices(sorted(edges), tris)


def _cells():
    """Two squares, a pentagon and a triangle around two holes, and a pendant edge."""
    edges = [[0, 1], [1, 2], [2, 3], [3, 0], [1, 4], [4, 5], [5, 2], [4, 6], [6, 7], [7, 5],
             [3, 8], [8, 9], [9, 0], [2, 8], [7, 10]]  # fmt: skip
    return ComplexOperators.from_cells(edges, [[0, 1, 2, 3], [1, 4, 5, 2], [4, 6, 7, 5]])


def _dense_projectors(ops, w1):
    """``P_G, P_C, P_H`` of the W1 metric from the formulas of docs/weights.md."""
    B1, B2, W = ops.B1.toarray(), ops.B2.toarray(), np.diag(w1)
    pg = np.diag(1 / w1) @ B1.T @ np.linalg.pinv(B1 @ np.diag(1 / w1) @ B1.T) @ B1
    pc = B2 @ np.linalg.pinv(B2.T @ W @ B2) @ B2.T @ W if ops.num_faces else 0 * pg
    return pg, pc, np.eye(ops.num_edges) - pg - pc


def _weighted(ops, seed):
    rng = np.random.default_rng(seed)
    w = [rng.uniform(0.05, 20.0, n) for n in ops.sizes[:3]]
    return ops.with_weights(node=w[0], edge=w[1], cell=w[2]), w[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make", [_cells, lambda: _grid(6, {(1, 1), (3, 2)})])
def test_parts_match_the_dense_projectors(make, backend):
    ops = make()
    weighted, w1 = _weighted(ops, 1)
    hodge = HodgeDecomposition(weighted, backend=backend)
    assert hodge.dims == HodgeDecomposition(ops).dims  # the unweighted ranks
    x = np.random.default_rng(2).standard_normal((5, ops.num_edges))
    parts = [p.numpy() for p in hodge(torch.from_numpy(x))]
    for part, proj in zip(parts, _dense_projectors(ops, w1), strict=True):
        np.testing.assert_allclose(part, x @ proj.T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sum(parts), x, rtol=0, atol=1e-12)
    energy = (x**2 * w1).sum(1)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        inner = (parts[i] * parts[j] * w1).sum(1)  # <x_i, x_j>_W1
        assert np.abs(inner).max() < 1e-12 * energy.max()
    # the other stars do not change the decomposition
    only_edges = HodgeDecomposition(ops.with_weights(edge=w1), backend=backend)
    np.testing.assert_allclose(only_edges(torch.from_numpy(x)).curl.numpy(), parts[1], atol=1e-11)


@pytest.mark.parametrize("backend", ("exact", "iterative"))
def test_harmonic_basis_from_the_generalized_eigenproblem(backend):
    ops = _grid(7, {(1, 1), (4, 4), (2, 5)})
    weighted, w1 = _weighted(ops, 3)
    hodge = HodgeDecomposition(weighted, backend=backend)
    # the kernel of the symmetric S = W1^1/2 L1 W1^-1/2 is W1^1/2 H
    lam, vec = np.linalg.eigh(weighted.hodge_laplacian(1).toarray())
    v = vec[:, lam < 1e-9 * lam.max()]
    assert v.shape[1] == hodge.dims["harmonic"] == 6  # two open triangles a hole
    u = hodge.basis("harmonic").numpy()
    np.testing.assert_allclose(u.T @ (w1[:, None] * u), np.eye(6), atol=1e-12)
    root = np.sqrt(w1)
    reference = (v / root[:, None]) @ (v * root[:, None]).T  # W^-1/2 V V^T W^1/2
    np.testing.assert_allclose(u @ (u * w1[:, None]).T, reference, atol=1e-10)
    x = torch.from_numpy(np.random.default_rng(4).standard_normal((3, ops.num_edges)))
    coords = hodge.coordinates(x, "harmonic").numpy()  # U^T W1 x
    np.testing.assert_allclose(coords, (x.numpy() * w1) @ u, atol=1e-12)
    np.testing.assert_allclose(coords @ u.T, hodge(x).harmonic.numpy(), atol=1e-10)


def test_exact_bases_of_the_ranges_and_other_ranks():
    ops = _grid(5, {(1, 2)})
    weighted, w1 = _weighted(ops, 5)
    hodge = HodgeDecomposition(weighted, backend="exact")
    lam, vec = np.linalg.eigh(weighted.L_down.toarray())  # range of S_down: W1^1/2 G
    v = vec[:, lam > 1e-9 * lam.max()]
    g = hodge.basis("gradient").numpy() * np.sqrt(w1)[:, None]
    np.testing.assert_allclose(g @ g.T, v @ v.T, atol=1e-10)
    # signals on the triangles: W2-orthogonal parts summing to the signal
    tri = HodgeDecomposition(weighted, rank=2)
    w2 = weighted.hodge_star(2)
    x = torch.from_numpy(np.random.default_rng(6).standard_normal((2, ops.num_faces)))
    parts = tri(x)
    np.testing.assert_allclose(sum(p.numpy() for p in parts), x.numpy(), atol=1e-12)
    B2 = ops.B2.toarray()
    pg = np.diag(1 / w2) @ B2.T @ np.linalg.pinv(B2 @ np.diag(1 / w2) @ B2.T) @ B2
    np.testing.assert_allclose(parts.gradient.numpy(), x.numpy() @ pg.T, atol=1e-10)
    with pytest.raises(ValueError, match="rank 2 on an unweighted complex only"):
        HodgeDecomposition(weighted, backend="iterative", rank=2)


def test_projector_blocks_are_the_symmetric_forms():
    ops = _cells()
    weighted, w1 = _weighted(ops, 7)
    root = np.sqrt(w1)
    support = np.array([0, 2, 5, 9, 14])
    refs = [(root[:, None] * p / root)[np.ix_(support, support)]
            for p in _dense_projectors(ops, w1)]  # fmt: skip
    for backend in BACKENDS:
        blocks = HodgeDecomposition(weighted, backend=backend).projector_blocks([support])
        for got, ref in zip(blocks.values(), refs, strict=True):
            np.testing.assert_allclose(got[0].numpy(), ref, atol=1e-12)


def test_iterative_without_a_harmonic_basis(monkeypatch):
    monkeypatch.setattr(_iterative, "_MAX_HARMONIC_BASIS_ENTRIES", 0)
    ops = _cells()
    weighted, w1 = _weighted(ops, 8)
    hodge = HodgeDecomposition(weighted, backend="iterative")
    x = np.random.default_rng(9).standard_normal((3, ops.num_edges))
    parts = hodge(torch.from_numpy(x))
    for part, proj in zip(parts, _dense_projectors(ops, w1), strict=True):
        np.testing.assert_allclose(part.numpy(), x @ proj.T, atol=1e-10)


def test_backward_is_the_adjoint_projection():
    ops = _cells()
    weighted, w1 = _weighted(ops, 10)
    proj = _dense_projectors(ops, w1)
    x = torch.randn(2, ops.num_edges, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, 2, ops.num_edges, dtype=torch.float64)
    parts = HodgeDecomposition(weighted)(x)
    sum((p * gk).sum() for p, gk in zip(parts, g, strict=True)).backward()
    expected = sum(gk.numpy() @ p for gk, p in zip(g, proj, strict=True))  # sum P_k^T g_k
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-10)


def test_unweighted_results_are_unchanged_bit_for_bit():
    ops = _cells()
    same = ops.with_weights(edge=np.ones(ops.num_edges))
    x = torch.randn(3, ops.num_edges, dtype=torch.float64)
    for backend in BACKENDS:
        a, b = HodgeDecomposition(ops, backend=backend)(x), HodgeDecomposition(same, backend)(x)
        assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def _dc_flows(ops, reactance, count, seed):
    """DC power flows ``f = diag(1 / x) B1^T theta`` of random bus angles ``[count, N1]``."""
    theta = np.random.default_rng(seed).standard_normal((count, ops.num_nodes))
    return (theta @ ops.B1.toarray()) / reactance


@pytest.mark.parametrize("backend", ("exact", "iterative"))
def test_dc_power_flow_is_a_gradient_flow_in_the_reactance_metric(backend):
    ops = _grid(9, {(2, 2), (5, 6)})  # 81 buses, with two loops that are not 2-cells
    reactance = np.random.default_rng(11).uniform(0.01, 0.3, ops.num_edges)
    f = torch.from_numpy(_dc_flows(ops, reactance, 4, 12))
    weighted = ops.with_weights("resistance", edge=reactance)
    parts = HodgeDecomposition(weighted, backend=backend)(f)
    scale = f.abs().max()
    assert parts.curl.abs().max() < 1e-10 * scale and parts.harmonic.abs().max() < 1e-10 * scale
    unweighted = HodgeDecomposition(ops, backend=backend)(f)
    assert unweighted.curl.abs().max() > 1e-2 * scale  # artefacts of the wrong metric
    assert unweighted.harmonic.abs().max() > 1e-3 * scale


def test_dc_power_flow_on_case118(tmp_path):
    pytest.importorskip("pandapower")
    from topo_contrastive.datasets import PowerGridFlows

    ds = PowerGridFlows(str(tmp_path), case="case118", task="state", mode="dc", num_samples=5,
                        n_jobs=1, log=False)  # fmt: skip
    f = ds.flows.to(torch.float64)  # reactances: the dataset's edge_weights
    weighted = ds.complex.with_weights("resistance", edge=ds.edge_weights.numpy())
    for backend in ("exact", "iterative"):
        parts = HodgeDecomposition(weighted, backend=backend)(f)
        scale = f.abs().max()
        assert parts.curl.abs().max() < 1e-8 * scale
        assert parts.harmonic.abs().max() < 1e-8 * scale
