r"""The complex-agnostic reference features of the many-complexes study.

Where every sample lives on a complex of its own, raw flows and harmonic coordinates are
coordinates of different spaces and cannot be stacked into one design matrix; these
features can. For a flow :math:`\mathbf{x}` on its complex, with Hodge parts
:math:`\mathbf{P}_k \mathbf{x}` (paper eq. 1, :math:`k \in \{G, C, H\}`):

.. math::
    f_k = \lVert \mathbf{P}_k \mathbf{x} \rVert^2 / \lVert \mathbf{x} \rVert^2, \qquad
    \ell = \#\{e : x_e \neq 0\}, \qquad t = \textstyle\sum_e |x_e|.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["REFERENCES", "reference_features"]

#: The reference rows, in the order of the tables.
REFERENCES: tuple[str, ...] = (
    "energy fractions", "length, total flow", "fractions + length",
    "fractions + length, products",
)  # fmt: skip


def reference_features(dataset: Any) -> dict[str, np.ndarray]:
    r"""The complex-agnostic reference features of every sample, each on its own complex.

    - ``"energy fractions"``: ``float64 [S, 3]``, :math:`(f_G, f_C, f_H)` (zero for an
      all-zero flow; the parts are computed in the flows' dtype, float32 for the library's
      datasets);
    - ``"length, total flow"``: ``float64 [S, 2]``, :math:`(\ell, t)`: the edges on the
      flow's support and its total absolute flow (flow units);
    - ``"fractions + length"``: ``float64 [S, 5]``, both;
    - ``"fractions + length, products"``: ``float64 [S, 20]``, both and the products of
      every pair of them, squares included (:math:`v_i v_j`, :math:`i \le j`).

    Args:
        dataset: an ``InMemoryDataset`` of samples with complexes of their own
            (:class:`~topo_contrastive.data.ComplexData`, ``x_1`` ``[N1, 1]``); not modified.

    Returns:
        ``{name: features}`` for every name of :data:`REFERENCES`, in that order.

    Raises:
        ValueError: ``dataset`` is empty or its samples carry no complex of their own.
    """
    from torch_geometric.loader import DataLoader

    from topo_contrastive import ContrastiveViews, EdgeFlowMask
    from topo_contrastive.losses import energy_fractions
    from topo_contrastive.transforms._common import has_own_complex

    if len(dataset) == 0 or not has_own_complex(dataset[0]):
        raise ValueError(
            "`dataset` must hold samples with complexes of their own (ComplexData with "
            f"incidences), got {'no sample' if len(dataset) == 0 else type(dataset[0]).__name__}"
            " without one"
        )
    # the views' fit computes the Hodge parts of every sample on its own complex
    fitted = ContrastiveViews(EdgeFlowMask(0.0)).fit(dataset.copy())
    b = next(iter(DataLoader(fitted, batch_size=len(fitted))))
    frac = energy_fractions(b.hodge_parts.double(), b.batch_1, len(fitted)).numpy()
    x = b.x_1[:, 0].abs().double()
    length = np.bincount(b.batch_1.numpy(), weights=(x > 0).numpy().astype(float),
                         minlength=len(fitted))  # fmt: skip
    total = np.bincount(b.batch_1.numpy(), weights=x.numpy(), minlength=len(fitted))
    # an all-zero flow has no fractions (its fitted parts hold round-off, ~1e-16)
    frac[total == 0] = 0.0
    base = np.column_stack([length, total])
    both = np.column_stack([frac, base])
    i, j = np.triu_indices(both.shape[1])
    products = np.column_stack([both, both[:, i] * both[:, j]])
    return dict(zip(REFERENCES, (frac, base, both, products), strict=True))
