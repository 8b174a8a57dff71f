"""``torch.compile`` of the SCNN: forward and backward in one graph (``fullgraph=True``),
the kernel an opaque custom op; the compiled step equals the eager one."""

import pytest
import torch

from tests.nn._helpers import delaunay_complex, tiny_complex
from topo_contrastive import HodgeDecomposition
from topo_contrastive.nn import SCNN, HodgeReadout, ProjectionHead


def _loss(enc, head, laplacians):
    def loss(x, batch=None):
        return head(enc(x, laplacians, batch)).square().mean()

    return loss


def _grads(modules):
    grads = [p.grad.clone() for m in modules for p in m.parameters()]
    for m in modules:
        m.zero_grad(set_to_none=True)
    return grads


@pytest.mark.parametrize("readout", ["mean", "hodge"])
@pytest.mark.parametrize("pair", [False, True])
def test_the_training_step_compiles_whole_and_equals_eager(readout, pair):
    ops = delaunay_complex(40, seed=1)
    L = ops.laplacians()
    torch.manual_seed(0)
    ro = HodgeReadout(HodgeDecomposition(ops), energies=True) if readout == "hodge" else readout
    enc = SCNN(1, 8, num_layers=3, readout=ro)
    enc.recompute_first_layer = pair
    head = ProjectionHead(enc.out_channels, 8, 4)
    loss = _loss(enc, head, L)
    x = torch.randn(6, ops.num_edges, 1)
    eager = loss(x)  # prepares L
    eager.backward()
    expected = _grads([enc, head])
    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    for rows in (x, x[:4]):  # another batch size: the same graph, dynamic
        got = compiled(rows)
        got.backward()
        grads = _grads([enc, head])
        if rows is x:
            torch.testing.assert_close(got, eager, rtol=1e-6, atol=1e-7)
            for a, b in zip(grads, expected, strict=True):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    batch = torch.arange(6).repeat_interleave(ops.num_edges)  # PyG's layout
    torch.testing.assert_close(compiled(x.reshape(-1, 1), batch), eager, rtol=1e-6, atol=1e-7)
    torch._dynamo.reset()


@pytest.mark.slow  # inductor generates and compiles C++ (about 10 s)
def test_inductor_compiles_the_encoder_whole():
    ops = tiny_complex()
    L = ops.laplacians()
    torch.manual_seed(1)
    enc = SCNN(1, 4, num_layers=2)
    x = torch.randn(3, ops.num_edges, 1)
    expected = enc(x, L)
    compiled = torch.compile(enc, fullgraph=True)
    torch.testing.assert_close(compiled(x, L), expected, rtol=1e-5, atol=1e-6)
    compiled(x, L).sum().backward()
    assert all(p.grad is not None for p in enc.parameters())
    torch._dynamo.reset()


def test_operators_not_prepared_are_named_under_fullgraph():
    ops = tiny_complex()
    enc = SCNN(1, 4, num_layers=1)
    compiled = torch.compile(enc, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match="prepared before tracing"):
        compiled(torch.randn(2, ops.num_edges, 1), ops.laplacians().clone())
    torch._dynamo.reset()


def test_the_value_checks_are_skipped_while_compiling_and_kept_in_eager():
    ops = tiny_complex()
    L = ops.laplacians()
    enc = SCNN(1, 4, num_layers=1)
    enc(torch.randn(2, ops.num_edges, 1), L)  # prepares L
    x = torch.full((2, ops.num_edges, 1), float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        enc(x, L)
    compiled = torch.compile(enc, fullgraph=True, backend="aot_eager")
    assert torch.isnan(compiled(x, L)).all()  # no host sync in the graph: not checked
    torch._dynamo.reset()
