"""``reproduce``: all files, the COMPLETE marker, bad output folders, determinism."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest

import experiments
from experiments import PRESETS
from experiments.reproduce import _split_assignment, format_table, summarize
from experiments.study import DataOptions, Settings
from topo_contrastive._utils import numerics as _numerics

TINY = dataclasses.replace(
    PRESETS["quick"],
    name="tiny",
    epochs={"trajectory": 1},
    supervised_epochs={"trajectory": 1},
    num_splits=2,
    pretrain_seeds={"trajectory": 1},
    figure2_dataset="trajectory",
    figure2_probs=(0.2, 0.5),
    figure2_splits=1,
    figure2_pretrain_seeds=1,
    figure2_epochs=1,
    figure1_draws=1,
)
ROWS = ["SSCL_Spec", "SCNN", "SCL_low"]


def reproduce(datasets, out, preset="full", dataset_names=(), config_names=None, seed=0,
              editions=None, resume=False, command=""):  # fmt: skip
    """``experiments.reproduce`` with the settings of these words."""
    settings = Settings(out, seed=seed, rows=config_names, editions=editions, resume=resume,
                        command=command, data=DataOptions(datasets=tuple(dataset_names)))
    return experiments.reproduce(datasets, settings, preset=preset)


class Interrupted(RuntimeError):
    """Stands for a kill in the middle of a unit."""


@pytest.fixture(autouse=True)
def _fast_probe(monkeypatch):
    """One penalty and 2 folds: these tests are about the bookkeeping, not the probe."""
    import topo_contrastive.evaluation.probe as evaluation

    monkeypatch.setattr(evaluation, "DEFAULT_CS", (1.0,))
    monkeypatch.setattr(evaluation, "DEFAULT_FOLDS", 2)


def _run(tiny_data, out, **kw):
    kw.setdefault("preset", TINY)
    kw.setdefault("config_names", ROWS)
    return reproduce({"trajectory": tiny_data}, out, dataset_names=["trajectory"], **kw)


def _strip(records):
    timing = ("unit_seconds", "train_seconds")
    return [{k: v for k, v in r.items() if k not in timing} for r in records]


def test_writes_every_file_and_the_marker_last(tmp_path, tiny_data):
    out = tmp_path / "res"
    res = _run(tiny_data, out, command="python -m experiments reproduce --tiny")
    names = {p.name for p in out.iterdir()}
    assert names == {"runs.json", "runs.csv", "table1.md", "figure1.png", "figure2.png", "COMPLETE"}
    payload = json.loads((out / "runs.json").read_text())
    assert payload["complete"] is True
    table1 = [r for r in payload["records"] if r["experiment"] == "table1"]
    # per edition: 3 rows + the untrained encoder, 2 splits each; shared: harmonic and raw
    assert len(table1) == 2 * (len(ROWS) + 1) * 2 + 2 * 2
    assert {(r["edition"], r["config"]) for r in table1} == {
        *((e, c) for e in ("paper", "hodge") for c in (*ROWS, "untrained")),
        ("shared", "harmonic"),
        ("shared", "raw"),
    }
    sup = [r for r in table1 if r["config"] == "SCNN"]
    assert all(r["epochs_run"] == 1 and r["best_epoch"] == 1 for r in sup)
    assert all(r["unit_seconds"] > 0 for r in payload["records"])
    assert len([r for r in payload["records"] if r["experiment"] == "figure2"]) == 4
    csv_lines = (out / "runs.csv").read_text().strip().splitlines()
    assert len(csv_lines) == 1 + len(payload["records"])
    md = (out / "table1.md").read_text()
    assert "REDUCED SETTINGS" in md and "97.9 ± 0.3" in md and "--tiny" in md
    assert "HodgeReadout" in md and "untrained encoder (reference)" in md
    assert "linear SVM on U_H^T x (reference)" in md and "supervised SCNN on trajectory" in md
    assert "SSCL_Spec" in md and "Ocean" not in md
    # counts read as English (one epoch, one encoder), and the run records its code paths
    assert not re.search(r"\b1 (epochs|splits|encoders|torch threads)\b", md), md
    assert "1 epoch," in md or "1 epoch\n" in md or "1 epoch " in md
    paths = payload["settings"]["code_paths"]
    assert set(paths) == {"pinned", *_numerics.PINNED_ENV}
    assert paths["pinned"] is _numerics.runs_pinned()
    for f in ("figure1.png", "figure2.png"):
        assert (out / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {k[1] for k in res.summary} == {*ROWS, "untrained", "harmonic", "raw"}


def test_untrained_reference_is_the_contrastive_rows_initialisation(tmp_path, tiny_data):
    from topo_contrastive.training import get_config

    res = _run(tiny_data, tmp_path / "u", config_names=["SCL"], editions=["paper"])
    untrained = [r for r in res.records if r["config"] == "untrained"]
    cfg = get_config("SCL", "trajectory")
    import torch

    from experiments.reproduce import evaluate_encoder

    torch.manual_seed(0)
    enc = tiny_data.encoder(cfg).eval()
    expected = evaluate_encoder(enc, tiny_data, [0, 1])
    assert [r["test_accuracy"] for r in untrained] == [e["test_accuracy"] for e in expected]


def test_resume_skips_finished_units_and_gives_the_same_records(tmp_path, tiny_data, monkeypatch):
    import importlib

    # the package re-exports the function under the module's name: fetch the module itself
    rep = importlib.import_module("experiments.reproduce")

    small = dataclasses.replace(TINY, figure2_dataset=None, figure1_draws=0)
    kw = {"preset": small, "config_names": ["SCL", "SCNN"]}
    fresh = _run(tiny_data, tmp_path / "fresh", **kw)
    calls = []
    original = rep._run_unit

    armed = [True]

    def flaky(unit, *args, **kwargs):
        calls.append(unit.key)
        if armed[0] and len(calls) == 4:
            armed[0] = False
            raise Interrupted  # killed in the middle of the fourth unit
        return original(unit, *args, **kwargs)

    monkeypatch.setattr(rep, "_run_unit", flaky)
    out = tmp_path / "resumed"
    with pytest.raises(Interrupted):
        _run(tiny_data, out, **kw)
    payload = json.loads((out / "runs.json").read_text())
    assert payload["complete"] is False and not (out / "COMPLETE").exists()
    assert len({r["unit"] for r in payload["records"]}) == 3
    calls.clear()
    res = _run(tiny_data, out, resume=True, **kw)
    assert res.resumed_units == 3 and len(calls) == len(set(calls))
    assert not set(calls) & {r["unit"] for r in payload["records"]}
    assert (out / "COMPLETE").exists()
    assert sorted(map(str, _strip(res.records))) == sorted(map(str, _strip(fresh.records)))


def test_resume_refuses_other_settings_and_writes_nothing(tmp_path, tiny_data):
    small = dataclasses.replace(TINY, figure2_dataset=None, figure1_draws=0)
    out = tmp_path / "res"
    _run(tiny_data, out, preset=small, config_names=["SCL"], editions=["paper"])
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match="other settings"):
        _run(
            tiny_data,
            out,
            preset=small,
            config_names=["SCL"],
            editions=["paper"],
            seed=5,
            resume=True,
        )
    other = dataclasses.replace(small, num_splits=3)
    with pytest.raises(ValueError, match="other settings"):
        _run(tiny_data, out, preset=other, config_names=["SCL"], editions=["paper"], resume=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_data):
    """A finished small run (SCL, paper edition, no figures); copy it before changing it."""
    out = tmp_path_factory.mktemp("finished") / "res"
    small = dataclasses.replace(TINY, figure2_dataset=None, figure1_draws=0)
    _run(tiny_data, out, preset=small, config_names=["SCL"], editions=["paper"])
    return out


def _edit(records, case):
    """The records of ``runs.json`` edited as a careless hand or a damaged disk would."""
    first = records[0]
    if case == "duplicate":
        return [*records, dict(first)]
    if case == "missing":
        return [{k: v for k, v in first.items() if k != "test_accuracy"}, *records[1:]]
    value = {"170 %": 1.7, "string": "0.9", "null": None, "negative": -0.1}[case]
    return [{**first, "test_accuracy": value}, *records[1:]]


@pytest.mark.parametrize("case, words", [
    ("duplicate", r"splits \[0, 1, 0\], expected one for each of \[0, 1\]"),
    ("170 %", r"test_accuracy is 1\.7, expected a fraction in \[0, 1\]"),
    ("string", r"test_accuracy is '0\.9', expected a fraction"),
    ("null", r"test_accuracy is None, expected a fraction"),
    ("missing", r"test_accuracy is missing, expected a fraction"),
    ("negative", r"test_accuracy is -0\.1"),
])  # fmt: skip
def test_resume_refuses_edited_records_naming_the_file_and_unit(tmp_path, tiny_data, finished,
                                                               case, words):  # fmt: skip
    small = dataclasses.replace(TINY, figure2_dataset=None, figure1_draws=0)
    out = tmp_path / "res"
    shutil.copytree(finished, out)
    payload = json.loads((out / "runs.json").read_text())
    unit = payload["records"][0]["unit"]
    payload["records"] = _edit(payload["records"], case)
    (out / "runs.json").write_text(json.dumps(payload))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    loaded = []

    def loader(name):
        loaded.append(name)
        return tiny_data

    with pytest.raises(ValueError) as info:
        reproduce(loader, out, preset=small, dataset_names=["trajectory"],
                  config_names=["SCL"], editions=["paper"], resume=True)  # fmt: skip
    message = str(info.value)
    assert f"cannot resume from '{out / 'runs.json'}'" in message
    assert f"the record of unit {unit!r} was edited or damaged" in message
    assert re.search(words, message), message
    assert loaded == [] and {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_the_table_names_the_editions_run(tmp_path, tiny_data, finished):
    assert "editions paper;" in (finished / "table1.md").read_text()
    small = dataclasses.replace(TINY, figure2_dataset=None, figure1_draws=0)
    _run(tiny_data, tmp_path / "h", preset=small, config_names=["SCL"], editions=["hodge"])
    assert "editions hodge;" in (tmp_path / "h" / "table1.md").read_text()


def test_a_name_given_twice_is_refused_before_any_work(tmp_path):
    def loader(name):
        raise AssertionError("must not load data")

    for kw, words in (({"config_names": ["SCL", "scl"]}, "--configs .* names SCL more than once"),
                      ({"dataset_names": ["trajectory"] * 2}, "--datasets .* names trajectory"),
                      ({"editions": ["paper", "paper"]}, "--editions .* names paper")):  # fmt: skip
        with pytest.raises(ValueError, match=words):
            reproduce(loader, tmp_path / "out", preset=TINY, **kw)
    assert not (tmp_path / "out").exists()


def test_same_seed_same_numbers(tmp_path, tiny_data):
    small = dataclasses.replace(TINY, num_splits=1, figure2_dataset=None, figure1_draws=0)

    def run(out):
        return reproduce(
            {"trajectory": tiny_data},
            out,
            preset=small,
            dataset_names=["trajectory"],
            config_names=["SSCL_Spec", "SCNN"],
            seed=2,
        )

    a, b = run(tmp_path / "a"), run(tmp_path / "b")
    assert len(a.records) == 2 * (2 + 1) + 2  # editions x (2 rows + untrained) + shared
    assert _strip(a.records) == _strip(b.records)


def test_unwritable_output_fails_before_any_work(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file")
    called = []

    def loader(name):
        called.append(name)
        raise AssertionError("must not load data")

    with pytest.raises(ValueError, match="cannot be written"):
        reproduce(loader, blocker / "out", preset=TINY, dataset_names=["trajectory"])
    assert called == []


def test_interrupted_run_does_not_look_complete(tmp_path, tiny_data):
    out = tmp_path / "res"
    out.mkdir()
    (out / "COMPLETE").write_text("from an earlier run")

    def broken(name):
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        reproduce(broken, out, preset=TINY, dataset_names=["trajectory"])
    assert not (out / "COMPLETE").exists()


def test_unknown_names(tmp_path, tiny_data):
    with pytest.raises(ValueError, match="unknown configuration"):
        reproduce({"trajectory": tiny_data}, tmp_path, preset=TINY, config_names=["BYOL"])
    with pytest.raises(ValueError, match="unknown dataset"):
        reproduce({"trajectory": tiny_data}, tmp_path, preset=TINY, dataset_names=["cora"])
    with pytest.raises(ValueError, match="unknown preset"):
        reproduce({"trajectory": tiny_data}, tmp_path, preset="huge")
    with pytest.raises(ValueError, match="unknown edition"):
        reproduce({"trajectory": tiny_data}, tmp_path, preset=TINY, editions=["gnn"])


def test_split_assignment_covers_every_split_once():
    groups = _split_assignment(16, 4, seed=10)
    assert sorted(s for g in groups for s in g) == list(range(10, 26))
    assert [len(g) for g in groups] == [4, 4, 4, 4]
    assert _split_assignment(2, 5, seed=0) == [[0], [1]]


def test_summary_and_table():
    recs = [
        {
            "experiment": "table1",
            "edition": "paper",
            "config": "SCL",
            "dataset": "ocean",
            "test_accuracy": a,
        }
        for a in (0.8, 0.9)
    ] + [
        {
            "experiment": "table1",
            "edition": "hodge",
            "config": "SSCL_Spec",
            "dataset": "ocean",
            "test_accuracy": 0.97,
        },
        {
            "experiment": "table1",
            "edition": "shared",
            "config": "raw",
            "dataset": "ocean",
            "test_accuracy": 0.98,
        },
    ]
    s = summarize(recs)
    assert s[("paper", "SCL", "ocean")][:2] == pytest.approx((85.0, 5.0))
    md = format_table(
        s,
        recs,
        title_note="--full",
        reduced=False,
        preset_line="p",
        seconds=60.0,
        command="cmd",
        datasets=["ocean"],
        configs=["SSCL_Spec", "SCL"],
        editions=["paper", "hodge"],
    )
    assert "| SCL | 85.0 ± 5.0 | 81.6 ± 1.6 |" in md and "REDUCED" not in md
    assert "within 2 std or better" in md
    assert "| linear SVM on raw flows (reference) | 98.0 ± 0.0 | — |" in md
    assert "[hodge] SSCL_Spec on ocean: 97.0 (target >= 96.0) -> met" in md
    # with reduced settings: what the numbers are and are not, and no target checked (the
    # same cells are checked against the paper's numbers above)
    quick = format_table(
        s, recs, title_note="preset 'quick'", reduced=True, preset_line="p", seconds=1.0,
        command="c", datasets=["ocean"], configs=["SSCL_Spec", "SCL"], editions=["paper", "hodge"],
    )  # fmt: skip
    assert "MISSED" not in quick and "within 2 std" not in quick and "-> met" not in quick
    assert "not the paper's protocol" in quick and "are not compared with the paper's" in quick
    assert "`python -m experiments reproduce --out results/full`" in quick
    assert "| SCL | 85.0 ± 5.0 | 81.6 ± 1.6 |" in quick  # the paper's numbers stand beside
    assert quick.split("## Targets", 1)[1].strip().startswith("- not checked")
    assert "[hodge] no row above SSCL_Spec on ocean: NO (raw 98.0)" in md


def test_the_command_refuses_repeated_configs_at_once(tmp_path, capsys):
    import time

    from experiments.cli import main as experiments_main

    start = time.perf_counter()
    rc = experiments_main(["reproduce", "--quick", "--configs", "SCL", "SCL", "--threads", "1",
                           "--out", str(tmp_path / "out"), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "--configs (`config_names`) names SCL more than once (SCL SCL)" in err
    assert time.perf_counter() - start < 10 and not (tmp_path / "out").exists()


def test_the_experiments_program_names_itself_in_its_messages(tmp_path, capsys):
    # `python -m experiments` shares the library's command machinery but not its name
    from experiments.cli import main as experiments_main

    rc = experiments_main(["reproduce", "--datasets", "cora", "--threads", "1",
                           "--out", str(tmp_path / "out"), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("python -m experiments: error: "), err
    assert "unknown dataset" in err and "topo-contrastive" not in err
