"""The simplicial convolution layer :class:`SCNNConv` (paper eq. 3, multi-channel)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import Parameter

from topo_contrastive._utils.checks import check_bool, check_int
from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn import _scnn_kernel as kernel
from topo_contrastive.nn._inputs import as_laplacians, edge_samples


class SCNNConv(torch.nn.Module):
    r"""The simplicial convolution layer of Yang, Isufi and Leus (2022), paper eq. (3):
    polynomials of the lower and upper Hodge Laplacians, one weight matrix per power,

    .. math::
        \mathbf{Y} = \mathbf{X}\mathbf{W}_0
        + \sum_{k=1}^{K_\downarrow} \mathbf{L}_\downarrow^k \mathbf{X}\mathbf{W}_{\downarrow,k}
        + \sum_{k=1}^{K_\uparrow} \mathbf{L}_\uparrow^k \mathbf{X}\mathbf{W}_{\uparrow,k}
        + \mathbf{1}\mathbf{b}^\top,
        \qquad
        \mathbf{L}_\downarrow = \mathbf{B}_1^\top\mathbf{B}_1,\;
        \mathbf{L}_\uparrow = \mathbf{B}_2\mathbf{B}_2^\top.

    The function of TopoModelX's ``SCNNLayer`` (the same output with
    ``conv.weight.data.copy_(tmx_layer.weight.permute(2, 0, 1))`` and no bias), computed
    with sparse operators, batched, in a fused kernel that ``torch.compile`` keeps whole;
    no gradient flows to the operators (docs/design.md §7.4).

    Args:
        in_channels (int): input features per edge :math:`C_{in}` (1 for an edge flow).
        out_channels (int): output features per edge :math:`C_{out}`.
        K_down (int): order :math:`K_\downarrow \ge 0` (``0``: ``L_down`` is ignored).
        K_up (int): order :math:`K_\uparrow \ge 0` (``0``: ``L_up`` is ignored, the
            paper's ``SCL_low``).
        bias (bool, optional): add a learnable bias :math:`\mathbf{b}`. (default: ``True``)
        normalize (bool, optional): divide each Laplacian by its largest eigenvalue
            (spectrum in :math:`[0, 1]`; the zero operator is kept). (default: ``False``)

    Attributes:
        weight (Parameter): ``[1 + K_down + K_up, C_in, C_out]``: :math:`\mathbf{W}_0`,
            then :math:`\mathbf{W}_{\downarrow,k}`, then :math:`\mathbf{W}_{\uparrow,k}`;
            Glorot-uniform over ``weight.view(-1, out_channels)``.
        bias (Parameter or None): ``[out_channels]``, initialised to zero.

    Shapes:
        - **input:** ``x`` :math:`[N_1, C_{in}]`, PyG's :math:`[B \cdot N_1, C_{in}]` with
          ``batch`` :math:`[B \cdot N_1]` (samples on one complex, ``data.batch_1``), a
          batch of complexes :math:`[\sum_b N_{1,b}, C_{in}]` with its
          :meth:`ComplexData.laplacians() <topo_contrastive.data.ComplexData.laplacians>`, or
          dense :math:`[B, N_1, C_{in}]`; ``laplacians`` a
          :class:`~topo_contrastive.complex.Laplacians` (prepared and checked once per
          value) or a pair ``(L_down, L_up)`` of sparse :math:`[N_1, N_1]` tensors.
        - **output:** the input's layout with :math:`C_{out}` channels, device and dtype.

    Raises:
        TypeError: (``__init__``) a non-integer size or order, a non-bool flag;
            (``forward``) ``x`` not a floating tensor, a dense operator, ``batch`` not an
            integer tensor.
        ValueError: (``__init__``) sizes below 1, negative orders; (``forward``) ``x``
            whose shape, dtype or device does not fit the layer or the operators; operators
            that are not square, require grad or hold NaN/inf; an operator missing for an
            active side; a ``batch`` that does not number contiguous blocks of ``N1`` rows.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> conv = SCNNConv(1, 8, K_down=2, K_up=2)
        >>> conv(torch.randn(16, 3, 1), ops.laplacians()).shape
        torch.Size([16, 3, 8])
    """

    #: Read the batch vector's values to check its numbering (skipped while
    #: ``torch.compile`` traces); set ``False`` on an instance to skip it.
    check_finite: bool = True

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
        sizes = (("in_channels", in_channels, 1), ("out_channels", out_channels, 1),
                 ("K_down", K_down, 0), ("K_up", K_up, 0))  # fmt: skip
        self.in_channels, self.out_channels, self.K_down, self.K_up = (
            int(check_int(val, name, low)) for name, val, low in sizes
        )
        check_bool(bias, "bias")
        self.normalize = check_bool(normalize, "normalize")
        terms = 1 + self.K_down + self.K_up
        self.weight = Parameter(torch.empty(terms, self.in_channels, self.out_channels))
        self.register_parameter("bias", Parameter(torch.empty(self.out_channels)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weights (over ``[(1+K_down+K_up) C_in, C_out]``), zero bias."""
        with torch.no_grad():
            torch.nn.init.xavier_uniform_(self.weight.view(-1, self.out_channels))
            if self.bias is not None:
                self.bias.zero_()

    @staticmethod
    def normalize_operator(L: Tensor) -> Tensor:
        """``L / lambda_max(L)``, a sparse tensor of ``L``'s layout, device and dtype (the
        zero operator unchanged).

        Raises:
            TypeError: ``L`` is not a sparse COO/CSR tensor.
            ValueError: ``L`` is not square, or holds NaN/inf values.
        """
        try:
            lam = kernel.prepare_operator(Laplacians(L, None), "down", True).lambda_max
        except (TypeError, ValueError) as err:  # named as this function's argument
            raise type(err)(str(err).replace("`L_down`", "`L`")) from None
        return L * (1.0 / lam) if lam else L

    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        """Apply the layer to ``x`` in any layout of the class (``batch``: the sample of
        each row of a 2-D ``x``, or ``None``); a side whose order is 0 may be ``None``."""
        L = as_laplacians(laplacians, (self.K_down, self.K_up))
        x3 = edge_samples(x, L, batch, self.in_channels, self.check_finite)  # [B, N1, C_in]
        y = kernel.scnn_layers(x3, [(self.weight, self.bias)], self._operators(L))
        return y.reshape(*x.shape[:-1], self.out_channels)

    def _operators(self, L: Laplacians | None) -> list[tuple[kernel.Prepared, int]]:
        """The kernel's active sides: ``(prepared operator, order)`` per Laplacian."""
        sides = (("down", self.K_down), ("up", self.K_up))
        return [(kernel.prepare_operator(L, side, self.normalize), k) for side, k in sides if k]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
            f"K_down={self.K_down}, K_up={self.K_up}, bias={self.bias is not None}, "
            f"normalize={self.normalize})"
        )
