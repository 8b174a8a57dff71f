"""The simplicial convolution layer :class:`SCNNConv` (paper eq. 3, multi-channel)."""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch import Tensor
from torch.nn import Parameter

__all__ = ["SCNNConv"]

# Below this size the largest eigenvalue is computed with a dense eigensolver
# (an explicitly small-matrix path; ARPACK needs k < n and is slow for tiny n).
_DENSE_EIG_MAX = 128


# ---------------------------------------------------------------------- operator cache
class _Prepared:
    """An operator ready for the layer: CSR, optionally scaled, with its transpose."""

    __slots__ = ("csr", "csr_t", "lambda_max")

    def __init__(self, csr: Tensor, csr_t: Tensor, lambda_max: float | None):
        self.csr = csr
        self.csr_t = csr_t
        self.lambda_max = lambda_max


# id(operator) -> (weakref to operator, operator._version, {normalize: _Prepared})
_CACHE: dict[int, tuple[weakref.ref, int, dict[bool, _Prepared]]] = {}


def _to_csr(L: Tensor) -> Tensor:
    if L.layout == torch.sparse_csr:
        return L
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return L.coalesce().to_sparse_csr()


def _to_scipy(L: Tensor) -> sp.csr_matrix:
    coo = L.detach().to_sparse_coo().coalesce().cpu()
    idx = coo.indices().numpy()
    val = coo.values().double().numpy()
    return sp.csr_matrix((val, (idx[0], idx[1])), shape=tuple(coo.shape))


def _largest_eigenvalue(m: sp.csr_matrix) -> float:
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


def _prepare(L: Tensor, normalize: bool) -> _Prepared:
    """CSR form (and transpose) of ``L``, scaled by ``1 / lambda_max`` if ``normalize``.

    Computed once per operator object (and in-place version) and cached; the cache
    entry dies with the operator.
    """
    key = id(L)
    entry = _CACHE.get(key)
    if entry is None or entry[0]() is not L or entry[1] != L._version:
        ref = weakref.ref(L, lambda _, key=key: _CACHE.pop(key, None))
        entry = (ref, L._version, {})
        _CACHE[key] = entry
    per_flag = entry[2]
    if normalize not in per_flag:
        if normalize:
            lam = _largest_eigenvalue(_to_scipy(L))
            base = _prepare(L, False)
            if lam > 0:
                csr = base.csr * (1.0 / lam)
                csr_t = csr if base.csr_t is base.csr else base.csr_t * (1.0 / lam)
            else:  # the zero operator (e.g. L_up of a complex without triangles)
                csr, csr_t = base.csr, base.csr_t
            per_flag[True] = _Prepared(csr, csr_t, lam)
        else:
            coo = L.detach().to_sparse_coo().coalesce()
            coo_t = coo.t().coalesce()
            csr = _to_csr(L.detach())
            symmetric = torch.equal(coo.indices(), coo_t.indices()) and torch.equal(
                coo.values(), coo_t.values()
            )
            csr_t = csr if symmetric else _to_csr(coo_t)
            per_flag[False] = _Prepared(csr, csr_t, None)
    return per_flag[normalize]


class _SparseMatmul(torch.autograd.Function):
    """``add + L @ X`` for a constant sparse ``L`` (``add`` optional, fused into one
    ``addmm``); the backward uses the cached ``L^T`` (``torch.sparse.mm``'s own
    backward transposes the CSR operator on every call)."""

    @staticmethod
    def forward(ctx: Any, L: Tensor, L_t: Tensor, X: Tensor, add: Tensor | None) -> Tensor:
        ctx.L_t = L_t
        if add is None:
            return torch.sparse.mm(L, X)
        return torch.addmm(add, L, X)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, None, Tensor | None, Tensor | None]:
        grad_x = torch.sparse.mm(ctx.L_t, grad.contiguous()) if ctx.needs_input_grad[2] else None
        grad_add = grad if ctx.needs_input_grad[3] else None
        return None, None, grad_x, grad_add


def _spmm(op: _Prepared, X: Tensor, add: Tensor | None = None) -> Tensor:
    """``add + L @ X`` with ``L`` the prepared operator."""
    return _SparseMatmul.apply(op.csr, op.csr_t, X, add)


