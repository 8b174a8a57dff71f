r"""Your own complex and edge flows as a PyG dataset, and its ``.npz`` file format.

:class:`EdgeFlows` holds many edge flows on one simplicial complex of a user's, with optional
labels and splits, in the form of the paper's two datasets (``Data(x_1=[N1, 1], y=[1])``), so
that everything the library does with those (pre-training, spectral masks, the debiased loss,
embeddings, the linear evaluation) works on it.

**The file format** (``.npz``, read with ``allow_pickle=False``; written by
:meth:`EdgeFlows.write_npz`). The complex is given by one of

- ``B1_index`` ``int [2, nnz]`` (node row, edge column), ``B1_value`` ``[nnz]`` (+-1) and
  ``B1_shape`` ``int [2]`` = ``(N0, N1)``: the signed node-to-edge incidence as COO arrays;
  optionally ``B2_index`` ``int [2, nnz2]`` (edge row, triangle column), ``B2_value``
  ``[nnz2]`` (+-1) and ``B2_shape`` ``int [2]`` = ``(N1, N2)``; or
- ``edge_index`` ``int [2, N1]``: tail and head node of every edge, column ``e`` oriented
  ``edge_index[0, e] -> edge_index[1, e]`` (one column per edge, not both directions);
  optionally ``triangles`` ``int [N2, 3]`` (node triples of the filled triangles, oriented by
  their sorted nodes) and ``num_nodes`` (default: the rows of ``pos``, else the largest id + 1).

The samples are given by ``flows`` ``float [S, N1]`` (edge flows in the column order and
orientation of the complex) and/or node paths ``path_nodes`` ``int [L]`` with offsets
``path_ptr`` ``int [S + 1]`` (path ``i`` is ``path_nodes[path_ptr[i]:path_ptr[i + 1]]``; its
flow, when ``flows`` is absent, is :meth:`SimplicialOperators.path_to_flow`: every step adds
+1 along the edge's orientation and -1 against it). Optional: ``labels`` ``int [S]``; ``pos``
``float [N0, 2]`` node coordinates; ``train_mask``, ``val_mask``, ``test_mask`` ``bool [S]``
(all three, disjoint); ``sample_ids`` ``[S]`` (unique integers or strings). Any other key is
an error (a misspelt key would otherwise be ignored silently).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive._files import atomic_write, read_npz, sha256_of
from topo_contrastive.complex import SimplicialOperators
from topo_contrastive.datasets._base import EdgeFlowDataset, check_int

__all__ = ["EdgeFlows"]

#: Name of the raw file the constructors write into ``root/raw``.
RAW_FILE = "edge_flows.npz"
_FORMAT = "topo_contrastive.edge_flows"
_VERSION = 1
_B1_KEYS = ("B1_index", "B1_value", "B1_shape")
_B2_KEYS = ("B2_index", "B2_value", "B2_shape")
_MASK_KEYS = ("train_mask", "val_mask", "test_mask")
_KNOWN_KEYS = frozenset(
    {
        *_B1_KEYS,
        *_B2_KEYS,
        *_MASK_KEYS,
        "edge_index",
        "triangles",
        "num_nodes",
        "flows",
        "path_nodes",
        "path_ptr",
        "labels",
        "pos",
        "sample_ids",
        "format",
        "version",
    }
)


def _numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.layout != torch.strided:
            x = x.to_dense()
        return x.numpy()
    return np.asarray(x)


class _Names:
    """How an input is named in error messages: an argument, or a key of a file."""

    def __init__(self, file: str | None = None) -> None:
        self.file = file

    def __call__(self, key: str) -> str:
        return f"`{key}`" if self.file is None else f"key '{key}' of '{self.file}'"


# ---------------------------------------------------------------------------- validation
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
    arr = arr.astype(np.float64 if arr.dtype == np.float64 else np.float32)
    bad = ~np.isfinite(arr)
    if bad.any():
        s, e = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} has a NaN or inf entry (sample {s}, edge {e}); flows must be finite"
        )
    return arr


def _check_labels(labels: Any, num_samples: int, name: str) -> np.ndarray:
    arr = _numpy(labels)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != num_samples:
        raise ValueError(
            f"{name} must have shape [S] with S = {num_samples} (one label per sample), got "
            f"shape {tuple(arr.shape)}"
        )
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (np.nan_to_num(arr) % 1 != 0)
        if not bad.any():
            return arr.astype(np.int64)
        raise TypeError(
            f"{name} must hold integer class ids, got the value {arr[bad][0].item()!r} (sample "
            f"{int(np.flatnonzero(bad)[0])})"
        )
    raise TypeError(f"{name} must hold integer class ids, got dtype {arr.dtype}")


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


def _check_masks(masks: Any, num_samples: int, name: _Names) -> dict[str, np.ndarray]:
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


def _paths_to_flows(ops: SimplicialOperators, paths: Sequence[np.ndarray], name: str) -> np.ndarray:
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


def _validate(
    ops: SimplicialOperators,
    *,
    flows: Any = None,
    paths: Any = None,
    labels: Any = None,
    pos: Any = None,
    masks: Mapping[str, Any] | None = None,
    sample_ids: Any = None,
    name: _Names,
) -> dict[str, Any]:
    """Check every sample input against the complex; return numpy arrays."""
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


# ---------------------------------------------------------------------------- the file
def _coo_arrays(mat: sp.spmatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    coo = sp.coo_matrix(mat)
    return (
        np.stack([coo.row, coo.col]).astype(np.int64),
        coo.data.astype(np.int8),
        np.asarray(coo.shape, dtype=np.int64),
    )


def _coo_from_file(arrays: dict[str, np.ndarray], prefix: str, name: _Names) -> sp.csr_matrix:
    index, value, shape = (arrays[f"{prefix}_{k}"] for k in ("index", "value", "shape"))
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or (shape < 0).any():
        raise ValueError(
            f"{name(prefix + '_shape')} must hold two non-negative integers, got {shape!r}"
        )
    if index.ndim != 2 or index.shape[0] != 2 or index.dtype.kind not in "iu":
        raise ValueError(
            f"{name(prefix + '_index')} must be an integer array [2, nnz], got dtype "
            f"{index.dtype} and shape {tuple(index.shape)}"
        )
    if value.shape != (index.shape[1],):
        raise ValueError(
            f"{name(prefix + '_value')} must have shape [nnz] = [{index.shape[1]}], got "
            f"{tuple(value.shape)}"
        )
    if index.size and ((index.min(axis=1) < 0).any() or (index.max(axis=1) >= shape).any()):
        raise ValueError(
            f"{name(prefix + '_index')} has an index outside the shape {tuple(shape.tolist())}"
        )
    return sp.csr_matrix(
        (value.astype(np.float64), (index[0], index[1])), shape=tuple(int(v) for v in shape)
    )


def _incidence_from_edges(
    edge_index: np.ndarray, triangles: np.ndarray | None, num_nodes: int, name: _Names
) -> tuple[sp.csr_matrix, sp.csr_matrix | None]:
    """``B1`` from oriented edges ``[2, N1]`` and ``B2`` from node triples ``[N2, 3]``."""
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype.kind not in "iu":
        raise ValueError(
            f"{name('edge_index')} must be an integer array [2, N1] (tail and head of every "
            f"edge), got dtype {edge_index.dtype} and shape {tuple(edge_index.shape)}"
        )
    n1 = edge_index.shape[1]
    if n1 and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise ValueError(
            f"{name('edge_index')} has node ids in [{edge_index.min()}, {edge_index.max()}], "
            f"outside [0, num_nodes = {num_nodes})"
        )
    loops = np.flatnonzero(edge_index[0] == edge_index[1])
    if loops.size:
        raise ValueError(f"{name('edge_index')} column {loops[0]} is a self-loop")
    cols = np.repeat(np.arange(n1), 2)
    B1 = sp.csr_matrix(
        (np.tile([-1.0, 1.0], n1), (edge_index.T.ravel(), cols)), shape=(num_nodes, n1)
    )
    if triangles is None:
        return B1, None
    tri = np.asarray(triangles)
    if tri.ndim != 2 or tri.shape[1] != 3 or tri.dtype.kind not in "iu":
        raise ValueError(
            f"{name('triangles')} must be an integer array [N2, 3], got dtype {tri.dtype} and "
            f"shape {tuple(tri.shape)}"
        )
    ops = SimplicialOperators.from_incidence(B1)
    tri = np.sort(tri.astype(np.int64), axis=1)
    steps = np.stack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]], axis=1)  # [N2, 3, 2]
    try:
        col, sign = ops.edge_lookup(steps[..., 0], steps[..., 1])  # [N2, 3] each
    except ValueError as err:
        raise ValueError(f"{name('triangles')}: a triangle's face {err}") from None
    n2 = tri.shape[0]
    B2 = sp.csr_matrix((sign.ravel(), (col.ravel(), np.repeat(np.arange(n2), 3))), shape=(n1, n2))
    return B1, B2


def _read_npz(path: str) -> dict[str, Any]:
    """Read and validate an edge-flow file; return the complex and the checked samples."""
    name = _Names(path)
    arrays = read_npz(path, what="an edge-flow file (EdgeFlows.write_npz)")
    unknown = sorted(set(arrays) - _KNOWN_KEYS)
    if unknown:
        raise ValueError(
            f"'{path}' has the unknown key(s) {unknown}; the keys of the format are "
            f"{sorted(_KNOWN_KEYS)}"
        )
    if "format" in arrays and str(arrays["format"]) != _FORMAT:
        raise ValueError(f"{name('format')} is {str(arrays['format'])!r}, expected {_FORMAT!r}")
    if "version" in arrays and int(arrays["version"]) != _VERSION:
        raise ValueError(f"{name('version')} is {int(arrays['version'])}, expected {_VERSION}")
    has_b1 = [k in arrays for k in _B1_KEYS]
    has_b2 = [k in arrays for k in _B2_KEYS]
    if any(has_b1) and "edge_index" in arrays:
        raise ValueError(
            f"'{path}' gives the edges twice: keep either B1_index/B1_value/B1_shape or edge_index"
        )
    if any(has_b2) and "triangles" in arrays:
        raise ValueError(
            f"'{path}' gives the triangles twice: keep either B2_index/B2_value/B2_shape or "
            "triangles"
        )
    if "edge_index" in arrays:
        if any(has_b2):
            raise ValueError(f"'{path}': with edge_index, give the triangles as `triangles`")
        ei = arrays["edge_index"]
        if "num_nodes" in arrays:
            num_nodes = check_int(arrays["num_nodes"].item(), f"'{path}' key 'num_nodes'", 1)
        elif "pos" in arrays:
            num_nodes = int(arrays["pos"].shape[0])
        else:
            num_nodes = int(ei.max()) + 1 if ei.size else 0
        B1, B2 = _incidence_from_edges(ei, arrays.get("triangles"), num_nodes, name)
    else:
        if not all(has_b1):
            missing = [k for k, h in zip(_B1_KEYS, has_b1, strict=True) if not h]
            raise ValueError(
                f"'{path}' lacks the key(s) {missing}: the complex needs B1_index, B1_value and "
                "B1_shape (or edge_index)"
            )
        if any(has_b2) and not all(has_b2):
            missing = [k for k, h in zip(_B2_KEYS, has_b2, strict=True) if not h]
            raise ValueError(f"'{path}' lacks the key(s) {missing} (B2 needs all three)")
        if "num_nodes" in arrays:
            raise ValueError(f"'{path}': num_nodes goes with edge_index; B1_shape gives N0")
        B1 = _coo_from_file(arrays, "B1", name)
        B2 = _coo_from_file(arrays, "B2", name) if all(has_b2) else None
    try:
        ops = SimplicialOperators.from_incidence(B1, B2)
    except ValueError as err:
        raise ValueError(f"'{path}': {err}") from None
    paths = None
    if ("path_nodes" in arrays) != ("path_ptr" in arrays):
        raise ValueError(f"'{path}' needs both path_nodes and path_ptr, or neither")
    if "path_nodes" in arrays:
        nodes, ptr = arrays["path_nodes"], arrays["path_ptr"]
        if (
            nodes.ndim != 1
            or nodes.dtype.kind not in "iu"
            or ptr.ndim != 1
            or (ptr.dtype.kind not in "iu")
        ):
            raise ValueError(f"{name('path_nodes')} and {name('path_ptr')} must be 1-D integers")
        if ptr.size < 1 or ptr[0] != 0 or ptr[-1] != nodes.size or (np.diff(ptr) < 0).any():
            raise ValueError(
                f"{name('path_ptr')} must rise from 0 to len(path_nodes) = {nodes.size}, got "
                f"{ptr[:3].tolist()}...{ptr[-1:].tolist()}"
            )
        paths = np.split(nodes.astype(np.int64), ptr[1:-1])
    masks = None
    present = [k for k in _MASK_KEYS if k in arrays]
    if present:
        masks = {k.removesuffix("_mask"): arrays[k] for k in present}
    checked = _validate(
        ops,
        flows=arrays.get("flows"),
        paths=paths,
        labels=arrays.get("labels"),
        pos=arrays.get("pos"),
        masks=masks,
        sample_ids=arrays.get("sample_ids"),
        name=name,
    )
    checked["complex"] = ops
    return checked


def _write_npz(path: str | os.PathLike, ops: SimplicialOperators, content: dict[str, Any]) -> None:
    arrays: dict[str, np.ndarray] = {"format": np.array(_FORMAT), "version": np.array(_VERSION)}
    arrays["B1_index"], arrays["B1_value"], arrays["B1_shape"] = _coo_arrays(ops.B1)
    if ops.num_triangles:
        arrays["B2_index"], arrays["B2_value"], arrays["B2_shape"] = _coo_arrays(ops.B2)
    arrays["flows"] = content["flows"]
    if content.get("paths") is not None:
        nodes = [np.asarray(p, dtype=np.int64) for p in content["paths"]]
        arrays["path_nodes"] = np.concatenate(nodes) if nodes else np.zeros(0, dtype=np.int64)
        arrays["path_ptr"] = np.concatenate([[0], np.cumsum([p.size for p in nodes])]).astype(
            np.int64
        )
    for key in ("labels", "pos", "sample_ids"):
        if content.get(key) is not None:
            arrays[key] = content[key]
    if content.get("masks") is not None:
        for split, mask in content["masks"].items():
            arrays[f"{split}_mask"] = mask
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(folder, exist_ok=True)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)

    atomic_write(path, write)


# ---------------------------------------------------------------------------- splits
def _stratified_masks(
    labels: np.ndarray | None, num_samples: int, ratio: tuple[float, float, float], seed: int
) -> dict[str, np.ndarray]:
    """Standard split: per class, ``round(ratio * n_c)`` validation and test samples."""
    rng = np.random.default_rng(seed)
    out = {s: np.zeros(num_samples, dtype=bool) for s in ("train", "val", "test")}
    if labels is None:
        out["train"][:] = True
        return out
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        n_val = int(round(ratio[1] * members.size))
        n_test = int(round(ratio[2] * members.size))
        out["val"][members[:n_val]] = True
        out["test"][members[n_val : n_val + n_test]] = True
        out["train"][members[n_val + n_test :]] = True
    return out


def _resplit(
    labels: np.ndarray | None, standard: dict[str, np.ndarray], seed: int
) -> dict[str, np.ndarray]:
    """Random re-split keeping, per class, the standard split's counts."""
    rng = np.random.default_rng(seed)
    size = standard["train"].size
    y = np.zeros(size, dtype=np.int64) if labels is None else labels
    out = {s: np.zeros(size, dtype=bool) for s in standard}
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        counts = [int(np.sum(standard[s] & (y == c))) for s in standard]
        chunks = np.split(members, np.cumsum(counts))  # the last: samples in no split
        for s, chunk in zip(standard, chunks[:-1], strict=True):
            out[s][chunk] = True
    return out


