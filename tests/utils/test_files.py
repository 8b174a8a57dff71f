"""The file layer: atomic writes, stale temporaries, checked ``.npz`` reading, output folders
and completeness markers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from topo_contrastive.utils.files import (
    atomic_torch_save,
    atomic_write,
    begin_outputs,
    check_output_dir,
    mark_complete,
    marker_beside,
    read_npz,
    remove_stale_temporaries,
    sha256_of,
    write_csv,
    write_json,
)


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` look unmodified for ``seconds``."""
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_check_output_dir_removes_temporaries_of_dead_processes(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".runs.json.{dead.pid}.{'a' * 32}.tmp"
    live = tmp_path / f".runs.json.{os.getpid()}.{'b' * 32}.tmp"
    for path in (stale, live):
        path.write_text("{")
        old = time.time() - 60
        os.utime(path, (old, old))
    (tmp_path / "runs.json").write_text("{}")
    check_output_dir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "runs.json"])


def test_markers(tmp_path):
    out = tmp_path / "search.csv"
    marker = marker_beside(out)
    assert marker == tmp_path / "search.csv.COMPLETE"
    out.write_text("old")
    mark_complete(marker, "done\n")
    assert marker.read_text() == "done\n"
    begin_outputs(marker, stale=[out, tmp_path / "missing.json"])
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- temporaries
def test_atomic_write_removes_its_temporary_on_every_failure(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    for error in (OSError("disk full"), KeyboardInterrupt()):

        def write(tmp, error=error):
            Path(tmp).write_bytes(b"half")
            raise error

        with pytest.raises(type(error)):
            atomic_write(target, write)
        assert sorted(os.listdir(tmp_path)) == ["out.bin"]
        assert target.read_bytes() == b"old"


def test_remove_stale_temporaries_keeps_live_recent_and_foreign_files(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid no longer exists
    live = os.getpid()
    names = {
        "stale_file": f".ocean_drifters.pt.{dead.pid}.{'a' * 32}.tmp",
        "stale_dir": f".download.{dead.pid}.k3_x9q.tmp",
        "live": f".ocean_drifters.pt.{live}.{'b' * 32}.tmp",
        "recent": f".runs.json.{dead.pid}.{'c' * 32}.tmp",
        "foreign": f"notes.{dead.pid}.x.tmp",
        "data": "ocean_drifters.pt",
    }
    for key, name in names.items():
        path = tmp_path / name
        if key == "stale_dir":
            path.mkdir()
            (path / "dataBuoys.jld2").write_bytes(b"partial download")
        else:
            path.write_bytes(b"x")
        if key != "recent":
            _age(path)
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted(str(tmp_path / names[k]) for k in ("stale_file", "stale_dir"))
    left = {names[k] for k in ("live", "recent", "foreign", "data")}
    assert set(os.listdir(tmp_path)) == left
    assert remove_stale_temporaries(tmp_path / "missing") == []


# ---------------------------------------------------------------------------- writers
def test_writers_are_atomic_and_write_what_they_say(tmp_path):
    import torch

    write_json(tmp_path / "a.json", {"x": float("nan"), "t": (1, 2)})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": None, "t": [1, 2]}
    write_csv(tmp_path / "a.csv", [{"a": 1, "b": None}, {"b": [2, 3], "c": "x"}])
    assert (tmp_path / "a.csv").read_text() == "a,b,c\n1,,\n,2 3,x\n"
    atomic_torch_save({"w": torch.ones(2)}, tmp_path / "a.pt")
    assert torch.equal(torch.load(tmp_path / "a.pt", weights_only=True)["w"], torch.ones(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.json", "a.pt"]
    digest = hashlib.sha256((tmp_path / "a.csv").read_bytes()).hexdigest()
    assert sha256_of(tmp_path / "a.csv", chunk_size=3) == digest


# ---------------------------------------------------------------------------- read_npz
def _save_npy(path: Path) -> None:
    with open(path, "wb") as f:
        np.save(f, np.ones(2))


def test_read_npz_reads_every_array(tmp_path):
    path = tmp_path / "ok.npz"
    np.savez(path, a=np.arange(3), b=np.array(["x", "y"]))
    arrays = read_npz(path)
    assert list(arrays) == ["a", "b"]
    np.testing.assert_array_equal(arrays["a"], np.arange(3))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p.mkdir(), "is a folder, expected an edge-flow file"),
        (lambda p: None, r"not a readable \.npz file \(FileNotFoundError"),
        (lambda p: p.write_bytes(b""), r"not a readable \.npz file \(EOFError"),
        (lambda p: p.write_text("a,b\n1,2\n"), r"not a readable \.npz file \(ValueError"),
        (_save_npy, r"a single \.npy array"),
        (lambda p: np.savez(p, o=np.array([{}], dtype=object)), "holds Python objects"),
    ],
)
def test_read_npz_turns_every_failure_into_a_value_error_naming_the_file(
    tmp_path, make, message
):
    path = tmp_path / "bad.npz"
    make(path)
    with pytest.raises(ValueError, match=message) as info:
        read_npz(path, what="an edge-flow file")
    assert str(path) in str(info.value)


@pytest.mark.parametrize("cut", ["truncated", "corrupted"])
def test_read_npz_of_a_damaged_archive(tmp_path, cut):
    path = tmp_path / "damaged.npz"
    np.savez_compressed(path, a=np.random.default_rng(0).normal(size=(200, 50)))
    data = path.read_bytes()
    if cut == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # flip bytes inside the compressed member: zlib.error or BadZipFile (CRC)
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 64])
                         + data[middle + 64 :])  # fmt: skip
    with pytest.raises(ValueError, match=r"not a readable \.npz file .*expected an npz") as info:
        read_npz(path, what="an npz")
    assert str(path) in str(info.value)


def test_require_file_names_a_folder_and_a_missing_file(tmp_path):
    """Issue 26 case 15: a folder where a file is expected used to say "does not exist"."""
    from topo_contrastive.utils.files import require_file

    with pytest.raises(ValueError, match=r"checkpoint '.*' is a folder, expected a file"):
        require_file(tmp_path, "checkpoint")
    with pytest.raises(FileNotFoundError, match=r"data file '.*missing.npz' does not exist"):
        require_file(tmp_path / "missing.npz", "data file")
    (tmp_path / "f.pt").write_bytes(b"x")
    assert require_file(tmp_path / "f.pt", "checkpoint") == tmp_path / "f.pt"


@pytest.mark.parametrize("flag", ["--checkpoint", "--data-file"])
def test_a_folder_for_a_file_flag_is_a_clear_cli_error(tmp_path, capsys, flag):
    from tests._commands import main

    ckpt = tmp_path / "encoder.pt"
    ckpt.write_bytes(b"x")
    folder = tmp_path / "a_folder"
    folder.mkdir()
    data = tmp_path / "flows.npz"
    data.write_bytes(b"x")  # exists; checked before it is read
    given = {"--checkpoint": str(ckpt), "--data-file": str(data)}
    given[flag] = str(folder)
    rc = main(["embed", "--checkpoint", given["--checkpoint"], "--data-file",
               given["--data-file"], "--out", str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and f"'{folder}' is a folder, expected a file" in err
