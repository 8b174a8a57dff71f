"""Two-process ``gloo`` tests of ``gather_distributed=True`` on CPU.

Each rank holds a slice of one global batch. What a DistributedDataParallel user gets is the mean
over ranks of the per-rank losses and, for every local tensor, its gradient divided by the number
of ranks R (DDP averages gradients over ranks). Both must equal the single-process loss and
gradient on the concatenated batch; the rank-local gradient itself is R times the slice of the
single-process gradient because the all-gather sums gradients from every rank's loss.
"""

from __future__ import annotations

import copy
import os
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
from torch import nn

from tests._multiprocess import run_ranks, set_stage
from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE, hodge_negative_weights

WORLD = 2
SIZE_CASES = ((4, 4), (3, 5))  # equal and unequal per-rank batch sizes
D, N1 = 4, 6


def _losses(gather: bool) -> dict[str, tuple[nn.Module, str]]:
    gamma = (1.0, 0.5, 2.0)
    return {
        "info_nce": (InfoNCE(0.3, gather_distributed=gather), "none"),
        "info_nce_no_pos": (
            InfoNCE(0.3, include_positive_in_denominator=False, gather_distributed=gather),
            "none",
        ),
        "info_nce_sum": (InfoNCE(0.3, gather_distributed=gather, reduction="sum"), "none"),
        "info_nce_cross_view": (
            InfoNCE(0.3, gather_distributed=gather, negatives="cross_view"), "none"
        ),
        "hodge_parts_cross_view": (
            HodgeDebiasedInfoNCE(0.3, gamma, gather_distributed=gather, negatives="cross_view"),
            "parts",
        ),
        "hodge_parts": (HodgeDebiasedInfoNCE(0.3, gamma, gather_distributed=gather), "parts"),
        "hodge_weights": (
            HodgeDebiasedInfoNCE(
                0.3, gamma, include_positive_in_denominator=False, gather_distributed=gather
            ),
            "weights",
        ),
    }


def _rows(parts):
    """[3, B, N1] -> the loss's layout [B * N1, 3] (a PyG batch's ``hodge_parts``)."""
    return parts.permute(1, 2, 0).reshape(-1, 3)


def _call(loss_fn, kind, z1, z2, parts, all_parts, offset):
    if kind == "none":
        return loss_fn(z1, z2)
    if kind == "parts":
        return loss_fn(z1, z2, hodge_parts=_rows(parts))
    w = hodge_negative_weights(parts, (1.0, 0.5, 2.0), candidates=all_parts, anchor_offset=offset)
    return loss_fn(z1, z2, weights=w)


def _worker(rank: int, init_method: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    set_stage(rank, "init_process_group")
    dist.init_process_group(
        "gloo", init_method=init_method, rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    try:
        set_stage(rank, "collectives of the losses")
        results = {}
        for sizes in SIZE_CASES:
            M = sum(sizes)
            start = sum(sizes[:rank])
            sl = slice(start, start + sizes[rank])
            g = torch.Generator().manual_seed(M)
            z1 = torch.randn(M, D, generator=g, dtype=torch.float64)
            z2 = torch.randn(M, D, generator=g, dtype=torch.float64)
            parts = torch.randn(3, M, N1, generator=g, dtype=torch.float64)
            single, distributed = _losses(False), _losses(True)
            for name, (loss_fn, kind) in single.items():
                r1, r2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
                ref = _call(loss_fn, kind, r1, r2, parts, None, 0)
                ref.backward()
                d1, d2 = z1[sl].clone().requires_grad_(), z2[sl].clone().requires_grad_()
                dist_fn, _ = distributed[name]
                loss = _call(dist_fn, kind, d1, d2, parts[:, sl], parts, start)
                loss.backward()
                results[(sizes, name)] = {
                    "ref": ref.detach(),
                    "ref_g1": r1.grad[sl],
                    "ref_g2": r2.grad[sl],
                    "loss": loss.detach(),
                    "g1": d1.grad,
                    "g2": d2.grad,
                }
            # the quantity a DDP user gets: parameter gradients of a wrapped encoder
            torch.manual_seed(0)
            base = nn.Sequential(nn.Linear(N1, 8), nn.Tanh(), nn.Linear(8, D)).double()
            x1 = torch.randn(M, N1, generator=g, dtype=torch.float64)
            x2 = torch.randn(M, N1, generator=g, dtype=torch.float64)
            model = copy.deepcopy(base)
            HodgeDebiasedInfoNCE(0.3)(model(x1), model(x2), hodge_parts=_rows(parts)).backward()
            ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(base))
            z = ddp(torch.cat([x1[sl], x2[sl]]))  # both views in one forward
            za, zb = z.split(sizes[rank])
            loss_fn = HodgeDebiasedInfoNCE(0.3, gather_distributed=True)
            loss_fn(za, zb, hodge_parts=_rows(parts[:, sl])).backward()
            results[(sizes, "ddp")] = {
                "ref": [p.grad.clone() for p in model.parameters()],
                "got": [p.grad.clone() for p in ddp.module.parameters()],
            }
        tmp = os.path.join(out_dir, f"rank{rank}.pt.tmp")
        torch.save(results, tmp)
        os.replace(tmp, os.path.join(out_dir, f"rank{rank}.pt"))
        set_stage(rank, "barrier before destroy_process_group")
        dist.barrier()
    finally:
        set_stage(rank, "destroy_process_group")
        dist.destroy_process_group()
        set_stage(rank, "done")


@pytest.mark.distributed
def test_gather_distributed_matches_single_process(tmp_path):
    init_method = f"file://{tmp_path / 'rendezvous'}"
    run_ranks(_worker, (init_method, str(tmp_path)), WORLD, timeout=240, stage_dir=tmp_path)
    res = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD)]
    names = [n for n in _losses(False)]
    for sizes in SIZE_CASES:
        for name in names:
            ranks = [res[r][(sizes, name)] for r in range(WORLD)]
            ref = ranks[0]["ref"]
            mean_loss = sum(r["loss"] for r in ranks) / WORLD  # DDP optimises the rank mean
            torch.testing.assert_close(mean_loss, ref, rtol=0, atol=1e-12, msg=f"{sizes} {name}")
            for r in ranks:
                # DDP averages gradients over ranks: the user gets grad / WORLD
                torch.testing.assert_close(r["g1"] / WORLD, r["ref_g1"], rtol=0, atol=1e-12)
                torch.testing.assert_close(r["g2"] / WORLD, r["ref_g2"], rtol=0, atol=1e-12)
            if sizes[0] != sizes[1]:  # a single rank's loss is not the global loss
                assert not torch.allclose(ranks[0]["loss"], ref)
        for r in range(WORLD):
            ddp = res[r][(sizes, "ddp")]
            for got, want in zip(ddp["got"], ddp["ref"], strict=True):
                torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