# ---------------------------------------------------------------------------- the dataset
class EdgeFlows(EdgeFlowDataset):
    r"""Edge flows of your own on one simplicial complex (PyG ``InMemoryDataset``).

    The generic form of :class:`SyntheticTrajectories` and :class:`OceanDrifters`: a signed
    complex (:math:`\mathbf{B}_1`, :math:`\mathbf{B}_2`) and ``S`` edge flows on it, with
    optional integer labels, node coordinates, a standard split and sample ids. Each sample
    is ``Data(x_1=float32 [N1, 1])``, with ``y=int64 [1]`` when labels are given; unlabelled
    data serve pre-training and embeddings (the linear evaluation needs labels).

    Three ways in (module docstring: the file format):

    - :meth:`from_toponetx`: a TopoNetX ``SimplicialComplex`` and flows ``[S, N1]`` in its
      edge order (or node paths in its node labels);
    - :meth:`from_incidence`: signed incidence matrices ``B1`` / ``B2`` (scipy or torch
      sparse, dense) in any edge orientation, and flows or node paths;
    - ``EdgeFlows(root, file="flows.npz")``: a file in the documented ``.npz`` format
      (written by :meth:`write_npz`, or by hand), e.g. for ``topo-contrastive pretrain
      --data-file``.

    The two class methods validate everything first, then write ``root/raw/edge_flows.npz``
    (atomically) and open it as the third. **Orientation** is the complex's own: edge ``e``
    runs from ``edges[e, 0]`` to ``edges[e, 1]`` as given (``B1[tail, e] = -1``), not
    necessarily from the lower node id; flows are signed in that frame and node paths are
    converted with :meth:`SimplicialOperators.path_to_flow` (+1 along an edge's orientation,
    -1 against it).

    **Splits.** The file's ``train_mask`` / ``val_mask`` / ``test_mask``, else, for labelled
    data, a stratified random split with fractions ``split_ratio`` drawn with ``split_seed``
    (per class ``round(fraction * n_c)`` validation and test samples, the rest training),
    else (unlabelled) every sample in the training split. :meth:`split` draws random
    re-splits with the standard split's per-class counts.

    The processed file ``processed/edge_flows_<sha256 of the raw file>_<split>.pt`` is
    re-made when the raw file changes; it holds only tensors, ints and strings.

    Args:
        root: dataset folder (``root/processed`` is written; ``root/raw`` by the class
            methods).
        file: the ``.npz`` to read (default ``None``: ``root/raw/edge_flows.npz``); it is
            only read.
        split_ratio: train / validation / test fractions of the standard split when the file
            has no masks and labels are given (default ``(0.6, 0.2, 0.2)``).
        split_seed: seed of that split (default 0).
        transform: PyG transform applied on access (default ``None``).
        pre_transform: PyG transform applied once before saving (default ``None``).
        force_reload: re-process even if the processed file exists (default ``False``).
        log: print progress to stderr (default ``True``).

    Shapes:
        - **x_1**: ``[N1, 1]`` per sample; ``[B * N1, 1]`` in a DataLoader batch.
        - **y** (labelled data): ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        FileNotFoundError: ``file`` (or ``root/raw/edge_flows.npz``) does not exist.
        ValueError: a file that is not a valid edge-flow file: a missing or unknown key, a
            malformed or inconsistent incidence pair (``B1 @ B2 != 0``), flows of the wrong
            length or with NaN/inf, labels of the wrong length, masks that overlap, a path
            that uses a non-edge; ``split_ratio`` not three non-negative fractions summing to
            one. The message names the key, the expected and the given.
        TypeError: non-integer labels, a ``root`` or ``file`` that is not a path.

    Example:
        >>> import torch
        >>> ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]], [[0, 1, 2]])
        >>> ds = EdgeFlows.from_incidence(
        ...     "data/toy", ops.B1, ops.B2, paths=[[0, 1, 2, 3], [3, 2, 0]], labels=[0, 1],
        ...     log=False)  # doctest: +SKIP
        >>> ds[1].x_1.view(-1).tolist(), ds.complex.num_triangles  # doctest: +SKIP
        ([0.0, 0.0, -1.0, -1.0], 1)
    """

    def __init__(
        self,
        root: str,
        file: str | os.PathLike | None = None,
        split_ratio: tuple[float, float, float] = (0.6, 0.2, 0.2),
        split_seed: int = 0,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        log: bool = True,
    ) -> None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a folder path (str), got {type(root).__name__}")
        if file is not None and not isinstance(file, (str, os.PathLike)):
            raise TypeError(f"`file` must be a path (str) or None, got {type(file).__name__}")
        ratio = tuple(float(r) for r in split_ratio)
        if len(ratio) != 3 or min(ratio) < 0 or not np.isclose(sum(ratio), 1.0):
            raise ValueError(
                f"`split_ratio` must be three non-negative fractions (train, val, test) summing "
                f"to 1, got {tuple(split_ratio)}"
            )
        self.split_ratio = ratio
        self.split_seed = check_int(split_seed, "split_seed", 0)
        root = os.path.expanduser(os.fspath(root))
        self.file = os.path.abspath(
            os.path.expanduser(os.fspath(file))
            if file is not None
            else os.path.join(root, "raw", RAW_FILE)
        )
        if not os.path.isfile(self.file):
            raise FileNotFoundError(
                f"edge-flow file '{self.file}' does not exist; write one with "
                "EdgeFlows.write_npz, or build the dataset with EdgeFlows.from_incidence / "
                "EdgeFlows.from_toponetx"
            )
        self._sha = sha256_of(self.file)
        self._extra: dict[str, Any] = {}
        super().__init__(
            root, transform=transform, pre_transform=pre_transform, force_reload=force_reload,
            log=log,
        )  # fmt: skip

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_incidence(
        cls,
        root: str,
        B1: Any,
        B2: Any | None = None,
        flows: Any | None = None,
        *,
        paths: Sequence[Sequence[int]] | None = None,
        labels: Any | None = None,
        pos: Any | None = None,
        masks: Mapping[str, Any] | None = None,
        sample_ids: Sequence[int | str] | None = None,
        **kwargs: Any,
    ) -> EdgeFlows:
        """Build the dataset from signed incidence matrices and flows (or node paths).

        Every input is validated before anything is written; then ``root/raw/edge_flows.npz``
        is written atomically and opened with ``EdgeFlows(root, **kwargs)``.

        Args:
            root: dataset folder.
            B1: ``[N0, N1]`` signed node-to-edge incidence (scipy sparse, torch sparse or
                dense, numpy), edges in any orientation.
            B2: ``[N1, N2]`` signed edge-to-triangle incidence, or ``None`` (no triangles).
            flows: edge flows ``[S, N1]`` (float; ``[S, N1, 1]`` accepted), in the column order
                and orientation of ``B1``; may be left out when ``paths`` are given.
            paths: ``S`` node paths (sequences of node ids = rows of ``B1``); their flows are
                used when ``flows`` is ``None``, else they are stored beside the flows (and
                must be walks on the complex).
            labels: ``int [S]`` class ids (default ``None``: unlabelled).
            pos: ``float [N0, 2]`` node coordinates (default ``None``).
            masks: ``{"train": bool [S], "val": ..., "test": ...}`` (default ``None``).
            sample_ids: ``S`` unique ints or strings (default ``None``: ``0 .. S-1``).
            **kwargs: passed to :class:`EdgeFlows` (``split_ratio``, ``transform``, ...).

        Raises:
            ValueError / TypeError: as :class:`EdgeFlows` (naming the argument) and as
                :meth:`SimplicialOperators.from_incidence`.
        """
        ops = SimplicialOperators.from_incidence(B1, B2)
        return cls._from_operators(
            root, ops, flows, paths=paths, labels=labels, pos=pos, masks=masks,
            sample_ids=sample_ids, **kwargs,
        )  # fmt: skip

    @classmethod
    def from_toponetx(
        cls,
        root: str,
        complex: Any,
        flows: Any | None = None,
        *,
        paths: Sequence[Sequence[Any]] | None = None,
        labels: Any | None = None,
        pos: Any | None = None,
        masks: Mapping[str, Any] | None = None,
        sample_ids: Sequence[int | str] | None = None,
        **kwargs: Any,
    ) -> EdgeFlows:
        """Build the dataset from a TopoNetX ``SimplicialComplex`` and flows (or node paths).

        The complex's node, edge and triangle order and orientation are TopoNetX's
        (:meth:`SimplicialOperators.from_toponetx`: for sortable node labels, edges sorted
        and oriented from the lower to the higher label), so ``flows`` follow
        ``complex.incidence_matrix(1)``'s columns. Paths and ``pos`` use TopoNetX's node
        labels (any hashable), mapped to rows of ``B1``.

        Args:
            root: dataset folder.
            complex: a ``toponetx.SimplicialComplex``.
            flows: ``[S, N1]`` in TopoNetX's edge order (may be left out with ``paths``).
            paths: ``S`` node paths in the complex's node labels.
            labels: ``int [S]`` class ids (default ``None``: unlabelled).
            pos: ``float [N0, 2]`` in TopoNetX's node order, or a ``{node label: (x, y)}``
                mapping (default ``None``).
            masks: as :meth:`from_incidence`.
            sample_ids: as :meth:`from_incidence`.
            **kwargs: passed to :class:`EdgeFlows`.

        Raises:
            ValueError / TypeError: as :meth:`from_incidence`; a path or ``pos`` with a node
                that is not in the complex.
        """
        ops = SimplicialOperators.from_toponetx(complex)
        rows, _, _ = complex.incidence_matrix(1, index=True)
        index = {key[0]: row for key, row in rows.items()}  # node label -> row of B1
        if paths is not None:
            mapped = []
            for i, p in enumerate(_sequence(paths, "paths")):
                try:
                    mapped.append([index[v] for v in _sequence(p, f"paths[{i}]")])
                except KeyError as err:
                    raise ValueError(
                        f"`paths[{i}]` has the node {err.args[0]!r}, which is not a node of the "
                        "complex"
                    ) from None
            paths = mapped
        if isinstance(pos, Mapping):
            missing = [v for v in index if v not in pos]
            if missing:
                raise ValueError(f"`pos` has no coordinates for the node {missing[0]!r}")
            xy = np.zeros((len(index), 2))
            for v, row in index.items():
                xy[row] = pos[v]
            pos = xy
        return cls._from_operators(
            root, ops, flows, paths=paths, labels=labels, pos=pos, masks=masks,
            sample_ids=sample_ids, **kwargs,
        )  # fmt: skip

    @classmethod
    def _from_operators(
        cls, root: str, ops: SimplicialOperators, flows: Any, **parts: Any
    ) -> EdgeFlows:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a folder path (str), got {type(root).__name__}")
        kwargs = {k: parts.pop(k) for k in list(parts) if k not in _SAMPLE_PARTS}
        content = _validate(ops, flows=flows, name=_Names(), **parts)
        target = os.path.join(os.path.expanduser(os.fspath(root)), "raw", RAW_FILE)
        _write_npz(target, ops, content)
        return cls(os.fspath(root), **kwargs)

    @staticmethod
    def write_npz(
        path: str | os.PathLike,
        complex: SimplicialOperators,
        flows: Any | None = None,
        *,
        paths: Sequence[Sequence[int]] | None = None,
        labels: Any | None = None,
        pos: Any | None = None,
        masks: Mapping[str, Any] | None = None,
        sample_ids: Sequence[int | str] | None = None,
    ) -> None:
        """Write a complex and its samples in the documented ``.npz`` format, atomically.

        ``B1`` / ``B2`` go in as COO arrays (``B1_index``, ``B1_value``, ``B1_shape``, ...),
        the flows as ``float32``/``float64 [S, N1]``, paths as ``path_nodes`` / ``path_ptr``.
        Everything is validated first (as :meth:`from_incidence`); nothing is written on
        bad input.

        Args:
            path: the file to write (conventionally ending in ``.npz``).
            complex: the :class:`SimplicialOperators` (its edge order and orientation).
            flows, paths, labels, pos, masks, sample_ids: as :meth:`from_incidence`.

        Raises:
            TypeError: ``complex`` is not a :class:`SimplicialOperators`.
            ValueError: as :meth:`from_incidence`.
        """
        if not isinstance(complex, SimplicialOperators):
            raise TypeError(
                f"`complex` must be a SimplicialOperators, got {type(complex).__name__}"
            )
        content = _validate(
            complex, flows=flows, paths=paths, labels=labels, pos=pos, masks=masks,
            sample_ids=sample_ids, name=_Names(),
        )  # fmt: skip
        _write_npz(path, complex, content)

    # ------------------------------------------------------------------ PyG
    @property
    def raw_dir(self) -> str:
        return os.path.dirname(self.file)

    @property
    def raw_file_names(self) -> list[str]:
        return [os.path.basename(self.file)]

    @property
    def processed_file_names(self) -> list[str]:
        tr, va, te = self.split_ratio
        return [f"edge_flows_{self._sha[:16]}_split{tr:g}-{va:g}-{te:g}_seed{self.split_seed}.pt"]

    def download(self) -> None:  # pragma: no cover - __init__ checks the file first
        raise FileNotFoundError(f"edge-flow file '{self.file}' does not exist")

    def process(self) -> None:
        content = _read_npz(self.file)
        ops = content["complex"]
        flows = torch.from_numpy(content["flows"])
        labels = content["labels"]
        masks = content["masks"] or _stratified_masks(
            labels, flows.shape[0], self.split_ratio, self.split_seed
        )
        paths = content["paths"] or [[] for _ in range(flows.shape[0])]
        pos = content["pos"] if content["pos"] is not None else np.zeros((0, 2))
        obj = self._build_processed(
            flows,
            None if labels is None else torch.from_numpy(labels),
            ops,
            pos,
            paths,
            {k: torch.from_numpy(np.asarray(v)) for k, v in masks.items()},
        )
        b2 = ops.B2.tocoo()
        ids = content["sample_ids"]
        obj["edge_flows"] = {
            "B2_index": torch.from_numpy(np.stack([b2.row, b2.col]).astype(np.int64)),
            "B2_value": torch.from_numpy(b2.data.astype(np.float64)),
            "num_triangles": int(ops.num_triangles),
            "has_labels": labels is not None,
            "has_paths": content["paths"] is not None,
            "sample_ids": (
                torch.arange(flows.shape[0])
                if ids is None
                else (ids.tolist() if ids.dtype.kind == "U" else torch.from_numpy(ids))
            ),
            "source_sha256": self._sha,
        }
        self._save_processed(obj)

    def _load_processed(self, path: str) -> None:
        super()._load_processed(path)
        try:
            obj = torch.load(path, weights_only=True)
            self._extra = obj["edge_flows"]
        except (KeyError, TypeError) as err:
            raise ValueError(
                f"the processed file '{path}' has an unknown format; delete it or pass "
                "`force_reload=True`"
            ) from err

    # ------------------------------------------------------------------ the complex
    @property
    def complex(self) -> SimplicialOperators:
        """The complex (:class:`SimplicialOperators`) in the given edge order and orientation:
        edge ``e`` runs from ``edges[e, 0]`` to ``edges[e, 1]``."""
        if self._complex is None:
            edges = self._edges.numpy()
            n1 = edges.shape[0]
            B1 = sp.csr_matrix(
                (np.tile([-1.0, 1.0], n1), (edges.ravel(), np.repeat(np.arange(n1), 2))),
                shape=(self._num_nodes0, n1),
            )
            idx = self._extra["B2_index"].numpy()
            B2 = sp.csr_matrix(
                (self._extra["B2_value"].numpy(), (idx[0], idx[1])),
                shape=(n1, int(self._extra["num_triangles"])),
            )
            self._complex = SimplicialOperators.from_incidence(B1, B2)
        return self._complex

    @property
    def edges(self) -> torch.Tensor:
        """Edges ``int64 [N1, 2]``: tail and head of every column, in the given orientation."""
        return self._edges

    @property
    def pos(self) -> torch.Tensor | None:
        """Node coordinates ``float64 [N0, 2]``, or ``None`` when none were given."""
        return self._pos if self._pos.numel() else None

    @property
    def has_labels(self) -> bool:
        """Whether the samples carry labels ``y``."""
        return bool(self._extra["has_labels"])

    @property
    def sample_ids(self) -> list[int] | list[str]:
        """Ids of the samples of this dataset (or view), in order (default ``0 .. S-1``)."""
        ids = self._extra["sample_ids"]
        idx = list(self.indices())
        if isinstance(ids, torch.Tensor):
            return ids[torch.as_tensor(idx, dtype=torch.long)].tolist()
        return [ids[i] for i in idx]

    def path(self, idx: int) -> torch.Tensor:
        """Node path of sample ``idx`` (``int64 [L]``; empty when the flows were given
        without paths).

        Raises:
            IndexError: ``idx`` out of range.
            TypeError: ``idx`` is not an int.
        """
        return super().path(idx)

    def _split_full(self, seed: int) -> dict[str, torch.Tensor]:
        y = self._data.y.view(-1).numpy() if self.has_labels else None
        std = {s: self._masks[s].numpy() for s in ("train", "val", "test")}
        return {s: torch.from_numpy(m) for s, m in _resplit(y, std, seed).items()}

    def __repr__(self) -> str:
        ops_sizes = (self._num_nodes0, int(self._edges.shape[0]), int(self._extra["num_triangles"]))
        return (
            f"{type(self).__name__}({len(self)}, complex={ops_sizes}, "
            f"labels={'yes' if self.has_labels else 'no'}, file='{os.path.basename(self.file)}')"
        )


_SAMPLE_PARTS = ("paths", "labels", "pos", "masks", "sample_ids")


def _sequence(obj: Any, name: str) -> list:
    if isinstance(obj, (str, bytes)) or not hasattr(obj, "__iter__"):
        raise TypeError(f"`{name}` must be a sequence, got {type(obj).__name__}")
    return list(obj.tolist() if isinstance(obj, (np.ndarray, torch.Tensor)) else obj)
