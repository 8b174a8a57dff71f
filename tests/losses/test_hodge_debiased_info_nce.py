import pytest
import torch

from tests.losses._naive import naive_loss, naive_weights
from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE, hodge_negative_weights


def _views(B=5, D=3, seed=0, dtype=torch.float64, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(B, D, generator=g, dtype=dtype) * scale
    z2 = torch.randn(B, D, generator=g, dtype=dtype) * scale
    return z1, z2


def _parts(B=5, N1=6, seed=100, dtype=torch.float64):
    """Per-sample parts (gradient, curl, harmonic), each [B, N1]: the naive loops' layout."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, N1, generator=g, dtype=dtype) for _ in range(3))


def _rows(parts):
    """The loss's layout, a PyG batch's ``hodge_parts`` [B * N1, 3]: sample-major rows."""
    return torch.stack([p.reshape(-1) for p in parts], dim=1)


@pytest.mark.parametrize("include_positive", [True, False])
@pytest.mark.parametrize("gamma", [(1.0, 1.0, 1.0), (0.0, 2.0, 0.5)])
def test_equals_naive_loop_value_and_gradient(include_positive, gamma):
    z1, z2 = _views(seed=1)
    parts = _parts()
    parts[1][3] = 0.0  # a zero curl component (cos = 0 rule)
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    loss_fn = HodgeDebiasedInfoNCE(
        0.4, gamma=gamma, include_positive_in_denominator=include_positive
    )
    loss = loss_fn(a1, a2, hodge_parts=_rows(parts))
    loss.backward()
    b1, b2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    ref = naive_loss(b1, b2, 0.4, include_positive, W=naive_weights(parts, gamma))
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(a1.grad, b1.grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(a2.grad, b2.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("include_positive", [True, False])
def test_uniform_weights_give_exactly_info_nce(include_positive):
    z1, z2 = _views(B=6, seed=2)
    info = InfoNCE(0.3, include_positive_in_denominator=include_positive)(z1, z2)
    kw = {"include_positive_in_denominator": include_positive}
    # all gamma = 0
    zero = HodgeDebiasedInfoNCE(0.3, gamma=(0, 0, 0), **kw)(z1, z2, hodge_parts=_rows(_parts(B=6)))
    assert torch.equal(zero, info)
    # weights all one (the diagonal entry is ignored, whatever it holds)
    ones = HodgeDebiasedInfoNCE(0.3, **kw)(z1, z2, weights=torch.full((6, 6), 1.0).double())
    assert torch.equal(ones, info)
    # identical Hodge parts for every sample: S = 0 for every pair -> uniform fallback
    same = tuple(p[:1].expand(6, -1) for p in _parts(B=6))
    assert torch.equal(HodgeDebiasedInfoNCE(0.3, **kw)(z1, z2, hodge_parts=_rows(same)), info)
    # equal dissimilarities (mutually orthogonal components): S = 3 for every pair -> w = 1
    eye = torch.eye(6, dtype=torch.float64)
    ortho = HodgeDebiasedInfoNCE(0.3, **kw)(z1, z2, hodge_parts=_rows((eye, eye, eye)))
    torch.testing.assert_close(ortho, info, rtol=0, atol=1e-7)


def test_hodge_parts_and_precomputed_weights_agree():
    z1, z2 = _views(seed=3)
    parts = _parts()
    loss_fn = HodgeDebiasedInfoNCE(0.5, gamma=(1.0, 0.5, 2.0))
    w = hodge_negative_weights(parts, (1.0, 0.5, 2.0))
    assert torch.equal(loss_fn(z1, z2, hodge_parts=_rows(parts)), loss_fn(z1, z2, weights=w))
    # float32 parts give the float64 loss's dtype
    assert loss_fn(z1, z2, hodge_parts=_rows(parts).float()).dtype == torch.float64


def test_zero_weight_removes_that_negative():
    # B = 3; anchor 0's weights (0, 2) on samples (1, 2); anchors 1, 2 uniform
    z1, z2 = _views(B=3, seed=4)
    w = torch.tensor([[0.0, 0.0, 2.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
    per = HodgeDebiasedInfoNCE(0.5, reduction="none")(z1, z2, weights=w)
    ref = naive_loss(z1, z2, 0.5, True, W=w.tolist())
    torch.testing.assert_close(per.mean(), ref, rtol=0, atol=1e-12)
    info = InfoNCE(0.5, reduction="none")(z1, z2)
    torch.testing.assert_close(per[:, 1:], info[:, 1:], rtol=0, atol=1e-14)


def test_upweighting_a_close_negative_raises_the_loss():
    # anchor 0's negative 1 is close in embedding space; giving it a larger weight must cost more
    z1 = torch.tensor([[1.0, 0.0], [0.9, 0.1], [-1.0, 0.2]], dtype=torch.float64)
    z2 = z1 + 0.01
    loss_fn = HodgeDebiasedInfoNCE(0.5, reduction="none")
    w_far = torch.tensor([[0, 0.5, 1.5], [1, 0, 1], [1, 1, 0]], dtype=torch.float64)
    w_near = torch.tensor([[0, 1.5, 0.5], [1, 0, 1], [1, 1, 0]], dtype=torch.float64)
    assert (loss_fn(z1, z2, weights=w_near)[:, 0] > loss_fn(z1, z2, weights=w_far)[:, 0]).all()


@pytest.mark.parametrize("include_positive", [True, False])
def test_finite_at_small_temperature_and_large_norms(include_positive):
    z1, z2 = _views(B=16, D=8, seed=5, dtype=torch.float32, scale=1e3)
    z2 = z1 + 0.05 * z2
    parts = _parts(B=16, N1=10, dtype=torch.float32)
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    loss_fn = HodgeDebiasedInfoNCE(0.01, include_positive_in_denominator=include_positive)
    loss = loss_fn(a1, a2, hodge_parts=_rows(parts))
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(a1.grad).all() and torch.isfinite(a2.grad).all()
    ref = loss_fn(z1.double(), z2.double(), hodge_parts=_rows(parts).double())
    assert loss.item() == pytest.approx(ref.item(), rel=1e-3, abs=1e-3)


@pytest.mark.parametrize("include_positive", [True, False])
def test_gradcheck_with_a_zero_weight(include_positive):
    z1, z2 = _views(B=4, D=3, seed=6)
    w = hodge_negative_weights(_parts(B=4), (1.0, 1.0, 1.0))
    w[0, 1] = 0.0  # log w = -inf must not break gradients
    loss_fn = HodgeDebiasedInfoNCE(0.3, include_positive_in_denominator=include_positive)
    assert torch.autograd.gradcheck(
        lambda a, b: loss_fn(a, b, weights=w),
        (z1.requires_grad_(), z2.requires_grad_()),
        eps=1e-6,
        atol=1e-7,
    )


def test_weights_are_constants():
    z1, z2 = _views(seed=7)
    z1.requires_grad_()
    parts = _rows(_parts()).requires_grad_()
    w = torch.ones(5, 5, dtype=torch.float64, requires_grad=True)
    HodgeDebiasedInfoNCE()(z1, z2, hodge_parts=parts).backward()
    HodgeDebiasedInfoNCE()(z1, z2, weights=w).backward()
    assert parts.grad is None and w.grad is None
    assert z1.grad is not None


def test_repr():
    assert repr(HodgeDebiasedInfoNCE(0.2, gamma=(0, 1, 2))) == (
        "HodgeDebiasedInfoNCE(temperature=0.2, gamma=(0.0, 1.0, 2.0), "
        "include_positive_in_denominator=True, gather_distributed=False, reduction='mean', "
        "eps=1e-06, similarity='auto')"
    )


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"temperature": -1.0}, ValueError, "temperature"),
        ({"gamma": (1.0, -1.0, 0.0)}, ValueError, "gamma"),
        ({"gamma": (1.0, 1.0)}, ValueError, "gamma"),
        ({"reduction": "max"}, ValueError, "reduction"),
        ({"eps": -1.0}, ValueError, "eps"),
        ({"include_positive_in_denominator": None}, TypeError, "include_positive"),
    ],
)
def test_bad_hyper_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        HodgeDebiasedInfoNCE(**kwargs)


def test_the_parts_of_a_pyg_batch_give_the_naive_loss():
    """``batch.hodge_parts`` [B * N1, 3] of a real PyG batch (ContrastiveViews on one shared
    complex) gives the loss of eq. (6) with the weights of eqs. (7)-(8), computed by the
    naive loops from the per-sample parts P_k x_i."""
    from torch_geometric.data import Batch, Data

    from topo_contrastive import ComplexOperators, ContrastiveViews, EdgeFlowMask

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
    g = torch.Generator().manual_seed(12)
    x = torch.randn(5, ops.num_edges, generator=g, dtype=torch.float64)
    views = ContrastiveViews(EdgeFlowMask(0.2, generator=0), hodge=ops)
    batch = Batch.from_data_list(views.fit([Data(x_1=xi.view(-1, 1)) for xi in x]))
    assert batch.hodge_parts.shape == (5 * ops.num_edges, 3)
    per_sample = [views.hodge.project(x, k) for k in ("gradient", "curl", "harmonic")]
    z1, z2 = _views(B=5, seed=13)
    gamma = (1.0, 0.5, 2.0)
    loss = HodgeDebiasedInfoNCE(0.5, gamma=gamma)(z1, z2, hodge_parts=batch.hodge_parts)
    ref = naive_loss(z1, z2, 0.5, W=naive_weights(per_sample, gamma))
    torch.testing.assert_close(loss, ref, rtol=0, atol=1e-12)


def test_other_layouts_of_the_parts_are_refused_with_the_conversion():
    """One layout: [sum N1, 3]. The old ones (three parts, [3, B, N1], [B, N1, 3]) are refused
    with a message that names the argument, the expected and the given layout and the
    conversion, which then gives the same loss."""
    z1, z2 = _views(B=5, seed=4)
    parts = _parts(B=5, N1=6)
    loss_fn = HodgeDebiasedInfoNCE(0.5, gamma=(1.0, 0.5, 2.0))
    ref = loss_fn(z1, z2, hodge_parts=_rows(parts))
    stacked = torch.stack(parts)  # [3, B, N1]
    expected = r"`hodge_parts` must be one tensor \[sum N1, 3\]"
    with pytest.raises(ValueError, match=expected + r".*got shape \(3, 5, 6\).*permute"):
        loss_fn(z1, z2, hodge_parts=stacked)
    assert torch.equal(loss_fn(z1, z2, hodge_parts=stacked.permute(1, 2, 0).reshape(-1, 3)), ref)
    with pytest.raises(ValueError, match=expected + r".*got shape \(5, 6, 3\)"):
        loss_fn(z1, z2, hodge_parts=stacked.permute(1, 2, 0))
    with pytest.raises(TypeError, match=expected + r".*sequence of 3 parts.*\(5, 6\)"):
        loss_fn(z1, z2, hodge_parts=parts)
    assert torch.equal(loss_fn(z1, z2, hodge_parts=torch.stack(parts, -1).reshape(-1, 3)), ref)
    columns = [p.reshape(-1, 1) for p in parts]  # a HodgeParts of a PyG batch's flows
    with pytest.raises(TypeError, match=r"sequence of 3 parts.*torch.cat"):
        loss_fn(z1, z2, hodge_parts=columns)
    assert torch.equal(loss_fn(z1, z2, hodge_parts=torch.cat(columns, dim=1)), ref)
    for flat in ([p.reshape(-1) for p in parts], _rows(parts).reshape(-1)):
        with pytest.raises((TypeError, ValueError), match=expected):
            loss_fn(z1, z2, hodge_parts=flat)
    with pytest.raises(TypeError, match="floating point"):
        loss_fn(z1, z2, hodge_parts=_rows(parts).long())
    with pytest.raises(ValueError, match="not a positive multiple of the batch size B = 5"):
        loss_fn(z1, z2, hodge_parts=_rows(parts)[:-1])


def test_bad_inputs():
    z1, z2 = _views(B=4)
    parts = _parts(B=4)
    loss_fn = HodgeDebiasedInfoNCE()
    w = torch.ones(4, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="exactly one"):
        loss_fn(z1, z2)
    with pytest.raises(ValueError, match="exactly one"):
        loss_fn(z1, z2, hodge_parts=_rows(parts), weights=w)
    with pytest.raises(ValueError, match="same shape"):
        loss_fn(z1, z2[:3], weights=w)
    with pytest.raises(ValueError, match="at least 2 samples"):
        loss_fn(z1[:1], z2[:1], weights=w[:1, :1])
    with pytest.raises(ValueError, match=r"shape \[B, M\] = \[4, 4\]"):
        loss_fn(z1, z2, weights=torch.ones(4, 3))
    with pytest.raises(ValueError, match=">= 0"):
        loss_fn(z1, z2, weights=w.index_put((torch.tensor([0]), torch.tensor([1])), w[0, 0] - 1.5))
    with pytest.raises(ValueError, match="finite"):
        loss_fn(z1, z2, weights=w.index_fill(0, torch.tensor([1]), float("nan")))
    with pytest.raises(ValueError, match=r"anchors \[2\]"):
        loss_fn(z1, z2, weights=w.index_fill(0, torch.tensor([2]), 0.0))
    with pytest.raises(TypeError, match="weights"):
        loss_fn(z1, z2, weights=[[1.0] * 4] * 4)
    with pytest.raises(ValueError, match="B = 4"):
        loss_fn(z1, z2, hodge_parts=_rows(_parts(B=5, N1=5)))
    with pytest.raises(ValueError, match=r"\[sum N1, 3\].*got shape \(24, 2\)"):
        loss_fn(z1, z2, hodge_parts=_rows(parts)[:, :2])


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_hodge_parts_are_rejected_like_weights(bad):
    z1, z2 = _views(B=4)
    parts = _rows(_parts(B=4, N1=6))  # [B * N1, 3]
    parts[2 * 6, 1] = bad  # one curl entry of sample 2
    with pytest.raises(ValueError, match="`hodge_parts` must be finite"):
        HodgeDebiasedInfoNCE()(z1, z2, hodge_parts=parts)
    with pytest.raises(ValueError, match="`hodge_parts` must be finite"):
        HodgeDebiasedInfoNCE(similarity="energy")(z1, z2, hodge_parts=parts)


def test_tensors_are_created_on_the_input_device():
    # on the meta device any tensor created on the CPU by mistake makes the call fail
    z1, z2 = torch.randn(5, 4, device="meta"), torch.randn(5, 4, device="meta")
    parts = torch.randn(3, 5, 6, device="meta")
    assert hodge_negative_weights(parts).device.type == "meta"
    assert InfoNCE()(z1, z2).device.type == "meta"
    rows = torch.randn(5 * 6, 3, device="meta")
    assert HodgeDebiasedInfoNCE()(z1, z2, hodge_parts=rows).device.type == "meta"
    assert HodgeDebiasedInfoNCE(reduction="none")(z1, z2, hodge_parts=rows).shape == (2, 5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    z1, z2 = _views(B=8, D=5, seed=9, dtype=torch.float32)
    parts = _parts(B=8, dtype=torch.float32)
    loss_fn = HodgeDebiasedInfoNCE(0.2, gamma=(0.5, 1.0, 2.0))
    cpu = loss_fn(z1, z2, hodge_parts=_rows(parts))
    gpu = loss_fn(z1.cuda(), z2.cuda(), hodge_parts=_rows(parts).cuda())
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-5, atol=1e-6)
    # Hodge parts on the CPU are moved to the embeddings' device
    torch.testing.assert_close(loss_fn(z1.cuda(), z2.cuda(), hodge_parts=_rows(parts)).cpu(), cpu)


@pytest.mark.parametrize("rank", [0, 2])
def test_weights_and_loss_from_parts_of_rank_k(rank):
    """Node and triangle signals: the weights from their Hodge parts (rank 0: empty gradient
    part; rank 2 on a torus: empty curl part) equal the naive eqs. (7)-(8), and the loss
    equals the naive loop."""
    from tests._rank_complexes import torus
    from topo_contrastive import HodgeDecomposition

    ops = torus()
    hodge = HodgeDecomposition(ops, rank=rank)
    gen = torch.Generator().manual_seed(rank)
    x = torch.randn(5, ops.num_simplices(rank), generator=gen, dtype=torch.float64)
    parts = hodge(x)
    empty = parts.gradient if rank == 0 else parts.curl
    assert float(empty.abs().max()) == 0.0
    gamma = (1.0, 0.5, 2.0)
    w = hodge_negative_weights(parts, gamma)
    torch.testing.assert_close(w, torch.tensor(naive_weights(parts, gamma), dtype=torch.float64))
    z1, z2 = _views(B=5)
    loss = HodgeDebiasedInfoNCE(temperature=0.5, gamma=gamma)(z1, z2, hodge_parts=_rows(parts))
    ref = naive_loss(z1, z2, 0.5, W=naive_weights(parts, gamma))
    torch.testing.assert_close(loss, ref)


@pytest.mark.parametrize("include_positive", [True, False])
@pytest.mark.parametrize("batch", [False, True])
def test_cross_view_negatives_equal_the_naive_loop(include_positive, batch):
    """``negatives="cross_view"`` with the weights of eqs. (7)-(8) (or the energy weights of a
    batch vector): value and gradients of the naive loop over the other view's negatives."""
    from topo_contrastive.losses.functional import hodge_debiased_info_nce
    from topo_contrastive.losses.hodge_weights import energy_fractions, energy_weights

    z1, z2 = _views(seed=15)
    parts = _parts()
    rows = _rows(parts)
    kw = {"batch": torch.arange(5).repeat_interleave(6)} if batch else {}
    gamma = (1.0, 0.5, 2.0)
    loss_fn = HodgeDebiasedInfoNCE(0.4, gamma, include_positive, negatives="cross_view")
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    loss = loss_fn(a1, a2, hodge_parts=rows, **kw)
    loss.backward()
    W = energy_weights(energy_fractions(rows, kw["batch"]), gamma).tolist() if batch else \
        naive_weights(parts, gamma)  # fmt: skip
    b1, b2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    ref = naive_loss(b1, b2, 0.4, include_positive, W=W, negatives="cross_view")
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(a1.grad, b1.grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(a2.grad, b2.grad, rtol=0, atol=1e-12)
    got = hodge_debiased_info_nce(z1, z2, rows, temperature=0.4, gamma=gamma,
                                  include_positive_in_denominator=include_positive,
                                  negatives="cross_view", **kw)  # fmt: skip
    assert torch.equal(got, loss.detach())
