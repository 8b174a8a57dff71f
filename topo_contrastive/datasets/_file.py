"""The ``.npz`` file of :class:`~topo_contrastive.datasets.EdgeFlows` (private; the format in
:mod:`~topo_contrastive.datasets.edge_flows`): one reader, vectorised over the blocks (files of
the earlier one-complex layout through ``_legacy_file.py``), one writer, the constructors'
arguments as the same content, and the content's collated storage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive._utils.files import atomic_write, read_npz
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._checks import (
    ARGUMENTS,
    MAX_NODES,
    SPLITS,
    WEIGHTS,
    Names,
    check_header,
    checked,
    numpy,
    path_arrays,
    sample_parts,
)
from topo_contrastive.datasets._legacy_file import read_legacy

FORMAT = "topo_contrastive.complex_data"
VERSION = 2
_KEYS = frozenset({
    "cell_counts", "incidence_1_index", "incidence_1_value", "incidence_2_index",
    "incidence_2_value", "sample_block", "x_1", "path_nodes", "path_ptr", "y", "sample_ids",
    "pos", *WEIGHTS, *(f"{s}_mask" for s in SPLITS), "format", "version",
})  # fmt: skip


# ---------------------------------------------------------------------------- the blocks
def _check_counts(arr: np.ndarray, name: Names) -> np.ndarray:
    """``cell_counts``: integers ``[B, 3]``, B >= 1, non-negative, fitting int64 (each and
    summed), N1 >= 1 per block, at most :data:`MAX_NODES` nodes in all."""
    key = name("cell_counts")
    if arr.ndim != 2 or arr.shape[1:] != (3,) or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{key} must be an integer array [S, 3] (N0, N1, N2 of every sample, "
                         f"S >= 1), got dtype {arr.dtype} and shape {tuple(arr.shape)}")
    big = np.iinfo(np.int64).max
    if arr.dtype.kind == "u" and int(arr.max()) > big:
        s = int(np.argwhere(arr > big)[0, 0])
        raise ValueError(f"{key} row {s} holds the size {int(arr[s].max())}, above the largest "
                         f"int64 (2**63 - 1 = {big}): {arr[s].tolist()}")
    counts = arr.astype(np.int64)
    if (counts < 0).any():
        s = int(np.argwhere(counts < 0)[0, 0])
        raise ValueError(f"{key} row {s} holds a negative size: {counts[s].tolist()}")
    totals = counts.sum(axis=0, dtype=object)  # Python ints: no wrap-around
    if max(totals) > big:
        k = int(np.argmax([t > big for t in totals]))
        raise ValueError(f"{key} declares N{k} = {totals[k]} over all samples, above the "
                         "largest int64 (2**63 - 1)")
    empty = np.flatnonzero(counts[:, 1] == 0)
    if empty.size:
        raise ValueError(f"{key} row {int(empty[0])} declares no edge (N1 = 0); every sample "
                         "needs at least one edge")
    if totals[0] > MAX_NODES:
        raise ValueError(f"{key} declares {totals[0]} nodes over all samples, above the limit "
                         f"of {MAX_NODES} (10^8)")
    return counts


def _pair(arrays: dict[str, np.ndarray], k: int, name: Names) -> tuple[np.ndarray, np.ndarray]:
    """``incidence_k_index`` ``int [2, nnz]`` and ``incidence_k_value`` ``[nnz]`` of +-1."""
    ik, vk = f"incidence_{k}_index", f"incidence_{k}_value"
    if (ik in arrays) != (vk in arrays):
        missing = vk if ik in arrays else ik
        raise ValueError(f"'{name.file}' lacks the key '{missing}' (it goes with the other)")
    if ik not in arrays:
        return np.zeros((2, 0), dtype=np.int64), np.zeros(0)
    index, value = arrays[ik], arrays[vk]
    if index.ndim != 2 or index.shape[0] != 2 or index.dtype.kind not in "iu":
        raise ValueError(f"{name(ik)} must be an integer array [2, nnz] (rows and columns, "
                         "offset by the earlier samples' counts), got dtype "
                         f"{index.dtype} and shape {tuple(index.shape)}")
    if value.shape != (index.shape[1],) or value.dtype.kind not in "iuf":
        raise ValueError(f"{name(vk)} must be a real array [nnz] = [{index.shape[1]}] (one value "
                         f"per entry of {ik}), got dtype {value.dtype} and shape "
                         f"{tuple(value.shape)}")
    bad = np.flatnonzero(~np.isin(value, (-1, 1)))
    if bad.size:
        raise ValueError(f"{name(vk)} entry {int(bad[0])} is {value[bad[0]].item()!r}; "
                         "incidence values are -1 or +1")
    return index.astype(np.int64), value.astype(np.float64)


def _check_owners(index: np.ndarray, rows_end: np.ndarray, cols_end: np.ndarray, key: str,
                  name: Names) -> None:  # fmt: skip
    """Every entry in range and in the block of its column (block-diagonal)."""
    rows, cols = index
    if index.size and (min(rows.min(), cols.min()) < 0 or rows.max() >= rows_end[-1]
                       or cols.max() >= cols_end[-1]):  # fmt: skip
        raise ValueError(f"{name(key)} has an index outside [0, {int(rows_end[-1])}) x [0, "
                         f"{int(cols_end[-1])}) (the summed counts of cell_counts)")
    owner = np.searchsorted(cols_end, cols, side="right") - 1
    row_owner = np.searchsorted(rows_end, rows, side="right") - 1
    wrong = np.flatnonzero(owner != row_owner)
    if wrong.size:
        j = int(wrong[0])
        raise ValueError(
            f"{name(key)} entry {j} joins row {int(rows[j])} of sample {int(row_owner[j])} to "
            f"column {int(cols[j])} of sample {int(owner[j])}: each sample's entries must be "
            "offset by the earlier samples' counts (block-diagonal, as a PyG Batch holds them)"
        )


def _blocks(arrays: dict[str, np.ndarray], path: str, name: Names
            ) -> tuple[ComplexOperators, np.ndarray]:  # fmt: skip
    """The block-diagonal complex of a file and its ``cell_counts`` ``[B, 3]``."""
    missing = [k for k in ("cell_counts", "incidence_1_index", "incidence_1_value")
               if k not in arrays]  # fmt: skip
    if missing:
        raise ValueError(f"'{path}' lacks the key(s) {missing}: the complexes need cell_counts, "
                         "incidence_1_index and incidence_1_value (and incidence_2_index / "
                         "incidence_2_value where there are 2-cells)")
    counts = _check_counts(arrays["cell_counts"], name)
    ends = [np.concatenate([[0], np.cumsum(counts[:, r])]) for r in range(3)]
    i1, v1 = _pair(arrays, 1, name)
    if i1.shape[1] != 2 * ends[1][-1]:
        raise ValueError(
            f"{name('incidence_1_index')} has {i1.shape[1]} entries but cell_counts declares "
            f"sum N1 = {int(ends[1][-1])} edges: every edge needs exactly two (expected "
            f"{2 * int(ends[1][-1])})"
        )
    i2, v2 = _pair(arrays, 2, name)
    if i2.shape[1] < 3 * ends[2][-1]:
        what = "incidence_2_index has" if i2.shape[1] else "no incidence_2_index:"
        raise ValueError(f"'{path}': {what} {i2.shape[1]} entries but cell_counts declares sum "
                         f"N2 = {int(ends[2][-1])} 2-cells, each needing at least three")
    _check_owners(i1, ends[0], ends[1], "incidence_1_index", name)
    _check_owners(i2, ends[1], ends[2], "incidence_2_index", name)
    mats = [sp.csr_matrix((v, (i[0], i[1])), shape=(int(ends[k][-1]), int(ends[k + 1][-1])))
            for k, (i, v) in enumerate(((i1, v1), (i2, v2)))]  # fmt: skip
    return _checked_complex(path, ends, mats), counts


def _checked_complex(path: str, ends: list[np.ndarray], mats: list[sp.csr_matrix]
                     ) -> ComplexOperators:  # fmt: skip
    """The block-diagonal complex, checked at once: the checks of
    :meth:`ComplexOperators.from_incidence` hold for a block-diagonal complex exactly when they
    hold for every block. When they fail, the first invalid block is found by halving the range
    of blocks and named with its own error."""

    def check(lo: int, hi: int) -> ComplexOperators:  # the blocks lo..hi-1
        e0, e1, e2 = ((int(e[lo]), int(e[hi])) for e in ends)
        b2 = mats[1][e1[0] : e1[1], e2[0] : e2[1]] if e2[1] > e2[0] else None
        return ComplexOperators.from_incidence(mats[0][e0[0] : e0[1], e1[0] : e1[1]], b2)

    lo, hi = 0, len(ends[0]) - 1
    try:
        return check(lo, hi)
    except ValueError:
        pass
    while hi - lo > 1:  # [lo, hi) holds an invalid block
        mid = (lo + hi) // 2
        try:
            check(lo, mid)
            lo = mid
        except ValueError:
            hi = mid
    try:
        check(lo, lo + 1)
    except ValueError as err:
        raise ValueError(f"'{path}', sample {lo} (row {lo} of cell_counts): {err}") from None
    raise AssertionError("unreachable: the blocks are independent")  # pragma: no cover


# ---------------------------------------------------------------------------- the file
def read_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a file of either layout (module docstring).

    Returns:
        :func:`checked`'s content.

    Raises:
        ValueError / TypeError: an unreadable file, an unknown or missing key, a wrong
            ``format`` or ``version``, an invalid complex (a block named by its row of
            ``cell_counts``), bad samples; the message names the file and the key.
    """
    path = os.fspath(path)
    arrays = read_npz(path, what="an edge-flow file (EdgeFlows.write_npz)")
    if "cell_counts" not in arrays:
        return read_legacy(arrays, path)
    name = Names(path)
    check_header(arrays, name, _KEYS, FORMAT, (VERSION, 1))
    ops, counts = _blocks(arrays, path, name)
    return checked(ops, counts, name, **sample_parts(arrays, path, name))


