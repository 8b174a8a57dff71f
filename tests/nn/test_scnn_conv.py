import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

import topo_contrastive.nn._scnn_kernel as scnn_kernel_module
from tests.nn._helpers import dense_reference, tiny_complex
from topo_contrastive import ComplexOperators
from topo_contrastive.nn import SCNNConv

# (in_channels, out_channels) pairs covering both internal schemes:
# propagate-then-transform (C_in < C_out) and Horner (C_in >= C_out).
CHANNELS = [(1, 4), (3, 5), (4, 2), (3, 3)]
ORDERS = [(0, 0), (1, 0), (0, 1), (2, 2), (3, 1), (1, 3)]


def _randomize(conv: SCNNConv, seed: int = 0) -> SCNNConv:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g, dtype=conv.weight.dtype))
        if conv.bias is not None:
            conv.bias.copy_(torch.randn(conv.bias.shape, generator=g, dtype=conv.bias.dtype))
    return conv


@pytest.mark.parametrize("c_in,c_out", CHANNELS)
@pytest.mark.parametrize("K_down,K_up", ORDERS)
@pytest.mark.parametrize("bias", [True, False])
def test_equals_naive_dense_formula(c_in, c_out, K_down, K_up, bias):
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = _randomize(SCNNConv(c_in, c_out, K_down, K_up, bias=bias).double())
    x = torch.randn(
        ops.num_edges, c_in, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    expected = dense_reference(x, L_down, L_up, conv.weight, conv.bias, K_down, K_up)
    out = conv(x, (L_down, L_up))
    assert out.shape == (ops.num_edges, c_out)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-10)


def test_exact_value_hand_computed():
    # One edge path 0 -> 1 -> 2 on the tiny complex; single channel, W0 = 0, W_d1 = 1:
    # output = L_down x = B1^T B1 x, whose entries are known from the divergence.
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = SCNNConv(1, 1, K_down=1, K_up=0, bias=False).double()
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[[0.0]], [[1.0]]]))
    x = ops.path_to_flow([0, 1, 2], dtype=torch.float64).unsqueeze(-1)
    div = ops.B1 @ x.squeeze(-1).numpy()  # -1 at node 0, +1 at node 2
    np.testing.assert_array_equal(div, [-1, 0, 1, 0, 0, 0])
    expected = ops.B1.T @ div  # (0,1):1, (0,2):2, (0,3):1, (1,2):1, (2,3):-1, (2,5):-1
    np.testing.assert_array_equal(expected, [1, 2, 1, 1, 0, -1, -1, 0, 0])
    np.testing.assert_array_equal(conv(x, (L_down, L_up)).detach().squeeze(-1).numpy(), expected)


@pytest.mark.parametrize("c_in,c_out", [(1, 6), (5, 3)])
def test_batched_equals_loop_over_samples(c_in, c_out):
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = _randomize(SCNNConv(c_in, c_out, 2, 3).double())
    x = torch.randn(7, ops.num_edges, c_in, dtype=torch.float64)
    out = conv(x, (L_down, L_up))
    assert out.shape == (7, ops.num_edges, c_out)
    loop = torch.stack([conv(x[b], (L_down, L_up)) for b in range(7)])
    torch.testing.assert_close(out, loop, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("c_in,c_out", [(1, 6), (5, 3)])
def test_pyg_batch_equals_batched_path(c_in, c_out):
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = _randomize(SCNNConv(c_in, c_out, 2, 2).double())
    x = torch.randn(5, ops.num_edges, c_in, dtype=torch.float64)
    data = [Data(x_1=x[b], y=torch.tensor([b % 2])) for b in range(5)]
    batch = next(iter(DataLoader(data, batch_size=5, follow_batch=["x_1"])))
    assert batch.x_1.shape == (5 * ops.num_edges, c_in)
    out = conv(batch.x_1, (L_down, L_up), batch=batch.x_1_batch)
    assert out.shape == (5 * ops.num_edges, c_out)
    torch.testing.assert_close(out.view(5, ops.num_edges, c_out), conv(x, (L_down, L_up)))


def test_k_up_zero_ignores_l_up():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    conv = _randomize(SCNNConv(2, 3, K_down=2, K_up=0))
    x = torch.randn(4, ops.num_edges, 2)
    ref = conv(x, (L_down, L_up))
    torch.testing.assert_close(conv(x, (L_down, None)), ref, rtol=0, atol=0)
    # Any other L_up, even of the wrong size or dense, is not looked at.
    torch.testing.assert_close(conv(x, (L_down, torch.eye(3))), ref, rtol=0, atol=0)
    torch.testing.assert_close(conv(x, (L_down, 2 * L_up)), ref, rtol=0, atol=0)
    # ...while the K_up > 0 layer with the same weights on the shared terms differs.
    conv_up = SCNNConv(2, 3, K_down=2, K_up=1)
    with torch.no_grad():
        conv_up.weight[:3].copy_(conv.weight)
        conv_up.weight[3].normal_()
        conv_up.bias.copy_(conv.bias)
    assert not torch.allclose(conv_up(x, (L_down, L_up)), ref)


def test_k_down_zero_ignores_l_down():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    conv = _randomize(SCNNConv(2, 3, K_down=0, K_up=2))
    x = torch.randn(ops.num_edges, 2)
    torch.testing.assert_close(conv(x, (None, L_up)), conv(x, (L_down, L_up)), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_and_device_preserved(dtype):
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=dtype)
    conv = SCNNConv(2, 4, 2, 2).to(dtype)
    for x in (
        torch.randn(ops.num_edges, 2, dtype=dtype),
        torch.randn(3, ops.num_edges, 2, dtype=dtype),
    ):
        out = conv(x, (L_down, L_up))
        assert out.dtype == dtype and out.device == x.device
        assert out.is_contiguous()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    ops = tiny_complex()
    conv = _randomize(SCNNConv(3, 4, 2, 2, normalize=True).double())
    x = torch.randn(5, ops.num_edges, 3, dtype=torch.float64)
    ref = conv(x, ops.laplacians(dtype=torch.float64))
    out = conv.cuda()(x.cuda(), ops.laplacians(device="cuda", dtype=torch.float64))
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), ref)


