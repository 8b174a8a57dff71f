"""Fixtures of the dataset tests.

The ocean drifter tests run on every machine: the task ships with the package, and the raw-file
reader is tested on a small ``dataBuoys.jld2`` the tests write themselves (``_fake_ocean.py``,
the original file's layout). Only the check that the **original** file gives exactly the shipped
arrays needs that file: it is marked ``raw_data``, left out of the default run, and run by CI
with ``$TOPO_CONTRASTIVE_OCEAN_FILE`` naming the file (``pytest -m raw_data``). The fake file
and the original one are fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def ocean_root(tmp_path: Path, trust_fake: dict) -> Path:
    """A fresh dataset root with a copy of the (trusted) fake raw file in ``raw/``."""
    (tmp_path / "raw").mkdir()
    shutil.copyfile(trust_fake["path"], tmp_path / "raw" / "dataBuoys.jld2")
    return tmp_path
