"""Thread count and pinned code paths (topo_contrastive/_utils/numerics.py and the CLI's line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._commands import main
from topo_contrastive._utils import numerics as _numerics

REPO = Path(__file__).resolve().parents[2]


def _unpinned_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in _numerics.PINNED_ENV and k != _numerics.PINNED_MARKER}  # fmt: skip
    env["PYTHONPATH"] = str(REPO)
    return env


def test_a_restarted_process_runs_with_the_pins_in_effect():
    """restart_pinned re-executes the same command line once, in the same process, and
    torch loads there on the pinned code paths."""
    code = (
        "import os, sys; print('start', os.getpid(), 'torch' in sys.modules, flush=True); "
        "from topo_contrastive._utils import numerics as _numerics; "
        "_numerics.restart_pinned(); import torch; "
        "print(os.getpid(), _numerics.pinned_line()); "
        "print(torch.backends.cpu.get_cpu_capability(), os.environ['OPENBLAS_CORETYPE'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_unpinned_env(),
        check=True, timeout=300,
    ).stdout.splitlines()  # fmt: skip
    pid = out[0].split()[1]
    assert out[:2] == [f"start {pid} False"] * 2  # run twice (restarted once), one process
    assert out[2] == f"{pid} code paths pinned (ATEN_CPU_CAPABILITY=avx2, MKL_CBWR=AVX2, " \
        "ONEDNN_MAX_CPU_ISA=AVX2, OPENBLAS_CORETYPE=Haswell)"
    assert out[3] == "AVX2 Haswell"


def test_the_pinned_environment_keeps_a_user_setting():
    env = _numerics.pinned_environment({"MKL_CBWR": "COMPATIBLE", "HOME": "/h"})
    assert env == {"MKL_CBWR": "COMPATIBLE", "HOME": "/h", "ATEN_CPU_CAPABILITY": "avx2",
                   "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
                   _numerics.PINNED_MARKER: "1"}  # fmt: skip
    assert _numerics.runs_pinned(env) and not _numerics.runs_pinned({"MKL_CBWR": "AVX2"})
    assert _numerics.pinned_line(env).startswith("code paths pinned (ATEN_CPU_CAPABILITY=avx2, "
                                                 "MKL_CBWR=COMPATIBLE,")  # fmt: skip
    assert _numerics.pinned_line({}).startswith("code paths not pinned (the command was run "
                                                "inside Python; run it as a command")  # fmt: skip


def test_only_the_quick_preset_run_as_a_program_restarts(monkeypatch, tmp_path, capsys):
    """main() (the program: sys.argv) restarts for reproduce --quick only; main(argv) (a
    call inside Python) never does, and says its code paths are not pinned."""
    restarts = []
    monkeypatch.setattr(_numerics, "restart_pinned", lambda: restarts.append(sys.argv[1:]))
    monkeypatch.delenv(_numerics.PINNED_MARKER, raising=False)
    blocker = tmp_path / "file"
    blocker.write_text("x")  # an unwritable --out: refused before any work
    quick = ["reproduce", "--quick", "--out", str(blocker / "out"), "--no-progress"]
    for words, expected in ((quick, [quick]), (["reproduce", *quick[2:]], []),
                            (["pretrain", "--dataset", "trajectory", "--config", "SCL",
                              "--out", str(blocker / "o")], [])):  # fmt: skip
        restarts.clear()
        monkeypatch.setattr(sys, "argv", ["topo-contrastive", *words])
        assert main() == 2 and restarts == expected
    restarts.clear()
    assert main(quick) == 2 and restarts == []
    assert "cannot be written" in capsys.readouterr().err


def test_idle_cores_is_a_count_of_usable_cores():
    idle = _numerics.idle_cores(interval=0.05)
    assert idle is None or 0 <= idle <= len(os.sched_getaffinity(0))
    assert _numerics.usable_cores() == len(os.sched_getaffinity(0))


def test_idle_cores_counts_cpus_by_their_busy_share(monkeypatch):
    samples = iter([[(0, 100), (0, 100)], [(90, 200), (10, 200)]])  # cpu0 90 % busy, cpu1 10 %
    monkeypatch.setattr(_numerics, "_cpu_times", lambda: next(samples))
    monkeypatch.setattr(_numerics, "_allowed_cpus", lambda count: {0, 1})
    assert _numerics.idle_cores(interval=0) == 1
    monkeypatch.setattr(_numerics, "_cpu_times", lambda: None)
    assert _numerics.idle_cores(interval=0) is None


@pytest.mark.parametrize(
    ("threads", "quick", "idle", "expected"),
    [
        (1, False, 2, "1 torch thread (--threads)"),
        (None, True, 2, "1 torch thread (the quick preset's fixed count)"),
        (None, False, 1, "1 torch thread (1 of 2 cores idle at the start)"),
        (None, False, 2, "2 torch threads (2 of 2 cores idle at the start)"),
        (None, False, 0, "1 torch thread (0 of 2 cores idle at the start)"),
    ],
)
def test_the_thread_line(monkeypatch, capsys, threads, quick, idle, expected):
    import argparse

    import torch

    from topo_contrastive.cli import _common

    before = torch.get_num_threads()
    monkeypatch.setattr(_numerics, "idle_cores", lambda: idle)
    monkeypatch.setattr(_numerics, "usable_cores", lambda: 2)
    try:
        _common.setup(argparse.Namespace(threads=threads, quick=quick), pinned="PINS")
        assert torch.get_num_threads() == int(expected[0])
    finally:
        torch.set_num_threads(before)
    assert capsys.readouterr().err == ""  # printed with the command's first output
    _common.announce()
    _common.announce()  # once
    words = _numerics.pinned_words()
    assert capsys.readouterr().err == (
        f"topo-contrastive: {expected}; {words}\ntopo-contrastive: PINS\n"
    )


@pytest.mark.parametrize("pinned", [True, False])
def test_the_first_line_of_the_quick_preset_is_plain_words(monkeypatch, capsys, pinned):
    """``reproduce --quick``: the thread count and what the pinning means first; the
    environment variables on the second line."""
    import argparse

    import torch

    from topo_contrastive.cli import _common

    if pinned:
        monkeypatch.setenv(_numerics.PINNED_MARKER, "1")
    else:
        monkeypatch.delenv(_numerics.PINNED_MARKER, raising=False)
    before = torch.get_num_threads()
    try:
        _common.setup(argparse.Namespace(threads=None, quick=True), _numerics.pinned_line())
    finally:
        torch.set_num_threads(before)
    _common.announce()
    first, second = capsys.readouterr().err.splitlines()
    assert first.startswith("topo-contrastive: 1 torch thread (the quick preset's fixed count); ")
    assert first.endswith("so that its numbers repeat" if pinned else "on another machine")
    assert "=" not in first and "AVX" not in first and "ATEN" not in first
    assert second == f"topo-contrastive: {_numerics.pinned_line()}"


def test_a_run_names_its_threads_and_an_invalid_command_does_not(tmp_path, capsys):
    import torch

    before = torch.get_num_threads()
    try:
        flags = ["--data-root", str(tmp_path / "d"), "--trajectory-points", "150",
                 "--trajectory-split", "20", "10", "10", "--threads", "1",
                 "--no-progress"]  # fmt: skip
        assert main(["pretrain", "--dataset", "trajectory", "--config", "SCL", "--epochs", "1",
                     "--hidden-channels", "4", "--out", str(tmp_path / "o"),
                     *flags]) == 0  # fmt: skip
        err = capsys.readouterr().err
        assert err.startswith("topo-contrastive: 1 torch thread (--threads)\n")
        assert err.count("torch thread") == 1
        assert main(["pretrain", "--dataset", "trajectory", "--config", "MoCo",
                     "--out", str(tmp_path / "p"), *flags]) == 2  # fmt: skip
        assert "torch thread" not in capsys.readouterr().err
    finally:
        torch.set_num_threads(before)


def test_the_command_line_package_loads_neither_torch_nor_numpy():
    """``import topo_contrastive.cli`` is fast (``--help``, the restart of ``reproduce
    --quick`` in its pinned environment)."""
    import subprocess
    import sys

    code = "import sys, topo_contrastive.cli; print('torch' in sys.modules, 'numpy' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "False"]


def test_help_of_every_command_loads_neither_torch_numpy_nor_sklearn():
    """``--help`` and ``COMMAND --help`` build every subcommand's parser from names that
    import nothing heavy (``topo_contrastive._names``, the configurations)."""
    import subprocess
    import sys

    code = (
        "import contextlib, io, sys\n"
        "from experiments.cli import COMMANDS\n"
        "from tests._commands import main\n"
        "from topo_contrastive.cli import COMMANDS as LIBRARY\n"
        "for words in [['--help']] + [[name, '--help'] for name in {**LIBRARY, **COMMANDS}]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "        try:\n"
        "            main(words)\n"
        "        except SystemExit as stop:\n"
        "            assert stop.code == 0, words\n"
        "    prog = 'python -m experiments' if words[0] in COMMANDS else 'topo-contrastive'\n"
        "    assert out.getvalue().startswith(f'usage: {prog}'), words\n"
        "print(sorted({'torch', 'numpy', 'sklearn', 'scipy'} & set(sys.modules)))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_reuses_large_blocks():
    """After ``keep_freed_memory`` a 64 MiB block freed and allocated again is soon reused: its
    pages are not faulted in anew (without it, every round faults in all 16,384 pages)."""
    code = (
        "import resource, sys, torch\n"
        "from topo_contrastive._utils import numerics as _numerics\n"
        "if sys.argv[1] == '1':\n"
        "    assert _numerics.keep_freed_memory()\n"
        "def faults(rounds):\n"
        "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "    for _ in range(rounds):\n"
        "        torch.empty(2**24).fill_(1.0)\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
        "faults(20)\n"
        "print(faults(10))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = [subprocess.run([sys.executable, "-c", code, flag], capture_output=True, text=True,
                           timeout=120, env=env) for flag in ("0", "1")]  # fmt: skip
    for res in runs:
        assert res.returncode == 0, res.stderr
    plain, kept = (int(res.stdout) for res in runs)
    assert plain >= 10 * 16_000  # glibc's default: an mmap per block, every page faulted
    assert kept < 1_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_release_freed_memory_gives_kept_blocks_back():
    """Blocks kept by ``keep_freed_memory`` stay resident after they are freed; freed memory
    below ``keep`` stays, and ``release_freed_memory()`` gives it back to the kernel."""
    code = (
        "import sys, torch\n"
        "from topo_contrastive._utils import numerics as _numerics\n"
        "def rss():\n"
        "    line = [ln for ln in open('/proc/self/status') if ln.startswith('VmRSS')][0]\n"
        "    return int(line.split()[1]) * 1024\n"
        "assert _numerics.keep_freed_memory()\n"
        "blocks = [torch.ones(2**24) for _ in range(4)]  # 4 x 64 MiB in the heap\n"
        "del blocks[1], blocks[2]  # two holes below the last block: no top trim\n"
        "held = rss()\n"
        "assert not _numerics.release_freed_memory(keep=2**30)  # 128 MiB free <= keep\n"
        "assert rss() > held - 2**24\n"
        "_numerics.release_freed_memory()\n"
        "print(held - rss())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) >= 100 * 2**20  # most of the two 64 MiB holes went back
