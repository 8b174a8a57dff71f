"""The simplicial convolution layer :class:`SCNNConv` (paper eq. 3, multi-channel)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import Parameter

from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn._inputs import as_laplacians, edge_samples
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
        - **input:** ``x`` :math:`[N_1, C_{in}]` (one sample), :math:`[B \cdot N_1, C_{in}]`
          with ``batch`` :math:`[B \cdot N_1]` (a PyG batch of flows on one complex, e.g.
          ``data.batch_1``), :math:`[\sum_b N_{1,b}, C_{in}]` (a batch of different
          complexes, with their block-diagonal operators from
          :meth:`ComplexData.laplacians() <topo_contrastive.data.ComplexData.laplacians>`), or
          densely :math:`[B, N_1, C_{in}]`; ``laplacians`` a
          :class:`~topo_contrastive.complex.Laplacians` (from
          :meth:`topo_contrastive.ComplexOperators.laplacians`) or a pair
          ``(L_down, L_up)`` of sparse :math:`[N_1, N_1]` tensors.
        - **output:** the input's layout with :math:`C_{out}` channels, device and dtype.

    Raises:
        ValueError: (``__init__``) non-positive channel numbers or negative orders.
        TypeError: (``__init__``) a non-integer size/order or a non-bool flag.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> conv = SCNNConv(1, 8, K_down=2, K_up=2)
        >>> conv(torch.randn(16, 3, 1), ops.laplacians()).shape
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

        The zero operator is returned unchanged.

        Args:
            L: sparse COO or CSR square operator.

        Raises:
            TypeError: ``L`` is not a torch sparse COO/CSR tensor.
            ValueError: ``L`` is not square, or holds NaN/inf values.
        """
        try:
            lam = prepare_operator(Laplacians(L, None), "down", True).lambda_max
        except (TypeError, ValueError) as err:  # named as this function's argument
            raise type(err)(str(err).replace("`L_down`", "`L`")) from None
        if not lam:
            return L
        return L * (1.0 / lam)

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        """Apply the layer.

        Args:
            x: edge features ``[N1, C_in]``, ``[B*N1, C_in]`` (then with ``batch``),
                ``[sum N1, C_in]`` on a batch of complexes, or ``[B, N1, C_in]``.
            laplacians: the operators: a :class:`~topo_contrastive.complex.Laplacians`
                (prepared once per value) or a pair ``(L_down, L_up)`` of sparse ``[N1, N1]``
                tensors (prepared on every call); a side whose order is 0 may be ``None``.
            batch: ``[B*N1]`` sample index of each row of a 2-D ``x`` (a PyG mini-batch of
                flows on one shared complex, samples contiguous and in order), or ``None``.

        Returns:
            Output features in the layout of ``x`` with ``out_channels`` channels.

        Raises:
            TypeError: ``x`` is not a floating tensor; an operator is dense or not a
                tensor; ``batch`` is not an integer tensor.
            ValueError: wrong number of dimensions or channels in ``x``; operators that are
                not ``[N1, N1]``, sit on another device, have another dtype, require grad
                or hold NaN/inf values (checked once per ``Laplacians`` value); a missing
                operator for an active side; a ``batch`` that does not describe contiguous
                blocks of ``N1`` rows.
        """
        L = as_laplacians(laplacians, (self.K_down, self.K_up))
        x3 = edge_samples(x, L, batch, self.in_channels)  # [B, N1, C_in]
        return self._propagate(x3, L).reshape(*x.shape[:-1], self.out_channels)

    def _propagate(self, x: Tensor, laplacians: Laplacians | None, act: str = "identity") -> Tensor:
        """``[B, N1, C_in] -> act(layer) [B, N1, C_out]`` (contiguous), with ``act`` one of
        the kernel's fused activations (see :mod:`topo_contrastive.nn._scnn_kernel`)."""
        if act not in FUSED_ACTIVATIONS:  # pragma: no cover - callers check
            raise ValueError(f"`act` must be one of {FUSED_ACTIVATIONS}, got {act!r}")
        return scnn_layer(x, self.weight, self.bias, self._operators(laplacians), act)

    def _operators(self, laplacians: Laplacians | None) -> tuple[tuple[Prepared, int], ...]:
        """The kernel's active sides: ``(prepared operator, order)`` per Laplacian."""
        sides = (("down", self.K_down), ("up", self.K_up))
        return tuple(
            (prepare_operator(laplacians, side, self.normalize), k) for side, k in sides if k
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
            f"K_down={self.K_down}, K_up={self.K_up}, bias={self.bias is not None}, "
            f"normalize={self.normalize})"
        )
