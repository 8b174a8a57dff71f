"""docs/cell_complexes_section.py: the side-by-side label-efficiency table of the variants
and the page's markers."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "cell_complexes_section", ROOT / "docs" / "cell_complexes_section.py"
)
section = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(section)


def _records(accs: dict[str, list[float]], beta: int, fraction: float = 0.01) -> dict:
    rows = {"raw": "raw flows", "harmonic": f"U_H^T x (beta_1 = {beta})",
            "probe:SSCL_Spec:hodge": "SSCL_Spec HodgeReadout, probe"}  # fmt: skip
    return {
        "settings": {"draws": 3},
        "records": [
            {"row": row, "label": rows[row], "kind": row.split(":")[0], "fraction": fraction,
             "labelled": 6, "draw": d, "test_accuracy": a}  # fmt: skip
            for row, values in accs.items()
            for d, a in enumerate(values)
        ],
    }


def test_side_by_side_rows_of_each_variant(tmp_path):
    (tmp_path / "anaheim.json").write_text(
        json.dumps(_records({"raw": [0.8, 0.9, 1.0], "harmonic": [0.5, 0.5, 0.5]}, 137))
    )
    (tmp_path / "anaheim_faces_overpasses.json").write_text(
        json.dumps(_records({"raw": [0.7, 0.7], "probe:SSCL_Spec:hodge": [0.6, 0.8, 1.0]}, 11))
    )
    text = section.comparison_markdown(tmp_path)
    assert "chicago" not in text  # no run of it collected
    lines = [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    # rows in the order of COMPARED_ROWS, each variant of a row together; beta_1 is read
    # off a run's U_H^T x row ("-" without one)
    assert [ln.split(" | ")[:3] for ln in lines] == [
        ["| SSCL_Spec HodgeReadout, probe", "faces, overpasses filled", "-"],
        ["| raw flows", "triangles", "137"],
        ["| raw flows", "faces, overpasses filled", "-"],
        ["| U_H^T x", "triangles", "137"],
    ]
    assert lines[1].endswith("| 90.0 ± 8.2 |") and lines[2].endswith("| 70.0 ± 0.0 (2) |")


def test_replace_between_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("a\n<!-- x:y -->\nold\n<!-- /x:y -->\nb\n")
    section.replace_between("x:y", "\nnew table\n", page)
    assert page.read_text() == "a\n<!-- x:y -->\nnew table\n<!-- /x:y -->\nb\n"
    with pytest.raises(ValueError, match="no markers"):
        section.replace_between("x:z", "t", page)
