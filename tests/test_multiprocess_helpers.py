"""The bounded multi-process helpers of the tests (tests/_multiprocess.py) fail, never hang."""

from __future__ import annotations

import sys
import time

import pytest

from tests._multiprocess import run_command, run_ranks, set_stage


def _hangs_on_rank_one(rank: int) -> None:
    set_stage(rank, "waiting for a peer that never comes" if rank else "finished")
    if rank == 1:
        time.sleep(600)


def _fails_on_rank_zero(rank: int) -> None:
    set_stage(rank, "computing")
    if rank == 0:
        raise SystemExit(3)
    time.sleep(600)


def test_a_hanging_rank_is_killed_and_named(tmp_path):
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as info:
        run_ranks(_hangs_on_rank_one, (), 2, timeout=8, stage_dir=tmp_path)
    assert time.monotonic() - start < 60
    msg = str(info.value)
    assert "no result within 8 s" in msg
    assert "rank 1 in stage 'waiting for a peer that never comes'" in msg


def test_a_failing_rank_stops_the_others(tmp_path):
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match="rank 0 exited with code 3 while in stage "
                       "'computing'"):  # fmt: skip
        run_ranks(_fails_on_rank_zero, (), 2, timeout=120, stage_dir=tmp_path)
    assert time.monotonic() - start < 60  # rank 1 (sleeping) was killed, not waited for


def test_a_hanging_command_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"open({str(marker)!r}, 'w').write(str(c.pid)); print('started', flush=True); "
        "time.sleep(600)"
    )
    with pytest.raises(pytest.fail.Exception, match="a sleeper did not finish within 5 s") as info:
        run_command([sys.executable, "-c", code], 5, "a sleeper")
    assert "started" in str(info.value)
    pid = int(marker.read_text())
    for _ in range(50):  # the grandchild was in the killed process group (gone or a zombie)
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the grandchild {pid} is still alive")
