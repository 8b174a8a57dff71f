"""``python -m experiments reuse``: outputs, resume per cell, bad input."""

from __future__ import annotations

import json
import re

import pytest

from tests._commands import main
from tests.experiments.studies.reuse._networks import grid_network

pytest.importorskip("matplotlib")


def _argv(tmp_path, files, *extra):
    words = ["reuse", "--out", str(tmp_path / "out"), "--data-root", str(tmp_path / "data"),
             "--fractions", "1", "--draws", "1", "--seeds", "1", "--epochs", "1",
             "--label-epochs", "1", "--hidden-channels", "2", "--threads", "1",
             "--no-progress"]  # fmt: skip
    for f in files:
        words += ["--data-file", str(f)]
    return words + list(extra)


def test_writes_the_tables_and_resumes_finished_cells(tmp_path, capsys):
    files = [grid_network(tmp_path / f"s{w}.npz", w, 3, trips=16, seed=w) for w in (3, 4)]
    assert main(_argv(tmp_path, files, "--held-out", "s3")) == 0
    out = tmp_path / "out"
    for name in ("reuse.json", "reuse.csv", "reuse.md", "reuse.png", "cells/cells.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "reuse.json").read_text())
    assert list(summary["held_out"]) == ["s3"] and "target" in summary
    assert "| transferred, probed |" in (out / "reuse.md").read_text()
    capsys.readouterr()
    # without --resume a finished folder is refused; with it nothing is recomputed
    assert main(_argv(tmp_path, files, "--held-out", "s3")) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(_argv(tmp_path, files, "--held-out", "s3", "--resume")) == 0
    assert "(0 cells computed, 1 resumed)" in capsys.readouterr().err


def test_bad_input_is_refused_before_out_is_written(tmp_path, capsys):
    a = grid_network(tmp_path / "a.npz", 3, 3, trips=16)
    b = grid_network(tmp_path / "b.npz", 4, 3, trips=16)
    plain = grid_network(tmp_path / "plain.npz", 5, 3, trips=16, labels=False)
    cases = [
        ([a, a], "has the same name"),
        ([a, b, plain], "'plain' .* has no labelled trips"),
        ([a], "at least two networks"),
        ([], "give the networks"),
    ]
    for files, message in cases:
        assert main(_argv(tmp_path, files)) == 2
        err = capsys.readouterr().err
        assert re.search(message, err), err
        assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit):
        main(_argv(tmp_path, [a, b], "--fractions", "0"))
    assert "expected a fraction in (0, 1]" in capsys.readouterr().err
