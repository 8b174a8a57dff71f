"""The chunked, fused SCNN kernel against a naive autograd reference."""

import pytest
import torch

import topo_contrastive.nn._scnn_kernel as kernel
from tests.nn._helpers import (
    assert_pair_gives_the_same_gradients,
    delaunay_complex,
    dense_reference,
    tiny_complex,
)
from topo_contrastive.complex import Laplacians
from topo_contrastive.nn import SCNN, SCNNConv

ACTS = {
    "identity": lambda y: y,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
}


def _layer(conv, x, laplacians, act):
    """``act(conv(x))`` through the kernel (the activation fused)."""
    return kernel.scnn_layers(x, [(conv.weight, conv.bias)], conv._operators(laplacians), act)


def _reference_layer(x, L_down, L_up, conv, act):
    """act(SCNNConv(x)) sample by sample with dense operators and plain autograd."""
    outs = [
        ACTS[act](dense_reference(xb, L_down, L_up, conv.weight, conv.bias, conv.K_down, conv.K_up))
        for xb in x
    ]
    return torch.stack(outs)


@pytest.mark.parametrize("chunk_rows", [1, 9 * 3, 9 * 4 + 5, 10**6])
@pytest.mark.parametrize("c_in,c_out", [(1, 4), (3, 3), (5, 2)])
@pytest.mark.parametrize("act", list(ACTS))
def test_chunked_forward_and_backward_equal_reference(monkeypatch, chunk_rows, c_in, c_out, act):
    # 7 samples of 9 edges: chunks of 1, 3 (ragged last chunk of 1), 4 (ragged 3) or all.
    monkeypatch.setattr(kernel, "CHUNK_ROWS", chunk_rows)
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    conv = SCNNConv(c_in, c_out, K_down=2, K_up=1).double()
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g, dtype=torch.float64))
        conv.bias.copy_(torch.randn(c_out, generator=g, dtype=torch.float64))
    x = torch.randn(7, ops.num_edges, c_in, generator=g, dtype=torch.float64, requires_grad=True)
    up = torch.randn(7, ops.num_edges, c_out, generator=g, dtype=torch.float64)

    out = _layer(conv, x, Laplacians(L_down, L_up), act)
    (out * up).sum().backward()
    got = (out.detach(), x.grad.clone(), conv.weight.grad.clone(), conv.bias.grad.clone())
    x.grad = None
    conv.zero_grad()
    ref = _reference_layer(x, L_down, L_up, conv, act)
    (ref * up).sum().backward()
    expected = (ref.detach(), x.grad, conv.weight.grad, conv.bias.grad)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_chunk_size_does_not_change_encoder_beyond_rounding(monkeypatch):
    ops = delaunay_complex(40, seed=2)
    L_down, L_up = ops.laplacians()
    torch.manual_seed(0)
    enc = SCNN(1, 16, num_layers=3, K_down=2, K_up=2)
    x = torch.randn(11, ops.num_edges, 1)
    results = []
    for rows in (ops.num_edges, 4 * ops.num_edges, 10**6):
        monkeypatch.setattr(kernel, "CHUNK_ROWS", rows)
        enc.zero_grad()
        h = enc(x, (L_down, L_up))
        h.pow(2).sum().backward()
        results.append((h.detach(), [p.grad.clone() for p in enc.parameters()]))
    for h, grads in results[1:]:
        torch.testing.assert_close(h, results[0][0], rtol=1e-5, atol=1e-6)
        for a, b in zip(grads, results[0][1], strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_block_diagonal_operator():
    ops = tiny_complex()
    L = ops.laplacians(dtype=torch.float64)[0].to_sparse_csr()
    parts = kernel._block_parts(L.crow_indices(), L.col_indices(), L.values(), ops.num_edges, 5)
    for copies in (5, 3):  # the leading blocks of a larger block: I_3 (x) L
        bd = kernel._leading_blocks(parts, ops.num_edges, copies)
        expected = torch.block_diag(*([L.to_dense()] * copies))
        torch.testing.assert_close(bd.to_dense(), expected, rtol=0, atol=0)
    assert bd.crow_indices().dtype == torch.int32  # MKL's index type, no conversion per call


def test_chunking_rule():
    cpu = torch.device("cpu")
    assert kernel.chunk_samples(200, 1082, cpu) == kernel.CHUNK_ROWS // 1082
    assert kernel.chunk_samples(3, 10, cpu) == 3  # never more than the batch
    assert kernel.chunk_samples(5, 10**6, cpu) == 1  # at least one sample
    assert kernel.chunk_samples(64, 1082, torch.device("meta")) == 64  # GPU: one chunk


def test_empty_batch_gives_empty_output_and_gradients():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    enc = SCNN(1, 8, num_layers=2)
    x = torch.zeros(0, ops.num_edges, 1)
    h = enc(x, (L_down, L_up))
    assert h.shape == (0, 8)
    h.sum().backward()
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in enc.parameters())
    conv = SCNNConv(2, 3, 1, 1)
    assert conv(torch.zeros(0, ops.num_edges, 2), (L_down, L_up)).shape == (0, ops.num_edges, 3)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_numpy_tanh_on_large_complexes_equals_reference(monkeypatch, dtype):
    """From ``NUMPY_TANH_MIN_EDGES`` edges on, the fused tanh runs as ``np.tanh`` in place:
    the layer and its gradients equal the naive reference (to rounding of the dtype)."""
    calls = []
    np_tanh = kernel.np.tanh

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return np_tanh(*args, **kwargs)

    monkeypatch.setattr(kernel.np, "tanh", spy)
    monkeypatch.setattr(kernel, "NUMPY_TANH_MIN_EDGES", 9)  # the tiny complex's 9 edges
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=dtype)
    g = torch.Generator().manual_seed(1)
    conv = SCNNConv(3, 4, K_down=2, K_up=1).to(dtype)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g, dtype=dtype))
    x = torch.randn(5, ops.num_edges, 3, generator=g, dtype=dtype, requires_grad=True)
    up = torch.randn(5, ops.num_edges, 4, generator=g, dtype=dtype)
    out = _layer(conv, x, Laplacians(L_down, L_up), "tanh")
    assert calls  # the numpy path ran
    (out * up).sum().backward()
    got = (out.detach(), x.grad.clone(), conv.weight.grad.clone())
    x.grad = None
    conv.zero_grad()
    ref = _reference_layer(x, L_down, L_up, conv, "tanh")
    (ref * up).sum().backward()
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    for a, b in zip(got, (ref.detach(), x.grad, conv.weight.grad), strict=True):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)
    calls.clear()
    monkeypatch.setattr(kernel, "NUMPY_TANH_MIN_EDGES", 10)  # below: torch.tanh
    _layer(conv, x, Laplacians(L_down, L_up), "tanh")
    assert not calls


