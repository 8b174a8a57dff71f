"""docs/check_quick_table.py: the quick-preset tables of docs/results/quick.md against a run."""

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

### Paper encoder

| Model | Trajectory (quick) | Ocean drifters (quick) |
|---|---|---|
| SSCL_Spec | 80.5 ± 4.2 | 75.0 ± 1.8 |
| SCNN (supervised) | 73.5 ± 1.8 | 58.1 ± 3.7 |
| SCL | 84.0 ± 3.7 | 71.9 ± 7.2 |
| untrained encoder | 60.0 ± 1.0 | 50.0 ± 1.0 |

### HodgeReadout

| Model | Trajectory (quick) | Ocean drifters (quick) |
|---|---|---|
| SCL | 90.0 ± 1.0 | 80.0 ± 2.0 |

## Next section

| Model | Trajectory | Ocean drifters |
|---|---|---|
| SCL | 3.0 ± 0.0 | 4.0 ± 0.0 |
"""

# table1.md as `reproduce` writes it: one table per edition, other column and row order,
# the paper's columns, reference rows with a note
RUN = """# Table 1: test accuracy (%), mean ± std

> **REDUCED SETTINGS (preset 'quick'): ...**

## Paper encoder (mean readout over edges)

| Model | Ocean drifters | paper | Trajectory | paper |
|---|---|---|---|---|
| SCL | 71.9 ± 7.2 | 81.6 ± 1.6 | 84.0 ± 3.7 | 96.1 ± 0.6 |
| SCNN | 58.1 ± 3.7 | 78.5 ± 1.1 | 73.5 ± 1.8 | 95.2 ± 0.5 |
| SSCL_Spec | 75.0 ± 1.8 | 90.3 ± 1.4 | 80.5 ± 4.2 | 97.9 ± 0.3 |
| untrained encoder (reference) | 50.0 ± 1.0 | — | 60.0 ± 1.0 | — |

## HodgeReadout (mean over edges + harmonic coordinates U_H^T H; beyond the paper)

| Model | Ocean drifters | paper | Trajectory | paper |
|---|---|---|---|---|
| SCL | 80.0 ± 2.0 | — | 90.0 ± 1.0 | — |

## Settings

