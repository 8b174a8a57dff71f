"""Multi-process tests that cannot hang: bounded joins, killed children, named waits.

:func:`run_ranks` starts ``world`` processes (the ``spawn`` method, like ``mp.spawn``), each
calling ``target(rank, *args)``; every rank reports the stage it is in through
:func:`set_stage` (a small file per rank). The parent joins all ranks against one deadline: a
rank that exits non-zero, or any rank still running at the deadline, fails the test with a
message naming the rank, its exit code or the stage it was waiting in, and every rank still
alive is killed (SIGKILL), so that nothing is left behind.

:func:`run_command` does the same for a command line (e.g. ``torchrun``): it runs in its own
process group, which is killed as a whole when the deadline passes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import torch.multiprocessing as mp

_STAGE_DIR_ENV = "TOPO_CONTRASTIVE_TEST_STAGE_DIR"


def set_stage(rank: int, stage: str) -> None:
    """Record what rank ``rank`` is doing now (read by :func:`run_ranks` on a failure)."""
    folder = os.environ.get(_STAGE_DIR_ENV)
    if folder:
        Path(folder, f"rank{rank}.stage").write_text(stage)


def _stage(folder: Path, rank: int) -> str:
    try:
        return (folder / f"rank{rank}.stage").read_text()
    except OSError:
        return "starting (no stage reported)"


def _entry(rank: int, folder: str, target: Callable, args: tuple) -> None:
    os.environ[_STAGE_DIR_ENV] = folder
    target(rank, *args)


def run_ranks(
    target: Callable, args: Sequence, world: int, timeout: float, stage_dir: Path
) -> None:
    """Run ``target(rank, *args)`` in ``world`` processes; fail the test on an error or hang.

    Args:
        target: a module-level function (picklable).
        args: its further arguments.
        world: number of processes.
        timeout: seconds for all ranks together (the deadline of the join).
        stage_dir: folder for the per-rank stage files.
    """
    stage_dir.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_entry, args=(r, str(stage_dir), target, tuple(args)), daemon=True)
        for r in range(world)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    failure = None
    try:
        while failure is None and any(p.is_alive() for p in procs):
            for r, p in enumerate(procs):
                if p.exitcode not in (None, 0):
                    failure = (
                        f"rank {r} exited with code {p.exitcode} while in stage "
                        f"{_stage(stage_dir, r)!r}"
                    )
                    break
            if failure is None and time.monotonic() > deadline:
                waiting = [
                    f"rank {r} in stage {_stage(stage_dir, r)!r}"
                    for r, p in enumerate(procs)
                    if p.is_alive()
                ]
                failure = f"no result within {timeout:.0f} s: still waiting for " + ", ".join(
                    waiting
                )
            time.sleep(0.05)
        if failure is None:
            for r, p in enumerate(procs):
                p.join(1)
                if p.exitcode != 0:
                    failure = (
                        f"rank {r} exited with code {p.exitcode} while in stage "
                        f"{_stage(stage_dir, r)!r}"
                    )
                    break
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(5)
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def run_command(
    cmd: Sequence[str], timeout: float, what: str, **kwargs
) -> subprocess.CompletedProcess:
    """``subprocess.run`` in a new process group that is killed as a whole on a timeout.

    Fails the test (naming ``what`` and the last output) when the deadline passes.
    """
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(
            f"{what} did not finish within {timeout:.0f} s (its process group was killed); "
            f"last output:\n{(out or '')[-1500:]}\n{(err or '')[-1500:]}",
            pytrace=False,
        )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
