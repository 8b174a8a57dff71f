"""Contrastive pre-training and the supervised baseline on a tiny trajectory task."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topo_contrastive.evaluation import train_supervised
from topo_contrastive.training import embed, get_config, pretrain
from topo_contrastive.training.loop import _batches, resolve_device


@pytest.mark.parametrize("row", ["SCL", "SSCL_Spec", "SCL_low"])
def test_pretrain_runs_and_returns_an_encoder(tiny_data, row):
    cfg = get_config(row, "trajectory")
    res = pretrain(tiny_data, cfg, seed=0, epochs=2)
    assert res.epochs == 2 and len(res.losses) == 2 and res.world_size == 1
    assert all(np.isfinite(res.losses))
    # InfoNCE with 2B-1 candidates per anchor is at most log(2B - 1) + 2/temperature
    assert max(res.losses) < np.log(2 * tiny_data.num_samples) + 2 / cfg.temperature
    assert res.encoder.K_up == cfg.K_up and not res.encoder.training
    h = embed(res.encoder, tiny_data)
    assert h.shape == (tiny_data.num_samples, 64) and np.isfinite(h).all()


def test_same_seed_same_numbers_other_seed_other_numbers(tiny_data):
    cfg = get_config("SSCL", "trajectory")
    a = pretrain(tiny_data, cfg, seed=3, epochs=2)
    b = pretrain(tiny_data, cfg, seed=3, epochs=2)
    c = pretrain(tiny_data, cfg, seed=4, epochs=2)
    assert a.losses == b.losses
    assert np.array_equal(embed(a.encoder, tiny_data), embed(b.encoder, tiny_data))
    assert a.losses != c.losses


def test_training_moves_the_weights_and_leaves_the_data_alone(tiny_data):
    cfg = get_config("SCL", "trajectory")
    flows = tiny_data.flows.clone()
    torch.manual_seed(0)
    before = pretrain(tiny_data, cfg, seed=1, epochs=1).encoder.state_dict()
    after = pretrain(tiny_data, cfg, seed=1, epochs=3).encoder.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert torch.equal(flows, tiny_data.flows)


def test_spectral_probabilities_are_cached_and_within_budget(tiny_data):
    cfg = get_config("SCL_Spec", "trajectory")
    views = tiny_data.contrastive_views(cfg)
    assert tiny_data.contrastive_dataset(views) is tiny_data.contrastive_dataset(
        tiny_data.contrastive_views(cfg)
    )  # one fit per mask setting
    p = tiny_data.drop_probabilities_for(cfg)
    support = tiny_data.flows != 0
    assert p.shape == tiny_data.flows.shape
    assert bool((p[~support] == 0).all()) and bool(((p >= 0) & (p <= 1)).all())
    assert bool((p.sum(1) <= cfg.budget * support.sum(1) + 1e-4).all())


def test_mask_steps_reach_the_optimiser_and_views(tiny_data):
    from topo_contrastive.transforms import optimize_drop_probabilities

    cfg = get_config("SCL_Spec", "trajectory", mask_steps=2)
    p2 = tiny_data.drop_probabilities_for(cfg)
    expected = optimize_drop_probabilities(
        tiny_data.flows, tiny_data.hodge, cfg.budget, cfg.perturb, cfg.preserve, num_steps=2
    )
    assert torch.equal(p2, expected.float().reshape(p2.shape))
    # two steps from the uniform start leave the probabilities strictly inside (0, 1) on
    # more edges than the converged optimiser does
    p_conv = tiny_data.drop_probabilities_for(get_config("SCL_Spec", "trajectory"))
    support = tiny_data.flows != 0
    inside = lambda p: int(((p > 1e-3) & (p < 1 - 1e-3) & support).sum())  # noqa: E731
    assert inside(p2) > inside(p_conv)
    with pytest.raises(ValueError, match="mask_steps"):
        get_config("SCL_Spec", "trajectory", mask_steps=0)


def test_a_training_step_is_the_public_pipeline_step(tiny_data):
    """One step of ``pretrain`` equals the README's loop on the same batch: the fitted
    dataset through PyG's DataLoader, ContrastiveViews on the batch, the encoder's public
    forward on each view, the loss on the batch's Hodge parts."""
    from torch_geometric.loader import DataLoader

    from topo_contrastive.training.loop import (
        _contrastive_model,
        _make_loss,
        make_optimizer,
    )

    cfg = get_config("SSCL_Spec", "trajectory", batch_size=40, num_layers=1)
    res = pretrain(tiny_data, cfg, seed=2, epochs=1)  # one batch of all 40 samples
    model, _ = _contrastive_model(tiny_data, cfg, 2, torch.device("cpu"), False)
    optimizer = make_optimizer(model.parameters(), cfg)
    views = tiny_data.contrastive_views(cfg, torch.Generator().manual_seed(2 * 7919 + 1))
    order = torch.randperm(40, generator=torch.Generator().manual_seed(2)).tolist()
    batch = next(iter(DataLoader(tiny_data.contrastive_dataset(views), batch_size=40,
                                 sampler=order)))  # fmt: skip
    batch = views(batch)
    L_down, L_up = tiny_data.complex.laplacians()
    rows = batch.batch_1  # [B * N1]: the edges' batch vector of the shared-complex samples
    z1 = model.head(model.encoder(batch.x_1_view1, (L_down, L_up), rows))
    z2 = model.head(model.encoder(batch.x_1_view2, (L_down, L_up), rows))
    loss = _make_loss(cfg, False)(z1, z2, hodge_parts=batch.hodge_parts)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert res.losses[0] == pytest.approx(float(loss.detach()), rel=1e-5)
    for k, v in model.encoder.state_dict().items():
        torch.testing.assert_close(v, res.encoder.state_dict()[k], rtol=1e-4, atol=1e-6)


