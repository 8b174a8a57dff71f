"""Reuse: an encoder pre-trained on some road networks, probed on a network it never saw
(``python -m experiments reuse``; the protocol in :mod:`.protocol`).

For each held-out network the encoder is pre-trained without labels on the trips of all
other networks (one sample per trip, each on its network's complex) and evaluated on the
held-out network with a few of its labels, beside the encoder pre-trained on that network's
own trips, the untrained and the supervised SCNN and the network's reference rows:
:mod:`.road_trips` (labelled trips on `pytspl`'s TNTP networks), :mod:`.encoders` (the
encoders of the many-complex studies), :mod:`.protocol` and :mod:`.report`.
"""

from experiments.studies.reuse.encoders import (
    embed_samples,
    part_energy_features,
    pretrain_encoder,
    scnn_encoder,
    topomodelx_encoder,
    train_with_labels,
)
from experiments.studies.reuse.protocol import (
    Network,
    PooledSamples,
    check_networks,
    check_study,
    load_networks,
    pretraining_indices,
    reuse_study,
    trip_samples,
)
from experiments.studies.reuse.report import OUTPUTS, target_check, write_reuse

__all__ = [
    "OUTPUTS", "Network", "PooledSamples", "check_networks", "check_study", "embed_samples",
    "load_networks", "part_energy_features", "pretrain_encoder", "pretraining_indices",
    "reuse_study", "scnn_encoder", "target_check", "topomodelx_encoder", "train_with_labels",
    "trip_samples", "write_reuse",
]  # fmt: skip