def test_csr_operators_equal_coo():
    ops = tiny_complex()
    coo = ops.laplacians(dtype=torch.float64)
    csr = tuple(L.to_sparse_csr() for L in coo)
    conv = _randomize(SCNNConv(3, 2, 2, 2).double())
    x = torch.randn(4, ops.num_edges, 3, dtype=torch.float64)
    torch.testing.assert_close(conv(x, csr), conv(x, coo), rtol=1e-14, atol=1e-14)


def test_normalize_scales_by_largest_eigenvalue():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    lam_d = np.linalg.eigvalsh(ops.L_down.toarray())[-1]
    lam_u = np.linalg.eigvalsh(ops.L_up.toarray())[-1]
    assert lam_d > 1 and lam_u > 1
    conv = _randomize(SCNNConv(2, 3, 2, 2, normalize=True).double())
    x = torch.randn(ops.num_edges, 2, dtype=torch.float64)
    expected = dense_reference(x, L_down / lam_d, L_up / lam_u, conv.weight, conv.bias, 2, 2)
    torch.testing.assert_close(conv(x, (L_down, L_up)), expected)
    scaled = SCNNConv.normalize_operator(L_down)
    assert scaled.layout == torch.sparse_coo and scaled.dtype == torch.float64
    torch.testing.assert_close(scaled.to_dense(), L_down.to_dense() / lam_d)
    assert np.isclose(np.linalg.eigvalsh(scaled.to_dense().numpy())[-1], 1.0)


def test_normalize_on_large_operator_uses_sparse_solver():
    # 200 edges > the dense-eigensolver threshold: the ARPACK path.
    rng = np.random.default_rng(0)
    b = sp.random(200, 150, density=0.02, random_state=rng, format="csr")
    m = sp.csr_matrix(b @ b.T)
    lam = np.linalg.eigvalsh(m.toarray())[-1]
    assert np.isclose(scnn_kernel_module.largest_eigenvalue(m), lam, rtol=1e-6)


def test_normalize_computes_eigenvalue_once_per_operator(monkeypatch):
    calls = []
    original = scnn_kernel_module.largest_eigenvalue
    monkeypatch.setattr(
        scnn_kernel_module, "largest_eigenvalue", lambda m: calls.append(m.shape) or original(m)
    )
    ops = tiny_complex()
    laplacians = ops.laplacians()
    L_down = laplacians.down
    convs = [SCNNConv(1, 2, 2, 2, normalize=True), SCNNConv(2, 2, 2, 2, normalize=True)]
    x = torch.randn(ops.num_edges, 1)
    for _ in range(3):
        convs[1](convs[0](x, laplacians), laplacians)
    assert len(calls) == 2  # one per operator of the value, over 2 layers x 3 steps
    # An in-place change of the operator invalidates what was prepared.
    out_before = convs[0](x, laplacians)
    with torch.no_grad():
        L_down.values().mul_(3.0)
    out_after = convs[0](x, laplacians)
    assert len(calls) == 4  # the edited value is prepared again, both of its operators
    torch.testing.assert_close(out_after, out_before)  # L / lambda_max is scale-invariant


