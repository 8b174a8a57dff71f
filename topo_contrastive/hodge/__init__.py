r"""Hodge decomposition of edge flows (paper eq. 1).

.. math::
    \mathbb{R}^{N_1} = \operatorname{im}(\mathbf{B}_1^\top) \oplus
    \operatorname{im}(\mathbf{B}_2) \oplus \ker(\mathbf{L}_1), \qquad
    \mathbf{x} = \mathbf{x}_G + \mathbf{x}_C + \mathbf{x}_H

with orthogonal projectors :math:`\mathbf{P}_G = \mathbf{B}_1^\top \mathbf{L}_0^{+}\mathbf{B}_1`,
:math:`\mathbf{P}_C = \mathbf{B}_2 \mathbf{L}_2^{+} \mathbf{B}_2^\top` and
:math:`\mathbf{P}_H = \mathbf{I} - \mathbf{P}_G - \mathbf{P}_C`, and
:math:`\mathbf{P}_k = \mathbf{U}_k \mathbf{U}_k^\top` for the grouped eigenbasis
:math:`\mathbf{U} = [\mathbf{U}_G, \mathbf{U}_C, \mathbf{U}_H]` of :math:`\mathbf{L}_1`.

Package layout (imports run downward only): :mod:`~topo_contrastive.hodge.parts`
(component names, :class:`HodgeParts`), :mod:`~topo_contrastive.hodge.linalg`,
:mod:`~topo_contrastive.hodge.blocks`, :mod:`~topo_contrastive.hodge.cocycles` and
:mod:`~topo_contrastive.hodge.ranks` (shared pieces; exact dimensions), the backend interface
:mod:`~topo_contrastive.hodge.backend` and its two implementations
:mod:`~topo_contrastive.hodge.exact` and :mod:`~topo_contrastive.hodge.iterative`, and
:mod:`~topo_contrastive.hodge.decomposition` (:class:`HodgeDecomposition`; the signals'
layouts are converted by :mod:`topo_contrastive._layout`).
"""

from topo_contrastive.hodge import parts as _parts
from topo_contrastive.hodge.decomposition import HodgeDecomposition
from topo_contrastive.hodge.interpolation import interpolate_flows
from topo_contrastive.hodge.parts import HodgeParts
from topo_contrastive.hodge.ranks import exact_rank, independent_columns

# re-exported by assignment so that the documentation finds the comments
#: Names of the three Hodge components, in the order used everywhere in the library.
COMPONENTS = _parts.COMPONENTS
#: Ranks of signals :class:`~topo_contrastive.HodgeDecomposition` decomposes.
SUPPORTED_RANKS = _parts.SUPPORTED_RANKS

__all__ = [
    "COMPONENTS",
    "SUPPORTED_RANKS",
    "HodgeDecomposition",
    "HodgeParts",
    "exact_rank",
    "independent_columns",
    "interpolate_flows",
]
