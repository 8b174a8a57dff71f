import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.hodge import COMPONENTS
from topo_contrastive.transforms import optimize_drop_probabilities

from ._reference import (
    expected_hodge_distortion,
    expected_hodge_distortion_grad,
    hodge_mask_objective,
    project_capped_simplex,
)
from .conftest import random_complex, random_flows


def full_projectors(hodge):
    return {k: hodge.basis(k) @ hodge.basis(k).T for k in COMPONENTS}


# ---------------------------------------------------------------------------- closed form
def test_closed_form_exact_value_single_edge():
    # one edge: P_G = [[1]]; E||x d||^2 = x^2 p
    x = torch.tensor([2.0], dtype=torch.float64)
    p = torch.tensor([0.3], dtype=torch.float64)
    block = torch.ones(1, 1, dtype=torch.float64)
    # (x p)^2 + x^2 p (1 - p) = 0.36 + 0.84
    assert expected_hodge_distortion(x, p, block).item() == pytest.approx(1.2, abs=1e-14)


def test_closed_form_exact_value_triangle():
    # unfilled triangle: the cycle (1, -1, 1)/sqrt(3) spans the harmonic space
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]])
    hodge = HodgeDecomposition(ops, backend="exact")
    ph = hodge.projector_block([0, 1, 2], "harmonic")
    x = torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)  # 0 -> 1 -> 2 -> 0, harmonic
    p = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)  # edge 0 always dropped
    # x - x' = (1, 0, 0): harmonic energy 1/3, deterministic
    assert expected_hodge_distortion(x, p, ph).item() == pytest.approx(1 / 3, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_matches_monte_carlo(seed):
    hodge = HodgeDecomposition(random_complex(14, seed=seed), backend="exact")
    n1 = hodge.complex.num_edges
    gen = torch.Generator().manual_seed(seed)
    x = random_flows(n1, 1, density=0.6, seed=seed)[0]
    support = torch.nonzero(x).ravel()
    p = torch.rand(n1, generator=gen, dtype=torch.float64) * (x != 0)
    blocks = hodge.projector_blocks([support])
    num_draws = 100_000
    drop = torch.rand(num_draws, n1, generator=gen, dtype=torch.float64) < p  # [D, N1]
    diff = x * drop  # x - x'
    for k in COMPONENTS:
        closed = expected_hodge_distortion(x[support], p[support], blocks[k][0]).item()
        samples = (diff @ hodge.basis(k)).square().sum(-1)  # [D]
        mean = samples.mean().item()
        se = samples.std().item() / math.sqrt(num_draws)
        assert abs(mean - closed) <= 4 * se + 1e-12, (k, mean, closed, se)


def test_closed_form_block_on_superset_of_support(small_hodge):
    # entries with x = 0 contribute nothing: full projector gives the same value
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 1, density=0.4, seed=5)[0]
    p = torch.rand(n1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    support = torch.nonzero(x).ravel()
    for k, proj in full_projectors(small_hodge).items():
        block = small_hodge.projector_block(support, k)
        full = expected_hodge_distortion(x, p, proj)
        restricted = expected_hodge_distortion(x[support], p[support], block)
        assert torch.allclose(full, restricted, atol=1e-12)


def test_closed_form_batched(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 4, seed=1)
    p = torch.rand(4, n1, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    proj = full_projectors(small_hodge)["curl"]
    batched = expected_hodge_distortion(x, p, proj.expand(4, n1, n1))
    loop = torch.stack([expected_hodge_distortion(x[i], p[i], proj) for i in range(4)])
    assert batched.shape == (4,)
    assert torch.allclose(batched, loop, atol=1e-12)


@pytest.mark.parametrize("component", COMPONENTS)
def test_gradient_matches_autograd(small_hodge, component):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 3, seed=2)
    proj = full_projectors(small_hodge)[component].expand(3, n1, n1)
    p = torch.rand(3, n1, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    p.requires_grad_(True)
    (auto,) = torch.autograd.grad(expected_hodge_distortion(x, p, proj).sum(), p)
    closed = expected_hodge_distortion_grad(x, p.detach(), proj)
    assert torch.allclose(closed, auto, atol=1e-12)


def test_objective_matches_naive_formula(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 1, seed=3)[0]
    p = torch.rand(n1, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    projs = full_projectors(small_hodge)
    alpha = {"gradient": 2.0, "curl": 0.5, "harmonic": 3.0}
    got = hodge_mask_objective(x, p, projs, ("gradient",), ("curl", "harmonic"), alpha)
    want = 0.0
    for k, sign in (("gradient", -1), ("curl", 1), ("harmonic", 1)):
        energy = float(x @ projs[k] @ x)
        want += sign * alpha[k] * float(expected_hodge_distortion(x, p, projs[k])) / energy
    assert got.item() == pytest.approx(want, rel=1e-12)


def test_objective_ignores_absent_component():
    # a gradient flow on a tree has no curl or harmonic part: those terms vanish
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3]])
    hodge = HodgeDecomposition(ops, backend="exact")
    x = torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64)
    p = torch.full((3,), 0.5, dtype=torch.float64)
    blocks = {k: hodge.projector_block([0, 1, 2], k) for k in COMPONENTS}
    got = hodge_mask_objective(x, p, blocks, (), ("curl", "harmonic"))
    assert got.item() == 0.0
    grad_only = hodge_mask_objective(x, p, blocks, ("gradient",), ())
    want = -float(expected_hodge_distortion(x, p, blocks["gradient"])) / 3.0
    assert grad_only.item() == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------- projection
