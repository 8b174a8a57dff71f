"""Fixtures shared by the test packages: the ocean drifter raw files and a tiny task.

``fake_ocean`` is a small ``dataBuoys.jld2`` the tests write themselves, in the layout of the
original (``tests/datasets/_fake_ocean.py``); ``trust_fake`` makes ``OceanDrifters`` accept it
as the original. ``original_ocean_file`` is the real file, for the ``raw_data`` tests only.
``tiny_data`` is a tiny trajectory task prepared once per session (``tests/_tiny.py``), for
the experiment and study tests.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests._tiny import tiny_dataset
from tests.datasets._fake_ocean import write_fake_ocean
from topo_contrastive.datasets import OceanDrifters


@pytest.fixture(scope="session")
def fake_ocean(tmp_path_factory) -> dict:
    """A small raw file in the original layout: ``{"path", "sha256", "size", "content"}``."""
    path = tmp_path_factory.mktemp("fake_ocean") / "dataBuoys.jld2"
    content = write_fake_ocean(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"path": path, "sha256": digest, "size": path.stat().st_size, "content": content}


@pytest.fixture
def trust_fake(monkeypatch, fake_ocean) -> dict:
    """Make ``OceanDrifters`` accept the fake raw file as the original (sha256 and size)."""
    monkeypatch.setattr(OceanDrifters, "sha256", fake_ocean["sha256"])
    monkeypatch.setattr(OceanDrifters, "file_size", fake_ocean["size"])
    return fake_ocean


@pytest.fixture(scope="session")
def original_ocean_file() -> Path:
    """The original ``dataBuoys.jld2`` named by ``$TOPO_CONTRASTIVE_OCEAN_FILE`` (``raw_data``
    tests only: they fail, not skip, without it)."""
    value = os.environ.get("TOPO_CONTRASTIVE_OCEAN_FILE")
    if not value or not Path(value).is_file():
        pytest.fail(
            "the raw_data tests need the original dataBuoys.jld2: set "
            f"$TOPO_CONTRASTIVE_OCEAN_FILE to its path (now {value!r})"
        )
    return Path(value)


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory):
    """40 trajectories on a complex of about 400 edges (20 train / 10 val / 10 test), as an
    :class:`~topo_contrastive.training.ExperimentData`."""
    from topo_contrastive.training import ExperimentData

    root = tmp_path_factory.mktemp("tiny_trajectories")
    return ExperimentData.from_dataset(tiny_dataset(root), "trajectory")