# ---------------------------------------------------------------------- the layer
class SCNNConv(torch.nn.Module):
    r"""Simplicial convolution layer of Yang, Isufi and Leus (2022), paper eq. (3).

    Filters edge flows with polynomials of the lower and upper Hodge Laplacians,
    one weight matrix per power (multi-channel form of the paper's simplicial
    filter :math:`\epsilon\mathbf{I} + \sum_k \alpha_k \mathbf{L}_\downarrow^k +
    \sum_k \beta_k \mathbf{L}_\uparrow^k`):

    .. math::
        \mathbf{Y} = \mathbf{X}\mathbf{W}_0
        + \sum_{k=1}^{K_\downarrow} \mathbf{L}_\downarrow^k \mathbf{X}\mathbf{W}_{\downarrow,k}
        + \sum_{k=1}^{K_\uparrow} \mathbf{L}_\uparrow^k \mathbf{X}\mathbf{W}_{\uparrow,k}
        + \mathbf{1}\mathbf{b}^\top,
        \qquad
        \mathbf{L}_\downarrow = \mathbf{B}_1^\top\mathbf{B}_1,\;
        \mathbf{L}_\uparrow = \mathbf{B}_2\mathbf{B}_2^\top.

    With ``normalize=True`` each Laplacian is first divided by its largest
    eigenvalue, :math:`\tilde{\mathbf{L}} = \mathbf{L} / \lambda_{\max}(\mathbf{L})`
    (spectrum in :math:`[0, 1]`, so high powers stay bounded); the zero operator is
    left as is. The eigenvalue is computed once per operator object (scipy ARPACK
    on a CPU copy) and cached together with the operator's CSR form; the cache
    entry is dropped when the operator is garbage-collected or modified in place.
    Use :meth:`normalize_operator` to pre-scale an operator explicitly.

    This is the function of TopoModelX's ``SCNNLayer`` (same output with the same
    weights: ``conv.weight.data.copy_(tmx_layer.weight.permute(2, 0, 1))``, no
    bias), computed with sparse operators only (no dense identity), on the input's
    device and dtype, and batched: many signals on one shared complex go through
    one sparse product per Laplacian power
    (:math:`[N_1, N_1] \times [N_1, B \cdot C]`) and one dense product with the
    stacked weights. No gradient flows to the operators (they are constants).

    Args:
        in_channels (int): input features per edge :math:`C_{in}` (1 for a scalar
            edge flow).
        out_channels (int): output features per edge :math:`C_{out}`.
        K_down (int): order :math:`K_\downarrow \ge 0` of the lower-Laplacian
            polynomial; ``0`` switches the lower side off (``L_down`` is then ignored).
        K_up (int): order :math:`K_\uparrow \ge 0` of the upper-Laplacian
            polynomial; ``0`` switches the upper side off (``L_up`` is then ignored;
            the ``SCL_low`` ablation of the paper).
        bias (bool): add a learnable bias :math:`\mathbf{b}` (default ``True``).
        normalize (bool): divide each Laplacian by its largest eigenvalue
            (default ``False``).

    Attributes:
        weight (Parameter): ``[1 + K_down + K_up, in_channels, out_channels]``;
            ``weight[0]`` is :math:`\mathbf{W}_0`, ``weight[k]`` for
            ``1 <= k <= K_down`` is :math:`\mathbf{W}_{\downarrow,k}` and
            ``weight[K_down + k]`` is :math:`\mathbf{W}_{\uparrow,k}`. Initialised
            Glorot-uniform over the stacked matrix
            ``weight.view(-1, out_channels)``.
        bias (Parameter or None): ``[out_channels]``, initialised to zero.

    Shapes:
        - **input:** edge features ``x`` of shape :math:`[N_1, C_{in}]` (one signal),
          :math:`[B, N_1, C_{in}]` (``B`` signals on the same complex), or
          :math:`[B \cdot N_1, C_{in}]` with ``batch`` :math:`[B \cdot N_1]` (a PyG
          mini-batch of flows on one shared complex, samples one after the other,
          e.g. ``batch = data.x_1_batch`` from ``DataLoader(..., follow_batch=["x_1"])``);
          ``L_down``, ``L_up``: sparse :math:`[N_1, N_1]` (COO or CSR, as returned
          by :meth:`topo_contrastive.SimplicialOperators.laplacians`), on ``x``'s
          device and dtype.
        - **output:** the input's layout with :math:`C_{out}` channels:
          :math:`[N_1, C_{out}]`, :math:`[B, N_1, C_{out}]` or
          :math:`[B \cdot N_1, C_{out}]`, same device and dtype as ``x``.

    Raises:
        ValueError: (``__init__``) non-positive channel numbers or negative orders.
        TypeError: (``__init__``) a non-integer size/order or a non-bool flag.

    Example:
        >>> ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> L_down, L_up = ops.laplacians()
        >>> conv = SCNNConv(1, 8, K_down=2, K_up=2)
        >>> conv(torch.randn(16, 3, 1), L_down, L_up).shape
        torch.Size([16, 3, 8])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        K_down: int,
        K_up: int,
        bias: bool = True,
        normalize: bool = False,
    ) -> None:
        super().__init__()
        for name, val, low in (
            ("in_channels", in_channels, 1),
            ("out_channels", out_channels, 1),
            ("K_down", K_down, 0),
            ("K_up", K_up, 0),
        ):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
                raise TypeError(f"`{name}` must be an int, got {type(val).__name__} {val!r}")
            if val < low:
                raise ValueError(f"`{name}` must be >= {low}, got {val}")
        for name, val in (("bias", bias), ("normalize", normalize)):
            if not isinstance(val, bool):
                raise TypeError(f"`{name}` must be a bool, got {type(val).__name__} {val!r}")
        self.in_channels = int(in_channels)
        self.out_channels = int(out_channels)
        self.K_down = int(K_down)
        self.K_up = int(K_up)
        self.normalize = normalize
        num_terms = 1 + self.K_down + self.K_up
        self.weight = Parameter(torch.empty(num_terms, self.in_channels, self.out_channels))
        if bias:
            self.bias = Parameter(torch.empty(self.out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weights (over the stacked ``[(1+K_down+K_up) C_in, C_out]``
        matrix), zero bias."""
        with torch.no_grad():
            torch.nn.init.xavier_uniform_(self.weight.view(-1, self.out_channels))
            if self.bias is not None:
                self.bias.zero_()

    @staticmethod
    def normalize_operator(L: Tensor) -> Tensor:
        r"""Return ``L / lambda_max(L)`` as a sparse tensor of ``L``'s layout, device, dtype.

        The zero operator is returned unchanged. The eigenvalue is cached per
        operator object (shared with layers built with ``normalize=True``).

        Args:
            L: sparse COO or CSR square operator.

        Raises:
            TypeError: ``L`` is not a torch sparse COO/CSR tensor.
            ValueError: ``L`` is not square.
        """
        _check_operator_type(L, "L")
        if L.dim() != 2 or L.size(0) != L.size(1):
            raise ValueError(f"`L` must be a square [N, N] operator, got shape {tuple(L.shape)}")
        lam = _prepare(L, True).lambda_max
        if not lam:
            return L
        return L * (1.0 / lam)

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        x: Tensor,
        L_down: Tensor | None,
        L_up: Tensor | None,
        batch: Tensor | None = None,
    ) -> Tensor:
        """Apply the layer.

        Args:
            x: edge features ``[N1, C_in]``, ``[B, N1, C_in]`` or ``[B*N1, C_in]``
                (then with ``batch``); floating dtype.
            L_down: lower Laplacian, sparse ``[N1, N1]``; may be ``None`` if ``K_down == 0``.
            L_up: upper Laplacian, sparse ``[N1, N1]``; may be ``None`` if ``K_up == 0``.
            batch: ``[B*N1]`` sample index of each row of a 2-D ``x`` (PyG mini-batch
                of flows on one shared complex, samples contiguous and in order), or
                ``None`` (default).

        Returns:
            Output features in the layout of ``x`` with ``out_channels`` channels.

        Raises:
            TypeError: ``x`` is not a floating tensor; an operator is dense, not a
                tensor, or ``batch`` is not an integer tensor.
            ValueError: wrong number of dimensions or channels in ``x``; an operator
                that is not ``[N1, N1]``, sits on another device, has another dtype
                or requires grad; a missing operator for an active side; a
                ``batch`` that does not describe contiguous blocks of ``N1`` rows.
        """
        x3, layout = self._as_batched(x, L_down, L_up, batch)
        out = self._propagate(x3, L_down, L_up)  # [B, N1, C_out]
        if layout == "single":
            return out[0].contiguous()  # [N1, C_out]
        if layout == "pyg":
            return out.reshape(-1, self.out_channels)  # [B*N1, C_out]
        return out.contiguous()  # [B, N1, C_out]

    def _as_batched(
        self,
        x: Tensor,
        L_down: Tensor | None,
        L_up: Tensor | None,
        batch: Tensor | None,
    ) -> tuple[Tensor, str]:
        """Validate the inputs and view ``x`` as ``[B, N1, C_in]``."""
        if not isinstance(x, Tensor):
            raise TypeError(f"`x` must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"`x` must be a floating tensor, got dtype {x.dtype}")
        if x.dim() not in (2, 3):
            raise ValueError(
                "`x` must have shape [N1, C], [B, N1, C] or [B*N1, C] (with `batch`), got "
                f"shape {tuple(x.shape)}"
            )
        if x.size(-1) != self.in_channels:
            raise ValueError(
                f"`x` has {x.size(-1)} features in its last dimension (shape "
                f"{tuple(x.shape)}), but the layer has in_channels={self.in_channels}"
            )
        n1 = None
        for name, L, k in (("L_down", L_down, self.K_down), ("L_up", L_up, self.K_up)):
            if k == 0:
                continue
            if L is None:
                raise ValueError(f"`{name}` is None but the layer has {name[2:]} order {k} > 0")
            _check_operator_type(L, name)
            if L.dim() != 2 or L.size(0) != L.size(1):
                raise ValueError(
                    f"`{name}` must be a square [N1, N1] operator, got shape {tuple(L.shape)}"
                )
            if n1 is not None and L.size(0) != n1:
                raise ValueError(
                    f"`L_down` is [{n1}, {n1}] but `L_up` is {list(L.shape)}: both must be "
                    "[N1, N1] on the same complex"
                )
            n1 = L.size(0)
            if L.device != x.device:
                raise ValueError(f"`{name}` is on {L.device} but `x` is on {x.device}")
            if L.dtype != x.dtype:
                raise ValueError(
                    f"`{name}` has dtype {L.dtype} but `x` has dtype {x.dtype}; build the "
                    "operators with the input's dtype (e.g. ops.laplacians(dtype=x.dtype))"
                )
            if L.requires_grad:
                raise ValueError(
                    f"`{name}` requires grad; SCNNConv treats the operators as constants"
                )
        if n1 == 0:
            raise ValueError("the operators are [0, 0]: the complex has no edges")
        if x.dim() == 3:
            if batch is not None:
                raise ValueError("`batch` is only used with a 2-D `x` of shape [B*N1, C]")
            if n1 is not None and x.size(1) != n1:
                raise ValueError(
                    f"`x` has {x.size(1)} edges (shape {tuple(x.shape)}) but the operators "
                    f"are [{n1}, {n1}]"
                )
            return x, "batched"
        rows = x.size(0)
        if batch is None:
            if n1 is not None and rows != n1:
                hint = "; for a PyG mini-batch of flows pass `batch`" if rows % n1 == 0 else ""
                raise ValueError(
                    f"`x` has {rows} rows (shape {tuple(x.shape)}) but the operators are "
                    f"[{n1}, {n1}]{hint}"
                )
            return x.unsqueeze(0), "single"
        if (
            not isinstance(batch, Tensor)
            or batch.dtype in (torch.bool,)
            or (batch.is_floating_point() or batch.is_complex())
        ):
            raise TypeError(f"`batch` must be an integer tensor, got {_describe(batch)}")
        if batch.dim() != 1 or batch.numel() != rows:
            raise ValueError(
                f"`batch` must have shape [{rows}] (one entry per row of `x`), got "
                f"shape {tuple(batch.shape)}"
            )
        if n1 is None:  # both sides off: no operator gives N1, take it from `batch`
            num = int(batch[-1].item()) + 1 if rows else 1
            n1 = rows // num if num > 0 and rows % num == 0 else -1
            if n1 < 0:
                raise ValueError(
                    f"`batch` must be [0]*N1 + [1]*N1 + ... (equal, contiguous samples), "
                    f"but its last entry says {num} samples for {rows} rows"
                )
        if rows % n1 != 0:
            raise ValueError(
                f"`x` has {rows} rows, not a multiple of N1={n1} (the operators' size); "
                "a PyG batch must hold whole flows on the same complex"
            )
        num = rows // n1
        expected = torch.arange(num, device=batch.device).view(num, 1)
        if not bool((batch.view(num, n1) == expected).all()):
            raise ValueError(
                f"`batch` must be [0]*N1 + [1]*N1 + ... (samples of N1={n1} edges, contiguous "
                "and in order), as PyG collates flows on one shared complex"
            )
        return x.view(num, n1, self.in_channels), "pyg"

    def _propagate(self, x: Tensor, L_down: Tensor | None, L_up: Tensor | None) -> Tensor:
        """``[B, N1, C_in] -> [B, N1, C_out]`` (output a permuted view of ``[N1, B, C_out]``)."""
        B, n1, c_in = x.shape
        c_out = self.out_channels
        sides = []
        if self.K_down:
            sides.append((_prepare(L_down, self.normalize), self.K_down))
        if self.K_up:
            sides.append((_prepare(L_up, self.normalize), self.K_up))
        weight = self.weight
        bias = self.bias
        # Edge-major layout: each Laplacian power is one sparse product for the batch.
        xe = x.transpose(0, 1).reshape(n1, B * c_in)  # [N1, B*C_in] (free if x came from us)
        if c_in < c_out:
            # Propagate, then transform: the powers act on the narrower input.
            terms = [xe]
            for op, k_max in sides:
                p = xe
                for _ in range(k_max):
                    p = _spmm(op, p)  # [N1, B*C_in]
                    terms.append(p)
            z = torch.stack([t.view(n1, B, c_in) for t in terms], dim=2)  # [N1, B, K+1, C_in]
            z = z.view(n1 * B, -1)
            w = weight.view(-1, c_out)  # [(K+1)*C_in, C_out]
            y = z @ w if bias is None else torch.addmm(bias, z, w)  # [N1*B, C_out]
            y = y.view(n1, B * c_out)
        else:
            # Transform, then propagate (Horner's scheme): the powers act on the
            # narrower output and only x is kept for the backward pass.
            #   L X W_1 + L^2 X W_2 + ... = L (X W_1 + L (X W_2 + ...))
            xf = xe.view(n1 * B, c_in)
            y = xf @ weight[0] if bias is None else torch.addmm(bias, xf, weight[0])
            y = y.view(n1, B * c_out)  # [N1, B*C_out]
            offset = 1
            for op, k_max in sides:
                acc = (xf @ weight[offset + k_max - 1]).view(n1, B * c_out)
                for k in range(k_max - 1, 0, -1):
                    acc = _spmm(op, acc, add=(xf @ weight[offset + k - 1]).view(n1, B * c_out))
                y = _spmm(op, acc, add=y)
                offset += k_max
        return y.view(n1, B, c_out).transpose(0, 1)  # [B, N1, C_out]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
            f"K_down={self.K_down}, K_up={self.K_up}, bias={self.bias is not None}, "
            f"normalize={self.normalize})"
        )


def _describe(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return f"a tensor of dtype {obj.dtype} and shape {tuple(obj.shape)}"
    return type(obj).__name__


def _check_operator_type(L: Any, name: str) -> None:
    if not isinstance(L, Tensor):
        raise TypeError(
            f"`{name}` must be a torch sparse tensor (COO or CSR), got {type(L).__name__}; "
            "use SimplicialOperators.laplacians() or .operator(...)"
        )
    if L.layout == torch.strided:
        raise TypeError(
            f"`{name}` is a dense tensor; SCNNConv needs a sparse operator (COO or CSR), "
            f"e.g. `{name}.to_sparse()` or SimplicialOperators.laplacians()"
        )
    if L.layout not in (torch.sparse_coo, torch.sparse_csr):
        raise TypeError(f"`{name}` must be sparse COO or CSR, got layout {L.layout}")