def test_pretrain_rejects_the_supervised_row_and_bad_epochs(tiny_data):
    with pytest.raises(ValueError, match="not contrastive"):
        pretrain(tiny_data, get_config("SCNN", "trajectory"), epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        pretrain(tiny_data, get_config("SCL", "trajectory"), epochs=0)


def test_batches_never_leave_a_single_sample():
    assert _batches(list(range(5)), 2) == [[0, 1], [2, 3, 4]]
    assert _batches(list(range(4)), 2) == [[0, 1], [2, 3]]


def test_resolve_device():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")


def test_supervised_baseline_selects_on_validation(tiny_data):
    cfg = get_config("SCNN", "trajectory")
    split = tiny_data.split(0)
    a = train_supervised(tiny_data, cfg, split, seed=0, epochs=4)
    b = train_supervised(tiny_data, cfg, split, seed=0, epochs=4)
    assert a.test_accuracy == b.test_accuracy and a.val_history == b.val_history
    assert len(a.val_history) == 4 and not a.carved_validation
    assert a.val_accuracy == max(a.val_history)
    assert a.val_history[a.best_epoch - 1] == max(a.val_history)  # ties: lower val loss
    assert 0.0 <= a.test_accuracy <= 1.0


def test_supervised_carves_a_validation_part_when_there_is_none(tiny_data):
    split = tiny_data.split(0)
    no_val = {"train": split["train"], "val": np.zeros(0, dtype=int), "test": split["test"]}
    res = train_supervised(tiny_data, get_config("SCNN", "trajectory"), no_val, epochs=2)
    assert res.carved_validation
    from topo_contrastive.evaluation.supervised import carve_validation

    tr, va = carve_validation(split["train"], tiny_data.labels.numpy(), seed=0)
    assert len(va) == 4 and len(tr) == 16 and not set(tr) & set(va)
    assert sorted(set(tiny_data.labels.numpy()[va])) == [0, 1]  # stratified


def test_snapshots_equal_shorter_runs_of_the_same_seed(tiny_data):
    cfg = get_config("SCL", "trajectory", num_layers=1)
    long = pretrain(tiny_data, cfg, seed=3, epochs=2, snapshot_epochs=[1, 2])
    short = pretrain(tiny_data, cfg, seed=3, epochs=1)
    assert sorted(long.snapshots) == [1, 2]
    for k, v in short.encoder.state_dict().items():
        torch.testing.assert_close(long.snapshots[1][k], v, rtol=0, atol=0)
        torch.testing.assert_close(long.snapshots[2][k], long.encoder.state_dict()[k])


def test_hodge_readout_configuration_pretrains_and_embeds(tiny_data):
    cfg = get_config("SCL", "trajectory", num_layers=1, readout="hodge")
    res = pretrain(tiny_data, cfg, seed=0, epochs=1)
    beta1 = tiny_data.hodge.dims["harmonic"]
    assert res.encoder.out_channels == (1 + beta1) * cfg.hidden_channels
    emb = embed(res.encoder, tiny_data)
    assert emb.shape == (tiny_data.num_samples, (1 + beta1) * cfg.hidden_channels)
    sup = train_supervised(
        tiny_data,
        get_config("SCNN", "trajectory", num_layers=1, readout="hodge"),
        tiny_data.split(0),
        seed=0,
        epochs=1,
    )
    assert 0.0 <= sup.test_accuracy <= 1.0


def test_supervised_stops_when_validation_and_training_accuracy_stall(tiny_data):
    cfg = get_config("SCNN", "trajectory", num_layers=1, patience=2, epochs=40)
    res = train_supervised(tiny_data, cfg, tiny_data.split(0), seed=0)
    n = res.epochs_run
    assert len(res.val_history) == len(res.train_history) == n
    best_train_epoch = int(np.argmax(res.train_history)) + 1  # first epoch of the maximum
    best_val_epoch = int(np.argmax(res.val_history)) + 1  # ties in accuracy do not count
    assert n < 40, "the tiny task should stop early"
    # stopped when both accuracies had stalled for `patience` epochs, not a step later
    assert n - best_val_epoch >= 2 and n - best_train_epoch >= 2
    assert n - 1 - best_train_epoch < 2 or n - 1 - best_val_epoch < 2
    assert res.best_epoch >= best_val_epoch  # the kept epoch: best accuracy, then lowest loss
    assert res.val_accuracy == max(res.val_history)
    full = train_supervised(
        tiny_data, cfg.replace(patience=0, epochs=n), tiny_data.split(0), seed=0
    )
    assert full.epochs_run == n and full.val_history == res.val_history  # same run, no stop


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_diverged_loss_is_refused_naming_the_learning_rate(bad):
    from topo_contrastive.training.loop import _finite_loss

    cfg = get_config("SCL", "trajectory")
    with pytest.raises(ValueError, match=rf"became {bad} at epoch 3; lower the learning rate"):
        _finite_loss(torch.tensor(bad), cfg, 2)
    assert _finite_loss(torch.tensor(1.5), cfg, 0) == 1.5


def test_embed_gives_freed_memory_back_after_every_batch(tiny_data, monkeypatch):
    """`embed` trims the heap past FRAGMENTS_KEPT after each batch (on 10^6 edges the
    freed blocks of one-sample batches were not reused: the resident set grew without
    bound); the embeddings do not depend on the batch size."""
    from topo_contrastive.training import loop

    encoder = pretrain(tiny_data, get_config("SCL", "trajectory", num_layers=1), epochs=1).encoder
    whole = embed(encoder, tiny_data, batch_size=tiny_data.num_samples)
    calls: list[int] = []
    monkeypatch.setattr(loop, "release_freed_memory", lambda keep=0: bool(calls.append(keep)))
    batched = embed(encoder, tiny_data, batch_size=3)
    assert calls == [loop.FRAGMENTS_KEPT] * -(-tiny_data.num_samples // 3)
    np.testing.assert_allclose(batched, whole, rtol=1e-6, atol=1e-7)
