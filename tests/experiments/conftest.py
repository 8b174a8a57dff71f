"""Fixtures of the experiment tests: a tiny trajectory task prepared once per session."""

from __future__ import annotations

import pytest

from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.experiments import ExperimentData

#: CLI flags that build the same tiny trajectory task under ``--data-root``.
TINY_FLAGS = ["--trajectory-points", "150", "--trajectory-split", "20", "10", "10"]


def tiny_dataset(root) -> SyntheticTrajectories:
    return SyntheticTrajectories(
        str(root), num_points=150, num_train=20, num_val=10, num_test=10, seed=0, log=False
    )


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> ExperimentData:
    """40 trajectories on a complex of about 400 edges (20 train / 10 val / 10 test)."""
    root = tmp_path_factory.mktemp("tiny_trajectories")
    return ExperimentData.from_dataset(tiny_dataset(root), "trajectory")
