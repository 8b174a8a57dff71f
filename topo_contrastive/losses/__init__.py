"""Contrastive losses: InfoNCE and Hodge-debiased InfoNCE (paper eqs. 4, 6-8)."""

from topo_contrastive.losses.hodge_debiased_info_nce import HodgeDebiasedInfoNCE
from topo_contrastive.losses.hodge_weights import (
    energy_fractions,
    hodge_cosines,
    hodge_energy_weights,
    hodge_negative_weights,
    weights_from_cosines,
)
from topo_contrastive.losses.info_nce import InfoNCE

__all__ = [
    "HodgeDebiasedInfoNCE",
    "InfoNCE",
    "energy_fractions",
    "hodge_cosines",
    "hodge_energy_weights",
    "hodge_negative_weights",
    "weights_from_cosines",
]
