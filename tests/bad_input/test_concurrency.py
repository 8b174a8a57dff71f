"""Concurrent, killed and disk-full runs of the commands, in separate processes: no earlier
result is ever deleted or mixed (docs/guarantees.md, "Concurrent runs and a full disk").

- two writers into one new ``--out`` (``pretrain``, ``label-efficiency``): one runs, the other
  is refused while the first holds the lock, with an error naming it; the folder holds the
  first run's result, whole;
- a ``--overwrite`` run killed (SIGKILL) at a seeded random moment: the earlier result is
  byte for byte as it was, or (killed after the swap) the new one, whole; the next run
  removes the staging folder of the killed one;
- a ``--overwrite`` run whose disk fills (an ``OSError``-raising writer in the child): status
  1, the error on stderr, the earlier result byte for byte, no staging folder left.

Marked ``slow`` (a minute or two on 2 cores).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._tiny import TINY_FLAGS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _flags(root: Path) -> list[str]:
    return ["--data-root", str(root), *TINY_FLAGS, "--no-progress", "--threads", "1"]


def _pretrain(root: Path, out: Path, seed: int = 1, epochs: int = 1) -> list[str]:
    return ["pretrain", "--dataset", "trajectory", "--config", "SCL", "--epochs", str(epochs),
            "--hidden-channels", "4", "--seed", str(seed), "--out", str(out),
            *_flags(root)]  # fmt: skip


def _label_efficiency(root: Path, out: Path) -> list[str]:
    return ["label-efficiency", "--dataset", "trajectory", "--out", str(out), "--rows", "raw",
            "probe:SCL:paper", "--fractions", "0.5", "1", "--draws", "2", "--epochs", "3",
            "--hidden-channels", "4", *_flags(root)]  # fmt: skip


def _start(argv: list[str], prelude: str = "") -> subprocess.Popen:
    code = (f"import sys\n{prelude}\nfrom tests._commands import main\n"
            "sys.exit(main(sys.argv[1:]))")  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv], cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}  # fmt: skip


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("concurrency_data")
    proc = _start(_pretrain(root, root / "warm"))  # builds the tiny dataset once
    assert proc.wait(300) == 0, proc.communicate()
    return root


def _held_until(flag: Path) -> str:
    """A prelude that holds the run at its pre-training until ``flag`` exists (the second
    writer then surely meets the first one at work)."""
    return (
        "import pathlib, time\n"
        "import topo_contrastive.training.loop as training\n"
        "real = training.pretrain\n"
        "def held(*args, **kwargs):\n"
        f"    while not pathlib.Path({str(flag)!r}).exists():\n"
        "        time.sleep(0.05)\n"
        "    return real(*args, **kwargs)\n"
        "training.pretrain = held\n"
    )


@pytest.mark.parametrize("command", ["pretrain", "label-efficiency"])
def test_two_writers_into_one_out(data_root, tmp_path, command):
    out, go = tmp_path / "run", tmp_path / "go"
    if command == "pretrain":
        first, second = _pretrain(data_root, out, seed=1), _pretrain(data_root, out, seed=2)
    else:
        first = second = _label_efficiency(data_root, out)
    a = _start(first, _held_until(go))
    _wait_for(tmp_path / ".run.lock", a)
    b = _start(second)
    b_out, b_err = b.communicate(timeout=300)
    go.touch()
    go_on = a.communicate(timeout=600)
    go.unlink()
    a_err = go_on[1]
    assert a.returncode == 0, a_err
    assert b.returncode == 2, b_err
    assert "is being written by another run" in b_err and f"pid {a.pid} " in b_err
    assert (out / "COMPLETE").is_file() and not (tmp_path / ".run.lock").exists()
    if command == "pretrain":
        import json

        assert json.loads((out / "pretrain.json").read_text())["seed"] == 1  # the first run's
    # and after it, a second run without --overwrite is refused: the result stays
    before = _snapshot(out)
    c = _start(second)
    assert c.wait(300) == 2 and "is not empty" in c.communicate()[1]
    assert _snapshot(out) == before


def test_killed_overwrite_keeps_the_earlier_result(data_root, tmp_path):
    out = tmp_path / "run"
    proc = _start(_pretrain(data_root, out, seed=1))
    assert proc.wait(300) == 0
    before = _snapshot(out)
    rng = random.Random(40)
    for _ in range(4):
        child = _start([*_pretrain(data_root, out, seed=1, epochs=20), "--overwrite"])
        _wait_for(tmp_path / ".run.lock", child)
        time.sleep(rng.uniform(0.0, 3.0))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        now = _snapshot(out)
        assert now == before or (
            (out / "COMPLETE").is_file() and set(now) == set(before)
        ), "neither the earlier run nor a whole new one"
        before = now
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".run.") and p.is_dir()]
    # the next run beside the killed ones removes their staging folders (10 s old, owner dead)
    for p in staged:
        os.utime(p, (time.time() - 60, time.time() - 60))
    proc = _start([*_pretrain(data_root, out, seed=1), "--overwrite"])
    assert proc.wait(300) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_full_disk_during_overwrite(data_root, tmp_path):
    out = tmp_path / "run"
    proc = _start(_pretrain(data_root, out, seed=1))
    assert proc.wait(300) == 0
    before = _snapshot(out)
    prelude = (
        "import errno, pathlib\n"
        "import topo_contrastive._utils.files as files\n"
        "real = files.atomic_write\n"
        "def full(path, write):\n"
        "    if pathlib.Path(path).name == 'encoder.pt':\n"
        "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "    real(path, write)\n"
        "files.atomic_write = full\n"
    )
    child = _start([*_pretrain(data_root, out, seed=2), "--overwrite"], prelude)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 1 and "no space left on device" in err
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
