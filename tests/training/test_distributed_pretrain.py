"""``pretrain`` under ``torchrun`` with DistributedDataParallel on 2 gloo CPU processes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tests._multiprocess import run_command, run_ranks, set_stage
from tests._tiny import TINY_FLAGS

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
        "--dist-timeout", "60",
    ]  # fmt: skip
    res = run_command(cmd, 240, "torchrun with 2 pre-training processes", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["COMPLETE", "encoder.pt", "pretrain.json"]
    assert res.stderr.count("wrote ") == 1  # rank 0 alone writes
    log = json.loads((out / "pretrain.json").read_text())
    assert log["world_size"] == 2 and log["written_by_rank"] == 0 and log["complete"] is True
    assert len(log["losses"]) == 2 and all(v == v for v in log["losses"])
    ckpt = torch.load(out / "encoder.pt", weights_only=True)
    assert ckpt["metadata"]["world_size"] == 2


# ---------------------------------------------------------------------------- gradients
WORLD = 2
LOCAL_SIZES = ((4, 6), (5, 5), (3, 4))  # per-rank batch sizes of three training steps


def _views_of_rank(config, data, idx, step, rank):
    """The batch of samples ``idx`` with the spectral-mask views rank ``rank`` draws at
    ``step`` (its own generator), through the training loop's pipeline: the fitted dataset,
    PyG's collate, the ContrastiveViews transform on the batch."""
    from torch_geometric.data import Batch

    gen = torch.Generator().manual_seed(1000 * step + rank)
    views = data.contrastive_views(config, gen)
    ds = data.contrastive_dataset(views)
    batch = views(Batch.from_data_list([ds[int(i)] for i in idx]))
    # [2 * b * N1, 1], [2 * b * N1]
    x, b = torch.cat([batch.x_1_view1, batch.x_1_view2]), batch.num_graphs
    rows = torch.arange(2 * b).repeat_interleave(x.shape[0] // (2 * b))
    return batch, x.double(), rows


def _grad_worker(rank: int, init_method: str, root: str, out_dir: str) -> None:
    import copy
    from datetime import timedelta

    from torch import nn

    from tests._tiny import tiny_dataset
    from topo_contrastive.losses import HodgeDebiasedInfoNCE
    from topo_contrastive.nn import ProjectionHead
    from topo_contrastive.training import ExperimentData, get_config
    from topo_contrastive.training.loop import (
        ContrastiveModel,
        cached_gradient_step,
        make_optimizer,
    )

    torch.set_num_threads(1)
    set_stage(rank, "init_process_group")
    dist.init_process_group(
        "gloo", init_method=init_method, rank=rank, world_size=WORLD,
        timeout=timedelta(seconds=60),
    )  # fmt: skip
    try:
        set_stage(rank, "training steps under DDP")
        data = ExperimentData.from_dataset(tiny_dataset(root), "trajectory")
        config = get_config("SSCL_Spec", "trajectory", hidden_channels=8, projection_channels=8)
        assert config.loss == "hodge_debiased" and config.mask == "spectral"
        torch.manual_seed(0)
        encoder = data.encoder(config)
        head = ProjectionHead(encoder.out_channels, 8, 8)
        L = data.complex.laplacians(dtype=torch.float64)
        model = ContrastiveModel(encoder, head).double()
        single = copy.deepcopy(model)
        ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(model))
        cached = nn.parallel.DistributedDataParallel(copy.deepcopy(model))  # in chunks
        opt_single = make_optimizer(single.parameters(), config)
        opt_ddp = make_optimizer(ddp.parameters(), config)
        opt_cached = make_optimizer(cached.parameters(), config)
        loss_single = HodgeDebiasedInfoNCE(config.temperature, tuple(config.gamma))
        loss_ddp = HodgeDebiasedInfoNCE(
            config.temperature, tuple(config.gamma), gather_distributed=True
        )
        report = []
        for step, sizes in enumerate(LOCAL_SIZES):
            order = torch.randperm(data.num_samples, generator=torch.Generator().manual_seed(step))
            idx = list(order[: sum(sizes)].split(list(sizes)))  # every rank's samples
            views = [_views_of_rank(config, data, i, step, r) for r, i in enumerate(idx)]
            # single process: the concatenated batch of both ranks, with the same views
            M = sum(sizes)
            x = torch.cat([v[1].view(2, -1, 1) for v in views], dim=1).view(-1, 1)
            rows = torch.arange(2 * M).repeat_interleave(x.shape[0] // (2 * M))
            parts = torch.cat([v[0].hodge_parts for v in views]).double()  # [M * N1, 3]
            _, z = single(x, L, rows)
            ref = loss_single(z[:M], z[M:], hodge_parts=parts)
            opt_single.zero_grad()
            ref.backward()
            # this rank: its own batch and views, negatives gathered from both ranks
            b = sizes[rank]
            batch, x, rows = views[rank]
            _, z = ddp(x, L, rows)
            loss = loss_ddp(z[:b], z[b:], hodge_parts=batch.hodge_parts.double())
            opt_ddp.zero_grad()
            loss.backward()  # DDP averages the gradients over the ranks
            grads = {k: p.grad for k, p in ddp.module.named_parameters()}
            # the same step with gradient caching (chunks of 3 views; one all-reduce), the
            # graphs of 1, 2 or all chunks kept (under DDP all but the synced last one)
            opt_cached.zero_grad()
            cached_gradient_step(cached, loss_ddp, x, L, 2 * b, 3,
                                 {"hodge_parts": batch.hodge_parts.double()},
                                 kept=(1, 2, 99)[step % 3])  # fmt: skip
            grads_cached = {k: p.grad for k, p in cached.module.named_parameters()}
            report.append(
                {
                    "max_abs_diff": max(
                        float((grads[k] - p.grad).abs().max())
                        for k, p in single.named_parameters()
                    ),
                    "max_abs_diff_cached": max(
                        float((grads_cached[k] - p.grad).abs().max())
                        for k, p in single.named_parameters()
                    ),
                    "max_abs_grad": max(float(p.grad.abs().max()) for p in single.parameters()),
                    "local_loss": float(loss.detach()),
                    "loss": float(ref.detach()),
                }
            )
            opt_single.step()
            opt_ddp.step()
            opt_cached.step()
        report.append(
            {
                "max_param_diff": max(
                    float((p - q).abs().max())
                    for p, q in zip(single.parameters(), ddp.module.parameters(), strict=True)
                )
            }
        )
        tmp = os.path.join(out_dir, f"grads{rank}.pt.tmp")
        torch.save(report, tmp)
        os.replace(tmp, os.path.join(out_dir, f"grads{rank}.pt"))
        set_stage(rank, "barrier before destroy_process_group")
        dist.barrier()
    finally:
        set_stage(rank, "destroy_process_group")
        dist.destroy_process_group()
        set_stage(rank, "done")


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
def test_two_rank_debiased_spectral_pretraining_gradients_equal_single_process(tmp_path):
    # 2-rank gloo pre-training steps (SCNN encoder + head under DDP, spectral-mask views, the
    # Hodge-debiased loss with gathered negatives, Adam): on every rank and step the averaged
    # parameter gradients equal those of one process on the concatenated batch
    from tests._tiny import tiny_dataset

    tiny_dataset(tmp_path / "data")  # processed once here; the ranks only read it
    init_method = f"file://{tmp_path / 'rendezvous'}"
    run_ranks(
        _grad_worker,
        (init_method, str(tmp_path / "data"), str(tmp_path)),
        WORLD,
        timeout=240,
        stage_dir=tmp_path / "stages",
    )
    for rank in range(WORLD):
        report = torch.load(tmp_path / f"grads{rank}.pt")
        for step, sizes in enumerate(LOCAL_SIZES):
            r = report[step]
            assert r["max_abs_grad"] > 1e-3  # gradients that could differ
            assert r["max_abs_diff"] <= 1e-6, (rank, step, r)
            assert r["max_abs_diff_cached"] <= 1e-6, (rank, step, r)
            if sizes[0] != sizes[1]:  # one rank's loss alone is not the global loss
                assert abs(r["local_loss"] - r["loss"]) > 1e-6
        assert report[-1]["max_param_diff"] <= 1e-6


# ---------------------------------------------------------------------------- trajectory
#: (batch_size, chunk_samples, by_cosines) of the trajectory runs on the 40 samples: a
#: batch that divides by 2 processes, one that does not (shares of 6 and 7 samples; the
#: last batch of 14 gives 7 and 7), the latter with gradient caching (chunks of 4 views),
#: and that with the weights of a large dataset (from its cosines, no parts in the batches)
TRAJECTORY_RUNS = ((20, None, False), (13, None, False), (13, 4, False), (13, 4, True))
TRAJECTORY_EPOCHS = 3
#: Adam's step size of the trajectory runs. At the preset's 3e-3 the tiny task's training
#: amplifies float32 rounding: on one process, a 1e-7 relative change of the initial weights
#: moves a later epoch's loss by 1e-5 to 1e-3 relative, so no second run (two processes sum
#: in another order) can match to 1e-5; at 1e-4 that change stays near 1e-7.
TRAJECTORY_LR = 1e-4


def _trajectories(data, rank: int | None = None) -> list[dict]:
    """``pretrain`` of SSCL_Spec (spectral masks, Hodge-debiased loss) for every run of
    :data:`TRAJECTORY_RUNS`: the per-epoch losses, chance losses and final parameters."""
    from topo_contrastive.training import get_config, loop, pretrain

    out = []
    default_bytes = loop.STORED_PARTS_BYTES
    for batch_size, chunk, by_cosines in TRAJECTORY_RUNS:
        config = get_config(
            "SSCL_Spec", "trajectory", hidden_channels=8, projection_channels=8,
            batch_size=batch_size, lr=TRAJECTORY_LR,
        )  # fmt: skip
        assert config.loss == "hodge_debiased" and config.mask == "spectral"
        assert config.optimizer == "adam"
        if rank is not None:
            set_stage(rank, f"pretrain batch_size={batch_size} chunk_samples={chunk}")
        loop.STORED_PARTS_BYTES = 0 if by_cosines else default_bytes
        try:
            res = pretrain(data, config, seed=5, epochs=TRAJECTORY_EPOCHS, chunk_samples=chunk)
        finally:
            loop.STORED_PARTS_BYTES = default_bytes
        out.append(
            {
                "losses": res.losses,
                "chance": res.chance_losses,
                "params": [p.detach().clone() for p in res.encoder.parameters()],
                "world_size": res.world_size,
            }
        )
    return out


def _trajectory_worker(rank: int, init_method: str, root: str, out_dir: str) -> None:
    from datetime import timedelta

    from tests._tiny import tiny_dataset
    from topo_contrastive.training import ExperimentData

    torch.set_num_threads(1)
    set_stage(rank, "init_process_group")
    dist.init_process_group(
        "gloo", init_method=init_method, rank=rank, world_size=WORLD,
        timeout=timedelta(seconds=60),
    )  # fmt: skip
    try:
        data = ExperimentData.from_dataset(tiny_dataset(root), "trajectory")
        report = _trajectories(data, rank)
        tmp = os.path.join(out_dir, f"trajectory{rank}.pt.tmp")
        torch.save(report, tmp)
        os.replace(tmp, os.path.join(out_dir, f"trajectory{rank}.pt"))
        set_stage(rank, "barrier before destroy_process_group")
        dist.barrier()
    finally:
        set_stage(rank, "destroy_process_group")
        dist.destroy_process_group()
        set_stage(rank, "done")


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
def test_two_process_pretrain_trajectory_equals_one_process(tmp_path):
    # `pretrain` on 2 gloo processes (DDP, SSCL_Spec: spectral masks and the Hodge-debiased
    # loss with gathered negatives) records on every rank the per-epoch losses of one process
    # at the same global batch and ends with its weights: the ranks draw the single process's
    # masks for the global batch and keep their shares
    from tests._tiny import tiny_dataset
    from topo_contrastive.training import ExperimentData

    torch.set_num_threads(1)
    data = ExperimentData.from_dataset(tiny_dataset(tmp_path / "data"), "trajectory")
    init_method = f"file://{tmp_path / 'rendezvous'}"
    run_ranks(
        _trajectory_worker,
        (init_method, str(tmp_path / "data"), str(tmp_path)),
        WORLD,
        timeout=240,
        stage_dir=tmp_path / "stages",
    )
    single = _trajectories(data)
    for rank in range(WORLD):
        report = torch.load(tmp_path / f"trajectory{rank}.pt")
        for run, ref, got in zip(TRAJECTORY_RUNS, single, report, strict=True):
            assert ref["world_size"] == 1 and got["world_size"] == WORLD
            assert len(got["losses"]) == TRAJECTORY_EPOCHS
            # the loss moves over the epochs: a trajectory that could differ
            assert abs(ref["losses"][-1] - ref["losses"][0]) > 1e-3 * ref["losses"][0]
            for key in ("losses", "chance"):
                assert got[key] == pytest.approx(ref[key], rel=1e-5, abs=0), (rank, run, key)
            diff = max(
                float((p - q).abs().max())
                for p, q in zip(ref["params"], got["params"], strict=True)
            )
            assert diff <= 1e-5, (rank, run, diff)


@pytest.mark.parametrize("world", [2, 3, 5])
def test_rank_shares_concatenate_to_the_global_batch(world):
    # the ranks' shares of a batch of 13 samples, in rank order, are the batch in its
    # order; every rank has a sample and the sizes differ by at most one
    from topo_contrastive.training.loop import _rank_share

    G = 13
    shares = [_rank_share(G, r, world) for r in range(world)]
    assert shares[0][0] == 0 and shares[-1][1] == G
    assert all(a[1] == b[0] for a, b in zip(shares, shares[1:], strict=False))
    sizes = [hi - lo for lo, hi in shares]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_pretrain_refuses_a_batch_smaller_than_the_process_count(tiny_data, monkeypatch):
    # every process needs a sample of every batch: 3 processes and batches of 2 are refused
    # before any training (the process group is faked: the check precedes DDP)
    from topo_contrastive.training import get_config, loop

    monkeypatch.setattr(loop, "_dist_context", lambda: (0, 3))
    config = get_config("SSCL_Spec", "trajectory", hidden_channels=8, batch_size=2)
    with pytest.raises(ValueError, match=r"3 processes .* batch_size=2 .* at least 3"):
        loop.pretrain(tiny_data, config, epochs=1)
