import math

import pytest
import torch

from tests.losses._naive import closed_form_aligned, naive_loss
from topo_contrastive.losses import InfoNCE


def _views(B=5, D=3, seed=0, dtype=torch.float64, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(B, D, generator=g, dtype=dtype) * scale
    z2 = torch.randn(B, D, generator=g, dtype=dtype) * scale
    return z1, z2


@pytest.mark.parametrize("include_positive", [True, False])
@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0])
def test_equals_naive_loop_value_and_gradient(include_positive, temperature):
    z1, z2 = _views(B=5, D=3, seed=1)
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    loss = InfoNCE(temperature, include_positive_in_denominator=include_positive)(a1, a2)
    loss.backward()
    b1, b2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    ref = naive_loss(b1, b2, temperature, include_positive)
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(a1.grad, b1.grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(a2.grad, b2.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("include_positive", [True, False])
def test_closed_form_for_aligned_orthonormal_views(include_positive):
    B, tau = 4, 0.2
    z = torch.eye(B, dtype=torch.float64) * 3.0  # norms do not matter
    loss = InfoNCE(tau, include_positive_in_denominator=include_positive)(z, z.clone())
    assert loss.item() == pytest.approx(closed_form_aligned(B, tau, include_positive), abs=1e-12)


def test_positive_in_denominator_adds_positive_term():
    z1, z2 = _views(seed=2)
    with_pos = InfoNCE(0.5, reduction="none")(z1, z2)
    without = InfoNCE(0.5, include_positive_in_denominator=False, reduction="none")(z1, z2)
    # l_with = -s + log(e^s + D), l_without = -s + log D  =>  l_with = log(1 + D e^{-s})
    # = softplus(l_without), elementwise
    torch.testing.assert_close(with_pos, torch.nn.functional.softplus(without))
    assert (with_pos > 0).all()


def test_symmetric_in_views_and_scale_invariant():
    z1, z2 = _views(seed=3)
    loss_fn = InfoNCE(0.3)
    torch.testing.assert_close(loss_fn(z1, z2), loss_fn(z2, z1), rtol=0, atol=1e-14)
    scale = torch.rand(z1.shape[0], 1, dtype=z1.dtype) * 10 + 0.1
    torch.testing.assert_close(loss_fn(z1 * scale, z2), loss_fn(z1, z2), rtol=0, atol=1e-12)


def test_reductions():
    z1, z2 = _views(B=6, seed=4)
    per = InfoNCE(0.5, reduction="none")(z1, z2)
    assert per.shape == (2, 6)
    torch.testing.assert_close(InfoNCE(0.5)(z1, z2), per.mean())
    torch.testing.assert_close(InfoNCE(0.5, reduction="sum")(z1, z2), per.sum())
    # row a holds the anchors of view a: swapping the views swaps the rows
    torch.testing.assert_close(InfoNCE(0.5, reduction="none")(z2, z1), per.flip(0))


@pytest.mark.parametrize("include_positive", [True, False])
def test_finite_at_small_temperature_and_large_norms(include_positive):
    z1, z2 = _views(B=16, D=8, seed=5, dtype=torch.float32, scale=1e3)
    z2 = z1 + 0.05 * z2  # near-duplicate positives: large logits at tau = 0.01
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    loss = InfoNCE(0.01, include_positive_in_denominator=include_positive)(a1, a2)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(a1.grad).all() and torch.isfinite(a2.grad).all()
    ref = InfoNCE(0.01, include_positive_in_denominator=include_positive)(z1.double(), z2.double())
    assert loss.item() == pytest.approx(ref.item(), rel=1e-3, abs=1e-3)
    # a raw exp of these logits overflows in float32; the logsumexp form must not
    assert math.isinf(torch.exp(torch.tensor(1 / 0.01, dtype=torch.float32)).item())


@pytest.mark.parametrize("scale", [1e20, 1e-30])
def test_huge_and_tiny_float32_embeddings_are_normalised_without_overflow(scale):
    # |z| ~ 1e20: the squares overflow float32 (F.normalize gives 0 rows, the loss of
    # all-zero embeddings); |z| ~ 1e-30: they underflow (rows far from unit norm)
    z1, z2 = _views(B=6, D=4, seed=11)
    a1 = (z1 * scale).float().requires_grad_()
    a2 = (z2 * scale).float().requires_grad_()
    loss = InfoNCE(0.3)(a1, a2)
    loss.backward()
    # the naive formula in float64 (no overflow there) on the same numbers
    b1 = (z1 * scale).float().double().requires_grad_()
    b2 = (z2 * scale).float().double().requires_grad_()
    ref = naive_loss(b1, b2, 0.3)
    ref.backward()
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
    zero = InfoNCE(0.3)(torch.zeros(6, 4), torch.zeros(6, 4))
    assert abs(loss.item() - zero.item()) > 0.1  # not the all-zero case
    # gradients ~ 1/scale: compare relative to the largest entry
    for got, want in ((a1.grad, b1.grad), (a2.grad, b2.grad)):
        assert torch.isfinite(got).all()
        err = (got.double() - want).abs().max() / want.abs().max()
        assert err < 1e-5


def test_float32_normal_range_matches_the_naive_formula():
    z1, z2 = _views(B=8, D=5, seed=12)
    a1, a2 = z1.float().requires_grad_(), z2.float().requires_grad_()
    loss = InfoNCE(0.2)(a1, a2)
    loss.backward()
    b1, b2 = z1.float().double().requires_grad_(), z2.float().double().requires_grad_()
    ref = naive_loss(b1, b2, 0.2)
    ref.backward()
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    torch.testing.assert_close(a1.grad.double(), b1.grad, rtol=0, atol=1e-6)
    torch.testing.assert_close(a2.grad.double(), b2.grad, rtol=0, atol=1e-6)


@pytest.mark.parametrize("include_positive", [True, False])
def test_gradcheck(include_positive):
    z1, z2 = _views(B=4, D=3, seed=6)
    loss_fn = InfoNCE(0.3, include_positive_in_denominator=include_positive)
    assert torch.autograd.gradcheck(
        loss_fn, (z1.requires_grad_(), z2.requires_grad_()), eps=1e-6, atol=1e-7
    )


def test_half_precision_is_computed_in_float32():
    z1, z2 = _views(seed=7, dtype=torch.float64)
    loss = InfoNCE(0.5)(z1.bfloat16(), z2.bfloat16())
    assert loss.dtype == torch.float32
    ref = InfoNCE(0.5)(z1.bfloat16().double(), z2.bfloat16().double())
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)


def test_gather_distributed_without_process_group_is_single_process():
    z1, z2 = _views(seed=8)
    torch.testing.assert_close(
        InfoNCE(0.5, gather_distributed=True)(z1, z2), InfoNCE(0.5)(z1, z2), rtol=0, atol=0
    )


def test_repr():
    assert repr(InfoNCE(0.1, include_positive_in_denominator=False)) == (
        "InfoNCE(temperature=0.1, include_positive_in_denominator=False, "
        "gather_distributed=False, reduction='mean')"
    )


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"temperature": -0.5}, ValueError, "temperature"),
        ({"temperature": float("nan")}, ValueError, "temperature"),
        ({"temperature": float("inf")}, ValueError, "temperature"),
        ({"temperature": 1e-45}, ValueError, r"temperature` must be finite and >= 1e-06"),
        ({"temperature": 9.9e-7}, ValueError, "overflow the logits"),
        ({"temperature": "0.5"}, TypeError, "temperature"),
        ({"temperature": True}, TypeError, "temperature"),
        ({"include_positive_in_denominator": 1}, TypeError, "include_positive_in_denominator"),
        ({"gather_distributed": "yes"}, TypeError, "gather_distributed"),
        ({"reduction": "avg"}, ValueError, "reduction"),
    ],
)
def test_bad_hyper_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        InfoNCE(**kwargs)


