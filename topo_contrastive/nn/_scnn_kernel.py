r"""Kernels of :class:`~topo_contrastive.nn.SCNNConv`: operator preparation and a chunked,
fused forward/backward (private).

**Layout.** Activations are sample-major, ``[B, N1, C]`` contiguous, viewed as ``[B*N1, C]``
rows. The batch is processed in *chunks* of ``b`` consecutive samples (``b * N1`` consecutive
rows, about 2 MB per activation chunk), so that the dense products with the weights and
the sparse products with the Laplacians of one chunk run while its data sits in the CPU caches.
A Laplacian acts on a chunk as the block-diagonal operator :math:`\mathbf{I}_b \otimes
\mathbf{L}` (one sparse product per power for the whole chunk), built once per operator and
chunk size and cached.

**Forward**, per chunk (Horner's scheme when :math:`C_{in} \ge C_{out}`)::

    y = X W_0 + b + sum_sides L (X W_1 + L (X W_2 + ... + L X W_K))
    y = act(y)                       (in place, fused)

and, when :math:`C_{in} < C_{out}`, the powers act on the narrower input and one product with
the stacked weights follows: ``y = [X, L X, ..., L^K X] W_stacked + b``.

**Backward**, per chunk, with :math:`\mathbf{G} = \partial\ell/\partial\mathbf{y} \odot
\mathrm{act}'` (computed from the saved output) and :math:`\mathbf{G}_k = (\mathbf{L}^\top)^k
\mathbf{G}`::

    dW_k += X^T G_k,   dX = sum_k G_k W_k^T,   db += sum_rows G

Only the layer's input and output are kept for the backward pass (the input is the previous
layer's output, so a stack of layers keeps one activation per layer). Two layers may run as
one node (:func:`scnn_pair`) that keeps the first layer's input and the second layer's output
and recomputes the first layer's output in the backward pass: for a first layer that widens
a one-channel edge flow this costs 1-2 % of the pair's FLOPs (more of its time) and saves one
activation (``SCNN.recompute_first_layer``).
Scratch buffers are chunk-sized; the only full-size allocations are the layer's output and
the input gradient.
The accumulation order is fixed, so results are deterministic for a given chunk size.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn._locality import MIN_EDGES

__all__ = ["FUSED_ACTIVATIONS", "chunk_samples", "prepare_operator", "scnn_layer", "scnn_pair"]

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


# ---------------------------------------------------------------------- operator cache
class Prepared:
    """An operator ready for the kernel: CSR, optionally scaled, with its transpose and
    its block-diagonal forms ``I_b (x) L`` per chunk size ``b``."""

    __slots__ = ("blocks", "csr", "csr_t", "lambda_max", "symmetric")

    def __init__(self, csr: Tensor, csr_t: Tensor, lambda_max: float | None):
        self.csr = csr
        self.csr_t = csr_t
        self.symmetric = csr_t is csr
        self.lambda_max = lambda_max
        self.blocks: dict[int, tuple[Tensor, Tensor]] = {}

    def block(self, b: int) -> tuple[Tensor, Tensor]:
        """``(I_b (x) L, I_b (x) L^T)`` as CSR ``[b*N, b*N]`` (cached)."""
        out = self.blocks.get(b)
        if out is None:
            bd = block_diagonal(self.csr, b)
            bd_t = bd if self.symmetric else block_diagonal(self.csr_t, b)
            out = self.blocks[b] = (bd, bd_t)
        return out


def _csr(L: Tensor) -> Tensor:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        if L.layout == torch.sparse_csr:
            return L
        return L.coalesce().to_sparse_csr()


def block_diagonal(csr: Tensor, b: int) -> Tensor:
    """``I_b (x) L``: ``b`` copies of the CSR matrix ``L`` on the diagonal, CSR ``[b*N, b*M]``."""
    crow, col, val = csr.crow_indices(), csr.col_indices(), csr.values()
    n, m = csr.shape
    nnz = val.numel()
    # int32 indices where they fit: MKL's sparse kernels take int32 and torch would
    # otherwise convert the int64 indices on every product
    if b * max(n, m, nnz) < 2**31 - 1 and csr.device.type == "cpu":
        crow, col = crow.int(), col.int()
    steps = torch.arange(b, device=crow.device, dtype=crow.dtype)
    crow_b = torch.cat(
        [
            (crow[:-1].unsqueeze(0) + steps.unsqueeze(1) * nnz).reshape(-1),
            crow.new_tensor([b * nnz]),
        ]
    )
    col_b = (col.unsqueeze(0) + steps.unsqueeze(1).to(col.dtype) * m).reshape(-1)
    val_b = val.repeat(b)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            crow_b, col_b, val_b, size=(b * n, b * m), check_invariants=False
        )


def to_scipy(L: Tensor) -> sp.csr_matrix:
    """A CPU float64 scipy CSR copy of a torch sparse operator."""
    coo = L.detach().to_sparse_coo().coalesce().cpu()
    idx = coo.indices().numpy()
    val = coo.values().double().numpy()
    return sp.csr_matrix((val, (idx[0], idx[1])), shape=tuple(coo.shape))


def largest_eigenvalue(m: sp.csr_matrix) -> float:
    """Largest eigenvalue of a symmetric matrix (the largest eigenvalue modulus otherwise)."""
    n = m.shape[0]
    if m.nnz == 0:
        return 0.0
    symmetric = abs(m - m.T).max() <= 1e-12 * abs(m).max()
    if n <= _DENSE_EIG_MAX:
        dense = m.toarray()
        if symmetric:
            return float(np.linalg.eigvalsh(dense)[-1])
        return float(np.abs(np.linalg.eigvals(dense)).max())
    if symmetric:
        val = spla.eigsh(m, k=1, which="LA", return_eigenvectors=False, tol=1e-8)
        return float(val[0])
    val = spla.eigs(m, k=1, which="LM", return_eigenvectors=False, tol=1e-8)
    return float(np.abs(val[0]))


def prepare_operator(laplacians: Laplacians, side: str, normalize: bool) -> Prepared:
    """The CSR form (and transpose) of the operator ``side`` (``"down"`` or ``"up"``) of
    ``laplacians``, scaled by ``1 / lambda_max`` if ``normalize``.

    Computed once per value (and in-place version) and kept on it
    (:attr:`Laplacians.cache <topo_contrastive.complex.Laplacians.cache>`). The operator's
    values are checked to be finite then (one ``isfinite`` over the sparse values, once per
    value: nothing on the hot path); its symmetry is checked unless ``laplacians`` says.

    Raises:
        ValueError: the operator holds NaN or inf values (the message names it).
    """
    cache, key = laplacians.cache, ("prepared", side, normalize)
    if key not in cache:
        cache[key] = _prepare(laplacians, side, normalize)
    return cache[key]


def _prepare(laplacians: Laplacians, side: str, normalize: bool) -> Prepared:
    L, name = getattr(laplacians, side), f"L_{side}"
    if normalize:
        from topo_contrastive.nn import _scnn_kernel as module  # patchable in tests

        base = prepare_operator(laplacians, side, False)  # checks the values first
        lam = module.largest_eigenvalue(to_scipy(L))
        if lam > 0:
            csr = base.csr * (1.0 / lam)
            csr_t = csr if base.symmetric else base.csr_t * (1.0 / lam)
        else:  # the zero operator (e.g. L_up of a complex without triangles)
            csr, csr_t = base.csr, base.csr_t
        return Prepared(_csr(csr), _csr(csr_t), lam)
    coo = L.detach().to_sparse_coo().coalesce()
    finite = torch.isfinite(coo.values())
    if not bool(finite.all()):
        bad = int((~finite).sum())
        at = coo.indices()[:, int((~finite).nonzero()[0, 0])].tolist()
        raise ValueError(
            f"`{name}` holds {bad} NaN or inf value(s) (first at row {at[0]}, column "
            f"{at[1]}); an operator must be finite (build it with "
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


def _spmm_into(out: Tensor, L: Tensor, X: Tensor, beta: float = 0.0) -> Tensor:
    """``out = beta * out + L @ X`` in place (``beta=0`` ignores ``out``'s old values,
    NaN included; ``torch.sparse.mm`` would allocate and copy)."""
    return torch.addmm(out, L, X, beta=beta, out=out)


# ---------------------------------------------------------------------- activations
#: From this many edges on, ``tanh`` of a CPU chunk runs as numpy's vectorised ``np.tanh``
#: in place (several times faster than ``torch.tanh`` on the CPU, equal to it within one
#: unit in the last place); below it ``torch.tanh``, so that results on the paper's
#: complexes stay bit-for-bit those of earlier versions (the same size as the locality
#: order's, which changes the summation order from there on).
NUMPY_TANH_MIN_EDGES = MIN_EDGES


def _act_forward_(y: Tensor, act: str, n1: int = 0) -> None:
    if act == "tanh":
        if (
            n1 >= NUMPY_TANH_MIN_EDGES
            and y.device.type == "cpu"
            and y.dtype in (torch.float32, torch.float64)
            and y.is_contiguous()
            and not y.requires_grad
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


# ---------------------------------------------------------------------- the layer
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


def _layer_forward(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    ops: tuple[tuple[Prepared, int], ...],
    act: str,
    b: int,
) -> Tensor:
    """``act(layer(x))`` ``[B*N1, C_out]`` for ``x`` ``[B, N1, C_in]`` contiguous, chunk by
    chunk of ``b`` samples (the forward pass of :class:`_SCNNLayer`, without autograd)."""
    B, n1, c_in = x.shape
    c_out = weight.shape[2]
    xf = x.view(B * n1, c_in)
    y = torch.empty(B * n1, c_out, dtype=x.dtype, device=x.device)
    horner = c_in >= c_out
    scratch: list[Tensor] = []
    for lo, hi in _chunks(B, b):
        bs = hi - lo
        rows = bs * n1
        xc, yc = xf[lo * n1 : hi * n1], y[lo * n1 : hi * n1]
        sides = [(*op.block(bs), k) for op, k in ops]
        if horner:
            _horner_forward(xc, yc, weight, bias, sides, scratch, rows)
        else:
            if not scratch or scratch[0].size(0) != rows:
                scratch[:] = [x.new_empty(rows, weight.shape[0], c_in)]
            z = _stacked_terms(xc, sides, scratch[0])
            w = weight.view(-1, c_out)
            if bias is None:
                torch.mm(z, w, out=yc)
            else:
                torch.addmm(bias, z, w, out=yc)
        _act_forward_(yc, act, n1)
    return y


def _layer_backward(
    x: Tensor,
    weight: Tensor,
    y: Tensor | None,
    grad: Tensor,
    ops: tuple[tuple[Prepared, int], ...],
    act: str,
    b: int,
    needs: tuple[bool, bool, bool],
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """``(dx [B, N1, C_in], dW, db)`` of one layer from its input ``x`` ``[B, N1, C_in]``,
    its output ``y`` (``None`` for the identity) and the output's gradient ``grad``;
    ``needs`` says which of the three to compute (``db`` only where the layer has a bias)."""
    B, n1, c_in = x.shape
    c_out = weight.shape[2]
    need_x, need_w, need_b = needs
    xf = x.view(B * n1, c_in)
    gf = grad.reshape(B * n1, c_out)
    if not gf.is_contiguous():
        gf = gf.contiguous()
    yf = y.view(B * n1, c_out) if y is not None else None
    grad_x = torch.empty_like(xf) if need_x else None
    grad_w = torch.zeros_like(weight) if need_w else None
    grad_b = gf.new_zeros(c_out) if need_b else None
    horner = c_in >= c_out
    w_flat = weight.view(-1, c_out)
    gw_flat = grad_w.view(-1, c_out) if grad_w is not None else None
    scratch: dict[str, Tensor] = {}

    def buf(name: str, rows: int, cols: int) -> Tensor:
        t = scratch.get(name)
        if t is None or t.shape != (rows, cols):
            t = scratch[name] = gf.new_empty(rows, cols)
        return t

    for lo, hi in _chunks(B, b):
        bs = hi - lo
        rows = bs * n1
        r = slice(lo * n1, hi * n1)
        xc = xf[r]
        g = gf[r]
        if act != "identity":
            g = _act_backward(g, yf[r], act, buf("g", rows, c_out))
        if grad_b is not None:
            grad_b += g.sum(0)
        sides = [(*op.block(bs), k) for op, k in ops]
        if horner:
            _horner_backward(
                xc, g, weight, grad_w, grad_x[r] if grad_x is not None else None, sides, buf, rows
            )
            continue
        # propagate-then-transform: Z = [x, Lx, ...] (recomputed), y = Z W + b
        if grad_w is not None:
            z3 = scratch.get("z")
            if z3 is None or z3.size(0) != rows:
                z3 = scratch["z"] = gf.new_empty(rows, weight.shape[0], c_in)
            z = _stacked_terms(xc, sides, z3)
            torch.addmm(gw_flat, z.t(), g, out=gw_flat)
        if grad_x is not None:
            dz = torch.mm(g, w_flat.t()).view(rows, weight.shape[0], c_in)  # [rows, T, C_in]
            gx = grad_x[r]
            gx.copy_(dz[:, 0])
            t = 1
            for _, L_t, k_max in sides:
                acc = dz[:, t + k_max - 1].contiguous()
                for k in range(k_max - 1, 0, -1):
                    acc = torch.mm(L_t, acc).add_(dz[:, t + k - 1])
                gx.add_(torch.mm(L_t, acc))
                t += k_max
    return (grad_x.view(B, n1, c_in) if grad_x is not None else None), grad_w, grad_b


class _SCNNLayer(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        ops: tuple[tuple[Prepared, int], ...],
        act: str,
        b: int,
    ) -> Tensor:
        B, n1, _ = x.shape
        y = _layer_forward(x, weight, bias, ops, act, b)
        ctx.save_for_backward(x, weight, y if act != "identity" else None)
        ctx.ops, ctx.act, ctx.b = ops, act, b
        ctx.has_bias = bias is not None
        return y.view(B, n1, weight.shape[2])

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        x, weight, y = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        needs = (need_x, need_w, need_b and ctx.has_bias)
        grads = _layer_backward(x, weight, y, grad, ctx.ops, ctx.act, ctx.b, needs)
        return (*grads, None, None, None)


class _SCNNPair(torch.autograd.Function):
    """Two layers in one autograd node that keeps the first layer's input and the second
    layer's output only: the first layer's output (the second's input) is recomputed in
    the backward pass, from its narrow input (e.g. one channel of edge flow) at a small
    share of the pair's cost. Values and gradients are those of two :class:`_SCNNLayer`
    nodes bit for bit (the same chunked functions, in the same order)."""

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        w1: Tensor,
        b1: Tensor | None,
        w2: Tensor,
        b2: Tensor | None,
        ops: tuple[tuple[Prepared, int], ...],
        act: str,
        b: int,
    ) -> Tensor:
        B, n1, _ = x.shape
        h = _layer_forward(x, w1, b1, ops, act, b).view(B, n1, w1.shape[2])
        y = _layer_forward(h, w2, b2, ops, act, b)
        h = None  # freed: the backward pass recomputes it
        ctx.save_for_backward(x, w1, b1, w2, y if act != "identity" else None)
        ctx.ops, ctx.act, ctx.b = ops, act, b
        ctx.has_bias = (b1 is not None, b2 is not None)
        return y.view(B, n1, w2.shape[2])

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        x, w1, b1, w2, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        B, n1, _ = x.shape
        h = _layer_forward(x, w1, b1, ctx.ops, ctx.act, ctx.b).view(B, n1, w1.shape[2])
        needs2 = (need[0] or need[1] or need[2], need[3], need[4] and ctx.has_bias[1])
        gh, gw2, gb2 = _layer_backward(h, w2, y, grad, ctx.ops, ctx.act, ctx.b, needs2)
        if gh is None:
            return None, None, None, gw2, gb2, None, None, None
        needs1 = (need[0], need[1], need[2] and ctx.has_bias[0])
        gx, gw1, gb1 = _layer_backward(x, w1, h, gh, ctx.ops, ctx.act, ctx.b, needs1)
        return gx, gw1, gb1, gw2, gb2, None, None, None


def _horner_forward(
    xc: Tensor,
    yc: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    sides: list[tuple[Tensor, Tensor, int]],
    scratch: list[Tensor],
    rows: int,
) -> None:
    """``yc = xc W_0 + b + sum_sides L (xc W_1 + L (xc W_2 + ...))`` for one chunk."""
    if bias is None:
        torch.mm(xc, weight[0], out=yc)
    else:
        torch.addmm(bias, xc, weight[0], out=yc)
    max_k = max([0, *(k for _, _, k in sides)])  # (torch.compile traces no max(default=))
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


def _horner_backward(
    xc: Tensor,
    g: Tensor,
    weight: Tensor,
    grad_w: Tensor | None,
    gx: Tensor | None,
    sides: list[tuple[Tensor, Tensor, int]],
    buf: Any,
    rows: int,
) -> None:
    """Gradients of one chunk for the Horner scheme (``dW`` accumulated, ``dX`` written)."""
    c_out = g.size(1)
    if grad_w is not None:
        torch.addmm(grad_w[0], xc.t(), g, out=grad_w[0])
    if gx is not None:
        torch.mm(g, weight[0].t(), out=gx)
    bufs = (buf("a", rows, c_out), buf("b", rows, c_out))
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


def scnn_layer(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    ops: tuple[tuple[Prepared, int], ...],
    act: str = "identity",
) -> Tensor:
    """``act(SCNNConv(x))`` for ``x`` ``[B, N1, C_in]``; returns ``[B, N1, C_out]`` contiguous.

    ``ops`` holds the active sides as ``(prepared operator, order K)``; ``act`` is one of
    :data:`FUSED_ACTIVATIONS`. Differentiable in ``x``, ``weight`` and ``bias``.
    """
    x, b = _chunked_input(x)
    return _SCNNLayer.apply(x, weight, bias, ops, act, b)


def _chunked_input(x: Tensor) -> tuple[Tensor, int]:
    """``x`` ``[B, N1, C]`` contiguous and its samples per chunk (:func:`chunk_samples`)."""
    if not x.is_contiguous():
        x = x.contiguous()
    return x, chunk_samples(x.shape[0], x.shape[1], x.device)


def scnn_pair(
    x: Tensor,
    first: tuple[Tensor, Tensor | None],
    second: tuple[Tensor, Tensor | None],
    ops: tuple[tuple[Prepared, int], ...],
    act: str = "identity",
) -> Tensor:
    """Two layers ``act(conv2(act(conv1(x))))`` on the same operators, ``first`` and
    ``second`` their ``(weight, bias)``: the values and gradients of two
    :func:`scnn_layer` calls, with the memory of one (the first layer's output is
    recomputed in the backward pass instead of kept)."""
    x, b = _chunked_input(x)
    return _SCNNPair.apply(x, *first, *second, ops, act, b)
