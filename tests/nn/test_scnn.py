import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from tests.nn._helpers import delaunay_complex, dense_reference, tiny_complex
from topo_contrastive.nn import SCNN, ProjectionHead, SCNNConv


def _naive_encoder(enc: SCNN, x, L_down, L_up, act, readout):
    """Loop over samples and layers with the dense formula."""
    out = []
    for b in range(x.shape[0]):
        h = x[b]
        for conv in enc.convs:
            h = act(dense_reference(h, L_down, L_up, conv.weight, conv.bias, enc.K_down, enc.K_up))
        out.append(readout(h))
    return torch.stack(out)


@pytest.mark.parametrize(
    "act,act_fn",
    [("tanh", torch.tanh), ("relu", torch.relu), ("identity", lambda t: t)],
)
@pytest.mark.parametrize(
    "readout,readout_fn",
    [
        ("mean", lambda h: h.mean(0)),
        ("sum", lambda h: h.sum(0)),
        ("max", lambda h: h.max(0).values),
    ],
)
def test_equals_naive_stack_of_layers(act, act_fn, readout, readout_fn):
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    torch.manual_seed(0)
    enc = SCNN(2, 5, num_layers=3, K_down=2, K_up=1, act=act, readout=readout).double()
    x = torch.randn(4, ops.num_edges, 2, dtype=torch.float64)
    h = enc(x, (L_down, L_up))
    assert h.shape == (4, 5)
    expected = _naive_encoder(enc, x, L_down, L_up, act_fn, readout_fn)
    torch.testing.assert_close(h, expected)


def test_input_layouts_agree():
    ops = tiny_complex()
    n1 = ops.num_edges
    L_down, L_up = ops.laplacians()
    enc = SCNN(1, 8, num_layers=2)
    x = torch.randn(3, n1, 1)
    h = enc(x, (L_down, L_up))
    # one sample: [N1, 1] and [N1] give [1, hidden]
    torch.testing.assert_close(enc(x[1], (L_down, L_up)), h[1:2])
    torch.testing.assert_close(enc(x[1, :, 0], (L_down, L_up)), h[1:2])
    # PyG layout [B*N1] / [B*N1, 1] with batch
    batch = torch.arange(3).repeat_interleave(n1)
    torch.testing.assert_close(enc(x.reshape(-1), (L_down, L_up), batch=batch), h)
    torch.testing.assert_close(enc(x.reshape(-1, 1), (L_down, L_up), batch=batch), h)
    # per-edge features before the readout
    e = enc.edge_embeddings(x.reshape(-1), (L_down, L_up), batch=batch)
    assert e.shape == (3, n1, 8)
    torch.testing.assert_close(e.mean(dim=1), h)


@pytest.mark.parametrize("readout", ["mean", "sum", "max", "hodge"])
def test_input_skip_pools_the_input_before_the_last_layer(readout):
    """input_skip: the readout of [x || X_T] (input channels first), equal to a naive loop;
    with a HodgeReadout the embedding holds U_H^T x exactly, also under a harmonic limit."""
    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.nn import HodgeReadout

    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    torch.manual_seed(0)
    hodge = HodgeDecomposition(ops)
    mod = HodgeReadout(hodge, harmonic_channels=1) if readout == "hodge" else readout
    enc = SCNN(2, 5, num_layers=2, readout=mod, input_skip=True).double()
    x = torch.randn(4, ops.num_edges, 2, dtype=torch.float64)
    h = enc(x, (L_down, L_up))
    assert h.shape == (4, enc.out_channels)
    feats = torch.cat([x, enc.edge_embeddings(x, (L_down, L_up))], dim=-1)  # [B, N1, 2 + 5]
    if readout == "hodge":
        assert enc.out_channels == 7 + hodge.dims["harmonic"] * 1
        u = enc.readout.harmonic_basis.double()  # [N1, beta1]
        torch.testing.assert_close(h[:, :7], feats.mean(1))
        # the first kept channel is the input's first: its harmonic coordinates, exactly
        torch.testing.assert_close(h[:, 7:], (u.t() @ x[..., 0:1]).squeeze(-1))
    else:
        pool = {"mean": lambda t: t.mean(1), "sum": lambda t: t.sum(1),
                "max": lambda t: t.amax(1)}[readout]  # fmt: skip
        assert enc.out_channels == 7
        torch.testing.assert_close(h, pool(feats))
    assert "input_skip=True" in repr(enc)
    # without the flag the same weights give the last layer's readout only
    plain = SCNN(2, 5, num_layers=2, readout="mean").double()
    plain.load_state_dict(enc.state_dict(), strict=False)
    if readout == "mean":
        torch.testing.assert_close(plain(x, (L_down, L_up)), h[:, 2:])


