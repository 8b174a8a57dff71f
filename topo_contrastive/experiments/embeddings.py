"""Writing the embeddings of every sample to ``.npz`` and ``.csv`` (``topo-contrastive embed``)."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topo_contrastive._files import atomic_write, write_json, write_text

__all__ = ["write_embeddings"]


def write_embeddings(
    folder: str | os.PathLike,
    embeddings: Any,
    sample_ids: Sequence[int | str] | None = None,
    labels: Any | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write embeddings ``[S, D]`` with their sample ids (and labels) to ``folder``.

    Three files, each written atomically:

    - ``embeddings.npz``: ``embeddings`` ``float32 [S, D]``, ``sample_ids`` ``[S]`` (ints or
      strings), ``labels`` ``int64 [S]`` when given; loads with ``allow_pickle=False``;
    - ``embeddings.csv``: one row per sample, columns ``sample_id``, ``label`` (when given)
      and ``h_0 .. h_{D-1}`` (9 significant digits: float32 round-trips);
    - ``embeddings.json``: ``metadata`` with the shape.

    Args:
        folder: output folder (created if needed).
        embeddings: ``[S, D]`` real array or tensor (e.g. from
            :func:`~topo_contrastive.experiments.training.embed`).
        sample_ids: ``S`` ids (default ``None``: ``0 .. S-1``).
        labels: ``int [S]`` or ``None`` (default).
        metadata: JSON-like description of the run (checkpoint, data, ...).

    Returns:
        ``{"npz": path, "csv": path, "json": path}``.

    Raises:
        ValueError: ``embeddings`` not 2-D or not finite; ids or labels of another length.
    """
    emb = np.asarray(
        embeddings.detach().cpu().numpy() if hasattr(embeddings, "detach") else embeddings,
        dtype=np.float32,
    )
    if emb.ndim != 2:
        raise ValueError(f"`embeddings` must have shape [S, D], got {emb.shape}")
    if not np.isfinite(emb).all():
        raise ValueError("`embeddings` contains NaN or inf values (did the training diverge?)")
    num = emb.shape[0]
    ids = np.arange(num) if sample_ids is None else np.asarray(list(sample_ids))
    if ids.shape != (num,):
        raise ValueError(f"`sample_ids` must have {num} entries (one per row), got {ids.shape}")
    arrays: dict[str, np.ndarray] = {"embeddings": emb, "sample_ids": ids}
    lab = None
    if labels is not None:
        lab = np.asarray(labels.cpu() if hasattr(labels, "cpu") else labels).astype(np.int64)
        if lab.shape != (num,):
            raise ValueError(f"`labels` must have {num} entries (one per row), got {lab.shape}")
        arrays["labels"] = lab
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    paths = {"npz": out / "embeddings.npz", "csv": out / "embeddings.csv"}

    def write_npz(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    atomic_write(paths["npz"], write_npz)
    header = ["sample_id"] + (["label"] if lab is not None else [])
    header += [f"h_{j}" for j in range(emb.shape[1])]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")  # quotes ids with commas
    writer.writerow(header)
    text = np.char.mod("%.9g", emb)  # [S, D] strings
    first = [ids.astype(str)] + ([lab.astype(str)] if lab is not None else [])
    writer.writerows(np.column_stack([*first, text]).tolist())
    write_text(paths["csv"], buf.getvalue())
    paths["json"] = out / "embeddings.json"
    write_json(
        paths["json"],
        {"num_samples": num, "dim": int(emb.shape[1]), "labelled": lab is not None,
         **dict(metadata or {})},
    )  # fmt: skip
    return paths
