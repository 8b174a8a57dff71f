import math
from typing import NamedTuple

import numpy as np
import pytest
import torch

from tests.losses._naive import naive_weights
from topo_contrastive import ComplexOperators
from topo_contrastive.losses import hodge_negative_weights


class Parts(NamedTuple):  # stands in for topo_contrastive.hodge.HodgeParts
    gradient: torch.Tensor
    curl: torch.Tensor
    harmonic: torch.Tensor


def _random_parts(B=6, N1=5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return Parts(*(torch.randn(B, N1, generator=g, dtype=dtype) for _ in range(3)))


def _vec(*xs):
    return torch.tensor(xs, dtype=torch.float64)


@pytest.mark.parametrize("gamma", [(1.0, 1.0, 1.0), (0.0, 1.0, 1.0), (2.0, 0.5, 0.0)])
def test_equals_naive_loop(gamma):
    parts = _random_parts(seed=1)
    # a zero component for some samples exercises the cos = 0 rule in the naive loop too
    parts.curl[2] = 0.0
    parts.harmonic[4] = 0.0
    w = hodge_negative_weights(parts, gamma)
    ref = torch.tensor(naive_weights(parts, gamma), dtype=torch.float64)
    torch.testing.assert_close(w, ref, rtol=0, atol=1e-12)


def test_mean_one_over_negatives_zero_on_diagonal_non_negative():
    w = hodge_negative_weights(_random_parts(B=7, seed=2), (1.0, 0.3, 2.0))
    assert w.shape == (7, 7)
    assert torch.equal(w.diagonal(), torch.zeros(7, dtype=w.dtype))
    torch.testing.assert_close(w.sum(dim=1) / 6, torch.ones(7, dtype=w.dtype))
    assert (w >= 0).all()


def test_all_gamma_zero_gives_exactly_uniform_weights():
    w = hodge_negative_weights(_random_parts(B=5, seed=3), (0.0, 0.0, 0.0))
    assert torch.equal(w, 1.0 - torch.eye(5, dtype=torch.float64))


def test_hand_built_zero_components_follow_design():
    # x0: G=(1,0), C=0, H=(0,1); x1: G=(1,0), C=(1,0), H=0; x2: G=(-1,0), C=0, H=(0,1)
    z = _vec(0, 0)
    parts = Parts(
        torch.stack([_vec(1, 0), _vec(1, 0), _vec(-1, 0)]),
        torch.stack([z, _vec(1, 0), z]),
        torch.stack([_vec(0, 1), z, _vec(0, 1)]),
    )
    # S(0,1) = 0 + 1 + 1 = 2 (a zero component has cos 0, also when both are zero)
    # S(0,2) = 2 + 1 + 0 = 3, S(1,2) = 2 + 1 + 1 = 4; mean one over the 2 negatives
    expected = torch.tensor(
        [[0, 4 / 5, 6 / 5], [2 / 3, 0, 4 / 3], [6 / 7, 8 / 7, 0]], dtype=torch.float64
    )
    torch.testing.assert_close(hodge_negative_weights(parts), expected, rtol=0, atol=1e-15)


def test_spectrally_farther_negatives_get_larger_weights():
    # harmonic parts at angles 0 (anchor), 30, 60, 90, 135, 180 degrees; G and C identical
    angles = [0, 30, 60, 90, 135, 180]
    harm = torch.stack([_vec(math.cos(math.radians(a)), math.sin(math.radians(a))) for a in angles])
    same = torch.ones(len(angles), 2, dtype=torch.float64)
    parts = Parts(same, same.clone(), harm)
    w = hodge_negative_weights(parts, (1.0, 1.0, 1.0))[0, 1:]
    assert (w[1:] > w[:-1]).all(), w
    cd = torch.tensor([1 - math.cos(math.radians(a)) for a in angles[1:]], dtype=torch.float64)
    torch.testing.assert_close(w, cd * len(cd) / cd.sum(), rtol=0, atol=1e-14)
    # the gradient component alone: moving the gradient part away raises the weight too
    grad = harm.clone()
    parts = Parts(grad, same, same.clone())
    w_g = hodge_negative_weights(parts, (1.0, 0.0, 0.0))[0, 1:]
    assert (w_g[1:] > w_g[:-1]).all()
    # gamma selects the component: with only curl weighted (curl parts identical) -> uniform
    assert torch.equal(
        hodge_negative_weights(parts, (0.0, 1.0, 0.0))[0, 1:], torch.ones(5).double()
    )


def test_on_a_real_hodge_decomposition():
    # square 0-1-2-3 with diagonal (0,2); triangle (0,1,2) filled, (0,2,3) is a hole
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3], [0, 3], [0, 2]], [[0, 1, 2]])
    b1, b2 = ops.B1.toarray(), ops.B2.toarray()
    p_grad = b1.T @ np.linalg.pinv(b1 @ b1.T) @ b1
    p_curl = b2 @ np.linalg.pinv(b2.T @ b2) @ b2.T
    p_harm = np.eye(b1.shape[1]) - p_grad - p_curl
    loop = ops.path_to_flow([0, 2, 3, 0]).numpy()  # around the hole
    flows = np.stack([loop, loop, -loop, b1.T @ np.array([1.0, -2.0, 0.5, 0.0])])
    parts = torch.tensor(np.stack([flows @ p.T for p in (p_grad, p_curl, p_harm)]))  # [3,4,N1]
    # harmonic only: x1 = x0 (CD 0), x2 = -x0 (CD 2), x3 a gradient flow (no harmonic: CD 1)
    w = hodge_negative_weights(parts, (0.0, 0.0, 1.0))
    torch.testing.assert_close(
        w[0], torch.tensor([0.0, 0.0, 2.0, 1.0]).double(), atol=1e-12, rtol=0
    )


