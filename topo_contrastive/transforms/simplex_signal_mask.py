r"""Uniform masking of signals on the simplices of any rank, edge flows among them (paper §4,
docs/design.md §2.1)."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.transforms import BaseTransform

from topo_contrastive._utils.checks import check_int
from topo_contrastive.transforms._common import (
    check_attr,
    draw_generator,
    drop_rows,
    get_flow,
    make_generator,
)
from topo_contrastive.transforms.hodge_spectral_mask import check_budget


class SimplexSignalMask(BaseTransform):
    r"""Drop the signal of every simplex of one rank independently with probability
    :math:`p` (paper §4, "edge flow masking", generalised to node, edge and triangle
    signals; docs/design.md §2.1).

    .. math::
        \mathbf{x}_k' = \mathbf{x}_k \circ (\mathbf{1} - \mathbf{d}), \qquad
        d_i \sim \mathrm{Ber}(p) \text{ i.i.d.}

    The signal lives in ``data[attr]`` with TopoBench's key names: ``x_0`` on nodes,
    ``x_1`` on edges (:class:`~topo_contrastive.transforms.EdgeFlowMask` is this transform
    at ``rank=1``), ``x_2`` on triangles. The mask is drawn per row: on a single sample
    ``x_k [N_k, C]`` every simplex gets its own draw, on a PyG ``Batch``
    ``x_k [B * N_k, C]`` every simplex of every sample does (one vectorised draw), and the
    :math:`C` channels of a simplex share its draw; a dropped simplex's signal becomes 0.
    The input is never modified: the returned shallow copy holds a new tensor on the
    input's device and dtype. Calling the transform twice draws two independent masks (the
    generator advances): ``view1, view2 = mask(batch), mask(batch)``; an int seed makes
    the sequence reproducible. **DataLoader workers:** as a dataset transform with
    ``num_workers > 0`` each worker draws from its own generator, seeded from the
    transform's seed and the worker's seed (which PyTorch derives per epoch from the
    ``DataLoader``'s ``generator`` or the global seed): masks differ across workers and
    epochs and reproduce under ``torch.manual_seed``.

    Args:
        p (float): drop probability in :math:`[0, 1]`.
        rank (int, optional): rank of the simplices (``0``, ``1``, ``2`` or ``3``); it
            sets the default ``attr``. (default: ``1``)
        attr (str, optional): name of the signal attribute. (default: ``None``:
            ``f"x_{rank}"``)
        generator (torch.Generator or int, optional): random generator, or a seed for a
            new CPU generator; ``None`` uses torch's global generator on the signal's
            device. Draws are made on the generator's device and moved to the signal's.
            (default: ``None``)

    Shapes:
        - **input** ``data[attr]``: ``[N_k]``, ``[N_k, C]`` or ``[B * N_k, C]``, floating.
        - **output** ``data[attr]``: the same.

    Raises:
        TypeError: ``p`` not a float, ``rank`` not an int, ``attr`` not a str,
            ``generator`` of another type; in ``forward``, a non-floating signal.
        ValueError: ``p`` outside :math:`[0, 1]`, ``rank`` outside ``0..3``, a negative
            seed; in ``forward``, a missing attribute, a signal with NaN/inf or of more
            than 2 dimensions.

    Example:
        >>> mask = SimplexSignalMask(0.3, rank=2, generator=0)
        >>> data = Data(x_2=torch.ones(1000, 1))
        >>> view1, view2 = mask(data), mask(data)
        >>> bool((view1.x_2 == 0).float().mean().sub(0.3).abs() < 0.05)
        True
    """

    def __init__(
        self,
        p: float,
        rank: int = 1,
        attr: str | None = None,
        generator: torch.Generator | int | None = None,
    ) -> None:
        self.p = check_budget(p, "p")  # a drop probability in [0, 1]
        self.rank = check_int(rank, "rank")
        if not 0 <= self.rank <= 3:
            raise ValueError(f"`rank` must lie in 0..3, got {rank}")
        self.attr = check_attr(f"x_{self.rank}" if attr is None else attr, "attr")
        self.generator = make_generator(generator)

    def forward(self, data: Any) -> Any:
        x = get_flow(data, self.attr)
        data[self.attr] = drop_rows(x, self.p, draw_generator(self))  # one draw per row
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p}, rank={self.rank}, attr={self.attr!r})"


class EdgeFlowMask(SimplexSignalMask):
    r"""Drop every edge's flow independently with probability :math:`p` (paper §4, "edge
    flow masking" with the same probability for all edges; docs/design.md §2.1):
    :class:`SimplexSignalMask` at ``rank=1``, :math:`\mathbf{x}' = \mathbf{x} \circ
    (\mathbf{1} - \mathbf{d})`, :math:`d_i \sim \mathrm{Ber}(p)` i.i.d.

    Args:
        p (float): drop probability in :math:`[0, 1]`.
        attr (str, optional): name of the edge-flow attribute. (default: ``"x_1"``)
        generator (torch.Generator or int, optional): random generator, or a seed for a
            new CPU generator. (default: ``None``: torch's global generator)

    Shapes:
        - **input**, **output** ``data[attr]``: ``[N1]``, ``[N1, C]`` or ``[B * N1, C]``.

    Raises:
        TypeError, ValueError: as :class:`SimplexSignalMask`.

    Example:
        >>> mask, data = EdgeFlowMask(0.3, generator=0), Data(x_1=torch.ones(1000, 1))
        >>> view1, view2 = mask(data), mask(data)
        >>> bool((view1.x_1 == 0).float().mean().sub(0.3).abs() < 0.05)
        True
    """

    def __init__(
        self,
        p: float,
        attr: str = "x_1",
        generator: torch.Generator | int | None = None,
    ) -> None:
        super().__init__(p, rank=1, attr=attr, generator=generator)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p}, attr={self.attr!r})"
