r"""The ``.npz`` file of many complexes (one complex per sample): reading and writing.

The layout is that of a PyG ``Batch`` of :class:`~topo_contrastive.data.ComplexData`
samples, with ComplexData's attribute names as keys:

- ``cell_counts`` ``int [S, 3]``: :math:`(N_0, N_1, N_2)` of every sample;
- ``incidence_1_index`` ``int [2, 2 * sum N1]`` and ``incidence_1_value`` (``+-1``): the
  samples' :math:`\mathbf{B}_1` entries, rows and columns offset by the earlier samples'
  node and edge counts (block-diagonal, as ``Batch.from_data_list`` offsets them);
- ``incidence_2_index`` ``int [2, nnz]`` and ``incidence_2_value``: the samples'
  :math:`\mathbf{B}_2`, offset by the earlier samples' edge and 2-cell counts (may be
  absent where no sample has a 2-cell);
- ``x_1`` ``float [sum N1]``: every sample's edge flow, one after the other;
- ``y`` (optional) ``int [S]``: a label per sample; ``sample_ids`` (optional) ``[S]``;
- ``format`` = ``"topo_contrastive.complex_data"``, ``version`` = 1 (optional).

A file with the key ``cell_counts`` is read as this layout by every command that reads
``--data-file``; errors name the file and the key.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import InMemoryDataset

from topo_contrastive._utils.files import atomic_write, read_npz
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._edge_flow_samples import (
    Names,
    _check_labels,
    _check_sample_ids,
)

#: The ``format`` entry of a many-complex file.
MANY_FORMAT = "topo_contrastive.complex_data"
_VERSION = 1
#: The key that tells the layout apart from the one-complex edge-flow file.
LAYOUT_KEY = "cell_counts"
# the most nodes (summed over the samples) a file may declare, as for one complex
_MAX_NODES = 10**8
_KNOWN_KEYS = frozenset(
    {
        "cell_counts",
        "incidence_1_index",
        "incidence_1_value",
        "incidence_2_index",
        "incidence_2_value",
        "x_1",
        "y",
        "sample_ids",
        "format",
        "version",
    }
)
_BATCH_KEYS = (
    "incidence_1_index", "incidence_1_value", "incidence_2_index", "incidence_2_value",
    "cell_counts",
)  # fmt: skip
_REQUIRED = ("cell_counts", "incidence_1_index", "incidence_1_value", "x_1")


def is_many_complex_file(path: str | os.PathLike) -> bool:
    """Whether the ``.npz`` archive at ``path`` has the key ``cell_counts`` (the layout of
    many complexes); ``False`` for anything else, unreadable files included (the reader of
    the one-complex file then says what is wrong)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return f"{LAYOUT_KEY}.npy" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _shown(arr: np.ndarray) -> str:
    return f"dtype {arr.dtype} and shape {tuple(arr.shape)}"


def _check_counts(arr: np.ndarray, name: Names) -> np.ndarray:
    """``cell_counts``: integers ``[S, 3]``, S >= 1, non-negative, fitting int64 (each and
    summed), N1 >= 1 per sample, the summed node count at most :data:`_MAX_NODES`."""
    if arr.ndim != 2 or arr.shape[1:] != (3,) or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name('cell_counts')} must be an integer array [S, 3] (N0, N1, N2 of every "
            f"sample, S >= 1), got {_shown(arr)}"
        )
    big = np.iinfo(np.int64).max
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > big:
        s = int(np.argwhere(arr > big)[0, 0])
        raise ValueError(
            f"{name('cell_counts')} row {s} holds the size {int(arr[s].max())}, above the "
            f"largest int64 (2**63 - 1 = {big}): {arr[s].tolist()}"
        )
    counts = arr.astype(np.int64)
    if (counts < 0).any():
        s = int(np.argwhere(counts < 0)[0, 0])
        raise ValueError(
            f"{name('cell_counts')} row {s} holds a negative size: {counts[s].tolist()}"
        )
    totals = counts.sum(axis=0, dtype=object)  # Python ints: no wrap-around
    if max(totals) > big:
        k = int(np.argmax([t > big for t in totals]))
        raise ValueError(
            f"{name('cell_counts')} declares N{k} = {totals[k]} over all samples, above the "
            f"largest int64 (2**63 - 1)"
        )
    empty = np.flatnonzero(counts[:, 1] == 0)
    if empty.size:
        raise ValueError(
            f"{name('cell_counts')} row {int(empty[0])} declares no edge (N1 = 0); every "
            "sample needs at least one edge"
        )
    total = int(totals[0])
    if total > _MAX_NODES:
        raise ValueError(
            f"{name('cell_counts')} declares {total} nodes over all samples, above the limit "
            f"of {_MAX_NODES} (10^8)"
        )
    return counts


