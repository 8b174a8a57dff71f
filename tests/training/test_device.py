"""The experiment functions on another device than the encoder's (issue 27 item 6).

The CPU tests check what a CPU-only machine can: the encoder comes back where and as it
was. The CUDA tests (skipped without a GPU, run on a lent GPU machine) check the paths a
GPU session found broken: an untrained or loaded encoder (built on the CPU) embedded on the
GPU, and next-node training on the GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.next_node import next_node_samples
from experiments.studies.next_node import rows as nn_
from topo_contrastive.training import get_config
from topo_contrastive.training.loop import embed

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _encoder(data, edition="paper"):
    cfg = get_config("SCL", "trajectory", edition, hidden_channels=8, num_layers=2)
    torch.manual_seed(0)
    return data.encoder(cfg)


def test_embed_leaves_the_encoder_where_and_as_it_was(tiny_data):
    enc = _encoder(tiny_data).train()
    first = embed(enc, tiny_data, device="cpu")
    assert enc.training and next(enc.parameters()).device.type == "cpu"
    assert first.shape == (tiny_data.num_samples, 8) and first.dtype == np.float64
    np.testing.assert_array_equal(embed(enc, tiny_data, device="cpu"), first)


@cuda
@pytest.mark.parametrize("edition", ["paper", "hodge"])
def test_a_cpu_encoder_embeds_on_the_gpu(tiny_data, edition):
    enc = _encoder(tiny_data, edition)
    on_cpu = embed(enc, tiny_data, device="cpu")
    on_gpu = embed(enc, tiny_data, device="cuda")
    assert next(enc.parameters()).device.type == "cpu"  # moved back
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-5)


@cuda
def test_next_node_training_runs_on_the_gpu(tiny_data):
    samples = next_node_samples(tiny_data.complex, tiny_data.dataset.paths(), seed=0)
    split = nn_.next_node_split(tiny_data, 0)
    enc = _encoder(tiny_data)
    for mode in nn_.MODES:
        res = nn_.train_next_node(tiny_data, samples, enc, mode, split["train"], split["val"],
                                  split["test"], epochs=2, seed=0, device="cuda")
        assert 0.0 <= res.test_accuracy <= 1.0
    assert next(enc.parameters()).device.type == "cpu"
