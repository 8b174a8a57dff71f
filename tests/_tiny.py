"""The tiny trajectory task of the experiment and study tests (``tiny_data`` in conftest.py)."""

from __future__ import annotations

from topo_contrastive.datasets import SyntheticTrajectories

#: CLI flags that build the same tiny trajectory task under ``--data-root``.
TINY_FLAGS = ["--trajectory-points", "150", "--trajectory-split", "20", "10", "10"]


def tiny_dataset(root) -> SyntheticTrajectories:
    return SyntheticTrajectories(
        str(root), num_points=150, num_train=20, num_val=10, num_test=10, seed=0, log=False
    )
