"""The ``topo-contrastive`` command line (on a tiny trajectory task)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests._commands import main
from tests._tiny import TINY_FLAGS
from topo_contrastive.training.fields import parse_grid

#: how the two programs begin an error message
ERROR_PREFIXES = ("topo-contrastive: error:", "python -m experiments: error:")


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("cli_data")


def _flags(data_root):
    return ["--data-root", str(data_root), *TINY_FLAGS, "--no-progress"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, data_root):
    out = tmp_path_factory.mktemp("pretrain")
    rc = main(
        ["pretrain", "--dataset", "trajectory", "--config", "SSCL_Spec", "--epochs", "2",
         "--hidden-channels", "16", "--seed", "1", "--out", str(out), *_flags(data_root)]
    )
    assert rc == 0
    return out / "encoder.pt"


def test_pretrain_writes_checkpoint_and_log(checkpoint):
    files = sorted(p.name for p in checkpoint.parent.iterdir())
    assert files == ["COMPLETE", "encoder.pt", "pretrain.json"]
    assert json.loads((checkpoint.parent / "pretrain.json").read_text())["complete"] is True
    obj = torch.load(checkpoint, weights_only=True)
    assert obj["metadata"]["config"] == "SSCL_Spec"
    assert obj["metadata"]["architecture"]["hidden_channels"] == 16
    log = json.loads((checkpoint.parent / "pretrain.json").read_text())
    assert log["epochs"] == 2 and len(log["losses"]) == 2 and log["world_size"] == 1


def test_interrupted_pretrain_never_looks_complete(tmp_path, data_root, monkeypatch, capsys):
    """An interrupted ``--overwrite`` run leaves the earlier run as it was: the new one is
    written beside the folder and swapped in only when complete."""
    import topo_contrastive.training.loop as training

    out = tmp_path / "run"
    cmd = ["pretrain", "--dataset", "trajectory", "--config", "SCL", "--epochs", "1",
           "--hidden-channels", "8", "--out", str(out), *_flags(data_root)]  # fmt: skip
    assert main(cmd) == 0 and (out / "COMPLETE").is_file()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    seen = {}

    def interrupted(*args, **kwargs):  # Ctrl-C during training, as seen from the folders
        seen["files"] = sorted(p.name for p in out.iterdir())
        staged = [p for p in tmp_path.iterdir() if p.name.startswith(".run.") and p.is_dir()]
        seen["staged"] = {p.name: sorted(q.name for q in p.iterdir()) for p in staged}
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "pretrain", interrupted)
    assert main([*cmd, "--overwrite"]) == 130  # a second run into the folder
    # meanwhile the earlier run was whole; the new one was written in a staging folder
    assert seen["files"] == ["COMPLETE", "encoder.pt", "pretrain.json"]
    (stage,) = [files for name, files in seen["staged"].items() if name.endswith(".tmp")]
    assert stage == ["pretrain.json"]
    # after the interruption: the earlier run, byte for byte; no staging folder, no lock
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_evaluate_a_saved_encoder(checkpoint, data_root, tmp_path, capsys):
    out = tmp_path / "eval.json"
    rc = main(
        ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory", "--seeds", "2",
         "--out", str(out), *_flags(data_root)]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "SSCL_Spec on trajectory: test accuracy" in printed
    res = json.loads(out.read_text())
    assert len(res["splits"]) == 2 and 0 <= res["mean_accuracy"] <= 100
    # the reference rows: same splits, stated protocol, one line on which rows beat it
    refs = res["references"]
    assert [r["row"] for r in refs["rows"]] == ["encoder", "untrained", "raw", "abs", "harmonic"]
    assert all(len(r["splits"]) == 2 for r in refs["rows"])
    assert refs["protocol"]["split_seeds"] == [0, 1]
    assert "Same splits, same probe: 2 split(s) (seeds 0-1) of " in printed
    # the default probe: ridge, its penalty by leave-one-out on the training split
    assert "(ridge probe, alpha by leave-one-out)" in printed and res["probe"] == "ridge"
    assert "ridge classifier on standardised features" in printed and "leave-one-out" in printed
    assert all("alpha" in s for r in refs["rows"] for s in r["splits"])
    for r in refs["rows"]:
        assert f"{r['label']}" in printed and f"{r['mean_accuracy']:5.1f} ±" in printed
    line = refs["line"][0].upper() + refs["line"][1:] + "."
    assert printed.rstrip().endswith(line)
    assert ("is below:" in line) == bool(refs["below"])
    md = (tmp_path / "eval.md").read_text()
    assert "| raw flows |" in md and line in md
    # the Markdown beside --out is not replaced without --overwrite
    again = tmp_path / "again.json"
    (tmp_path / "again.md").write_text("notes")
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory", "--seeds",
            "1", "--out", str(again), *_flags(data_root)]  # fmt: skip
    assert main(argv) == 2
    assert "again.md' beside --out already exists" in capsys.readouterr().err
    assert not again.exists() and (tmp_path / "again.md").read_text() == "notes"
    # --no-references: the encoder alone, as before; --probe svm: Table 1's probe
    assert main([*argv, "--no-references", "--probe", "svm"]) == 0
    printed = capsys.readouterr().out
    assert "Same splits" not in printed and "(linear SVM, C by 10-fold CV)" in printed
    again_res = json.loads(again.read_text())
    assert "references" not in again_res and again_res["probe"] == "svm"
    assert "C" in again_res["splits"][0] and "alpha" not in again_res["splits"][0]
    assert (tmp_path / "again.md").read_text() == "notes"


def test_interrupted_evaluate_never_leaves_the_json_of_another_report(
    checkpoint, data_root, tmp_path, monkeypatch, capsys
):
    import topo_contrastive.cli._runs as runs

    out = tmp_path / "eval.json"
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory", "--out",
            str(out), *_flags(data_root)]  # fmt: skip
    assert main([*argv, "--seeds", "2"]) == 0
    seen = {}

    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(before) == ["eval.json", "eval.md"]

    def interrupted(path, text):  # killed while the report of a second run is written
        seen["files"] = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "write_text", interrupted)
    assert main([*argv, "--seeds", "3", "--overwrite"]) == 130
    # the earlier JSON and report stay, byte for byte, during and after the interrupted run
    assert seen["files"] == ["eval.json", "eval.md"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    monkeypatch.undo()
    assert main([*argv, "--seeds", "3"]) == 2  # the earlier result is kept without --overwrite
    assert main([*argv, "--seeds", "3", "--overwrite"]) == 0
    assert len(json.loads(out.read_text())["splits"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.json", "eval.md"]


def test_evaluate_supervised_row(checkpoint, data_root, tmp_path, capsys, monkeypatch):
    """--supervised adds the supervised SCNN of the checkpoint's architecture, trained with the
    supervised configuration of its edition (here cut to 2 epochs), to the printed rows, the
    JSON and the Markdown."""
    from topo_contrastive.training import configs

    real = configs.get_config
    seen = []

    def short(name, *args, **kwargs):
        cfg = real(name, *args, **kwargs)
        seen.append(cfg.name)
        return cfg.replace(epochs=2) if cfg.name == "SCNN" else cfg

    monkeypatch.setattr(configs, "get_config", short)
    out = tmp_path / "sup.json"
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory", "--seeds",
            "1", "--no-references", "--supervised", "--out", str(out), *_flags(data_root)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "SCNN" in seen
    rows = json.loads(out.read_text())["references"]["rows"]
    assert [r["row"] for r in rows] == ["encoder", "supervised"]
    assert rows[1]["splits"][0]["epochs"] <= 2 and rows[1]["features"] == rows[0]["features"]
    assert "supervised SCNN (same architecture, from scratch)" in printed
    assert "Supervised row: an SCNN of the encoder's architecture" in printed
    assert "| supervised SCNN (same architecture, from scratch) |" in out.with_suffix(
        ".md"
    ).read_text()


def test_evaluate_rejects_other_width(checkpoint, data_root, tmp_path, capsys):
    out = tmp_path / "eval.json"
    rc = main(
        ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
         "--hidden-channels", "64", "--out", str(out), *_flags(data_root)]
    )
    assert rc == 2
    assert "hidden_channels: checkpoint 16 vs expected 64" in capsys.readouterr().err
    assert not out.exists()
    rc = main(
        ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
         "--config", "SCL", *_flags(data_root)]
    )
    assert rc == 2


def test_evaluate_rejects_other_complex(checkpoint, tmp_path, capsys):
    flags = ["--data-root", str(tmp_path), "--trajectory-points", "160",
             "--trajectory-split", "4", "2", "2", "--no-progress"]
    rc = main(["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory", *flags])
    assert rc == 2
    assert "trained on another complex" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["pretrain", "--dataset", "trajectory", "--config", "MoCo"], "unknown configuration"),
        (["pretrain", "--dataset", "mnist", "--config", "SCL"], "unknown dataset"),
        (["pretrain", "--dataset", "trajectory", "--config", "SCNN"], "supervised baseline"),
        (["reproduce", "--configs", "SCL", "BYOL"], "unknown configuration"),
        (["reproduce", "--datasets", "cora"], "unknown dataset"),
    ],
)
def test_bad_names_are_clear_errors(argv, message, tmp_path, data_root, capsys):
    rc = main([*argv, "--out", str(tmp_path / "out"), *_flags(data_root)])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith(ERROR_PREFIXES) and message in err
    assert not (tmp_path / "out" / "encoder.pt").exists()


def test_unwritable_out_fails_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file")
    data_root = tmp_path / "data"
    for argv in (
        ["reproduce", "--quick", "--out", str(blocker / "out")],
        ["pretrain", "--dataset", "trajectory", "--config", "SCL", "--out", str(blocker / "o")],
    ):
        rc = main([*argv, *_flags(data_root)])
        assert rc == 2
        assert "cannot be written" in capsys.readouterr().err
    assert not data_root.exists()  # no dataset was built


def test_missing_checkpoint(tmp_path, data_root, capsys):
    rc = main(
        ["evaluate", "--checkpoint", str(tmp_path / "none.pt"), "--dataset", "trajectory",
         *_flags(data_root)]
    )
    assert rc == 2 and "does not exist" in capsys.readouterr().err


def test_reproduce_tiny(tmp_path, data_root, capsys):
    out = tmp_path / "res"
    rc = main(
        ["reproduce", "--quick", "--datasets", "trajectory", "--configs", "SCL", "SCNN",
         "--epochs", "1", "--seeds", "2", "--pretrain-seeds", "1", "--figure2-dataset", "none",
         "--no-figure1", "--out", str(out), *_flags(data_root)]
    )
    assert rc == 0
    assert {p.name for p in out.iterdir()} == {"runs.json", "runs.csv", "table1.md", "COMPLETE"}
    printed = capsys.readouterr()
    assert "REDUCED SETTINGS" in printed.out and "NOTE: reduced settings" in printed.err
    # says what its numbers are and are not, what to run for the paper's protocol, and
    # prints no paper target as missed
    assert "not the paper's protocol" in printed.out and "not the paper's protocol" in printed.err
    assert "reproduce --out results/full" in printed.out + printed.err
    assert "MISSED" not in printed.out + printed.err
    table = (out / "table1.md").read_text()
    assert "--epochs 1" in table
    # every flag the table names exists (it once printed `--quick+overrides`)
    import re

    from tests._commands import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["reproduce"]
    known = {s for a in sub._actions for s in a.option_strings}
    assert set(re.findall(r"(?<![\w-])--[a-z][\w+-]*", table)) <= known


@pytest.mark.parametrize("epochs, reduced", [(19, True), (20, False), (200, False)])
def test_reproduce_epochs_override_is_reduced_below_the_configurations(
    tmp_path, data_root, monkeypatch, epochs, reduced
):
    """``--epochs`` marks the run reduced only below a configuration's own epochs (SCL on the
    trajectories: 20), not below the paper's 200."""
    import importlib

    # the package re-exports the function under the module's name: fetch the module itself
    rep = importlib.import_module("experiments.reproduce")

    class Stop(Exception):
        pass

    seen = {}

    def fake_reproduce(*args, preset, **kwargs):
        seen["preset"] = preset
        raise Stop

    monkeypatch.setattr(rep, "reproduce", fake_reproduce)
    with pytest.raises(Stop):
        main(
            ["reproduce", "--datasets", "trajectory", "--configs", "SCL", "--epochs", str(epochs),
             "--out", str(tmp_path / "res"), *_flags(data_root)]
        )
    assert seen["preset"].reduced is reduced
    assert seen["preset"].epochs == {"trajectory": epochs, "ocean": epochs}


