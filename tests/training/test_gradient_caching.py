"""Gradient caching (``cached_gradient_step``): the same gradients as the plain contrastive
step, whatever the chunk size; ``pretrain(chunk_samples=...)`` trains the same encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topo_contrastive.training import get_config, pretrain
from topo_contrastive.training.loop import _contrastive_model, _make_loss, cached_gradient_step


def _both_views(view1, view2, num_samples):
    """Both views stacked as one batch of ``2B`` samples on one complex, with their batch
    vector (what the training step passes to the model)."""
    x = torch.cat([view1, view2])
    return x, torch.arange(2 * num_samples).repeat_interleave(x.shape[0] // (2 * num_samples))


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
    L = tiny_data.laplacians()
    _, z = net(x, L, rows)
    plain = loss_fn(z[:B], z[B:], **kwargs)
    plain.backward()
    expected = {n: p.grad.clone() for n, p in model.named_parameters()}
    # the same step in chunks of `chunk` views
    model.zero_grad()
    loss, zc = cached_gradient_step(net, loss_fn, x, L, 2 * B, chunk, kwargs)
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
    with pytest.raises(ValueError, match="kept_chunks"):
        pretrain(tiny_data, cfg, seed=0, epochs=1, chunk_samples=2, kept_chunks=0)
    with pytest.raises(TypeError, match="kept_chunks"):
        pretrain(tiny_data, cfg, seed=0, epochs=1, chunk_samples=2, kept_chunks=1.5)


@pytest.mark.parametrize("edition", ["paper", "hodge"])
def test_embed_batch_size_changes_memory_not_numbers(tiny_data, edition):
    from topo_contrastive.training import embed
    torch.manual_seed(0)
    encoder = tiny_data.encoder(get_config("SSCL_Spec", "trajectory", edition))
    whole = embed(encoder, tiny_data)  # the default: every sample of this small complex
    ones = embed(encoder, tiny_data, batch_size=1)
    np.testing.assert_allclose(ones, whole, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kept", [1, 2, 4, 9])
def test_kept_chunk_graphs_serve_the_backward_bit_for_bit(tiny_data, kept):
    """The first ``kept`` chunks' forward passes with autograd serve their backward: that
    many forward passes fewer (2n - kept for n chunks, n at most), and the same bits as
    embedding every chunk twice."""
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
        L = tiny_data.laplacians()
        return net(x[lo * n : hi * n], L, torch.arange(hi - lo).repeat_interleave(n))[1]

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
    _, zc = cached_gradient_step(net, loss_fn, x, tiny_data.laplacians(), 20, chunk, kwargs,
                                 kept=kept)  # fmt: skip
    assert len(calls) == 2 * len(bounds) - min(kept, len(bounds))
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
        L = tiny_data.laplacians()
        loss, z = cached_gradient_step(net, loss_fn, given, L, 2 * B, 4, kwargs)  # 4 + 4 + ...
        grads.append((loss, z, [p.grad.clone() for p in model.parameters()]))
    (l1, z1, g1), (l2, z2, g2) = grads
    assert torch.equal(l1, l2) and torch.equal(z1, z2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2, strict=True))


def test_bad_chunks_kept_counts_and_view_counts_name_themselves(tiny_data):
    # used to surface as `range() arg 3 must not be zero`, `torch.cat(): expected a
    # non-empty list`, `slice indices must be integers`, or an SCNN / loss error
    cfg = get_config("SSCL_Spec", "trajectory")
    model, net = _contrastive_model(tiny_data, cfg, 0, torch.device("cpu"), False)
    n1, loss = tiny_data.sizes[1], _make_loss(cfg, False)
    x = torch.zeros(4 * n1, 1)  # 4 views
    bad = [({"kept": 0}, ValueError, "`kept` must be >= 1, got 0"),
           ({"chunk": 0}, ValueError, "`chunk` must be >= 1, got 0"),
           ({"chunk": -2}, ValueError, "`chunk` must be >= 1, got -2"),
           ({"chunk": 2.0}, TypeError, r"`chunk` must be an int, got float \(2.0\)"),
           ({"kept": 1.5}, TypeError, r"`kept` must be an int, got float \(1.5\)")]  # fmt: skip
    split = (x[: 3 * n1 - 1], x[3 * n1 - 1 :])  # blocks that cut a view in two
    for num_views, given in ((3, x), (6, x), (2, x), (8, x), (4, split)):
        msg = r"`num_views` must be the even number 2B of views in `x`"
        bad.append(({"num_views": num_views, "x": given}, ValueError, msg))
    for change, error, msg in bad:
        kwargs = {"net": net, "loss_fn": loss, "x": x, "num_views": 4, "chunk": 2,
                  "laplacians": tiny_data.laplacians(), "loss_kwargs": {}, **change}  # fmt: skip
        with pytest.raises(error, match=msg):
            cached_gradient_step(**kwargs)
    with pytest.raises(ValueError, match=r"views of \d+ rows .*, got num_views = 2"):
        cached_gradient_step(net, loss, x, tiny_data.laplacians(), 2, 1, {})
    assert all(p.grad is None for p in model.parameters())  # refused before any forward


def test_bad_caching_budgets_are_refused():
    from topo_contrastive.training.gradient_caching import plan_gradient_caching

    cfg = get_config("SSCL_Spec", "trajectory")
    assert plan_gradient_caching(10**6, cfg, 2**30) is not None
    with pytest.raises(ValueError, match="`budget` must be >= 1, got -1"):
        plan_gradient_caching(10**6, cfg, budget=-1)  # used to return a plan
    with pytest.raises(TypeError, match=r"`budget` must be an int, got float \(nan\)"):
        plan_gradient_caching(10**6, cfg, budget=float("nan"))
    with pytest.raises(ValueError, match="`num_edges` must be >= 0, got -5"):
        plan_gradient_caching(-5, cfg)


def test_a_failed_pretrain_switches_recompute_first_layer_back(tiny_data):

    cfg = get_config("SSCL_Spec", "trajectory", hidden_channels=8)
    encoder = tiny_data.encoder(cfg)
    assert encoder.recompute_first_layer is False

    def stop(epoch, loss):
        assert encoder.recompute_first_layer is True  # on while gradient caching trains
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_data, cfg, epochs=2, encoder=encoder, chunk_samples=3, progress=stop)
    assert encoder.recompute_first_layer is False


@pytest.mark.parametrize("edges", [100, 5_000, 18_830, 100_010, 1_000_000])
@pytest.mark.parametrize("budget_mib", [64, 1024, 4096])
@pytest.mark.parametrize("edition", ["paper", "hodge"])
def test_caching_plan_fits_the_budget(edges, budget_mib, edition):
    from topo_contrastive.training.gradient_caching import (
        CHUNK_SHARE,
        activation_bytes,
        kept_bytes,
        plan_gradient_caching,
    )

    cfg = get_config("SSCL_Spec", "trajectory", edition)
    budget = budget_mib * 2**20
    views, act, keep = 2 * cfg.batch_size, activation_bytes(edges, cfg), kept_bytes(edges, cfg)
    plan = plan_gradient_caching(edges, cfg, budget)
    if views * act <= budget:
        assert plan is None  # the plain step
        return
    chunks = -(-views // plan.chunk)
    assert 1 <= plan.kept <= chunks
    # a chunk takes at most its share of the budget, unless it is one view
    assert plan.chunk == 1 or plan.chunk * act * CHUNK_SHARE <= budget
    # one running chunk and the kept graphs fit, unless only the first chunk is kept
    used = plan.chunk * act + plan.kept * plan.chunk * keep
    assert plan.kept == 1 or used <= budget
    # no room left for one more kept chunk (or all are kept)
    assert plan.kept == chunks or used + plan.chunk * keep > budget


def test_kept_bytes_bound_what_a_view_graph_holds(tiny_data):
    """The tensors autograd saves for a chunk of views, per view beyond a chunk of one (the
    weights and the harmonic basis are shared), against :func:`kept_bytes`: within it and
    at least 90 % of it."""
    from torch_geometric.loader import DataLoader

    from topo_contrastive.training.gradient_caching import kept_bytes

    for edition in ("paper", "hodge"):
        cfg = get_config("SSCL_Spec", "trajectory", edition)
        model, net = _contrastive_model(tiny_data, cfg, 0, torch.device("cpu"), False)
        model.encoder.recompute_first_layer = True  # as pretrain sets it under caching
        views = tiny_data.contrastive_views(cfg, torch.Generator().manual_seed(0))
        data = tiny_data.contrastive_dataset(views)
        batch = views(next(iter(DataLoader(data, batch_size=8))))
        x, _ = _both_views(batch.x_1_view1, batch.x_1_view2, batch.num_graphs)
        n = tiny_data.sizes[1]
        held = {}
        for v in (1, 9):
            saved = []

            def pack(t, saved=saved):
                saved.append(t)
                return t

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                net(x[: v * n], tiny_data.laplacians(), torch.arange(v).repeat_interleave(n))
            ptrs = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in saved}
            held[v] = sum(ptrs.values())
        per_view = (held[9] - held[1]) / 8
        assert 0.9 * kept_bytes(n, cfg) <= per_view <= kept_bytes(n, cfg), edition


def test_pretrain_recomputes_the_first_layer_under_gradient_caching_only(tiny_data, monkeypatch):
    """The memory plan (kept_bytes) counts on the SCNN's first layer being recomputed: a
    chunked run pairs the first two layers, a plain run does not (the pair costs time),
    and the encoder's setting is restored after training."""
    from tests.nn._helpers import count_pairs

    calls = count_pairs(monkeypatch)
    cfg = get_config("SSCL_Spec", "trajectory").replace(batch_size=tiny_data.num_samples)
    plain = pretrain(tiny_data, cfg, seed=2, epochs=1)
    assert calls == [] and plain.encoder.recompute_first_layer is False
    chunked = pretrain(tiny_data, cfg, seed=2, epochs=1, chunk_samples=5)
    assert len(calls) > 0 and chunked.encoder.recompute_first_layer is False
