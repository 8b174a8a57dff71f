"""Fixtures of the dataset tests: where the shared ocean drifter file lies."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

_REPO_ROOT = Path(__file__).resolve().parents[2]
_RELATIVE = Path("shared") / "data" / "ocean_drifters" / "dataBuoys.jld2"


def find_ocean_file() -> Path | None:
    """The shared ``dataBuoys.jld2``: ``$TOPO_CONTRASTIVE_OCEAN_FILE``, else ``../shared/...``.

    ``../shared`` is looked up beside the repository root (CI clones the repository
    with ``../shared`` beside it) and beside each of its parent folders (a git
    worktree nested one level deeper).
    """
    env = os.environ.get("TOPO_CONTRASTIVE_OCEAN_FILE")
    if env:
        return Path(env) if Path(env).is_file() else None
    for folder in _REPO_ROOT.parents:
        candidate = folder / _RELATIVE
        if candidate.is_file():
            return candidate
    return None


@pytest.fixture(scope="session")
def ocean_file() -> Path:
    path = find_ocean_file()
    if path is None:
        pytest.skip(
            "the shared ocean drifter file is absent: expected ../shared/data/ocean_drifters/"
            "dataBuoys.jld2 beside the repository (or $TOPO_CONTRASTIVE_OCEAN_FILE)"
        )
    return path


@pytest.fixture
def ocean_root(tmp_path: Path, ocean_file: Path) -> Path:
    """A fresh dataset root with a copy of the raw file in ``raw/``."""
    (tmp_path / "raw").mkdir()
    shutil.copyfile(ocean_file, tmp_path / "raw" / "dataBuoys.jld2")
    return tmp_path
