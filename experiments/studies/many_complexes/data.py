"""The data of the many-complexes study: the library's task, or networks of one's own pooled.

- :func:`trajectory_samples`: :class:`~topo_contrastive.datasets.RandomComplexTrajectories`,
  every trajectory on a new random complex (the default task);
- :func:`pool_networks`: the trips (or flows) of several networks as one dataset of many
  complexes, each sample on its own network's complex
  (:func:`~experiments.studies.reuse.trip_samples`), with one set of class ids for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import InMemoryDataset

from experiments.studies.reuse.protocol import PooledSamples, trip_samples


def trajectory_samples(root: str | Path, samples: int = 1000, seed: int = 0) -> InMemoryDataset:
    """The default task: ``samples`` trajectories, each on a new random complex
    (:class:`~topo_contrastive.datasets.RandomComplexTrajectories` with its 60 / 20 / 20 %
    split sizes, seed ``seed``), generated once into ``root``.

    Raises:
        TypeError / ValueError: ``samples`` not an integer, or too few for the split (from
            the dataset).
    """
    from topo_contrastive.datasets import RandomComplexTrajectories

    return RandomComplexTrajectories(str(root), num_samples=samples, num_train=int(0.6 * samples),
                                     num_val=int(0.2 * samples), seed=seed, log=False)  # fmt: skip


def pool_networks(networks: Sequence[Any]) -> InMemoryDataset:
    """Every sample of every network as one dataset of many complexes.

    Each sample keeps its network's complex (its Laplacians are its network's), ``x_1``
    ``[N1, 1]``, ``network`` (the network's position in ``networks``) and ``trip`` (its
    index there); ``y`` is the class id of its label value among the label values of *all*
    networks, in increasing order (label 1 of one file and label 1 of another are one class).

    Args:
        networks: :class:`~experiments.studies.reuse.Network` s
            (:func:`~experiments.studies.reuse.load_networks`' output).

    Returns:
        A :class:`PooledSamples`, networks in the given order.

    Raises:
        ValueError: no network; two networks of one name (``networks``); a network without
            labels or without samples; fewer than two classes among all labels.
    """
    if not networks:
        raise ValueError("`networks`: give at least one network (a data file or a name)")
    seen: dict[str, Any] = {}
    for net in networks:
        if net.name in seen:
            raise ValueError(
                f"`networks`: {net.source} has the same name as {seen[net.name].source} "
                f"({net.name!r}): give each network once"
            )
        seen[net.name] = net
        if net.labels is None or len(net.labels) == 0:
            raise ValueError(
                f"`networks`: {net.name!r} ({net.source}) has no labelled samples: the study "
                "probes with labels; give networks with labels (a data file's `labels` array)"
            )
    raw = [np.array([int(net.dataset[i].y) for i in range(len(net.dataset))])
           for net in networks]  # fmt: skip
    values, ids = np.unique(np.concatenate(raw), return_inverse=True)
    if values.size < 2:
        raise ValueError(
            f"`networks`: every labelled sample has the label {int(values[0])}: nothing to "
            "classify"
        )
    samples = trip_samples(networks)
    for sample, y in zip(samples, ids.tolist(), strict=True):
        sample.y = torch.tensor([y])
    return PooledSamples(samples)
