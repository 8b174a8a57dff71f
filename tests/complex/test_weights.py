"""Weights on a complex (``ComplexOperators.with_weights``): the adjoints, the weighted and
symmetric Hodge Laplacians against their formulas and hand-computed values, the presets
(Schaub et al.'s normalised Hodge 1-Laplacian, resistance), the unweighted path bit for bit,
the fingerprint, pickling and refused weights."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

from topo_contrastive import ComplexOperators

# a triangle (0, 1, 2) and a square (1, 3, 4, 2) sharing the edge (1, 2)
EDGES = [[0, 1], [0, 2], [1, 2], [1, 3], [2, 4], [3, 4]]
CELLS = [[0, 1, 2], [1, 3, 4, 2]]
W0 = np.array([1.0, 2.0, 0.5, 4.0, 1.0])
W1 = np.array([1.0, 2.0, 4.0, 0.5, 1.0, 2.0])
W2 = np.array([3.0, 0.25])


@pytest.fixture(scope="module")
def ops():
    return ComplexOperators.from_cells(EDGES, CELLS)


@pytest.fixture(scope="module")
def weighted(ops):
    return ops.with_weights(node=W0, edge=W1, cell=W2)


def test_adjoints_by_hand(ops, weighted):
    b1 = weighted.adjoint(1).toarray()  # W1^-1 B1^T W0: [e, v] = B1[v, e] w0[v] / w1[e]
    assert b1[0].tolist() == [-1.0, 2.0, 0.0, 0.0, 0.0]  # edge (0, 1), w1 = 1
    assert b1[2].tolist() == [0.0, -0.5, 0.125, 0.0, 0.0]  # edge (1, 2), w1 = 4
    b2 = weighted.adjoint(2).toarray()  # W2^-1 B2^T W1: [f, e] = B2[e, f] w1[e] / w2[f]
    assert b2[0].tolist() == pytest.approx([1 / 3, -2 / 3, 4 / 3, 0.0, 0.0, 0.0])
    # the square 1 -> 3 -> 4 -> 2 -> 1 runs against the edge (1, 2) and (2, 4)
    assert b2[1].tolist() == [0.0, 0.0, -16.0, 2.0, -4.0, 8.0]
    assert np.array_equal(ops.adjoint(1).toarray(), ops.B1.T.toarray())  # unweighted: B^T


def test_adjoint_identity_in_the_metric(weighted):
    rng = np.random.default_rng(0)
    stars = [weighted.hodge_star(k) for k in range(3)]
    for k in (1, 2):
        a, b = rng.standard_normal(weighted.sizes[k]), rng.standard_normal(weighted.sizes[k - 1])
        lhs = (weighted.incidence(k) @ a) @ (stars[k - 1] * b)  # <B a, b>_{W_{k-1}}
        rhs = (stars[k] * a) @ (weighted.adjoint(k) @ b)  # <a, B* b>_{W_k}
        assert abs(lhs - rhs) < 1e-12 * (1 + abs(lhs))


def test_weighted_and_symmetric_laplacians_match_their_formulas(ops, weighted):
    B1, B2 = ops.B1.toarray(), ops.B2.toarray()
    l_down = np.diag(1 / W1) @ B1.T @ np.diag(W0) @ B1
    l_up = B2 @ np.diag(1 / W2) @ B2.T @ np.diag(W1)
    L1 = weighted.hodge_laplacian(1, symmetric=False).toarray()
    np.testing.assert_allclose(L1, l_down + l_up, rtol=0, atol=1e-14)
    root = np.sqrt(W1)
    sym = lambda m: np.diag(root) @ m @ np.diag(1 / root)  # noqa: E731
    np.testing.assert_allclose(weighted.L_down.toarray(), sym(l_down), atol=1e-14)
    np.testing.assert_allclose(weighted.L_up.toarray(), sym(l_up), atol=1e-14)
    np.testing.assert_allclose(weighted.hodge_laplacian(1).toarray(), sym(L1), atol=1e-13)
    assert (weighted.L1 != weighted.L1.T).nnz == 0  # the layers' operator is symmetric
    # W1 L1 is symmetric: L1 is self-adjoint in the metric
    np.testing.assert_allclose(np.diag(W1) @ L1, (np.diag(W1) @ L1).T, atol=1e-13)
    # L0 = B1 B1* in the symmetric form W0^1/2 B1 W1^-1 B1^T W0^1/2
    r0 = np.sqrt(W0)
    np.testing.assert_allclose(
        weighted.L0.toarray(), np.diag(r0) @ B1 @ np.diag(1 / W1) @ B1.T @ np.diag(r0), atol=1e-14
    )
    L_down, L_up = weighted.laplacians(dtype=torch.float64)
    assert torch.equal(L_down.to_dense(), torch.from_numpy(weighted.L_down.toarray()))
    assert torch.equal(L_up.to_dense(), torch.from_numpy(weighted.L_up.toarray()))


def test_normalized_preset_is_schaub_et_al(ops):
    # Schaub et al. (2020) eq. 3.4: L1n = D2 B1^T D1^-1 B1 + B2 D3 B2^T D2^-1
    B1, B2 = ops.B1.toarray(), ops.B2.toarray()
    D2 = np.diag(np.maximum(np.abs(B2).sum(1), 1.0))
    D1 = 2 * np.diag(np.abs(B1) @ np.diag(D2))
    D3 = np.diag(1.0 / np.array([3.0, 4.0]))  # one over the 2-cells' lengths
    L1n = D2 @ B1.T @ np.linalg.inv(D1) @ B1 + B2 @ D3 @ B2.T @ np.linalg.inv(D2)
    norm = ops.with_weights("normalized")
    assert norm.metric == "normalized"
    np.testing.assert_allclose(norm.hodge_laplacian(1, symmetric=False).toarray(), L1n, atol=1e-14)
    assert norm.hodge_star(1).tolist() == [1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    assert norm.hodge_star(2).tolist() == [3.0, 4.0]


def test_resistance_preset(ops):
    r = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    res = ops.with_weights("resistance", edge=r)
    assert res.metric == "resistance" and res.hodge_star(1).tolist() == r.tolist()
    assert res.hodge_star(0).tolist() == [1.0] * 5 and res.hodge_star(2).tolist() == [1.0, 1.0]
    # a flow driven by potentials through conductances 1 / r has no curl: B2^* f = 0
    theta = np.array([0.3, -1.0, 2.0, 0.5, -0.2])
    f = (ops.B1.T @ theta) / r
    assert np.abs(res.adjoint(2) @ f).max() < 1e-14
    assert np.abs(ops.B2.T @ f).max() > 0.1  # but it has in the unweighted metric


def test_unit_weights_are_the_unweighted_complex_bit_for_bit(ops):
    same = ops.with_weights(node=np.ones(5), edge=torch.ones(6), cell=[1, 1])
    assert same.metric == "unweighted" and same.fingerprint() == ops.fingerprint()
    for name in ("L0", "L_down", "L_up", "L1", "L2"):
        a, b = getattr(same, name), getattr(ops, name)
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.data, b.data)
    assert "metric" not in repr(same)
    back = ops.with_weights(edge=W1).with_weights("unweighted")
    assert np.array_equal(back.L1.data, ops.L1.data) and back.fingerprint() == ops.fingerprint()


def test_fingerprint_pickle_and_copies_keep_the_weights(ops, weighted):
    assert weighted.fingerprint() != ops.fingerprint()
    assert ops.with_weights(edge=W1).fingerprint() != weighted.fingerprint()
    assert ops.with_weights(node=W0, edge=W1, cell=W2).fingerprint() == weighted.fingerprint()
    for other in (pickle.loads(pickle.dumps(weighted)), copy.deepcopy(weighted)):
        assert other.metric == "weighted" and other.fingerprint() == weighted.fingerprint()
        assert np.array_equal(other.L_up.toarray(), weighted.L_up.toarray())
    assert np.array_equal(ops.hodge_star(1), np.ones(6))  # the source keeps its metric
    assert "metric='weighted'" in repr(weighted)


def test_from_toponetx_reads_the_weight_attribute():
    tnx = pytest.importorskip("toponetx")
    sc = tnx.SimplicialComplex([[0, 1, 2], [1, 2, 3]])
    sc.set_simplex_attributes({(1, 2): 5.0, (0, 1): 2.0}, name="length")
    sc.set_simplex_attributes({(1, 2, 3): 7.0}, name="length")
    ops = ComplexOperators.from_toponetx(sc, weight="length")
    w1 = ops.hodge_star(1)
    col = ops.edge_lookup([1, 0], [2, 1])[0]
    assert w1[col].tolist() == [5.0, 2.0] and np.sort(w1)[:3].tolist() == [1.0, 1.0, 1.0]
    assert sorted(ops.hodge_star(2).tolist()) == [1.0, 7.0] and ops.metric == "weighted"
    assert ComplexOperators.from_toponetx(sc).metric == "unweighted"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"edge": [1.0, 2.0]}, r"`edge` must be a real array of shape \[6\]"),
        ({"edge": [1.0, 2.0, -1.0, 1.0, 1.0, 1.0]}, r"`edge` must be positive.*-1.0 at entry 2"),
        ({"node": [1.0, np.nan, 1.0, 1.0, 1.0]}, "`node` must be positive and finite"),
        ({"metric": "circumcentric"}, "`metric` must be None or one of"),
        ({"metric": "resistance"}, "takes the per-edge resistances"),
        ({"metric": "resistance", "edge": W1, "node": W0}, "no other weights"),
        ({"metric": "normalized", "edge": W1}, "takes no weights"),
    ],
)
def test_bad_weights_are_refused(ops, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ops.with_weights(**kwargs)
