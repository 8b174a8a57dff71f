"""examples/many_complexes.py resumes: a finished seed is read back, never recomputed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location(
        "many_complexes_example", REPO / "examples" / "many_complexes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_finished_seed_is_read_back_and_other_settings_recompute(tmp_path):
    ex = _example()
    first = ex.main(tmp_path / "out", quick=True)
    seed_file = tmp_path / "out" / "seeds" / "seed_0.json"
    record = json.loads(seed_file.read_text())
    assert set(record["rows"]) == set(ex.ROWS) | set(ex.REFERENCES)
    for row, per in first["rows"].items():  # the summary is the seed's draws
        for f, v in per.items():
            assert v["runs"] == record["rows"][row][f]
    record["rows"]["SSCL_Spec"]["1"] = [0.123]  # a marker: read back, not recomputed
    seed_file.write_text(json.dumps(record))
    again = ex.main(tmp_path / "out", quick=True)
    assert again["rows"]["SSCL_Spec"]["1"]["runs"] == [0.123]
    other = ex.main(tmp_path / "out", quick=True, temperature=0.25)  # other settings
    assert other["rows"]["SSCL_Spec"]["1"]["runs"] != [0.123]
    assert json.loads(seed_file.read_text())["settings"]["temperature"] == 0.25
