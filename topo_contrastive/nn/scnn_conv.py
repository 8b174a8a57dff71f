"""The simplicial convolution layer :class:`SCNNConv` (paper eq. 3, multi-channel)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn import Parameter

from topo_contrastive._layout import (
    check_batch_vector,
    check_num_simplices,
    rows_to_samples,
    samples_to_rows,
)
from topo_contrastive.nn._complexes import check_complexes_batch
from topo_contrastive.nn._scnn_kernel import (
    FUSED_ACTIVATIONS,
    Prepared,
    prepare_operator,
    scnn_layer,
)
from topo_contrastive.utils.checks import check_bool, check_int

__all__ = ["SCNNConv"]


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

    With ``normalize=True`` each Laplacian is first divided by its largest eigenvalue
    (spectrum in :math:`[0, 1]`; the zero operator is left as is; see
    :meth:`normalize_operator`). The same function as TopoModelX's ``SCNNLayer`` (same
    output with ``conv.weight.data.copy_(tmx_layer.weight.permute(2, 0, 1))``, no bias),
    computed with sparse operators, batched, on the input's device and dtype; no gradient
    flows to the operators. Implementation notes: docs/design.md §7.4.

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
            ``weight[K_down + k]`` is :math:`\mathbf{W}_{\uparrow,k}`; Glorot-uniform over
            ``weight.view(-1, out_channels)``.
        bias (Parameter or None): ``[out_channels]``, initialised to zero.

    Shapes:
        - **input:** ``x`` :math:`[N_1, C_{in}]`, :math:`[B, N_1, C_{in}]` (signals on one
          complex) or :math:`[B \cdot N_1, C_{in}]` with ``batch`` :math:`[B \cdot N_1]`
          (a PyG batch, e.g. ``data.batch_1``); a batch of different complexes is
          :math:`[\sum_b N_{1,b}, C_{in}]` with block-diagonal operators
          (:meth:`ComplexData.laplacians() <topo_contrastive.data.ComplexData.laplacians>`);
          ``L_down``, ``L_up`` sparse :math:`[N_1, N_1]` (COO or CSR, from
          :meth:`topo_contrastive.ComplexOperators.laplacians`).
        - **output:** the input's layout with :math:`C_{out}` channels, device and dtype.

    Raises:
        ValueError: (``__init__``) non-positive channel numbers or negative orders.
        TypeError: (``__init__``) a non-integer size/order or a non-bool flag.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
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
            check_int(val, name, low)
        for name, val in (("bias", bias), ("normalize", normalize)):
            check_bool(val, name)
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
            ValueError: ``L`` is not square, or holds NaN/inf values.
        """
        _check_operator_type(L, "L")
        if L.dim() != 2 or L.size(0) != L.size(1):
            raise ValueError(f"`L` must be a square [N, N] operator, got shape {tuple(L.shape)}")
        lam = prepare_operator(L, True, "L").lambda_max
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
                that is not ``[N1, N1]``, sits on another device, has another dtype,
                requires grad or holds NaN/inf values (checked once per operator
                object); a missing operator for an active side; a
                ``batch`` that does not describe contiguous blocks of ``N1`` rows.
        """
        x3, layout = self._as_batched(x, L_down, L_up, batch)
        out = self._propagate(x3, L_down, L_up)  # [B, N1, C_out]
        if layout == "single":
            return out[0]  # [N1, C_out]
        if layout == "pyg":
            return samples_to_rows(out)  # [B*N1, C_out]
        return out  # [B, N1, C_out]

    def _as_batched(
        self,
        x: Tensor,
        L_down: Tensor | None,
        L_up: Tensor | None,
        batch: Tensor | None,
    ) -> tuple[Tensor, str]:
        """Validate the inputs and view ``x`` as ``[B, N1, C_in]``; the layout is
        ``"single"`` (``[N1, C]``), ``"batched"`` (``[B, N1, C]``) or ``"pyg"``."""
        _check_features(x, self.in_channels)
        n1 = _operator_size(x, (("L_down", L_down, self.K_down), ("L_up", L_up, self.K_up)))
        if x.dim() == 3:
            if batch is not None:
                raise ValueError("`batch` is only used with a 2-D `x` of shape [B*N1, C]")
            if n1 is not None:
                check_num_simplices(x, 1, n1, 1, "x", f"the operators are [{n1}, {n1}]")
            return x, "batched"
        rows = x.size(0)
        if batch is not None and n1 is not None and rows == n1:
            # a batch of different complexes: one block-diagonal complex [sum N1, sum N1]
            active = tuple(
                L for L, k in ((L_down, self.K_down), (L_up, self.K_up)) if k > 0
            )
            check_complexes_batch(batch, rows, active)
            return x.unsqueeze(0), "pyg"
        if batch is None:
            if n1 is not None and rows != n1:
                hint = "; for a PyG mini-batch of flows pass `batch`" if rows % n1 == 0 else ""
                raise ValueError(
                    f"`x` has {rows} rows (shape {tuple(x.shape)}) but the operators are "
                    f"[{n1}, {n1}]{hint}"
                )
            return x.unsqueeze(0), "single"
        return _pyg_rows_as_samples(x, batch, n1), "pyg"

    def _propagate(
        self,
        x: Tensor,
        L_down: Tensor | None,
        L_up: Tensor | None,
        act: str = "identity",
    ) -> Tensor:
        """``[B, N1, C_in] -> act(layer) [B, N1, C_out]`` (contiguous), with ``act`` one of
        the kernel's fused activations (see :mod:`topo_contrastive.nn._scnn_kernel`)."""
        if act not in FUSED_ACTIVATIONS:  # pragma: no cover - callers check
            raise ValueError(f"`act` must be one of {FUSED_ACTIVATIONS}, got {act!r}")
        return scnn_layer(x, self.weight, self.bias, self._operators(L_down, L_up), act)

    def _operators(
        self, L_down: Tensor | None, L_up: Tensor | None
    ) -> tuple[tuple[Prepared, int], ...]:
        """The kernel's active sides: ``(prepared operator, order)`` per Laplacian."""
        ops = []
        if self.K_down:
            ops.append((prepare_operator(L_down, self.normalize, "L_down"), self.K_down))
        if self.K_up:
            ops.append((prepare_operator(L_up, self.normalize, "L_up"), self.K_up))
        return tuple(ops)

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
            "use ComplexOperators.laplacians() or .operator(...)"
        )
    if L.layout == torch.strided:
        raise TypeError(
            f"`{name}` is a dense tensor; SCNNConv needs a sparse operator (COO or CSR), "
            f"e.g. `{name}.to_sparse()` or ComplexOperators.laplacians()"
        )
    if L.layout not in (torch.sparse_coo, torch.sparse_csr):
        raise TypeError(f"`{name}` must be sparse COO or CSR, got layout {L.layout}")


