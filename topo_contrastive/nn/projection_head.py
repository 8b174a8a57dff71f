"""The projection head :math:`g` of the contrastive pipeline (paper Fig. 1, eq. 4)."""

from __future__ import annotations

import torch
from torch import Tensor

from topo_contrastive._utils.checks import check_int


class ProjectionHead(torch.nn.Module):
    r"""Two-layer MLP mapping an embedding :math:`\mathbf{h}` to the representation
    :math:`\mathbf{z} = g(\mathbf{h})` of the contrastive loss (paper eq. 4; as in SimCLR,
    downstream tasks use :math:`\mathbf{h}`).

    .. math::
        \mathbf{z} = \mathbf{W}_2\, \mathrm{ReLU}(\mathbf{W}_1 \mathbf{h} + \mathbf{b}_1)
        + \mathbf{b}_2

    Args:
        in_channels (int): size of :math:`\mathbf{h}`.
        hidden_channels (int): width of the hidden layer.
        out_channels (int): size of :math:`\mathbf{z}`.

    Shapes:
        - **input:** :math:`[*, C_{in}]`, floating.
        - **output:** :math:`[*, C_{out}]`, the input's device and dtype.

    Raises:
        TypeError: (``__init__``) a non-integer size; (``forward``) ``h`` not floating.
        ValueError: (``__init__``) a size below 1; (``forward``) a last dimension of ``h``
            other than ``in_channels``.
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int) -> None:
        super().__init__()
        sizes = (("in_channels", in_channels), ("hidden_channels", hidden_channels),
                 ("out_channels", out_channels))  # fmt: skip
        self.in_channels, self.hidden_channels, self.out_channels = (
            int(check_int(val, name, 1)) for name, val in sizes
        )
        self.lin1 = torch.nn.Linear(self.in_channels, self.hidden_channels)
        self.lin2 = torch.nn.Linear(self.hidden_channels, self.out_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise both linear layers (PyTorch's default initialisation)."""
        self.lin1.reset_parameters()
        self.lin2.reset_parameters()

    def forward(self, h: Tensor) -> Tensor:
        """Return :math:`\\mathbf{z} = g(\\mathbf{h})`."""
        if not isinstance(h, Tensor) or not h.is_floating_point():
            raise TypeError(f"`h` must be a floating tensor, got {type(h).__name__}")
        if h.dim() == 0 or h.size(-1) != self.in_channels:
            raise ValueError(
                f"`h` must have {self.in_channels} features in its last dimension, got shape "
                f"{tuple(h.shape)}"
            )
        return self.lin2(torch.relu(self.lin1(h)))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.hidden_channels}, "
            f"{self.out_channels})"
        )