def _pair(arrays: dict[str, np.ndarray], k: int, name: Names) -> tuple[np.ndarray, np.ndarray]:
    """``incidence_k_index`` ``int [2, nnz]`` and ``incidence_k_value`` ``[nnz]`` of +-1."""
    ik, vk = f"incidence_{k}_index", f"incidence_{k}_value"
    if (ik in arrays) != (vk in arrays):
        missing = vk if ik in arrays else ik
        raise ValueError(f"'{name.file}' lacks the key '{missing}' (it goes with the other)")
    index, value = arrays[ik], arrays[vk]
    if index.ndim != 2 or index.shape[0] != 2 or index.dtype.kind not in "iu":
        raise ValueError(
            f"{name(ik)} must be an integer array [2, nnz] (rows and columns, offset by the "
            f"earlier samples' counts), got {_shown(index)}"
        )
    if value.shape != (index.shape[1],) or value.dtype.kind not in "iuf":
        raise ValueError(
            f"{name(vk)} must be a real array [nnz] = [{index.shape[1]}] (one value per entry "
            f"of {ik}), got {_shown(value)}"
        )
    if value.size and not np.isin(value, (-1, 1)).all():
        j = int(np.flatnonzero(~np.isin(value, (-1, 1)))[0])
        raise ValueError(
            f"{name(vk)} entry {j} is {value[j].item()!r}; incidence values are -1 or +1"
        )
    return index.astype(np.int64), value.astype(np.float64)


def _owners(index: np.ndarray, ends_rows: np.ndarray, ends_cols: np.ndarray, key: str,
            name: Names) -> np.ndarray:  # fmt: skip
    """The sample of every entry (by its column), checked to hold its row too: indices in
    range and block-diagonal."""
    rows, cols = index
    if index.size and (
        rows.min() < 0 or cols.min() < 0 or rows.max() >= ends_rows[-1]
        or cols.max() >= ends_cols[-1]
    ):  # fmt: skip
        raise ValueError(
            f"{name(key)} has an index outside [0, {int(ends_rows[-1])}) x [0, "
            f"{int(ends_cols[-1])}) (the summed counts of cell_counts)"
        )
    owner = np.searchsorted(ends_cols, cols, side="right") - 1
    row_owner = np.searchsorted(ends_rows, rows, side="right") - 1
    wrong = np.flatnonzero(owner != row_owner)
    if wrong.size:
        j = int(wrong[0])
        raise ValueError(
            f"{name(key)} entry {j} joins row {int(rows[j])} of sample {int(row_owner[j])} to "
            f"column {int(cols[j])} of sample {int(owner[j])}: each sample's entries must be "
            "offset by the earlier samples' counts (block-diagonal, as a PyG Batch holds them)"
        )
    return owner


