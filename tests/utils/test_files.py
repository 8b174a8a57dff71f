"""The file layer: atomic writes, stale temporaries, checked ``.npz`` reading, output folders
and completeness markers."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from topo_contrastive._utils.files import (
    atomic_torch_save,
    atomic_write,
    begin_outputs,
    check_output_dir,
    mark_complete,
    marker_beside,
    read_npz,
    remove_stale_temporaries,
    sha256_of,
    temporary_name,
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
    stale = tmp_path / f".runs.json.{dead.pid}.{'a' * 32}.topo_contrastive.tmp"
    live = tmp_path / f".runs.json.{os.getpid()}.{'b' * 32}.topo_contrastive.tmp"
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


def _dead_pid() -> int:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid no longer exists
    return dead.pid


def _make(folder: Path, names: dict[str, str], recent: tuple[str, ...] = ()) -> None:
    """Files (``..._dir`` keys: folders with a file inside), aged but for ``recent``."""
    for key, name in names.items():
        path = folder / name
        if key.endswith("_dir"):
            path.mkdir()
            (path / "inside.jpg").write_bytes(b"keep me")
        else:
            path.write_bytes(b"x")
        if key not in recent:
            _age(path)


def test_remove_stale_temporaries_removes_only_the_librarys_own(tmp_path):
    dead, tag = _dead_pid(), "topo_contrastive.tmp"
    names = {
        "stale_file": f".ocean_drifters.pt.{dead}.{'a' * 32}.{tag}",
        "stale_dir": f".download.{dead}.{'d' * 32}.{tag}",
        "live": f".ocean_drifters.pt.{os.getpid()}.{'b' * 32}.{tag}",
        "recent": f".runs.json.{dead}.{'c' * 32}.{tag}",
        "foreign": f"notes.{dead}.x.tmp",
        "users_dir": f".photos.{dead}.keep.tmp",  # a user's hidden folder of a similar name
        "old_format": f".runs.json.{dead}.{'e' * 32}.tmp",  # an earlier version's temporary
        "data": "ocean_drifters.pt",
    }
    _make(tmp_path, names, recent=("recent",))
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted(str(tmp_path / names[k]) for k in ("stale_file", "stale_dir"))
    assert set(os.listdir(tmp_path)) == {v for k, v in names.items() if not k.startswith("stale")}
    assert (tmp_path / names["users_dir"] / "inside.jpg").read_bytes() == b"keep me"
    assert remove_stale_temporaries(tmp_path / "missing") == []


def test_legacy_removes_the_earlier_formats_exact_leftovers_only(tmp_path):
    dead = _dead_pid()
    names = {
        "old_file": f".ocean_drifters.pt.{dead}.{'a' * 32}.tmp",
        "old_download_dir": f".download.{dead}.k3_x9q7z.tmp",
        "users_dir": f".photos.{dead}.keep.tmp",
        "short_tag": f".runs.json.{dead}.abc.tmp",
    }
    _make(tmp_path, names)
    link = tmp_path / f".x.{dead}.{'f' * 32}.tmp"  # a link named like an old temporary
    link.symlink_to(tmp_path / names["users_dir"])
    assert remove_stale_temporaries(tmp_path) == []  # not without legacy=True
    removed = remove_stale_temporaries(tmp_path, legacy=True)
    assert sorted(removed) == sorted(str(tmp_path / names[k]) for k in ("old_file",
                                                                       "old_download_dir"))
    assert sorted(os.listdir(tmp_path)) == sorted([names["users_dir"], names["short_tag"],
                                                   link.name])  # fmt: skip
    assert (tmp_path / names["users_dir"] / "inside.jpg").read_bytes() == b"keep me"


def test_temporaries_carry_the_librarys_tag_and_a_killed_writers_goes(tmp_path):
    name = Path(temporary_name(tmp_path / "runs.json", pid=_dead_pid())).name
    assert re.fullmatch(r"\.runs\.json\.[0-9]+\.[0-9a-f]{32}\.topo_contrastive\.tmp", name)
    (tmp_path / name).write_text("{")
    _age(tmp_path / name)
    assert remove_stale_temporaries(tmp_path) == [str(tmp_path / name)]


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


def _npy_member(archive: zipfile.ZipFile, name: str, shape: tuple[int, ...], data: bytes,
                **kw) -> None:  # fmt: skip
    """An ``.npy`` member whose header declares a float64 array ``shape`` over ``data``."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False,
                                                "shape": shape})  # fmt: skip
    archive.writestr(name, head.getvalue() + data, **kw)


