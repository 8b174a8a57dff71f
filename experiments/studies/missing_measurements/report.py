"""The missing-measurements study's tables and figure
(``missing_measurements.{json,csv,md,png}``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from experiments.studies.missing_measurements.protocol import FILLS, ROWS, cell_names
from experiments.study import write_report

#: What the study writes into its folder.
OUTPUTS: tuple[str, ...] = (
    "missing_measurements.json", "missing_measurements.csv", "missing_measurements.md",
    "missing_measurements.png", "cells", "encoders",
)  # fmt: skip


def _columns(settings: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The cells of a row and their headings (``"random 30 %"``)."""
    cells = cell_names(settings["fractions"], settings["modes"])
    head = ["complete"] + [f"{m} {100 * float(f):g} %" for m in settings["modes"]
                           for f in settings["fractions"]]  # fmt: skip
    return cells, head


def missing_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The CSV's rows: one per dataset, row, fill and cell, with the ``mean`` and ``std`` of
    the test accuracy in % over the splits and the ``runs`` (``"%.2f"``, space-separated)."""
    cells, _ = _columns(summary["settings"])
    table = []
    for name, rec in summary["datasets"].items():
        for row in ROWS:
            for fill in FILLS:
                for c in cells:
                    v = 100 * np.asarray(rec["rows"][row][fill][c])
                    table.append({"dataset": name, "row": row, "fill": fill, "cell": c,
                                  "mean": v.mean(), "std": v.std(),
                                  "runs": " ".join(f"{a:.2f}" for a in v)})  # fmt: skip
    return table


def missing_markdown(summary: dict[str, Any]) -> str:
    """The Markdown report: one table per dataset, a line per row and fill, a column per
    cell, test accuracy in % as mean ± std over the splits."""
    from topo_contrastive.training.formatting import format_mean_std

    st = summary["settings"]
    cells, head = _columns(st)
    lines = [f"Test accuracy in %, mean ± std over {st['splits']} split(s); probes trained on "
             "complete flows, tested with the edges unobserved.", ""]  # fmt: skip
    for name, rec in summary["datasets"].items():
        s = rec["sizes"]
        lines += [f"**{name}** ({s['N1']:,} edges, {s['flows']:,} flows, beta_1 = "
                  f"{s['beta_1']}):", "",
                  "| row | unobserved entries | " + " | ".join(head) + " |",
                  "|---|---|" + "---:|" * len(head)]  # fmt: skip
        for row in ROWS:
            for fill in FILLS:
                per = rec["rows"][row][fill]
                text = [format_mean_std(100 * np.asarray(per[c])) for c in cells]
                label = row.replace("|", "\\|")
                lines.append(f"| {label} | {fill} | " + " | ".join(text) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_missing(summary: dict[str, Any], path: str | Path) -> None:
    """A panel per mode and dataset: test accuracy against the unobserved fraction, every
    row and fill (dotted: zeros, solid: interpolated) with a ± std band over the splits;
    written atomically as PNG (needs matplotlib, the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments._helpers import atomic_write

    names = list(summary["datasets"])
    modes = summary["settings"]["modes"]
    fractions = [0.0, *summary["settings"]["fractions"]]
    x = [100 * f for f in fractions]
    fig, axes = plt.subplots(len(modes), len(names), figsize=(3.2 * len(names), 5.5),
                             squeeze=False, sharey=True)  # fmt: skip
    for j, name in enumerate(names):
        rows = summary["datasets"][name]["rows"]
        for i, mode in enumerate(modes):
            ax = axes[i][j]
            cells = ["complete"] + [f"{mode} {f:g}" for f in fractions[1:]]
            for k, row in enumerate(ROWS):
                for fill, ls in (("zeros", ":"), ("interpolated", "-")):
                    v = [100 * np.asarray(rows[row][fill][c]) for c in cells]
                    mean = np.array([a.mean() for a in v])
                    std = np.array([a.std() for a in v])
                    ax.plot(x, mean, ls=ls, color=f"C{k}", marker="o", ms=2,
                            label=f"{row}, {fill}" if (i, j) == (0, 0) else None)  # fmt: skip
                    ax.fill_between(x, mean - std, mean + std, color=f"C{k}", alpha=0.08)
            ax.set_title(f"{name}, {mode}", fontsize=9)
            ax.set_xlabel("unobserved edges (%)")
            if j == 0:
                ax.set_ylabel("test accuracy (%)")
    fig.tight_layout()
    # below the panels, as wide as they are (the saved image's box takes it in)
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7,
               ncol=4 if len(names) >= 3 else 2)  # fmt: skip
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110,
                                               bbox_inches="tight"))  # fmt: skip
    plt.close(fig)


def write_missing(summary: dict[str, Any], folder: str | Path, figure: bool = True) -> str:
    """Write ``missing_measurements.json`` (the summary), ``.csv`` (:func:`missing_rows`),
    ``.md`` (:func:`missing_markdown`) and (``figure``) ``.png`` (:func:`plot_missing`) into
    ``folder``, each atomically; returns the Markdown."""
    return write_report(folder, "missing_measurements", summary, missing_markdown(summary),
                        missing_rows(summary),
                        (lambda path: plot_missing(summary, path)) if figure else None)
