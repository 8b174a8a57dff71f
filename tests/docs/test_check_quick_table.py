"""docs/check_quick_table.py: the quick-preset table of docs/results.md against a run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "check_quick_table.py"
_spec = importlib.util.spec_from_file_location("check_quick_table", SCRIPT)
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

PAGE = """# Results

## Full protocol

| Model | Trajectory | Ocean drifters |
|---|---|---|
| SCL | 1.0 ± 0.0 | 2.0 ± 0.0 |

## The quick preset (the README's main job)

Some text.

| Model | Trajectory (quick) | Ocean drifters (quick) |
|---|---|---|
| SSCL_Spec | 80.5 ± 4.2 | 75.0 ± 1.8 |
| SCNN (supervised) | 73.5 ± 1.8 | 58.1 ± 3.7 |
| SCL | 84.0 ± 3.7 | 71.9 ± 7.2 |

## Next section
"""

# table1.md as `reproduce` writes it: other column order, paper columns, other row order
RUN = """# Table 1: test accuracy (%), mean ± std

> **REDUCED SETTINGS: ...**

| Model | Ocean drifters (measured) | Ocean drifters (paper) | Trajectory (measured) \
| Trajectory (paper) |
|---|---|---|---|---|
| SCL | 71.9 ± 7.2 | 81.6 ± 1.6 | 84.0 ± 3.7 | 96.1 ± 0.6 |
| SCNN | 58.1 ± 3.7 | 78.5 ± 1.1 | 73.5 ± 1.8 | 95.2 ± 0.5 |
| SSCL_Spec | 75.0 ± 1.8 | 90.3 ± 1.4 | 80.5 ± 4.2 | 97.9 ± 0.3 |

## Settings
"""


def _files(tmp_path, page=PAGE, run=RUN):
    (tmp_path / "results.md").write_text(page)
    (tmp_path / "table1.md").write_text(run)
    return ["--docs", str(tmp_path / "results.md"), str(tmp_path / "table1.md")]


def test_equal_tables_pass_whatever_the_order_and_headers(tmp_path, capsys):
    assert check.main(_files(tmp_path)) == 0
    assert "equals" in capsys.readouterr().out


def test_a_difference_fails_with_a_diff_naming_row_and_column(tmp_path, capsys):
    run = RUN.replace("71.9 ± 7.2", "72.5 ± 6.9").replace("| SCNN |", "| SCNN_x |")
    assert check.main(_files(tmp_path, run=run)) == 1
    err = capsys.readouterr().err
    assert "SCL / ocean: page 71.9 ± 7.2, fresh run 72.5 ± 6.9" in err
    assert "SCNN / trajectory: on the page (73.5 ± 1.8) but not in the run" in err
    assert "SCNN_x / ocean: in the run (58.1 ± 3.7) but not on the page" in err
    assert "--write" in err


def test_write_copies_the_run_into_the_page_and_then_it_passes(tmp_path, capsys):
    run = RUN.replace("71.9 ± 7.2", "72.5 ± 6.9")
    args = _files(tmp_path, run=run)
    assert check.main([*args, "--write"]) == 0
    page = (tmp_path / "results.md").read_text()
    assert "| SCL | 84.0 ± 3.7 | 72.5 ± 6.9 |" in page  # the page's own column order
    assert "| SCNN (supervised) | 73.5 ± 1.8 | 58.1 ± 3.7 |" in page  # its labels kept
    assert "| SCL | 1.0 ± 0.0 | 2.0 ± 0.0 |" in page  # other sections untouched
    assert page.replace("72.5 ± 6.9", "71.9 ± 7.2") == PAGE  # nothing else changed
    assert check.main(args) == 0


def test_unusable_files_are_errors(tmp_path, capsys):
    assert check.main(_files(tmp_path, page="# no table here\n")) == 2
    assert "no heading containing 'The quick preset'" in capsys.readouterr().err
    assert check.main(_files(tmp_path, page="## The quick preset\n\ntext\n\n## Next\n| a |\n")) == 2
    assert "no Markdown table under the heading" in capsys.readouterr().err
    assert check.main(["--docs", str(tmp_path / "results.md"), str(tmp_path / "none.md")]) == 2


def test_the_real_page_has_a_quick_table_of_all_rows_and_both_datasets():
    from topo_contrastive.experiments import CONFIG_NAMES

    table = check.parse_table(check.DOCS.read_text(encoding="utf-8"), check.SECTION)
    cells = table.cells()
    assert set(cells) == {(c, d) for c in CONFIG_NAMES for d in ("trajectory", "ocean")}
    assert all(" ± " in v for v in cells.values())


@pytest.mark.parametrize("line", ["| SCNN (supervised) |", "| **SCL** |"])
def test_row_labels_ignore_notes_and_emphasis(line):
    assert check._label(line.strip("| ")) in ("SCNN", "SCL")
