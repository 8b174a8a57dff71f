"""``python -m experiments missing-measurements``: outputs, resume per cell, bad input."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from tests._commands import build_parser, main
from tests.experiments.studies.reuse._networks import grid_network

pytest.importorskip("matplotlib")


def _argv(tmp_path, files, *extra):
    words = ["missing-measurements", "--out", str(tmp_path / "out"), "--data-root",
             str(tmp_path / "data"), "--datasets", "--fractions", "0.3", "--splits", "1",
             "--epochs", "1", "--threads", "1", "--no-progress"]  # fmt: skip
    for f in files:
        words += ["--data-file", str(f)]
    return words + list(extra)


def test_writes_the_tables_and_resumes_finished_cells(tmp_path, capsys):
    grid = grid_network(tmp_path / "g.npz", 4, 3, trips=30)
    assert main(_argv(tmp_path, [grid])) == 0
    out = tmp_path / "out"
    for name in ("missing_measurements.json", "missing_measurements.csv",
                 "missing_measurements.md", "missing_measurements.png", "cells/cells.json",
                 "cells/COMPLETE"):  # fmt: skip
        assert (out / name).is_file(), name
    summary = json.loads((out / "missing_measurements.json").read_text())
    assert list(summary["datasets"]) == ["g"]
    assert summary["settings"]["fractions"] == [0.3]
    md = (out / "missing_measurements.md").read_text()
    assert "| SSCL_Spec encoder | interpolated |" in md and "random 30 %" in md
    capsys.readouterr()
    # without --resume a finished folder is refused; with it nothing is recomputed
    assert main(_argv(tmp_path, [grid])) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(_argv(tmp_path, [grid], "--resume", "--splits", "2")) == 0
    assert "(1 cells computed, 1 resumed)" in capsys.readouterr().err
    assert main(_argv(tmp_path, [grid], "--resume", "--modes", "random")) == 2
    assert "they differ in modes" in capsys.readouterr().err


def test_quick_fills_in_what_is_not_given_and_overwrite_starts_over(tmp_path, capsys):
    grid = grid_network(tmp_path / "g.npz", 4, 3, trips=30)
    words = ["missing-measurements", "--out", str(tmp_path / "out"), "--data-root",
             str(tmp_path / "data"), "--datasets", "--data-file", str(grid), "--quick",
             "--threads", "1", "--no-progress"]  # fmt: skip
    assert main(words + ["--modes", "region"]) == 0
    summary = json.loads((tmp_path / "out" / "missing_measurements.json").read_text())
    assert summary["settings"] == {"fractions": [0.3], "modes": ["region"], "epochs": 1,
                                   "seed": 0, "splits": 1}  # fmt: skip
    assert main(words + ["--overwrite", "--fractions", "0.1", "0.5"]) == 0
    summary = json.loads((tmp_path / "out" / "missing_measurements.json").read_text())
    assert summary["settings"]["fractions"] == [0.1, 0.5]
    assert summary["settings"]["modes"] == ["random", "region"]
    assert "(1 cells computed, 0 resumed)" in capsys.readouterr().err


def test_bad_input_is_refused_before_out_is_written(tmp_path, capsys):
    grid = grid_network(tmp_path / "g.npz", 4, 3, trips=16)
    plain = grid_network(tmp_path / "plain.npz", 4, 3, trips=16, labels=False)
    (tmp_path / "dup").mkdir()
    dup = grid_network(tmp_path / "dup" / "g.npz", 5, 3, trips=16)
    cases = [
        ([grid, plain], [], "plain.npz has no labels"),
        ([grid, dup], [], "has the same name as --data-file"),
        ([], [], "give the data"),
        ([grid], ["--datasets", "oceans"], "unknown dataset 'oceans'"),
        ([tmp_path / "none.npz"], [], "none.npz"),
        ([grid], ["--fractions", "0.3", "0.3"], "`fractions` names 0.3 twice"),
        ([grid], ["--resume", "--overwrite"], "give one of them"),
        ([grid], ["--networks", "nowhere"], "nowhere"),
    ]
    for files, extra, message in cases:
        assert main(_argv(tmp_path, files, *extra)) == 2, message
        err = capsys.readouterr().err
        assert re.search(message, err), err
        assert not (tmp_path / "out").exists()
    for bad in ("0", "1", "1.5", "-0.2", "nan", "a third"):
        with pytest.raises(SystemExit):
            main(_argv(tmp_path, [grid], "--fractions", bad))
        err = capsys.readouterr().err
        assert "argument --fractions: expected a fraction in (0, 1), got" in err, err
    with pytest.raises(SystemExit):
        main(_argv(tmp_path, [grid], "--modes", "block"))
    assert "argument --modes: invalid choice: 'block'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_option_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices["missing-measurements"]
    flags = {f for a in command._actions for f in a.option_strings}
    assert {"--out", "--datasets", "--networks", "--data-file", "--fractions", "--modes",
            "--splits", "--epochs", "--trips", "--seed", "--resume", "--overwrite",
            "--quick", "--data-root"} <= flags  # fmt: skip
    for action in command._actions:
        assert action.help and len(action.help) > 10, action.option_strings
