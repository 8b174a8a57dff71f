"""The ``.npz`` edge-flow file of :class:`~topo_contrastive.datasets.EdgeFlows`: reading and
writing.

The format is documented in :mod:`topo_contrastive.datasets.edge_flows`. The samples of a
file go through :func:`~topo_contrastive.datasets._edge_flow_samples.validate_samples` (as
those given to :meth:`EdgeFlows.from_incidence` do), whose errors name the key
(``key 'flows' of 'data.npz'``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.sparse as sp

from topo_contrastive._utils.files import atomic_write, read_npz
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._edge_flow_samples import MASK_KEYS, Names, validate_samples

_FORMAT = "topo_contrastive.edge_flows"
_VERSION = 1
_B1_KEYS = ("B1_index", "B1_value", "B1_shape")
_B2_KEYS = ("B2_index", "B2_value", "B2_shape")
# the most nodes a file may declare (its incidence matrix must fit in memory: 10^8 nodes
# already take 0.8 GB of row pointers)
_MAX_NODES = 10**8
_KNOWN_KEYS = frozenset(
    {
        *_B1_KEYS,
        *_B2_KEYS,
        *MASK_KEYS,
        "edge_index",
        "triangles",
        "cell_nodes",
        "cell_ptr",
        "num_nodes",
        "flows",
        "path_nodes",
        "path_ptr",
        "labels",
        "pos",
        "sample_ids",
        "edge_weights",
        "node_weights",
        "cell_weights",
        "format",
        "version",
    }
)


# ---------------------------------------------------------------------------- the file
def _coo_arrays(mat: sp.spmatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    coo = sp.coo_matrix(mat)
    return (
        np.stack([coo.row, coo.col]).astype(np.int64),
        coo.data.astype(np.int8),
        np.asarray(coo.shape, dtype=np.int64),
    )


def _check_declared_shape(shape: np.ndarray, nnz: int, prefix: str, name: Names) -> None:
    """The sizes a file declares fit what it stores, before anything is allocated: at
    most :data:`_MAX_NODES` rows (nodes; edges in ``B2``), and every column (an edge of
    ``B1``: two entries; a 2-cell of ``B2``: three or more) backed by stored entries."""
    rows, cols = (int(v) for v in shape)
    per_col, what = (2, "edge") if prefix == "B1" else (3, "2-cell")
    if rows > _MAX_NODES:
        unit = "nodes" if prefix == "B1" else "edges"
        raise ValueError(
            f"{name(prefix + '_shape')} declares {rows} {unit}, above the limit of "
            f"{_MAX_NODES} (10^8)"
        )
    if cols * per_col > nnz:
        raise ValueError(
            f"{name(prefix + '_shape')} declares {cols} columns but "
            f"{name(prefix + '_index')} stores {nnz} entries: every {what} needs "
            f"{'two' if per_col == 2 else 'at least three'} (at most {nnz // per_col} "
            f"{what}s)"
        )


def _coo_from_file(arrays: dict[str, np.ndarray], prefix: str, name: Names) -> sp.csr_matrix:
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
    _check_declared_shape(shape, int(index.shape[1]), prefix, name)
    if index.size and ((index.min(axis=1) < 0).any() or (index.max(axis=1) >= shape).any()):
        raise ValueError(
            f"{name(prefix + '_index')} has an index outside the shape {tuple(shape.tolist())}"
        )
    return sp.csr_matrix(
        (value.astype(np.float64), (index[0], index[1])), shape=tuple(int(v) for v in shape)
    )


def _incidence_from_edges(
    edge_index: np.ndarray,
    triangles: np.ndarray | None,
    num_nodes: int,
    name: Names,
    source: str = "",
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
            + (f" (num_nodes from {source})" if source else "")
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
    ops = ComplexOperators.from_incidence(B1)
    tri = np.sort(tri.astype(np.int64), axis=1)
    steps = np.stack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]], axis=1)  # [N2, 3, 2]
    try:
        col, sign = ops.edge_lookup(steps[..., 0], steps[..., 1])  # [N2, 3] each
    except ValueError as err:
        raise ValueError(f"{name('triangles')}: a triangle's face {err}") from None
    n2 = tri.shape[0]
    B2 = sp.csr_matrix((sign.ravel(), (col.ravel(), np.repeat(np.arange(n2), 3))), shape=(n1, n2))
    return B1, B2


def _cells_incidence(
    B1: sp.csr_matrix, nodes: np.ndarray, ptr: np.ndarray, name: Names
) -> sp.csr_matrix:
    """``B2`` of 2-cells given as node cycles (``cell_nodes`` split at ``cell_ptr``), each
    oriented along its cycle, over the edges of ``B1`` in their given orientation."""
    if nodes.ndim != 1 or ptr.ndim != 1 or nodes.dtype.kind not in "iu" or (
        ptr.dtype.kind not in "iu"
    ):
        raise ValueError(
            f"{name('cell_nodes')} and {name('cell_ptr')} must be 1-D integer arrays (the "
            "2-cells' nodes one after the other, and where each 2-cell starts)"
        )
    if ptr.size < 1 or ptr[0] != 0 or ptr[-1] != nodes.size or (np.diff(ptr) < 3).any():
        raise ValueError(
            f"{name('cell_ptr')} must rise from 0 to len(cell_nodes) = {nodes.size} in steps of "
            "at least 3 (a 2-cell is a cycle of at least three nodes)"
        )
    ops = ComplexOperators.from_incidence(B1)
    n = nodes.astype(np.int64)
    nxt = np.arange(n.size) + 1
    nxt[ptr[1:] - 1] = ptr[:-1]  # each cycle closes at its first node
    try:
        col, sign = ops.edge_lookup(n, n[nxt])
    except ValueError as err:
        raise ValueError(f"{name('cell_nodes')}: a 2-cell steps along a pair that {err}") from None
    cells = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    return sp.csr_matrix((sign, (col, cells)), shape=(B1.shape[1], ptr.size - 1))


def read_edge_flow_file(path: str) -> dict[str, Any]:
    """Read and validate an edge-flow file; return the complex and the checked samples.

    Returns:
        ``validate_samples``'s dict (``flows``, ``paths``, ``labels``, ``pos``, ``masks``,
        ``sample_ids``: numpy arrays or ``None``) with ``complex``: the
        :class:`ComplexOperators`.

    Raises:
        ValueError: an unknown or missing key, a wrong ``format`` or ``version``, a complex
            given twice or malformed, bad paths or samples (the message names the key); a
            file of many complexes (key ``cell_counts``).
        TypeError: as :func:`validate_samples`.
    """
    name = Names(path)
    arrays = read_npz(path, what="an edge-flow file (EdgeFlows.write_npz)")
    _check_header(arrays, path, name)
    ops = _complex_from_file(arrays, path, name)
    paths = _paths_from_file(arrays, path, name)
    masks = None
    present = [k for k in MASK_KEYS if k in arrays]
    if present:
        masks = {k.removesuffix("_mask"): arrays[k] for k in present}
    checked = validate_samples(
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
    for rank, key in enumerate(WEIGHT_KEYS):
        if key in arrays:
            checked[key] = _weights(arrays[key], rank, ops.sizes[rank], name(key))
    return checked


#: The optional keys of the Hodge stars ``W0``, ``W1``, ``W2`` (docs/weights.md).
WEIGHT_KEYS = ("node_weights", "edge_weights", "cell_weights")


def _weights(arr: np.ndarray, rank: int, n: int, shown: str) -> np.ndarray:
    """The optional ``node_weights`` / ``edge_weights`` / ``cell_weights`` ``float [N_k]``:
    positive, finite (the diagonal of the metric ``W_k``, e.g. a line's reactance or a
    pipe's resistance for ``W1``)."""
    if arr.shape != (n,) or arr.dtype.kind not in "iuf":
        raise ValueError(
            f"{shown} must be a real array of shape [N{rank}] = [{n}], got {_shown(arr)}"
        )
    w = arr.astype(np.float64)
    if not (np.isfinite(w) & (w > 0)).all():
        raise ValueError(f"{shown} must be positive and finite")
    return w


def _check_header(arrays: dict[str, np.ndarray], path: str, name: Names) -> None:
    """No unknown key; ``format`` and ``version``, where given, are this format's; a file of
    many complexes (key ``cell_counts``) is named as such."""
    if "cell_counts" in arrays:
        raise ValueError(
            f"'{path}' holds many complexes (the many-complex layout, key 'cell_counts'), not "
            "one: read it with ManyComplexFlows (the commands pretrain, evaluate and embed "
            "read it as --data-file)"
        )
    unknown = sorted(set(arrays) - _KNOWN_KEYS)
    if unknown:
        raise ValueError(
            f"'{path}' has the unknown key(s) {unknown}; the keys of the format are "
            f"{sorted(_KNOWN_KEYS)}"
        )
    if "format" in arrays:
        fmt = arrays["format"]
        if fmt.shape != () or str(fmt) != _FORMAT:
            raise ValueError(
                f"{name('format')} is {_shown(fmt)}, expected the string {_FORMAT!r}"
            )
    if "version" in arrays:
        ver = arrays["version"]
        if ver.shape != () or ver.dtype.kind not in "iu" or int(ver) != _VERSION:
            raise ValueError(
                f"{name('version')} is {_shown(ver)}, expected the integer {_VERSION} (this "
                "library reads version 1 files)"
            )


def _shown(arr: np.ndarray) -> str:
    """A short description of a file's entry: its value if scalar, else dtype and shape."""
    if arr.shape == ():
        return f"{arr.item()!r} (dtype {arr.dtype})"
    return f"an array of dtype {arr.dtype} and shape {tuple(arr.shape)}"


def _num_nodes_entry(arr: np.ndarray, name: Names) -> int:
    """The scalar integer ``num_nodes`` of a file, >= 1 and small enough to allocate."""
    if arr.shape != () or arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name('num_nodes')} must be one integer (the number of nodes N0), got "
            f"{_shown(arr)}"
        )
    value = int(arr)
    if not 1 <= value <= _MAX_NODES:
        raise ValueError(
            f"{name('num_nodes')} must be in [1, {_MAX_NODES}] (the number of nodes N0), got "
            f"{value}"
        )
    return value


