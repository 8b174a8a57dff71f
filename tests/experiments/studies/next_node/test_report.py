"""The tables of ``predict-next`` (``studies/next_node/report.py``) from hand-built summaries."""

from __future__ import annotations

from experiments.studies.next_node.report import rows_markdown, transfer_markdown


def _row(row: str, label: str, mean: float, std: float) -> dict:
    return {"row": row, "label": label, "mean_accuracy": mean, "std_accuracy": std}


def test_rows_table_is_exact():
    summary = {"seeds": [0, 1], "samples": 40, "rows": [
        _row("uniform", "uniform among the neighbours", 31.25, 0.0),
        _row("frozen", "encoder frozen + head", 47.95, 2.449),
    ]}  # fmt: skip
    assert rows_markdown(summary, "trajectory", "SSCL_Spec", 50, 1.0) == [
        "# Next-node prediction on trajectory (SSCL_Spec encoder)", "",
        "2 seed(s), 40 paths, head epochs <= 50 (best validation accuracy), test accuracy:", "",
        "| row | test accuracy (%) |", "|---|---:|",
        "| uniform among the neighbours | 31.2 ± 0.0 |",
        "| encoder frozen + head | 48.0 ± 2.4 |",
    ]  # fmt: skip
    # part of the prefixes labelled: the share after rounding, a range where seeds differ
    summary["labelled"] = [{"train": 1, "train_total": 24}, {"train": 1, "train_total": 24}]
    line = rows_markdown(summary, "trajectory", "SSCL_Spec", 50, 0.01)[2]
    assert line.startswith("2 seed(s), 40 paths, 1 of 24 training prefixes labelled (4.2 %; "
                           "--fraction 0.01), head epochs <= 50")  # fmt: skip
    summary["labelled"][1] = {"train": 2, "train_total": 25}
    line = rows_markdown(summary, "trajectory", "SSCL_Spec", 50, 0.05)[2]
    assert "4.2-8.0 % of the training prefixes labelled (--fraction 0.05), " in line


def test_transfer_table_has_a_column_per_test():
    rows = lambda m: [_row("markov", "x", m, 1.0), _row("frozen", "y", m + 10, 0.5)]  # noqa: E731
    summary = {"tests": {"test": {"rows": rows(40.0)}, "reversed": {"rows": rows(30.0)}}}
    lines = transfer_markdown(summary, "ocean", "SCL", 20, 3)
    assert lines[0] == "# Next-node prediction on ocean: generalisation tests (SCL encoder)"
    assert lines[2].startswith("3 seed(s), head epochs <= 20 (best validation accuracy)")
    assert lines[4:] == [
        "| row | test | reversed |", "|---|---:|---:|",
        "| Markov chain (first order) | 40.0 ± 1.0 | 30.0 ± 1.0 |",
        "| encoder frozen + head | 50.0 ± 0.5 | 40.0 ± 0.5 |",
    ]  # fmt: skip
