r"""TopoModelX's SCoNe as a next-node baseline trained from scratch.

Roddenberry, Glaze & Segarra, "Principled Simplicial Neural Networks for Trajectory
Prediction", ICML 2021: ``L`` layers

.. math::
    \mathbf{H}^{(l+1)} = \tanh\big(\mathbf{B}_2\mathbf{B}_2^\top \mathbf{H}^{(l)}
    \mathbf{W}_2^{(l)} + \mathbf{H}^{(l)}\mathbf{W}_1^{(l)} + \mathbf{B}_1^\top\mathbf{B}_1
    \mathbf{H}^{(l)}\mathbf{W}_0^{(l)}\big)

(``topomodelx.nn.simplicial.scone.SCoNe``, TopoModelX 0.0.1: one sample ``[N1, C]`` at a time, no
bias), then the library's :class:`~experiments.studies.next_node.NextNodeHead` (``B1 H w``
over the neighbours of the prefix's last node, SCoNe's own output map). :class:`SCoNeEncoder` wraps
the TopoModelX model in the interface :func:`~experiments.studies.next_node.train_next_node`
trains (``edge_embeddings``, ``reset_parameters``, ``hidden_channels``), looping over the samples
of a batch, so the baseline runs through the same training loop, splits, seeds and selection rule
as every other row. SCoNe's published settings are 3 layers of 16 channels; the training recipe
here is the other rows' (see :func:`~experiments.studies.next_node.train_next_node`), not
SCoNe's 1,000 epochs at learning rate 1e-3.

Needs TopoModelX, installed without its dependencies into the same environment
(``pip install --no-deps topomodelx==0.0.1``; docs/install.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from topo_contrastive.complex import ComplexOperators


def scone_available() -> bool:
    """Whether TopoModelX's SCoNe can be imported here."""
    try:
        from topomodelx.nn.simplicial.scone import SCoNe  # noqa: F401
    except ImportError:
        return False
    return True


def _sparse(m: Any) -> Tensor:
    coo = m.tocoo()
    idx = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float32))
    return torch.sparse_coo_tensor(idx, values, coo.shape, check_invariants=False).coalesce()


class SCoNeEncoder(torch.nn.Module):
    """TopoModelX's ``SCoNe`` with the encoder interface of the next-node training loop.

    Args:
        ops: the complex (its ``B1`` and ``B2``).
        hidden_channels: channels of every layer (default 16, SCoNe's).
        num_layers: layers (default 3, SCoNe's).

    Shapes:
        - **input:** ``x`` ``[B, N1, 1]`` flows; the Laplacian arguments are ignored (SCoNe
          builds ``B1^T B1`` and ``B2 B2^T`` from the incidences).
        - **output:** ``edge_embeddings`` ``[B, N1, hidden_channels]``.

    Raises:
        ImportError: TopoModelX is not installed (the message says how to install it).
        ValueError: ``hidden_channels`` or ``num_layers`` below 1.
    """

    def __init__(self, ops: ComplexOperators, hidden_channels: int = 16,
                 num_layers: int = 3) -> None:  # fmt: skip
        super().__init__()
        if hidden_channels < 1 or num_layers < 1:
            raise ValueError(
                f"`hidden_channels` and `num_layers` must be >= 1, got {hidden_channels} and "
                f"{num_layers}"
            )
        try:
            from topomodelx.nn.simplicial.scone import SCoNe
        except ImportError as exc:
            raise ImportError(
                "the SCoNe baseline needs TopoModelX: pip install --no-deps topomodelx==0.0.1 "
                "(without its dependencies; see docs/install.md)"
            ) from exc
        self.hidden_channels = int(hidden_channels)
        self.num_layers = int(num_layers)
        self.model = SCoNe(1, self.hidden_channels, self.num_layers)
        self.register_buffer("incidence_1", _sparse(ops.B1), persistent=False)
        self.register_buffer("incidence_2", _sparse(ops.B2), persistent=False)

    def reset_parameters(self) -> None:
        """Re-initialise every layer (TopoModelX's Xavier initialisation)."""
        for layer in self.model.layers:
            layer.reset_parameters()

    def edge_embeddings(self, x: Tensor, *_: Any) -> Tensor:
        """Per-edge features ``[B, N1, hidden_channels]`` of flows ``x`` ``[B, N1, 1]``, one
        sample at a time (TopoModelX's model has no batch dimension)."""
        if x.dim() != 3 or x.shape[-1] != 1:
            raise ValueError(f"`x` must be [B, N1, 1], got {tuple(x.shape)}")
        return torch.stack([self.model(s, self.incidence_1, self.incidence_2) for s in x])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(hidden_channels={self.hidden_channels}, "
                f"num_layers={self.num_layers})")  # fmt: skip
