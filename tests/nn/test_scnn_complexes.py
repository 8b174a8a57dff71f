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
    out = enc(x, b.laplacians(dtype=torch.float64), b.batch_1)
    ref = torch.cat([enc(xi, s.laplacians(dtype=torch.float64)) for xi, s in
                     zip(xs, samples, strict=True)])  # fmt: skip
    assert out.shape == (len(samples), enc.out_channels)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    # gradients of the batch equal the sum of the per-sample ones
    out.square().sum().backward()
    g_batch = [p.grad.clone() for p in enc.parameters()]
    enc.zero_grad()
    ref.detach()
    torch.cat([enc(xi, s.laplacians(dtype=torch.float64)) for xi, s in
               zip(xs, samples, strict=True)]).square().sum().backward()  # fmt: skip
    for a, c in zip(g_batch, enc.parameters(), strict=True):
        torch.testing.assert_close(a, c.grad, rtol=1e-10, atol=1e-12)


def test_conv_and_edge_embeddings_keep_the_rows(batch):
    samples, b = batch
    torch.manual_seed(1)
    conv = SCNNConv(2, 3, K_down=2, K_up=1).double()
    xs = _x(samples, seed=1)
    L = b.laplacians(dtype=torch.float64)
    out = conv(torch.cat(xs), L, b.batch_1)
    ref = torch.cat([conv(xi, s.laplacians(dtype=torch.float64)) for xi, s in
                     zip(xs, samples, strict=True)])  # fmt: skip
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    enc = SCNN(2, 4).double()
    rows = enc.edge_embeddings(torch.cat(xs), L, b.batch_1)
    assert rows.shape == (int(b.num_cells(1).sum()), 4)


def test_a_batch_without_its_batch_vector_is_refused_not_pooled(batch):
    samples, b = batch
    enc = SCNN(1, 4).double()
    x = b.x_1.double()
    with pytest.raises(ValueError, match="batch of 7 complexes .* no `batch` vector"):
        enc(x, b.laplacians(dtype=torch.float64))


def test_operators_of_another_batch_are_refused(batch):
    samples, b = batch
    other = Batch.from_data_list(samples[1:] + samples[:1])
    enc = SCNN(1, 4).double()
    L_other = other.laplacians(dtype=torch.float64)
    assert other.num_cells(1).tolist() != b.num_cells(1).tolist()
    with pytest.raises(ValueError, match="operators of one batch with the flows of another"):
        enc(b.x_1.double(), L_other, b.batch_1)
    L = b.laplacians(dtype=torch.float64)
    with pytest.raises(ValueError, match="does not number"):
        enc(b.x_1.double(), L, b.batch_1.flip(0))
    # a plain pair of tensors knows no blocks: a batch vector of several samples is refused
    with pytest.raises(ValueError, match="names several samples .* one complex"):
        enc(b.x_1.double(), tuple(L), b.batch_1)


def _moves(L):
    """Every way a user copies or rebuilds a batch's operators."""
    import io
    import pickle

    from topo_contrastive.complex import Laplacians

    buffer = io.BytesIO()
    torch.save(L, buffer)
    buffer.seek(0)
    return {
        "to float64": L.to(torch.float32).to(torch.float64),
        "to(device, dtype)": L.to("cpu", torch.float64),
        "clone": L.clone(),
        "detach": L.detach(),
        "pickle": pickle.loads(pickle.dumps(L)),
        "torch.save": torch.load(buffer, weights_only=False),
        "csr": Laplacians(*(t.to_sparse_csr() for t in L), ptr=L.ptr, complex=L.complex),
        "rebuilt": Laplacians(*(t.coalesce().clone() for t in L), ptr=L.ptr.clone()),
    }


@pytest.mark.parametrize("readout", ["mean", "basis_free"])
def test_every_copy_of_a_batchs_operators_gives_the_per_complex_embeddings(batch, readout):
    # the blocks travel in the Laplacians value: a copy gives one embedding per complex
    samples, b = batch
    torch.manual_seed(2)
    ro = HodgeReadout(None, energies=True) if readout == "basis_free" else readout
    enc = SCNN(1, 6, num_layers=2, readout=ro).double()
    x = b.x_1.double()
    ref = torch.cat([enc(s.x_1.double(), s.laplacians(dtype=torch.float64)) for s in samples])
    L = b.laplacians(dtype=torch.float64)
    for how, moved in _moves(L).items():
        assert moved.num_blocks == len(samples), how
        out = enc(x, moved, b.batch_1)
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-12, msg=how)
        with pytest.raises(ValueError, match="no `batch` vector"):
            enc(x, moved)  # never one pooled embedding of several complexes


