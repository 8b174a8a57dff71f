"""Interoperation with TopoModelX (needs the ``topomodelx`` extra; skipped without it).

TopoModelX 0.0.1 imports and runs under torch 2.13 without a shim. Its ``SCNNLayer``
has weight ``[C_in, C_out, 1 + K_down + K_up]`` (identity, lower powers, upper
powers), no bias, works in float32 on CPU only (it builds ``torch.eye`` without a
device or dtype), and takes one sample ``[N1, C_in]`` at a time.
"""

import math

import pytest
import torch

from tests.nn._helpers import delaunay_complex, tiny_complex
from topo_contrastive.nn import SCNN, SCNNConv

topomodelx = pytest.importorskip("topomodelx")
from topomodelx.nn.simplicial.scnn import SCNN as TMXSCNN  # noqa: E402
from topomodelx.nn.simplicial.scnn_layer import SCNNLayer  # noqa: E402

pytestmark = pytest.mark.topomodelx


def _copy_weights(ours: SCNNConv, theirs: SCNNLayer) -> None:
    with torch.no_grad():
        ours.weight.copy_(theirs.weight.permute(2, 0, 1))  # [C_in, C_out, K] -> [K, C_in, C_out]


@pytest.fixture
def float64_default():
    """TopoModelX builds its identity and buffers in the default dtype: make it float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _assert_close_normwise(actual, expected, rtol):
    """max |actual - expected| <= rtol * max |expected| (float32 sums in another order)."""
    err = (actual - expected).abs().max().item()
    assert err <= rtol * expected.abs().max().item(), (err, expected.abs().max().item())


@pytest.mark.parametrize("c_in,c_out", [(1, 8), (6, 6), (8, 3)])
@pytest.mark.parametrize("K_down,K_up", [(2, 2), (1, 3), (3, 1), (2, 0), (0, 2)])
@pytest.mark.parametrize("make_complex", [tiny_complex, lambda: delaunay_complex(60, seed=2)])
def test_scnn_conv_equals_topomodelx_layer(c_in, c_out, K_down, K_up, make_complex):
    # float32, as TopoModelX is normally used: same output to 1e-5 relative to its scale
    # (L^3 x reaches ~1e3 on a Delaunay complex, so float32 rounding differs in absolute terms).
    ops = make_complex()
    L_down, L_up = ops.laplacians()  # float32 COO, what TopoModelX expects
    torch.manual_seed(0)
    theirs = SCNNLayer(c_in, c_out, conv_order_down=K_down, conv_order_up=K_up)
    ours = SCNNConv(c_in, c_out, K_down, K_up, bias=False)
    _copy_weights(ours, theirs)
    x = torch.randn(4, ops.num_edges, c_in)
    expected = torch.stack([theirs(x[b], L_down, L_up) for b in range(4)])
    _assert_close_normwise(ours(x, (L_down, L_up)), expected, 1e-5)
    _assert_close_normwise(ours(x[0], (L_down, L_up)), expected[0], 1e-5)
    # gradients w.r.t. the (shared) weights agree too
    (g_theirs,) = torch.autograd.grad(expected.pow(2).sum(), theirs.weight)
    (g_ours,) = torch.autograd.grad(ours(x, (L_down, L_up)).pow(2).sum(), ours.weight)
    _assert_close_normwise(g_ours, g_theirs.permute(2, 0, 1), 1e-5)


@pytest.mark.parametrize("c_in,c_out", [(1, 8), (6, 6), (8, 3)])
@pytest.mark.parametrize("K_down,K_up", [(2, 2), (1, 3), (3, 1), (2, 0), (0, 2)])
def test_scnn_conv_equals_topomodelx_layer_float64(float64_default, c_in, c_out, K_down, K_up):
    # In float64 the two agree to 1e-5 absolute (in fact to ~1e-12).
    ops = delaunay_complex(60, seed=2)
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    torch.manual_seed(0)
    theirs = SCNNLayer(c_in, c_out, conv_order_down=K_down, conv_order_up=K_up)
    assert theirs.weight.dtype == torch.float64
    ours = SCNNConv(c_in, c_out, K_down, K_up, bias=False)
    _copy_weights(ours, theirs)
    x = torch.randn(4, ops.num_edges, c_in)
    expected = torch.stack([theirs(x[b], L_down, L_up) for b in range(4)])
    torch.testing.assert_close(ours(x, (L_down, L_up)), expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(ours(x, (L_down, L_up)), expected, rtol=1e-12, atol=1e-9)
    (g_theirs,) = torch.autograd.grad(expected.pow(2).sum(), theirs.weight)
    (g_ours,) = torch.autograd.grad(ours(x, (L_down, L_up)).pow(2).sum(), ours.weight)
    torch.testing.assert_close(g_ours, g_theirs.permute(2, 0, 1), rtol=1e-10, atol=1e-8)


def test_scnn_encoder_equals_topomodelx_scnn_stack(float64_default):
    # TopoModelX's SCNN applies no non-linearity by default: compare per-edge outputs
    # with our encoder's act="identity", without bias.
    ops = delaunay_complex(40, seed=3)
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    torch.manual_seed(0)
    theirs = TMXSCNN(1, 16, conv_order_down=2, conv_order_up=2, n_layers=3)
    ours = SCNN(1, 16, num_layers=3, K_down=2, K_up=2, act="identity", bias=False)
    for conv, layer in zip(ours.convs, theirs.layers, strict=True):
        _copy_weights(conv, layer)
    x = torch.randn(3, ops.num_edges, 1)
    expected = torch.stack([theirs(x[b], L_down, L_up) for b in range(3)])
    torch.testing.assert_close(ours.edge_embeddings(x, (L_down, L_up)), expected)
    torch.testing.assert_close(ours(x, (L_down, L_up)), expected.mean(1))


def test_topomodelx_encoder_example_runs(tmp_path):
    """The example that plugs a TopoModelX model into the contrastive pipeline."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "topomodelx_encoder.py"
    spec = importlib.util.spec_from_file_location("topomodelx_encoder_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.main(
        encoder="topomodelx",
        num_points=30,
        num_flows=24,
        epochs=2,
        batch_size=12,
        hidden=8,
        seed=0,
        out_dir=tmp_path,
        progress=False,
    )
    assert len(result["loss"]) == 2 and all(torch.isfinite(torch.tensor(result["loss"])))
    assert (tmp_path / "results.json").exists() and (tmp_path / "results.md").exists()
    assert (tmp_path / "loss.png").exists()
    # the example shows the library's augmentation and loss around the TopoModelX model
    from topo_contrastive.losses import InfoNCE
    from topo_contrastive.transforms import EdgeFlowMask

    assert example.EdgeFlowMask is EdgeFlowMask and example.InfoNCE is InfoNCE
    assert not hasattr(example, "nt_xent") and not hasattr(example, "drop_edges")
    # 24 flows in 2 batches of 12: the first epoch's InfoNCE is about log(2 * 12 - 1)
    assert abs(result["loss"][0] - math.log(23)) < 0.5
    parser = example.build_parser()
    for action in parser._actions:
        assert action.help, action.dest
    args = parser.parse_args(["--seed", "3", "--drop-prob", "0.2"])
    assert args.seed == 3 and args.drop_prob == 0.2


