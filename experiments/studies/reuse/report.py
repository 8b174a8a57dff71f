"""The reuse study's tables, target check and figure (``reuse.{json,csv,md,png}``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from experiments.studies.reuse.protocol import ROWS, fraction_key
from experiments.study import write_report

#: What the study writes into its folder.
OUTPUTS: tuple[str, ...] = ("reuse.json", "reuse.csv", "reuse.md", "reuse.png", "cells")
#: The target: the transferred encoder within this many points of the in-domain one.
TARGET_POINTS = 2.0


def target_check(summary: dict[str, Any]) -> dict[str, Any]:
    """The target: the transferred encoder (probed) within :data:`TARGET_POINTS` points of
    the in-domain encoder (probed) on at least half of the held-out networks, at every
    labelled fraction. "Within" is one-sided: transfer may cost at most
    :data:`TARGET_POINTS` points, and a transferred encoder ahead of the in-domain one meets
    it; the networks within that many points either way are counted too.

    Returns:
        A dict with ``per_network`` (per held-out network: ``gaps``, in-domain minus
        transferred in points at every fraction, ``met`` (every gap at most
        :data:`TARGET_POINTS`) and ``both_ways`` (every gap's magnitude at most that)),
        ``networks_met``, ``networks_both_ways``, ``needed`` and ``met``.
    """
    per = {}
    for name, res in summary["held_out"].items():
        rows = res["rows"]
        gaps = {f: 100 * (rows["in-domain, probed"][f]["mean"]
                          - rows["transferred, probed"][f]["mean"])
                for f in rows["transferred, probed"]}  # fmt: skip
        per[name] = {"gaps": gaps, "met": all(g <= TARGET_POINTS for g in gaps.values()),
                     "both_ways": all(abs(g) <= TARGET_POINTS for g in gaps.values())}  # fmt: skip
    met = sum(v["met"] for v in per.values())
    needed = math.ceil(len(per) / 2)
    return {"per_network": per, "networks_met": met,
            "networks_both_ways": sum(v["both_ways"] for v in per.values()),
            "needed": needed, "met": met >= needed}  # fmt: skip


def _cell(v: dict[str, Any]) -> str:
    from topo_contrastive.training.formatting import format_mean_std

    return format_mean_std(v["mean"], v["std"], scale=100)


def reuse_markdown(summary: dict[str, Any]) -> str:
    """The Markdown report: one table per held-out network, and the target's table."""
    st = summary["settings"]
    fr = [fraction_key(f) for f in st["fractions"]]
    head = " | ".join(f"{100 * f:g} %" for f in st["fractions"])
    lines = [
        f"Test accuracy in %, mean ± std over {st['seeds']} pre-training seed(s) x "
        f"{st['draws']} draw(s) of the labelled subset (one draw at 100 %); "
        f"{st['epochs']} pre-training epochs, {st['label_epochs']} epochs of fine-tuning and "
        f"of the supervised SCNN, width {st['hidden']}, {st['layers']} layers.",
        "",
    ]
    for name, res in summary["held_out"].items():
        net = summary["networks"][name]
        others = [n for n in summary["networks"] if n != name]
        lines += [
            f"**Held out: {name}** (N0 / N1 / N2 = {' / '.join(map(str, net['sizes']))}, "
            f"{net['trips']} trips; pre-trained on {', '.join(others)})",
            "",
            f"| row | {head} |",
            "|---|" + "---:|" * len(fr),
        ]
        for row in ROWS:
            per = res["rows"].get(row, {})
            lines.append(f"| {row} | " + " | ".join(_cell(per[f]) if f in per else "-"
                                                     for f in fr) + " |")  # fmt: skip
        lines.append("")
    t = target_check(summary)
    lines += [
        f"**Target** (transferred at most {TARGET_POINTS:g} points below in-domain, probed, "
        "at every fraction, on at least half of the held-out networks; ahead of it counts "
        "as within): in-domain minus transferred, in points",
        "",
        f"| held out | {head} | met |",
        "|---|" + "---:|" * len(fr) + "---|",
    ]
    for name, v in t["per_network"].items():
        gaps = " | ".join(f"{v['gaps'][f]:+.1f}" for f in fr)
        lines.append(f"| {name} | {gaps} | {'yes' if v['met'] else 'no'} |")
    lines += ["", f"Target {'met' if t['met'] else 'missed'}: {t['networks_met']} of "
              f"{len(t['per_network'])} held-out networks within {TARGET_POINTS:g} points at "
              f"every fraction ({t['needed']} needed); within {TARGET_POINTS:g} points either "
              f"way: {t['networks_both_ways']} of {len(t['per_network'])}."]  # fmt: skip
    return "\n".join(lines) + "\n"


def summary_rows(summary: dict[str, Any], key: str | None = None) -> list[dict[str, Any]]:
    """The CSV of a many-complex study: one line per row and fraction (per ``key``: the entry
    of ``summary`` above the rows, e.g. ``"held_out"``; without, the fractions of the
    settings), with the mean, std and runs of its test accuracies."""
    fractions = summary["settings"]["fractions"]
    groups = summary[key].items() if key else [(None, summary)]
    return [{**({key: name} if key else {}), "row": row, "fraction": f if key else fractions[i],
             "mean": v["mean"], "std": v["std"], "runs": " ".join(f"{r:.4f}" for r in v["runs"])}
            for name, res in groups for row, per in res["rows"].items()
            for i, (f, v) in enumerate(per.items())]  # fmt: skip


def fraction_bands(ax: Any, rows: dict[str, dict[str, dict[str, float]]],
                   fractions: list[float], styles: dict[str, tuple[str, str]],
                   first: int = 2, cycle: int = 6) -> None:  # fmt: skip
    """Draw every row's mean test accuracy (%) against the labelled fraction on a log axis,
    with a ± std band, on the matplotlib axes ``ax``.

    Args:
        ax: matplotlib axes.
        rows: row name -> ``{fraction_key(f): {"mean", "std"}}`` (accuracies in ``[0, 1]``).
        fractions: the labelled fractions, in ``(0, 1]``.
        styles: row name -> ``(color, linestyle)``; other rows get ``C{first + i % cycle}``
            (``i`` the row's position) dotted.
        first, cycle: the fallback colours (default 2, 6).
    """
    x = [100 * f for f in fractions]
    for i, (row, per) in enumerate(rows.items()):
        color, ls = styles.get(row, (f"C{first + i % cycle}", ":"))
        mean = np.array([100 * per[fraction_key(f)]["mean"] for f in fractions])
        std = np.array([100 * per[fraction_key(f)]["std"] for f in fractions])
        ax.plot(x, mean, color=color, ls=ls, marker="o", ms=3, label=row)
        ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.12)
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{v:g} %" for v in x])
    ax.set_xlabel("labelled fraction of the training split")


def plot_reuse(summary: dict[str, Any], path: str | Path) -> None:
    """One panel per held-out network: accuracy against the labelled fraction, every row
    with a ± std band; written atomically as PNG (needs matplotlib, the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments._helpers import atomic_write

    fractions = summary["settings"]["fractions"]
    held = list(summary["held_out"])
    fig, axes = plt.subplots(1, len(held), figsize=(4.2 * len(held), 3.8), squeeze=False)
    styles = {"transferred, probed": ("C0", "-"), "transferred, fine-tuned": ("C0", "--"),
              "in-domain, probed": ("C3", "-"), "untrained, probed": ("C7", "--"),
              "supervised SCNN": ("C1", "-")}  # fmt: skip
    for ax, name in zip(axes[0], held, strict=True):
        rows = summary["held_out"][name]["rows"]
        fraction_bands(ax, {row: rows[row] for row in ROWS}, fractions, styles, first=4, cycle=5)
        ax.set_title(f"held out: {name}", fontsize=10)
        ax.axhline(50, color="k", lw=0.5, ls=":")
    axes[0][0].set_ylabel("test accuracy (%)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def write_reuse(summary: dict[str, Any], folder: str | Path, figure: bool = True) -> str:
    """Write ``reuse.json`` (the summary and the target check), ``reuse.csv``, ``reuse.md``
    and (``figure``) ``reuse.png`` into ``folder``, atomically; returns the Markdown."""
    return write_report(folder, "reuse", {**summary, "target": target_check(summary)},
                        reuse_markdown(summary), summary_rows(summary, "held_out"),
                        (lambda path: plot_reuse(summary, path)) if figure else None)
