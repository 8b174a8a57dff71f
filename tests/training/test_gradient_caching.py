"""Gradient caching (``cached_gradient_step``): the same gradients as the plain contrastive
step, whatever the chunk size; ``pretrain(chunk_samples=...)`` trains the same encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topo_contrastive.training import get_config, pretrain
from topo_contrastive.training.loop import (
    _both_views,
    _contrastive_model,
    _make_loss,
    cached_gradient_step,
)


@pytest.mark.parametrize(
    ("row", "edition", "chunk"),
    [("SSCL_Spec", "paper", 1), ("SSCL_Spec", "hodge", 1), ("SSCL_Spec", "paper", 7),
     ("SCL", "hodge", 3)],
)  # fmt: skip
def test_cached_gradients_equal_the_plain_step(tiny_data, row, edition, chunk):
    """Chunks of one view included: a single sample of the shared complex with its batch
    vector (the HodgeReadout edition pools it with the complex's basis)."""
    cfg = get_config(row, "trajectory", edition)
    model, net = _contrastive_model(tiny_data, cfg, 0, torch.device("cpu"), False)
    loss_fn = _make_loss(cfg, False)
    views = tiny_data.contrastive_views(cfg, torch.Generator().manual_seed(0))
    dataset = tiny_data.contrastive_dataset(views)
    from torch_geometric.loader import DataLoader

    batch = views(next(iter(DataLoader(dataset, batch_size=12))))
    x, rows = _both_views(batch.x_1_view1, batch.x_1_view2, batch.num_graphs)
    B = batch.num_graphs
    kwargs = {"hodge_parts": batch.hodge_parts} if cfg.loss == "hodge_debiased" else {}
    # the plain step
    model.zero_grad()
    _, z = net(x, rows)
    plain = loss_fn(z[:B], z[B:], **kwargs)
    plain.backward()
    expected = {n: p.grad.clone() for n, p in model.named_parameters()}
    # the same step in chunks of `chunk` views
    model.zero_grad()
    loss, zc = cached_gradient_step(net, loss_fn, x, 2 * B, chunk, kwargs)
    torch.testing.assert_close(loss, plain.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(zc, z.detach(), rtol=1e-5, atol=1e-6)
    for name, p in model.named_parameters():
        scale = float(expected[name].abs().max()) + 1e-12
        torch.testing.assert_close(p.grad, expected[name], rtol=0, atol=1e-5 * scale)


def test_pretrain_with_chunks_takes_the_same_first_step(tiny_data):
    """One step of every sample: the same loss up to rounding (later steps amplify the
    rounding: the trajectory task's training is chaotic at its learning rate)."""
    cfg = get_config("SSCL_Spec", "trajectory").replace(batch_size=tiny_data.num_samples)
    plain = pretrain(tiny_data, cfg, seed=2, epochs=1)
    chunked = pretrain(tiny_data, cfg, seed=2, epochs=1, chunk_samples=5)
    np.testing.assert_allclose(chunked.losses, plain.losses, rtol=1e-5)


def test_bad_chunk_is_refused(tiny_data):
    cfg = get_config("SSCL_Spec", "trajectory")
    with pytest.raises(ValueError, match="chunk_samples"):
        pretrain(tiny_data, cfg, seed=0, epochs=1, chunk_samples=0)


@pytest.mark.parametrize("edition", ["paper", "hodge"])
def test_embed_batch_size_changes_memory_not_numbers(tiny_data, edition):
    from topo_contrastive.training import embed
    from topo_contrastive.training.loop import build_encoder

    torch.manual_seed(0)
    encoder = build_encoder(get_config("SSCL_Spec", "trajectory", edition), tiny_data.hodge)
    whole = embed(encoder, tiny_data)  # the default: every sample of this small complex
    ones = embed(encoder, tiny_data, batch_size=1)
    np.testing.assert_allclose(ones, whole, rtol=1e-5, atol=1e-6)


def test_first_chunk_graph_is_kept_bit_for_bit(tiny_data):
    """The first chunk's forward pass with autograd serves its backward: one forward pass
    fewer (2n - 1 for n chunks), and the same bits as embedding every chunk twice."""
    from torch_geometric.loader import DataLoader

    cfg = get_config("SSCL_Spec", "trajectory", "hodge")
    model, net = _contrastive_model(tiny_data, cfg, 0, torch.device("cpu"), False)
    loss_fn = _make_loss(cfg, False)
    views = tiny_data.contrastive_views(cfg, torch.Generator().manual_seed(0))
    batch = views(next(iter(DataLoader(tiny_data.contrastive_dataset(views), batch_size=10))))
    x, _ = _both_views(batch.x_1_view1, batch.x_1_view2, batch.num_graphs)
    kwargs = {"hodge_parts": batch.hodge_parts}
    n, chunk = x.shape[0] // 20, 6  # 20 views in chunks of 6, 6, 6, 2

    def run(lo, hi):
        return net(x[lo * n : hi * n], torch.arange(hi - lo).repeat_interleave(n))[1]

    bounds = [(0, 6), (6, 12), (12, 18), (18, 20)]
    model.zero_grad()
    with torch.no_grad():  # every chunk embedded twice
        z = torch.cat([run(lo, hi) for lo, hi in bounds]).requires_grad_(True)
    (grad,) = torch.autograd.grad(loss_fn(z[:10], z[10:], **kwargs), z)
    for lo, hi in bounds:
        run(lo, hi).backward(grad[lo:hi])
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}

    calls = []
    model.register_forward_hook(lambda *args: calls.append(1))
    model.zero_grad()
    _, zc = cached_gradient_step(net, loss_fn, x, 20, chunk, kwargs)
    assert len(calls) == 2 * len(bounds) - 1
    assert torch.equal(zc, z.detach())
    for name, p in model.named_parameters():
        assert torch.equal(p.grad, expected[name]), name


def test_views_as_two_blocks_give_the_same_step(tiny_data):
    # the loop passes (view1, view2) without their [2B * N1, 1] concatenation: the chunks
    # that straddle both blocks get the same rows, the step the same gradients, bit for bit
    cfg = get_config("SSCL_Spec", "trajectory")
    model, net = _contrastive_model(tiny_data, cfg, 0, torch.device("cpu"), False)
    loss_fn = _make_loss(cfg, False)
    views = tiny_data.contrastive_views(cfg, torch.Generator().manual_seed(0))
    from torch_geometric.loader import DataLoader

    batch = views(next(iter(DataLoader(tiny_data.contrastive_dataset(views), batch_size=9))))
    x, _ = _both_views(batch.x_1_view1, batch.x_1_view2, batch.num_graphs)
    B = batch.num_graphs
    kwargs = {"hodge_parts": batch.hodge_parts}
    grads = []
    for given in (x, (batch.x_1_view1, batch.x_1_view2)):
        model.zero_grad()
        loss, z = cached_gradient_step(net, loss_fn, given, 2 * B, 4, kwargs)  # 4 + 4 + ...
        grads.append((loss, z, [p.grad.clone() for p in model.parameters()]))
    (l1, z1, g1), (l2, z2, g2) = grads
    assert torch.equal(l1, l2) and torch.equal(z1, z2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2, strict=True))
