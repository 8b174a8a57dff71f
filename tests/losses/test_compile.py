"""``torch.compile(loss, fullgraph=True)``: the losses trace without a graph break (the checks
that read values, host syncs, are skipped while compiling) and give the eager values."""

from __future__ import annotations

import pytest
import torch

from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE

B, N1 = 6, 5


def _inputs():
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(B, 4, generator=g), torch.randn(B, 4, generator=g)
    parts = torch.randn(B * N1, 3, generator=g)
    return z1, z2, parts, torch.arange(B).repeat_interleave(N1), torch.rand(B, B, generator=g)


CASES = {
    "info_nce": (InfoNCE(0.3), ()),
    "info_nce-cross_view": (InfoNCE(0.3, negatives="cross_view"), ()),
    "hodge_parts": (HodgeDebiasedInfoNCE(0.3, (1.0, 0.5, 2.0)), ("hodge_parts",)),
    "hodge_parts-batch": (HodgeDebiasedInfoNCE(0.3), ("hodge_parts", "batch")),
    "hodge_parts-energy": (HodgeDebiasedInfoNCE(0.3, similarity="energy"), ("hodge_parts",)),
    "weights": (HodgeDebiasedInfoNCE(0.3, include_positive_in_denominator=False), ("weights",)),
}


@pytest.mark.parametrize("name", CASES)
def test_the_losses_compile_without_a_graph_break(name):
    loss_fn, keys = CASES[name]
    z1, z2, parts, batch, w = _inputs()
    given = {"hodge_parts": parts, "batch": batch, "weights": w}
    kw = {k: given[k] for k in keys}
    torch._dynamo.reset()
    compiled = torch.compile(loss_fn, fullgraph=True, backend="eager")  # raises on a break
    a1 = z1.clone().requires_grad_()
    got = compiled(a1, z2, **kw)
    got.backward()
    b1 = z1.clone().requires_grad_()
    want = loss_fn(b1, z2, **kw)
    want.backward()
    assert torch.equal(got, want) and torch.equal(a1.grad, b1.grad)
