"""Thread count and pinned code paths (topo_contrastive/_numerics.py and the CLI's line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from topo_contrastive import _numerics
from topo_contrastive.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_pins_take_effect_in_a_fresh_process():
    code = (
        "import os; from topo_contrastive._numerics import pin_code_paths, PINNED_ENV; "
        "print(pin_code_paths()); import torch; "
        "print(torch.backends.cpu.get_cpu_capability()); "
        "print(all(os.environ[k] == v for k, v in PINNED_ENV.items()))"
    )
    env = {k: v for k, v in os.environ.items() if k not in _numerics.PINNED_ENV}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    assert out[0].startswith("code paths pinned (ATEN_CPU_CAPABILITY=avx2, MKL_CBWR=AVX2")
    assert out[1] == "AVX2" and out[2] == "True"


def test_a_user_setting_is_kept_and_a_late_pin_is_reported(monkeypatch):
    import torch  # noqa: F401  (loaded: the pins cannot act in this process)

    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    for key in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE"):
        monkeypatch.delenv(key, raising=False)
    line = _numerics.pin_code_paths()
    assert line.startswith("code paths not pinned (torch and numpy loaded before the pins")
    assert os.environ["MKL_CBWR"] == "COMPATIBLE" and os.environ["ATEN_CPU_CAPABILITY"] == "avx2"


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
    assert capsys.readouterr().err == f"topo-contrastive: {expected[:-1]}; PINS)\n"


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
    """``main`` pins the code paths of ``reproduce --quick`` before torch and numpy load."""
    import subprocess
    import sys

    code = "import sys, topo_contrastive.cli; print('torch' in sys.modules, 'numpy' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "False"]