def _flows(arr: np.ndarray, n1: int, name: Names) -> np.ndarray:
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n1:
        raise ValueError(
            f"{name('x_1')} must have shape [sum N1] = [{n1}] (every sample's edge flow, one "
            f"after the other), got shape {tuple(arr.shape)}"
        )
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name('x_1')} must hold real numbers, got dtype {arr.dtype}")
    wide = arr.astype(np.float64)
    bad = ~np.isfinite(wide) | (np.abs(wide) > float(np.finfo(np.float32).max))
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name('x_1')} entry {e} is {wide[e]:.3g}: flows must be finite and fit float32"
        )
    return wide.astype(np.float32)


def read_many_complexes(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a file of many complexes (module docstring).

    Every sample's complex is checked as
    :meth:`~topo_contrastive.ComplexOperators.from_incidence` checks one (signed
    incidences, ``B1 B2 = 0``, every 2-cell one simple cycle, no repeated edge or 2-cell),
    all samples at once on the block-diagonal incidences; an invalid sample is named. The
    samples are stored collated, as an ``InMemoryDataset`` stores them: reading takes no
    Python step per sample.

    Returns:
        A dict: ``"samples"``, the samples as an in-memory PyG dataset of ``ComplexData``
        (each on its own complex, ``x_1`` float32 ``[N1, 1]``, ``y`` int64 ``[1]`` where
        labelled; ``len``, indexing, slicing and iteration as a list, and a ``DataLoader``
        takes it; ``list(...)`` makes a list); ``"labels"``, int64 ``[S]`` or ``None``;
        ``"sample_ids"``, ``[S]`` or ``None``.

    Raises:
        ValueError: an unknown or missing key, a wrong ``format`` or ``version``, counts
            that do not add up (``2 * sum N1`` entries in ``incidence_1_index``, at least
            three per 2-cell in ``incidence_2_index``) or do not fit int64, indices outside
            their sample's block, a sample whose complex is invalid (named), flows or labels
            of the wrong length; the message names the file and the key.
        TypeError: non-real flows, non-integer labels.
    """
    content = _read(path)
    samples = InMemoryDataset(None, log=False)
    samples.data, samples.slices = content.pop("data"), content.pop("slices")
    return {"samples": samples, **content}


def _read(path: str | os.PathLike) -> dict[str, Any]:
    """The checked content of a many-complex file: ``"data"`` and ``"slices"`` (the
    collated storage of an ``InMemoryDataset`` of its samples), ``"labels"``,
    ``"sample_ids"``; raises as :func:`read_many_complexes`."""
    from topo_contrastive.data import ComplexData

    path = os.fspath(path)
    name = Names(path)
    arrays = read_npz(path, what="a many-complex file (write_many_complexes)")
    unknown = sorted(set(arrays) - _KNOWN_KEYS)
    if unknown:
        raise ValueError(
            f"'{path}' has the unknown key(s) {unknown}; the keys of the many-complex layout "
            f"are {sorted(_KNOWN_KEYS)}"
        )
    missing = [k for k in _REQUIRED if k not in arrays]
    if missing:
        raise ValueError(
            f"'{path}' lacks the key(s) {missing}: a many-complex file needs "
            f"{list(_REQUIRED)} (and incidence_2_index / incidence_2_value where there are "
            "2-cells)"
        )
    fmt = arrays.get("format")
    if fmt is not None and (fmt.shape != () or str(fmt) != MANY_FORMAT):
        raise ValueError(f"{name('format')} must be the string {MANY_FORMAT!r}")
    ver = arrays.get("version")
    if ver is not None and (ver.shape != () or ver.dtype.kind not in "iu" or int(ver) != _VERSION):
        raise ValueError(f"{name('version')} must be the integer {_VERSION}")
    counts = _check_counts(arrays["cell_counts"], name)
    S = counts.shape[0]
    ends = [np.concatenate([[0], np.cumsum(counts[:, r])]) for r in range(3)]
    i1, v1 = _pair(arrays, 1, name)
    if i1.shape[1] != 2 * ends[1][-1]:
        raise ValueError(
            f"{name('incidence_1_index')} has {i1.shape[1]} entries but cell_counts declares "
            f"sum N1 = {int(ends[1][-1])} edges: every edge needs exactly two (expected "
            f"{2 * int(ends[1][-1])})"
        )
    if "incidence_2_index" in arrays or "incidence_2_value" in arrays:
        i2, v2 = _pair(arrays, 2, name)
    else:
        i2, v2 = np.zeros((2, 0), dtype=np.int64), np.zeros(0)
    if i2.shape[1] < 3 * ends[2][-1]:
        what = "incidence_2_index has" if i2.shape[1] else "no incidence_2_index:"
        raise ValueError(
            f"'{path}': {what} {i2.shape[1]} entries but cell_counts declares sum N2 = "
            f"{int(ends[2][-1])} 2-cells, each needing at least three"
        )
    _owners(i1, ends[0], ends[1], "incidence_1_index", name)
    _owners(i2, ends[1], ends[2], "incidence_2_index", name)
    flows = _flows(arrays["x_1"], int(ends[1][-1]), name)
    labels = None if "y" not in arrays else _check_labels(arrays["y"], S, name("y"))
    ids = arrays.get("sample_ids")
    ids = None if ids is None else _check_sample_ids(ids, S, name("sample_ids"))
    ops = _checked_complex(path, ends, (i1, v1), (i2, v2))
    store: dict[str, torch.Tensor] = {}
    slices: dict[str, torch.Tensor] = {}
    for k, mat in ((1, ops.B1), (2, ops.B2)):  # row-major per sample, as from_complex
        rows = np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))
        owner = np.searchsorted(ends[k - 1], rows, side="right") - 1
        local = np.stack([rows - ends[k - 1][owner], mat.indices - ends[k][owner]])
        store[f"incidence_{k}_index"] = torch.from_numpy(local.astype(np.int64))
        store[f"incidence_{k}_value"] = torch.from_numpy(mat.data.astype(np.float32))
        cut = torch.from_numpy(np.searchsorted(owner, np.arange(S + 1)).astype(np.int64))
        slices[f"incidence_{k}_index"] = slices[f"incidence_{k}_value"] = cut
    store["cell_counts"] = torch.from_numpy(counts)
    store["x_1"] = torch.from_numpy(flows).view(-1, 1)
    slices["cell_counts"] = torch.arange(S + 1)
    slices["x_1"] = torch.from_numpy(ends[1].astype(np.int64))
    if labels is not None:
        store["y"] = torch.from_numpy(np.asarray(labels, dtype=np.int64))
        slices["y"] = torch.arange(S + 1)
    data = ComplexData(num_nodes=int(ends[0][-1]), **store)
    data._store._num_nodes = counts[:, 0].tolist()  # PyG's per-sample node counts
    return {"data": data, "slices": slices, "labels": labels, "sample_ids": ids}


def _checked_complex(path: str, ends: list[np.ndarray], *pairs: tuple[np.ndarray, np.ndarray]
                     ) -> ComplexOperators:  # fmt: skip
    """The block-diagonal complex of all samples, checked at once: the checks of
    :meth:`ComplexOperators.from_incidence` hold for a block-diagonal complex exactly when
    they hold for every block. When they fail, the first invalid sample is found by halving
    the range of samples and named with its own error."""
    mats = [
        sp.csr_matrix((v, (i[0], i[1])), shape=(int(ends[k][-1]), int(ends[k + 1][-1])))
        for k, (i, v) in enumerate(pairs)
    ]

    def check(lo: int, hi: int) -> ComplexOperators:  # the samples lo..hi-1
        e0, e1, e2 = ((int(e[lo]), int(e[hi])) for e in ends)
        b2 = mats[1][e1[0] : e1[1], e2[0] : e2[1]] if e2[1] > e2[0] else None
        return ComplexOperators.from_incidence(mats[0][e0[0] : e0[1], e1[0] : e1[1]], b2)

    lo, hi = 0, len(ends[0]) - 1
    try:
        return check(lo, hi)
    except ValueError as err:
        first = err
    while hi - lo > 1:  # [lo, hi) holds an invalid sample
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
    raise ValueError(f"'{path}': {first}") from None  # pragma: no cover - blocks are independent


def write_many_complexes(
    path: str | os.PathLike,
    samples: Iterable[Any],
    sample_ids: Sequence[Any] | np.ndarray | None = None,
) -> None:
    """Write samples on complexes of their own as one many-complex ``.npz`` file (module
    docstring), atomically (the folder is made).

    The arrays are those of the samples' PyG ``Batch`` (``Batch.from_data_list``): the
    incidences offset block-diagonally, ``cell_counts`` ``[S, 3]``, ``x_1`` ``[sum N1]``
    and ``y`` ``[S]`` where every sample has a label.

    Args:
        path: the ``.npz`` file.
        samples: :class:`~topo_contrastive.data.ComplexData`, each on its own complex
            (:meth:`~topo_contrastive.data.ComplexData.from_complex`), with ``x_1``
            ``[N1, 1]`` (or ``[N1]``) and, on every sample or on none, one label ``y``; a
            dataset of them (e.g. :class:`~topo_contrastive.datasets.RandomComplexTrajectories`)
            works too.
        sample_ids: ``[S]`` integer or string ids stored with the samples (default none).

    Raises:
        TypeError: a sample that is not a ComplexData; a ``Batch`` or a single sample as
            ``samples`` (the message says what to pass: ``batch.to_data_list()``).
        ValueError: no sample; a sample on the shared complex (no incidences), without
            ``x_1`` or with several channels; labels on some samples only, or not one per
            sample; ``sample_ids`` of another length.
    """
    from torch_geometric.data import Batch

    from topo_contrastive.data import ComplexData

    if isinstance(samples, ComplexData):  # a Batch of them, or one sample
        batch = isinstance(samples, Batch)
        what = "a Batch of many samples" if batch else "one ComplexData sample"
        give = "batch.to_data_list()" if batch else "[sample]"
        raise TypeError(
            f"`samples` is {what}; expected a list (or dataset) of ComplexData samples, each "
            f"on its own complex: pass {give}"
        )
    data = list(samples)
    if not data:
        raise ValueError("`samples` is empty: give at least one ComplexData")
    rows = []
    for i, d in enumerate(data):
        if not isinstance(d, ComplexData):
            raise TypeError(f"`samples`[{i}] must be a ComplexData, got {type(d).__name__}")
        if d.is_shared:
            raise ValueError(
                f"`samples`[{i}] lies on the shared complex (no incidences of its own): build "
                "it with ComplexData.from_complex"
            )
        x = d["x_1"] if "x_1" in d.keys() else None  # noqa: SIM118 - Data API
        n1 = int(d.num_cells(1).sum())
        if x is None or x.numel() != n1:
            raise ValueError(
                f"`samples`[{i}] must hold `x_1` with N1 = {n1} entries (one flow value per "
                f"edge), got {None if x is None else tuple(x.shape)}"
            )
        keep = {k: d[k] for k in _BATCH_KEYS}
        y = getattr(d, "y", None)
        if y is not None:
            if y.numel() != 1:
                raise ValueError(f"`samples`[{i}] has {y.numel()} labels `y`; expected one")
            keep["y"] = y.reshape(1)
        rows.append(ComplexData(x_1=x.reshape(-1, 1), num_nodes=d.num_nodes, **keep))
    labelled = ["y" in r.keys() for r in rows]  # noqa: SIM118 - Data API
    if any(labelled) and not all(labelled):
        raise ValueError(
            f"`samples`[{labelled.index(not labelled[0])}]: labels `y` on some samples only; "
            "give every sample a label, or none"
        )
    batch = Batch.from_data_list(rows)
    arrays: dict[str, np.ndarray] = {"format": np.array(MANY_FORMAT), "version": np.array(_VERSION)}
    for key in ("cell_counts", "incidence_1_index", "incidence_2_index"):
        arrays[key] = batch[key].detach().cpu().numpy().astype(np.int64)
    for key in ("incidence_1_value", "incidence_2_value"):
        arrays[key] = batch[key].detach().cpu().numpy().astype(np.int8)
    arrays["x_1"] = batch.x_1.detach().cpu().numpy().reshape(-1)
    if all(labelled):
        arrays["y"] = batch.y.detach().cpu().numpy().reshape(-1)
    if sample_ids is not None:
        arrays["sample_ids"] = _check_sample_ids(sample_ids, len(rows), "`sample_ids`")
    os.makedirs(os.path.dirname(os.path.abspath(os.fspath(path))), exist_ok=True)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)

    atomic_write(path, write)


class ManyComplexFlows(InMemoryDataset):
    r"""The samples of a many-complex ``.npz`` file (module docstring) as an in-memory PyG
    dataset of :class:`~topo_contrastive.data.ComplexData`, each on its own complex: a
    ``DataLoader`` batch is one complex with block-diagonal operators
    (``batch.laplacians()``, pooled by ``batch.batch_1``). The file is only read.

    Args:
        file (str): the ``.npz`` file (:func:`write_many_complexes`).
        split_ratio (tuple[float, float, float]): train / validation / test fractions of the
            standard split, stratified by label (default ``(0.6, 0.2, 0.2)``; unlabelled
            data: every sample in the training split).
        split_seed (int): seed of the standard split (default ``0``).
        transform: as PyG's ``InMemoryDataset``.

    Attributes:
        file: the file read; ``labels``: ``int64 [S]`` label values or ``None``;
        ``sample_ids``: ``[S]`` or ``None``.

    Raises:
        ValueError / TypeError: as :func:`read_many_complexes` (naming the file and key);
            ``split_ratio`` not three non-negative fractions summing to 1.
    """

    def __init__(
        self,
        file: str | os.PathLike,
        split_ratio: tuple[float, float, float] = (0.6, 0.2, 0.2),
        split_seed: int = 0,
        transform: Any = None,
    ) -> None:
        from topo_contrastive._utils.checks import check_int
        from topo_contrastive.datasets.edge_flows import _stratified_masks

        ratio = tuple(float(r) for r in split_ratio)
        if len(ratio) != 3 or min(ratio) < 0 or not np.isclose(sum(ratio), 1.0):
            raise ValueError(
                "`split_ratio` must be three non-negative fractions (train, val, test) summing "
                f"to 1, got {tuple(split_ratio)}"
            )
        super().__init__(None, transform, log=False)
        content = _read(file)  # the collated storage, built at once (no sample objects)
        self.file = os.fspath(file)
        self.labels = content["labels"]
        self.sample_ids = content["sample_ids"]
        self.data, self.slices = content["data"], content["slices"]
        seed = check_int(split_seed, "split_seed", 0)
        num = int(self.slices["cell_counts"].numel() - 1)
        self._standard = _stratified_masks(self.labels, num, ratio, seed)

    def split(self, seed: int | None = None) -> dict[str, torch.Tensor]:
        """The standard split (``seed=None``) or a random re-split with its per-class sizes:
        ``{"train", "val", "test"}`` masks, ``bool [S]`` each.

        Raises:
            TypeError / ValueError: ``seed`` is not ``None`` or a non-negative int.
        """
        from topo_contrastive._utils.checks import check_int
        from topo_contrastive.datasets.edge_flows import _resplit

        if seed is None:
            full = self._standard
        else:
            full = _resplit(self.labels, self._standard, check_int(seed, "seed", 0))
        return {k: torch.from_numpy(v.copy()) for k, v in full.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, file={os.path.basename(self.file)!r})"
