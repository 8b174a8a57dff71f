"""Flow-conservation interpolation of unobserved edges (Jia et al., KDD 2019): a cycle is
recovered exactly, the result equals the dense least-squares formula, a shared and a
per-flow mask agree, the default is the authors' method on a real road network, and the bad
inputs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from tests._many_complexes import delaunay_complex
from topo_contrastive import ComplexOperators
from topo_contrastive.hodge import interpolate_flows


def test_a_hidden_edge_of_a_circulation_is_recovered():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3], [0, 3], [0, 2]])
    x = ops.path_to_flow([0, 1, 2, 3, 0]).double()  # divergence-free
    for e in range(5):
        if x[e] == 0:
            continue
        observed = torch.ones(5, dtype=torch.bool)
        observed[e] = False
        got = interpolate_flows(ops, torch.where(observed, x, 0.0), observed, smoothing=0.0)
        torch.testing.assert_close(got, x, rtol=0, atol=1e-8)


def test_equals_the_dense_least_squares_formula():
    rng = np.random.default_rng(0)
    ops = delaunay_complex(rng, 25)
    B1 = ops.B1.toarray()
    x = torch.from_numpy(rng.standard_normal((4, ops.num_edges)))
    observed = torch.from_numpy(rng.random((4, ops.num_edges)) < 0.7)
    for lam in (0.0, 0.3):
        got = interpolate_flows(ops, x, observed, smoothing=lam)
        for i in range(4):
            o, u = observed[i].numpy(), ~observed[i].numpy()
            a = B1[:, u].T @ B1[:, u] + lam * np.eye(u.sum())
            rhs = -B1[:, u].T @ (B1[:, o] @ x[i].numpy()[o])
            want = np.linalg.lstsq(a, rhs, rcond=None)[0]  # min-norm where singular
            np.testing.assert_allclose(got[i].numpy()[u], want, atol=1e-6)
            np.testing.assert_array_equal(got[i].numpy()[o], x[i].numpy()[o])
    shared = interpolate_flows(ops, x, observed[0])
    one = interpolate_flows(ops, x, observed[0].expand(4, -1).clone())
    torch.testing.assert_close(shared, one)
    assert interpolate_flows(ops, x[0].float(), observed[0]).dtype == torch.float32


@pytest.fixture(scope="module")
def chicago_sketch():
    """pytspl's chicago-sketch: ``B1`` [546, 1088] and its net link flows (the TNTP volumes)."""
    if importlib.util.find_spec("pytspl") is None:
        pytest.skip("the optional `pytspl` package (its data files) is not installed")
    from experiments.studies.reuse.road_trips import find_network

    folder = find_network("chicago-sketch")
    B1 = np.loadtxt(folder / "B1_chicago_sketch.csv", delimiter=",")
    flow = np.loadtxt(folder / "flow_chicago_sketch.csv")
    return ComplexOperators.from_incidence(B1), B1, flow


def test_the_default_is_the_flowssl_solution_with_lambda_0_1(chicago_sketch):
    # the authors' FlowSSL (their `ssl_prediction`, lambda = 0.1) solves the stacked least
    # squares [B1_U; lambda I] z = [-B1_O x_O; 0]; the default must give the same z
    ops, B1, flow = chicago_sketch
    rng = np.random.default_rng(0)
    observed = rng.permutation(flow.size) < flow.size // 2
    u = ~observed
    stacked = np.vstack([B1[:, u], 0.1 * np.eye(u.sum())])
    rhs = np.concatenate([-B1[:, observed] @ flow[observed], np.zeros(u.sum())])
    want = np.linalg.lstsq(stacked, rhs, rcond=None)[0]
    x = torch.from_numpy(np.where(observed, flow, 0.0))
    got = interpolate_flows(ops, x, torch.from_numpy(observed)).numpy()
    np.testing.assert_allclose(got[u], want, rtol=0, atol=1e-8 * np.abs(want).max())
    np.testing.assert_array_equal(got[observed], flow[observed])
    np.testing.assert_array_equal(got, interpolate_flows(ops, x, torch.from_numpy(observed),
                                                         smoothing=0.01).numpy())  # fmt: skip


