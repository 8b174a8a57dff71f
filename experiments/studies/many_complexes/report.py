"""The many-complexes study's tables and figure (``many_complexes.{json,csv,md,png}``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments.studies.reuse.protocol import fraction_key
from experiments.studies.reuse.report import fraction_bands, summary_rows
from experiments.study import write_report

#: What the study writes into its folder.
OUTPUTS: tuple[str, ...] = ("many_complexes.json", "many_complexes.csv", "many_complexes.md",
                            "many_complexes.png", "cells")  # fmt: skip

#: Colour and line style of the rows that have one (others cycle through the rest).
_STYLES = {"SSCL_Spec": ("C0", "-"), "SCL": ("C9", "-"), "untrained": ("C7", "--"),
           "supervised SCNN": ("C1", "-"), "SSCL_Spec fine-tuned": ("C0", "--"),
           "SSCL_Spec, part energies": ("C3", "-"),
           "untrained, part energies": ("C3", "--")}  # fmt: skip


def _where(data: dict[str, Any]) -> str:
    sources = data.get("networks")
    if sources:
        return f"samples of {', '.join(sources)}, each on its network's complex"
    return "one random complex per sample"


def many_complexes_markdown(summary: dict[str, Any]) -> str:
    """The Markdown report: a sentence on the protocol and data, then one line per row
    with the test accuracy (mean ± std, in %) at every labelled fraction."""
    from topo_contrastive.training.formatting import format_mean_std

    st, data = summary["settings"], summary["data"]
    fractions = st["fractions"]
    head = " | ".join(f"{100 * f:g} %" for f in fractions)
    pooled = f" pooled from {', '.join(data['networks'])}" if data.get("networks") else ""
    lines = [
        f"Test accuracy in %, mean ± std over {st['seeds']} seed(s) x {st['draws']} draw(s) "
        f"of the labelled subset (one draw at 100 %); {data['samples']} samples{pooled}, "
        f"{data['mean_edges']:.0f} edges per complex on average.",
        "",
        f"| row | {head} |",
        "|---|" + "---:|" * len(fractions),
    ]
    for row, per in summary["rows"].items():
        cells = [format_mean_std(per[fraction_key(f)]["mean"], per[fraction_key(f)]["std"],
                                 scale=100) for f in fractions]  # fmt: skip
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_many_complexes(summary: dict[str, Any], path: str | Path) -> None:
    """Test accuracy against the labelled fraction, every row with a ± std band; written
    atomically as PNG (needs matplotlib, the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments._helpers import atomic_write

    fractions = summary["settings"]["fractions"]
    fig, ax = plt.subplots(figsize=(7, 4))
    fraction_bands(ax, summary["rows"], fractions, _STYLES)
    ax.set_ylabel("test accuracy (%)")
    ax.axhline(100 / summary["data"]["classes"], color="k", lw=0.5, ls=":")
    ax.set_title(f"Many complexes ({_where(summary['data'])})", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def write_many_complexes(summary: dict[str, Any], folder: str | Path,
                         figure: bool = True) -> str:  # fmt: skip
    """Write ``many_complexes.json`` (the summary), ``.csv`` (one line per row and
    fraction), ``.md`` and (``figure``) ``.png`` into ``folder``, atomically; returns the
    Markdown."""
    return write_report(folder, "many_complexes", summary, many_complexes_markdown(summary),
                        summary_rows(summary),
                        (lambda path: plot_many_complexes(summary, path)) if figure else None)
