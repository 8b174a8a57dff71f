"""Where the ocean drifter task comes from: the shipped arrays or the raw ``dataBuoys.jld2``.

The task (133 nodes, 320 edges, 186 triangles, 200 drifter paths, labels and the standard
split) ships with the package as ``datasets/data/ocean_drifters.npz`` (provenance, licence and
processing steps in ``datasets/data/ocean_drifters.PROVENANCE.md``), so that
:class:`~topo_contrastive.datasets.OceanDrifters` needs no file and no network. The raw file of
the source repository can still be read (:func:`read_raw`); it gives exactly the shipped arrays
(checked in CI with the original file).

Processing (Schaub et al. 2020, §5; the published procedure, :func:`build_task`):

1. complex from ``elist`` / ``tlist`` (1-based in the file), edges oriented low -> high;
2. paths from ``TrajectoriesNodes``: remove immediate back-and-forth steps (a node equal to the
   one two places back pops the last node), keep paths with at least 5 nodes, drop the last node
   of a path that ends where it started;
3. label: orientation of the triple (centre, first node, last node), centre ``(mean x - 0.03,
   mean y)`` of ``HexcentersXY``;
4. standard split: ``numpy.random.seed(1)``, shuffle a mask of 160 ones followed by 40 zeros.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topo_contrastive._utils.extras import require_extra
from topo_contrastive._utils.files import atomic_write, read_npz, sha256_of

#: The original ``dataBuoys.jld2`` (``nglaze00/SCoNe_GCN``, MIT licence).
RAW_URL = (
    "https://raw.githubusercontent.com/nglaze00/SCoNe_GCN/"
    "35cf6bfa75eaf3cae5635729ccdf15d17a6177c7/ocean_drifters_data/dataBuoys.jld2"
)
RAW_SHA256 = "4b312f54fb451d989629b5330cd4633c61f23dc90ea7e1bff6e6fb00a3ed5caa"
RAW_SIZE = 3_684_908

#: The processed task shipped as package data, and its sha256 (checked on every read).
SHIPPED_FILE = Path(__file__).resolve().parent / "data" / "ocean_drifters.npz"
SHIPPED_SHA256 = "01c83b12b93d55b25d7ae1d95f5ee79268f02482c20378b2269a58963cd858f7"

NUM_TRAIN, NUM_TEST, SPLIT_SEED, MIN_PATH_NODES = 160, 40, 1, 5
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_RAW_KEYS = ("elist", "tlist", "HexcentersXY", "TrajectoriesNodes")
_SHIPPED_KEYS = ("edges", "triangles", "pos", "path_nodes", "path_ptr", "labels", "train_mask")


@dataclass(frozen=True)
class OceanArrays:
    """The ocean drifter task as plain arrays.

    Attributes:
        edges: ``int64 [N1, 2]``, 0-based node ids in the raw file's order (each row ``u < v``;
            the dataset's complex sorts them, oriented ``u -> v``).
        triangles: ``int64 [N2, 3]``, 0-based, in the raw file's order.
        pos: ``float64 [N0, 2]``, hexagon centres (lon, lat in radians).
        paths: the node path of every sample (``int64 [L_i]`` each, 0-based).
        labels: ``int64 [S]``, 0 or 1.
        train_mask: ``bool [S]``, the standard split (the rest is the test split).
    """

    edges: np.ndarray
    triangles: np.ndarray
    pos: np.ndarray
    paths: list[np.ndarray]
    labels: np.ndarray
    train_mask: np.ndarray

    def equals(self, other: OceanArrays) -> bool:
        """Whether both hold exactly the same values (dtype-independent integer compare)."""
        return (
            all(
                np.array_equal(getattr(self, k), getattr(other, k))
                for k in ("edges", "triangles", "pos", "labels", "train_mask")
            )
            and len(self.paths) == len(other.paths)
            and all(np.array_equal(a, b) for a, b in zip(self.paths, other.paths, strict=True))
        )


def remove_backtracks(nodes: np.ndarray) -> list[int]:
    """Drop immediate back-and-forth steps: a node equal to the one two places back pops."""
    out: list[int] = []
    for node in np.asarray(nodes).tolist():
        if len(out) >= 2 and out[-2] == node:
            out.pop()
        else:
            out.append(node)
    return out


def legacy_split(seed: int, num_samples: int) -> np.ndarray:
    """``numpy.random.seed(seed)``; shuffle 160 ones then 40 zeros (the global RNG untouched).

    Returns:
        ``bool [200]``: the training mask.

    Raises:
        ValueError: ``num_samples`` is not 200.
    """
    mask = np.array([1] * NUM_TRAIN + [0] * NUM_TEST)
    if mask.size != num_samples:
        raise ValueError(f"the ocean drifter task has {mask.size} paths, got {num_samples}")
    np.random.RandomState(seed).shuffle(mask)
    return mask == 1


def build_task(
    edges: np.ndarray, triangles: np.ndarray, pos: np.ndarray, trajectories: list[np.ndarray]
) -> OceanArrays:
    """The published procedure (module docstring, steps 2-4) on 0-based raw arrays.

    Args:
        edges: ``[N1, 2]`` edges in the file's order (0-based); kept as given.
        triangles: ``[N2, 3]`` triangles in the file's order (0-based); kept as given.
        pos: ``float64 [N0, 2]`` node coordinates.
        trajectories: raw node sequences (0-based).

    Raises:
        ValueError: the procedure does not give 200 paths (not the ocean drifter file).
    """
    paths = []
    for nodes in trajectories:
        path = remove_backtracks(nodes)
        if len(path) < MIN_PATH_NODES:
            continue
        if path[0] == path[-1]:
            path = path[:-1]
        paths.append(np.asarray(path, dtype=np.int64))
    centre = np.array([pos[:, 0].mean() - 0.03, pos[:, 1].mean()])
    first = pos[[int(p[0]) for p in paths]]  # [S, 2]
    last = pos[[int(p[-1]) for p in paths]]  # [S, 2]
    turn = (first[:, 1] - centre[1]) * (last[:, 0] - first[:, 0]) - (
        first[:, 0] - centre[0]
    ) * (last[:, 1] - first[:, 1])
    return OceanArrays(
        edges=np.asarray(edges, dtype=np.int64),
        triangles=np.asarray(triangles, dtype=np.int64),
        pos=np.asarray(pos, dtype=np.float64),
        paths=paths,
        labels=np.where(turn > 0, 0, 1).astype(np.int64),
        train_mask=legacy_split(SPLIT_SEED, len(paths)),
    )


def read_raw(path: str | os.PathLike) -> OceanArrays:
    """Read a ``dataBuoys.jld2`` (HDF5 with a 512-byte user block, 1-based indices) and build
    the task from it with :func:`build_task`. The file's sha256 is **not** checked here
    (:class:`~topo_contrastive.datasets.OceanDrifters` checks it first).

    Raises:
        ValueError: the file is not HDF5, lacks one of ``elist``, ``tlist``, ``HexcentersXY``,
            ``TrajectoriesNodes``, or does not give the 200 paths of the task.
    """
    require_extra("h5py", "reading the original ocean drifter file")
    import h5py

    path = os.fspath(path)
    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise ValueError(f"'{path}' is not an HDF5/JLD2 file ({err})") from err
    with f:
        missing = [k for k in _RAW_KEYS if k not in f]
        if missing:
            raise ValueError(
                f"'{path}' is not the ocean drifter file: it has no {', '.join(missing)} "
                f"(expected the keys {', '.join(_RAW_KEYS)})"
            )
        edges = f["elist"][()].T - 1  # [N1, 2], 0-based
        triangles = f["tlist"][()].T - 1  # [N2, 3]
        centres = f["HexcentersXY"][()]
        pos = np.stack([centres[name] for name in centres.dtype.names], axis=1)  # [N0, 2]
        trajectories = [
            np.array([f[r][()] for r in f[ref][()]], dtype=np.int64) - 1
            for ref in f["TrajectoriesNodes"][()]
        ]
    return build_task(edges, triangles, pos, trajectories)


def save_arrays(arrays: OceanArrays, path: str | os.PathLike) -> None:
    """Write the compact form shipped as package data (``np.savez_compressed``, atomically).

    Node ids are ``int16`` and offsets ``int32`` (the task has 133 nodes); :func:`load_shipped`
    widens them back to ``int64``.
    """
    lengths = np.array([len(p) for p in arrays.paths], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    fields = {
        "edges": arrays.edges.astype(np.int16),
        "triangles": arrays.triangles.astype(np.int16),
        "pos": arrays.pos.astype(np.float64),
        "path_nodes": np.concatenate(arrays.paths).astype(np.int16),
        "path_ptr": ptr,
        "labels": arrays.labels.astype(np.int8),
        "train_mask": arrays.train_mask.astype(bool),
    }

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **fields)

    atomic_write(path, write)


def load_shipped(path: str | os.PathLike | None = None, sha256: str | None = None) -> OceanArrays:
    """Read the shipped task, after checking its sha256.

    Args:
        path: the ``.npz`` file (default ``None``: the package's own, :data:`SHIPPED_FILE`).
        sha256: expected digest (default :data:`SHIPPED_SHA256`).

    Raises:
        ValueError: the file is missing, or its sha256 differs (a corrupted or edited
            installation: the message names the file and both digests), or it lacks a field.
    """
    path = Path(SHIPPED_FILE if path is None else path)
    expected = SHIPPED_SHA256 if sha256 is None else sha256
    if not path.is_file():
        raise ValueError(
            f"the shipped ocean drifter data '{path}' is missing: the installation of "
            "topo_contrastive is incomplete; reinstall the package"
        )
    digest = sha256_of(path)
    if digest != expected:
        raise ValueError(
            f"the shipped ocean drifter data '{path}' is corrupted: its sha256 is {digest}, "
            f"expected {expected}; reinstall the package (or build the task from the original "
            "dataBuoys.jld2 with --ocean-raw)"
        )
    z = read_npz(path, what="the shipped ocean drifter task")
    missing = [k for k in _SHIPPED_KEYS if k not in z]
    if missing:
        raise ValueError(f"the shipped ocean drifter data '{path}' has no {missing}")
    ptr = z["path_ptr"].astype(np.int64)
    nodes = z["path_nodes"].astype(np.int64)
    return OceanArrays(
        edges=z["edges"].astype(np.int64),
        triangles=z["triangles"].astype(np.int64),
        pos=z["pos"].astype(np.float64),
        paths=[nodes[ptr[i] : ptr[i + 1]] for i in range(ptr.size - 1)],
        labels=z["labels"].astype(np.int64),
        train_mask=z["train_mask"].astype(bool),
    )


def check_raw_file(path: str | os.PathLike, sha256: str = RAW_SHA256, size: int = RAW_SIZE) -> None:
    """Raise a ``ValueError`` naming ``path`` unless it is the original file (its sha256).

    The message says whether the file is truncated, not HDF5/JLD2, or another version.
    """
    path = os.fspath(path)
    digest = sha256_of(path)
    if digest == sha256:
        return
    actual = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(512 + len(_HDF5_SIGNATURE))
    if actual < size:
        what = f"truncated or incomplete ({actual:,} bytes, expected {size:,})"
    elif _HDF5_SIGNATURE not in (head[:8], head[512:]):
        what = "not an HDF5/JLD2 file"
    else:
        what = "corrupted or a different version"
    raise ValueError(f"'{path}' is {what}: its sha256 is {digest}, expected {sha256}.")
