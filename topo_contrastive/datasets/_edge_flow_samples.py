"""Validation of the samples of :class:`~topo_contrastive.datasets.EdgeFlows`, from the
arguments of its constructors or from the keys of its ``.npz`` file
(:mod:`~topo_contrastive.datasets._edge_flow_file`).

Every input goes through :func:`validate_samples`, whose errors name the argument
(```flows```) or the key (``key 'flows' of 'data.npz'``) as :class:`Names` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from topo_contrastive._utils.checks import label_values
from topo_contrastive.complex import ComplexOperators

MASK_KEYS = ("train_mask", "val_mask", "test_mask")


def _numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.layout != torch.strided:
            x = x.to_dense()
        return x.numpy()
    return np.asarray(x)


class Names:
    """How an input is named in error messages: an argument, or a key of a file."""

    def __init__(self, file: str | None = None) -> None:
        self.file = file

    def __call__(self, key: str) -> str:
        return f"`{key}`" if self.file is None else f"key '{key}' of '{self.file}'"


# ---------------------------------------------------------------------------- validation
# the largest magnitude a flow may have: datasets store flows as float32
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_flows(flows: Any, n1: int, name: str) -> np.ndarray:
    arr = _numpy(flows)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim != 2 or arr.shape[1] != n1:
        raise ValueError(
            f"{name} must have shape [S, N1] with N1 = {n1} (the edges of the complex), got "
            f"shape {tuple(arr.shape)}"
        )
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    wide = arr.astype(np.float64)
    bad = ~np.isfinite(wide)
    if bad.any():
        s, e = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} has a NaN or inf entry (sample {s}, edge {e}); flows must be finite"
        )
    huge = np.abs(wide) > _FLOAT32_MAX
    if huge.any():
        s, e = np.argwhere(huge)[0]
        raise ValueError(
            f"{name} has the value {wide[s, e]:.3g} (sample {s}, edge {e}), which overflows "
            f"float32 (largest {_FLOAT32_MAX:.3g}; datasets store flows as float32): rescale "
            "the flows"
        )
    return arr.astype(np.float64 if arr.dtype == np.float64 else np.float32)


def _check_labels(labels: Any, num_samples: int, name: str) -> np.ndarray:
    arr = _numpy(labels)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != num_samples:
        raise ValueError(
            f"{name} must have shape [S] with S = {num_samples} (one label per sample), got "
            f"shape {tuple(arr.shape)}"
        )
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer class ids, got dtype {arr.dtype}")
    try:
        return label_values(arr, "labels")
    except (TypeError, ValueError) as err:  # say which input: the argument or the file key
        raise type(err)(str(err).replace("`labels`", name, 1)) from None


def _check_pos(pos: Any, n0: int, name: str) -> np.ndarray:
    arr = _numpy(pos)
    if arr.shape != (n0, 2) or arr.dtype.kind not in "iuf":
        raise ValueError(
            f"{name} must be a real array of shape [N0, 2] with N0 = {n0} (x, y of every "
            f"node), got dtype {arr.dtype} and shape {tuple(arr.shape)}"
        )
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or inf coordinates")
    return arr


def _check_masks(masks: Any, num_samples: int, name: Names) -> dict[str, np.ndarray]:
    """The three split masks ``bool [S]``, disjoint; ``name`` says how to call them."""

    def show(split: str) -> str:
        return f"`masks['{split}']`" if name.file is None else name(f"{split}_mask")

    if not isinstance(masks, Mapping):
        raise TypeError(
            f"`masks` must be a mapping {{'train': ..., 'val': ..., 'test': ...}}, got "
            f"{type(masks).__name__}"
        )
    unknown = sorted(set(masks) - {"train", "val", "test"})
    if unknown:
        raise ValueError(f"`masks` has the unknown split(s) {unknown}; use train, val, test")
    out = {}
    for split in ("train", "val", "test"):
        if split not in masks:
            raise ValueError(f"{show(split)} is missing: give all three split masks, or none")
        arr = _numpy(masks[split])
        if arr.shape != (num_samples,) or arr.dtype != bool:
            raise ValueError(
                f"{show(split)} must be a bool array of shape [{num_samples}], got dtype "
                f"{arr.dtype} and shape {tuple(arr.shape)}"
            )
        out[split] = arr
    overlap = (out["train"].astype(int) + out["val"] + out["test"]) > 1
    if overlap.any():
        raise ValueError(
            f"the masks {', '.join(show(k) for k in out)} overlap (sample "
            f"{int(np.flatnonzero(overlap)[0])} is in two splits); the splits must be disjoint"
        )
    return out


def _check_sample_ids(ids: Any, num_samples: int, name: str) -> np.ndarray:
    arr = _numpy(list(ids) if not isinstance(ids, (np.ndarray, torch.Tensor)) else ids)
    if arr.shape != (num_samples,):
        raise ValueError(
            f"{name} must have shape [S] with S = {num_samples}, got {tuple(arr.shape)}"
        )
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "U":
        pass
    else:
        raise TypeError(f"{name} must hold integers or strings, got dtype {arr.dtype}")
    uniq, counts = np.unique(arr, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{name} must be unique, but {uniq[counts > 1][0].item()!r} occurs twice")
    return arr


def _paths_to_flows(ops: ComplexOperators, paths: Sequence[np.ndarray], name: str) -> np.ndarray:
    """Flows ``float32 [S, N1]`` of node paths; clear errors for bad paths."""
    flows = np.zeros((len(paths), ops.num_edges), dtype=np.float32)
    for i, p in enumerate(paths):
        if p.size < 2:
            raise ValueError(
                f"{name}[{i}] has {p.size} node(s); a path needs at least 2 nodes (one edge)"
            )
        if p.min() < 0 or p.max() >= ops.num_nodes:
            raise ValueError(
                f"{name}[{i}] has the node id {int(p.min() if p.min() < 0 else p.max())}, "
                f"outside [0, N0 = {ops.num_nodes})"
            )
        try:
            flows[i] = ops.path_to_flow(p, dtype=torch.float64).numpy()
        except ValueError as err:
            raise ValueError(f"{name}[{i}]: {err}") from None
    return flows


def _as_paths(paths: Any, name: str) -> list[np.ndarray]:
    if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence | np.ndarray):
        raise TypeError(f"{name} must be a sequence of node sequences, got {type(paths).__name__}")
    out = []
    for i, p in enumerate(paths):
        arr = _numpy(p)
        if arr.ndim != 1 or not (arr.dtype.kind in "iu" or arr.size == 0):
            raise TypeError(
                f"{name}[{i}] must be a sequence of integer node ids, got dtype {arr.dtype} and "
                f"shape {tuple(arr.shape)}"
            )
        out.append(arr.astype(np.int64))
    return out


def validate_samples(
    ops: ComplexOperators,
    *,
    flows: Any = None,
    paths: Any = None,
    labels: Any = None,
    pos: Any = None,
    masks: Mapping[str, Any] | None = None,
    sample_ids: Any = None,
    name: Names,
) -> dict[str, Any]:
    """Check every sample input against the complex; return numpy arrays.

    Returns:
        ``{"flows": float32/float64 [S, N1], "paths": list of int64 [L] or None,
        "labels": int64 [S] or None, "pos": float64 [N0, 2] or None, "masks": {split: bool
        [S]} or None, "sample_ids": int64 or str [S] or None}``; flows come from the paths
        (:meth:`ComplexOperators.path_to_flow`) when ``flows`` is ``None``.

    Raises:
        ValueError: a complex without edges (N1 = 0), no samples, a shape that does not
            match the complex, NaN/inf or a flow beyond float32's range, a path
            that is not a walk on the complex, overlapping masks, repeated sample ids.
        TypeError: non-real flows, non-integer labels or paths, masks that are not a mapping.
    """
    if ops.num_edges == 0:
        raise ValueError(
            f"the complex has no edges (N1 = 0, {ops.num_nodes} nodes): edge flows "
            f"({name('flows')}) need at least one edge; a complex of nodes only carries node "
            "signals (rank 0), not an edge-flow dataset"
        )
    path_list = None if paths is None else _as_paths(paths, name("paths"))
    if flows is None and path_list is None:
        raise ValueError(
            f"give the samples as {name('flows')} [S, N1] or as node paths "
            f"({name('paths') if name.file is None else name('path_nodes') + ' / path_ptr'})"
        )
    out: dict[str, Any] = {}
    if flows is not None:
        out["flows"] = _check_flows(flows, ops.num_edges, name("flows"))
        if path_list is not None:
            _paths_to_flows(ops, path_list, name("paths"))  # the paths must be valid walks
            if len(path_list) != out["flows"].shape[0]:
                raise ValueError(
                    f"{name('paths')} has {len(path_list)} paths but {name('flows')} has "
                    f"{out['flows'].shape[0]} samples"
                )
    else:
        out["flows"] = _paths_to_flows(ops, path_list, name("paths"))
    out["paths"] = path_list
    num_samples = out["flows"].shape[0]
    if num_samples == 0:
        raise ValueError(f"{name('flows')} holds no samples (S = 0)")
    out["labels"] = None if labels is None else _check_labels(labels, num_samples, name("labels"))
    out["pos"] = None if pos is None else _check_pos(pos, ops.num_nodes, name("pos"))
    out["masks"] = None if masks is None else _check_masks(masks, num_samples, name)
    out["sample_ids"] = (
        None
        if sample_ids is None
        else _check_sample_ids(sample_ids, num_samples, name("sample_ids"))
    )
    return out
