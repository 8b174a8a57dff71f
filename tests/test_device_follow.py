"""Every tensor a training step makes follows its input's device (issue 27 item 6), checked on
a CPU-only machine.

A GPU is not needed to find the classic device bug: a tensor made from nothing
(``torch.zeros(n)``, ``torch.arange(n)``, ``torch.tensor([...])``) without ``device=`` lands
on the CPU whatever the input's device is, and the step then fails or copies on a GPU. A
``TorchFunctionMode`` records every such factory call made from the library's code while
the step runs (forward, loss, backward, optimiser step); the step is clean when none is
recorded. Factories that take their device from a tensor argument (``*_like``,
``Tensor.new_*``, ``torch.tensor(t)`` of a tensor, sparse constructors from index tensors)
are device-following by construction and not recorded. Module construction (parameters are
made on the CPU and moved with ``.to(device)``, the PyTorch convention) is outside the step.
"""

from __future__ import annotations

import os
import traceback

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch_geometric.data import Batch, Data

import topo_contrastive
from experiments.studies.next_node import NextNodeHead
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE
from topo_contrastive.nn import SCNN, HodgeReadout, ProjectionHead
from topo_contrastive.transforms import ContrastiveViews, EdgeFlowMask, HodgeSpectralMask

PKG = os.path.dirname(topo_contrastive.__file__)
_FROM_NOTHING = {
    torch.empty, torch.zeros, torch.ones, torch.full, torch.arange, torch.rand, torch.randn,
    torch.randint, torch.randperm, torch.eye, torch.linspace, torch.logspace,
    torch.empty_strided, torch.tril_indices, torch.triu_indices,
}  # fmt: skip
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.sparse_coo_tensor, torch.sparse_csr_tensor}


class DeviceTracker(TorchFunctionMode):
    """Records ``(factory, file, line)`` of factory calls without ``device=`` made from the
    library's code."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, int]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if kwargs.get("device") is None and (
            func in _FROM_NOTHING
            or (func in _FROM_DATA and not (args and isinstance(args[0], torch.Tensor)))
        ):
            for frame in reversed(traceback.extract_stack()[:-1]):
                if frame.filename.startswith(PKG):
                    where = os.path.relpath(frame.filename, PKG)
                    self.calls.append((func.__name__, where, frame.lineno))
                    break
        return func(*args, **kwargs)


def test_the_tracker_catches_a_factory_without_device():
    def buggy(x):
        return x + torch.ones(x.shape)  # what the tracker exists for

    buggy.__code__ = buggy.__code__.replace(co_filename=os.path.join(PKG, "fake.py"))
    with DeviceTracker() as tracker:
        buggy(torch.zeros(3))
        torch.ones(3, device="cpu") + torch.zeros(3).new_ones(3)
    assert tracker.calls == [("ones", "fake.py", buggy.__code__.co_firstlineno + 1)]


def _complex() -> ComplexOperators:
    edges = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 4], [2, 3], [2, 5], [3, 5], [4, 5]]
    return ComplexOperators.from_simplices(edges, [[0, 1, 2], [2, 3, 5]])


@pytest.mark.parametrize("readout", ["mean", "hodge"])
@pytest.mark.parametrize("loss_name", ["info_nce", "hodge_debiased"])
@pytest.mark.parametrize("mask_kind", ["uniform", "spectral"])
def test_a_contrastive_step_makes_no_tensor_off_the_input_device(readout, loss_name, mask_kind):
    ops = _complex()
    hodge = HodgeDecomposition(ops)
    L_down, L_up = ops.laplacians()
    head_r = HodgeReadout(hodge) if readout == "hodge" else "mean"
    encoder = SCNN(1, 8, 2, 2, 2, readout=head_r)
    head = ProjectionHead(encoder.out_channels, 8, 8)
    loss_fn = InfoNCE(0.5) if loss_name == "info_nce" else HodgeDebiasedInfoNCE(0.5)
    mask = (
        EdgeFlowMask(0.3, generator=torch.Generator().manual_seed(0))
        if mask_kind == "uniform"
        else HodgeSpectralMask(0.3, hodge=hodge, generator=torch.Generator().manual_seed(0))
    )
    views = ContrastiveViews(mask, hodge=hodge)
    params = list(encoder.parameters()) + list(head.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    x = torch.randn(6, ops.num_edges)  # [B, N1]
    batch = Batch.from_data_list([Data(x_1=row.view(-1, 1)) for row in x])
    with DeviceTracker() as tracker:
        batch = views(batch)  # both views and the Hodge parts of the batch
        z1 = head(encoder(batch.x_1_view1, (L_down, L_up), batch.batch))  # [B, D]
        z2 = head(encoder(batch.x_1_view2, (L_down, L_up), batch.batch))
        kwargs = {"hodge_parts": batch.hodge_parts} if loss_name == "hodge_debiased" else {}
        loss = loss_fn(z1, z2, **kwargs)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert tracker.calls == []


def test_next_node_and_supervised_steps_make_no_tensor_off_the_input_device():
    ops = _complex()
    L_down, L_up = ops.laplacians()
    encoder = SCNN(1, 8, 2, 1, 1, bias=False)
    next_node = NextNodeHead(8, ops)
    classifier = torch.nn.Linear(8, 3)
    x = torch.randn(4, ops.num_edges, 1)
    candidates = torch.zeros(4, ops.num_nodes, dtype=torch.bool)
    candidates[:, :3] = True
    with DeviceTracker() as tracker:
        H = encoder.edge_embeddings(x, (L_down, L_up))  # [B, N1, C]
        logits = next_node(H, candidates)
        target = logits.new_zeros(4, dtype=torch.long)
        loss = torch.nn.functional.cross_entropy(logits, target)
        loss = loss + classifier(encoder(x, (L_down, L_up))).logsumexp(1).mean()
        loss.backward()
    assert tracker.calls == []
