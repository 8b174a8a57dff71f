"""SCNNConv and SCNN on a PyG batch of different complexes equal per-sample runs (the
batch is one block-diagonal complex; the readout pools by the batch vector), and the
bad inputs of that layout."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from topo_contrastive.nn import SCNN, HodgeReadout, SCNNConv

from .._many_complexes import many_complexes
from ._helpers import assert_pair_gives_the_same_gradients


@pytest.fixture(scope="module")
def batch():
    samples = many_complexes(7, seed=11, cells=True)
    return samples, Batch.from_data_list(samples)


def _x(samples, channels=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(int(s.num_cells(1)), channels, generator=g, dtype=torch.float64)
            for s in samples]  # fmt: skip


@pytest.mark.parametrize("readout", ["mean", "sum", "max", "basis_free"])
@pytest.mark.parametrize("input_skip", [False, True])
def test_scnn_on_a_batch_equals_per_sample_runs(batch, readout, input_skip):
    samples, b = batch
    torch.manual_seed(0)
    ro = HodgeReadout(None, energies=True) if readout == "basis_free" else readout
    enc = SCNN(2, 8, num_layers=2, readout=ro, input_skip=input_skip).double()
    xs = _x(samples)
    x = torch.cat(xs).requires_grad_()
    out = enc(x, *b.laplacians(dtype=torch.float64), b.batch_1)
    ref = torch.cat([enc(xi, *s.laplacians(dtype=torch.float64)) for xi, s in
                     zip(xs, samples, strict=True)])  # fmt: skip
    assert out.shape == (len(samples), enc.out_channels)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    # gradients of the batch equal the sum of the per-sample ones
    out.square().sum().backward()
    g_batch = [p.grad.clone() for p in enc.parameters()]
    enc.zero_grad()
    ref.detach()
    torch.cat([enc(xi, *s.laplacians(dtype=torch.float64)) for xi, s in
               zip(xs, samples, strict=True)]).square().sum().backward()  # fmt: skip
    for a, c in zip(g_batch, enc.parameters(), strict=True):
        torch.testing.assert_close(a, c.grad, rtol=1e-10, atol=1e-12)


def test_conv_and_edge_embeddings_keep_the_rows(batch):
    samples, b = batch
    torch.manual_seed(1)
    conv = SCNNConv(2, 3, K_down=2, K_up=1).double()
    xs = _x(samples, seed=1)
    L = b.laplacians(dtype=torch.float64)
    out = conv(torch.cat(xs), *L, b.batch_1)
    ref = torch.cat([conv(xi, *s.laplacians(dtype=torch.float64)) for xi, s in
                     zip(xs, samples, strict=True)])  # fmt: skip
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    enc = SCNN(2, 4).double()
    rows = enc.edge_embeddings(torch.cat(xs), *L, b.batch_1)
    assert rows.shape == (int(b.num_cells(1).sum()), 4)


def test_a_batch_without_its_batch_vector_is_refused_not_pooled(batch):
    samples, b = batch
    enc = SCNN(1, 4).double()
    x = b.x_1.double()
    with pytest.raises(ValueError, match="batch of 7 complexes .* no `batch` vector"):
        enc(x, *b.laplacians(dtype=torch.float64))


def test_operators_of_another_batch_are_refused(batch):
    samples, b = batch
    other = Batch.from_data_list(samples[1:] + samples[:1])
    enc = SCNN(1, 4).double()
    L_other = other.laplacians(dtype=torch.float64)
    if other.num_cells(1).tolist() != b.num_cells(1).tolist():
        with pytest.raises(ValueError, match="operators of one batch with the flows of another"):
            enc(b.x_1.double(), *L_other, b.batch_1)
    # untagged operators (a copy) that couple two samples of the batch vector
    L = [t.coalesce().clone() for t in b.laplacians(dtype=torch.float64)]
    shifted = torch.roll(b.batch_1, 1)
    shifted[0] = 0
    with pytest.raises(ValueError, match="couples edge .* of sample .* with edge"):
        enc(b.x_1.double(), *L, shifted)
    with pytest.raises(ValueError, match="contiguous and in order"):
        enc(b.x_1.double(), *L, b.batch_1.flip(0))


def test_a_readout_tied_to_one_complex_refuses_a_batch(batch):
    from topo_contrastive import HodgeDecomposition

    samples, b = batch
    enc = SCNN(1, 4, readout=HodgeReadout(HodgeDecomposition(samples[0].complex()))).double()
    with pytest.raises(ValueError, match="tied to one complex"):
        enc(b.x_1.double(), *b.laplacians(dtype=torch.float64), b.batch_1)


def test_basis_free_readout_equals_the_energies_of_the_complex_readout(batch):
    from topo_contrastive import HodgeDecomposition

    samples, _ = batch
    s = samples[1]
    H = torch.randn(3, int(s.num_cells(1)), 5, dtype=torch.float64)
    tied = HodgeReadout(HodgeDecomposition(s.complex()), energies=True).double()
    free = HodgeReadout(None, energies=True)
    L = s.laplacians(dtype=torch.float64)
    a, c = tied(H), free(H, L_down=L[0], L_up=L[1])
    beta = tied.beta1
    # [mean | harmonic coordinates | energies] vs [mean | energies]
    torch.testing.assert_close(c[:, :5], a[:, :5], rtol=0, atol=1e-12)
    torch.testing.assert_close(c[:, 5:], a[:, 5 + 5 * beta:], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="energies=True"):
        HodgeReadout(None)
    with pytest.raises(ValueError, match="L_down and L_up"):
        free(H)


def test_under_torch_compile_the_batch_checks_skip_the_values(batch, monkeypatch):
    """While ``torch.compile`` traces, only the batch vector's type and shape are checked
    (reading its values would break the graph); the sample count comes from the operators."""
    from topo_contrastive.complex._operators import operator_blocks
    from topo_contrastive.nn._complexes import check_complexes_batch

    samples, b = batch
    ops = b.laplacians()
    rows = int(b.batch_1.numel())
    shuffled = b.batch_1.flip(0)  # not PyG's layout: refused in eager mode
    with pytest.raises(ValueError, match="contiguous and in order"):
        check_complexes_batch(shuffled, rows, ops)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert operator_blocks(ops[0]) is not None
    assert check_complexes_batch(shuffled, rows, ops) == len(samples)  # from the operators
    untagged = tuple(L.clone() for L in ops)
    assert check_complexes_batch(b.batch_1, rows, untagged) == len(samples)
    with pytest.raises(ValueError, match="must be a vector of shape"):  # shapes still checked
        check_complexes_batch(b.batch_1[:-1], rows, ops)


def test_dynamo_traces_the_batch_checks_without_a_graph_break():
    """``torch._dynamo.explain`` (tracing only, no compilation): no graph break in the
    checks of a batch of complexes, nor in the layer kernel's Python."""
    from .._many_complexes import many_complexes

    samples = many_complexes(2, seed=3, cells=True)
    b = Batch.from_data_list(samples)
    enc = SCNN(1, 4, num_layers=1)
    x = torch.randn(int(b.batch_1.numel()), 1)
    with torch.no_grad():
        explained = torch._dynamo.explain(enc)(x, *b.laplacians(), b.batch_1)
    torch._dynamo.reset()
    where = [str(r.user_stack[-1]) for r in explained.break_reasons if r.user_stack]
    assert not [w for w in where if "_complexes.py" in w], where
    # the sparse products remain outside the graph (torch.compile traces no sparse tensor)
    assert all("sparse" in r.reason for r in explained.break_reasons), [
        r.reason[:80] for r in explained.break_reasons
    ]