@pytest.mark.parametrize(
    "z1, z2, exc, match",
    [
        (torch.randn(4, 3), torch.randn(5, 3), ValueError, "same shape"),
        (torch.randn(4, 3), torch.randn(4, 2), ValueError, "same shape"),
        (torch.randn(1, 3), torch.randn(1, 3), ValueError, "at least 2 samples"),
        (torch.randn(4), torch.randn(4), ValueError, r"\[B, D\]"),
        (torch.randn(2, 4, 3), torch.randn(2, 4, 3), ValueError, r"\[B, D\]"),
        (torch.randn(0, 3), torch.randn(0, 3), ValueError, "non-empty"),
        (torch.ones(4, 3, dtype=torch.long), torch.ones(4, 3), TypeError, "floating"),
        ([[1.0, 2.0]], torch.randn(1, 2), TypeError, "z1"),
        (torch.tensor([[1.0, float("nan")], [0.0, 1.0]]), torch.randn(2, 2), ValueError,
         r"`z1` must be finite, got NaN or inf in rows \[0\]"),
        (torch.randn(3, 2), torch.tensor([[1.0, 0.0], [0.0, 1.0], [float("inf"), 1.0]]),
         ValueError, r"`z2` must be finite, got NaN or inf in rows \[2\]"),
    ],
)
def test_bad_inputs(z1, z2, exc, match):
    with pytest.raises(exc, match=match):
        InfoNCE()(z1, z2)


