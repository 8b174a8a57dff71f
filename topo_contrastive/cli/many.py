"""The evaluation's work on a data file of many complexes (one complex per sample): the
probe with its reference rows and its report. Pre-training such a file into a folder is
:func:`~topo_contrastive.cli.runs.pretrain_to_folder`'s; the pre-training and the
embeddings themselves are :mod:`topo_contrastive.training.many`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from topo_contrastive.training.many import LAYOUT, ManyComplexData, embed_many

__all__ = ["evaluate_many", "many_report"]


def evaluate_many(
    encoder: torch.nn.Module,
    data: ManyComplexData,
    split_seeds: Sequence[int],
    metadata: Mapping[str, Any] | None = None,
    device: str | torch.device = "cpu",
    probe: str = "ridge",
    references: bool = True,
    progress: Callable[[str, dict[str, Any]], None] | None = None,
    agnostic: Callable[[Any], Mapping[str, np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Linear-probe evaluation of an encoder on many complexes over several splits, with
    reference rows on the same splits: the untrained encoder of the same architecture and
    seed, and, where ``agnostic`` is given, the complex-agnostic features it computes from
    the dataset (the command passes the many-complexes study's
    :func:`~topo_contrastive.evaluation.many_references.reference_features`: Hodge
    energy fractions, flow length and total flow).

    Returns:
        ``{"dataset", "data_layout", "metadata", "probe", "mean_accuracy", "std_accuracy",
        "splits", "references"}`` (accuracies in percent; ``references``: one dict per row,
        ``row``, ``features``, ``mean_accuracy``, ``std_accuracy``, ``splits``).

    Raises:
        ValueError: data without labels; splits the probe cannot run on (before any fit).
    """
    from topo_contrastive import io
    from topo_contrastive.evaluation.probe import check_probe_splits, probe_splits

    seeds = [int(s) for s in split_seeds]
    data.require_labels("evaluate (the linear probe)")
    check_probe_splits(data, seeds, probe)

    def row(name: str, features: np.ndarray) -> dict[str, Any]:
        tick = None if progress is None else (lambda r: progress(name, r))
        splits = probe_splits(features, data, seeds, tick, probe=probe)
        acc = 100 * np.array([r["test_accuracy"] for r in splits])
        return {"row": name, "features": int(features.shape[1]),
                "mean_accuracy": float(acc.mean()), "std_accuracy": float(acc.std()),
                "splits": splits}  # fmt: skip

    main = row("encoder", embed_many(encoder, data, device=device))
    summary = {"dataset": data.name, "data_layout": LAYOUT, "metadata": dict(metadata or {}),
               "probe": probe, "mean_accuracy": main["mean_accuracy"],
               "std_accuracy": main["std_accuracy"], "splits": main["splits"]}  # fmt: skip
    if references:
        arch = io._architecture(encoder, None)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int((metadata or {}).get("seed") or 0))
            fresh = io._build("the encoder", arch, None).eval()
        rows = [row("untrained encoder", embed_many(fresh, data, device=device))]
        for name, feats in (agnostic(data.dataset) if agnostic else {}).items():
            rows.append(row(name, feats))
        summary["references"] = rows
    return summary


def many_report(summary: Mapping[str, Any]) -> str:
    """The printed lines of :func:`evaluate_many`'s reference rows and which beat the
    encoder."""
    from topo_contrastive.training.formatting import format_mean_std

    rows = summary.get("references") or []
    if not rows:
        return ""
    width = max(len(r["row"]) for r in rows)
    lines = ["Same splits, same probe (complex-agnostic references):"]
    for r in rows:
        shown = format_mean_std(r["mean_accuracy"], r["std_accuracy"], widths=(5, 4))
        lines.append(f"  {r['row']:<{width}}  {shown} %  ({r['features']} features)")
    above = [r["row"] for r in rows if r["mean_accuracy"] >= summary["mean_accuracy"]]
    lines.append(
        "At or above the encoder: " + "; ".join(above) + "." if above
        else "Every reference row is below the encoder."
    )
    return "\n".join(lines)
