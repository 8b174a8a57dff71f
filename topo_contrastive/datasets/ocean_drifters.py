"""Ocean drifters around Madagascar (paper §5; Schaub et al. 2020, §5)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

import numpy as np
import torch
from torch_geometric.data import download_url

from topo_contrastive._utils.checks import check_bool
from topo_contrastive._utils.files import temporary_name
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets import _ocean_source as source
from topo_contrastive.datasets._file import content_of
from topo_contrastive.datasets.edge_flows import EdgeFlows


class OceanDrifters(EdgeFlows):
    r"""Ocean drifter trajectories around Madagascar (paper §5; Schaub et al. 2020, §5).

    Global Drifter Program buoy tracks discretised on a hexagonal grid: 133 nodes
    (hexagon centres), 320 edges and 186 filled triangles; Madagascar and an
    unfilled cell leave two holes, so the Hodge 1-Laplacian has a 2-dimensional
    kernel. Each of the 200 samples is the edge flow of one drifter path,
    labelled by whether it passes the island clockwise or counter-clockwise.

    The task ships with the package (``datasets/data/ocean_drifters.npz``, provenance and
    processing steps in ``ocean_drifters.PROVENANCE.md`` and docs/design.md §7.8), so it
    needs no file and no network. The standard split is 160 train / 40 test with **no
    validation split** (``val_mask`` all ``False``), as in the paper; :meth:`split` with
    seed ``s`` draws another (``split(1)`` is the standard one). Where
    ``root/raw/dataBuoys.jld2`` exists (or ``root/dataBuoys.jld2`` with ``processed_dir``)
    the task is rebuilt from it after a sha256 check; nothing is downloaded unless
    ``download=True``. The processed file loads with ``weights_only=True`` and records
    its ``pre_transform``; another one raises unless ``force_reload=True``.

    Each sample is a :class:`~topo_contrastive.data.ComplexData` on the shared complex
    (``x_1=float32 [320, 1], y=int64 [1]``, :class:`EdgeFlows`).

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
        download: fetch the raw ``dataBuoys.jld2`` from its public source when it is not
            in ``root/raw`` (default ``False``: the shipped task is used, no network).

    Shapes:
        - **x_1**: ``[320, 1]`` per sample; ``[B * 320, 1]`` in a DataLoader batch.
        - **y**: ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        ValueError: a raw file's sha256 does not match (a truncated, corrupted
            or non-HDF5 file: the message names the file), the shipped file is corrupted,
            ``root`` holds the raw file directly but no ``processed_dir`` was given,
            ``processed_dir`` cannot be written, or the processed file was built with
            another ``pre_transform`` (and ``force_reload=False``).
        FileNotFoundError: ``download=True`` and the download failed (no network).

    Example:
        >>> import tempfile
        >>> ds = OceanDrifters(tempfile.mkdtemp(), log=False)  # the shipped task, offline
        >>> len(ds), ds.complex.num_edges, int(ds.train_mask.sum())
        (200, 320, 160)
    """

    url = source.RAW_URL
    sha256 = source.RAW_SHA256
    file_size = source.RAW_SIZE
    num_train = source.NUM_TRAIN
    num_test = source.NUM_TEST
    split_seed = source.SPLIT_SEED

    def __init__(self, root: str, transform: Callable | None = None,
                 pre_transform: Callable | None = None, force_reload: bool = False,
                 processed_dir: str | None = None, log: bool = True,
                 download: bool = False) -> None:  # fmt: skip
        self._download_requested = check_bool(download, "download")
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
        self._open(root, transform, pre_transform, force_reload, log)

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
            f"The original file (sha256 {self.sha256}, {self.file_size:,} bytes) is public at "
            f"{self.url} and is read from '{os.path.join(self.root, 'raw', 'dataBuoys.jld2')}'; "
            "without a raw file the task shipped with the package is used."
        )

    def _check_raw(self, path: str) -> None:
        """Raise ``ValueError`` unless ``path`` is the original file (sha256)."""
        try:
            source.check_raw_file(path, self.sha256, self.file_size)
        except ValueError as err:
            raise ValueError(f"{err} " + self._where()) from None

    def download(self) -> None:
        if not self._download_requested:
            return  # the shipped task is used; nothing is fetched unless asked for
        if not self.force_reload and os.path.isfile(self._processed_path()):
            return  # the processed file is there; the raw file is not needed
        target = os.path.join(self.raw_dir, "dataBuoys.jld2")
        # named like atomic_write's temporaries, so a killed download's folder is removed later
        tmp_dir = temporary_name(os.path.join(self.raw_dir, "download"))
        os.mkdir(tmp_dir, 0o700)
        try:
            try:
                tmp = download_url(self.url, tmp_dir, log=self.log, filename="dataBuoys.jld2")
            except Exception as err:  # URLError, HTTPError, OSError, ...
                raise FileNotFoundError(
                    f"dataBuoys.jld2 could not be downloaded ({type(err).__name__}: {err}). "
                    + self._where()
                ) from err
            self._check_raw(tmp)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)

    # ------------------------------------------------------------------ processing
    def process(self) -> None:
        raw_path = self.raw_paths[0]
        if os.path.isfile(raw_path):
            self._check_raw(raw_path)
            arrays = source.read_raw(raw_path)
        else:
            arrays = source.load_shipped()
        ops = ComplexOperators.from_simplices(arrays.edges, arrays.triangles, arrays.pos.shape[0])
        train = arrays.train_mask
        masks = {"train": train, "val": np.zeros_like(train), "test": ~train}
        self._save(content_of(ops, None, paths=arrays.paths, labels=arrays.labels, pos=arrays.pos,
                            masks=masks))  # fmt: skip

    def _split_full(self, seed: int) -> dict[str, torch.Tensor]:
        # numpy.random.seed(seed); numpy.random.shuffle(mask), without touching the global RNG.
        train = torch.from_numpy(source.legacy_split(seed, self._stored["train_mask"].numel()))
        return {"train": train, "val": torch.zeros_like(train), "test": ~train}
