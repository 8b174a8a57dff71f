"""The loss-at-chance and collapse checks of a pre-training run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from topo_contrastive.losses import HodgeDebiasedInfoNCE
from topo_contrastive.training import get_config, pretrain
from topo_contrastive.training.diagnostics import (
    MIN_SPREAD,
    common_share,
    pretrain_diagnostics,
)
from topo_contrastive.transforms.contrastive_views import hodge_parts


def test_chance_loss_of_infonce_is_log_of_the_candidates(tiny_data):
    # 40 samples in batches of 20: every anchor has 2B - 1 = 39 candidates
    cfg = get_config("SCL", "trajectory", batch_size=20, num_layers=1)
    res = pretrain(tiny_data, cfg, seed=0, epochs=2)
    assert res.chance_losses == pytest.approx([math.log(39)] * 2, rel=1e-6)


def test_chance_loss_of_the_debiased_loss_is_its_loss_on_identical_views(tiny_data):
    cfg = get_config("SSCL", "trajectory", batch_size=40, num_layers=1)
    res = pretrain(tiny_data, cfg, seed=0, epochs=1)
    parts = hodge_parts(tiny_data.hodge, tiny_data.flows)  # [S, N1, 3]: one batch of all
    loss = HodgeDebiasedInfoNCE(temperature=cfg.temperature, gamma=cfg.gamma)
    flat = torch.ones(40, 8)
    # the chance loss does not depend on the order of the samples in the batch
    order = torch.randperm(40, generator=torch.Generator().manual_seed(0))
    expected = float(loss(flat, flat, hodge_parts=parts[order].reshape(-1, 3)))
    assert res.chance_losses[0] == pytest.approx(expected, rel=1e-5)
    # the debiased weights of an anchor's negatives average 1: the same chance as InfoNCE
    assert res.chance_losses[0] == pytest.approx(math.log(79), rel=1e-5)


def test_identical_embeddings_at_chance_give_both_warnings():
    d = pretrain_diagnostics([5.30, 5.29], [5.293, 5.293], np.full((50, 8), 0.3))
    assert d["loss_drop"] == pytest.approx((5.293 - 5.29) / 5.293)
    assert d["spread"] < 1e-12 and d["relative_spread"] < 1e-12
    assert "stayed at chance" in d["warnings"][0] and "5.2900" in d["warnings"][0]
    assert "collapsed" in d["warnings"][1]


def test_the_chance_warning_counts_its_epochs_in_english():
    one = pretrain_diagnostics([5.29], [5.293], np.full((50, 8), 0.3))["warnings"][0]
    assert "5.2900 after 1 epoch against" in one
    two = pretrain_diagnostics([5.30, 5.29], [5.293, 5.293], np.full((50, 8), 0.3))
    assert "5.2900 after 2 epochs against" in two["warnings"][0]


def test_spread_embeddings_with_a_falling_loss_give_no_warning():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(200, 16))
    d = pretrain_diagnostics([5.2, 3.1], [5.29, 5.29], h)
    assert d["warnings"] == []
    assert d["relative_spread"] == pytest.approx(np.median(h.std(0)) / np.abs(h).mean())
    assert 12 < d["effective_rank"] <= 16  # nearly isotropic


def test_the_collapse_threshold_is_relative():
    rng = np.random.default_rng(1)
    base = np.ones((100, 4))
    small = base + 0.5 * MIN_SPREAD * rng.normal(size=(100, 4))
    large = base + 4 * MIN_SPREAD * rng.normal(size=(100, 4))
    assert "collapsed" in pretrain_diagnostics([1.0], [2.0], small)["warnings"][0]
    assert pretrain_diagnostics([1.0], [2.0], large)["warnings"] == []
    # scaling the embeddings changes neither verdict
    assert pretrain_diagnostics([1.0], [2.0], 1e3 * small)["warnings"]
    assert pretrain_diagnostics([1.0], [2.0], 1e-3 * large)["warnings"] == []


def test_effective_rank_of_a_rank_one_embedding_is_one():
    h = np.outer(np.arange(30.0), [1.0, 2.0, -1.0])
    assert pretrain_diagnostics([1.0], [2.0], h)["effective_rank"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("losses", "chance", "h", "match"),
    [
        ([], [], np.ones((3, 2)), "equally long"),
        ([1.0], [1.0, 2.0], np.ones((3, 2)), "equally long"),
        ([1.0], [2.0], np.ones(3), r"\[S, D\]"),
        ([1.0], [2.0], np.full((3, 2), np.nan), "finite"),
        ([1.0], [2.0], np.ones((0, 2)), "non-empty"),
    ],
)
def test_bad_input(losses, chance, h, match):
    with pytest.raises(ValueError, match=match):
        pretrain_diagnostics(losses, chance, h)


def test_the_chance_warning_names_a_flow_the_samples_share():
    h = np.full((50, 8), 0.3)
    shared = pretrain_diagnostics([5.29], [5.293], h, common_share=0.97)["warnings"][0]
    assert "share one flow that holds 97 % of their energy" in shared
    assert "centre the flows" in shared
    apart = pretrain_diagnostics([5.29], [5.293], h, common_share=0.2)["warnings"][0]
    assert "share one flow" not in apart
    assert "share one flow" not in pretrain_diagnostics([5.29], [5.293], h)["warnings"][0]


def test_common_share_is_the_mean_flows_energy_share(tiny_data):
    x = tiny_data.flows.double().reshape(tiny_data.num_samples, -1)  # [S, N1]
    naive = sum(float(x.mean(0) @ x.mean(0)) for _ in range(x.shape[0])) / float(
        sum(float(row @ row) for row in x)
    )
    assert common_share(tiny_data.flows) == pytest.approx(naive, rel=1e-12)
    # noisy copies of one flow: the share approaches one; no common part: zero
    base = torch.linspace(1.0, 2.0, x.shape[1])
    noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(0), dtype=x.dtype)
    assert common_share(base + 0.01 * noise) > 0.999
    assert common_share(torch.cat([x, -x])) == pytest.approx(0.0, abs=1e-12)
    assert common_share(torch.zeros(3, 4)) == 0.0
