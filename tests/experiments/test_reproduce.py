"""``reproduce``: all files, the COMPLETE marker, bad output folders, determinism."""

from __future__ import annotations

import dataclasses
import json

import pytest

from topo_contrastive.experiments import PRESETS, reproduce
from topo_contrastive.experiments.reproduce import _split_assignment, format_table, summarize

TINY = dataclasses.replace(
    PRESETS["quick"],
    name="tiny",
    epochs={"trajectory": 1},
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


def _run(tiny_data, out, **kw):
    return reproduce(
        {"trajectory": tiny_data},
        out,
        preset=TINY,
        dataset_names=["trajectory"],
        config_names=ROWS,
        **kw,
    )


def test_writes_every_file_and_the_marker_last(tmp_path, tiny_data):
    out = tmp_path / "res"
    res = _run(tiny_data, out, command="topo-contrastive reproduce --tiny")
    names = {p.name for p in out.iterdir()}
    assert names == {"runs.json", "runs.csv", "table1.md", "figure1.png", "figure2.png", "COMPLETE"}
    payload = json.loads((out / "runs.json").read_text())
    assert payload["complete"] is True
    table1 = [r for r in payload["records"] if r["experiment"] == "table1"]
    assert len(table1) == len(ROWS) * 2  # rows x splits
    assert {r["config"] for r in table1} == set(ROWS)
    assert len([r for r in payload["records"] if r["experiment"] == "figure2"]) == 4
    csv_lines = (out / "runs.csv").read_text().strip().splitlines()
    assert len(csv_lines) == 1 + len(payload["records"])
    md = (out / "table1.md").read_text()
    assert "REDUCED SETTINGS" in md and "97.9 ± 0.3" in md and "--tiny" in md
    assert "SSCL_Spec" in md and "Ocean" not in md
    for f in ("figure1.png", "figure2.png"):
        assert (out / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(res.summary) == set(ROWS)


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
    assert len(a.records) == 2
    strip = ("seconds",)
    ra = [{k: v for k, v in r.items() if k not in strip} for r in a.records]
    rb = [{k: v for k, v in r.items() if k not in strip} for r in b.records]
    assert ra == rb


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


def test_split_assignment_covers_every_split_once():
    groups = _split_assignment(16, 4, seed=10)
    assert sorted(s for g in groups for s in g) == list(range(10, 26))
    assert [len(g) for g in groups] == [4, 4, 4, 4]
    assert _split_assignment(2, 5, seed=0) == [[0], [1]]


def test_summary_and_table():
    recs = [
        {"experiment": "table1", "config": "SCL", "dataset": "ocean", "test_accuracy": a}
        for a in (0.8, 0.9)
    ]
    s = summarize(recs)
    assert s["SCL"]["ocean"][0] == pytest.approx(85.0) and s["SCL"]["ocean"][1] == pytest.approx(
        5.0
    )
    md = format_table(s, PRESETS["full"], 60.0, "cmd", ["ocean"], ["SCL"])
    assert "| SCL | 85.0 ± 5.0 | 81.6 ± 1.6 |" in md and "REDUCED" not in md
    assert "within 2 std or better" in md