def write_file(path: str | os.PathLike, content: dict[str, Any]) -> None:
    """Write :func:`checked`'s content as a file of the layout (module docstring),
    atomically (the folder is made)."""
    ops, counts, block = content["complex"], content["counts"], content["block"]
    arrays: dict[str, Any] = {"format": np.array(FORMAT), "version": np.array(VERSION),
                              "cell_counts": counts}  # fmt: skip
    for k, mat in ((1, ops.B1), (2, ops.B2)):
        coo = mat.tocoo()  # row-major: the order of the blocks' PyG Batch
        arrays[f"incidence_{k}_index"] = np.stack([coo.row, coo.col]).astype(np.int64)
        arrays[f"incidence_{k}_value"] = coo.data.astype(np.int8)
    one = len(counts) == 1 and not block.any()
    x = content["x_1"]
    arrays["x_1"] = x.reshape(block.size, -1) if one else x
    if not one and not np.array_equal(block, np.arange(len(counts))):
        arrays["sample_block"] = block
    if content["paths"] is not None:
        arrays["path_nodes"], arrays["path_ptr"] = content["paths"]
    for key in ("y", "sample_ids", "pos", *WEIGHTS):
        if content[key] is not None:
            arrays[key] = content[key]
    for split, mask in (content["masks"] or {}).items():
        arrays[f"{split}_mask"] = mask
    os.makedirs(os.path.dirname(os.path.abspath(os.fspath(path))), exist_ok=True)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)

    atomic_write(path, write)


