"""``python -m experiments label-efficiency`` on the tiny trajectory task and a data file."""

from __future__ import annotations

import json

import pytest

from tests._commands import main
from tests._tiny import TINY_FLAGS, tiny_dataset
from topo_contrastive.datasets import EdgeFlows


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("cli_le")


def _cmd(root, out, *extra):
    return ["label-efficiency", "--dataset", "trajectory", "--out", str(out), "--rows", "raw",
            "abs", "--fractions", "0.5", "1", "--draws", "2", "--data-root", str(root / "data"),
            *TINY_FLAGS, "--no-progress", *extra]  # fmt: skip


def test_run_refuse_resume(root, tmp_path, capsys):
    out = tmp_path / "le"
    assert main(_cmd(root, out)) == 0
    shown = capsys.readouterr().out
    assert "| raw flows |" in shown and "| \\|flows\\| |" in shown
    records = json.loads((out / "label_efficiency.json").read_text())["records"]
    assert len(records) == 2 * 2 * 2
    assert main(_cmd(root, out)) == 2  # non-empty --out without --resume / --overwrite
    assert "is not empty" in capsys.readouterr().err
    assert main(_cmd(root, out, "--resume")) == 0
    assert "0 cells computed, 8 resumed" in capsys.readouterr().err
    assert main(_cmd(root, out, "--resume", "--seed", "1")) == 2
    assert "other settings" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["0", "1.5", "x"])
def test_fractions_outside_the_interval(root, tmp_path, bad, capsys):
    with pytest.raises(SystemExit) as err:
        main(["label-efficiency", "--dataset", "trajectory", "--out", str(tmp_path),
              "--fractions", bad])  # fmt: skip
    assert err.value.code == 2
    assert "expected a fraction in (0, 1]" in capsys.readouterr().err


def test_unlabelled_data_file_and_a_class_without_label(root, tmp_path, capsys):
    traj = tiny_dataset(root / "data" / "trajectories")
    walks = tmp_path / "walks.npz"
    EdgeFlows.write_npz(walks, traj.complex, paths=[p.tolist() for p in traj.paths()])
    out = tmp_path / "out"
    argv = ["label-efficiency", "--data-file", str(walks), "--out", str(out), "--no-progress",
            "--data-root", str(root / "data")]  # fmt: skip
    assert main(argv) == 2
    assert "needs labels" in capsys.readouterr().err
    assert main(_cmd(root, tmp_path / "few", "--fractions", "0.02")) == 2
    assert "fewer than the 2 classes" in capsys.readouterr().err
