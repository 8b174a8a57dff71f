"""docs/many_complexes_ceiling.py: the ceiling table of the many-complexes page."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "many_complexes_ceiling", ROOT / "docs" / "many_complexes_ceiling.py"
)
ceiling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ceiling)


@pytest.mark.slow  # generates a task and fits five models per feature set (about a minute)
def test_every_feature_set_gets_its_training_and_held_out_accuracy(tmp_path):
    from experiments.studies.many_complexes import REFERENCES

    rows = ceiling.main(tmp_path / "data", tmp_path / "out", hidden=4, samples=60)
    assert list(rows) == [*REFERENCES, "untrained 1 layer, part energies"]
    saved = json.loads((tmp_path / "out" / "ceiling.json").read_text())
    assert saved["samples"] == 60 and saved["rows"] == rows
    md = (tmp_path / "out" / "ceiling.md").read_text().splitlines()
    assert len(md) == 2 + len(rows)
    for line, (name, r) in zip(md[2:], rows.items(), strict=True):
        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert cells[0] == name
        np.testing.assert_allclose([float(c) for c in cells[1:]],
                                   [100 * r["train"], 100 * r["cv"], 100 * r["trees_cv"]],
                                   atol=0.05)  # fmt: skip
        assert all(0 <= v <= 1 for v in r.values())