def test_hodge_readout_on_topomodelx_scnn_layer_features():
    """HodgeReadout pools the per-edge output of TopoModelX's SCNNLayer: the result equals the
    formula [mean_e H ; U_H^T H], and gradients reach the TopoModelX weights."""
    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.nn import HodgeReadout

    ops = tiny_complex()  # beta_1 = 2
    L_down, L_up = ops.laplacians()
    torch.manual_seed(0)
    layer = SCNNLayer(1, 5, conv_order_down=2, conv_order_up=2)
    readout = HodgeReadout(HodgeDecomposition(ops))
    x = torch.randn(3, ops.num_edges, 1)
    H = torch.stack([torch.tanh(layer(x[b], L_down, L_up)) for b in range(3)])  # [3, N1, 5]
    h = readout(H)
    u = readout.harmonic_basis
    expected = torch.cat([H.mean(1), (u.t() @ H).reshape(3, -1)], dim=1)
    torch.testing.assert_close(h, expected)
    assert h.shape == (3, (1 + 2) * 5)
    h.pow(2).sum().backward()
    assert layer.weight.grad is not None and layer.weight.grad.abs().sum() > 0


def test_scone_encoder_is_topomodelx_scone_per_sample_and_the_formula():
    """SCoNeEncoder: TopoModelX's SCoNe on every sample of the batch; one layer by hand:
    tanh(B2 B2^T X W2 + X W1 + B1^T B1 X W0)."""
    from experiments.studies.next_node.scone import SCoNeEncoder

    ops = tiny_complex()
    torch.manual_seed(0)
    enc = SCoNeEncoder(ops, hidden_channels=4, num_layers=2)
    x = torch.randn(3, ops.num_edges, 1)
    got = enc.edge_embeddings(x)
    assert got.shape == (3, ops.num_edges, 4)
    for b in range(3):
        torch.testing.assert_close(got[b], enc.model(x[b], enc.incidence_1, enc.incidence_2))
    B1 = torch.tensor(ops.B1.toarray(), dtype=torch.float32)
    B2 = torch.tensor(ops.B2.toarray(), dtype=torch.float32)
    h = x[0]
    for layer in enc.model.layers:
        h = torch.tanh(B2 @ B2.T @ h @ layer.weight_2 + h @ layer.weight_1
                       + B1.T @ B1 @ h @ layer.weight_0)
    torch.testing.assert_close(got[0], h, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="hidden_channels"):
        SCoNeEncoder(ops, hidden_channels=0)