def complexes_in(path: str | os.PathLike) -> int:
    """The number of complexes (rows of ``cell_counts``) a data file declares; 1 for a file
    without the key (the one-complex layout) and for unreadable ones (their reader says what
    is wrong)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive, archive.open("cell_counts.npy") as f:
            fmt = np.lib.format  # the header's shape, no data read
            major = fmt.read_magic(f)[0]
            shape = (fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0)(f)[0]
        return int(shape[0]) if len(shape) == 2 else 1
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return 1


# ---------------------------------------------------------------------------- the storage
def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + n) for a, n in zip(starts, lengths)])``, vectorised."""
    begin = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) - np.repeat(begin - starts, lengths)


def _own_complexes(content: dict[str, Any], n: np.ndarray, store: dict[str, torch.Tensor],
                   slices: dict[str, torch.Tensor]) -> None:  # fmt: skip
    """The per-sample incidences (and ``pos`` and the weights) of samples on many blocks."""
    counts, block = content["counts"], content["block"]
    ends = [np.concatenate([[0], np.cumsum(counts[:, r])]) for r in range(3)]
    for k, mat in ((1, content["complex"].B1), (2, content["complex"].B2)):
        rows = np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))  # row-major per block
        owner = np.searchsorted(ends[k - 1], rows, side="right") - 1
        local = np.stack([rows - ends[k - 1][owner], mat.indices - ends[k][owner]])
        cut = np.searchsorted(owner, np.arange(len(counts) + 1))  # block b: cut[b]:cut[b + 1]
        take, size = _ranges(cut[block], np.diff(cut)[block]), np.diff(cut)[block]
        store[f"incidence_{k}_index"] = torch.from_numpy(local[:, take].astype(np.int64))
        store[f"incidence_{k}_value"] = torch.from_numpy(mat.data[take].astype(np.float32))
        slices[f"incidence_{k}_index"] = slices[f"incidence_{k}_value"] = torch.from_numpy(
            np.concatenate([[0], size.cumsum()]))
    for key, rank in (("pos", 0), *((k, r) for r, k in enumerate(WEIGHTS))):
        if content[key] is not None:
            store[key] = torch.from_numpy(content[key][_ranges(ends[rank][block], n[:, rank])])
            slices[key] = torch.from_numpy(np.concatenate([[0], n[:, rank].cumsum()]))