def test_pyg_dataloader_batches_match_batched_tensor():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    enc = SCNN(1, 4)
    flows = torch.randn(6, ops.num_edges)
    data = [Data(x_1=flows[i], y=torch.tensor(i % 2)) for i in range(6)]
    loader = DataLoader(data, batch_size=4, follow_batch=["x_1"])
    hs = [enc(b.x_1, (L_down, L_up), batch=b.x_1_batch) for b in loader]
    assert [h.shape[0] for h in hs] == [4, 2]
    torch.testing.assert_close(torch.cat(hs), enc(flows.unsqueeze(-1), (L_down, L_up)))


def test_k_up_zero_is_lower_laplacian_only():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    enc = SCNN(1, 6, num_layers=2, K_down=2, K_up=0)
    assert all(conv.K_up == 0 and conv.weight.shape[0] == 3 for conv in enc.convs)
    x = torch.randn(3, ops.num_edges, 1)
    torch.testing.assert_close(enc(x, (L_down, None)), enc(x, (L_down, L_up)), rtol=0, atol=0)


def test_float64_and_normalize_pass_through():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    enc = SCNN(1, 4, num_layers=2, normalize=True).double()
    assert all(conv.normalize for conv in enc.convs)
    h = enc(torch.randn(2, ops.num_edges, 1, dtype=torch.float64), (L_down, L_up))
    assert h.dtype == torch.float64


def test_gradients_flow_to_all_layers_and_head():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    enc, head = SCNN(1, 8, num_layers=3), ProjectionHead(8, 8, 4)
    z = head(enc(torch.randn(5, ops.num_edges, 1), (L_down, L_up)))
    assert z.shape == (5, 4)
    z.pow(2).sum().backward()
    for name, p in list(enc.named_parameters()) + list(head.named_parameters()):
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_reset_parameters_and_repr():
    enc = SCNN(1, 16, num_layers=3, K_down=1, K_up=0, readout="max")
    assert len(enc.convs) == 3 and all(isinstance(c, SCNNConv) for c in enc.convs)
    assert enc.convs[0].in_channels == 1 and enc.convs[2].in_channels == 16
    before = [p.detach().clone() for p in enc.parameters()]
    enc.reset_parameters()
    assert any(not torch.equal(a, b) for a, b in zip(before, enc.parameters(), strict=True))
    assert repr(enc) == (
        "SCNN(1, 16, num_layers=3, K_down=1, K_up=0, act='tanh', readout='max', normalize=False, "
        "bias=True)"
    )


def test_training_in_pyg_pipeline_decreases_loss():
    # Gradient flows (B1^T phi) vs curl flows (B2 psi) on a small Delaunay complex.
    ops = delaunay_complex(30, seed=1)
    g = torch.Generator().manual_seed(0)
    B1 = torch.from_numpy(ops.B1.toarray()).float()
    B2 = torch.from_numpy(ops.B2.toarray()).float()
    data = []
    for i in range(64):
        if i % 2 == 0:
            flow = B1.T @ torch.randn(ops.num_nodes, generator=g)
        else:
            flow = B2 @ torch.randn(ops.num_triangles, generator=g)
        data.append(Data(x_1=flow, y=torch.tensor(i % 2)))
    loader = DataLoader(data, batch_size=16, shuffle=True, follow_batch=["x_1"])
    L_down, L_up = ops.laplacians()
    torch.manual_seed(0)
    enc = SCNN(1, 16, num_layers=2, K_down=1, K_up=1, normalize=True)
    clf = torch.nn.Linear(16, 2)
    opt = torch.optim.Adam(list(enc.parameters()) + list(clf.parameters()), lr=1e-2)

    def epoch_loss(train: bool) -> float:
        total = 0.0
        for b in loader:
            logits = clf(enc(b.x_1, (L_down, L_up), batch=b.x_1_batch))
            loss = torch.nn.functional.cross_entropy(logits, b.y)
            if train:
                opt.zero_grad()
                loss.backward()
                opt.step()
            total += loss.item() * b.num_graphs
        return total / len(data)

    with torch.no_grad():
        initial = epoch_loss(train=False)
    for _ in range(15):
        epoch_loss(train=True)
    with torch.no_grad():
        final = epoch_loss(train=False)
    assert final < 0.3 * initial, (initial, final)


