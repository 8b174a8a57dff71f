"""Reuse: an encoder pre-trained on some road networks, probed on a network it never saw.

The leave-one-network-out protocol (``python -m experiments reuse``): for each held-out network,
the encoder is pre-trained without labels on the trips of all other networks (one
:class:`~topo_contrastive.data.ComplexData` per trip, each on its network's complex; a batch
mixes networks) and evaluated on the held-out network with a few of its labels, beside the
encoder pre-trained on the held-out network's own unlabelled trips, the untrained and the
supervised SCNN, and the network's own reference rows.

- :func:`road_trips.network_trips` / :func:`road_trips.write_trips_file`: trips with
  route-dependent labels on the TNTP networks that `pytspl` ships;
- :func:`scnn_encoder`, :func:`pretrain_encoder`, :func:`embed_samples`,
  :func:`part_energy_features`, :func:`train_with_labels`,
  :func:`topomodelx_encoder`: the encoders of the many-complex studies;
- :func:`load_networks`, :func:`check_study`, :func:`reuse_study`: the protocol
  (resumable per held-out network and seed); :func:`reuse_markdown`,
  :func:`target_check`, :func:`plot_reuse`, :func:`write_reuse`: the tables, the target and
  the figure.
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
    check_networks,
    check_study,
    load_networks,
    pretraining_indices,
    reuse_study,
    trip_samples,
)
from experiments.studies.reuse.report import (
    plot_reuse,
    reuse_markdown,
    target_check,
    write_reuse,
)

__all__ = [
    "Network",
    "check_networks",
    "check_study",
    "load_networks",
    "plot_reuse",
    "pretraining_indices",
    "reuse_markdown",
    "reuse_study",
    "target_check",
    "trip_samples",
    "write_reuse",
    "embed_samples",
    "part_energy_features",
    "pretrain_encoder",
    "scnn_encoder",
    "topomodelx_encoder",
    "train_with_labels",
]