def _check_features(x: Any, in_channels: int) -> None:
    """``x`` is a floating tensor ``[N1, C]``, ``[B, N1, C]`` or ``[B*N1, C]`` with
    ``C = in_channels``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"`x` must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"`x` must be a floating tensor, got dtype {x.dtype}")
    if x.dim() not in (2, 3):
        raise ValueError(
            "`x` must have shape [N1, C], [B, N1, C] or [B*N1, C] (with `batch`), got "
            f"shape {tuple(x.shape)}"
        )
    if x.size(-1) != in_channels:
        raise ValueError(
            f"`x` has {x.size(-1)} features in its last dimension (shape "
            f"{tuple(x.shape)}), but the layer has in_channels={in_channels}"
        )


def _operator_size(x: Tensor, sides: tuple[tuple[str, Any, int], ...]) -> int | None:
    """``N1`` of the operators of the active sides (``(name, L, order)`` with ``order > 0``),
    checked against each other and against ``x`` (device, dtype); ``None`` when no side is
    active."""
    n1 = None
    for name, L, k in sides:
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
    return n1


def _pyg_rows_as_samples(x: Tensor, batch: Any, n1: int | None) -> Tensor:
    """A PyG mini-batch ``x [B*N1, C]`` with its ``batch`` vector as ``[B, N1, C]``; ``N1``
    from ``batch`` when no operator gives it."""
    rows = x.size(0)
    if (
        not isinstance(batch, Tensor)
        or batch.dtype in (torch.bool,)
        or (batch.is_floating_point() or batch.is_complex())
    ):
        raise TypeError(f"`batch` must be an integer tensor, got {_describe(batch)}")
    if n1 is None:  # both sides off: no operator gives N1, take it from `batch`
        num = int(batch[-1].item()) + 1 if batch.dim() == 1 and rows else 1
        n1 = rows // num if num > 0 and rows % num == 0 else -1
        if n1 < 0:
            raise ValueError(
                f"`batch` must be [0]*N1 + [1]*N1 + ... (equal, contiguous samples), "
                f"but its last entry says {num} samples for {rows} rows"
            )
    x3 = rows_to_samples(
        x, n1, of=f"N1={n1} (the operators' size); a PyG batch must hold whole flows on "
        "the same complex"
    )  # [B, N1, C_in]
    check_batch_vector(batch, rows, n1)
    return x3