def _complex_from_file(
    arrays: dict[str, np.ndarray], path: str, name: Names
) -> ComplexOperators:
    """The complex of a file: from ``B1_*`` / ``B2_*`` COO arrays or from ``edge_index`` /
    ``triangles`` (one of the two, never both)."""
    has_b1 = [k in arrays for k in _B1_KEYS]
    has_b2 = [k in arrays for k in _B2_KEYS]
    if any(has_b1) and "edge_index" in arrays:
        raise ValueError(
            f"'{path}' gives the edges twice: keep either B1_index/B1_value/B1_shape or edge_index"
        )
    if "cell_nodes" in arrays or "cell_ptr" in arrays:
        if "edge_index" not in arrays or "triangles" in arrays or any(has_b2):
            raise ValueError(
                f"'{path}': cell_nodes / cell_ptr (2-cells as node cycles) go with edge_index, "
                "instead of triangles or B2_index/B2_value/B2_shape"
            )
        if ("cell_nodes" in arrays) != ("cell_ptr" in arrays):
            raise ValueError(f"'{path}' needs both cell_nodes and cell_ptr, or neither")
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
            num_nodes = _num_nodes_entry(arrays["num_nodes"], name)
            source = name("num_nodes")
        elif "pos" in arrays and arrays["pos"].ndim >= 1:
            num_nodes = int(arrays["pos"].shape[0])
            source = f"the rows of {name('pos')}"
        else:
            num_nodes = int(ei.max()) + 1 if ei.size and ei.dtype.kind in "iu" else 0
            source = ""
        try:
            B1, B2 = _incidence_from_edges(
                ei, arrays.get("triangles"), num_nodes, name, source
            )
            if "cell_nodes" in arrays:
                B2 = _cells_incidence(B1, arrays["cell_nodes"], arrays["cell_ptr"], name)
        except MemoryError:
            raise ValueError(
                f"{name('num_nodes')} = {num_nodes} is too large: the incidence matrix of "
                f"{num_nodes} nodes does not fit in memory"
            ) from None
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
        return ComplexOperators.from_incidence(B1, B2)
    except ValueError as err:
        raise ValueError(f"'{path}': {err}") from None