@pytest.fixture(scope="module")
def scone_task(tmp_path_factory):
    """The tiny trajectory task of tests/experiments (40 paths) and a small SCNN on it."""
    from tests._tiny import tiny_dataset
    from topo_contrastive.training import ExperimentData, get_config

    data = ExperimentData.from_dataset(tiny_dataset(tmp_path_factory.mktemp("scone")),
                                       "trajectory")  # fmt: skip
    enc = data.encoder(get_config("SCL", "trajectory", hidden_channels=8, num_layers=2))
    return data, enc


def test_scone_row_under_every_generalisation_test(scone_task):
    """next_node_transfer(scone=True): the SCoNe row under the test, reversed and other-region
    tests; its forward test equals next_node_rows' SCoNe row on the same seed (one training
    run scored on both test sets)."""
    from experiments.studies.next_node import rows as nn_
    from experiments.studies.next_node import transfer as tr_

    data, enc = scone_task
    out = tr_.next_node_transfer(enc, data, [0], epochs=2, scone=True)
    for test in tr_.TESTS:
        assert [r["row"] for r in out["tests"][test]["rows"]] == [*nn_.ROWS, "scone"]
    got = {r["row"]: r for r in out["tests"]["test"]["rows"]}["scone"]
    want = {r["row"]: r for r in nn_.next_node_rows(enc, data, [0], epochs=2, scone=True)
            ["rows"]}["scone"]  # fmt: skip
    assert got["mean_accuracy"] == pytest.approx(want["mean_accuracy"])


def test_scone_row_trains_beside_the_other_rows(scone_task):
    """next_node_rows(scone=True): TopoModelX's SCoNe from scratch as a last row, through the
    same training loop; its predictions do not change when edges are re-oriented."""
    from experiments.studies.next_node import NextNodeHead, next_node_samples
    from experiments.studies.next_node import rows as nn_
    from experiments.studies.next_node.scone import SCoNeEncoder

    data, enc = scone_task
    out = nn_.next_node_rows(enc, data, [0], epochs=2, scone=True)
    rows = {r["row"]: r for r in out["rows"]}
    assert list(rows)[-1] == "scone" and 0 <= rows["scone"]["mean_accuracy"] <= 100
    assert rows["scone"]["splits"][0]["epoch"] <= 2
    # orientation: flip edges in B1, B2 and the flows -> the same scores
    samples = next_node_samples(data.complex, data.dataset.paths(), seed=0)
    torch.manual_seed(1)
    scone = SCoNeEncoder(data.complex, 4, 2)
    head = NextNodeHead(4, data.complex)
    x = samples.flows[:5].unsqueeze(-1)
    s = torch.ones(data.complex.num_edges)
    s[::3] = -1.0
    flipped = SCoNeEncoder(data.complex, 4, 2)
    flipped.load_state_dict(scone.state_dict())
    flipped.incidence_1 = (scone.incidence_1.to_dense() * s).to_sparse()
    flipped.incidence_2 = (s[:, None] * scone.incidence_2.to_dense()).to_sparse()
    head_f = NextNodeHead(4, data.complex)
    head_f.load_state_dict(head.state_dict())
    head_f.b1_value = head.b1_value * s[head.b1_index[1]]
    cand = samples.candidates[:5]
    a = head(scone.edge_embeddings(x), cand)
    b = head_f(flipped.edge_embeddings(x * s[:, None]), cand)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ the public adapter
