# ruff: noqa: E501  (the case tables keep one case per line)
"""``--resume`` from a records file that was edited or damaged: refused with status 2 and a
message naming the file and what is wrong, before any work; the file as it was."""

from __future__ import annotations

import json

import pytest

from tests.bad_input.conftest import run_cli


@pytest.fixture(scope="module")
def finished(files, tmp_path_factory):
    """A finished ``label-efficiency`` folder and its command line."""
    out = tmp_path_factory.mktemp("le") / "out"
    words = ["label-efficiency", "--data-file", files["data"], "--out", out, "--rows", "raw",
             "--fractions", "0.5", "--draws", "1", "--data-root", files["root"] / "dr",
             "--no-progress", "--threads", "1"]  # fmt: skip
    status, err = run_cli(words)
    assert status == 0, err
    return out, words


@pytest.mark.parametrize(("edit", "words"), [
    (lambda p: p["records"][0].pop("cell"), "record 0 has no 'cell' naming its cell"),
    (lambda p: p.update(records="x"), "its 'records' must be a list of records, got a str"),
    (lambda p: p["records"].__setitem__(0, 3), "record 0 is of type int, expected an object with 'cell'"),
])  # fmt: skip
def test_damaged_records_are_refused(finished, tmp_path, edit, words):
    out, command = finished
    path = out / "label_efficiency.json"
    original = path.read_text()
    payload = json.loads(original)
    assert all(isinstance(r.get("cell"), str) for r in payload["records"])
    try:
        edit(payload)
        path.write_text(json.dumps(payload))
        status, err = run_cli([*command, "--resume"])
        assert status == 2, err
        assert f"cannot resume from '{path}': the file was edited or damaged (" in err
        assert words in err and "Nothing was overwritten" in err
        assert json.loads(path.read_text()) == payload  # left as it was
    finally:
        path.write_text(original)
    status, err = run_cli([*command, "--resume"])
    assert status == 0 and "0 cells computed" in err