def test_read_npz_refuses_a_header_declaring_more_than_its_member_holds(tmp_path, monkeypatch):
    # a 1 kB file whose header declares 8 TiB: refused before numpy allocates anything
    path = tmp_path / "lie.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _npy_member(archive, "x_1.npy", (2**40,), bytes(16))
    allocated = []
    monkeypatch.setattr(np.lib.format, "read_array", lambda *a, **k: allocated.append(a))
    with pytest.raises(ValueError) as info:
        read_npz(path, what="an edge-flow file")
    assert allocated == []
    assert (f"'{path}' member 'x_1.npy' declares an array (1099511627776,) of float64 "
            "(8796093022208 bytes) but holds 16 bytes of data") in str(info.value)  # fmt: skip


def test_read_npz_refuses_a_zip_bomb_before_expanding_it(tmp_path):
    # 32 MiB of zeros in bzip2: some hundred bytes on disk, far beyond 1100x
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w") as archive:
        _npy_member(archive, "flows.npy", (2**22,), bytes(2**25),
                    compress_type=zipfile.ZIP_BZIP2)  # fmt: skip
    size = path.stat().st_size
    with pytest.raises(ValueError, match=rf"'{re.escape(str(path))}' member 'flows\.npy' "
                       rf"declares 33554560 bytes from \d+ compressed bytes in a file of {size}: "
                       r"more than an \.npz member can expand \(a zip bomb"):  # fmt: skip
        read_npz(path)
    ok = tmp_path / "zeros.npz"  # numpy's own deflate of zeros expands at most 1032x: read
    np.savez_compressed(ok, zeros=np.zeros(2**22))
    assert read_npz(ok)["zeros"].shape == (2**22,)


def test_read_npz_refuses_arrays_beyond_the_memory_it_may_use(tmp_path, monkeypatch):
    from topo_contrastive._utils import files

    path = tmp_path / "big.npz"
    np.savez(path, a=np.zeros(1000), b=np.zeros(1000))  # 8000 bytes each
    monkeypatch.setattr(files, "_memory_limit", lambda: 12_000)
    with pytest.raises(ValueError, match=r"declares arrays of 0\.00 GiB \(up to member "
                                         r"'b\.npy'\), more than the 0\.00 GiB of memory"):
        read_npz(path)
    monkeypatch.setattr(files, "_memory_limit", lambda: 16_000)
    assert sorted(read_npz(path)) == ["a", "b"]


def test_the_memory_limit_follows_a_cap(tmp_path):
    # the limit a capped process sees is its cap (ulimit -v), not the machine's memory
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
            "from topo_contrastive._utils.files import _memory_limit; print(_memory_limit())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], check=True)  # fmt: skip
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert int(out.stdout) == min(3 << 30, physical)


def test_write_json_writes_tensors_and_arrays_and_names_what_it_cannot(tmp_path):
    import torch

    value = {"t": torch.ones(2, requires_grad=True), "s": torch.tensor(0.5), "a": np.arange(3),
             "n": np.float32("nan"), "b": np.bool_(True), "m": torch.tensor([[1, 2]])}  # fmt: skip
    write_json(tmp_path / "a.json", value)
    assert json.loads((tmp_path / "a.json").read_text()) == {
        "t": [1.0, 1.0], "s": 0.5, "a": [0, 1, 2], "n": None, "b": True, "m": [[1, 2]]}
    with pytest.raises(TypeError, match=r"`obj\['runs'\]\[1\]` is a set, which JSON cannot "
                                        r"hold: give numbers, strings"):
        write_json(tmp_path / "b.json", {"runs": [1, {2}]})
    assert not (tmp_path / "b.json").exists()


def test_require_file_names_a_folder_and_a_missing_file(tmp_path):
    """Issue 26 case 15: a folder where a file is expected used to say "does not exist"."""
    from topo_contrastive._utils.files import require_file

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