def test_one_sample_skips_the_coupling_check():
    # a batch vector of one sample cannot be coupled by any operator: the operators are
    # not read (the check scans every non-zero, 12 ms a call at 100k edges, once per
    # gradient-caching chunk of one view); with two samples they are
    from topo_contrastive.nn._complexes import check_complexes_batch

    class Unreadable:
        def detach(self):
            raise AssertionError("the operator was read")

    assert check_complexes_batch(torch.zeros(5, dtype=torch.long), 5, (Unreadable(),)) == 1
    with pytest.raises(AssertionError, match="was read"):
        check_complexes_batch(torch.tensor([0, 0, 1, 1, 1]), 5, (Unreadable(),))


def test_a_batch_of_complexes_trains_through_the_pair_with_the_same_gradients(batch, monkeypatch):
    # the batch-of-complexes path runs the same layer stack as one complex: with
    # recompute_first_layer its first two layers as one kernel node, with the gradients of
    # two layer nodes bit for bit
    _, b = batch
    torch.manual_seed(0)
    enc = SCNN(1, 8, num_layers=3).double()
    L = b.laplacians(dtype=torch.float64)
    assert_pair_gives_the_same_gradients(
        enc, lambda: enc(b.x_1.double(), *L, b.batch_1), monkeypatch
    )