_KINDS = {
    "scnn": dict(in_channels=1, hidden_channels=8, conv_order_down=2, conv_order_up=1),
    "sccnn": dict(in_channels_all=(1, 1, 1), hidden_channels_all=(8, 8, 8), conv_order=1,
                  sc_order=2),  # fmt: skip
    "san": dict(in_channels=1, hidden_channels=8, n_layers=2),
    "scn2": dict(in_channels_0=4, in_channels_1=4, in_channels_2=4),
}


@pytest.mark.parametrize("kind", list(_KINDS))
def test_adapter_runs_a_batch_of_complexes_in_one_call_equal_to_per_sample_calls(kind):
    """One call of the TopoModelX model on the batch's block-diagonal operators gives the
    per-sample embeddings (and the same per-edge output as the model on each sample)."""
    from torch_geometric.data import Batch

    from tests._many_complexes import many_complexes
    from topo_contrastive.nn import TopoModelXEncoder

    samples = many_complexes(5, seed=1, cells=True)
    batch = Batch.from_data_list(samples)
    torch.manual_seed(0)
    encoder = TopoModelXEncoder(kind, **_KINDS[kind])
    calls = []
    encoder.model.register_forward_hook(lambda *a: calls.append(1))
    out = encoder(batch.x_1, batch.laplacians(), batch.batch_1)
    assert len(calls) == (0 if kind == "san" else 1)  # SAN: its layers, once each
    ref = torch.cat([encoder(s.x_1, s.laplacians()) for s in samples])
    assert out.shape == (5, encoder.out_channels)
    _assert_close_normwise(out, ref, 1e-5)
    # flows on one shared complex: the operators repeated on the diagonal
    s = samples[0]
    x = torch.cat([s.x_1, -s.x_1])
    shared = encoder(x, s.laplacians(), torch.arange(2).repeat_interleave(s.x_1.shape[0]))
    _assert_close_normwise(shared, torch.cat([encoder(s.x_1, s.laplacians()),
                                              encoder(-s.x_1, s.laplacians())]), 1e-5)  # fmt: skip


def test_adapter_san_equals_topomodelx_san_forward():
    """The adapter's sparse harmonic projection gives TopoModelX's own (dense) SAN output."""
    from tests._many_complexes import many_complexes
    from topo_contrastive.nn import TopoModelXEncoder

    s = many_complexes(1, seed=3)[0]
    torch.manual_seed(0)
    encoder = TopoModelXEncoder("san", **_KINDS["san"])
    L_down, L_up = s.laplacians()
    theirs = encoder.model(s.x_1, L_up, L_down).mean(0, keepdim=True)
    _assert_close_normwise(encoder(s.x_1, s.laplacians()), theirs, 1e-5)


def test_adapter_refuses_operators_without_their_complex():
    from topo_contrastive.nn import TopoModelXEncoder

    ops = tiny_complex()
    L = [t.coalesce().clone() for t in ops.laplacians()]  # a bare pair: no complex behind it
    with pytest.raises(ValueError, match="from the complex of `laplacians`"):
        TopoModelXEncoder("sccnn", **_KINDS["sccnn"])(torch.ones(ops.num_edges, 1), L)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        TopoModelXEncoder("gat")


