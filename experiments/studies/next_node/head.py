r"""The next-node prediction head :class:`NextNodeHead` (SCoNe's output map)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from experiments._helpers import check_finite, check_int
from topo_contrastive.complex import ComplexOperators


class NextNodeHead(torch.nn.Module):
    r"""Scores the next node of a trajectory from per-edge features, through :math:`\mathbf{B}_1`.

    Roddenberry, Glaze & Segarra, "Principled Simplicial Neural Networks for Trajectory
    Prediction", ICML 2021 (SCoNe), eq. (5) and §4: the last layer maps the per-edge features
    to one value per edge, the boundary map :math:`\mathbf{B}_1` takes it to the nodes, and a
    softmax over the neighbours of the trajectory's last node gives the prediction:

    .. math::
        \mathbf{s} = \mathbf{B}_1 \mathbf{H} \mathbf{w}, \qquad
        p(v \mid \mathbf{x}) = \frac{\exp s_v}{\sum_{u \in \mathcal{N}(\ell)} \exp s_u},
        \quad v \in \mathcal{N}(\ell)

    with :math:`\mathbf{w} \in \mathbb{R}^{C}` learnable (no bias: a bias per edge would not
    turn with the edge's orientation). For features that turn with the edges
    (:math:`\mathbf{S}\mathbf{H}` for :math:`\mathbf{S} = \mathrm{diag}(\pm 1)`, e.g. a
    bias-free :class:`~topo_contrastive.nn.SCNN` with an odd activation) the scores are
    unchanged by re-orienting edges: :math:`\mathbf{B}_1 \mathbf{S}\,\mathbf{S}\mathbf{H}\mathbf{w}
    = \mathbf{B}_1 \mathbf{H}\mathbf{w}`.

    Args:
        in_channels (int): features per edge :math:`C`.
        ops (ComplexOperators): the complex (its :math:`\mathbf{B}_1`).

    Shapes:
        - **input:** ``H`` :math:`[B, N_1, C]` (or :math:`[N_1, C]`), floating;
          ``candidates`` bool :math:`[B, N_0]`, at least one ``True`` per row.
        - **output:** logits :math:`[B, N_0]`, ``-inf`` outside the candidates; same device
          and dtype as ``H``.

    Raises:
        TypeError: (``__init__``) ``ops`` is not a ``ComplexOperators`` or ``in_channels``
            not an int; (``forward``) ``H`` not floating or ``candidates`` not bool.
        ValueError: (``__init__``) ``in_channels < 1`` or a complex without edges;
            (``forward``) shapes that do not match the complex, a row without candidates,
            or NaN/inf in ``H`` (naming the samples; skipped with the attribute
            ``check_finite = False``).

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [])
        >>> head = NextNodeHead(4, ops)
        >>> cand = torch.tensor([[True, False, True]])
        >>> head(torch.randn(1, 3, 4), cand).isinf().tolist()
        [[False, True, False]]
    """

    b1_index: Tensor
    b1_value: Tensor
    #: Refuse NaN/inf in ``H`` (a ``ValueError`` naming the samples); set ``False`` on an
    #: instance to skip the check.
    check_finite: bool = True

    def __init__(self, in_channels: int, ops: ComplexOperators) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels", 1)
        if not isinstance(ops, ComplexOperators):
            raise TypeError(f"`ops` must be a ComplexOperators, got {type(ops).__name__}")
        if ops.num_edges == 0:
            raise ValueError("the complex has no edges (N1 = 0): nothing to score nodes from")
        self.in_channels = int(in_channels)
        self.num_nodes = int(ops.num_nodes)
        self.num_edges = int(ops.num_edges)
        b1 = ops.B1.tocoo()
        index = np.stack([b1.row, b1.col]).astype(np.int64)  # [2, 2 N1]
        self.register_buffer("b1_index", torch.from_numpy(index))
        self.register_buffer("b1_value", torch.from_numpy(b1.data).float())
        self.weight = torch.nn.Parameter(torch.empty(self.in_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weights (fan-in ``C``, fan-out 1)."""
        bound = float(np.sqrt(6.0 / (self.in_channels + 1)))
        torch.nn.init.uniform_(self.weight, -bound, bound)

    def node_scores(self, H: Tensor) -> Tensor:
        r""":math:`\mathbf{B}_1 \mathbf{H}\mathbf{w}` for every node, ``[B, N0]``."""
        if not isinstance(H, Tensor) or not H.is_floating_point():
            raise TypeError(f"`H` must be a floating tensor, got {type(H).__name__}")
        if H.dim() == 2:
            H = H.unsqueeze(0)
        if H.dim() != 3 or H.shape[1:] != (self.num_edges, self.in_channels):
            raise ValueError(
                f"`H` must be [B, {self.num_edges}, {self.in_channels}] (N1, C of the head), "
                f"got {tuple(H.shape)}"
            )
        if self.check_finite:
            check_finite(H, "H")
        edge = H @ self.weight.to(H.dtype)  # [B, N1]
        row, col = self.b1_index
        out = H.new_zeros(H.shape[0], self.num_nodes)
        return out.index_add_(1, row, edge[:, col] * self.b1_value.to(H.dtype))  # [B, N0]

    def forward(self, H: Tensor, candidates: Tensor) -> Tensor:
        """Logits ``[B, N0]``: the node scores, ``-inf`` outside ``candidates``."""
        scores = self.node_scores(H)
        if not isinstance(candidates, Tensor) or candidates.dtype != torch.bool:
            raise TypeError("`candidates` must be a bool tensor [B, N0]")
        if candidates.shape != scores.shape:
            raise ValueError(
                f"`candidates` must be [B, N0] = {tuple(scores.shape)}, got "
                f"{tuple(candidates.shape)}"
            )
        if not bool(candidates.any(dim=1).all()):
            raise ValueError("every row of `candidates` needs at least one candidate node")
        return scores.masked_fill(~candidates.to(scores.device), float("-inf"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_channels}, num_nodes={self.num_nodes})"