def test_inplace_change_of_operator_is_seen_without_normalize():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = _randomize(SCNNConv(1, 1, 1, 0, bias=False).double())
    x = torch.randn(ops.num_edges, 1, dtype=torch.float64)
    conv(x, (L_down, L_up))
    with torch.no_grad():
        L_down.values().mul_(2.0)
    torch.testing.assert_close(
        conv(x, (L_down, L_up)), dense_reference(x, L_down, L_up, conv.weight, None, 1, 0)
    )


def test_normalize_leaves_zero_operator_alone():
    # A complex without triangles: L_up = 0, lambda_max = 0 -> no scaling, no NaN.
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = _randomize(SCNNConv(1, 2, 1, 2, normalize=True).double())
    x = torch.randn(ops.num_edges, 1, dtype=torch.float64)
    out = conv(x, (L_down, L_up))
    assert torch.isfinite(out).all()
    lam_d = np.linalg.eigvalsh(ops.L_down.toarray())[-1]
    torch.testing.assert_close(
        out, dense_reference(x, L_down / lam_d, L_up, conv.weight, conv.bias, 1, 2)
    )
    assert SCNNConv.normalize_operator(L_up) is L_up


@pytest.mark.parametrize("c_in,c_out", [(1, 3), (3, 2)])
@pytest.mark.parametrize("K_down,K_up", [(0, 0), (1, 3), (3, 1), (2, 2)])
def test_gradients_match_finite_differences(c_in, c_out, K_down, K_up):
    ops = tiny_complex()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    conv = _randomize(SCNNConv(c_in, c_out, K_down, K_up).double())
    x = torch.randn(2, ops.num_edges, c_in, dtype=torch.float64, requires_grad=True)

    def f(x, weight, bias):
        params = {"weight": weight, "bias": bias}
        return torch.func.functional_call(conv, params, (x, (L_down, L_up)))

    assert torch.autograd.gradcheck(f, (x, conv.weight, conv.bias), fast_mode=True)


def test_gradients_with_nonsymmetric_operator():
    # The custom backward must use the transpose for a non-symmetric operator.
    g = torch.Generator().manual_seed(3)
    dense = torch.randn(5, 5, generator=g, dtype=torch.float64) * (
        torch.rand(5, 5, generator=g) < 0.5
    )
    L = dense.to_sparse()
    conv = _randomize(SCNNConv(2, 2, 2, 0).double())
    x = torch.randn(5, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: conv(x, (L, None)), (x,), fast_mode=True)
    torch.testing.assert_close(
        conv(x, (L, None)), dense_reference(x, dense, None, conv.weight, conv.bias, 2, 0)
    )


def test_gradients_reach_every_parameter():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    conv = SCNNConv(1, 4, 2, 2)
    conv(torch.randn(3, ops.num_edges, 1), (L_down, L_up)).pow(2).sum().backward()
    assert conv.weight.grad is not None and conv.bias.grad is not None
    assert (conv.weight.grad.abs().sum(dim=(1, 2)) > 0).all()  # every power gets a gradient


def test_reset_parameters_and_repr():
    conv = SCNNConv(3, 5, K_down=2, K_up=1)
    assert conv.weight.shape == (4, 3, 5) and conv.bias.shape == (5,)
    assert torch.equal(conv.bias, torch.zeros(5))
    bound = np.sqrt(6 / (4 * 3 + 5))  # Glorot over the stacked [(1+K_d+K_u) C_in, C_out]
    assert conv.weight.abs().max() <= bound
    assert conv.weight.std() > bound / 4
    with torch.no_grad():
        conv.weight.fill_(7.0)
        conv.bias.fill_(1.0)
    conv.reset_parameters()
    assert conv.weight.abs().max() <= bound and torch.equal(conv.bias, torch.zeros(5))
    assert repr(conv) == "SCNNConv(3, 5, K_down=2, K_up=1, bias=True, normalize=False)"
    assert SCNNConv(1, 2, 0, 0, bias=False).bias is None


def test_both_sides_off_is_pointwise_linear():
    conv = _randomize(SCNNConv(2, 3, 0, 0))
    x = torch.randn(4, 6, 2)
    torch.testing.assert_close(conv(x, None), x @ conv.weight[0] + conv.bias)
    batch = torch.arange(4).repeat_interleave(6)
    torch.testing.assert_close(
        conv(x.reshape(-1, 2), None, batch=batch),
        (x @ conv.weight[0] + conv.bias).view(-1, 3),
    )


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(in_channels=0, out_channels=2, K_down=1, K_up=1), ValueError, "in_channels"),
        (dict(in_channels=1, out_channels=-1, K_down=1, K_up=1), ValueError, "out_channels"),
        (dict(in_channels=1, out_channels=2, K_down=-1, K_up=1), ValueError, "K_down"),
        (dict(in_channels=1, out_channels=2, K_down=1, K_up=-2), ValueError, "K_up"),
        (dict(in_channels=1.5, out_channels=2, K_down=1, K_up=1), TypeError, "in_channels"),
        (dict(in_channels=1, out_channels=2, K_down=1.0, K_up=1), TypeError, "K_down"),
        (dict(in_channels=1, out_channels=2, K_down=True, K_up=1), TypeError, "K_down"),
        (dict(in_channels=1, out_channels=2, K_down=1, K_up=1, bias=1), TypeError, "bias"),
        (
            dict(in_channels=1, out_channels=2, K_down=1, K_up=1, normalize="yes"),
            TypeError,
            "normalize",
        ),
    ],
)
def test_bad_hyper_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        SCNNConv(**kwargs)


