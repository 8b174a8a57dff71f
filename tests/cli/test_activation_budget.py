"""``pretrain --activation-budget``: a batch whose views do not fit runs the encoder in
chunks with gradient caching, says so in one line, records the chunk and trains the same
encoder as the whole batch."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests._commands import main
from topo_contrastive.training import get_config
from topo_contrastive.training.gradient_caching import (
    activation_bytes,
    kept_bytes,
    plan_chunk_samples,
    plan_gradient_caching,
)


def test_plan_by_the_activation_model():
    cfg = get_config("SSCL_Spec", "ocean")  # batch 100, width 64, 4 layers
    per_view = activation_bytes(1_000, cfg)
    assert per_view == 1_000 * 64 * (4 + 3) * 4
    keep = kept_bytes(1_000, cfg)
    assert keep == 1_000 * (64 * 3 + 2) * 4  # the first layer's output is recomputed
    assert plan_gradient_caching(1_000, cfg, budget=200 * per_view) is None  # 2B views fit
    # a chunk takes an eighth of the budget; the rest keeps the graphs of whole chunks
    plan = plan_gradient_caching(1_000, cfg, budget=40 * per_view)
    assert plan.chunk == 5
    assert plan.kept == (35 * per_view) // (5 * keep) == 16  # of 40 chunks
    assert plan_chunk_samples(1_000, cfg, budget=40 * per_view) == 5
    assert plan_gradient_caching(1_000, cfg, budget=1) == (1, 1)  # one view, the first kept
    # room for every graph: all 9 chunks of 24 views kept (none run twice)
    assert plan_gradient_caching(1_000, cfg, budget=200 * per_view - 1) == (24, 9)


def _run(tmp_path, data_root, name, extra):
    out = tmp_path / name
    argv = ["pretrain", "--dataset", "trajectory", "--config", "SCL", "--epochs", "1",
            "--out", str(out), "--data-root", str(data_root), "--no-progress",
            "--threads", "1", "--set", "batch_size=60", "--trajectory-points", "200",
            "--trajectory-split", "40", "10", "10", *extra]  # fmt: skip
    assert main(argv) == 0
    return json.loads((out / "pretrain.json").read_text())


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("activation_budget_data")


def test_chunked_run_says_so_and_trains_the_same(tmp_path, data_root, capsys):
    whole = _run(tmp_path, data_root, "whole", [])
    assert "encoder activations" not in capsys.readouterr().err
    assert whole["chunk_samples"] is None
    # a budget of forty views of this complex: chunks of five, some kept
    cfg = get_config("SCL", "trajectory").replace(batch_size=60)
    n1 = whole["complex_sizes"][1]
    budget = 40 * activation_bytes(n1, cfg)
    chunked = _run(tmp_path, data_root, "chunked", ["--activation-budget", repr(budget / 2**20)])
    kept = (35 * activation_bytes(n1, cfg)) // (5 * kept_bytes(n1, cfg))
    assert 1 < kept < 24  # of 24 chunks
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("encoder activations")]
    assert lines == [
        f"encoder activations: chunks of 5 views with gradient caching, {5 * kept} of 120 "
        "views kept for the backward pass and the others run twice (a batch of 120 views "
        f"needs {120 * activation_bytes(n1, cfg) / 2**30:.1f} GiB, over the "
        f"{budget / 2**20:.0f} MiB --activation-budget)"
    ]
    assert (chunked["chunk_samples"], chunked["kept_chunks"]) == (5, kept)
    # one step of all 60 samples: the epoch's loss is that of the first batch, the same up
    # to float32 rounding (the gradients are compared in tests/experiments/
    # test_gradient_caching.py; over many steps this task's training amplifies rounding)
    np.testing.assert_allclose(chunked["losses"], whole["losses"], rtol=1e-5)
