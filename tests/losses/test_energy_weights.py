"""The Hodge-debiased loss across complexes: energy fractions of the parts (exact values on a
hand-built flow, invariance to orientation and edge order), the weights against a naive
loop from their formula, the loss with a batch vector equal to the loss with those weights,
and the paper's weights kept exactly on one shared complex."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from topo_contrastive import ComplexOperators, ContrastiveViews, EdgeFlowMask, HodgeDecomposition
from topo_contrastive.losses import HodgeDebiasedInfoNCE, energy_fractions, hodge_negative_weights
from topo_contrastive.losses.hodge_weights import energy_weights as hodge_energy_weights

from .._many_complexes import many_complexes
from ._naive import naive_loss


def test_energy_fractions_of_a_hand_built_flow():
    # a square with one filled triangle (0, 1, 2) and a hole: x = cycle around the triangle
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
    hodge = HodgeDecomposition(ops)
    curl = ops.path_to_flow([0, 1, 2, 0]).double()  # the triangle's boundary: curl only
    grad = ops.path_to_flow([0, 1]).double()
    x = torch.stack([curl, grad, torch.zeros_like(curl)])  # [3, N1]
    parts = torch.stack(list(hodge(x)), dim=-1).reshape(-1, 3)  # [3 * N1, 3]
    batch = torch.arange(3).repeat_interleave(ops.num_edges)
    f = energy_fractions(parts, batch)
    torch.testing.assert_close(f[0], torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    # a single edge: the fractions are the energies of its parts over its norm
    e = (parts[5:10] ** 2).sum(0)
    torch.testing.assert_close(f[1], e / e.sum())
    assert float(f[1, 0]) > 0.5 and f[2].tolist() == [0.0, 0.0, 0.0]  # zero flow: zeros


def test_energy_weights_equal_a_naive_loop():
    g = torch.Generator().manual_seed(0)
    f = torch.rand(5, 3, generator=g, dtype=torch.float64)
    f = f / f.sum(1, keepdim=True)
    gamma = (1.0, 0.5, 2.0)
    w = hodge_energy_weights(f, gamma)
    for i in range(5):
        s = {m: sum(gamma[k] * abs(float(f[i, k] - f[m, k])) for k in range(3))
             for m in range(5) if m != i}  # fmt: skip
        total = sum(s.values())
        for m in range(5):
            want = 0.0 if m == i else 4 * s[m] / total
            assert abs(float(w[i, m]) - want) < 1e-12
    same = hodge_energy_weights(f[[0, 0, 0]], gamma)  # all alike: uniform fallback
    assert same.tolist() == [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]


def test_loss_on_a_batch_of_complexes_uses_the_energy_weights():
    samples = ContrastiveViews(EdgeFlowMask(0.2)).fit(many_complexes(6, seed=9, cells=True))
    b = Batch.from_data_list(samples)
    g = torch.Generator().manual_seed(1)
    z1, z2 = (torch.randn(6, 4, generator=g, dtype=torch.float64) for _ in range(2))
    loss = HodgeDebiasedInfoNCE(0.5, gamma=(1.0, 2.0, 0.5))
    got = loss(z1, z2, hodge_parts=b.hodge_parts.double(), batch=b.batch_1)
    w = hodge_energy_weights(energy_fractions(b.hodge_parts.double(), b.batch_1), (1.0, 2.0, 0.5))
    torch.testing.assert_close(got, loss(z1, z2, weights=w), rtol=0, atol=1e-12)
    W = w.tolist()
    torch.testing.assert_close(got, naive_loss(z1, z2, 0.5, W=W), rtol=1e-10, atol=1e-12)
    # invariant to re-orienting the edges (the parts turn with them)
    flip = torch.where(torch.rand(b.hodge_parts.shape[0], generator=g) < 0.5, -1.0, 1.0)
    turned = b.hodge_parts.double() * flip[:, None].double()
    torch.testing.assert_close(loss(z1, z2, hodge_parts=turned, batch=b.batch_1), got)
    with pytest.raises(ValueError, match="needs one shared complex"):
        HodgeDebiasedInfoNCE(similarity="cosine")(
            z1, z2, hodge_parts=b.hodge_parts, batch=b.batch_1
        )
    with pytest.raises(ValueError, match="similarity"):
        HodgeDebiasedInfoNCE(similarity="cos")


def test_one_shared_complex_keeps_the_papers_weights():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
    hodge = HodgeDecomposition(ops)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, ops.num_edges, generator=g, dtype=torch.float64)
    parts = torch.stack(list(hodge(x)))  # [3, B, N1]
    z1, z2 = (torch.randn(4, 3, generator=g, dtype=torch.float64) for _ in range(2))
    loss = HodgeDebiasedInfoNCE(0.3)
    paper = loss(z1, z2, weights=hodge_negative_weights(parts))
    rows = parts.permute(1, 2, 0).reshape(-1, 3)  # the PyG layout [B * N1, 3]
    torch.testing.assert_close(loss(z1, z2, hodge_parts=rows), paper, rtol=0, atol=0)
    # similarity='energy' on one complex equals the batch-vector route
    energy = HodgeDebiasedInfoNCE(0.3, similarity="energy")(z1, z2, hodge_parts=rows)
    batch = torch.arange(4).repeat_interleave(ops.num_edges)
    torch.testing.assert_close(energy, loss(z1, z2, hodge_parts=rows, batch=batch), rtol=0,
                               atol=1e-12)  # fmt: skip


def test_parts_of_a_complexdata_batch_with_its_batch_vector_equal_a_per_sample_loop():
    # four complexes whose edges divide by 4: the batch vector says which rows are whose
    # (without it the loss reads B equal blocks of one shared complex, as documented)
    samples = ContrastiveViews(EdgeFlowMask(0.2)).fit(many_complexes(4, seed=0))
    sizes = [int(s.num_cells(1)) for s in samples]
    assert sum(sizes) % 4 == 0 and len(set(sizes)) > 1
    b = Batch.from_data_list(samples)
    g = torch.Generator().manual_seed(1)
    z1, z2 = (torch.randn(4, 4, generator=g) for _ in range(2))
    loss = HodgeDebiasedInfoNCE()
    got = loss(z1, z2, hodge_parts=b.hodge_parts, batch=b.batch_1)
    # a per-sample loop: each sample's own parts from its own complex
    frac = torch.cat([
        energy_fractions(torch.cat(HodgeDecomposition(s.complex())(s.x_1.view(1, -1)), 0).T,
                         torch.zeros(n, dtype=torch.long))
        for s, n in zip(samples, sizes, strict=True)
    ])  # fmt: skip
    want = loss(z1, z2, weights=hodge_energy_weights(frac))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    # the same with a copy of the parts (nothing hidden travels with the tensor)
    moved = b.hodge_parts.double().float().clone()
    torch.testing.assert_close(got, loss(z1, z2, hodge_parts=moved, batch=b.batch_1.clone()))
    with pytest.raises(ValueError, match="needs one shared complex"):
        HodgeDebiasedInfoNCE(similarity="cosine")(z1, z2, hodge_parts=b.hodge_parts,
                                                  batch=b.batch_1)  # fmt: skip
    with pytest.raises(ValueError, match="pass `batch`"):  # rows that are not 3 equal blocks
        loss(z1[:3], z2[:3], hodge_parts=b.hodge_parts[: sum(sizes[:3]) + 1])
