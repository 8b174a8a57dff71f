"""The checks of the samples of :class:`~topo_contrastive.datasets.EdgeFlows` (private), from
the arguments of its constructors or from the keys of its file (``_file.py``): flows, node
paths, labels, ids, masks, node coordinates and per-edge weights on the complexes (blocks) they
lie on. Errors name the argument (```flows```) or the file and the key (``key 'x_1' of
'data.npz'``), as :class:`Names` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from topo_contrastive._utils.checks import label_values
from topo_contrastive.complex import ComplexOperators

# the most nodes (summed over the blocks) a file may declare: 10^8 nodes already take 0.8 GB
# of row pointers
MAX_NODES = 10**8
SPLITS = ("train", "val", "test")
_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The optional keys of the Hodge stars' diagonals W0, W1, W2 (node, edge and 2-cell weights).
WEIGHTS = ("node_weights", "edge_weights", "cell_weights")
#: How the arguments of the constructors are named in the messages.
ARGUMENTS = {"x_1": "flows", "y": "labels", "path_nodes": "paths"}


def numpy(x: Any) -> np.ndarray:
    """``x`` (a tensor, dense or sparse, or anything array-like) as a numpy array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return (x.to_dense() if x.layout != torch.strided else x).numpy()
    return np.asarray(x)


def shown(arr: np.ndarray) -> str:
    """A file entry in a message: its value if scalar, else its dtype and shape."""
    if arr.shape == ():
        return f"{arr.item()!r} (dtype {arr.dtype})"
    return f"an array of dtype {arr.dtype} and shape {tuple(arr.shape)}"


class Names:
    """How an input is named in the messages: an argument (``file=None``) or a key of a file;
    ``aliases`` maps the layout's keys to the names the user gave (``x_1`` -> ``flows``)."""

    def __init__(self, file: str | None = None, aliases: Mapping[str, str] | None = None):
        self.file, self.aliases = file, dict(aliases or {})

    def __call__(self, key: str) -> str:
        key = self.aliases.get(key, key)
        return f"`{key}`" if self.file is None else f"key '{key}' of '{self.file}'"


def check_header(arrays: Mapping[str, np.ndarray], name: Names, keys: frozenset[str],
                 fmt: str, versions: tuple[int, ...]) -> None:  # fmt: skip
    """No unknown key; ``format`` and ``version``, where given, are ``fmt`` and one of
    ``versions``."""
    unknown = sorted(set(arrays) - keys)
    if unknown:
        raise ValueError(f"'{name.file}' has the unknown key(s) {unknown}; the keys of the "
                         f"format are {sorted(keys)}")
    given, ver = arrays.get("format"), arrays.get("version")
    if given is not None and (given.shape != () or str(given) != fmt):
        raise ValueError(f"{name('format')} is {shown(given)}, expected the string {fmt!r}")
    if ver is not None and (ver.shape != () or ver.dtype.kind not in "iu"
                            or int(ver) not in versions):  # fmt: skip
        raise ValueError(f"{name('version')} is {shown(ver)}, expected the integer "
                         f"{' or '.join(map(str, versions))}")


def _sample_blocks(arr: Any, num_blocks: int, name: Names) -> np.ndarray:
    arr = numpy(arr)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or (
        arr.size and (arr.min() < 0 or arr.max() >= num_blocks)
    ):
        raise ValueError(f"{name('sample_block')} must be an integer array [S] of blocks in "
                         f"[0, {num_blocks}) (rows of cell_counts), got {shown(arr)}")
    return arr.astype(np.int64)


