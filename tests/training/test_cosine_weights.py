"""``pretrain`` on a dataset whose Hodge parts would be large: the debiased loss's weights
come from the dataset's cosines (``ExperimentData.hodge_cosines``), the batches carry no
parts, and the training is that of the parts path up to rounding."""

from __future__ import annotations

import numpy as np
import torch

from topo_contrastive.training import get_config, loop, pretrain


def test_pretrain_by_cosines_takes_the_parts_path_first_step(tiny_data, monkeypatch):
    cfg = get_config("SSCL_Spec", "trajectory").replace(batch_size=13)
    assert cfg.loss == "hodge_debiased"
    plain = pretrain(tiny_data, cfg, seed=3, epochs=1)
    chunked = pretrain(tiny_data, cfg, seed=3, epochs=1, chunk_samples=5)
    monkeypatch.setattr(loop, "STORED_PARTS_BYTES", 0)  # every dataset counts as large
    by_cos = pretrain(tiny_data, cfg, seed=3, epochs=1)
    by_cos_chunked = pretrain(tiny_data, cfg, seed=3, epochs=1, chunk_samples=5)
    # the batches of one epoch: the same weights (to rounding), the same masks
    np.testing.assert_allclose(by_cos.losses, plain.losses, rtol=1e-5)
    np.testing.assert_allclose(by_cos.chance_losses, plain.chance_losses, rtol=1e-6)
    np.testing.assert_allclose(by_cos_chunked.losses, chunked.losses, rtol=1e-5)
    # the fitted dataset of this path stores no parts; the cosines are cached
    views = tiny_data.contrastive_views(cfg, hodge_parts=False)
    sample = tiny_data.contrastive_dataset(views)[0]
    assert "hodge_parts" not in sample.keys() and "drop_prob" in sample.keys()  # noqa: SIM118
    assert tiny_data.hodge_cosines() is tiny_data.hodge_cosines()
    assert tiny_data.hodge_cosines().shape == (3, tiny_data.num_samples, tiny_data.num_samples)


def test_weights_differ_from_uniform(tiny_data, monkeypatch):
    # the cosine path really weights the negatives: gamma = 0 (uniform weights, plain
    # InfoNCE's loss) gives another loss than the configuration's gamma
    monkeypatch.setattr(loop, "STORED_PARTS_BYTES", 0)
    cfg = get_config("SSCL_Spec", "trajectory").replace(batch_size=20)
    weighted = pretrain(tiny_data, cfg, seed=1, epochs=1)
    uniform = pretrain(tiny_data, cfg.replace(gamma=(0.0, 0.0, 0.0)), seed=1, epochs=1)
    assert abs(weighted.losses[0] - uniform.losses[0]) > 1e-4
    assert torch.isfinite(torch.tensor(weighted.losses)).all()