- preset 'quick'
"""


def _files(tmp_path, page=PAGE, run=RUN):
    (tmp_path / "results.md").write_text(page)
    (tmp_path / "table1.md").write_text(run)
    return ["--docs", str(tmp_path / "results.md"), str(tmp_path / "table1.md")]


def test_equal_tables_pass_whatever_the_order_and_headers(tmp_path, capsys):
    assert check.main(_files(tmp_path)) == 0
    assert "tables equal" in capsys.readouterr().out


def test_a_difference_fails_with_a_diff_naming_table_row_and_column(tmp_path, capsys):
    run = RUN.replace("71.9 ± 7.2", "72.5 ± 6.9").replace("| SCNN |", "| SCNN_x |")
    run = run.replace("90.0 ± 1.0", "91.0 ± 1.0")
    assert check.main([*_files(tmp_path, run=run), "--tolerance", "0"]) == 1  # exact mode
    err = capsys.readouterr().err
    paper, hodge = "[Paper encoder (mean readout over edges)]", "[HodgeReadout (mean over"
    assert f"{paper} SCL / ocean: page 71.9 ± 7.2, fresh run 72.5 ± 6.9" in err
    assert f"{paper} SCNN / trajectory: on the page (73.5 ± 1.8) but not in the run" in err
    assert f"{paper} SCNN_x / ocean: in the run (58.1 ± 3.7) but not on the page" in err
    assert f"{hodge} edges + harmonic coordinates U_H^T H; beyond the paper)] SCL" in err
    assert "--write" in err


def test_the_page_must_show_every_table_unless_subset(tmp_path, capsys):
    page = PAGE.replace("| untrained encoder | 60.0 ± 1.0 | 50.0 ± 1.0 |\n", "")
    page = page[: page.index("### HodgeReadout")] + page[page.index("## Next section") :]
    assert check.main(_files(tmp_path, page=page)) == 1
    err = capsys.readouterr().err
    assert "the page has 1 table(s) in the section, the run 2" in err
    assert "untrained encoder / trajectory: in the run (60.0 ± 1.0) but not on the page" in err
    assert check.main([*_files(tmp_path, page=page), "--subset"]) == 0
    stale = page.replace("84.0 ± 3.7", "84.1 ± 3.7")
    exact = ["--subset", "--tolerance", "0"]
    assert check.main([*_files(tmp_path, page=stale), *exact]) == 1  # shown cells still count


def test_write_copies_the_run_into_the_page_and_then_it_passes(tmp_path):
    run = RUN.replace("71.9 ± 7.2", "72.5 ± 6.9").replace("90.0 ± 1.0", "91.0 ± 1.0")
    args = _files(tmp_path, run=run)
    assert check.main([*args, "--write"]) == 0
    page = (tmp_path / "results.md").read_text()
    assert "| SCL | 84.0 ± 3.7 | 72.5 ± 6.9 |" in page  # the page's own column order
    assert "| SCL | 91.0 ± 1.0 | 80.0 ± 2.0 |" in page  # the second table too
    assert "| SCNN (supervised) | 73.5 ± 1.8 | 58.1 ± 3.7 |" in page  # its labels kept
    assert "| SCL | 1.0 ± 0.0 | 2.0 ± 0.0 |" in page  # other sections untouched
    assert page.replace("72.5 ± 6.9", "71.9 ± 7.2").replace("91.0", "90.0") == PAGE
    assert check.main(args) == 0


def test_unusable_files_are_errors(tmp_path, capsys):
    assert check.main(_files(tmp_path, page="# no table here\n")) == 2
    assert "no heading containing 'The quick preset'" in capsys.readouterr().err
    page = "## The quick preset\n\ntext\n\n## Next\n\n| a | b |\n|---|---|\n| c | d |\n"
    assert check.main(_files(tmp_path, page=page)) == 2
    assert "no Markdown table under the heading" in capsys.readouterr().err
    assert check.main(["--docs", str(tmp_path / "results.md"), str(tmp_path / "none.md")]) == 2


def test_the_real_page_has_a_quick_table_of_every_row_and_both_datasets():
    from topo_contrastive.training import CONFIG_NAMES

    tables = check.parse_tables(check.DOCS.read_text(encoding="utf-8"), check.SECTION)
    cells = tables[0].cells()
    assert {(c, d) for c in CONFIG_NAMES for d in ("trajectory", "ocean")} <= set(cells)
    assert all(" ± " in v for v in cells.values())


def test_the_run_format_is_what_reproduce_writes(tmp_path):
    """table1.md of a real (tiny) `reproduce` parses: one table per edition, measured cells."""
    from experiments.reproduce import Preset
    from experiments.table import format_table, summarize

    records = [
        {"experiment": "table1", "edition": ed, "config": row, "dataset": "trajectory",
         "split_seed": s, "test_accuracy": acc, "train_accuracy": 1.0}
        for ed in ("paper", "hodge") for row, acc in (("SCL", 0.8), ("SSCL", 0.7))
        for s in (0, 1)
    ]  # fmt: skip
    text = format_table(
        summarize(records), records, title_note="preset 'quick'", reduced=True,
        preset_line=Preset(name="quick", epochs={"trajectory": 1}).describe(), seconds=1.0,
        command="python -m experiments reproduce --quick", datasets=["trajectory"],
        configs=["SCL", "SSCL"], editions=["paper", "hodge"],
    )  # fmt: skip
    tables = check.parse_tables(text)
    assert len(tables) == 2
    assert tables[0].cells()[("SCL", "trajectory")] == "80.0 ± 0.0"
    assert tables[1].cells()[("SSCL", "trajectory")] == "70.0 ± 0.0"


# ---------------------------------------------------------------- tolerance, on measured runs
DATA = Path(__file__).resolve().parent / "data"


def test_means_within_the_tolerance_agree_and_beyond_it_differ():
    page = {("SCL", "ocean"): "80.0 ± 2.0", ("SCL", "trajectory"): "—"}
    assert check.compare(page, {("SCL", "ocean"): "80.8 ± 9.0", ("SCL", "trajectory"): "—"},
                         tolerance=1.0) == []  # fmt: skip
    diff = check.compare(page, {("SCL", "ocean"): "81.1 ± 2.0", ("SCL", "trajectory"): "—"},
                         tolerance=1.0)  # fmt: skip
    assert diff == ["SCL / ocean: page 80.0 ± 2.0, fresh run 81.1 ± 2.0 (tolerance 1 points)"]
    assert check.compare(page, {("SCL", "ocean"): "80.1 ± 2.0", ("SCL", "trajectory"): "—"})
    assert check.tolerance_for("Paper encoder (mean readout over edges)") == 10.0
    assert check.tolerance_for("HodgeReadout (mean over edges + ...)") == 1.0
    assert check.tolerance_for("Some other table") == 1.0
    assert check.tolerance_for("HodgeReadout", tolerance=0.0) == 0.0


@pytest.mark.parametrize("run", ["quick_2_threads.md", "quick_other_code_paths.md"])
def test_the_page_holds_on_other_thread_counts_and_code_paths(run, capsys):
    """Runs of the quick preset with 2 threads (unpinned) and on another CPU's code paths
    differ from the page's pinned 1-thread run in several cells, within the tolerance."""
    assert check.main([str(DATA / run)]) == 0
    assert check.main([str(DATA / run), "--tolerance", "0"]) == 1  # they do differ
    capsys.readouterr()


def test_dropping_the_harmonic_coordinates_fails_the_check():
    """A deliberate change (the HodgeReadout without U_H^T H, run as the quick preset) moves
    the HodgeReadout cells by far more than the tolerance."""
    page = check.parse_tables((ROOT / "docs" / "results" / "quick.md").read_text(), check.SECTION)
    hodge_page = next(t for t in page if t.heading.startswith("HodgeReadout"))
    run = check.parse_tables((DATA / "quick_without_harmonic_coordinates.md").read_text())
    assert [t.heading.split(" (")[0] for t in run] == ["HodgeReadout"]
    tol = check.tolerance_for(run[0].heading)
    diff = check.compare(hodge_page.cells(), run[0].cells(), tolerance=tol)
    moved = {line.split(":")[0] for line in diff}
    assert "SSCL_Spec / ocean" in moved and "SSCL_Spec / trajectory" in moved
    assert len(moved) >= 10  # of 14 encoder cells; the SVM reference rows do not move
    assert not any("linear SVM" in m for m in moved)