@pytest.mark.slow
def test_adapter_pretrains_with_the_library_and_saves(tmp_path):
    """``pretrain(..., encoder=TopoModelXEncoder(...))`` trains it with the library's views and
    loss; ``save_encoder`` / ``load_encoder`` round-trip it (same embeddings). A slow check
    (``pytest -m slow``): one epoch through TopoModelX's SCCNN takes minutes and ~13 GB."""
    from tests._tiny import tiny_dataset
    from topo_contrastive.io import load_encoder, save_encoder
    from topo_contrastive.nn import TopoModelXEncoder
    from topo_contrastive.training import ExperimentData, get_config, pretrain

    data = ExperimentData.from_dataset(tiny_dataset(tmp_path / "data"), "trajectory")
    torch.manual_seed(0)
    encoder = TopoModelXEncoder("sccnn", **_KINDS["sccnn"])
    before = [p.detach().clone() for p in encoder.parameters()]
    result = pretrain(data, get_config("SSCL_Spec", "trajectory"), epochs=1, encoder=encoder)
    assert result.encoder is encoder
    assert any(not torch.equal(a, b) for a, b in zip(before, encoder.parameters(), strict=True))
    save_encoder(encoder, tmp_path / "tmx.pt", epochs=1)
    loaded, meta = load_encoder(tmp_path / "tmx.pt")
    assert meta["architecture"]["model"] == "sccnn"
    x = data.flows[:3].unsqueeze(-1)
    L = data.complex.laplacians()
    torch.testing.assert_close(loaded(x, L), encoder.eval()(x, L))


@pytest.mark.parametrize("kind", ["scnn", "sccnn"])
def test_adapter_energies_readout_is_the_basis_free_hodge_readout_per_sample(kind, tmp_path):
    """``readout="energies"``: per sample and channel the energies
    ``h^T L_down h / N1``, ``h^T L_up h / N1`` of the model's per-edge output (computed here from
    the formula, sample by sample); for the SCNN they do not change when edges flip;
    ``edge_embeddings`` is that per-edge output; a checkpoint round-trips the readout."""
    from torch_geometric.data import Batch

    from tests._many_complexes import many_complexes
    from topo_contrastive.io import load_encoder, save_encoder
    from topo_contrastive.nn import TopoModelXEncoder

    samples = many_complexes(4, seed=2)
    batch = Batch.from_data_list(samples)
    torch.manual_seed(0)
    encoder = TopoModelXEncoder(kind, readout="energies", **_KINDS[kind])
    D = encoder.edge_channels
    assert encoder.out_channels == 2 * D
    out = encoder(batch.x_1, batch.laplacians(), batch.batch_1)  # [4, 2 D]
    H = encoder.edge_embeddings(batch.x_1, batch.laplacians(), batch.batch_1)
    assert H.shape == (batch.x_1.shape[0], D)
    for i, s in enumerate(samples):
        L_down, L_up = (t.to_dense() for t in s.laplacians())
        h = encoder.edge_embeddings(s.x_1, s.laplacians())[0]  # [N1, D]
        torch.testing.assert_close(h, H[batch.batch_1 == i], rtol=1e-5, atol=1e-6)
        n1 = h.shape[0]
        expected = torch.cat([(h * (L_down @ h)).sum(0) / n1, (h * (L_up @ h)).sum(0) / n1])
        _assert_close_normwise(out[i : i + 1], expected[None], 1e-5)
    # TopoModelX's SCNN (linear, odd, its filters polynomials in L_down and L_up): the
    # energies do not change when a third of the edges flip their orientation
    s = samples[0]
    sign = torch.ones(s.x_1.shape[0])
    sign[::3] = -1.0
    ops = s.complex()
    from topo_contrastive import ComplexOperators

    flipped = ComplexOperators.from_incidence(ops.B1 @ _diag(sign), _diag(sign) @ ops.B2)
    a = encoder(s.x_1, ops.laplacians())
    b = encoder(s.x_1 * sign[:, None], flipped.laplacians())
    if kind == "scnn":
        _assert_close_normwise(a, b, 1e-5)
    save_encoder(encoder, tmp_path / "e.pt")
    loaded, meta = load_encoder(tmp_path / "e.pt")
    assert meta["architecture"]["readout"] == "energies"
    _assert_close_normwise(loaded(batch.x_1, batch.laplacians(), batch.batch_1), out, 1e-6)


def _diag(sign: torch.Tensor):
    import scipy.sparse as sp

    return sp.diags(sign.numpy().astype(float))
