"""``pretrain`` under ``torchrun`` with DistributedDataParallel on 2 gloo CPU processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tests.experiments.conftest import TINY_FLAGS

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
def test_torchrun_two_processes(tmp_path):
    out = tmp_path / "ddp"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
        "--nproc_per_node", "2",
        "-m", "topo_contrastive.cli", "pretrain", "--dataset", "trajectory",
        "--config", "SSCL_Spec", "--epochs", "2", "--hidden-channels", "8", "--threads", "1",
        "--out", str(out), "--data-root", str(tmp_path / "data"), *TINY_FLAGS, "--no-progress",
    ]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["COMPLETE", "encoder.pt", "pretrain.json"]
    assert res.stderr.count("wrote ") == 1  # rank 0 alone writes
    log = json.loads((out / "pretrain.json").read_text())
    assert log["world_size"] == 2 and log["written_by_rank"] == 0 and log["complete"] is True
    assert len(log["losses"]) == 2 and all(v == v for v in log["losses"])
    ckpt = torch.load(out / "encoder.pt", weights_only=True)
    assert ckpt["metadata"]["world_size"] == 2