def _flows(x: Any, n1: np.ndarray, block: np.ndarray | None, name: Names, matrix: bool
           ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``x_1`` flat, float32 (float64 kept), and the block of every sample: given, one per
    block, or on the one block as many as ``x_1`` holds (``[S, N1]``, flat or a column; only
    ``[S, N1]`` where ``matrix``)."""
    arr = numpy(x)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    column = arr.ndim == 2 and arr.shape[1] == 1
    if block is None and n1.size == 1:
        n = int(n1[0])
        rows = arr.shape[0] if arr.ndim == 2 and (matrix or not column) else None
        if arr.ndim not in (1, 2) or (rows is None and (matrix or arr.size % n)) or (
            rows is not None and arr.shape[1] != n
        ):
            raise ValueError(f"{name('x_1')} must have shape [S, N1] with N1 = {n} (the edges of "
                             f"the complex), got shape {tuple(arr.shape)}")
        block = np.zeros(arr.size // n if rows is None else rows, dtype=np.int64)
    block = np.arange(n1.size) if block is None else block
    total = int(n1[block].sum())
    if (arr.ndim == 2 and not column and arr.shape[0] != block.size) or arr.ndim > 2 or (
        arr.size != total
    ):
        raise ValueError(f"{name('x_1')} must have shape [sum N1] = [{total}] (every sample's "
                         f"edge flow, one after the other), got shape {tuple(arr.shape)}")
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name('x_1')} must hold real numbers, got dtype {arr.dtype}")
    flat = arr.reshape(-1)
    wide = flat.astype(np.float64)
    bad = ~np.isfinite(wide) | (np.abs(wide) > _FLOAT32_MAX)
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        s = int(np.searchsorted(np.cumsum(n1[block]), e, side="right"))
        where = f"sample {s}, edge {e - int(n1[block[:s]].sum())}"
        if not np.isfinite(wide[e]):
            raise ValueError(f"{name('x_1')} has a NaN or inf entry ({where}); flows must be "
                             "finite")
        raise ValueError(f"{name('x_1')} has the value {wide[e]:.3g} ({where}), which overflows "
                         f"float32 (largest {_FLOAT32_MAX:.3g}; datasets store flows as "
                         "float32): rescale the flows")
    return flat.astype(np.float64 if flat.dtype == np.float64 else np.float32), block


def path_arrays(nodes: Any, ptr: Any, name: Names) -> tuple[np.ndarray, np.ndarray]:
    """``path_nodes`` / ``path_ptr`` checked: 1-D integers, ``ptr`` rising from 0 to
    ``len(nodes)``."""
    nodes, ptr = numpy(nodes), numpy(ptr)
    if nodes.ndim != 1 or ptr.ndim != 1 or nodes.dtype.kind not in "iu" or (
        ptr.dtype.kind not in "iu"
    ):
        raise ValueError(
            f"{name('path_nodes')} and {name('path_ptr')} must be 1-D integer arrays (the paths' "
            f"nodes one after the other, and where each path starts), got {shown(nodes)} and "
            f"{shown(ptr)}"
        )
    if ptr.size < 1 or ptr[0] != 0 or ptr[-1] != nodes.size or (np.diff(ptr) < 0).any():
        raise ValueError(f"{name('path_ptr')} must rise from 0 to len(path_nodes) = "
                         f"{nodes.size}, got {ptr[:3].tolist()}...{ptr[-1:].tolist()}")
    return nodes.astype(np.int64), ptr.astype(np.int64)


def _path_flows(ops: ComplexOperators, counts: np.ndarray, block: np.ndarray,
                paths: tuple[np.ndarray, np.ndarray], name: Names) -> np.ndarray:  # fmt: skip
    """The flows ``float32 [sum N1]`` of the node paths (each in its block's node ids), every
    step +1 along its edge's orientation and -1 against it
    (:meth:`ComplexOperators.path_to_flow`); a path that is not a walk is named."""
    nodes, ptr = paths
    lengths, sample = np.diff(ptr), np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    short = np.flatnonzero(lengths < 2)
    if short.size:
        i = int(short[0])
        raise ValueError(f"{name('paths')}[{i}] has {int(lengths[i])} node(s); a path needs at "
                         "least 2 nodes (one edge)")
    n0 = counts[block, 0][sample]
    outside = np.flatnonzero((nodes < 0) | (nodes >= n0))
    if outside.size:
        j = int(outside[0])
        raise ValueError(f"{name('paths')}[{int(sample[j])}] has the node id {int(nodes[j])}, "
                         f"outside [0, N0 = {int(n0[j])})")
    offset = np.cumsum(np.concatenate([np.zeros((1, 2), np.int64), counts[:, :2]]), axis=0)[block]
    glob = nodes + offset[sample, 0]
    step = np.ones(nodes.size, dtype=bool)
    step[ptr[1:] - 1] = False  # the last node of a path starts no step
    u, v = glob[step], glob[1:][step[:-1]]
    e, n = ops.edges, ops.num_nodes
    bad = np.flatnonzero((u == v) | ~np.isin(np.minimum(u, v) * n + np.maximum(u, v),
                                             e.min(axis=1) * n + e.max(axis=1)))  # fmt: skip
    if bad.size:
        j = int(np.flatnonzero(step)[bad[0]])
        i = int(sample[j])
        raise ValueError(f"{name('paths')}[{i}]: step {j - int(ptr[i])} of the path, "
                         f"{int(nodes[j])!r} -> {int(nodes[j + 1])!r}, is not an edge of the "
                         "complex")
    col, sign = ops.edge_lookup(u, v)
    ends = np.concatenate([[0], np.cumsum(counts[block, 1])])
    flows = np.zeros(int(ends[-1]), dtype=np.float64)
    np.add.at(flows, col - offset[sample[step], 1] + ends[sample[step]], sign)
    return flows.astype(np.float32)


def _labels(y: Any, num: int, name: str) -> np.ndarray:
    arr = numpy(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != num:
        raise ValueError(f"{name} must have shape [S] with S = {num} (one label per sample), got "
                         f"shape {tuple(arr.shape)}")
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer class ids, got dtype {arr.dtype}")
    try:
        return label_values(arr, "labels")
    except (TypeError, ValueError) as err:  # say which input: the argument or the file key
        raise type(err)(str(err).replace("`labels`", name, 1)) from None


def sample_ids(ids: Any, num: int, name: str) -> np.ndarray:
    """Unique integer (int64) or string ids ``[S]``."""
    arr = numpy(ids if isinstance(ids, (np.ndarray, torch.Tensor)) else list(ids))
    if arr.shape != (num,):
        raise ValueError(f"{name} must have shape [S] with S = {num}, got {tuple(arr.shape)}")
    if arr.dtype.kind not in "iuU":
        raise TypeError(f"{name} must hold integers or strings, got dtype {arr.dtype}")
    uniq, counts = np.unique(arr, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{name} must be unique, but {uniq[counts > 1][0].item()!r} occurs twice")
    return arr.astype(np.int64) if arr.dtype.kind in "iu" else arr


def _masks(masks: Any, num: int, name: Names) -> dict[str, np.ndarray]:
    """The three split masks ``bool [S]``, disjoint."""

    def show(split: str) -> str:
        return f"`masks['{split}']`" if name.file is None else name(f"{split}_mask")

    if not isinstance(masks, Mapping):
        raise TypeError("`masks` must be a mapping {'train': ..., 'val': ..., 'test': ...}, got "
                        f"{type(masks).__name__}")
    unknown = sorted(set(masks) - set(SPLITS))
    if unknown:
        raise ValueError(f"`masks` has the unknown split(s) {unknown}; use train, val, test")
    out = {}
    for split in SPLITS:
        if split not in masks:
            raise ValueError(f"{show(split)} is missing: give all three split masks, or none")
        out[split] = arr = numpy(masks[split])
        if arr.shape != (num,) or arr.dtype != bool:
            raise ValueError(f"{show(split)} must be a bool array of shape [{num}], got dtype "
                             f"{arr.dtype} and shape {tuple(arr.shape)}")
    overlap = np.flatnonzero(sum(m.astype(int) for m in out.values()) > 1)
    if overlap.size:
        raise ValueError(f"the masks {', '.join(show(k) for k in out)} overlap (sample "
                         f"{int(overlap[0])} is in two splits); the splits must be disjoint")
    return out


def _per_cell(arr: Any, rows: int, name: str, rank: int | None) -> np.ndarray:
    """``pos`` ``[N0, 2]`` (``rank=None``; finite) or the weights of the ``rank``-cells
    ``[N_rank]`` (finite, positive), float64."""
    arr, pos = numpy(arr), rank is None
    if arr.shape != ((rows, 2) if pos else (rows,)) or arr.dtype.kind not in "iuf":
        cell = ("node", "edge", "2-cell")[rank or 0]
        what = "[N0, 2] with N0" if pos else f"[N{rank}] with N{rank}"
        means = "x, y of every node" if pos else f"one positive weight per {cell}"
        raise ValueError(f"{name} must be a real array of shape {what} = {rows} ({means}), got "
                         f"dtype {arr.dtype} and shape {tuple(arr.shape)}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or inf {'coordinates' if pos else 'weights'}")
    if not pos and (arr <= 0).any():
        raise ValueError(f"{name} must be positive, got {arr.min()!r}")
    return arr


# ---------------------------------------------------------------------------- all at once
def checked(ops: ComplexOperators, counts: np.ndarray, name: Names, matrix: bool = False,
            **parts: Any) -> dict[str, Any]:  # fmt: skip
    """Check the samples on the blocks of ``ops`` (``counts`` ``[B, 3]``): the parts ``x_1``,
    ``paths`` (``path_nodes``, ``path_ptr``, checked by :func:`path_arrays`),
    ``sample_block``, ``y``, ``sample_ids``, ``masks``, ``pos`` and the :data:`WEIGHTS` (each
    optional, ``None`` when absent); ``matrix``: the flows of one block as ``[S, N1]`` only
    (the constructors' arguments and files of the earlier one-complex layout).

    Returns:
        The content: ``complex``, ``counts`` and ``block`` ``int64 [S]``, ``x_1`` (float32;
        float64 kept) ``[sum N1]``, ``paths``, ``y`` ``int64 [S]``, ``sample_ids``, ``masks``
        ``{split: bool [S]}``, ``pos`` ``float64 [sum N0, 2]``, ``node_weights`` /
        ``edge_weights`` / ``cell_weights`` ``float64 [sum N_k]`` (``None`` when absent).

    Raises:
        ValueError / TypeError: naming the input (``name``), as the module docstring says.
    """
    get = parts.get
    if ops.num_edges == 0:
        raise ValueError(
            f"the complex has no edges (N1 = 0, {ops.num_nodes} nodes): edge flows "
            f"({name('x_1')}) need at least one edge; a complex of nodes only carries node "
            "signals (rank 0), not an edge-flow dataset")
    block = get("sample_block")
    block = None if block is None else _sample_blocks(block, counts.shape[0], name)
    paths = get("paths")
    if get("x_1") is None and paths is None:
        raise ValueError(f"give the samples as {name('x_1')} [S, N1] or as node paths ("
                         f"{name('paths') if name.file is None else name('path_nodes') + ' / path_ptr'})")  # noqa: E501
    if get("x_1") is not None:
        x_1, block = _flows(get("x_1"), counts[:, 1], block, name, matrix)
    elif block is None:  # the paths give the samples: on the one block, or one per block
        one = len(counts) == 1
        block = np.zeros(paths[1].size - 1, np.int64) if one else np.arange(len(counts))
    if paths is not None:
        if paths[1].size - 1 != block.size:
            holds = (f"{name('x_1')} has" if get("x_1") is not None else
                     "cell_counts declares one sample per complex:")  # fmt: skip
            raise ValueError(f"{name('paths')} has {paths[1].size - 1} paths but {holds} "
                             f"{block.size} samples")
        from_paths = _path_flows(ops, counts, block, paths, name)  # every path must be a walk
        x_1 = from_paths if get("x_1") is None else x_1
    num = block.size
    if num == 0:
        raise ValueError(f"{name('x_1')} holds no samples (S = 0)")
    opt = {k: get(k) is not None for k in ("y", "sample_ids", "masks", "pos", *WEIGHTS)}
    return {
        "complex": ops, "counts": counts, "block": block, "x_1": x_1, "paths": paths,
        "y": _labels(get("y"), num, name("y")) if opt["y"] else None,
        "sample_ids": sample_ids(get("sample_ids"), num, name("sample_ids"))
        if opt["sample_ids"] else None,
        "masks": _masks(get("masks"), num, name) if opt["masks"] else None,
        "pos": _per_cell(get("pos"), ops.num_nodes, name("pos"), None) if opt["pos"] else None,
        **{k: _per_cell(get(k), ops.sizes[r], name(k), r) if opt[k] else None
           for r, k in enumerate(WEIGHTS)},
    }  # fmt: skip


def sample_parts(arrays: dict[str, np.ndarray], path: str, name: Names) -> dict[str, Any]:
    """The sample keys of a file, for :func:`checked`: paths checked and masks collected."""
    if ("path_nodes" in arrays) != ("path_ptr" in arrays):
        raise ValueError(f"'{path}' needs both path_nodes and path_ptr, or neither")
    masks = [k for k in SPLITS if f"{k}_mask" in arrays]
    return {
        **{k: arrays.get(k) for k in ("x_1", "y", "sample_ids", "sample_block", "pos",
                                      *WEIGHTS)},  # fmt: skip
        "paths": path_arrays(arrays["path_nodes"], arrays["path_ptr"], name)
        if "path_nodes" in arrays else None,
        "masks": {k: arrays[f"{k}_mask"] for k in masks} if masks else None,
    }


# ---------------------------------------------------------------------------- splits
def stratified_masks(labels: np.ndarray | None, num: int, ratio: Sequence[float], seed: int
                      ) -> dict[str, np.ndarray]:  # fmt: skip
    """Standard split: per class, ``round(ratio * n_c)`` validation and test samples, the rest
    training; unlabelled data all in the training split."""
    rng = np.random.default_rng(seed)
    out = {s: np.zeros(num, dtype=bool) for s in SPLITS}
    if labels is None:
        out["train"][:] = True
        return out
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        n_val, n_test = int(round(ratio[1] * members.size)), int(round(ratio[2] * members.size))
        out["val"][members[:n_val]] = True
        out["test"][members[n_val : n_val + n_test]] = True
        out["train"][members[n_val + n_test :]] = True
    return out


def resplit(labels: np.ndarray | None, standard: dict[str, np.ndarray], seed: int
             ) -> dict[str, np.ndarray]:  # fmt: skip
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

