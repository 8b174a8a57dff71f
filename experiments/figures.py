"""Figures 1 and 2 of ``reproduce`` (private helpers)."""

from __future__ import annotations

from pathlib import Path

import torch

from experiments._helpers import atomic_write, require_extra
from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData


def plot_figure2(
    points: dict[str, list[tuple[float, float, float]]], path: Path, title: str
) -> None:
    """Figure 2: test accuracy against the uniform drop probability, ``points[row] = [(p,
    mean %, std %), ...]``, written atomically as PNG to ``path``."""
    require_extra("matplotlib", "Figure 2")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.8, 3.4))
    ax = fig.subplots()
    styles = {
        "SCL": ("tab:blue", "o", "SCL (InfoNCE)"),
        "SSCL": ("tab:orange", "s", "SSCL (reweighted)"),
    }
    for name, pts in points.items():
        if not pts:
            continue
        pts = sorted(pts)
        color, marker, label = styles.get(name, ("k", "o", name))
        ax.errorbar(
            [p[0] for p in pts],
            [p[1] for p in pts],
            yerr=[p[2] for p in pts],
            color=color,
            marker=marker,
            capsize=3,
            label=label,
        )
    ax.set_xlabel("uniform drop probability p")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=130))


def figure1_from_data(
    data: ExperimentData, config: ExperimentConfig, draws: int, seed: int, path: Path
) -> None:
    """Figure 1 of the paper from a prepared dataset: embedding distances of ``draws`` uniform
    and spectral masks per flow (same expected number of drops), written to ``path``."""
    from experiments.figure1 import (
        METHODS,
        Figure1Result,
        embedding_distances,
        plot_figure1,
    )

    flows = data.flows.double()
    p_opt = data.drop_probabilities_for(config).double()
    support = flows != 0
    size = support.sum(-1, keepdim=True).clamp_min(1).double()
    p_unif = support * (p_opt.sum(-1, keepdim=True) / size)  # same expected drops per flow
    gen = torch.Generator().manual_seed(seed)
    distances = {
        m: embedding_distances(flows, data.hodge, p, draws, generator=gen, progress=False)
        for m, p in zip(METHODS, (p_unif, p_opt), strict=True)
    }
    plot_figure1(Figure1Result(distances, p_opt, p_unif, config.budget), path)