def collated(content: dict[str, Any]) -> tuple[Any, dict[str, torch.Tensor]]:
    """The collated storage of the samples (that of ``InMemoryDataset.collate`` of their
    ``ComplexData``), built at once: on one block, samples of the shared complex; on many,
    each with its block's incidences (and ``pos`` and the weights where given)."""
    from topo_contrastive.data import ComplexData

    counts, block, y = content["counts"], content["block"], content["y"]
    n = counts[block]  # [S, 3]
    one = torch.arange(block.size + 1)
    store = {"cell_counts": torch.from_numpy(n),
             "x_1": torch.from_numpy(content["x_1"].astype(np.float32)).view(-1, 1)}  # fmt: skip
    slices = {"cell_counts": one, "x_1": torch.from_numpy(np.concatenate([[0], n[:, 1].cumsum()]))}
    if y is not None:
        store["y"], slices["y"] = torch.from_numpy(y), one
    if len(counts) == 1:  # on the shared complex: PyG's node count N0, no incidences
        store["shared_complex"], slices["shared_complex"] = torch.ones(block.size, dtype=bool), one
    else:
        _own_complexes(content, n, store, slices)
    data = ComplexData(num_nodes=int(n[:, 0].sum()), **store)
    data._store._num_nodes = n[:, 0].tolist()  # PyG's per-sample node counts
    return data, slices