def _two_layers(first, second, bias, seed=0):
    ops = delaunay_complex(30, seed=seed)
    L_down, L_up = ops.laplacians()
    g = torch.Generator().manual_seed(seed)
    convs = [SCNNConv(c_in, c_out, K_down=2, K_up=1, bias=bias) for c_in, c_out in (first, second)]
    with torch.no_grad():
        for conv in convs:
            for p in conv.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
    x = torch.randn(5, ops.num_edges, first[0], generator=g)
    up = torch.randn(5, ops.num_edges, second[1], generator=g)
    return convs, x, up, (L_down, L_up)


def _run_layers(convs, x, L_down, L_up, act, paired):
    """Both layers on ``x``: as one kernel node, or as two layer nodes."""
    L = Laplacians(L_down, L_up)
    if paired:
        params = [(c.weight, c.bias) for c in convs]
        return kernel.scnn_layers(x, params, convs[0]._operators(L), act)
    return _layer(convs[1], _layer(convs[0], x, L, act), L, act)


@pytest.mark.parametrize("chunk_rows", [1, 200, 10**6])
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
def test_pair_equals_two_layers_bit_for_bit(monkeypatch, chunk_rows, act, bias, x_grad):
    # the fused pair recomputes the first layer's output in its backward pass: values and
    # gradients must be exactly those of two separate layer nodes
    monkeypatch.setattr(kernel, "CHUNK_ROWS", chunk_rows)
    convs, x, up, (L_down, L_up) = _two_layers((1, 6), (6, 6), bias)
    results = []
    for paired in (False, True):
        xi = x.clone().requires_grad_(x_grad)
        for conv in convs:
            conv.zero_grad()
        out = _run_layers(convs, xi, L_down, L_up, act, paired)
        (out * up).sum().backward()
        grads = [p.grad.clone() for c in convs for p in c.parameters()]
        results.append((out.detach(), xi.grad, *grads))
    for a, b in zip(*results, strict=True):
        if a is None or b is None:
            assert a is None and b is None and not x_grad
        else:
            assert torch.equal(a, b)


def test_pair_keeps_only_the_input_and_the_second_output():
    # what autograd holds after the forward pass: the pair keeps x and y2, two layers keep
    # x, y1 and y2 (y1 is the widest tensor a first layer of 1 -> C channels makes)
    convs, x, _, (L_down, L_up) = _two_layers((1, 8), (8, 8), True)
    kept = {}
    for paired in (False, True):
        saved = []

        def pack(t, saved=saved):
            saved.append(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            _run_layers(convs, x, L_down, L_up, "tanh", paired)
        storages = {t.untyped_storage().data_ptr(): t.numel() for t in saved if t is not None}
        kept[paired] = sum(storages.values())
    rows = x.shape[0] * x.shape[1]
    # y1 [B, N1, 8] is not kept; the first layer's bias [8] is, to recompute y1
    assert kept[False] - kept[True] == rows * 8 - 8


def test_scnn_trains_through_the_pair_with_the_same_gradients(monkeypatch):
    # with recompute_first_layer, SCNN pairs its first two layers while autograd records
    # (width grows from 1): the encoder's gradients equal those of the unpaired layers
    ops = delaunay_complex(40, seed=3)
    L_down, L_up = ops.laplacians()
    torch.manual_seed(0)
    enc = SCNN(1, 16, num_layers=3, K_down=2, K_up=2)
    x = torch.randn(4, ops.num_edges, 1)
    assert_pair_gives_the_same_gradients(enc, lambda: enc(x, (L_down, L_up)), monkeypatch)
