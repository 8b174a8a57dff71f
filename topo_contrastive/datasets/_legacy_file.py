"""The one-complex ``.npz`` layout of earlier versions (private), still read: the complex as
``B1_*`` / ``B2_*`` COO arrays or as ``edge_index`` with ``triangles`` (oriented by their
sorted nodes) or ``cell_nodes`` / ``cell_ptr`` (node cycles) and ``num_nodes``; the samples as
``flows`` ``[S, N1]`` and/or ``path_nodes`` / ``path_ptr``, ``labels``, ``pos``, masks,
``sample_ids``, the weights, checked as the current layout's (messages name these keys).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._checks import (
    MAX_NODES,
    SPLITS,
    WEIGHTS,
    Names,
    check_header,
    checked,
    sample_parts,
    shown,
)

_FORMAT = "topo_contrastive.edge_flows"
_B1, _B2 = ("B1_index", "B1_value", "B1_shape"), ("B2_index", "B2_value", "B2_shape")
_KEYS = frozenset({
    *_B1, *_B2, *(f"{s}_mask" for s in SPLITS), "edge_index", "triangles", "cell_nodes",
    "cell_ptr", "num_nodes", "flows", "path_nodes", "path_ptr", "labels", "pos", "sample_ids",
    *WEIGHTS, "format", "version",
})  # fmt: skip


def read_legacy(arrays: dict[str, np.ndarray], path: str) -> dict[str, Any]:
    """The checked content (:func:`~topo_contrastive.datasets._file.checked`) of a file of the
    one-complex layout: one block, ``flows`` as ``x_1`` and ``labels`` as ``y``.

    Raises:
        ValueError / TypeError: an unknown or missing key, a wrong ``format`` or ``version``,
            a complex given twice or malformed, bad samples (naming the key).
    """
    name = Names(path, {"x_1": "flows", "y": "labels"})
    check_header(arrays, name, _KEYS, _FORMAT, (1,))
    ops = _complex(arrays, path, name)
    parts = sample_parts({**arrays, "x_1": arrays.get("flows"), "y": arrays.get("labels")},
                         path, name)  # fmt: skip
    counts = np.array([[ops.num_nodes, ops.num_edges, ops.num_faces]], dtype=np.int64)
    return checked(ops, counts, name, matrix=True, **parts)


def _coo(arrays: dict[str, np.ndarray], prefix: str, name: Names) -> sp.csr_matrix:
    """``B1`` or ``B2`` from its COO keys; the declared shape fits what is stored, before
    anything is allocated: at most ``MAX_NODES`` rows, two (three) entries per column."""
    index, value, shape = (arrays[f"{prefix}_{k}"] for k in ("index", "value", "shape"))
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or (shape < 0).any():
        raise ValueError(f"{name(prefix + '_shape')} must hold two non-negative integers, got "
                         f"{shape!r}")
    if index.ndim != 2 or index.shape[0] != 2 or index.dtype.kind not in "iu":
        raise ValueError(f"{name(prefix + '_index')} must be an integer array [2, nnz], got "
                         f"dtype {index.dtype} and shape {tuple(index.shape)}")
    if value.shape != (index.shape[1],):
        raise ValueError(f"{name(prefix + '_value')} must have shape [nnz] = [{index.shape[1]}], "
                         f"got {tuple(value.shape)}")
    rows, cols = (int(v) for v in shape)
    nnz = int(index.shape[1])
    per, what = (2, "edge") if prefix == "B1" else (3, "2-cell")
    if rows > MAX_NODES:
        raise ValueError(f"{name(prefix + '_shape')} declares {rows} "
                         f"{'nodes' if prefix == 'B1' else 'edges'}, above the limit of "
                         f"{MAX_NODES} (10^8)")  # fmt: skip
    if cols * per > nnz:
        raise ValueError(
            f"{name(prefix + '_shape')} declares {cols} columns but {name(prefix + '_index')} "
            f"stores {nnz} entries: every {what} needs {'two' if per == 2 else 'at least three'} "
            f"(at most {nnz // per} {what}s)"
        )
    if index.size and ((index.min(axis=1) < 0).any() or (index.max(axis=1) >= shape).any()):
        raise ValueError(f"{name(prefix + '_index')} has an index outside the shape "
                         f"{tuple(shape.tolist())}")
    return sp.csr_matrix((value.astype(np.float64), (index[0], index[1])), shape=(rows, cols))


def _cycles(B1: sp.csr_matrix, nodes: np.ndarray, ptr: np.ndarray, key: str, what: str,
            name: Names) -> sp.csr_matrix:  # fmt: skip
    """``B2`` of 2-cells given as node cycles (``nodes`` split at ``ptr``), each oriented along
    its cycle, over the edges of ``B1`` in their given orientation."""
    ops = ComplexOperators.from_incidence(B1)
    n = nodes.astype(np.int64)
    nxt = np.arange(n.size) + 1
    nxt[ptr[1:] - 1] = ptr[:-1]  # each cycle closes at its first node
    try:
        col, sign = ops.edge_lookup(n, n[nxt])
    except ValueError as err:
        raise ValueError(f"{name(key)}: {what} {err}") from None
    cells = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    return sp.csr_matrix((sign, (col, cells)), shape=(B1.shape[1], ptr.size - 1))


def _from_edges(arrays: dict[str, np.ndarray], name: Names
                ) -> tuple[sp.csr_matrix, sp.csr_matrix | None]:  # fmt: skip
    """``B1`` of ``edge_index`` and ``num_nodes``; ``B2`` of ``triangles`` or of
    ``cell_nodes`` / ``cell_ptr``."""
    ei, source = arrays["edge_index"], ""
    if "num_nodes" in arrays:
        arr = arrays["num_nodes"]
        if arr.shape != () or arr.dtype.kind not in "iu" or not 1 <= int(arr) <= MAX_NODES:
            raise ValueError(f"{name('num_nodes')} must be one integer in [1, {MAX_NODES}] (the "
                             f"number of nodes N0), got {shown(arr)}")
        num_nodes, source = int(arr), name("num_nodes")
    elif "pos" in arrays and arrays["pos"].ndim >= 1:
        num_nodes, source = int(arrays["pos"].shape[0]), f"the rows of {name('pos')}"
    else:
        num_nodes = int(ei.max()) + 1 if ei.size and ei.dtype.kind in "iu" else 0
    if ei.ndim != 2 or ei.shape[0] != 2 or ei.dtype.kind not in "iu":
        raise ValueError(f"{name('edge_index')} must be an integer array [2, N1] (tail and head "
                         f"of every edge), got dtype {ei.dtype} and shape {tuple(ei.shape)}")
    n1 = ei.shape[1]
    if n1 and (ei.min() < 0 or ei.max() >= num_nodes):
        raise ValueError(f"{name('edge_index')} has node ids in [{ei.min()}, {ei.max()}], "
                         f"outside [0, num_nodes = {num_nodes})"
                         + (f" (num_nodes from {source})" if source else ""))  # fmt: skip
    loops = np.flatnonzero(ei[0] == ei[1])
    if loops.size:
        raise ValueError(f"{name('edge_index')} column {loops[0]} is a self-loop")
    B1 = sp.csr_matrix((np.tile([-1.0, 1.0], n1), (ei.T.ravel(), np.repeat(np.arange(n1), 2))),
                       shape=(num_nodes, n1))  # fmt: skip
    if "triangles" in arrays:
        tri = arrays["triangles"]
        if tri.ndim != 2 or tri.shape[1] != 3 or tri.dtype.kind not in "iu":
            raise ValueError(f"{name('triangles')} must be an integer array [N2, 3], got dtype "
                             f"{tri.dtype} and shape {tuple(tri.shape)}")
        ptr = np.arange(0, 3 * len(tri) + 1, 3)  # a triangle: the cycle of its sorted nodes
        return B1, _cycles(B1, np.sort(tri, axis=1).ravel(), ptr, "triangles",
                           "a triangle's face", name)  # fmt: skip
    if "cell_nodes" not in arrays:
        return B1, None
    nodes, ptr = arrays["cell_nodes"], arrays["cell_ptr"]
    if nodes.ndim != 1 or ptr.ndim != 1 or nodes.dtype.kind not in "iu" or (
        ptr.dtype.kind not in "iu"
    ):
        raise ValueError(f"{name('cell_nodes')} and {name('cell_ptr')} must be 1-D integer "
                         "arrays (the 2-cells' nodes one after the other, and where each 2-cell "
                         "starts)")
    if ptr.size < 1 or ptr[0] != 0 or ptr[-1] != nodes.size or (np.diff(ptr) < 3).any():
        raise ValueError(f"{name('cell_ptr')} must rise from 0 to len(cell_nodes) = "
                         f"{nodes.size} in steps of at least 3 (a 2-cell is a cycle of at least "
                         "three nodes)")
    return B1, _cycles(B1, nodes, ptr, "cell_nodes", "a 2-cell steps along a pair that", name)


def _complex(arrays: dict[str, np.ndarray], path: str, name: Names) -> ComplexOperators:
    """The complex of a file: from ``B1_*`` / ``B2_*`` or from ``edge_index`` (with
    ``triangles`` or ``cell_nodes`` / ``cell_ptr``), never both."""
    has_b1, has_b2 = ([k in arrays for k in keys] for keys in (_B1, _B2))
    cells = "cell_nodes" in arrays or "cell_ptr" in arrays
    refusals = (
        (any(has_b1) and "edge_index" in arrays,
         "gives the edges twice: keep either B1_index/B1_value/B1_shape or edge_index"),
        (cells and ("edge_index" not in arrays or "triangles" in arrays or any(has_b2)),
         ": cell_nodes / cell_ptr (2-cells as node cycles) go with edge_index, instead of "
         "triangles or B2_index/B2_value/B2_shape"),
        (cells and ("cell_nodes" in arrays) != ("cell_ptr" in arrays),
         "needs both cell_nodes and cell_ptr, or neither"),
        (any(has_b2) and "triangles" in arrays,
         "gives the triangles twice: keep either B2_index/B2_value/B2_shape or triangles"),
        ("edge_index" in arrays and any(has_b2),
         ": with edge_index, give the triangles as `triangles`"),
        ("edge_index" not in arrays and not all(has_b1),
         f"lacks the key(s) {[k for k, h in zip(_B1, has_b1, strict=True) if not h]}: the "
         "complex needs B1_index, B1_value and B1_shape (or edge_index)"),
        (any(has_b2) and not all(has_b2),
         f"lacks the key(s) {[k for k, h in zip(_B2, has_b2, strict=True) if not h]} (B2 needs "
         "all three)"),
        ("edge_index" not in arrays and "num_nodes" in arrays,
         ": num_nodes goes with edge_index; B1_shape gives N0"),
    )  # fmt: skip
    for refused, why in refusals:
        if refused:
            raise ValueError(f"'{path}'{'' if why[0] == ':' else ' '}{why}")
    try:
        if "edge_index" in arrays:
            B1, B2 = _from_edges(arrays, name)
        else:
            B1, B2 = _coo(arrays, "B1", name), _coo(arrays, "B2", name) if all(has_b2) else None
        return ComplexOperators.from_incidence(B1, B2)
    except MemoryError:
        raise ValueError(f"{name('num_nodes')} is too large: the incidence matrix of its nodes "
                         "does not fit in memory") from None
    except ValueError as err:
        if str(err).startswith(("key ", f"'{path}'")):
            raise
        raise ValueError(f"'{path}': {err}") from None
