"""The shared dataset machinery: recorded ``pre_transform``, stale temporaries removed on open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from topo_contrastive._utils.files import temporary_name
from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.datasets.edge_flows import _settings_repr

REPO = Path(__file__).resolve().parents[2]
SMALL = {"num_points": 150, "num_train": 4, "num_val": 2, "num_test": 2, "seed": 0, "log": False}


def double(data):
    data.x_1 = data.x_1 * 2
    return data


def triple(data):
    data.x_1 = data.x_1 * 3
    return data


class Scale:
    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __call__(self, data):
        data.x_1 = data.x_1 * self.factor
        return data

    def __repr__(self) -> str:
        return f"Scale({self.factor})"


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` look unmodified for ``seconds``."""
    old = time.time() - seconds
    os.utime(path, (old, old))


# ---------------------------------------------------------------------------- pre_transform
@pytest.mark.parametrize(
    "first, second",
    [(double, triple), (Scale(2.0), Scale(3.0)), (double, None), (None, Scale(2.0))],
)
def test_other_pre_transform_raises_and_force_reload_reprocesses(tmp_path, first, second):
    plain = SyntheticTrajectories(str(tmp_path / "plain"), **SMALL)
    ds = SyntheticTrajectories(str(tmp_path / "ds"), pre_transform=first, **SMALL)
    factor = {None: 1.0, double: 2.0, triple: 3.0}
    f1 = factor.get(first, getattr(first, "factor", None))
    f2 = factor.get(second, getattr(second, "factor", None))
    torch.testing.assert_close(ds._data.x_1, plain._data.x_1 * f1)
    # PyG returns the old data with a warning; here the mismatch is an error naming both
    with pytest.raises(ValueError, match="force_reload=True") as info:
        SyntheticTrajectories(str(tmp_path / "ds"), pre_transform=second, **SMALL)
    msg = str(info.value)
    assert _settings_repr(first) in msg and _settings_repr(second) in msg
    again = SyntheticTrajectories(
        str(tmp_path / "ds"), pre_transform=second, force_reload=True, **SMALL
    )
    torch.testing.assert_close(again._data.x_1, plain._data.x_1 * f2)
    # the file now records the new pre_transform: re-opening with it needs no reload
    same = SyntheticTrajectories(str(tmp_path / "ds"), pre_transform=second, **SMALL)
    torch.testing.assert_close(same._data.x_1, again._data.x_1)


def test_processed_file_records_the_pre_transform_and_pyg_files_are_not_written(tmp_path):
    ds = SyntheticTrajectories(str(tmp_path), pre_transform=Scale(2.0), **SMALL)
    obj = torch.load(ds.processed_paths[0], weights_only=True)
    assert obj["pre_transform"] == "Scale(2.0)"
    assert sorted(os.listdir(ds.processed_dir)) == [os.path.basename(ds.processed_paths[0])]
    assert _settings_repr(double) == f"<function {__name__}.double>"
    assert _settings_repr(None) == "None"


def test_a_processed_file_of_an_earlier_version_is_reprocessed(tmp_path):
    ds = SyntheticTrajectories(str(tmp_path), pre_transform=Scale(2.0), **SMALL)
    path = ds.processed_paths[0]
    obj = torch.load(path, weights_only=True)
    assert obj["format_version"] == 3
    torch.save({**obj, "format_version": 1, "data": {}}, path)  # a cache of an earlier version
    again = SyntheticTrajectories(str(tmp_path), pre_transform=Scale(2.0), **SMALL)
    torch.testing.assert_close(again._data.x_1, ds._data.x_1)
    assert torch.load(path, weights_only=True)["format_version"] == 3  # re-processed
    Path(path).write_bytes(Path(path).read_bytes()[:100])  # truncated: named, not replaced
    with pytest.raises(ValueError, match="cannot be read .* delete it or pass `force_reload"):
        SyntheticTrajectories(str(tmp_path), pre_transform=Scale(2.0), **SMALL)
    assert len(SyntheticTrajectories(str(tmp_path), pre_transform=Scale(2.0), force_reload=True,
                                     **SMALL)) == 8  # fmt: skip


# ---------------------------------------------------------------------------- temporaries
_KILLED_WRITER = """
import sys, time
from topo_contrastive._utils.files import atomic_write

def write(tmp):
    with open(tmp, "wb") as f:
        f.write(b"partial")
        f.flush()
        print("writing", flush=True)
        time.sleep(600)

atomic_write(sys.argv[1], write)
"""


def test_temporary_of_a_killed_writer_is_removed_on_the_next_open(tmp_path):
    ds = SyntheticTrajectories(str(tmp_path), **SMALL)
    target = ds.processed_paths[0]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, target], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert writer.stdout.readline().strip() == "writing"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    folder = Path(ds.processed_dir)
    temps = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(temps) == 1 and f".{writer.pid}." in temps[0].name  # left behind by the kill
    # a live process's temporary (this one's) must survive the clean-up
    live = Path(temporary_name(target))
    live.write_bytes(b"in progress")
    for path in (*temps, live):
        _age(path)
    again = SyntheticTrajectories(str(tmp_path), **SMALL)
    assert sorted(p.name for p in folder.iterdir()) == sorted([Path(target).name, live.name])
    torch.testing.assert_close(again._data.x_1, ds._data.x_1)  # the data file was never touched
