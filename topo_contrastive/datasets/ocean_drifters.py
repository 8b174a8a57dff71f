"""Ocean drifters around Madagascar (paper §5; Schaub et al. 2020, §5)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable

import numpy as np
import torch
from torch_geometric.data import download_url

from topo_contrastive.complex import SimplicialOperators
from topo_contrastive.datasets._base import EdgeFlowDataset, sha256_of

__all__ = ["OceanDrifters"]

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _remove_backtracks(nodes: np.ndarray) -> list[int]:
    """Drop immediate back-and-forth steps: a node equal to the one two places back pops."""
    out: list[int] = []
    for node in nodes.tolist():
        if len(out) >= 2 and out[-2] == node:
            out.pop()
        else:
            out.append(node)
    return out


class OceanDrifters(EdgeFlowDataset):
    r"""Ocean drifter trajectories around Madagascar (paper §5; Schaub et al. 2020, §5).

    Global Drifter Program buoy tracks discretised on a hexagonal grid: 133 nodes
    (hexagon centres), 320 edges and 186 filled triangles; Madagascar and an
    unfilled cell leave two holes, so the Hodge 1-Laplacian has a 2-dimensional
    kernel. Each of the 200 samples is the edge flow of one drifter path,
    labelled by whether it passes the island clockwise or counter-clockwise.

    Built from the original ``dataBuoys.jld2`` (read with h5py; indices there are
    1-based) exactly as the published procedure:

    1. complex from ``elist`` / ``tlist``, edges oriented low -> high;
    2. paths from ``TrajectoriesNodes``: remove immediate back-and-forth steps
       (a node equal to the one two places back pops the last node), keep paths
       with at least 5 nodes (200 remain), drop the last node of a path that ends
       where it started;
    3. flow: every step :math:`a \to b` adds :math:`+1` to edge :math:`(a, b)` if
       :math:`a < b`, else :math:`-1` (accumulated), via
       :meth:`SimplicialOperators.path_to_flow`;
    4. label: orientation of the triple (centre, first node, last node) with
       centre :math:`c = (\bar x - 0.03, \bar y)` of ``HexcentersXY``:

       .. math::
           y = \begin{cases} 0 & (p_y - c_y)(q_x - p_x) - (p_x - c_x)(q_y - p_y) > 0
           \\ 1 & \text{otherwise} \end{cases}

       for first node :math:`p` and last node :math:`q` (110 of label 0, 90 of
       label 1);
    5. standard split: ``numpy.random.seed(1)`` then shuffle a mask of 160 ones
       followed by 40 zeros: 160 train / 40 test. There is **no validation
       split** in the paper's protocol: ``val_mask`` is all ``False``.

    :meth:`split` with a seed ``s`` repeats step 5 with
    ``numpy.random.RandomState(s)`` (so ``split(1)`` is the standard split); it is
    not stratified, like the standard split.

    **Where the raw file is read from.** ``root/raw/dataBuoys.jld2`` if present,
    else ``root/dataBuoys.jld2`` if present (e.g. a read-only shared data folder;
    then ``processed_dir`` must be given, so nothing is written beside the data),
    else the file is downloaded from its public source (MIT-licensed,
    ``nglaze00/SCoNe_GCN``) into ``root/raw``. Its sha256 is checked before
    processing (and after a download). The processed file
    (``processed_dir/ocean_drifters.pt``, by default ``root/processed``) holds only
    tensors, ints and strings, loads with ``weights_only=True`` and is written
    atomically (temporary file + ``os.replace``); it records the ``pre_transform`` it was
    built with, and re-opening it with another one raises (PyG only warns) unless
    ``force_reload=True``. Temporaries left in ``raw/`` or ``processed/`` by a killed
    process are removed on the next open.

    Each sample is ``Data(x_1=float32 [320, 1], y=int64 [1])``.

    Args:
        root: dataset folder (see above).
        transform: PyG transform applied on access (default ``None``).
        pre_transform: PyG transform applied once before saving (default ``None``);
            recorded in the processed file (by its ``repr``, a function by its name).
        force_reload: re-process even if the processed file exists (default ``False``);
            needed to change the ``pre_transform`` of an existing processed file.
        processed_dir: folder for the processed file (default ``None``:
            ``root/processed``). Required when ``root`` holds ``dataBuoys.jld2``
            directly.
        log: print progress to stderr (default ``True``).

    Shapes:
        - **x_1**: ``[320, 1]`` per sample; ``[B * 320, 1]`` in a DataLoader batch.
        - **y**: ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        ValueError: the raw file's sha256 does not match (a truncated, corrupted
            or non-HDF5 file), ``root`` holds the file directly but no
            ``processed_dir`` was given, ``processed_dir`` cannot be written, or the
            processed file was built with another ``pre_transform`` (and
            ``force_reload=False``).
        FileNotFoundError: no local file and the download failed (no network).
    """

    url = (
        "https://raw.githubusercontent.com/nglaze00/SCoNe_GCN/"
        "35cf6bfa75eaf3cae5635729ccdf15d17a6177c7/ocean_drifters_data/dataBuoys.jld2"
    )
    sha256 = "4b312f54fb451d989629b5330cd4633c61f23dc90ea7e1bff6e6fb00a3ed5caa"
    file_size = 3_684_908
    num_train = 160
    num_test = 40
    split_seed = 1

    def __init__(
        self,
        root: str,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        processed_dir: str | None = None,
        log: bool = True,
    ) -> None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a folder path (str), got {type(root).__name__}")
        if processed_dir is not None and not isinstance(processed_dir, (str, os.PathLike)):
            raise TypeError(
                f"`processed_dir` must be a folder path (str) or None, got "
                f"{type(processed_dir).__name__}"
            )
        root = os.path.expanduser(os.fspath(root))
        if processed_dir is None:
            in_raw = os.path.isfile(os.path.join(root, "raw", "dataBuoys.jld2"))
            if not in_raw and os.path.isfile(os.path.join(root, "dataBuoys.jld2")):
                raise ValueError(
                    f"`root`={root!r} holds dataBuoys.jld2 directly (a data folder that is "
                    "left untouched); pass `processed_dir=` a writable folder for the processed "
                    f"file, or put the file in '{os.path.join(root, 'raw')}'"
                )
            processed_dir = os.path.join(root, "processed")
        self._processed_dir = os.path.abspath(os.path.expanduser(os.fspath(processed_dir)))
        self.force_reload = force_reload
        if force_reload or not os.path.isfile(self._processed_path()):
            try:
                os.makedirs(self._processed_dir, exist_ok=True)
                writable = os.access(self._processed_dir, os.W_OK)
            except OSError:
                writable = False
            if not writable:
                raise ValueError(
                    f"`processed_dir` {self._processed_dir!r} cannot be written; pass "
                    "`processed_dir=` a writable folder"
                )
        super().__init__(
            root,
            transform=transform,
            pre_transform=pre_transform,
            force_reload=force_reload,
            log=log,
        )

    # ------------------------------------------------------------------ folders
    @property
    def raw_dir(self) -> str:
        in_raw = os.path.join(self.root, "raw")
        if not os.path.isfile(os.path.join(in_raw, "dataBuoys.jld2")) and os.path.isfile(
            os.path.join(self.root, "dataBuoys.jld2")
        ):
            return self.root
        return in_raw

    @property
    def processed_dir(self) -> str:
        return self._processed_dir

    @property
    def raw_file_names(self) -> list[str]:
        return ["dataBuoys.jld2"]

    @property
    def processed_file_names(self) -> list[str]:
        return ["ocean_drifters.pt"]

    def _processed_path(self) -> str:
        return os.path.join(self._processed_dir, "ocean_drifters.pt")

    # ------------------------------------------------------------------ raw file
    def _where(self) -> str:
        return (
            f"Put the original file at '{os.path.join(self.root, 'raw', 'dataBuoys.jld2')}' "
            f"(sha256 {self.sha256}, {self.file_size:,} bytes; public at {self.url})."
        )

    def _check_raw(self, path: str) -> None:
        """Raise ``ValueError`` unless ``path`` is the original file (sha256)."""
        digest = sha256_of(path)
        if digest == self.sha256:
            return
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(512 + len(_HDF5_SIGNATURE))
        if size < self.file_size:
            what = f"truncated or incomplete ({size:,} bytes, expected {self.file_size:,})"
        elif _HDF5_SIGNATURE not in (head[:8], head[512:]):
            what = "not an HDF5/JLD2 file"
        else:
            what = "corrupted or a different version"
        raise ValueError(
            f"'{path}' is {what}: its sha256 is {digest}, expected {self.sha256}. "
            + self._where()
        )

    def download(self) -> None:
        if not self.force_reload and os.path.isfile(self._processed_path()):
            return  # the processed file is there; the raw file is not needed
        target = os.path.join(self.raw_dir, "dataBuoys.jld2")
        # named like atomic_write's temporaries, so a killed download's folder is removed later
        prefix = f".download.{os.getpid()}."
        tmp_dir = tempfile.mkdtemp(dir=self.raw_dir, prefix=prefix, suffix=".tmp")
        try:
            try:
                tmp = download_url(self.url, tmp_dir, log=self.log, filename="dataBuoys.jld2")
            except Exception as err:  # URLError, HTTPError, OSError, ...
                raise FileNotFoundError(
                    f"dataBuoys.jld2 was not found locally and could not be downloaded "
                    f"({type(err).__name__}: {err}). " + self._where()
                ) from err
            self._check_raw(tmp)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)

    # ------------------------------------------------------------------ processing
    def process(self) -> None:
        import h5py

        raw_path = self.raw_paths[0]
        self._check_raw(raw_path)
        with h5py.File(raw_path, "r") as f:
            edges = f["elist"][()].T - 1  # [320, 2], 0-based
            triangles = f["tlist"][()].T - 1  # [186, 3]
            centres = f["HexcentersXY"][()]
            pos = np.stack([centres[name] for name in centres.dtype.names], axis=1)  # [133, 2]
            raw_paths = [
                np.array([f[r][()] for r in f[ref][()]], dtype=np.int64) - 1
                for ref in f["TrajectoriesNodes"][()]
            ]
        ops = SimplicialOperators.from_simplices(edges, triangles, pos.shape[0])
        paths = []
        for nodes in raw_paths:
            path = _remove_backtracks(nodes)
            if len(path) < 5:
                continue
            if path[0] == path[-1]:
                path = path[:-1]
            paths.append(path)
        centre = np.array([pos[:, 0].mean() - 0.03, pos[:, 1].mean()])
        first = pos[[p[0] for p in paths]]  # [S, 2]
        last = pos[[p[-1] for p in paths]]  # [S, 2]
        turn = (first[:, 1] - centre[1]) * (last[:, 0] - first[:, 0]) - (
            first[:, 0] - centre[0]
        ) * (last[:, 1] - first[:, 1])
        labels = torch.from_numpy(np.where(turn > 0, 0, 1))
        flows = torch.stack([ops.path_to_flow(p) for p in paths])  # [S, N1]
        masks = self._legacy_split(self.split_seed, len(paths))
        obj = self._build_processed(flows, labels, ops, pos, paths, masks)
        self._save_processed(obj)

    def _legacy_split(self, seed: int, num_samples: int) -> dict[str, torch.Tensor]:
        # numpy.random.seed(seed); numpy.random.shuffle(mask), without touching the global RNG.
        mask = np.array([1] * self.num_train + [0] * self.num_test)
        if mask.size != num_samples:
            raise ValueError(
                f"the raw file gave {num_samples} paths, expected {mask.size}. " + self._where()
            )
        np.random.RandomState(seed).shuffle(mask)
        train = torch.from_numpy(mask == 1)
        return {"train": train, "val": torch.zeros_like(train), "test": ~train}

    def _split_full(self, seed: int) -> dict[str, torch.Tensor]:
        return self._legacy_split(seed, self._masks["train"].numel())
