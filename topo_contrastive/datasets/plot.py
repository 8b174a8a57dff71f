"""Draw a simplicial complex in the plane with edge flows and node paths."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from topo_contrastive._utils.extras import require_extra
from topo_contrastive._utils.files import atomic_write
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._checks import numpy as _numpy

_COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")


def plot_complex(
    dataset_or_complex: Any,
    pos: Any | None = None,
    flows: Any | None = None,
    paths: Sequence[Any] | None = None,
    labels: Sequence[int] | Any | None = None,
    ax: Any | None = None,
    path: str | os.PathLike | None = None,
    title: str | None = None,
    dpi: int = 150,
) -> Any:
    r"""Draw a 2-dimensional simplicial complex with a few edge flows or node paths.

    Filled triangles are shaded, edges drawn as thin lines and nodes as dots, so
    the holes of the complex (regions without shaded triangles) are visible.
    Edge flows are drawn as arrows along their support, pointing along the edge's
    orientation where the flow is positive and against it where it is negative
    (the sign convention of :math:`\mathbf{B}_1`); node paths are drawn as
    arrows from node to node with a dot at the start and a square at the end.

    Args:
        dataset_or_complex: a :class:`~topo_contrastive.ComplexOperators`, or a dataset
            with ``.complex`` and ``.pos`` (e.g. :class:`SyntheticTrajectories`).
        pos: node coordinates ``[N0, 2]``; default ``dataset.pos``.
        flows: edge flows ``[N1]``, ``[N1, 1]`` or ``[K, N1]`` (default ``None``).
        paths: node paths, a sequence of ``[L]`` node-id sequences (default ``None``).
        labels: class of each flow (if ``flows``) or path (else); same class, same
            colour (default ``None``: one colour per flow / path).
        ax: matplotlib ``Axes`` to draw into (default ``None``: a new ``Figure``
            of 6 x 6 inches, made without pyplot).
        path: if given, the figure is saved there as PNG, atomically (temporary
            file + ``os.replace``); must end in ``.png`` (default ``None``).
        title: axes title (default ``None``).
        dpi: resolution of the saved PNG (default 150).

    Returns:
        The matplotlib ``Figure``.

    Raises:
        TypeError: ``dataset_or_complex`` is neither a :class:`ComplexOperators` nor a
            dataset with ``.complex``.
        ValueError: ``pos`` missing or not ``[N0, 2]``; ``flows`` whose last size
            is not ``N1``; a path with a node id out of range; ``labels`` of the
            wrong length; ``path`` not ending in ``.png``.
    """
    require_extra("matplotlib", "plot_complex")
    from matplotlib.figure import Figure

    ops, xy = _complex_and_coordinates(dataset_or_complex, pos)
    if path is not None and not os.fspath(path).lower().endswith(".png"):
        raise ValueError(f"`path` must end in .png, got {os.fspath(path)!r}")
    flow_arr, path_list, label_arr = _checked_items(ops, flows, paths, labels)
    if ax is None:
        fig = Figure(figsize=(6, 6))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    _draw_complex(ax, ops, xy)
    _draw_items(ax, ops, xy, flow_arr, path_list, label_arr)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xticks([])
    ax.set_yticks([])
    if title is not None:
        ax.set_title(title)

    if path is not None:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight"))
    return fig


def _complex_and_coordinates(obj: Any, pos: Any | None) -> tuple[ComplexOperators, np.ndarray]:
    """The complex of ``obj`` (a complex or a dataset) and the node coordinates
    ``float64 [N0, 2]`` (``pos``, else the dataset's)."""
    if isinstance(obj, ComplexOperators):
        ops = obj
    elif isinstance(getattr(obj, "complex", None), ComplexOperators):
        ops = obj.complex
        if pos is None:
            pos = getattr(obj, "pos", None)
    else:
        raise TypeError(
            "`dataset_or_complex` must be a ComplexOperators or a dataset with `.complex`, "
            f"got {type(obj).__name__}"
        )
    if pos is None:
        raise ValueError("`pos` (node coordinates [N0, 2]) is required for a ComplexOperators")
    xy = _numpy(pos).astype(np.float64)
    if xy.shape != (ops.num_nodes, 2):
        raise ValueError(f"`pos` must have shape [{ops.num_nodes}, 2], got {tuple(xy.shape)}")
    return ops, xy


def _checked_items(
    ops: ComplexOperators, flows: Any, paths: Sequence[Any] | None, labels: Any
) -> tuple[np.ndarray | None, list[np.ndarray], np.ndarray | None]:
    """The flows ``float64 [K, N1]`` (or ``None``), the paths (``int64 [L]`` each) and the
    labels ``int64 [K]`` (one per flow, else per path; or ``None``) to draw."""
    flow_arr = None
    if flows is not None:
        flow_arr = _numpy(flows).astype(np.float64)
        if flow_arr.ndim == 2 and flow_arr.shape[1] == 1 and flow_arr.shape[0] == ops.num_edges:
            flow_arr = flow_arr[:, 0]
        flow_arr = np.atleast_2d(flow_arr)  # [K, N1]
        if flow_arr.ndim != 2 or flow_arr.shape[1] != ops.num_edges:
            raise ValueError(
                f"`flows` must have shape [{ops.num_edges}], [{ops.num_edges}, 1] or "
                f"[K, {ops.num_edges}], got {tuple(_numpy(flows).shape)}"
            )
    path_list = []
    for i, p in enumerate(paths or []):
        nodes = _numpy(p).astype(np.int64).ravel()
        if nodes.size and (nodes.min() < 0 or nodes.max() >= ops.num_nodes):
            raise ValueError(f"`paths[{i}]` has a node id outside [0, {ops.num_nodes})")
        path_list.append(nodes)
    num_items = len(flow_arr) if flow_arr is not None else len(path_list)
    label_arr = None
    if labels is not None:
        label_arr = _numpy(labels).astype(np.int64).ravel()
        if label_arr.size != num_items:
            raise ValueError(
                f"`labels` must have one entry per {'flow' if flow_arr is not None else 'path'} "
                f"({num_items}), got {label_arr.size}"
            )
    return flow_arr, path_list, label_arr


def _draw_complex(ax: Any, ops: ComplexOperators, xy: np.ndarray) -> None:
    """Shaded triangles, thin grey edges and node dots."""
    from matplotlib.collections import LineCollection, PolyCollection

    tri = np.asarray(ops.triangles)
    if tri.size:
        ax.add_collection(
            PolyCollection(xy[tri], facecolors="#c6dbef", edgecolors="none", alpha=0.8, zorder=0)
        )
    ax.add_collection(
        LineCollection(xy[np.asarray(ops.edges)], colors="#7f7f7f", linewidths=0.4, zorder=1)
    )
    ax.scatter(xy[:, 0], xy[:, 1], s=3, c="#404040", zorder=2)


def _draw_items(
    ax: Any,
    ops: ComplexOperators,
    xy: np.ndarray,
    flow_arr: np.ndarray | None,
    path_list: list[np.ndarray],
    label_arr: np.ndarray | None,
) -> None:
    """Arrows along each flow's support (in the flow's direction) and along each path, with
    a dot at a path's start and a square at its end; one colour per label (or item)."""

    def colour(k: int) -> str:
        idx = label_arr[k] if label_arr is not None else k
        return _COLOURS[int(idx) % len(_COLOURS)]

    def arrows(tails: np.ndarray, heads: np.ndarray, c: str) -> None:
        d = heads - tails
        ax.quiver(
            tails[:, 0], tails[:, 1], d[:, 0], d[:, 1], angles="xy", scale_units="xy", scale=1,
            color=c, width=0.004, headwidth=4, headlength=5, zorder=4,
        )

    if flow_arr is not None:
        edges = np.asarray(ops.edges)
        for k, f in enumerate(flow_arr):
            support = np.flatnonzero(f)
            if support.size == 0:
                continue
            tail = np.where(f[support] > 0, edges[support, 0], edges[support, 1])
            head = np.where(f[support] > 0, edges[support, 1], edges[support, 0])
            arrows(xy[tail], xy[head], colour(k))
    for k, nodes in enumerate(path_list):
        if nodes.size == 0:
            continue
        c = colour(k)
        if nodes.size >= 2:
            arrows(xy[nodes[:-1]], xy[nodes[1:]], c)
        ax.scatter(*xy[nodes[0]], s=30, c=c, marker="o", zorder=5, edgecolors="k")
        ax.scatter(*xy[nodes[-1]], s=30, c=c, marker="s", zorder=5, edgecolors="k")