def slsqp_projection(v, budget, free):
    n = v.size
    bounds = [(0.0, 1.0) if f else (0.0, 0.0) for f in free]
    res = minimize(
        lambda q: 0.5 * np.sum((q - v) ** 2),
        x0=np.zeros(n),
        jac=lambda q: q - v,
        bounds=bounds,
        constraints=[
            {"type": "ineq", "fun": lambda q: budget - q.sum(), "jac": lambda q: -np.ones(n)}
        ],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert res.success, res.message
    return res.x


@pytest.mark.parametrize("method", ["sort", "bisection"])
def test_projection_equals_generic_solver(method):
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(1, 9))
        v = rng.normal(0.4, 1.2, size=n)
        budget = float(rng.uniform(0, n))
        free = rng.random(n) < 0.8
        want = slsqp_projection(v, budget, free)
        got = project_capped_simplex(
            torch.from_numpy(v), budget, mask=torch.from_numpy(free), method=method
        ).numpy()
        np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("method", ["sort", "bisection"])
def test_projection_batched_feasible_and_kkt(method):
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(200, 12, generator=gen, dtype=torch.float64) * 3
    mask = torch.rand(200, 12, generator=gen) < 0.7
    budget = torch.rand(200, generator=gen, dtype=torch.float64) * 6
    p = project_capped_simplex(v, budget, mask=mask, method=method)
    assert p.shape == v.shape
    assert bool(((p >= 0) & (p <= 1)).all())
    assert bool((p[~mask] == 0).all())
    assert bool((p.sum(-1) <= budget + 1e-12).all())
    # the same rows one by one
    for i in range(0, 200, 37):
        one = project_capped_simplex(v[i], float(budget[i]), mask=mask[i], method=method)
        assert torch.allclose(one, p[i], atol=1e-12)
    # optimality: no feasible random point is closer to v
    for _ in range(20):
        q = project_capped_simplex(
            torch.rand(200, 12, generator=gen, dtype=torch.float64) * 2 - 0.5, budget, mask=mask
        )
        assert bool(((q - v).norm(dim=-1) >= (p - v).norm(dim=-1) - 1e-9).all())


def test_projection_identity_on_feasible_points_and_clip_when_slack():
    v = torch.tensor([[0.2, 0.3, 0.1], [1.5, -0.3, 0.5]], dtype=torch.float64)
    p = project_capped_simplex(v, torch.tensor([1.0, 5.0], dtype=torch.float64))
    assert torch.allclose(p[0], v[0])
    assert torch.allclose(p[1], torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64))
    # binding budget: uniform shift
    q = project_capped_simplex(torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64), 0.9)
    assert torch.allclose(q, torch.full((3,), 0.3, dtype=torch.float64))


# ---------------------------------------------------------------------------- optimiser
def check_feasible(p, x, budget):
    support = x != 0
    assert bool(((p >= 0) & (p <= 1)).all())
    assert bool((p[~support] == 0).all())
    cap = budget * support.sum(-1).to(p.dtype)
    assert bool((p.sum(-1) <= cap + 1e-9).all())


