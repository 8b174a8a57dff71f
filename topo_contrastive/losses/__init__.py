"""Contrastive losses: InfoNCE and Hodge-debiased InfoNCE (paper eqs. 4, 6-8), their
functional forms (:mod:`topo_contrastive.losses.functional`), and the Hodge-aware weights of
the negatives."""

from topo_contrastive.losses.hodge_debiased_info_nce import HodgeDebiasedInfoNCE
from topo_contrastive.losses.hodge_weights import (
    energy_fractions,
    hodge_cosines,
    hodge_negative_weights,
    weights_from_cosines,
)
from topo_contrastive.losses.info_nce import InfoNCE

__all__ = [
    "HodgeDebiasedInfoNCE",
    "InfoNCE",
    "energy_fractions",
    "hodge_cosines",
    "hodge_negative_weights",
    "weights_from_cosines",
]
