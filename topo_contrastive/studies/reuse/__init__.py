"""Reuse: an encoder pre-trained on some road networks, probed on a network it never saw.

The leave-one-network-out protocol (``topo-contrastive reuse``): for each held-out network,
the encoder is pre-trained without labels on the trips of all other networks (one
:class:`~topo_contrastive.data.ComplexData` per trip, each on its network's complex; a batch
mixes networks) and evaluated on the held-out network with a few of its labels, beside the
encoder pre-trained on the held-out network's own unlabelled trips, the untrained and the
supervised SCNN, and the network's own reference rows.

- :func:`road_trips.network_trips` / :func:`road_trips.write_trips_file`: trips with
  route-dependent labels on the TNTP networks that `pytspl` ships;
- :func:`scnn_encoder`, :func:`pretrain_encoder`, :func:`embed_samples`,
  :func:`train_with_labels`: the encoders of the many-complex studies;
- :func:`load_networks`, :func:`reuse_study`: the protocol (resumable per held-out network
  and seed); :func:`reuse_markdown`, :func:`plot_reuse`: the tables and the figure.
"""

from topo_contrastive.studies.reuse.encoders import (
    CONFIGS,
    embed_samples,
    pretrain_encoder,
    scnn_encoder,
    train_with_labels,
)

__all__ = [
    "CONFIGS",
    "embed_samples",
    "pretrain_encoder",
    "scnn_encoder",
    "train_with_labels",
]