def test_the_default_recovers_chicago_sketch_as_flowssl_does(chicago_sketch):
    # FlowSSL at 50 % observed edges on chicago-sketch: correlation 0.50 with the true flows
    # over all edges; the minimum-norm limit (smoothing = 0) about 0.2
    ops, _, flow = chicago_sketch
    default, limit = [], []
    for seed in range(5):
        observed = np.random.default_rng(seed).permutation(flow.size) < flow.size // 2
        x, mask = torch.from_numpy(np.where(observed, flow, 0.0)), torch.from_numpy(observed)
        for out, lam in ((default, 0.01), (limit, 0.0)):
            got = interpolate_flows(ops, x, mask, smoothing=lam).numpy()
            out.append((np.corrcoef(got, flow)[0, 1],
                        np.linalg.norm(got[~observed] - flow[~observed])
                        / np.linalg.norm(flow[~observed])))  # fmt: skip
    default_np, limit_np = np.array(default), np.array(limit)
    assert (default_np[:, 0] > limit_np[:, 0] + 0.1).all()  # every split
    assert (default_np[:, 1] < limit_np[:, 1]).all()  # smaller error on the unobserved edges
    assert 0.45 < default_np[:, 0].mean() < 0.6  # FlowSSL: 0.50
    assert limit_np[:, 0].mean() < 0.3


def test_bad_input():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]])
    x = torch.zeros(3)
    with pytest.raises(TypeError, match="bool tensor"):
        interpolate_flows(ops, x, torch.ones(3))
    with pytest.raises(ValueError, match="N1 = 3"):
        interpolate_flows(ops, torch.zeros(4), torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="NaN"):
        interpolate_flows(ops, torch.tensor([0.0, float("nan"), 1.0]), torch.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="smoothing"):
        interpolate_flows(ops, x, torch.ones(3, dtype=torch.bool), smoothing=-1.0)
    for mask in (torch.ones(1, 3, 1, dtype=torch.bool), torch.ones(1, 3, 2, dtype=torch.bool)):
        with pytest.raises(ValueError, match=r"`observed` must be \[N1\] or of x's shape"):
            interpolate_flows(ops, torch.zeros(1, 3), mask)  # used to be a broadcast error


def test_a_vanishing_smoothing_is_the_minimum_norm_limit():
    # unobserved edges around a cycle make the block singular: smoothing = 1e-300 used to
    # raise `Factor is exactly singular`; it is the limit smoothing -> 0+, as smoothing = 0
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3], [0, 3], [3, 4]])
    x = torch.tensor([[1.0, 1.0, 1.0, -1.0, 2.0], [0.5, -1.0, 3.0, 0.0, 1.0]], dtype=torch.float64)
    observed = torch.tensor([False, False, False, False, True])  # the whole square hidden
    limit = interpolate_flows(ops, x, observed, smoothing=0.0)
    for tiny in (1e-300, 5e-324, 1e-20):
        torch.testing.assert_close(interpolate_flows(ops, x, observed, smoothing=tiny), limit,
                                   rtol=0, atol=0)  # fmt: skip
    # the minimum-norm solution: node 3's outflow of 2 sent back over the square, no
    # circulation (a divergence of 2 at node 3 spread as B1_U^+ (-B1_O x_O))
    b1 = ops.B1.toarray()
    want = -np.linalg.pinv(b1[:, :4]) @ (b1[:, 4:] @ x[:, 4:].numpy().T)
    np.testing.assert_allclose(limit[:, :4].numpy(), want.T, atol=1e-6)  # lambda = 2e-10


def test_nan_marks_unobserved_entries_and_numpy_smoothing_is_a_number():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
    observed = torch.tensor([True, True, False, True])
    finite = torch.tensor([1.0, 2.0, 0.0, 0.5], dtype=torch.float64)
    marked = finite.clone()
    marked[2] = float("nan")  # NaN as the missing-value marker: ignored there
    want = interpolate_flows(ops, finite, observed, smoothing=1.0)
    torch.testing.assert_close(interpolate_flows(ops, marked, observed, smoothing=1.0), want,
                               rtol=0, atol=0)  # fmt: skip
    for lam in (np.int64(1), np.float32(1.0)):
        torch.testing.assert_close(interpolate_flows(ops, finite, observed, smoothing=lam), want,
                                   rtol=0, atol=1e-15)  # fmt: skip