@pytest.mark.parametrize("budget", [0.05, 0.3, 0.8, 1.0])
def test_optimizer_feasible_and_monotone(small_hodge, budget):
    x = random_flows(small_hodge.complex.num_edges, 16, density=0.6, seed=4)
    p, history = optimize_drop_probabilities(x, small_hodge, budget, return_history=True)
    assert p.shape == x.shape and p.dtype == x.dtype
    check_feasible(p, x, budget)
    assert history.dim() == 2 and history.shape[1] == 16
    assert bool((history[1:] - history[:-1] <= 1e-12).all())
    # the returned p has the last recorded objective
    projs = full_projectors(small_hodge)
    final = hodge_mask_objective(x, p, {k: v.expand(16, -1, -1) for k, v in projs.items()})
    assert torch.allclose(final, history[-1], atol=1e-9)


def test_optimizer_reaches_stationary_point(small_hodge):
    x = random_flows(small_hodge.complex.num_edges, 8, density=0.6, seed=6)
    p = optimize_drop_probabilities(x, small_hodge, 0.4, tol=1e-9, num_steps=5000)
    projs = {k: v.expand(8, -1, -1) for k, v in full_projectors(small_hodge).items()}
    pp = p.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(hodge_mask_objective(x, pp, projs).sum(), pp)
    support = x != 0
    cap = 0.4 * support.sum(-1).double()
    # projected-gradient fixed point for a small step
    moved = project_capped_simplex(p - 1e-3 * grad, cap, mask=support) - p
    assert moved.abs().max() < 1e-6


def test_optimizer_fixed_lr_monotone_with_small_step(small_hodge):
    x = random_flows(small_hodge.complex.num_edges, 6, density=0.6, seed=7)
    p, history = optimize_drop_probabilities(
        x, small_hodge, 0.3, lr=1e-3, num_steps=50, return_history=True
    )
    check_feasible(p, x, 0.3)
    assert history.shape[0] == 51
    assert bool((history[1:] - history[:-1] <= 1e-12).all())
    assert bool((history[-1] < history[0]).all())


def test_optimizer_improves_on_uniform_start(small_hodge):
    x = random_flows(small_hodge.complex.num_edges, 10, density=0.6, seed=8)
    _, history = optimize_drop_probabilities(x, small_hodge, 0.3, return_history=True)
    assert bool((history[-1] < history[0] - 1e-6).all())


def test_optimizer_zero_flow_and_budget_zero(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 3, seed=9)
    x[1] = 0.0
    # perturbing everything: the whole budget is spent on non-zero flows
    p = optimize_drop_probabilities(x, small_hodge, 0.5, perturb=COMPONENTS, preserve=())
    assert bool((p[1] == 0).all())
    assert p[0].sum().item() == pytest.approx(0.5 * (x[0] != 0).sum().item(), rel=1e-9)
    assert bool((optimize_drop_probabilities(torch.zeros(n1), small_hodge, 0.5) == 0).all())
    assert bool((optimize_drop_probabilities(x, small_hodge, 0.0) == 0).all())


def test_optimizer_single_sample_and_batch_agree(small_hodge):
    x = random_flows(small_hodge.complex.num_edges, 5, seed=10)
    batched = optimize_drop_probabilities(x, small_hodge, 0.3)
    single = optimize_drop_probabilities(x[2], small_hodge, 0.3)
    assert single.shape == x[2].shape
    assert torch.allclose(single, batched[2], atol=1e-9)


def test_optimizer_chunking_does_not_change_result(small_hodge):
    x = random_flows(small_hodge.complex.num_edges, 9, seed=11)
    one = optimize_drop_probabilities(x, small_hodge, 0.3)
    chunked = optimize_drop_probabilities(x, small_hodge, 0.3, max_block_elements=50)
    assert torch.allclose(one, chunked, atol=1e-9)


def test_optimizer_backends_agree():
    ops = random_complex(14, seed=1)
    x = random_flows(ops.num_edges, 6, seed=12)
    exact = optimize_drop_probabilities(x, HodgeDecomposition(ops, backend="exact"), 0.3)
    iterative = optimize_drop_probabilities(x, HodgeDecomposition(ops, backend="iterative"), 0.3)
    assert torch.allclose(exact, iterative, atol=1e-6)