# ---------------------------------------------------------------------- ProjectionHead
def test_projection_head_formula_and_repr():
    head = ProjectionHead(6, 5, 3)
    h = torch.randn(7, 6)
    expected = head.lin2(torch.relu(head.lin1(h)))
    torch.testing.assert_close(head(h), expected)
    assert head(h).shape == (7, 3)
    assert repr(head) == "ProjectionHead(6, 5, 3)"
    w = head.lin1.weight.detach().clone()
    head.reset_parameters()
    assert not torch.equal(w, head.lin1.weight)
    assert head.double()(h.double()).dtype == torch.float64


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(num_layers=0), ValueError, "num_layers"),
        (dict(num_layers=1.0), TypeError, "num_layers"),
        (dict(act="softmax"), ValueError, "act"),
        (dict(act=torch.tanh), TypeError, "act"),
        (dict(readout="median"), ValueError, "readout"),
        (dict(hidden_channels=0), ValueError, "out_channels"),
        (dict(K_up=-1), ValueError, "K_up"),
        (dict(normalize=1), TypeError, "normalize"),
        (dict(input_skip=1), TypeError, "input_skip"),
    ],
)
def test_bad_hyper_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        SCNN(**kwargs)


def test_bad_inputs_raise_clear_errors():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    with pytest.raises(ValueError, match="only allowed for in_channels=1"):
        SCNN(2, 4)(torch.randn(ops.num_edges), (L_down, L_up))
    with pytest.raises(ValueError, match="in_channels=1"):
        SCNN(1, 4)(torch.randn(ops.num_edges, 3), (L_down, L_up))
    with pytest.raises(ValueError, match=r"10 rows .* \[9, 9\]"):
        SCNN(1, 4)(torch.randn(10), (L_down, L_up))
    with pytest.raises(TypeError, match="sparse operator"):
        SCNN(1, 4)(torch.randn(ops.num_edges), (L_down.to_dense(), L_up))
    for bad in [(6,), (2, 4, 6, 1)]:
        with pytest.raises(ValueError, match="`h` must have 6 features"):
            ProjectionHead(6, 4, 2)(torch.randn(*bad[:-1], 5) if len(bad) > 1 else torch.randn(5))
    with pytest.raises(TypeError, match="floating"):
        ProjectionHead(6, 4, 2)(torch.ones(3, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="hidden_channels"):
        ProjectionHead(6, 0, 2)
    with pytest.raises(TypeError, match="out_channels"):
        ProjectionHead(6, 4, "2")


@pytest.mark.parametrize("rank", [0, 2])
def test_layer_and_encoder_on_signals_of_rank_k(rank):
    """SCNNConv with (L_k,down, L_k,up) is the same filter on node / triangle signals:
    equal to the dense formula, and a PyG batch of x_k gives the same embeddings."""
    from tests._rank_complexes import solid_and_hollow

    ops = solid_and_hollow()
    L_down, L_up = ops.laplacians(rank=rank, dtype=torch.float64)
    n = ops.num_simplices(rank)
    conv = SCNNConv(2, 3, K_down=2, K_up=2).double()
    x = torch.randn(n, 2, dtype=torch.float64)
    ref = dense_reference(x, L_down, L_up, conv.weight, conv.bias, 2, 2)
    torch.testing.assert_close(conv(x, (L_down, L_up)), ref)
    enc = SCNN(1, 4, num_layers=2).double()
    signals = torch.randn(3, n, 1, dtype=torch.float64)
    loader = DataLoader(
        [Data(**{f"x_{rank}": s}) for s in signals], batch_size=3, follow_batch=[f"x_{rank}"]
    )
    batch = next(iter(loader))
    torch.testing.assert_close(
        enc(batch[f"x_{rank}"], (L_down, L_up), batch[f"x_{rank}_batch"]),
        enc(signals, (L_down, L_up)),
    )