def _paths_from_file(
    arrays: dict[str, np.ndarray], path: str, name: Names
) -> list[np.ndarray] | None:
    """The node paths ``path_nodes`` split at ``path_ptr``, or ``None`` when the file has none."""
    if ("path_nodes" in arrays) != ("path_ptr" in arrays):
        raise ValueError(f"'{path}' needs both path_nodes and path_ptr, or neither")
    if "path_nodes" not in arrays:
        return None
    nodes, ptr = arrays["path_nodes"], arrays["path_ptr"]
    if (
        nodes.ndim != 1
        or nodes.dtype.kind not in "iu"
        or ptr.ndim != 1
        or (ptr.dtype.kind not in "iu")
    ):
        raise ValueError(
            f"{name('path_nodes')} and {name('path_ptr')} must be 1-D integer arrays (the "
            f"paths' nodes one after the other, and where each path starts), got "
            f"{_shown(nodes)} and {_shown(ptr)}"
        )
    if ptr.size < 1 or ptr[0] != 0 or ptr[-1] != nodes.size or (np.diff(ptr) < 0).any():
        raise ValueError(
            f"{name('path_ptr')} must rise from 0 to len(path_nodes) = {nodes.size}, got "
            f"{ptr[:3].tolist()}...{ptr[-1:].tolist()}"
        )
    return np.split(nodes.astype(np.int64), ptr[1:-1])


def write_edge_flow_file(
    path: str | os.PathLike, ops: ComplexOperators, content: dict[str, Any]
) -> None:
    """Write ``ops`` and the checked samples ``content`` (:func:`validate_samples`'s dict)
    as an edge-flow file, atomically (the folder is made)."""
    arrays: dict[str, np.ndarray] = {"format": np.array(_FORMAT), "version": np.array(_VERSION)}
    arrays["B1_index"], arrays["B1_value"], arrays["B1_shape"] = _coo_arrays(ops.B1)
    if ops.num_faces:
        arrays["B2_index"], arrays["B2_value"], arrays["B2_shape"] = _coo_arrays(ops.B2)
    arrays["flows"] = content["flows"]
    if content.get("paths") is not None:
        nodes = [np.asarray(p, dtype=np.int64) for p in content["paths"]]
        arrays["path_nodes"] = np.concatenate(nodes) if nodes else np.zeros(0, dtype=np.int64)
        arrays["path_ptr"] = np.concatenate([[0], np.cumsum([p.size for p in nodes])]).astype(
            np.int64
        )
    for key in ("labels", "pos", "sample_ids", *WEIGHT_KEYS):
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