def test_a_readout_tied_to_one_complex_refuses_a_batch(batch):
    from topo_contrastive import HodgeDecomposition

    samples, b = batch
    enc = SCNN(1, 4, readout=HodgeReadout(HodgeDecomposition(samples[0].complex()))).double()
    with pytest.raises(ValueError, match="tied to one complex"):
        enc(b.x_1.double(), b.laplacians(dtype=torch.float64), b.batch_1)


def test_basis_free_readout_equals_the_energies_of_the_complex_readout(batch):
    from topo_contrastive import HodgeDecomposition

    samples, _ = batch
    s = samples[1]
    H = torch.randn(3, int(s.num_cells(1)), 5, dtype=torch.float64)
    tied = HodgeReadout(HodgeDecomposition(s.complex()), energies=True).double()
    free = HodgeReadout(None, energies=True)
    L = s.laplacians(dtype=torch.float64)
    a, c = tied(H), free(H, laplacians=L)
    beta = tied.beta1
    # [mean | harmonic coordinates | energies] vs [mean | energies]
    torch.testing.assert_close(c[:, :5], a[:, :5], rtol=0, atol=1e-12)
    torch.testing.assert_close(c[:, 5:], a[:, 5 + 5 * beta:], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="energies=True"):
        HodgeReadout(None)
    with pytest.raises(ValueError, match="with `laplacians`"):
        free(H)


def test_under_torch_compile_the_batch_checks_skip_the_values(batch, monkeypatch):
    """While ``torch.compile`` traces, only the batch vector's type and shape are checked
    (reading its values would break the graph); the sample count comes from the blocks."""
    from topo_contrastive.nn._inputs import complexes_batch

    samples, b = batch
    L, x = b.laplacians(), b.x_1
    shuffled = b.batch_1.flip(0)  # not PyG's layout: refused in eager mode
    with pytest.raises(ValueError, match="does not number"):
        complexes_batch(x, L, shuffled)
    assert complexes_batch(x, L, shuffled, check_values=False) == len(samples)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert complexes_batch(x, L, shuffled) == len(samples)  # from the blocks
    with pytest.raises(ValueError, match="must be a vector of shape"):  # shapes still checked
        complexes_batch(x, L, b.batch_1[:-1])


def test_dynamo_traces_a_batch_of_complexes_without_a_graph_break():
    """``torch._dynamo.explain`` (tracing only): once the operators are prepared (one eager
    call), no graph break, the kernel an opaque custom op; before, the preparation breaks it."""
    samples = many_complexes(2, seed=3, cells=True)
    b = Batch.from_data_list(samples)
    enc = SCNN(1, 4, num_layers=1)
    x, L = torch.randn(int(b.batch_1.numel()), 1), b.laplacians()
    explained = torch._dynamo.explain(enc)(x, L, b.batch_1)
    torch._dynamo.reset()
    assert explained.graph_break_count > 0
    enc(x, L, b.batch_1)  # eager: prepares L
    explained = torch._dynamo.explain(enc)(x, L, b.batch_1)
    torch._dynamo.reset()
    assert explained.graph_break_count == 0, [r.reason[:200] for r in explained.break_reasons]


def test_a_batch_of_complexes_trains_through_the_pair_with_the_same_gradients(batch, monkeypatch):
    # the batch-of-complexes path runs the same layer stack as one complex: with
    # recompute_first_layer its first two layers as one kernel node, with the gradients of
    # two layer nodes bit for bit
    _, b = batch
    torch.manual_seed(0)
    enc = SCNN(1, 8, num_layers=3).double()
    L = b.laplacians(dtype=torch.float64)
    assert_pair_gives_the_same_gradients(
        enc, lambda: enc(b.x_1.double(), L, b.batch_1), monkeypatch
    )