def test_module_entry_point_and_help():
    res = subprocess.run(
        [sys.executable, "-m", "topo_contrastive.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0
    for word in ("pretrain", "evaluate", "embed"):
        assert word in res.stdout
    assert "reproduce" not in res.stdout  # the paper's commands are beside the package
    res = subprocess.run(
        [sys.executable, "-m", "experiments", "--help"], capture_output=True, text=True,
        timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert res.returncode == 0 and res.stdout.startswith("usage: python -m experiments")
    for word in ("reproduce", "search", "label-efficiency", "reuse", "many-complexes"):
        assert word in res.stdout
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--seeds", "0"])
    assert exc.value.code == 2


def test_search_writes_a_csv(tmp_path, data_root, capsys):
    out = tmp_path / "search.csv"
    rc = main(
        ["search", "--dataset", "trajectory", "--config", "SSCL", "--grid",
         "gamma=[1,1,1];[0,0,1]", "--epochs", "1", "--seeds", "1", "--out", str(out),
         *_flags(data_root)]
    )
    assert rc == 0
    lines = out.read_text().strip().splitlines()
    assert lines[0].startswith("gamma,score") and len(lines) == 3
    assert '"best"' in capsys.readouterr().out
    rc = main(["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "eta=1",
               "--out", str(out), *_flags(data_root)])  # fmt: skip
    assert rc == 2 and "unknown configuration field" in capsys.readouterr().err


def test_search_grid_bool_field_runs(tmp_path, data_root, capsys):
    # `--grid normalize=False` used to reach the encoder as the string "False"
    out = tmp_path / "search.csv"
    rc = main(
        ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "normalize=False",
         "--epochs", "1", "--seeds", "1", "--out", str(out), *_flags(data_root)]
    )
    assert rc == 0, capsys.readouterr().err
    lines = out.read_text().strip().splitlines()
    assert lines[0].startswith("normalize,score") and lines[1].startswith("False,")


@pytest.mark.parametrize(
    "entries, expected",
    [
        (["normalize=False,true,TRUE,1,0"], {"normalize": [False, True, True, True, False]}),
        (["bias=false"], {"bias": [False]}),
        (["K=1,2,3"], {"K": [1, 2, 3]}),
        (["K_down=0", "epochs=5"], {"K_down": [0], "epochs": [5]}),
        (["lr=0.1,1e-2,1"], {"lr": [0.1, 0.01, 1.0]}),
        (["optimizer=adam,'sgd'", "act=relu"], {"optimizer": ["adam", "sgd"], "act": ["relu"]}),
        (["gamma=(0,1,1)"], {"gamma": [(0.0, 1.0, 1.0)]}),
        (["gamma=(1,1,1),[0, 0.5, 1]"], {"gamma": [(1.0, 1.0, 1.0), (0.0, 0.5, 1.0)]}),
        (["gamma=[1,1,1];[0,0,1]"], {"gamma": [(1.0, 1.0, 1.0), (0.0, 0.0, 1.0)]}),
        (["lr=0.1;0.01"], {"lr": [0.1, 0.01]}),
        (
            ["perturb=gradient,(gradient,curl),(curl,),()"],
            {"perturb": [("gradient",), ("gradient", "curl"), ("curl",), ()]},
        ),
        (['preserve=["curl","harmonic"]'], {"preserve": [("curl", "harmonic")]}),
    ],
)
def test_parse_grid_types_values_by_field(entries, expected):
    grid = parse_grid(entries)
    assert grid == expected
    for key, values in grid.items():  # exact types, not only equal values (True == 1)
        for got, want in zip(values, expected[key], strict=True):
            assert type(got) is type(want)
            if isinstance(got, tuple):
                assert [type(g) for g in got] == [type(w) for w in want]


@pytest.mark.parametrize(
    "entries, message",
    [
        (["normalize=maybe"], "--grid normalize=maybe: field 'normalize': expected a bool"),
        (["bias=yes"], "field 'bias': expected a bool (true/false or 1/0), got 'yes'"),
        (["K=1.5"], "field 'K': expected an integer, got '1.5'"),
        (["epochs=ten"], "field 'epochs': expected an integer, got 'ten'"),
        (["lr=0.1,abc"], "field 'lr': expected a real number, got 'abc'"),
        (["lr=0.1,"], "field 'lr': expected a value, got ''"),
        (["gamma=(0,1)"], "field 'gamma': expected a tuple of 3 values, got '(0,1)'"),
        (["gamma=0,1,1"], "field 'gamma': expected a tuple in brackets"),
        (["gamma=(0,a,1)"], "expected a real number, got 'a' (in '(0,a,1)')"),
        (["gamma=(0,1,1"], "unbalanced brackets"),
        (["eta=1"], "unknown configuration field 'eta'"),
        (["lr"], "FIELD=V1,V2"),
        (["lr=0.1", "lr=0.2"], "given twice"),
        (["K=1", "K_up=2"], "K sets both K_down and K_up"),
    ],
)
def test_parse_grid_bad_values_name_the_field(entries, message):
    with pytest.raises(ValueError) as exc:
        parse_grid(entries)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    "grid, message",
    [
        ("normalize=maybe", "field 'normalize': expected a bool"),
        ("K=2,-1", "--grid K=-1: `K_down` must be >= 0, got -1"),
        ("lr=0.1,-1", "--grid lr=-1.0: `lr` = -1.0 is out of range"),
        ("perturb=(gradient,div)", "`perturb` must hold Hodge components"),
    ],
)
def test_search_rejects_bad_grid_before_any_work(grid, message, tmp_path, capsys):
    data_root = tmp_path / "data"
    out = tmp_path / "search.csv"
    rc = main(["search", "--dataset", "trajectory", "--config", "SCL", "--grid", grid,
               "--out", str(out), *_flags(data_root)])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith(ERROR_PREFIXES) and message in err
    assert not out.exists() and not data_root.exists()  # no dataset was built


def test_version(capsys):
    from topo_contrastive import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"topo-contrastive {__version__}"


def test_pretrain_help_offers_only_what_pretrain_accepts():
    import re

    from tests._commands import build_parser
    from topo_contrastive.training import CONFIG_NAMES, get_config

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["pretrain"]
    config_help = next(a.help for a in sub._actions if a.dest == "config")
    offered = re.search(r"Table 1: ([\w, ]+) \(", config_help).group(1).split(", ")
    assert offered == [c for c in CONFIG_NAMES if get_config(c, "trajectory").is_contrastive]
    assert "SCNN" not in offered  # the one row `pretrain` rejects


def test_non_empty_out_needs_overwrite(checkpoint, data_root, tmp_path, capsys):
    out = checkpoint.parent
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    argv = ["pretrain", "--dataset", "trajectory", "--config", "SSCL_Spec", "--epochs", "1",
            "--hidden-channels", "16", "--out", str(out), *_flags(data_root)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is not empty (it holds COMPLETE, encoder.pt, pretrain.json); pass --overwrite" in err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before  # untouched
    existing = tmp_path / "done.json"
    existing.write_text("{}")
    for argv2 in (
        ["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory"],
        ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1"],
    ):
        assert main([*argv2, "--out", str(existing), *_flags(data_root)]) == 2
        assert "already exists; pass --overwrite" in capsys.readouterr().err
    assert existing.read_text() == "{}"
    res = tmp_path / "res"
    (res / "old").mkdir(parents=True)
    assert main(["reproduce", "--quick", "--out", str(res), *_flags(data_root)]) == 2
    assert "is not empty (it holds old)" in capsys.readouterr().err
    # with --overwrite the run goes ahead (here: a fresh encoder into the same folder)
    again = tmp_path / "again"
    import shutil

    shutil.copytree(out, again)
    argv[argv.index(str(out))] = str(again)
    assert main([*argv, "--overwrite"]) == 0
    assert torch.load(again / "encoder.pt", weights_only=True)["metadata"]["epochs"] == 1


def test_progress_lines_when_stderr_is_not_a_terminal(
    checkpoint, data_root, tmp_path, capsys, monkeypatch
):
    """Without a terminal (logs, CI) progress comes as plain lines, not a tqdm bar."""
    from topo_contrastive.cli import _common

    monkeypatch.setattr(_common, "LINE_INTERVAL", 0.0)  # a line per step (default: every 30 s)
    flags = [f for f in _flags(data_root) if f != "--no-progress"]
    rc = main(["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
               "--seeds", "2", *flags])  # fmt: skip
    assert rc == 0
    err = capsys.readouterr().err.splitlines()
    # one display for the encoder and the four reference rows on both splits: the probes
    # done, the probes left and the expected time of the whole evaluation
    lines = [e for e in err if e.startswith("evaluate SSCL_Spec trajectory:")]
    assert len(lines) == 10 and "1/10" in lines[0] and "10/10" in lines[-1]
    assert "row=encoder" in lines[0] and "row=harmonic" in lines[-1]
    assert "test_acc=" in lines[1] and "<" in lines[1] and "\r" not in "".join(err)
    rc = main(["pretrain", "--dataset", "trajectory", "--config", "SCL", "--epochs", "2",
               "--hidden-channels", "8", "--out", str(tmp_path / "p"), *flags])  # fmt: skip
    assert rc == 0
    err = capsys.readouterr().err.splitlines()
    lines = [e for e in err if e.startswith("pretrain SCL trajectory:")]
    assert len(lines) == 2 and "2/2" in lines[1] and "loss=" in lines[1]
    # --no-progress: no progress lines at all
    rc = main(["evaluate", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
               "--seeds", "1", *_flags(data_root)])  # fmt: skip
    assert rc == 0 and "evaluate SSCL_Spec" not in capsys.readouterr().err


def test_predict_next_reuses_the_encoder_beside_the_baselines(checkpoint, data_root, tmp_path,
                                                              capsys):  # fmt: skip
    """predict-next: every row on the same seeds, printed, JSON (written last) and Markdown;
    the --out folder is made when missing (before the work); an existing --out is kept
    without --overwrite; an --out under a regular file is refused before any work."""
    out = tmp_path / "new" / "folder" / "next.json"
    argv = ["predict-next", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
            "--seeds", "2", "--epochs", "2", "--out", str(out), *_flags(data_root)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    res = json.loads(out.read_text())
    rows = {r["row"]: r for r in res["rows"]}
    assert list(rows) == ["uniform", "markov", "scratch", "untrained", "frozen", "finetune"]
    assert all([s["seed"] for s in r["splits"]] == [0, 1] for r in rows.values())
    assert all(s["epoch"] <= 2 for s in rows["frozen"]["splits"])
    for r in rows.values():
        assert f"| {r['label']} | {r['mean_accuracy']:.1f} ±" in printed
    assert out.with_suffix(".md").read_text().startswith("# Next-node prediction on trajectory")
    before = out.read_text()
    assert main(argv) == 2 and out.read_text() == before
    assert "already exists" in capsys.readouterr().err
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    bad = [*argv[:-len(_flags(data_root)) - 2], "--out", str(blocker / "next.json"),
           *_flags(data_root)]  # fmt: skip
    assert main(bad) == 2
    assert "cannot be written" in capsys.readouterr().err


def test_predict_next_transfer_scores_every_row_under_every_test(checkpoint, data_root,
                                                                tmp_path, capsys):  # fmt: skip
    """predict-next --transfer: the standard, reversed and other-region tests, one column
    each; the standard column is the plain command's number on the same seed."""
    out = tmp_path / "transfer.json"
    argv = ["predict-next", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
            "--seeds", "1", "--epochs", "2", "--transfer", "--out", str(out),
            *_flags(data_root)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    res = json.loads(out.read_text())
    assert list(res["tests"]) == ["test", "reversed", "other region"]
    assert "| row | test | reversed | other region |" in printed
    plain = tmp_path / "plain.json"
    assert main([*argv[:9], "--out", str(plain), *_flags(data_root)]) == 0
    want = {r["row"]: r["mean_accuracy"] for r in json.loads(plain.read_text())["rows"]}
    got = {r["row"]: r["mean_accuracy"] for r in res["tests"]["test"]["rows"]}
    assert got == want


def test_predict_next_fraction_labels_part_of_the_prefixes(checkpoint, data_root, tmp_path,
                                                           capsys):  # fmt: skip
    """predict-next --fraction: the rows of next_node_rows(fraction=...) on the same seed; the
    table says the fraction; fractions outside (0, 1] and --fraction with --transfer exit 2."""
    from experiments.studies.next_node import rows as nn_
    from topo_contrastive import io
    from topo_contrastive.training.data import ExperimentData, load_dataset

    out = tmp_path / "next.json"
    base = ["predict-next", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
            "--seeds", "1", "--epochs", "2", *_flags(data_root)]  # fmt: skip
    assert main([*base, "--fraction", "0.1", "--out", str(out)]) == 0
    assert "2 of 20 training prefixes labelled (10.0 %; --fraction 0.1)" in capsys.readouterr().out
    res = json.loads(out.read_text())
    ds = load_dataset("trajectory", data_root=str(data_root), trajectory_points=150,
                      trajectory_split=(20, 10, 10))  # the data of TINY_FLAGS
    data = ExperimentData.from_dataset(ds, "trajectory")
    encoder, _ = io.load_encoder(checkpoint, complex=data.hodge)
    want = nn_.next_node_rows(encoder, data, [0], epochs=2, fraction=0.1)
    assert res["fraction"] == 0.1
    assert [r["mean_accuracy"] for r in res["rows"]] == pytest.approx(
        [r["mean_accuracy"] for r in want["rows"]])
    for bad in (["--fraction", "0"], ["--fraction", "1.5"], ["--fraction", "0.5", "--transfer"]):
        assert main([*base, *bad]) == 2
        assert "--fraction" in capsys.readouterr().err


def test_predict_next_scone_is_refused_clearly_before_any_work(checkpoint, data_root, tmp_path,
                                                               capsys):  # fmt: skip
    """--scone without TopoModelX (this environment), alone and with --transfer: exit 2 with
    a message naming what to do, nothing written (the row itself is tested in
    tests/nn/test_topomodelx_interop.py, in the TopoModelX environment)."""
    from experiments.studies.next_node.scone import scone_available

    if scone_available():
        pytest.skip("TopoModelX is installed: the row runs (tests/nn/test_topomodelx_interop.py)")
    out = tmp_path / "next.json"
    base = ["predict-next", "--checkpoint", str(checkpoint), "--dataset", "trajectory",
            "--seeds", "1", "--epochs", "1", "--out", str(out), *_flags(data_root)]  # fmt: skip
    for extra in (["--scone"], ["--scone", "--transfer"]):
        assert main([*base, *extra]) == 2
        assert "pip install --no-deps topomodelx" in capsys.readouterr().err
    assert not out.exists()


def test_predict_next_refuses_data_without_paths(checkpoint, tmp_path, capsys):
    """A data file of flows without node paths: a clear error naming what is missing."""
    from topo_contrastive import ComplexOperators
    from topo_contrastive.datasets import EdgeFlows

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
    f = tmp_path / "flows.npz"
    flows = torch.randn(6, 3, generator=torch.Generator().manual_seed(0)).numpy()
    EdgeFlows.write_npz(f, ops, flows)
    rc = main(["predict-next", "--checkpoint", str(checkpoint), "--data-file", str(f),
               "--data-root", str(tmp_path / "root"), "--no-progress"])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert "has no node paths" in err and "path_nodes" in err
