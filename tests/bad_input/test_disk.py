# ruff: noqa: E501  (the case tables keep one case per line)
"""Full disks, read-only folders, folders where a file is expected and symbolic links: every
command and the file layer say what happened and where, never a raw torch error or a
temporary's name, and never replace a user's link or move a user's file.

Tests run as root (``chmod`` does not stop root), so a full disk and a read-only file system
are made by a stand-in for ``open`` in the file layer that raises ``OSError`` with ``ENOSPC``
/ ``EROFS`` / ``EACCES`` as the system does, for the files whose name holds a given word.
"""

from __future__ import annotations

import builtins
import errno
import os
import time
from pathlib import Path

import pytest
import torch

from tests.bad_input.conftest import run_cli
from topo_contrastive._utils import files as _files
from topo_contrastive.io import load_encoder, save_encoder
from topo_contrastive.nn import SCNN


class _FullFile:
    """An open file whose every write fails as on a full disk."""

    def __init__(self, file):
        self.file = file

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self):
        pass

    def close(self):
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def _break_writes(monkeypatch, word, code):
    """Writes of files whose name holds ``word`` fail with ``code``: ``ENOSPC`` on the first
    write (the file opened), else on opening."""
    real = builtins.open

    def fake(name, mode="r", *args, **kwargs):
        if ("w" in mode or "x" in mode) and word in os.path.basename(os.fspath(name)):
            if code != errno.ENOSPC:
                raise OSError(code, os.strerror(code), os.fspath(name))
            return _FullFile(real(name, mode, *args, **kwargs))
        return real(name, mode, *args, **kwargs)

    monkeypatch.setattr(_files, "open", fake, raising=False)


def _pretrain(files, out, *more):
    return ["pretrain", "--data-file", files["data"], "--config", "SCL", "--epochs", "1",
            "--out", out, "--data-root", files["root"] / "dr", "--no-progress", "--threads", "1",
            *more]  # fmt: skip


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ---------------------------------------------------------------------------- the file layer
def test_torch_save_onto_a_full_disk_is_an_oserror_naming_the_file(tmp_path, monkeypatch):
    _break_writes(monkeypatch, "e.pt", errno.ENOSPC)
    with pytest.raises(OSError) as info:
        _files.atomic_torch_save({"w": torch.ones(1000)}, tmp_path / "e.pt")
    assert info.value.errno == errno.ENOSPC
    assert f"no space left on device writing '{tmp_path / 'e.pt'}'" in str(info.value)
    assert "inline_container" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("code", "words"), [
    (errno.ENOSPC, "no space left on device writing '{path}'"),
    (errno.EROFS, "cannot write '{path}': the folder '{folder}' is read-only (a read-only file system)"),
    (errno.EACCES, "cannot write '{path}': the folder '{folder}' is read-only for this user"),
])  # fmt: skip
def test_text_writes_say_full_disk_or_read_only(tmp_path, monkeypatch, code, words):
    _files.write_text(tmp_path / "a.json", "old")
    _break_writes(monkeypatch, "a.json", code)
    with pytest.raises(OSError) as info:
        _files.write_json(tmp_path / "a.json", {"x": 1})
    assert info.value.errno == code
    assert words.format(path=tmp_path / "a.json", folder=tmp_path) in str(info.value)
    assert ".tmp" not in str(info.value)  # the file, not the hidden temporary
    assert (tmp_path / "a.json").read_text() == "old" and _leftovers(tmp_path) == []


def test_an_unwritable_output_folder_says_read_only(tmp_path, monkeypatch):
    _break_writes(monkeypatch, ".write-test-", errno.EROFS)
    with pytest.raises(ValueError, match=r"cannot be written \(the folder is read-only, a "
                                         r"read-only file system\)"):  # fmt: skip
        _files.check_output_dir(tmp_path / "out")


def test_save_encoder_onto_a_folder_names_the_path(tmp_path):
    folder = tmp_path / "enc"
    folder.mkdir()
    with pytest.raises(ValueError) as info:
        save_encoder(SCNN(hidden_channels=4), folder)
    assert f"`path` '{folder}' is a folder, expected the checkpoint's file path" in str(info.value)
    assert str(folder / "encoder.pt") in str(info.value)
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["enc"]
    with pytest.raises(IsADirectoryError, match=f"cannot write '{folder}': it is a folder"):
        _files.write_text(folder, "x")


def test_dev_null_is_not_a_regular_file():
    with pytest.raises(ValueError, match="checkpoint '/dev/null' is not a regular file"):
        load_encoder("/dev/null")


def test_raw_errors_are_described_for_the_command_line():
    full = OSError(errno.ENOSPC, "No space left on device", "/x/y.json")
    assert _files.describe_os_error(full) == "no space left on device writing '/x/y.json'"
    ro = OSError(errno.EROFS, "Read-only file system", "/x/y.json")
    assert "the folder '/x' is read-only" in _files.describe_os_error(ro)
    assert _files.describe_os_error(OSError(errno.ENOSPC, "No space")) == "no space left on device"
    other = OSError(errno.EIO, "Input/output error", "/x/y")
    assert _files.describe_os_error(other) == str(other)


# ---------------------------------------------------------------------------- the commands
def test_pretrain_onto_a_full_disk_says_so(files, tmp_path, monkeypatch):
    out = tmp_path / "run"
    _break_writes(monkeypatch, "encoder.pt", errno.ENOSPC)
    status, err = run_cli(_pretrain(files, out))
    assert status == 1, err
    assert f"topo-contrastive: error: no space left on device writing '{out / 'encoder.pt'}'" in err
    assert "inline_container" not in err and "RuntimeError" not in err
    assert not (out / "encoder.pt").exists() and not (out / "COMPLETE").exists()
    assert _leftovers(out) == []