def test_the_smallest_temperature_gives_a_finite_loss_and_gradient():
    """At the smallest accepted temperature the logits stay finite (1e-45 gave NaN before)."""
    from topo_contrastive.losses._nt_xent import MIN_TEMPERATURE

    z1, z2 = _views(B=6, D=4, seed=2, dtype=torch.float32)
    a1 = z1.clone().requires_grad_()
    loss = InfoNCE(MIN_TEMPERATURE)(a1, z2)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(a1.grad).all()


@pytest.mark.parametrize("include_positive", [True, False])
def test_cross_view_negatives_equal_the_naive_loop(include_positive):
    """``negatives="cross_view"``: anchor (i, a) has the negatives (m, b), m != i, of the other
    view only; value and gradients equal the loop; ``"both"`` is the default exactly."""
    z1, z2 = _views(B=5, D=3, seed=13)
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    kw = {"include_positive_in_denominator": include_positive}
    loss = InfoNCE(0.4, negatives="cross_view", **kw)(a1, a2)
    loss.backward()
    b1, b2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    ref = naive_loss(b1, b2, 0.4, include_positive, negatives="cross_view")
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(a1.grad, b1.grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(a2.grad, b2.grad, rtol=0, atol=1e-12)
    assert abs(loss.item() - naive_loss(z1, z2, 0.4, include_positive).item()) > 1e-3
    assert torch.equal(InfoNCE(0.4, negatives="both", **kw)(z1, z2), InfoNCE(0.4, **kw)(z1, z2))
    # aligned orthonormal views: B - 1 negatives of cosine 0 per anchor
    z = torch.eye(4, dtype=torch.float64)
    den = (math.exp(1 / 0.2) if include_positive else 0.0) + 3
    got = InfoNCE(0.2, negatives="cross_view", **kw)(z, z.clone())
    assert got.item() == pytest.approx(-1 / 0.2 + math.log(den), abs=1e-12)


def test_the_functional_form_equals_the_module():
    from topo_contrastive.losses.functional import info_nce

    z1, z2 = _views(B=6, seed=14)
    for kw in ({}, {"negatives": "cross_view", "reduction": "none"}, {"temperature": 0.2}):
        assert torch.equal(info_nce(z1, z2, **kw), InfoNCE(**kw)(z1, z2))
    assert repr(InfoNCE(negatives="cross_view")).endswith("negatives='cross_view')")
    with pytest.raises(ValueError, match=r"`negatives` must be one of \('both', 'cross_view'\)"):
        info_nce(z1, z2, negatives="other")
