r"""Uniform edge-flow masking (paper §4, docs/design.md §2.1)."""

from __future__ import annotations

import torch

from topo_contrastive.transforms.simplex_signal_mask import SimplexSignalMask

__all__ = ["EdgeFlowMask"]


class EdgeFlowMask(SimplexSignalMask):
    r"""Drop every edge's flow independently with probability :math:`p` (paper §4,
    "edge flow masking" with the same probability for all edges; docs/design.md §2.1).
    It is :class:`~topo_contrastive.transforms.SimplexSignalMask` at ``rank=1``.

    .. math::
        \mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d}), \qquad
        d_i \sim \mathrm{Ber}(p) \text{ i.i.d.}

    The mask is drawn per row of ``data[attr]``: on a single sample ``x_1 [N1, C]`` every
    edge gets its own draw, on a PyG ``Batch`` ``x_1 [B * N1, C]`` every edge of every
    sample does (one vectorised draw for the whole batch), and the :math:`C` channels of
    an edge share its draw. A dropped edge's flow becomes 0 (edges whose flow is already
    0 are unchanged either way). The input is never modified: the returned shallow copy
    holds a new tensor on the input's device and dtype; all other attributes are shared.

    Calling the transform twice draws two independent masks (the generator advances),
    which is how two contrastive views are made: ``view1, view2 = mask(batch),
    mask(batch)``. With an int seed the sequence of masks is reproducible.
    **DataLoader workers.** As a dataset transform with ``num_workers > 0``, each worker
    draws from its own generator, seeded from the transform's seed and the worker's seed
    (which PyTorch derives from the DataLoader's ``generator`` or the global seed, per
    epoch): masks differ across workers and epochs and are reproducible under
    ``torch.manual_seed`` (see :class:`~topo_contrastive.transforms.ContrastiveViews`).

    Args:
        p (float): drop probability in :math:`[0, 1]`.
        attr (str, optional): name of the edge-flow attribute. (default: ``"x_1"``)
        generator (torch.Generator or int, optional): random generator, or a seed for a
            new CPU generator; ``None`` uses torch's global generator on the flow's
            device. Draws are made on the generator's device and moved to the flow's.
            (default: ``None``)

    Shapes:
        - **input** ``data[attr]``: ``[N1]``, ``[N1, C]`` or ``[B * N1, C]``, floating.
        - **output** ``data[attr]``: the same.

    Raises:
        TypeError: ``p`` not a float, ``attr`` not a str, ``generator`` of another type;
            in ``forward``, a non-floating flow.
        ValueError: ``p`` outside :math:`[0, 1]`, a negative seed; in ``forward``, a
            missing attribute, a flow with NaN/inf or of more than 2 dimensions.

    Example:
        >>> mask = EdgeFlowMask(0.3, generator=0)
        >>> data = Data(x_1=torch.ones(1000, 1))
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
