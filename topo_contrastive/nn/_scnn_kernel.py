"""The fused, chunked kernel of :class:`~topo_contrastive.nn.SCNNConv` (private): operator
preparation, once per :class:`~topo_contrastive.complex.Laplacians` value, and the layers'
forward and backward passes as opaque custom ops, which ``torch.compile`` keeps whole (it
traces no sparse tensor). Notes on the layout and the schemes: docs/design.md §7.4."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from topo_contrastive.complex.laplacians import Laplacians

# Below this size the largest eigenvalue is computed with a dense eigensolver
# (an explicitly small-matrix path; ARPACK needs k < n and is slow for tiny n).
_DENSE_EIG_MAX = 128
#: Rows (samples x edges) per chunk on the CPU: an activation chunk of 64 float32 channels
#: is then about 2 MB. Measured on 2 AMD EPYC cores (4-layer training step, width 64,
#: N1 = 1,082, 200 samples): 4,000-9,000 rows per chunk 1.07-1.10 s, 1,000-2,000 rows
#: 1.27-1.29 s (Python and threading overhead per op), the whole batch 1.15-1.32 s.
CHUNK_ROWS = 8192
#: Activations applied inside the kernel; their derivative is computed from the output.
FUSED_ACTIVATIONS = ("identity", "tanh", "relu", "sigmoid")
#: Complexes with at least this many edges are renumbered for locality on the CPU (SCNN).
MIN_EDGES = 16_384
#: From this many edges on, ``tanh`` of a CPU chunk runs as numpy's ``np.tanh`` in place
#: (several times faster, equal within one unit in the last place); below it
#: ``torch.tanh``, so that results on the paper's complexes stay bit for bit.
NUMPY_TANH_MIN_EDGES = MIN_EDGES


# ---------------------------------------------------------------------- operators
def kept_cache(laplacians: Laplacians, key: Any) -> dict:
    """The dict in which what the layers compute once per ``Laplacians`` value is kept
    under ``key`` (the value's ``cache``; the caller fills it: no callback, so the flows'
    path enters this module and leaves it once). While ``torch.compile`` traces, the cache
    is read without the operators' version check (Dynamo touches no sparse tensor) and
    must hold ``key`` already.

    Raises:
        RuntimeError: not prepared yet while ``torch.compile`` traces.
    """
    if not torch.compiler.is_compiling():
        return laplacians.cache
    if key not in laplacians._memo:
        raise RuntimeError(
            "under torch.compile the operators must be prepared before tracing: call the "
            "model once eagerly on this Laplacians value (e.g. under torch.no_grad())"
        )
    return laplacians._memo


class Prepared:
    """An operator ready for the kernel: CSR (scaled with ``normalize``), its components
    (and its transpose's, ``None`` if symmetric), and ``I_b (x) L`` per chunk size ``b``."""

    __slots__ = ("blocks", "csr", "lambda_max", "n", "parts", "parts_t")

    def __init__(self, csr: Tensor, csr_t: Tensor, lambda_max: float | None):
        self.csr, self.lambda_max, self.n = csr, lambda_max, int(csr.shape[0])
        self.parts = _components(csr)
        self.parts_t = None if csr_t is csr else _components(csr_t)
        self.blocks: dict[int, list[Tensor]] = {}

    @property
    def symmetric(self) -> bool:
        return self.parts_t is None

    def block(self, b: int) -> list[Tensor]:
        """The components of ``I_b (x) L`` (then of its transpose), or of a larger block,
        whose leading ``b`` blocks are the same (cached)."""
        for size, parts in self.blocks.items():
            if size >= b:
                return parts
        parts = _block_parts(*self.parts, self.n, b)
        if self.parts_t is not None:
            parts += _block_parts(*self.parts_t, self.n, b)
        self.blocks[b] = parts
        return parts


def _components(csr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(crow, col, values)`` of a CSR tensor as plain tensors (Dynamo takes no view of a
    sparse tensor's parts)."""
    return csr.crow_indices().detach(), csr.col_indices().detach(), csr.values().detach()


def _csr(L: Tensor) -> Tensor:
    return L if L.layout == torch.sparse_csr else L.coalesce().to_sparse_csr()


def _block_parts(crow: Tensor, col: Tensor, val: Tensor, n: int, b: int) -> list[Tensor]:
    """``[crow, col, values]`` of ``I_b (x) L``, ``b`` copies of ``L`` ``[n, n]`` on the
    diagonal."""
    nnz = val.numel()
    # int32 indices where they fit: MKL's sparse kernels take int32 and torch would
    # otherwise convert the int64 indices on every product
    if b * max(n, nnz) < 2**31 - 1 and crow.device.type == "cpu":
        crow, col = crow.int(), col.int()
    steps = torch.arange(b, device=crow.device, dtype=crow.dtype)
    crow_b = (crow[:-1].unsqueeze(0) + steps.unsqueeze(1) * nnz).reshape(-1)
    crow_b = torch.cat([crow_b, crow.new_tensor([b * nnz])])
    col_b = (col.unsqueeze(0) + steps.unsqueeze(1).to(col.dtype) * n).reshape(-1)
    return [crow_b, col_b, val.repeat(b)]


def _leading_blocks(parts: list[Tensor], n: int, bs: int) -> Tensor:
    """The CSR ``I_bs (x) L`` ``[bs*n, bs*n]``: the leading rows of a block's components."""
    crow, col, val = parts
    nnz = val.numel() // ((crow.numel() - 1) // n) * bs
    return _csr_tensor(crow[: bs * n + 1], col[:nnz], val[:nnz], bs * n)


def _csr_tensor(crow: Tensor, col: Tensor, val: Tensor, n: int) -> Tensor:
    return torch.sparse_csr_tensor(crow, col, val, size=(n, n), check_invariants=False)


with warnings.catch_warnings():  # torch says once per process that CSR is in beta: here
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    _csr_tensor(torch.zeros(2, dtype=torch.long), torch.zeros(0, dtype=torch.long),
                torch.zeros(0), 1)  # fmt: skip


def to_scipy(L: Tensor) -> sp.csr_matrix:
    """A CPU float64 scipy CSR copy of a torch sparse operator."""
    coo = L.detach().to_sparse_coo().coalesce().cpu()
    idx = coo.indices().numpy()
    return sp.csr_matrix((coo.values().double().numpy(), (idx[0], idx[1])), shape=tuple(coo.shape))


def largest_eigenvalue(m: sp.csr_matrix) -> float:
    """Largest eigenvalue of a symmetric matrix (the largest eigenvalue modulus otherwise)."""
    if m.nnz == 0:
        return 0.0
    symmetric = abs(m - m.T).max() <= 1e-12 * abs(m).max()
    if m.shape[0] <= _DENSE_EIG_MAX:
        dense = m.toarray()
        if symmetric:
            return float(np.linalg.eigvalsh(dense)[-1])
        return float(np.abs(np.linalg.eigvals(dense)).max())
    if symmetric:
        return float(spla.eigsh(m, k=1, which="LA", return_eigenvectors=False, tol=1e-8)[0])
    return float(np.abs(spla.eigs(m, k=1, which="LM", return_eigenvectors=False, tol=1e-8)[0]))


def prepare_operator(laplacians: Laplacians, side: str, normalize: bool) -> Prepared:
    """The operator ``side`` (``"down"``/``"up"``) of ``laplacians`` ready for the kernel,
    scaled by ``1 / lambda_max`` with ``normalize``; prepared once per value (and in-place
    version) and kept on it, its values checked finite and its symmetry found then.

    Raises:
        ValueError: the operator holds NaN or inf values (the message names it).
    """
    key = ("prepared", side, normalize)
    cache = kept_cache(laplacians, key)
    if key not in cache:
        cache[key] = _prepare(laplacians, side, normalize)
    return cache[key]


def _prepare(laplacians: Laplacians, side: str, normalize: bool) -> Prepared:
    L = getattr(laplacians, side)
    if normalize:
        base = prepare_operator(laplacians, side, False)  # checks the values first
        lam = largest_eigenvalue(to_scipy(L))
        csr = base.csr if lam <= 0 else _csr(base.csr * (1.0 / lam))  # 0: L_up of no 2-cell
        csr_t = csr if base.symmetric else _csr_tensor(*base.parts_t, base.n)
        as_is = base.symmetric or lam <= 0
        return Prepared(csr, csr_t if as_is else _csr(csr_t * (1.0 / lam)), lam)
    coo = L.detach().to_sparse_coo().coalesce()
    finite = torch.isfinite(coo.values())
    if not bool(finite.all()):
        at = coo.indices()[:, int((~finite).nonzero()[0, 0])].tolist()
        raise ValueError(
            f"`L_{side}` holds {int((~finite).sum())} NaN or inf value(s) (first at row "
            f"{at[0]}, column {at[1]}); an operator must be finite (build it with "
            "ComplexOperators.laplacians())"
        )
    csr = _csr(L.detach())
    if laplacians.symmetric:  # a Laplacian of the library: symmetric by construction
        return Prepared(csr, csr, None)
    coo_t = coo.t().coalesce()
    symmetric = torch.equal(coo.indices(), coo_t.indices()) and torch.equal(
        coo.values(), coo_t.values()
    )
    return Prepared(csr, csr if symmetric else _csr(coo_t), None)


# ---------------------------------------------------------------------- chunking
def chunk_samples(num_samples: int, n1: int, device: torch.device) -> int:
    """Samples per chunk: about :data:`CHUNK_ROWS` rows on the CPU, the whole batch on a GPU
    (which wants few large kernels)."""
    if device.type != "cpu":
        return max(1, num_samples)
    return max(1, min(num_samples, CHUNK_ROWS // max(n1, 1)))


def _chunks(num_samples: int, b: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + b, num_samples)) for lo in range(0, num_samples, b)]


def _sides(parts: list[Tensor], orders: list[int], symmetric: list[bool], n: int) -> Callable:
    """``bs -> [(I_bs (x) L, I_bs (x) L^T, K) per active side]`` from the ops' inputs."""
    memo: dict[int, list] = {}

    def sides(bs: int) -> list[tuple[Tensor, Tensor, int]]:
        if bs not in memo:
            out, i = [], 0
            for k, sym in zip(orders, symmetric, strict=True):
                L = _leading_blocks(parts[i : i + 3], n, bs)
                L_t = L if sym else _leading_blocks(parts[i + 3 : i + 6], n, bs)
                out.append((L, L_t, k))
                i += 3 if sym else 6
            memo[bs] = out
        return memo[bs]

    return sides


def _spmm_into(out: Tensor, L: Tensor, X: Tensor, beta: float = 0.0) -> Tensor:
    """``out = beta * out + L @ X`` in place (``beta=0`` ignores ``out``'s old values,
    NaN included; ``torch.sparse.mm`` would allocate and copy)."""
    return torch.addmm(out, L, X, beta=beta, out=out)


# ---------------------------------------------------------------------- activations
def _act_forward_(y: Tensor, act: str, n1: int = 0) -> None:
    if act == "tanh":
        if n1 >= NUMPY_TANH_MIN_EDGES and y.device.type == "cpu" and y.is_contiguous() and (
            y.dtype in (torch.float32, torch.float64) and not y.requires_grad
        ):
            arr = y.numpy()
            np.tanh(arr, out=arr)
        else:
            torch.tanh_(y)
    elif act == "relu":
        torch.relu_(y)
    elif act == "sigmoid":
        torch.sigmoid_(y)


def _act_backward(g: Tensor, y: Tensor, act: str, out: Tensor) -> Tensor:
    """``out = g * act'`` with the derivative from the activation's output ``y``."""
    if act == "identity":
        return g
    if act == "tanh":  # 1 - y^2
        torch.mul(y, y, out=out)
        out.neg_().add_(1.0).mul_(g)
    elif act == "sigmoid":  # y (1 - y)
        torch.mul(y, y, out=out)
        torch.sub(y, out, out=out).mul_(g)
    else:  # relu
        torch.mul(g, y > 0, out=out)
    return out


# ---------------------------------------------------------------------- one layer
def _stacked_terms(x: Tensor, sides: list[tuple[Tensor, Tensor, int]], out: Tensor) -> Tensor:
    """``[x, L x, ..., L^K x]`` of one chunk stacked along channels into ``out``
    ``[rows, T, C_in]`` (returned as ``[rows, T*C_in]``)."""
    out[:, 0].copy_(x)
    t = 1
    for L, _, k_max in sides:
        prev = x
        for _ in range(k_max):
            cur = torch.mm(L, prev) if prev.is_contiguous() else torch.mm(L, prev.contiguous())
            out[:, t].copy_(cur)
            prev, t = cur, t + 1
    return out.view(out.size(0), -1)


def _layer_forward(x: Tensor, weight: Tensor, bias: Tensor | None, sides: Callable, act: str,
                   b: int) -> Tensor:
    """``act(layer(x))`` ``[B*N1, C_out]`` for ``x`` ``[B, N1, C_in]`` contiguous, chunk by
    chunk of ``b`` samples."""
    B, n1, c_in = x.shape
    c_out = weight.shape[2]
    xf = x.view(B * n1, c_in)
    y = torch.empty(B * n1, c_out, dtype=x.dtype, device=x.device)
    horner = c_in >= c_out
    scratch: list[Tensor] = []
    for lo, hi in _chunks(B, b):
        rows = (hi - lo) * n1
        xc, yc = xf[lo * n1 : hi * n1], y[lo * n1 : hi * n1]
        if horner:
            _horner_forward(xc, yc, weight, bias, sides(hi - lo), scratch, rows)
        else:
            if not scratch or scratch[0].size(0) != rows:
                scratch[:] = [x.new_empty(rows, weight.shape[0], c_in)]
            z = _stacked_terms(xc, sides(hi - lo), scratch[0])
            w = weight.view(-1, c_out)
            if bias is None:
                torch.mm(z, w, out=yc)
            else:
                torch.addmm(bias, z, w, out=yc)
        _act_forward_(yc, act, n1)
    return y


def _horner_forward(xc: Tensor, yc: Tensor, weight: Tensor, bias: Tensor | None, sides: list,
                    scratch: list[Tensor], rows: int) -> None:
    """``yc = xc W_0 + b + sum_sides L (xc W_1 + L (xc W_2 + ...))`` for one chunk."""
    if bias is None:
        torch.mm(xc, weight[0], out=yc)
    else:
        torch.addmm(bias, xc, weight[0], out=yc)
    max_k = max([0, *(k for _, _, k in sides)])
    need = min(max_k, 2)
    if len(scratch) < need or (scratch and scratch[0].size(0) != rows):
        scratch[:] = [torch.empty_like(yc) for _ in range(need)]
    offset = 1
    for L, _, k_max in sides:
        acc, nxt = scratch[0], scratch[need - 1]
        torch.mm(xc, weight[offset + k_max - 1], out=acc)
        for k in range(k_max - 1, 0, -1):
            torch.mm(xc, weight[offset + k - 1], out=nxt)
            _spmm_into(nxt, L, acc, beta=1.0)  # X W_k + L acc
            acc, nxt = nxt, acc
        _spmm_into(yc, L, acc, beta=1.0)
        offset += k_max


def _layer_backward(x: Tensor, weight: Tensor, y: Tensor | None, grad: Tensor, sides: Callable,
                    act: str, b: int, needs: tuple[bool, bool, bool]) -> tuple:
    """``(dx [B, N1, C_in], dW, db)`` of one layer from its input ``x``, its output ``y``
    (``None`` for the identity) and the output's gradient; ``needs`` says which."""
    B, n1, c_in = x.shape
    c_out = weight.shape[2]
    xf, gf = x.view(B * n1, c_in), grad.reshape(B * n1, c_out).contiguous()
    yf = y.view(B * n1, c_out) if y is not None else None
    grad_x = torch.empty_like(xf) if needs[0] else None
    grad_w = torch.zeros_like(weight) if needs[1] else None
    grad_b = gf.new_zeros(c_out) if needs[2] else None
    scratch: dict[str, Tensor] = {}

    def buf(name: str, *shape: int) -> Tensor:
        if name not in scratch or scratch[name].shape != shape:
            scratch[name] = gf.new_empty(*shape)
        return scratch[name]

    for lo, hi in _chunks(B, b):
        rows, r = (hi - lo) * n1, slice(lo * n1, hi * n1)
        g = gf[r] if act == "identity" else _act_backward(gf[r], yf[r], act, buf("g", rows, c_out))
        if grad_b is not None:
            grad_b += g.sum(0)
        gx = grad_x[r] if grad_x is not None else None
        if c_in >= c_out:
            _horner_backward(xf[r], g, weight, grad_w, gx, sides(hi - lo), buf, rows)
        else:
            _stacked_backward(xf[r], g, weight, grad_w, gx, sides(hi - lo), buf, rows)
    return (grad_x.view(B, n1, c_in) if grad_x is not None else None), grad_w, grad_b


def _horner_backward(xc: Tensor, g: Tensor, weight: Tensor, grad_w: Tensor | None,
                     gx: Tensor | None, sides: list, buf: Callable, rows: int) -> None:
    """Gradients of one chunk for the Horner scheme (``dW`` accumulated, ``dX`` written)."""
    if grad_w is not None:
        torch.addmm(grad_w[0], xc.t(), g, out=grad_w[0])
    if gx is not None:
        torch.mm(g, weight[0].t(), out=gx)
    bufs = (buf("a", rows, g.size(1)), buf("b", rows, g.size(1)))
    offset = 1
    for _, L_t, k_max in sides:
        cur = g
        for k in range(1, k_max + 1):
            nxt = bufs[k % 2]
            _spmm_into(nxt, L_t, cur)  # G_k = L^T G_{k-1}
            if grad_w is not None:
                w = grad_w[offset + k - 1]
                torch.addmm(w, xc.t(), nxt, out=w)
            if gx is not None:
                gx.addmm_(nxt, weight[offset + k - 1].t())
            cur = nxt
        offset += k_max


def _stacked_backward(xc: Tensor, g: Tensor, weight: Tensor, grad_w: Tensor | None,
                      gx: Tensor | None, sides: list, buf: Callable, rows: int) -> None:
    """Gradients of one chunk for propagate-then-transform: ``Z = [x, Lx, ...]``
    (recomputed), ``y = Z W + b``."""
    terms, c_in = weight.shape[0], xc.size(1)
    if grad_w is not None:
        z = _stacked_terms(xc, sides, buf("z", rows, terms, c_in))
        gw_flat = grad_w.view(-1, g.size(1))
        torch.addmm(gw_flat, z.t(), g, out=gw_flat)
    if gx is not None:
        dz = torch.mm(g, weight.view(-1, g.size(1)).t()).view(rows, terms, c_in)
        gx.copy_(dz[:, 0])
        t = 1
        for _, L_t, k_max in sides:
            acc = dz[:, t + k_max - 1].contiguous()
            for k in range(k_max - 1, 0, -1):
                acc = torch.mm(L_t, acc).add_(dz[:, t + k - 1])
            gx.add_(torch.mm(L_t, acc))
            t += k_max


# ---------------------------------------------------------------------- custom ops
def _unpack(params: list[Tensor], has_bias: list[bool]) -> list[tuple[Tensor, Tensor | None]]:
    """``[(weight, bias or None)]`` per layer from ``[W_1, b_1, W_2, ...]``."""
    out, i = [], 0
    for has in has_bias:
        out.append((params[i], params[i + 1] if has else None))
        i += 2 if has else 1
    return out


def _layers(x: Tensor, params: list[Tensor], has_bias: list[bool], parts: list[Tensor],
            orders: list[int], symmetric: list[bool], act: str) -> Tensor:
    """``act(conv_n(... act(conv_1(x))))`` ``[B, N1, C_out]`` of the layers ``params``
    ``[W_1, b_1, W_2, ...]`` on the operators ``parts`` (see :func:`scnn_layers`)."""
    B, n1, _ = x.shape
    b, sides = chunk_samples(B, n1, x.device), _sides(parts, orders, symmetric, n1)
    x = x.contiguous()
    for weight, bias in _unpack(params, has_bias):
        x = _layer_forward(x, weight, bias, sides, act, b).view(B, n1, weight.shape[2])
    return x


def _layers_grad(grad: Tensor, x: Tensor, y: Tensor | None, params: list[Tensor],
                 has_bias: list[bool], parts: list[Tensor], orders: list[int],
                 symmetric: list[bool], act: str, needs: list[bool]) -> list[Tensor]:
    """``[dx, dW_1, db_1, dW_2, ...]`` (``needs`` says which, the others empty) from the
    output ``y`` (``None`` for the identity); the inner layers' outputs are recomputed."""
    B, n1, _ = x.shape
    b, sides = chunk_samples(B, n1, x.device), _sides(parts, orders, symmetric, n1)
    layers = _unpack(params, has_bias)
    hs = [x]  # the inputs of the layers
    for weight, bias in layers[:-1]:
        hs.append(_layer_forward(hs[-1], weight, bias, sides, act, b).view(B, n1, -1))
    outs, flags = [*hs[1:], y], iter(needs[1:])
    need = [(next(flags), next(flags) if has else False) for has in has_bias]
    grads: list[tuple] = [(None, None)] * len(layers)
    g: Tensor | None = grad
    for i in reversed(range(len(layers))):
        need_in = needs[0] or any(f for pair in need[:i] for f in pair)
        step = _layer_backward(hs[i], layers[i][0], outs[i], g, sides, act, b, (need_in, *need[i]))
        g, grads[i] = step[0], step[1:]
        if g is None:
            break
    flat = [g] + [t for pair, has in zip(grads, has_bias, strict=True) for t in pair[: 1 + has]]
    return [t if t is not None else x.new_empty(0) for t in flat]


def _setup(ctx: Any, inputs: tuple, output: Tensor) -> None:
    x, params, has_bias, parts, orders, symmetric, act = inputs
    last = len(params) - 1 - has_bias[-1]  # the last layer's weight
    inner = [t if i <= last else None for i, t in enumerate(params)]  # the last bias: unused
    ctx.has_bias, ctx.kernel = list(has_bias), (list(orders), list(symmetric), act)
    ctx.num = (len(params), len(parts))
    ctx.save_for_backward(x, output if act != "identity" else None, *inner, *parts)


def _gradients(ctx: Any, grad: Tensor, needs: list[bool], backward: Callable) -> list:
    """``[dx, dW_1, db_1, ...]`` (``None`` where not needed) by ``backward``."""
    x, y, *rest = ctx.saved_tensors
    params = [t if t is not None else x.new_empty(0) for t in rest[: ctx.num[0]]]
    parts = list(rest[ctx.num[0] :])
    out = backward(grad, x, y, params, ctx.has_bias, parts, *ctx.kernel, needs)
    return [t if need else None for t, need in zip(out, needs, strict=True)]


_layers_op = torch.library.custom_op("topo_contrastive::scnn_layers", _layers, mutates_args=())
_layers_grad_op = torch.library.custom_op(
    "topo_contrastive::scnn_layers_backward", _layers_grad, mutates_args=()
)


@_layers_op.register_fake
def _(x, params, has_bias, parts, orders, symmetric, act):
    return x.new_empty(x.shape[0], x.shape[1], _unpack(params, has_bias)[-1][0].shape[2])


@_layers_grad_op.register_fake
def _(grad, x, y, params, has_bias, parts, orders, symmetric, act, needs):
    shapes = [x.shape] + [s for w, bias in _unpack(params, has_bias)
                          for s in (w.shape, w.shape[2:])[: 1 + (bias is not None)]]  # fmt: skip
    return [x.new_empty(s if need else (0,)) for s, need in zip(shapes, needs, strict=True)]


def _op_backward(ctx: Any, grad: Tensor) -> tuple:
    need_x, need_p = ctx.needs_input_grad[:2]  # a bool per tensor of a list
    grads = _gradients(ctx, grad, [need_x, *need_p], _layers_grad_op)
    ints = None if ctx.kernel[0] else []  # the inputs' structure: an empty list is a list
    return grads[0], grads[1:], None, [None] * ctx.num[1], ints, ints, None


_layers_op.register_autograd(_op_backward, setup_context=_setup)


class _Layers(torch.autograd.Function):
    """The op in eager mode: the same functions without the dispatcher's overhead per call
    (a third of a small layer's time)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, kernel: tuple, num: int, *tensors: Tensor) -> Tensor:
        inputs = (x, list(tensors[:num]), kernel[0], list(tensors[num:]), *kernel[1:])
        out = _layers(*inputs)
        _setup(ctx, inputs, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple:
        need = ctx.needs_input_grad
        grads = _gradients(ctx, grad, [need[0], *need[3 : 3 + ctx.num[0]]], _layers_grad)
        return grads[0], None, None, *grads[1:], *[None] * ctx.num[1]


def scnn_layers(x: Tensor, params: list[tuple[Tensor, Tensor | None]],
                ops: list[tuple[Prepared, int]], act: str = "identity") -> Tensor:
    """``act(conv_n(... act(conv_1(x))))`` for ``x`` ``[B, N1, C_in]`` and the layers'
    ``(weight, bias)`` on the same operators ``ops`` (``(prepared operator, order K)`` per
    active side); ``[B, N1, C_out]`` contiguous, differentiable in ``x`` and the parameters.
    One layer keeps its input and output for the backward pass; several keep the first
    input and the last output and recompute the others (the same values and gradients).
    The custom op while ``torch.compile`` traces; the same functions eagerly."""
    B, n1, _ = x.shape
    parts = [t for op, _ in ops for t in op.block(chunk_samples(B, n1, x.device))]
    flat = [t for w, bias in params for t in (w, bias) if t is not None]
    kernel = ([bias is not None for _, bias in params], [k for _, k in ops],
              [op.symmetric for op, _ in ops], act)  # fmt: skip
    if torch.compiler.is_compiling():
        return _layers_op(x.contiguous(), flat, kernel[0], parts, *kernel[1:])
    return _Layers.apply(x.contiguous(), kernel, len(flat), *flat, *parts)
