"""The Hodge stars of a weighted complex (the metric of its chains): checked weights, the
presets of :meth:`~topo_contrastive.ComplexOperators.with_weights` and the weights of a
TopoNetX complex's attributes (the maths: docs/weights.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

#: The presets of ``with_weights(metric=...)`` (``None``: the arrays given, or none).
METRICS = ("unweighted", "normalized", "resistance")
#: The keyword of each rank's star in ``with_weights`` (and of the data file's keys).
STAR_NAMES = ("node", "edge", "cell")

Stars = tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]


def check_star(values: Any, size: int, name: str) -> np.ndarray | None:
    """``values`` as positive finite ``float64 [size]``; ``None`` for ``None`` or all ones
    (the unweighted path, taken bit for bit)."""
    if values is None:
        return None
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf" or arr.shape != (size,):
        raise ValueError(
            f"`{name}` must be a real array of shape [{size}] (one weight per cell), got "
            f"dtype {arr.dtype} and shape {tuple(arr.shape)}"
        )
    arr = arr.astype(np.float64)
    if not (np.isfinite(arr) & (arr > 0)).all():
        bad = int(np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))[0])
        raise ValueError(f"`{name}` must be positive and finite, got {arr[bad]} at entry {bad}")
    if (arr == 1.0).all():
        return None
    arr.flags.writeable = False
    return arr


def preset_stars(ops: Any, metric: str | None, given: dict[str, Any]) -> tuple[Stars, str]:
    """The checked stars ``(W0, W1, W2)`` of ``with_weights`` and the metric's name."""
    if metric is not None and metric not in METRICS:
        raise ValueError(f"`metric` must be None or one of {METRICS}, got {metric!r}")
    named = [k for k, v in given.items() if v is not None]
    if metric in ("unweighted", "normalized") and named:
        raise ValueError(f"metric={metric!r} takes no weights, got `{named[0]}`")
    if metric == "resistance" and named != ["edge"]:
        raise ValueError(
            "metric='resistance' takes the per-edge resistances or lengths as `edge` (W1 = "
            f"diag(edge), W0 = W2 = I) and no other weights, got {named or 'none'}"
        )
    if metric == "normalized":
        return normalized_stars(ops), metric
    sizes = ops.sizes[:3]
    stars = tuple(check_star(given[k], n, k) for k, n in zip(STAR_NAMES, sizes, strict=True))
    if all(s is None for s in stars):
        return stars, "unweighted"
    return stars, metric or "weighted"


def normalized_stars(ops: Any) -> Stars:
    """Hodge stars of Schaub et al.'s normalised Hodge 1-Laplacian (SIAM Review 62(2), 2020,
    eq. 3.4): ``W1 = D2^-1``, ``D2 = max(diag(|B2| 1), I)``; ``W0 = D1^-1``, ``D1 = 2
    diag(|B1| D2 1)``; ``W2 = 3 I`` (a 2-cell's number of edges for polygons)."""
    d2 = np.maximum(np.asarray(abs(ops.B2).sum(axis=1)).ravel(), 1.0)  # [N1]
    d1 = 2.0 * np.asarray(abs(ops.B1) @ d2).ravel()  # [N0]; 0 at a node without edges
    w0 = np.where(d1 > 0, 1.0 / np.where(d1 > 0, d1, 1.0), 1.0)
    w2 = ops.face_sizes.astype(np.float64)
    return tuple(check_star(w, w.size, k) for k, w in zip(STAR_NAMES, (w0, 1.0 / d2, w2),
                                                          strict=True))  # fmt: skip


def toponetx_stars(ops: Any, complex: Any, weight: str) -> dict[str, np.ndarray]:
    """The attribute ``weight`` of a TopoNetX complex's nodes, edges and 2-cells in the
    columns of ``ops`` (1 where a cell has none: networkx's default)."""
    cell = type(complex).__name__ == "CellComplex"
    get = complex.get_cell_attributes if cell else complex.get_simplex_attributes
    rows = ops._label_rows or {}
    b2 = ops.B2.tocsc()
    faces = {frozenset(b2.indices[b2.indptr[f] : b2.indptr[f + 1]].tolist()): f
             for f in range(ops.num_faces)}  # fmt: skip
    out: dict[str, np.ndarray] = {}
    for rank, key in enumerate(STAR_NAMES):
        values = np.ones(ops.sizes[rank])
        for item, value in get(weight, rank).items():
            ids = [rows.get(v, v) for v in ([item] if rank == 0 and cell else list(item))]
            pairs = list(zip(ids, ids[1:] + ids[:1], strict=True))  # a 2-cell's cycle
            try:
                if rank == 0:
                    if not 0 <= (col := int(ids[0])) < ops.num_nodes:
                        raise KeyError(col)
                else:
                    cols = ops.edge_lookup(*np.asarray(pairs[: 1 if rank == 1 else None]).T)[0]
                    col = int(cols[0]) if rank == 1 else faces[frozenset(cols.tolist())]
            except (ValueError, KeyError, TypeError):
                raise ValueError(
                    f"the attribute {weight!r} of the cell {item!r} (rank {rank}) names no "
                    "cell of the complex"
                ) from None
            try:
                values[col] = float(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"the attribute {weight!r} of the cell {item!r} must be a positive number, "
                    f"got {value!r}"
                ) from None
        out[key] = values
    return out