# ---------------------------------------------------------------------------- arguments
def _sample_arrays(samples: Any, what: str) -> dict[str, Any]:
    """The arrays of a file of ``samples`` on complexes of their own: those of their PyG
    ``Batch`` (their ``x_1``, ``y`` where every sample has one, ``pos`` likewise)."""
    from torch_geometric.data import Batch

    from topo_contrastive.data import ComplexData

    if isinstance(samples, ComplexData):
        batch = isinstance(samples, Batch)
        raise TypeError(
            f"`{what}` is {'a Batch of many samples' if batch else 'one ComplexData sample'}; "
            "expected a list (or dataset) of ComplexData samples, each on its own complex: "
            f"pass {'batch.to_data_list()' if batch else '[sample]'}")
    rows, data = [], list(samples)
    if not data:
        raise ValueError(f"`{what}` is empty: give at least one ComplexData")
    for i, d in enumerate(data):
        if not isinstance(d, ComplexData):
            raise TypeError(f"`{what}`[{i}] must be a ComplexData, got {type(d).__name__}")
        if d.is_shared:
            raise ValueError(f"`{what}`[{i}] lies on the shared complex (no incidences of its "
                             "own): build it with ComplexData.from_complex, or give its complex "
                             "and the flows (EdgeFlows.from_incidence)")
        n1, x = int(d.num_cells(1).sum()), d.get("x_1")
        if x is None or x.numel() != n1:
            raise ValueError(f"`{what}`[{i}] must hold `x_1` with N1 = {n1} entries (one flow "
                             f"value per edge), got {None if x is None else tuple(x.shape)}")
        y = d.get("y")
        if y is not None and y.numel() != 1:
            raise ValueError(f"`{what}`[{i}] has {y.numel()} labels `y`; expected one")
        keep = {k: d[k] for k in ("cell_counts", *(f"incidence_{k}_{p}" for k in (1, 2)
                                                   for p in ("index", "value")))}  # fmt: skip
        rows.append(ComplexData(x_1=x.reshape(-1, 1), **keep, **({} if y is None else {
            "y": y.reshape(1)}), **({} if d.get("pos") is None else {"pos": d.pos})))
    for key in ("y", "pos"):
        has = [key in r for r in rows]
        if any(has) and not all(has):
            raise ValueError(f"`{what}`[{has.index(not has[0])}]: `{key}` on some samples only; "
                             "give it on every sample, or on none")
    batch = Batch.from_data_list(rows)
    return {k: numpy(batch[k]) for k in (*keep, "x_1", "y", "pos") if k in batch}


def content_of(complex: Any, flows: Any, what: str = "complex", *, paths: Any = None,
             labels: Any = None, pos: Any = None, masks: Any = None, sample_ids: Any = None,
             edge_weights: Any = None) -> dict[str, Any]:  # fmt: skip
    """The checked content of the constructors' arguments: one complex and its flows (or
    paths), or a list of ``ComplexData`` samples on complexes of their own."""
    rest = {"masks": masks, "sample_ids": sample_ids}
    if isinstance(complex, ComplexOperators) and complex.metric != "unweighted":
        rest.update({k: complex.hodge_star(r) for r, k in enumerate(WEIGHTS)})  # its metric
    if edge_weights is not None:
        rest["edge_weights"] = edge_weights
    if not isinstance(complex, ComplexOperators):
        if any(v is not None for v in (flows, paths, labels, pos)):
            raise TypeError(f"`{what}` must be a ComplexOperators (with `flows` or `paths`) or a "
                            "list of ComplexData samples (with their own x_1, y and pos), got "
                            f"{type(complex).__name__}")
        arrays = _sample_arrays(complex, what)
        ops, counts = _blocks(arrays, f"`{what}`", Names(None))
        return checked(ops, counts, Names(None), x_1=arrays["x_1"], y=arrays.get("y"),
                       pos=arrays.get("pos"), **rest)  # fmt: skip
    name = Names(None, ARGUMENTS)
    if paths is not None:
        if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence | np.ndarray):
            raise TypeError(f"`paths` must be a sequence of node sequences, got "
                            f"{type(paths).__name__}")
        arrs = [numpy(p) for p in paths]
        for i, a in enumerate(arrs):
            if a.ndim != 1 or not (a.dtype.kind in "iu" or a.size == 0):
                raise TypeError(f"`paths`[{i}] must be a sequence of integer node ids, got dtype "
                                f"{a.dtype} and shape {tuple(a.shape)}")
        ptr = np.concatenate([[0], np.cumsum([a.size for a in arrs])]).astype(np.int64)
        nodes = np.concatenate(arrs).astype(np.int64) if arrs else np.zeros(0, np.int64)
        paths = path_arrays(nodes, ptr, name)
    counts = np.array([[complex.num_nodes, complex.num_edges, complex.num_faces]])
    return checked(complex, counts, name, True, x_1=flows, paths=paths, y=labels, pos=pos, **rest)

