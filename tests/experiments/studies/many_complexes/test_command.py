"""``python -m experiments many-complexes``: outputs, resume per cell, pooled data files, bad
input."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from experiments.studies.many_complexes import DEFAULT_ROWS, REFERENCES, ROWS, Row
from tests._commands import main
from tests.experiments.studies.reuse._networks import grid_network

pytest.importorskip("matplotlib")


def _argv(tmp_path, *extra):
    return ["many-complexes", "--out", str(tmp_path / "out"), "--data-root",
            str(tmp_path / "data"), "--threads", "1", "--no-progress", *extra]  # fmt: skip


def test_quick_writes_every_row_and_resumes_finished_cells(tmp_path, capsys):
    assert main(_argv(tmp_path, "--quick")) == 0
    out = tmp_path / "out"
    for name in ("many_complexes.json", "many_complexes.csv", "many_complexes.md",
                 "many_complexes.png", "cells/cells.json", "cells/COMPLETE"):  # fmt: skip
        assert (out / name).is_file(), name
    summary = json.loads((out / "many_complexes.json").read_text())
    assert list(summary["rows"]) == list(DEFAULT_ROWS)
    st = summary["settings"]
    assert (st["data"]["samples"], st["seeds"], st["epochs"], st["hidden"], st["draws"],
            st["fractions"]) == (40, 1, 1, 8, 2, [0.25, 1.0])  # fmt: skip
    for per in summary["rows"].values():  # 2 draws at 25 %, one at 100 %
        assert len(per["0.25"]["runs"]) == 2 and len(per["1"]["runs"]) == 1
        assert all(0 <= a <= 1 for a in per["0.25"]["runs"] + per["1"]["runs"])
    md = (out / "many_complexes.md").read_text()
    assert all(f"| {row} |" in md for row in DEFAULT_ROWS) and "40 samples" in md
    csv_lines = (out / "many_complexes.csv").read_text().splitlines()
    assert csv_lines[0] == "row,fraction,mean,std,runs"
    assert len(csv_lines) == 1 + 2 * len(DEFAULT_ROWS)
    captured = capsys.readouterr()
    assert "| supervised SCNN |" in captured.out
    # without --resume a finished folder is refused; with it nothing is recomputed
    assert main(_argv(tmp_path, "--quick")) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(_argv(tmp_path, "--quick", "--resume")) == 0
    assert f"(0 cells computed, {len(DEFAULT_ROWS)} resumed)" in capsys.readouterr().err
    again = json.loads((out / "many_complexes.json").read_text())
    assert again["rows"] == summary["rows"]
    # other rows: refused, naming them
    assert main(_argv(tmp_path, "--quick", "--resume", "--rows", "energy fractions")) == 2
    assert "they differ in rows" in capsys.readouterr().err


def test_an_interrupted_run_resumes_without_recomputing_finished_cells(tmp_path, capsys,
                                                                       monkeypatch):  # fmt: skip
    calls: list = []
    original = ROWS["energy fractions"].features

    def counted(cell):
        calls.append(cell.index)
        if cell.index == 1 and calls.count(1) == 1:
            raise KeyboardInterrupt  # the first try of seed 1
        return original(cell)

    monkeypatch.setitem(ROWS, "energy fractions", Row(features=counted))
    words = _argv(tmp_path, "--samples", "30", "--seeds", "2", "--fractions", "1",
                  "--rows", "length, total flow", "energy fractions")  # fmt: skip
    assert main(words) == 130  # interrupted in seed 1, at its first row (registry order)
    assert calls == [0, 1]
    capsys.readouterr()
    assert main([*words, "--resume"]) == 0
    assert calls == [0, 1, 1]  # seed 0's cells read back, seed 1's computed
    assert "(2 cells computed, 2 resumed)" in capsys.readouterr().err


def test_data_files_are_pooled_each_sample_on_its_files_complex(tmp_path, capsys):
    a = grid_network(tmp_path / "a.npz", 3, 3, trips=20, seed=1)
    b = grid_network(tmp_path / "b.npz", 4, 3, trips=20, seed=2)
    words = _argv(tmp_path, "--data-file", str(a), "--data-file", str(b), "--fractions", "1",
                  "--draws", "1", "--seeds", "1", "--rows", *REFERENCES)  # fmt: skip
    assert main(words) == 0
    summary = json.loads((tmp_path / "out" / "many_complexes.json").read_text())
    data = summary["data"]
    assert list(data["networks"]) == ["a", "b"] and data["samples"] == 40
    assert [v["samples"] for v in data["networks"].values()] == [20, 20]
    # the mean edges: 12 of the 3 x 3 grid and 17 of the 4 x 3 grid, half the samples each
    assert data["mean_edges"] == pytest.approx((12 + 17) / 2)
    assert list(summary["rows"]) == list(REFERENCES)
    assert "pooled from a, b" in (tmp_path / "out" / "many_complexes.md").read_text()


def test_bad_input_is_refused_before_out_is_written(tmp_path, capsys):
    a = grid_network(tmp_path / "a.npz", 3, 3, trips=16)
    plain = grid_network(tmp_path / "plain.npz", 5, 3, trips=16, labels=False)
    one = grid_network(tmp_path / "one.npz", 4, 3, trips=16, one_class=True)
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "a.npz"
    copy.write_bytes(a.read_bytes())
    cases = [
        (["--data-file", str(a), "--data-file", str(plain)], "'plain' .* has no labelled"),
        (["--data-file", str(a), "--data-file", str(copy)], "has the same name as --data-file"),
        (["--data-file", str(one)], "every labelled sample has the label 1"),
        (["--data-file", str(tmp_path / "none.npz")], "none.npz"),
        (["--data-file", str(a), "--samples", "50"], "--samples 50 sizes the default task"),
        (["--rows", "SSCL_Spec", "nope"], r"--rows: unknown row\(s\) 'nope'; the rows are"),
        (["--rows", "SCL", "SCL"], "--rows names a row twice"),
        (["--resume", "--overwrite"], "give one of them"),
        (["--samples", "10", "--fractions", "0.01"], "fraction"),
    ]
    for extra, message in cases:
        assert main(_argv(tmp_path, *extra)) == 2, extra
        err = capsys.readouterr().err
        assert re.search(message, err), (extra, err)
        assert not (tmp_path / "out").exists()
    refused_by_argparse = [
        ("--fractions", "0", r"expected a fraction in \(0, 1\], got 0"),
        ("--fractions", "1.5", r"in \(0, 1\], got 1.5"),
        ("--budget", "1", r"expected a budget in \(0, 1\), got 1"),
        ("--samples", "3", "expected an integer >= 10, got 3"),
    ]
    for option, value, expected in refused_by_argparse:
        with pytest.raises(SystemExit):
            main(_argv(tmp_path, option, value))
        err = capsys.readouterr().err
        assert f"argument {option}" in err and re.search(expected, err), err
    assert not (tmp_path / "out").exists()
    assert np.load(a).files  # the data files are only read


def test_every_flag_has_help_text():
    import argparse

    from tests._commands import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices["many-complexes"]
    flags = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert {"out", "samples", "data_file", "networks", "fractions", "draws", "seeds", "epochs",
            "hidden", "layers", "batch_size", "budget", "temperature", "seed", "rows", "resume",
            "overwrite", "quick"} <= {a.dest for a in flags}  # fmt: skip
    for action in flags:
        assert action.help and len(action.help) > 10, action.dest