def test_optimizer_float32_and_one_edge_support(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = torch.zeros(2, n1)
    x[0, 3] = 1.5  # one-edge support: the objective is linear in p
    x[1, :5] = 1.0
    p = optimize_drop_probabilities(x, small_hodge, 0.5)
    assert p.dtype == torch.float32
    check_feasible(p.double(), x.double(), 0.5 + 1e-6)


def test_optimizer_only_preserve_gives_zero(small_hodge):
    # nothing to perturb: dropping only hurts, so the optimum drops nothing
    x = random_flows(small_hodge.complex.num_edges, 4, seed=13)
    p = optimize_drop_probabilities(x, small_hodge, 0.4, perturb=(), preserve=COMPONENTS)
    assert p.abs().max() < 1e-6


def test_optimizer_trajectory_objective_preserves_curl_and_harmonic(trajectories):
    ds, hodge = trajectories
    x = ds._data.x_1.view(len(ds), -1).double()  # [S, N1]
    p = optimize_drop_probabilities(x, hodge, 0.3)
    check_feasible(p, x, 0.3)
    support = x != 0
    p_unif = support * (p.sum(-1, keepdim=True) / support.sum(-1, keepdim=True))
    assert torch.allclose(p_unif.sum(-1), p.sum(-1))  # same expected number of drops
    projs = full_projectors(hodge)
    s = x.shape[0]
    closed = {}
    for k in COMPONENTS:
        proj = projs[k].expand(s, -1, -1)
        closed[k] = (
            expected_hodge_distortion(x, p, proj),
            expected_hodge_distortion(x, p_unif, proj),
        )
    assert closed["harmonic"][0].mean() < closed["harmonic"][1].mean()
    assert closed["curl"][0].mean() < closed["curl"][1].mean()
    assert closed["gradient"][0].mean() > closed["gradient"][1].mean()
    # and with sampled masks (the quantity of the paper's Fig. 1)
    gen = torch.Generator().manual_seed(0)
    dist = {}
    for name, prob in (("opt", p), ("unif", p_unif)):
        drop = torch.rand(20, *x.shape, generator=gen, dtype=torch.float64) < prob
        diff = x * drop  # [20, S, N1]
        dist[name] = {k: (diff @ hodge.basis(k)).norm(dim=-1).mean() for k in COMPONENTS}
    assert dist["opt"]["harmonic"] < dist["unif"]["harmonic"]
    assert dist["opt"]["curl"] < dist["unif"]["curl"]


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"budget": -0.1}, ValueError, "budget"),
        ({"budget": 1.5}, ValueError, "budget"),
        ({"budget": float("nan")}, ValueError, "budget"),
        ({"budget": "0.3"}, TypeError, "budget"),
        ({"budget": True}, TypeError, "budget"),
        ({"perturb": ("gradient", "divergence")}, ValueError, "perturb"),
        ({"preserve": ("harmonics",)}, ValueError, "preserve"),
        ({"perturb": ("curl",), "preserve": ("curl",)}, ValueError, "both"),
        ({"preserve": ("curl", "curl")}, ValueError, "repeats"),
        ({"perturb": 3}, TypeError, "perturb"),
        ({"alpha": {"curl": -1.0}}, ValueError, "alpha"),
        ({"alpha": {"curl": float("nan")}}, ValueError, "alpha"),
        ({"alpha": {"rotation": 1.0}}, ValueError, "alpha"),
        ({"alpha": [1.0, 2.0]}, TypeError, "alpha"),
        ({"num_steps": 0}, ValueError, "num_steps"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"lr": -1.0}, ValueError, "lr"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"max_block_elements": 0}, ValueError, "max_block_elements"),
        ({"return_history": 1}, TypeError, "return_history"),
    ],
)
def test_optimizer_bad_arguments(small_hodge, kwargs, err, match):
    x = random_flows(small_hodge.complex.num_edges, 2, seed=0)
    args = {"budget": 0.3, **kwargs}
    with pytest.raises(err, match=match):
        optimize_drop_probabilities(x, small_hodge, **args)


