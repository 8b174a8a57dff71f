"""The method in a metric (a complex ``with_weights``): the drop-probability objective with
``M_k = W1 P_k`` (docs/weights.md), the W1^1/2-scaled parts of ``ContrastiveViews`` and the
W1 cosines of ``hodge_cosines``, each against its dense formula."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.losses import hodge_cosines
from topo_contrastive.transforms import (
    ContrastiveViews,
    EdgeFlowMask,
    optimize_drop_probabilities,
)

EDGES = [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3], [3, 4], [4, 5], [5, 6], [3, 6], [1, 5]]


@pytest.fixture(scope="module")
def weighted():
    ops = ComplexOperators.from_simplices(EDGES, [[0, 1, 2], [0, 2, 3]])
    w1 = np.random.default_rng(0).uniform(0.1, 10.0, ops.num_edges)
    return ops, ops.with_weights("resistance", edge=w1), w1


def _projectors(ops, w1):
    B1, B2, W = ops.B1.toarray(), ops.B2.toarray(), np.diag(w1)
    pg = np.diag(1 / w1) @ B1.T @ np.linalg.pinv(B1 @ np.diag(1 / w1) @ B1.T) @ B1
    pc = B2 @ np.linalg.pinv(B2.T @ W @ B2) @ B2.T @ W
    return pg, pc, np.eye(ops.num_edges) - pg - pc


def test_mask_objective_uses_w1_times_the_projectors(weighted):
    ops, w_ops, w1 = weighted
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((3, ops.num_edges)))
    x[0, [2, 5]] = 0.0
    budget = 0.3
    p, hist = optimize_drop_probabilities(x, HodgeDecomposition(w_ops), budget,
                                          return_history=True)  # fmt: skip
    m = [np.diag(w1) @ pk for pk in _projectors(ops, w1)]  # M_k = W1 P_k, symmetric
    for k in range(3):
        np.testing.assert_allclose(m[k], m[k].T, atol=1e-12)

    def objective(xs, q):  # design §2.2 with P_k -> M_k: -L_G / ||x_G||^2 + L_C / .. + L_H / ..
        total = 0.0
        for k, sign in zip(range(3), (-1.0, 1.0, 1.0), strict=True):
            xp = xs * q
            loss = xp @ m[k] @ xp + (np.diag(m[k]) * xs**2 * q * (1 - q)).sum()
            total += sign * loss / (xs @ m[k] @ xs)
        return total

    for i in range(3):
        xs = x[i].numpy()
        start = budget * (xs != 0)
        assert hist[0, i].item() == pytest.approx(objective(xs, start), rel=1e-10)
        assert hist[-1, i].item() == pytest.approx(objective(xs, p[i].numpy()), rel=1e-10)
        assert hist[-1, i] < hist[0, i]
    unweighted = optimize_drop_probabilities(x, HodgeDecomposition(ops), budget)
    assert (p - unweighted).abs().max() > 1e-3  # the metric changes the probabilities


def test_views_store_the_parts_scaled_into_the_metric(weighted):
    ops, w_ops, w1 = weighted
    hodge = HodgeDecomposition(w_ops)
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((ops.num_edges, 1)))
    views = ContrastiveViews(EdgeFlowMask(0.3, generator=0), hodge=hodge)
    (data,) = views.fit([Data(x_1=x.clone())])
    parts = data.hodge_parts.numpy()  # [N1, 3]
    dense = np.stack([p @ x[:, 0].numpy() for p in _projectors(ops, w1)], axis=1)
    np.testing.assert_allclose(parts, np.sqrt(w1)[:, None] * dense, atol=1e-12)
    gram = parts.T @ parts  # Euclidean inner products of the stored parts: the metric's
    np.testing.assert_allclose(gram, np.diag(np.diag(gram)), atol=1e-12 * np.trace(gram))
    views(data)  # the stored parts pass the check against W1^1/2 x
    data.x_1 = 2 * data.x_1
    with pytest.raises(ValueError, match="do not sum to"):
        views(data)


def test_hodge_cosines_are_w1_cosines(weighted):
    ops, w_ops, w1 = weighted
    x = torch.from_numpy(np.random.default_rng(3).standard_normal((5, ops.num_edges)))
    cos = hodge_cosines(HodgeDecomposition(w_ops), x).numpy()
    for k, pk in enumerate(_projectors(ops, w1)):
        parts = x.numpy() @ pk.T  # [S, N1]
        gram = (parts * w1) @ parts.T
        norm = np.sqrt(np.diag(gram))
        np.testing.assert_allclose(cos[k], gram / np.outer(norm, norm), atol=1e-12)


@pytest.mark.parametrize("kind", ["basis", "sketch"])
def test_harmonic_reference_features_in_the_metric(weighted, kind, monkeypatch):
    from topo_contrastive.nn import harmonic_features as hf
    from topo_contrastive.nn.harmonic_features import canonical_harmonic_basis

    ops, w_ops, w1 = weighted
    hodge = HodgeDecomposition(w_ops)
    ph = _projectors(ops, w1)[2]
    if kind == "sketch":
        plan = hf.HarmonicPlan("sketch", 5, 2, ops.num_edges, 1)
        monkeypatch.setattr(hf, "plan_harmonic_features", lambda h: plan)
    m, plan = hf.harmonic_matrix(hodge)
    x = np.random.default_rng(5).standard_normal((4, ops.num_edges))
    if kind == "basis":
        u = canonical_harmonic_basis(hodge)[0]
        np.testing.assert_allclose(u.T @ (w1[:, None] * u), np.eye(u.shape[1]), atol=1e-12)
        np.testing.assert_allclose(u @ u.T @ np.diag(w1), ph, atol=1e-10)
        np.testing.assert_allclose(x @ m, (x * w1) @ u, atol=1e-12)  # U^T W1 x
    else:  # G^T W1^1/2 P_H x: the norms of the W1-harmonic parts, in expectation
        g = np.random.default_rng(0).standard_normal((5, ops.num_edges)) / np.sqrt(5)
        g = g * np.where(ops.edges[:, 0] < ops.edges[:, 1], 1.0, -1.0)
        np.testing.assert_allclose(x @ m, (x @ ph.T * np.sqrt(w1)) @ g.T, atol=1e-10)