def test_pretrain_into_a_read_only_folder_says_so(files, tmp_path, monkeypatch):
    out = tmp_path / "run"
    _break_writes(monkeypatch, "encoder.pt", errno.EROFS)
    status, err = run_cli(_pretrain(files, out))
    assert status == 1, err
    assert f"cannot write '{out / 'encoder.pt'}': the folder '{out}' is read-only" in err


def test_missing_measurements_onto_a_full_disk_says_so(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from tests.experiments.studies.reuse._networks import grid_network

    grid = grid_network(tmp_path / "g.npz", 4, 3, trips=30)
    out = tmp_path / "out"
    _break_writes(monkeypatch, "cells.json", errno.ENOSPC)
    status, err = run_cli(["missing-measurements", "--out", out, "--data-root", tmp_path / "d",
                           "--datasets", "--data-file", grid, "--quick", "--threads", "1",
                           "--no-progress"])  # fmt: skip
    assert status == 1, err
    assert f"no space left on device writing '{out / 'cells' / 'cells.json'}'" in err
    assert "Traceback" not in err


def test_overwrite_into_a_symlinked_out_writes_through_the_link(files, tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    assert run_cli(_pretrain(files, real))[0] == 0
    (real / "notes.txt").write_text("mine")
    link.symlink_to(real, target_is_directory=True)
    first = (real / "encoder.pt").read_bytes()
    status, err = run_cli(_pretrain(files, link, "--seed", "3", "--overwrite"))
    assert status == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link kept
    assert (real / "notes.txt").read_text() == "mine"  # the user's file where it was
    assert (real / "encoder.pt").read_bytes() != first  # the new result behind the link
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_overwrite_of_a_symlinked_out_file_is_refused(files, tmp_path):
    target = tmp_path / "kept.json"
    target.write_text("{}\n")
    link = tmp_path / "eval.json"
    link.symlink_to(target)
    status, err = run_cli(["evaluate", "--checkpoint", files["checkpoint"], "--data-file",
                           files["data"], "--seeds", "1", "--no-references", "--out", link,
                           "--overwrite", "--data-root", files["root"] / "dr", "--no-progress",
                           "--threads", "1"])  # fmt: skip
    assert status == 2, err
    assert f"--out '{link}' is a symbolic link (to '{target}')" in err
    assert link.is_symlink() and target.read_text() == "{}\n"


# ---------------------------------------------------------------------------- links never followed
@pytest.mark.parametrize("kind", ["to-a-users-file", "dangling"])
def test_a_lock_file_that_is_a_link_is_refused_not_followed(files, tmp_path, kind):
    from topo_contrastive._utils.outputs import OutputLock

    mine = tmp_path / "mine.txt"
    if kind == "to-a-users-file":
        mine.write_text("the user's notes")
    lock = tmp_path / ".run.lock"
    lock.symlink_to(mine)
    words = f"the lock file '{lock}' of --out '{tmp_path / 'run'}' is a symbolic link (to '{mine}')"
    with pytest.raises(ValueError) as info:
        OutputLock(tmp_path / "run").acquire()
    assert words in str(info.value)
    status, err = run_cli(_pretrain(files, tmp_path / "run"))
    assert status == 2 and words in err and "remove it, or choose another --out" in err
    assert lock.is_symlink() and not (tmp_path / "run").exists()
    if kind == "dangling":
        assert not mine.exists()  # nothing created through the link
    else:
        assert mine.read_text() == "the user's notes"


def test_a_lock_file_that_is_a_hard_link_is_refused(tmp_path):
    from topo_contrastive._utils.outputs import OutputLock

    mine = tmp_path / "mine.txt"
    mine.write_text("the user's notes")
    os.link(mine, tmp_path / ".run.lock")
    with pytest.raises(ValueError, match=r"is a file with 2 names \(a hard link\), not a lock file"):
        OutputLock(tmp_path / "run").acquire()
    assert mine.read_text() == "the user's notes"


def test_an_out_that_is_a_dangling_link_is_refused(files, tmp_path):
    link, target = tmp_path / "run", tmp_path / "nowhere" / "results"
    link.symlink_to(target, target_is_directory=True)
    status, err = run_cli(_pretrain(files, link))
    assert status == 2, err
    assert f"--out '{link}' is a symbolic link to '{target}', which does not exist" in err
    assert not (tmp_path / "nowhere").exists() and link.is_symlink()
    (tmp_path / "file.txt").write_text("x")
    other = tmp_path / "other"
    other.symlink_to(tmp_path / "file.txt")
    status, err = run_cli(_pretrain(files, other))
    assert status == 2 and "which is not a folder" in err


def test_a_users_hidden_folder_named_like_a_temporary_is_kept(files, tmp_path):
    # a hidden folder of a dead pid whose name only looks like the library's temporaries
    photos = tmp_path / ".photos.999999.keep.tmp"
    photos.mkdir()
    (photos / "holiday.jpg").write_bytes(b"jpeg")
    old = time.time() - 3600
    os.utime(photos, (old, old))
    assert run_cli(_pretrain(files, tmp_path / "run"))[0] == 0
    assert (photos / "holiday.jpg").read_bytes() == b"jpeg"