def test_bad_inputs_raise_clear_errors():
    ops = tiny_complex()
    n1 = ops.num_edges
    L_down, L_up = ops.laplacians()
    conv = SCNNConv(2, 3, 2, 2)
    x = torch.randn(n1, 2)
    with pytest.raises(ValueError, match="in_channels=2"):
        conv(torch.randn(n1, 3), (L_down, L_up))
    with pytest.raises(ValueError, match="in_channels=2"):
        conv(torch.randn(4, n1, 1), (L_down, L_up))
    with pytest.raises(ValueError, match="shape"):
        conv(torch.randn(n1), (L_down, L_up))
    with pytest.raises(ValueError, match="shape"):
        conv(torch.randn(2, 3, n1, 2), (L_down, L_up))
    with pytest.raises(TypeError, match="floating"):
        conv(torch.ones(n1, 2, dtype=torch.long), (L_down, L_up))
    with pytest.raises(TypeError, match="torch.Tensor"):
        conv(np.ones((n1, 2)), (L_down, L_up))
    # operator sizes
    small = tiny_complex().operator("L0")  # [6, 6]
    with pytest.raises(ValueError, match=r"9 rows .* \[6, 6\]"):
        conv(x, (small, small))
    with pytest.raises(ValueError, match=r"9 edges .* \[6, 6\]"):
        conv(torch.randn(4, n1, 2), (small, small))
    with pytest.raises(ValueError, match="same complex"):
        conv(x, (L_down, small))
    with pytest.raises(ValueError, match="square"):
        conv(x, (ops.operator("B1"), L_up))
    # dense or foreign operators
    with pytest.raises(TypeError, match="dense tensor; the layers need a sparse operator"):
        conv(x, (L_down.to_dense(), L_up))
    with pytest.raises(TypeError, match="torch sparse tensor"):
        conv(x, (ops.L_down, L_up))
    with pytest.raises(TypeError, match="COO or CSR"):
        conv(x, (L_down.to_sparse_csc(), L_up))
    with pytest.raises(ValueError, match="`L_up` is None"):
        conv(x, (L_down, None))
    # dtype / grad of operators
    with pytest.raises(ValueError, match="dtype torch.float64"):
        conv(x, ops.laplacians(dtype=torch.float64))
    with pytest.raises(ValueError, match="requires grad"):
        conv(x, (L_down.clone().requires_grad_(), L_up))


def test_bad_batch_raises_clear_errors():
    ops = tiny_complex()
    n1 = ops.num_edges
    L_down, L_up = ops.laplacians()
    conv = SCNNConv(1, 2, 1, 1)
    x = torch.randn(3 * n1, 1)
    good = torch.arange(3).repeat_interleave(n1)
    assert conv(x, (L_down, L_up), batch=good).shape == (3 * n1, 2)
    with pytest.raises(ValueError, match="pass `batch`"):
        conv(x, (L_down, L_up))
    with pytest.raises(ValueError, match="not a multiple of N1=9"):
        conv(torch.randn(3 * n1 + 1, 1), (L_down, L_up),
             batch=torch.zeros(3 * n1 + 1, dtype=torch.long))  # fmt: skip
    with pytest.raises(ValueError, match="contiguous"):
        conv(x, (L_down, L_up), batch=good.flip(0))
    with pytest.raises(ValueError, match="contiguous"):
        conv(x, (L_down, L_up), batch=torch.arange(3 * n1) % 3)
    with pytest.raises(ValueError, match=r"shape \[27\]"):
        conv(x, (L_down, L_up), batch=good[:-1])
    with pytest.raises(TypeError, match="integer tensor"):
        conv(x, (L_down, L_up), batch=good.float())
    with pytest.raises(ValueError, match="only used with a 2-D"):
        conv(x.view(3, n1, 1), (L_down, L_up), batch=good)


def test_empty_complex_raises():
    conv = SCNNConv(1, 2, 1, 0)
    empty = torch.zeros(0, 0).to_sparse()
    with pytest.raises(ValueError, match="no edges"):
        conv(torch.randn(0, 1), (empty, None))
