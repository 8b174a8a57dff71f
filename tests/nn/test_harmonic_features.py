"""Harmonic features at any size: the seeded sketch S = P_H G against the exact projector
(distortion of norms and inner products of harmonic parts), reproducibility, the choice by
the memory budget, the HodgeReadout and checkpoints on the sketch path."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.spatial
import torch

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.hodge import _iterative as iterative
from topo_contrastive.io import load_encoder, save_encoder
from topo_contrastive.nn import SCNN, HodgeReadout, canonical_harmonic_basis
from topo_contrastive.nn.harmonic_features import (
    DEFAULT_HARMONIC_BUDGET,
    harmonic_budget,
    harmonic_sketch,
    plan_harmonic_features,
    sketch_distortion_bound,
    use_harmonic_budget,
)


def _holes_complex(seed: int = 0, points: int = 150, drop: int = 40) -> ComplexOperators:
    """A Delaunay complex with ``drop`` triangles left unfilled (beta_1 in the tens)."""
    rng = np.random.default_rng(seed)
    tri = scipy.spatial.Delaunay(rng.random((points, 2))).simplices
    edges = np.unique(
        np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), 1), axis=0
    )
    keep = np.sort(rng.permutation(len(tri))[drop:])
    return ComplexOperators.from_simplices(edges, np.sort(tri[keep], 1), points)


@pytest.fixture(scope="module")
def holes():
    ops = _holes_complex()
    hodge = HodgeDecomposition(ops)
    u = hodge.basis("harmonic").numpy()
    return ops, hodge, u @ u.T  # P_H, [N1, N1]


def _distortion(S, P, x):
    """max_ij |<S^T x_i, S^T x_j> - <P x_i, P x_j>| / (|P x_i| |P x_j|), and the RMS of that
    ratio against its standard deviation sqrt((1 + cos^2) / k) over the pairs i <= j."""
    a, u = x @ S, x @ P  # [n, k], [n, N1]
    exact = u @ u.T
    norms = np.sqrt(np.diag(exact))
    err = np.abs(a @ a.T - exact) / np.outer(norms, norms)
    cos = exact / np.outer(norms, norms)
    iu = np.triu_indices(len(x))
    expected = np.sqrt(np.mean((1 + cos[iu] ** 2) / S.shape[1]))
    return err.max(), np.sqrt(np.mean(err[iu] ** 2)) / expected


@pytest.mark.parametrize("k", [64, 256, 1024])
def test_sketch_keeps_inner_products_of_harmonic_parts(holes, k):
    ops, hodge, P = holes
    assert hodge.dims["harmonic"] >= 20
    S = harmonic_sketch(hodge, k, seed=3)
    assert S.shape == (ops.num_edges, k)
    # its columns are harmonic: P_H S = S, B1 S = 0, B2^T S = 0
    np.testing.assert_allclose(P @ S, S, atol=1e-10)
    assert np.abs(ops.B1 @ S).max() < 1e-10 and np.abs(ops.B2.T @ S).max() < 1e-10
    n = 32  # seeded flows with large gradient and curl parts
    x = np.random.default_rng(7).standard_normal((n, ops.num_edges))
    worst, rms = _distortion(S, P, x)
    bound = sketch_distortion_bound(k, n)
    if k >= 256:  # the stated bound exists for these k (inf for k = 64, n = 32)
        assert worst <= bound < 1
    assert worst <= 6 * np.sqrt(2 / k)  # a few standard deviations of the largest error
    assert 0.6 < rms < 1.5  # the error's spread is the Gaussian sketch's sqrt((1+cos^2)/k)


def test_measured_distortion_at_the_default_dimension(holes):
    # the numbers quoted in docs/design.md: k = 256, 64 seeded flows, four sketch seeds;
    # the bound at delta = 0.01 is 0.593
    ops, hodge, P = holes
    x = np.random.default_rng(0).standard_normal((64, ops.num_edges))
    runs = [_distortion(harmonic_sketch(hodge, 256, seed=s), P, x) for s in range(4)]
    worst = [w for w, _ in runs]
    assert max(worst) < 0.45 < 0.59 < sketch_distortion_bound(256, 64) < 0.6
    assert sorted(worst)[1] < 0.25  # three of the four seeds within 0.25
    assert 0.8 < np.mean([r for _, r in runs]) < 1.3


def test_gradient_and_curl_flows_have_zero_features(holes):
    ops, hodge, _ = holes
    S = harmonic_sketch(hodge, 32)
    rng = np.random.default_rng(1)
    grad = ops.B1.T @ rng.standard_normal(ops.num_nodes)
    curl = ops.B2 @ rng.standard_normal(ops.num_faces)
    assert np.abs(grad @ S).max() < 1e-9 * np.abs(grad).max()
    assert np.abs(curl @ S).max() < 1e-9 * np.abs(curl).max()


def test_seeded_and_the_same_for_every_backend(holes, monkeypatch):
    ops, hodge, _ = holes
    a = harmonic_sketch(hodge, 40, seed=5)
    b = harmonic_sketch(HodgeDecomposition(ops), 40, seed=5)  # a fresh decomposition
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, harmonic_sketch(hodge, 40, seed=6))
    # the iterative backend without a stored basis: the same matrix by solves
    monkeypatch.setattr(iterative, "_MAX_HARMONIC_BASIS_ENTRIES", 1)
    it = HodgeDecomposition(ops, backend="iterative")
    with pytest.raises(ValueError, match="too many to store"):
        it.basis("harmonic")
    np.testing.assert_allclose(harmonic_sketch(it, 40, seed=5), a, atol=1e-9)


def test_features_turn_with_the_edges(holes):
    ops, hodge, _ = holes
    sign = np.random.default_rng(2).choice([-1.0, 1.0], size=ops.num_edges)
    D = sp.diags(sign)
    B2 = (D @ ops.B2).tocsc()
    # a triangle whose edges now all run along its boundary gets the opposite orientation
    tri = np.where(np.asarray((B2.toarray() > 0).sum(0) == 3).ravel(), -1.0, 1.0)
    turned = ComplexOperators.from_incidence(ops.B1 @ D, B2 @ sp.diags(tri))
    S, St = harmonic_sketch(hodge, 16), harmonic_sketch(HodgeDecomposition(turned), 16)
    np.testing.assert_allclose(St, S * sign[:, None], atol=1e-10)  # S turns with the edges
    x = np.random.default_rng(3).standard_normal((5, ops.num_edges))
    np.testing.assert_allclose((x * sign) @ St, x @ S, atol=1e-10)  # features unchanged


def _exact_need(n1, beta):  # the bytes the plan books for building the canonical basis
    return 6 * 8 * n1 * beta


def _sketch_need(n1, k):  # the bytes the plan books for building a sketch of k directions
    return 8 * n1 * (2 * k + 5 * min(k, 32) + 13)


def test_plan_exact_where_the_basis_fits(holes):
    ops, hodge, _ = holes
    beta, n1 = hodge.dims["harmonic"], ops.num_edges
    assert harmonic_budget() == DEFAULT_HARMONIC_BUDGET
    plan = plan_harmonic_features(hodge)
    assert (plan.kind, plan.dim) == ("exact", beta)
    assert plan.line() == f"harmonic features: exact basis (beta_1 = {beta})"
    assert plan_harmonic_features(hodge, budget=_exact_need(n1, beta)).kind == "exact"
    small = plan_harmonic_features(hodge, budget=_exact_need(n1, beta) - 1)
    k = small.dim  # the most directions whose building fits
    assert small.kind == "sketch" and _sketch_need(n1, k) <= small.budget
    assert _sketch_need(n1, k + 1) > small.budget
    with use_harmonic_budget(_sketch_need(n1, 5) + 7):
        plan = plan_harmonic_features(hodge)
    assert harmonic_budget() == DEFAULT_HARMONIC_BUDGET  # restored
    assert plan.line() == (
        f"harmonic features: sketch of k = 5 directions (beta_1 = {beta} too large for a "
        f"basis within the {_sketch_need(n1, 5) / 2**20:.3g} MiB budget)"
    )
    with pytest.raises(ValueError, match="holds not one direction.*--harmonic-budget"):
        plan_harmonic_features(hodge, budget=_sketch_need(n1, 1) - 1)
    # a given sketch_dim or kind="exact" is kept (a checkpoint's readout loads as saved)
    assert plan_harmonic_features(hodge, budget=_sketch_need(n1, 9), sketch_dim=10).dim == 10
    assert plan_harmonic_features(hodge, budget=8 * n1, kind="exact").kind == "exact"


def test_the_budget_bounds_the_measured_peak(holes, monkeypatch):
    # the plan books what building the features takes at its peak (tracemalloc sees numpy's
    # allocations), on the exact backend and the iterative one without a stored basis
    import tracemalloc

    from topo_contrastive.nn import harmonic_features

    ops, hodge, _ = holes
    monkeypatch.setattr(iterative, "_MAX_HARMONIC_BASIS_ENTRIES", 1)
    solves = HodgeDecomposition(ops, backend="iterative")
    beta, n1 = hodge.dims["harmonic"], ops.num_edges
    builds = [(lambda: canonical_harmonic_basis(hodge), _exact_need(n1, beta))]
    builds += [(lambda h=h, k=k: harmonic_sketch(h, k, 11), _sketch_need(n1, k))
               for h in (hodge, solves) for k in (1, 8, 32, 40)]  # fmt: skip
    for build, need in builds:
        harmonic_features._BASES.clear()
        harmonic_features._SKETCHES.clear()
        tracemalloc.start()
        build()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert 0.3 * need < peak <= need


def test_harmonic_matrix_checks_the_budget_before_allocating(holes, monkeypatch):
    # a budget that holds the matrix but not the working memory of building it is refused
    # before anything is allocated (no projection runs)
    from topo_contrastive.nn.harmonic_features import harmonic_matrix

    ops, hodge, _ = holes
    calls = []
    monkeypatch.setattr(HodgeDecomposition, "project", lambda *a, **k: calls.append(1))
    fresh = HodgeDecomposition(ops, backend="exact")
    with use_harmonic_budget(8 * ops.num_edges * 3):  # a [N1, 3] matrix, not its building
        with pytest.raises(ValueError, match="holds not one direction"):
            harmonic_matrix(fresh)
    assert calls == []


def test_readout_default_is_the_exact_basis_and_sketch_on_request(holes):
    ops, hodge, _ = holes
    exact = HodgeReadout(hodge)
    assert exact.harmonic == "exact" and exact.harmonic_dim == exact.beta1
    np.testing.assert_array_equal(
        exact.harmonic_basis.numpy(), canonical_harmonic_basis(hodge)[0].astype(np.float32)
    )
    sk = HodgeReadout(hodge, harmonic="sketch", sketch_dim=24, sketch_seed=1)
    assert (sk.harmonic, sk.harmonic_dim, sk.beta1) == ("sketch", 24, hodge.dims["harmonic"])
    assert sk.out_features(3) == 3 + 24 * 3
    H = torch.randn(4, ops.num_edges, 3, dtype=torch.float64)
    S = torch.from_numpy(harmonic_sketch(hodge, 24, 1)).float().double()
    want = torch.cat([H.mean(1), (S.t() @ H).reshape(4, -1)], 1)
    torch.testing.assert_close(sk(H), want)
    assert "sketch_dim=24, sketch_seed=1" in repr(sk)


def test_readout_at_scale_picks_the_sketch_where_the_basis_used_to_be_refused(monkeypatch):
    ops = _holes_complex(1, points=80, drop=20)
    monkeypatch.setattr(iterative, "_MAX_HARMONIC_BASIS_ENTRIES", 1)
    hodge = HodgeDecomposition(ops, backend="iterative")
    readout = HodgeReadout(hodge)
    assert readout.harmonic == "sketch" and readout.harmonic_dim == 256
    assert readout.harmonic_line().endswith("the 'iterative' backend keeps no basis)")
    with pytest.raises(ValueError, match="too many to store"):
        HodgeReadout(hodge, harmonic="exact")


def test_checkpoint_keeps_the_sketch(tmp_path):
    ops = _holes_complex(2, points=60, drop=10)
    hodge = HodgeDecomposition(ops)
    torch.manual_seed(0)
    enc = SCNN(hidden_channels=4, readout=HodgeReadout(hodge, harmonic="sketch", sketch_dim=8))
    save_encoder(enc, tmp_path / "e.pt", complex=ops)
    loaded, meta = load_encoder(tmp_path / "e.pt", complex=hodge)
    opts = meta["architecture"]["readout_options"]
    assert (opts["harmonic"], opts["sketch_dim"], opts["sketch_seed"]) == ("sketch", 8, 0)
    assert loaded.readout.harmonic == "sketch" and loaded.out_channels == enc.out_channels
    x = torch.randn(3, ops.num_edges, 1)
    L = ops.laplacians()
    torch.testing.assert_close(loaded(x, L), enc.eval()(x, L))
    obj = torch.load(tmp_path / "e.pt", weights_only=True)
    del obj["metadata"]["architecture"]["readout_options"]["sketch_dim"]
    torch.save(obj, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="a sketch without an integer 'sketch_dim'"):
        load_encoder(tmp_path / "bad.pt", complex=hodge)
    # an exact-basis checkpoint records no sketch entries (earlier files load as before)
    save_encoder(SCNN(hidden_channels=4, readout=HodgeReadout(hodge)), tmp_path / "x.pt", ops)
    _, meta = load_encoder(tmp_path / "x.pt", complex=hodge)
    assert "harmonic" not in meta["architecture"]["readout_options"]


def test_bound_and_bad_arguments(holes):
    _, hodge, _ = holes
    assert sketch_distortion_bound(64, 32) == float("inf")
    assert sketch_distortion_bound(1024, 64) < sketch_distortion_bound(256, 64)
    eps = sketch_distortion_bound(256, 64)
    assert abs(eps**2 / 4 - eps**3 / 6 - np.log(2 * 64**2 / 0.01) / 256) < 1e-12
    with pytest.raises(ValueError, match="`k` must be >= 1"):
        harmonic_sketch(hodge, 0)
    with pytest.raises(ValueError, match="`budget` must be a positive"):
        plan_harmonic_features(hodge, budget=0)
    with pytest.raises(TypeError, match="`budget` must be an int"):
        plan_harmonic_features(hodge, budget=1.5)
    with pytest.raises(ValueError, match="`kind` must be"):
        plan_harmonic_features(hodge, kind="basis")
    with pytest.raises(ValueError, match="`sketch_seed` must be >= 0"):
        HodgeReadout(hodge, sketch_seed=-1)


def test_bad_sketch_and_decomposition_arguments_name_themselves(holes):
    ops, hodge, _ = holes
    for k in (2.5, "8", None, True):
        with pytest.raises(TypeError, match=r"`k` must be an int, got"):
            harmonic_sketch(hodge, k)
    for seed in (0.7, None, "0"):  # 0.7 used to be the seed 0
        with pytest.raises(TypeError, match=r"`seed` must be an int, got"):
            harmonic_sketch(hodge, 8, seed=seed)
    with pytest.raises(ValueError, match=r"`seed` must be an int in \[0, 2147483647\]"):
        harmonic_sketch(hodge, 8, seed=2**31)
    with pytest.raises(TypeError, match="`hodge` must be a HodgeDecomposition, got"):
        harmonic_sketch(ops, 8)
    with pytest.raises(TypeError, match=r"`tol` must be a real number, got str \('x'\)"):
        HodgeDecomposition(ops, tol="x")
    with pytest.raises(ValueError, match=r"`tol` must be a finite number > 0, got nan"):
        HodgeDecomposition(ops, tol=float("nan"))
    with pytest.raises(TypeError, match=r"`max_exact_edges` must be an int, got str"):
        HodgeDecomposition(ops, max_exact_edges="10")
    # a readout across complexes has no harmonic block: a sketch there is refused
    for kwargs in ({"harmonic": "sketch", "sketch_dim": 8}, {"harmonic": "exact"},
                   {"sketch_dim": 8}):  # fmt: skip
        with pytest.raises(ValueError, match="without a complex .* need the complex"):
            HodgeReadout(None, energies=True, **kwargs)
    assert HodgeReadout(None, energies=True).harmonic == "none"


def _cube() -> ComplexOperators:
    """The surface of a cube: 8 nodes, 12 edges, 6 squares (beta_1 = 0, beta_2 = 1)."""
    faces = [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6],
             [3, 0, 4, 7]]  # fmt: skip
    edges = {tuple(sorted((f[i], f[(i + 1) % 4]))) for f in faces for i in range(4)}
    return ComplexOperators.from_cells(sorted(edges), faces)


def test_sketch_on_a_cell_complex_is_exact_against_the_harmonic_coordinates(monkeypatch):
    # the sketch used to ask a cell complex for `triangles`; on polygons it is S = P_H G,
    # so S^T h = G^T P_H h = (U_H^T G)^T (U_H^T h) for any orthonormal basis U_H
    from tests._cell_complexes import random_planar_cell_complex

    ops = random_planar_cell_complex(np.random.default_rng(4), 90, fill=0.6)
    assert not ops.is_simplicial
    hodge = HodgeDecomposition(ops, backend="exact")
    U = hodge.basis("harmonic").numpy()
    assert U.shape[1] >= 10
    k, seed, n1 = 256, 9, ops.num_edges
    S = harmonic_sketch(hodge, k, seed)
    signs = np.where(ops.edges[:, 0] < ops.edges[:, 1], 1.0, -1.0)  # low -> high: +1
    G = np.random.default_rng(seed).standard_normal((k, n1)).T * signs[:, None] / np.sqrt(k)
    h = np.random.default_rng(1).standard_normal((20, n1))
    np.testing.assert_allclose(h @ S, (h @ U) @ (U.T @ G), atol=1e-10)
    assert np.abs(ops.B1 @ S).max() < 1e-10 and np.abs(ops.B2.T @ S).max() < 1e-10
    worst, _ = _distortion(S, U @ U.T, h)  # norms and inner products of harmonic parts
    assert worst <= sketch_distortion_bound(k, 20) < 1
    # the readout and evaluate's matrix take the sketch on a cell complex
    readout = HodgeReadout(hodge, harmonic="sketch", sketch_dim=16, sketch_seed=seed)
    np.testing.assert_allclose(readout.harmonic_basis.numpy(), S[:, :16] * np.sqrt(k / 16),
                               rtol=1e-6, atol=1e-6)  # fmt: skip
    # the iterative backend without a stored basis gives the same matrix by solves
    monkeypatch.setattr(iterative, "_MAX_HARMONIC_BASIS_ENTRIES", 1)
    solves = HodgeDecomposition(ops, backend="iterative")
    np.testing.assert_allclose(harmonic_sketch(solves, k, seed), S, atol=1e-8)


def test_sketch_of_2_cell_signals_turns_with_the_polygons():
    # rank 2 of a cell complex: reference signs of the squares (the smallest node's smaller
    # neighbour next), so a re-oriented 2-cell gets the sign-flipped row
    ops = _cube()
    hodge = HodgeDecomposition(ops, rank=2)
    assert hodge.dims["harmonic"] == 1
    S = harmonic_sketch(hodge, 8, 2)
    flip = np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
    turned = ComplexOperators.from_incidence(ops.B1, ops.B2 @ sp.diags(flip))
    np.testing.assert_allclose(harmonic_sketch(HodgeDecomposition(turned, rank=2), 8, 2),
                               S * flip[:, None], atol=1e-12)  # fmt: skip
    u = hodge.basis("harmonic").numpy()[:, 0]  # the closed surface's 2-cycle
    np.testing.assert_allclose(S, np.outer(u, u) @ S, atol=1e-12)  # columns in ker L2
