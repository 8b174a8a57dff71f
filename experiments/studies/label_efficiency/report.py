"""The outputs of ``python -m experiments label-efficiency`` from its cell records: the summary
(mean ± std over draws per row and fraction), the Markdown table and the figure
(:mod:`~experiments.studies.label_efficiency.curves` writes them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments._helpers import atomic_write, require_extra
from topo_contrastive.training.formatting import format_mean_std

#: Row kinds that use a pre-trained encoder (every other row is a reference row).
PRETRAINED_KINDS: tuple[str, ...] = ("probe", "finetune")


def summarize(
    records: Sequence[Mapping[str, Any]], rows: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Mean and standard deviation (percent, over the draws) of every row and fraction.

    Args:
        records: the cell records (``row``, ``label``, ``kind``, ``fraction``, ``labelled``,
            ``test_accuracy``).
        rows: the row order (default ``None``: first seen).

    Returns:
        One dict per row: ``row``, ``label``, ``kind``, ``points``: one dict per fraction
        (ascending) with ``fraction``, ``labelled`` (mean labels per draw), ``mean``, ``std``
        and ``draws``.
    """
    order = list(rows or [])
    for r in records:
        if r["row"] not in order:
            order.append(r["row"])
    out = []
    for row in order:
        mine = [r for r in records if r["row"] == row]
        if not mine:
            continue
        points = []
        for f in sorted({float(r["fraction"]) for r in mine}):
            cell = [r for r in mine if float(r["fraction"]) == f]
            acc = 100 * np.array([r["test_accuracy"] for r in cell], dtype=float)
            points.append(
                {
                    "fraction": f,
                    "labelled": float(np.mean([r["labelled"] for r in cell])),
                    "mean": float(acc.mean()),
                    "std": float(acc.std()),
                    "draws": len(cell),
                }
            )
        out.append({"row": row, "label": mine[0]["label"], "kind": mine[0]["kind"],
                    "points": points})  # fmt: skip
    return out


def _at(row: Mapping[str, Any], fraction: float) -> dict[str, Any] | None:
    return next((p for p in row["points"] if p["fraction"] == fraction), None)


def best_line(summary: Sequence[Mapping[str, Any]], fraction: float) -> str:
    """One line for ``fraction``: the best pre-trained row against the best reference row
    (every row that is not a pre-trained encoder's), by mean accuracy."""

    def best(pre: bool) -> tuple[str, float] | None:
        cands = [
            (r["label"], p["mean"])
            for r in summary
            if (r["kind"] in PRETRAINED_KINDS) == pre and (p := _at(r, fraction)) is not None
        ]
        return max(cands, key=lambda c: c[1]) if cands else None

    a, b = best(True), best(False)
    head = f"{100 * fraction:g} %"
    if a is None or b is None:
        return f"{head}: " + ("no pre-trained row" if a is None else "no reference row")
    diff = a[1] - b[1]
    verdict = "above" if diff > 0 else ("level with" if diff == 0 else "below")
    return (
        f"{head}: best pre-trained row {a[0]} {a[1]:.1f} % is {verdict} the best reference "
        f"row {b[0]} {b[1]:.1f} % ({diff:+.1f} points)"
    )


def label_efficiency_markdown(
    summary: Sequence[Mapping[str, Any]],
    fractions: Sequence[float],
    title: str,
    notes: Sequence[str] = (),
) -> str:
    """The Markdown report: a title, ``notes`` (protocol lines), the table (rows x
    fractions, mean ± std over draws, in percent) and one :func:`best_line` per fraction."""
    fractions = sorted(float(f) for f in fractions)
    labelled = {}
    for r in summary:
        for p in r["points"]:
            labelled.setdefault(p["fraction"], p["labelled"])
    heads = [
        f"{100 * f:g} % ({labelled[f]:.0f})" if f in labelled else f"{100 * f:g} %"
        for f in fractions
    ]
    lines = [f"# {title}", "", *notes, ""] if notes else [f"# {title}", ""]
    lines += ["| row | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for r in summary:
        cells = []
        for f in fractions:
            p = _at(r, f)
            cells.append("–" if p is None else format_mean_std(p["mean"], p["std"]))
        label = r["label"].replace("|", "\\|")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Columns: labelled fraction of the training split (labels per draw)."]
    lines += ["", *[f"- {best_line(summary, f)}" for f in fractions], ""]
    return "\n".join(lines)


def plot_curves(summary: Sequence[Mapping[str, Any]], path: str | Path, title: str) -> None:
    """Test accuracy against the labelled fraction (log x-axis), mean ± std bands over the
    draws, one line per row (pre-trained rows solid, reference rows dashed); written
    atomically as PNG to ``path`` (matplotlib's Agg canvas, no display needed)."""
    require_extra("matplotlib", "plot_curves")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    for i, r in enumerate(summary):
        pts = r["points"]
        x = np.array([p["fraction"] for p in pts]) * 100
        m = np.array([p["mean"] for p in pts])
        s = np.array([p["std"] for p in pts])
        color = cmap(i % 20)
        style = "-" if r["kind"] in PRETRAINED_KINDS else "--"
        ax.plot(x, m, style, marker="o", ms=3, color=color, label=r["label"])
        ax.fill_between(x, m - s, m + s, color=color, alpha=0.12, linewidth=0)
    ax.set_xscale("log")
    ax.set_xlabel("labelled fraction of the training split (%)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