def test_anchor_equal_to_all_negatives_falls_back_to_uniform():
    g = torch.Generator().manual_seed(4)
    one = torch.randn(3, 1, 7, generator=g)  # float32: cosines are 1 only up to rounding
    parts = one.expand(3, 5, 7)  # five identical samples
    w = hodge_negative_weights(parts)
    assert torch.equal(w, 1.0 - torch.eye(5))
    # anchor 0 equal to sample 1 only: that negative gets weight 0, the other one gets 2
    p = _random_parts(B=3, seed=5)
    p = Parts(*(t.index_copy(0, torch.tensor([1]), t[:1]) for t in p))
    w = hodge_negative_weights(p)
    torch.testing.assert_close(w[0], torch.tensor([0.0, 0.0, 2.0]).double(), atol=1e-12, rtol=0)


def test_zero_flow_and_relative_eps():
    p = _random_parts(B=4, seed=6)
    p.gradient[1] = 0.0
    p.curl[1] = 0.0
    p.harmonic[1] = 0.0  # an all-zero flow: every CD with it is 1
    w = hodge_negative_weights(p)
    assert torch.isfinite(w).all()
    ref = torch.tensor(naive_weights(p, (1.0, 1.0, 1.0)), dtype=torch.float64)
    torch.testing.assert_close(w, ref, rtol=0, atol=1e-12)
    # a component 1e-9 of the flow's norm counts as zero under eps=1e-6 (and not under eps=0)
    q = _random_parts(B=4, seed=7)
    tiny = q.harmonic[0] / q.harmonic[0].norm() * 1e-9 * q.gradient[0].norm()
    q.harmonic[0] = tiny
    q.curl[0] = 0.0
    zeroed = Parts(q.gradient, q.curl, q.harmonic.index_fill(0, torch.tensor([0]), 0.0))
    torch.testing.assert_close(hodge_negative_weights(q), hodge_negative_weights(zeroed))
    assert not torch.allclose(hodge_negative_weights(q, eps=0.0), hodge_negative_weights(zeroed))


