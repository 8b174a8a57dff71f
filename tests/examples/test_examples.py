"""Every script in ``examples/`` answers ``--help`` on every flag and has a fast mode
(``--fast`` or ``--quick``); the runs in that mode are slow checks (``pytest -m slow``, which
CI runs): a few minutes together on 2 cores."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
PYTSPL_MISSING = (
    "the optional `pytspl` package is not installed: the Chicago example reads its data files "
    "(pip install --no-deps pytspl==0.1.5, as .ci/run does)"
)
# Extra arguments so that nothing is written into the repository.
_OUT_FLAGS = {"--out-dir": "out", "--out": "out", "--root": "data"}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _skip_without_extras(script: Path) -> None:
    if "topomodelx" in script.name and importlib.util.find_spec("topomodelx") is None:
        pytest.skip("the `topomodelx` extra is not installed")
    if "pytspl" in script.name and importlib.util.find_spec("pytspl") is None:
        pytest.skip(PYTSPL_MISSING)


def _help(script: Path, cwd: Path) -> str:
    helped = subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True, text=True, timeout=120, env=_env(), cwd=cwd,
    )  # fmt: skip
    assert helped.returncode == 0, helped.stderr
    return helped.stdout


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_has_help_and_a_fast_mode(script, tmp_path):
    _skip_without_extras(script)
    text = _help(script, tmp_path)
    assert "--fast" in text or "--quick" in text, f"{script.name} has no --fast/--quick mode"


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_in_fast_mode(script, tmp_path):
    _skip_without_extras(script)
    text = _help(script, tmp_path)
    fast = "--fast" if "--fast" in text else "--quick"
    argv = [fast]
    for flag, sub in _OUT_FLAGS.items():
        if flag in text.replace(",", " ").split():
            argv += [flag, str(tmp_path / sub)]
    if "--no-progress" in text:
        argv.append("--no-progress")
    res = subprocess.run(
        [sys.executable, str(script), *argv],
        capture_output=True, text=True, timeout=300, env=_env(), cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
