"""The Markdown tables of ``python -m experiments predict-next``: the rows of
:func:`~experiments.studies.next_node.next_node_rows` and those of
:func:`~experiments.studies.next_node.next_node_transfer` under every test."""

from __future__ import annotations

from typing import Any

from experiments.studies.next_node.rows import _ROW_LABELS
from topo_contrastive.training.formatting import format_mean_std


def rows_markdown(
    summary: dict[str, Any], dataset: str, encoder: str, epochs: int, fraction: float
) -> list[str]:
    """The lines of the table of :func:`~experiments.studies.next_node.next_node_rows`'s
    ``summary`` (test accuracy in %, mean ± std over the seeds) on ``dataset`` with the
    ``encoder`` named so, head epochs at most ``epochs``, labelled ``fraction``."""
    seeds = len(summary["seeds"])
    lines = [f"# Next-node prediction on {dataset} ({encoder} encoder)", "",
             f"{seeds} seed(s), {summary['samples']} paths, "
             + (_labelled_words(summary["labelled"], fraction) if fraction < 1 else "")
             + f"head epochs <= {epochs} (best validation accuracy), test accuracy:", "",
             "| row | test accuracy (%) |", "|---|---:|"]  # fmt: skip
    for r in summary["rows"]:
        lines.append(f"| {r['label']} | {format_mean_std(r['mean_accuracy'], r['std_accuracy'])} |")
    return lines


def transfer_markdown(
    summary: dict[str, Any], dataset: str, encoder: str, epochs: int, seeds: int
) -> list[str]:
    """The lines of the table of :func:`~experiments.studies.next_node.next_node_transfer`'s
    ``summary``: every row under every generalisation test (test accuracy in %, mean ± std
    over the ``seeds`` seeds)."""
    tests = list(summary["tests"])
    lines = [f"# Next-node prediction on {dataset}: generalisation tests ({encoder} encoder)", "",
             f"{seeds} seed(s), head epochs <= {epochs} (best validation accuracy), test "
             "accuracy (%); reversed: the test paths walked backwards; other region: trained "
             "on class-0 paths, tested on class-1 paths.", "",
             "| row | " + " | ".join(tests) + " |", "|---|" + "---:|" * len(tests)]  # fmt: skip
    by_test = {t: {r["row"]: r for r in summary["tests"][t]["rows"]} for t in tests}
    for row in by_test[tests[0]]:
        cells = [format_mean_std(by_test[t][row]["mean_accuracy"], by_test[t][row]["std_accuracy"])
                 for t in tests]  # fmt: skip
        lines.append(f"| {_ROW_LABELS[row]} | " + " | ".join(cells) + " |")
    return lines


def _labelled_words(labelled: list[dict[str, int]], fraction: float) -> str:
    """``"1 of 24 training prefixes labelled (4.2 %; --fraction 0.01), "``: the share really
    labelled after rounding (a range over the seeds where it differs)."""
    counts = sorted({(c["train"], c["train_total"]) for c in labelled})
    shares = sorted(100 * n / total for n, total in counts)
    if len(counts) == 1:
        n, total = counts[0]
        return (f"{n} of {total} training prefixes labelled ({shares[0]:.1f} %; --fraction "
                f"{fraction:g}), ")  # fmt: skip
    return (f"{shares[0]:.1f}-{shares[-1]:.1f} % of the training prefixes labelled (--fraction "
            f"{fraction:g}), ")  # fmt: skip