def test_scale_invariant_and_layouts_agree():
    p = _random_parts(B=5, seed=8)
    w = hodge_negative_weights(p, (1.0, 2.0, 0.5))
    scale = torch.rand(5, 1, dtype=torch.float64) * 100 + 0.01
    scaled = Parts(*(t * scale for t in p))
    torch.testing.assert_close(hodge_negative_weights(scaled, (1.0, 2.0, 0.5)), w)
    assert torch.equal(hodge_negative_weights(torch.stack(list(p)), (1.0, 2.0, 0.5)), w)
    assert torch.equal(hodge_negative_weights(list(p), (1.0, 2.0, 0.5)), w)
    assert torch.equal(hodge_negative_weights(p, torch.tensor([1.0, 2.0, 0.5])), w)
    assert hodge_negative_weights(Parts(*(t.float() for t in p))).dtype == torch.float32


def test_candidates_pool_rows_match_full_batch():
    p = _random_parts(B=7, seed=9)
    full = hodge_negative_weights(p, (1.0, 0.5, 2.0))
    local = Parts(*(t[2:5] for t in p))  # this "rank" holds samples 2, 3, 4 of the pool
    w = hodge_negative_weights(local, (1.0, 0.5, 2.0), candidates=p, anchor_offset=2)
    assert w.shape == (3, 7)
    torch.testing.assert_close(w, full[2:5], rtol=0, atol=1e-14)
    # anchors outside the pool (anchor_offset=None): all M candidates are negatives
    w_out = hodge_negative_weights(local, candidates=Parts(*(t[:2] for t in p)), anchor_offset=None)
    assert w_out.shape == (3, 2)
    torch.testing.assert_close(w_out.mean(dim=1), torch.ones(3, dtype=torch.float64))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"gamma": (1.0, -0.1, 1.0)}, ValueError, "gamma"),
        ({"gamma": (1.0, 1.0)}, ValueError, "three"),
        ({"gamma": (1.0, float("nan"), 1.0)}, ValueError, "gamma"),
        ({"gamma": (1.0, float("inf"), 1.0)}, ValueError, "gamma"),
        ({"gamma": "abc"}, TypeError, "gamma"),
        ({"gamma": (1.0, "a", 1.0)}, TypeError, "gamma"),
        ({"eps": -1e-3}, ValueError, "eps"),
        ({"eps": 1.0}, ValueError, "eps"),
        ({"anchor_offset": 1}, ValueError, "anchor_offset"),
    ],
)
def test_bad_hyper_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        hodge_negative_weights(_random_parts(B=3), **kwargs)


def test_bad_parts():
    p = _random_parts(B=3, N1=4)
    with pytest.raises(ValueError, match="three tensors"):
        hodge_negative_weights(p[:2])
    with pytest.raises(ValueError, match="share one shape"):
        hodge_negative_weights((p.gradient, p.curl, p.harmonic[:, :3]))
    with pytest.raises(ValueError, match=r"\[B, N1\]"):
        hodge_negative_weights((p.gradient[0], p.curl[0], p.harmonic[0]))
    with pytest.raises(ValueError, match=r"\[3, B, N1\]"):
        hodge_negative_weights(torch.randn(2, 3, 4))
    with pytest.raises(TypeError, match="floating"):
        hodge_negative_weights(torch.ones(3, 3, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="tensor"):
        hodge_negative_weights((p.gradient, p.curl, [[1.0]]))
    with pytest.raises(TypeError, match="sequence of three tensors"):
        hodge_negative_weights(3.0)
    with pytest.raises(ValueError, match="at least 2 samples"):
        hodge_negative_weights(Parts(*(t[:1] for t in p)))
    with pytest.raises(ValueError, match="N1"):
        hodge_negative_weights(p, candidates=torch.randn(3, 5, 7).double())
    with pytest.raises(ValueError, match="anchor_offset"):
        hodge_negative_weights(p, candidates=torch.randn(3, 4, 4).double(), anchor_offset=2)
    with pytest.raises(TypeError, match="anchor_offset"):
        hodge_negative_weights(p, candidates=torch.randn(3, 4, 4).double(), anchor_offset=1.0)
    nan = torch.stack(list(p)).index_fill(2, torch.tensor([1]), float("nan"))
    with pytest.raises(ValueError, match="`parts` must be finite"):
        hodge_negative_weights(nan)
    with pytest.raises(ValueError, match="`candidates` must be finite"):
        hodge_negative_weights(p, candidates=nan, anchor_offset=0)
