"""Writing the embeddings of every sample to ``.npz`` and ``.csv`` (``topo-contrastive embed``),
reading them back (:func:`read_embeddings`, which refuses an unfinished folder), and the
complex-agnostic features of samples on complexes of their own (:func:`agnostic_features`)."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topo_contrastive._utils.files import (
    COMPLETE_MARKER,
    atomic_write,
    begin_outputs,
    mark_complete,
    read_npz,
    write_json,
    write_text,
)

_FILES = {"npz": "embeddings.npz", "csv": "embeddings.csv", "json": "embeddings.json"}


def write_embeddings(
    folder: str | os.PathLike,
    embeddings: Any,
    sample_ids: Sequence[int | str] | None = None,
    labels: Any | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write embeddings ``[S, D]`` with their sample ids (and labels) to ``folder``.

    Three files, each written atomically, then the marker ``COMPLETE`` (a stale marker and
    the three files of an earlier run are removed first, so that a folder whose writer was
    interrupted or killed never looks finished; :func:`read_embeddings` checks the marker):

    - ``embeddings.npz``: ``embeddings`` ``float32 [S, D]``, ``sample_ids`` ``[S]`` (ints or
      strings), ``labels`` ``int64 [S]`` when given; loads with ``allow_pickle=False``;
    - ``embeddings.csv``: one row per sample, columns ``sample_id``, ``label`` (when given)
      and ``h_0 .. h_{D-1}`` (9 significant digits: float32 round-trips);
    - ``embeddings.json``: ``metadata`` with the shape.

    Args:
        folder: output folder (created if needed).
        embeddings: ``[S, D]`` real array or tensor (e.g. from
            :func:`~topo_contrastive.training.loop.embed`).
        sample_ids: ``S`` ids (default ``None``: ``0 .. S-1``).
        labels: ``int [S]`` or ``None`` (default).
        metadata: JSON-like description of the run (checkpoint, data, ...).

    Returns:
        ``{"npz": path, "csv": path, "json": path}``.

    Raises:
        ValueError: ``embeddings`` not 2-D or not finite; ids or labels of another length;
            labels outside the int64 range.
        TypeError: labels that are not integral.
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
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(
            f"`sample_ids` must be unique, but {uniq[counts > 1][0].item()!r} occurs "
            f"{int(counts.max())} times"
        )
    arrays: dict[str, np.ndarray] = {"embeddings": emb, "sample_ids": ids}
    lab = None
    if labels is not None:
        from topo_contrastive._utils.checks import label_values

        raw = np.asarray(labels.cpu() if hasattr(labels, "cpu") else labels)
        if raw.shape != (num,):
            raise ValueError(f"`labels` must have {num} entries (one per row), got {raw.shape}")
        lab = label_values(raw, "labels")
        if lab.shape != (num,):
            raise ValueError(f"`labels` must have {num} entries (one per row), got {lab.shape}")
        arrays["labels"] = lab
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    paths = {"npz": out / _FILES["npz"], "csv": out / _FILES["csv"]}
    begin_outputs(out / COMPLETE_MARKER, stale=[out / name for name in _FILES.values()])

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
    paths["json"] = out / _FILES["json"]
    write_json(
        paths["json"],
        {"num_samples": num, "dim": int(emb.shape[1]), "labelled": lab is not None,
         **dict(metadata or {})},
    )  # fmt: skip
    mark_complete(out / COMPLETE_MARKER, f"embeddings [{num}, {emb.shape[1]}] written")
    return paths


def read_embeddings(folder: str | os.PathLike) -> dict[str, Any]:
    """Read a folder written by :func:`write_embeddings` (``topo-contrastive embed``).

    Returns:
        A dict with ``embeddings`` (``float32 [S, D]``), ``sample_ids`` (``[S]``),
        ``labels`` (``int64 [S]`` or ``None``) and ``metadata`` (the ``embeddings.json``
        dict).

    Raises:
        ValueError: the folder is incomplete (no ``COMPLETE`` marker: its writer was
            interrupted or killed; run ``embed`` again with ``--overwrite``), or a file is
            missing, unreadable or of another shape than ``embeddings.json`` says.
    """
    import json

    out = Path(folder).expanduser()
    if not (out / COMPLETE_MARKER).is_file():
        raise ValueError(
            f"'{out}' holds no finished embeddings (no {COMPLETE_MARKER} marker: the `embed` "
            "run that wrote it was interrupted, or none did); run `embed` again with "
            "--overwrite"
        )
    arrays = read_npz(out / _FILES["npz"], what="an embeddings file (topo-contrastive embed)")
    try:
        meta = json.loads((out / _FILES["json"]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"'{out / _FILES['json']}' is not readable JSON ({err})") from err
    emb = arrays.get("embeddings")
    if emb is None or "sample_ids" not in arrays or emb.shape != (
        meta.get("num_samples"), meta.get("dim")
    ):
        raise ValueError(
            f"'{out / _FILES['npz']}' does not match '{out / _FILES['json']}' (expected "
            f"embeddings [{meta.get('num_samples')}, {meta.get('dim')}] and sample_ids)"
        )
    return {
        "embeddings": emb,
        "sample_ids": arrays["sample_ids"],
        "labels": arrays.get("labels"),
        "metadata": meta,
    }


#: The complex-agnostic reference rows of samples on complexes of their own, in order.
AGNOSTIC_ROWS: tuple[str, ...] = (
    "energy fractions", "length, total flow", "fractions + length",
    "fractions + length, products",
)  # fmt: skip


def agnostic_features(dataset: Any) -> dict[str, np.ndarray]:
    r"""The complex-agnostic features of every sample, each on its own complex, comparable
    across complexes where raw flows and harmonic coordinates are not. For a flow
    :math:`\mathbf{x}` with Hodge parts :math:`\mathbf{P}_k\mathbf{x}` (paper eq. 1):

    - ``"energy fractions"`` ``float64 [S, 3]``:
      :math:`f_k = \lVert\mathbf{P}_k\mathbf{x}\rVert^2 / \lVert\mathbf{x}\rVert^2`
      (zero for an all-zero flow);
    - ``"length, total flow"`` ``float64 [S, 2]``: the edges on the flow's support and
      :math:`\sum_e |x_e|` (flow units);
    - ``"fractions + length"`` ``[S, 5]``: both; ``"fractions + length, products"``
      ``[S, 20]``: both and the products of every pair of them, squares included.

    ``dataset`` holds samples with complexes of their own (:class:`~topo_contrastive.data.
    ComplexData`, ``x_1`` ``[N1, 1]``); it is not modified.

    Raises:
        ValueError: ``dataset`` is empty, or its samples carry no complex of their own.
    """
    from torch_geometric.loader import DataLoader

    from topo_contrastive.losses import energy_fractions
    from topo_contrastive.transforms import ContrastiveViews, EdgeFlowMask

    if len(dataset) == 0 or "incidence_1_index" not in dataset[0]:
        raise ValueError(
            "`dataset` must hold samples with complexes of their own (ComplexData with "
            f"incidences), got {'no sample' if len(dataset) == 0 else type(dataset[0]).__name__}"
        )
    # the views' fit computes the Hodge parts of every sample on its own complex
    fitted = ContrastiveViews(EdgeFlowMask(0.0)).fit(dataset.copy())
    b = next(iter(DataLoader(fitted, batch_size=len(fitted))))
    frac = energy_fractions(b.hodge_parts.double(), b.batch_1, len(fitted)).numpy()
    x = b.x_1[:, 0].abs().double()
    length = np.bincount(b.batch_1.numpy(), weights=(x > 0).numpy().astype(float),
                         minlength=len(fitted))  # fmt: skip
    total = np.bincount(b.batch_1.numpy(), weights=x.numpy(), minlength=len(fitted))
    frac[total == 0] = 0.0  # an all-zero flow has no fractions (its parts hold round-off)
    base = np.column_stack([length, total])
    both = np.column_stack([frac, base])
    i, j = np.triu_indices(both.shape[1])
    products = np.column_stack([both, both[:, i] * both[:, j]])
    return dict(zip(AGNOSTIC_ROWS, (frac, base, both, products), strict=True))
