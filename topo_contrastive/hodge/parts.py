r"""The three Hodge components at every rank, and the parts of a decomposed signal.

The paper decomposes edge flows (rank 1, :mod:`topo_contrastive.hodge`). A signal
:math:`\mathbf{x} \in \mathbb{R}^{N_k}` on the simplices of any rank :math:`k` splits
the same way (Lim, "Hodge Laplacians on graphs", SIAM Review 62, 2020, Thm. 5.3;
Schaub et al., "Signal processing on higher-order networks", Signal Processing 187,
2021, §2):

.. math::
    \mathbb{R}^{N_k} = \underbrace{\operatorname{im}(\mathbf{B}_k^\top)}_{\text{gradient}}
    \oplus \underbrace{\operatorname{im}(\mathbf{B}_{k+1})}_{\text{curl}}
    \oplus \underbrace{\ker(\mathbf{L}_k)}_{\text{harmonic}}, \qquad
    \mathbf{L}_k = \mathbf{B}_k^\top \mathbf{B}_k + \mathbf{B}_{k+1} \mathbf{B}_{k+1}^\top.

The library keeps the names ``gradient`` / ``curl`` / ``harmonic`` (and the order of
:data:`~topo_contrastive.hodge.COMPONENTS`) at every rank: ``gradient`` is always the
*lower* part (the image of the coboundary from rank :math:`k-1`), ``curl`` the *upper*
part (the boundaries of rank-:math:`k+1` simplices), ``harmonic`` the kernel of
:math:`\mathbf{L}_k`, of dimension the Betti number :math:`\beta_k`. In the field's
terms:

* **rank 0** (node signals ``x_0``): the gradient part is empty
  (:math:`\mathbf{B}_0 = 0`); the "curl" part :math:`\operatorname{im}(\mathbf{B}_1)`
  is the space of node signals that sum to zero on every connected component (the
  divergences of edge flows); the harmonic part is the per-component mean
  (:math:`\beta_0` = number of components). Computed in closed form.
* **rank 2** (triangle signals ``x_2``): the gradient part
  :math:`\operatorname{im}(\mathbf{B}_2^\top)` holds the "curls of edge flows"
  (:math:`\mathbf{B}_2^\top \mathbf{x}_1`); the curl part
  :math:`\operatorname{im}(\mathbf{B}_3)` holds the boundaries of tetrahedra (empty
  on a complex without tetrahedra); the harmonic part :math:`\ker \mathbf{B}_2 \cap
  \ker \mathbf{B}_3^\top` holds the closed surfaces that bound no solid: one
  dimension per cavity (:math:`\beta_2`; a hollow tetrahedron or a torus has one).

How each backend computes them: :mod:`topo_contrastive.hodge.exact` and
:mod:`topo_contrastive.hodge.iterative`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["COMPONENTS", "SUPPORTED_RANKS", "HodgeParts", "check_component"]

#: Names of the three Hodge components, in the order used everywhere in the library.
COMPONENTS = ("gradient", "curl", "harmonic")

#: Ranks of signals :class:`~topo_contrastive.HodgeDecomposition` decomposes.
SUPPORTED_RANKS = (0, 1, 2)


class HodgeParts(NamedTuple):
    """Gradient, curl and harmonic parts of a batch of edge flows.

    Each field has the layout, dtype and device of the decomposed flows (``[N1]``,
    ``[N1, 1]``, ``[B, N1]``, ``[B, N1, 1]`` or a PyG batch's ``[B * N1, 1]``); the three
    fields sum to the input and are mutually orthogonal (per sample).
    """

    gradient: torch.Tensor
    curl: torch.Tensor
    harmonic: torch.Tensor


def check_component(component: str) -> int:
    """Index of ``component`` in :data:`COMPONENTS`.

    Raises:
        ValueError: ``component`` is not one of :data:`COMPONENTS`.
    """
    if component not in COMPONENTS:
        raise ValueError(f"`component` must be one of {COMPONENTS}, got {component!r}")
    return COMPONENTS.index(component)
