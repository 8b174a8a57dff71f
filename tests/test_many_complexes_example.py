"""examples/many_complexes.py resumes: a finished seed is read back, never recomputed; a
folder of other settings is refused."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location(
        "many_complexes_example", REPO / "examples" / "many_complexes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_finished_seed_is_read_back_and_other_settings_are_refused(tmp_path):
    ex = _example()
    first = ex.main(tmp_path / "out", quick=True)
    seeds_file = tmp_path / "out" / "seeds.json"
    payload = json.loads(seeds_file.read_text())
    (record,) = payload["records"]
    assert payload["complete"] and (tmp_path / "out" / "COMPLETE").is_file()
    assert record["cell"] == "seed 0" and set(record["rows"]) == set(ex.ROWS) | set(ex.REFERENCES)
    for row, per in first["rows"].items():  # the summary is the seed's draws
        for f, v in per.items():
            assert v["runs"] == record["rows"][row][f]
    record["rows"]["SSCL_Spec"]["1"] = [0.123]  # a marker: read back, not recomputed
    seeds_file.write_text(json.dumps(payload))
    again = ex.main(tmp_path / "out", quick=True)
    assert again["rows"]["SSCL_Spec"]["1"]["runs"] == [0.123]
    with pytest.raises(ValueError, match=r"other settings \(they differ in temperature "
                                         r"\(0.5 then, 0.25 now\)"):  # fmt: skip
        ex.main(tmp_path / "out", quick=True, temperature=0.25)
    assert json.loads(seeds_file.read_text()) == payload  # untouched