def test_optimizer_bad_flows(small_hodge):
    n1 = small_hodge.complex.num_edges
    with pytest.raises(ValueError, match="NaN"):
        bad = torch.zeros(2, n1)
        bad[1, 3] = float("nan")
        optimize_drop_probabilities(bad, small_hodge, 0.3)
    with pytest.raises(ValueError, match="N1"):
        optimize_drop_probabilities(torch.ones(2, n1 + 1), small_hodge, 0.3)
    with pytest.raises(ValueError, match="shape"):
        optimize_drop_probabilities(torch.ones(2, 2, n1), small_hodge, 0.3)
    with pytest.raises(TypeError, match="floating"):
        optimize_drop_probabilities(torch.ones(2, n1, dtype=torch.long), small_hodge, 0.3)
    with pytest.raises(TypeError, match="HodgeDecomposition"):
        optimize_drop_probabilities(torch.ones(n1), small_hodge.complex, 0.3)


# ---------------------------------------------------------------------------- matrix free
@pytest.fixture
def matrix_free(monkeypatch):
    """Every non-empty support goes the matrix-free way (decompositions, no blocks)."""
    from topo_contrastive.transforms import _drop_probabilities

    monkeypatch.setattr(_drop_probabilities, "_MATRIX_FREE_MIN", 0)


@pytest.mark.parametrize("weighted", [False, True])
def test_matrix_free_path_equals_blocks_at_a_fixed_step(small_hodge, monkeypatch, weighted):
    # at a fixed step (and fewer than 10 steps: no stopping test) both paths take the same
    # iterates: M q by decompositions equals M q by the blocks up to round-off
    hodge = small_hodge
    if weighted:
        w = np.random.default_rng(0).uniform(0.2, 3.0, hodge.complex.num_edges)
        hodge = HodgeDecomposition(hodge.complex.with_weights(edge=w), backend="exact")
    x = random_flows(hodge.complex.num_edges, 6, density=0.6, seed=20)
    x[1] = 0  # a zero flow
    kwargs = dict(lr=0.05, num_steps=9, return_history=True, alpha={"curl": 2.0})
    blocks, hist_blocks = optimize_drop_probabilities(x, hodge, 0.4, **kwargs)
    from topo_contrastive.transforms import _drop_probabilities

    monkeypatch.setattr(_drop_probabilities, "_MATRIX_FREE_MIN", 0)
    free, hist_free = optimize_drop_probabilities(x, hodge, 0.4, **kwargs)
    assert torch.allclose(free, blocks, atol=1e-10) and bool((free[1] == 0).all())
    assert torch.allclose(hist_free, hist_blocks, atol=1e-10)


def test_matrix_free_adaptive_feasible_monotone_and_close_to_blocks(small_hodge, matrix_free):
    x = random_flows(small_hodge.complex.num_edges, 8, density=0.6, seed=21)
    p, history = optimize_drop_probabilities(x, small_hodge, 0.3, return_history=True)
    check_feasible(p, x, 0.3)
    assert bool((history[1:] - history[:-1] <= 1e-12).all())
    projs = {k: v.expand(8, -1, -1) for k, v in full_projectors(small_hodge).items()}
    assert torch.allclose(hodge_mask_objective(x, p, projs), history[-1], atol=1e-9)
    assert bool((history[-1] < history[0] - 1e-6).all())


def test_matrix_free_lipschitz_bound_holds():
    from topo_contrastive.transforms._drop_probabilities import _spectral_bound

    gen = torch.Generator().manual_seed(0)
    for n, k in ((5, 3), (12, 2), (30, 3)):
        # complementary orthogonal projectors P_k and weights c_k of either sign
        q, _ = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64))
        cuts = sorted(torch.randperm(n - 1, generator=gen)[: k - 1].add(1).tolist())
        projs = [u @ u.T for u in torch.tensor_split(q, cuts, dim=1)]
        c = torch.randn(4, k, generator=gen, dtype=torch.float64)
        x = torch.randn(4, n, generator=gen, dtype=torch.float64) * (torch.rand(4, n) < 0.7)
        mat = torch.einsum("bk,kij->bij", c, torch.stack(projs))
        diag = torch.diagonal(mat, dim1=-2, dim2=-1)
        hess = 2 * x[:, :, None] * (mat - torch.diag_embed(diag)) * x[:, None, :]
        true = torch.linalg.eigvalsh(hess).abs().amax(-1)
        bound = _spectral_bound(c, x.square().amax(-1), diag * x.square())
        assert bool((bound >= true * (1 - 1e-12)).all())
