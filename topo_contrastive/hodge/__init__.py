"""The Hodge decomposition of signals on a complex (paper eq. 1): :class:`HodgeDecomposition`
and its :class:`HodgeParts`, the interpolation of unobserved edge flows
(:func:`interpolate_flows`) and exact ranks of boundary matrices (:func:`exact_rank`,
:func:`independent_columns`)."""

from topo_contrastive.hodge import parts as _parts
from topo_contrastive.hodge.decomposition import HodgeDecomposition
from topo_contrastive.hodge.interpolation import interpolate_flows
from topo_contrastive.hodge.parts import HodgeParts
from topo_contrastive.hodge.ranks import exact_rank, independent_columns

# re-exported by assignment so that the documentation finds the comment
#: Names of the three Hodge components, in the order used everywhere in the library.
COMPONENTS = _parts.COMPONENTS

__all__ = [
    "COMPONENTS",
    "HodgeDecomposition",
    "HodgeParts",
    "exact_rank",
    "independent_columns",
    "interpolate_flows",
]
