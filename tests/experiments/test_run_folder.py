"""RunFolder: resuming without recomputing, refusals, atomic writes, the marker."""

from __future__ import annotations

import json
import os

import pytest

from experiments.run_folder import RunFolder, fingerprint

SETTINGS = {"epochs": 10, "seed": 0, "model": {"hidden": 32, "layers": 2}}


def _run(out, calls, cells, settings=SETTINGS, fail_at=None):
    """Compute the missing cells of ``cells`` (counting the calls), as a caller does."""
    run = RunFolder(out, "study", settings, resume=True, restart="remove it")
    run.start(device="cpu")
    for c in cells:
        if run.done(c):
            continue
        if c == fail_at:
            raise KeyboardInterrupt  # killed in the middle of a cell
        calls.append(c)
        run.save(c, [{"value": 10 * len(c)}, {"value": -1}])
    run.finish("done", total=sum(r["value"] for r in run.records))
    return run


def test_resume_computes_only_the_missing_cells(tmp_path):
    calls = []
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, calls, ["a", "bb", "ccc"], fail_at="ccc")
    payload = json.loads((tmp_path / "runs.json").read_text())
    assert payload["complete"] is False and not (tmp_path / "COMPLETE").exists()
    assert [r["cell"] for r in payload["records"]] == ["a", "a", "bb", "bb"]
    calls.clear()
    run = _run(tmp_path, calls, ["a", "bb", "ccc"])
    assert calls == ["ccc"]  # the finished cells were read back, not computed again
    assert run.load("bb") == [{"cell": "bb", "value": 20}, {"cell": "bb", "value": -1}]
    with pytest.raises(KeyError, match="'dddd' is not finished"):
        run.load("dddd")
    payload = json.loads((tmp_path / "runs.json").read_text())
    assert payload["complete"] is True and payload["total"] == 10 + 20 + 30 - 3
    assert payload["command"] == "study" and payload["settings"]["device"] == "cpu"
    assert payload["settings"]["fingerprint"] == fingerprint(SETTINGS)
    assert payload["settings"]["fingerprint_parts"] == SETTINGS
    assert (tmp_path / "runs.csv").read_text().splitlines()[0] == "cell,value"
    assert len((tmp_path / "runs.csv").read_text().splitlines()) == 1 + 6
    assert (tmp_path / "COMPLETE").read_text() == "done\n"
    calls.clear()
    _run(tmp_path, calls, ["a", "bb", "ccc"])  # a finished run resumed: nothing to compute
    assert calls == []


def test_a_cell_is_saved_once(tmp_path):
    run = RunFolder(tmp_path, "study", SETTINGS)
    run.save("a", {"value": 1})
    with pytest.raises(ValueError, match="'a' is finished already"):
        run.save("a", {"value": 2})
    with pytest.raises(ValueError, match="'b' has no record"):
        run.save("b", [])


def test_other_settings_are_refused_naming_the_keys_and_nothing_is_touched(tmp_path):
    _run(tmp_path, [], ["a"])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    other = {**SETTINGS, "epochs": 20, "model": {"hidden": 64, "layers": 2}, "new": 1}
    with pytest.raises(ValueError) as err:
        RunFolder(tmp_path, "study", other, resume=True, restart="remove it")
    msg = str(err.value)
    assert "other settings (they differ in epochs (10 then, 20 now), model.hidden (32 then, " \
        "64 now), new (only now);" in msg
    assert fingerprint(other) in msg and msg.endswith("Nothing was overwritten; remove it")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # the same settings in another order (and tuples for lists) are the same run
    same = {"model": {"layers": 2, "hidden": 32}, "seed": 0, "epochs": 10}
    assert RunFolder(tmp_path, "study", same, resume=True).done("a")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not readable JSON"),
        (json.dumps({"records": []}), "was not written by `study`"),
        (json.dumps({"command": "other", "records": []}), "was not written by `study`"),
    ],
)
def test_a_foreign_or_broken_records_file_is_refused(tmp_path, content, message):
    (tmp_path / "runs.json").write_text(content)
    (tmp_path / "COMPLETE").write_text("earlier\n")
    with pytest.raises(ValueError, match=message):
        RunFolder(tmp_path, "study", SETTINGS, resume=True)
    assert (tmp_path / "runs.json").read_text() == content and (tmp_path / "COMPLETE").exists()


def test_a_folder_of_other_files_is_refused_and_an_empty_one_starts(tmp_path):
    (tmp_path / "encoder.pt").write_bytes(b"x")
    with pytest.raises(ValueError, match="holds no runs.json but encoder.pt, so it was not "
                                         "written by `study`"):  # fmt: skip
        RunFolder(tmp_path, "study", SETTINGS, resume=True)
    empty = RunFolder(tmp_path / "new", "study", SETTINGS, resume=True)
    assert empty.previous is None and empty.records == [] and (tmp_path / "new").is_dir()


def test_starting_over_removes_the_marker_at_once_and_replaces_the_records(tmp_path):
    _run(tmp_path, [], ["a"])
    run = RunFolder(tmp_path, "study", {"other": True})  # resume=False: another run
    assert not (tmp_path / "COMPLETE").exists() and not run.done("a")
    run.start()
    assert json.loads((tmp_path / "runs.json").read_text())["records"] == []


def test_an_exception_in_a_write_leaves_the_earlier_files_whole(tmp_path, monkeypatch):
    run = RunFolder(tmp_path, "study", SETTINGS)
    run.save("a", {"value": 1})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    written = []

    def killed(src, dst):  # the new content is in the temporary: killed before it is moved
        written.append(open(src).read())
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        run.save("b", {"value": 2})
    with pytest.raises(KeyboardInterrupt):
        run.finish("done")
    monkeypatch.undo()
    assert len(written) == 2 and '"b"' in written[0] and '"complete": true' in written[1]
    # no partial file, no temporary left, no marker: the folder is the one before the writes
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_result_tables_are_written_atomically(tmp_path, monkeypatch):
    run = RunFolder(tmp_path, "study", SETTINGS)
    paths = run.write_tables("summary", data={"mean": float("nan")},
                             rows=[{"row": "a", "acc": 0.5}, {"row": "b", "std": 0.1}],
                             markdown="| a |\n")  # fmt: skip
    assert sorted(paths) == ["csv", "json", "md"]
    assert json.loads(paths["json"].read_text()) == {"mean": None}
    assert paths["csv"].read_text() == "row,acc,std\na,0.5,\nb,,0.1\n"
    assert paths["md"].read_text() == "| a |\n"

    def full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="no space left on device writing"):
        run.write_tables("summary", markdown="| b |\n")
    assert paths["md"].read_text() == "| a |\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.csv", "summary.json",
                                                          "summary.md"]  # fmt: skip
