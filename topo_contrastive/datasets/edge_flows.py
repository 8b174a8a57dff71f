r"""Edge flows on one or many complexes as a PyG dataset, and its ``.npz`` file format.

**The file format** (``.npz``, read with ``allow_pickle=False``; written by
:meth:`EdgeFlows.write_npz`) holds ``B`` complexes (blocks) and ``S`` samples, the samples of
one complex stored once, under :class:`~topo_contrastive.data.ComplexData`'s names:
``cell_counts`` ``int [B, 3]`` (:math:`N_0, N_1, N_2` of every block); the blocks' signed
:math:`\mathbf{B}_1` as ``incidence_1_index`` ``int [2, 2 sum N1]`` / ``incidence_1_value``
(+-1), rows and columns offset by the earlier blocks' counts (block-diagonal, as a PyG
``Batch`` holds them), likewise ``incidence_2_*`` for :math:`\mathbf{B}_2` (where there are
2-cells); ``x_1`` ``float [sum N1]``, every sample's edge flow on its block one after the
other (``[S, N1]`` on one block), or node paths ``path_nodes`` ``int [L]`` (node ids of the
sample's block) with offsets ``path_ptr`` ``int [S + 1]``, whose flows are used when ``x_1``
is absent; ``sample_block`` ``int [S]``, the block of every sample (default: all samples on
the one block, or sample ``i`` on block ``i``). Optional: ``y`` ``int [S]``, ``sample_ids``
``[S]`` (unique ints or strings), ``train_mask`` / ``val_mask`` / ``test_mask`` ``bool [S]``,
``pos`` ``float [sum N0, 2]``, ``node_weights`` / ``edge_weights`` / ``cell_weights``
``float [sum N_k]`` (positive: the diagonals of the Hodge stars :math:`\mathbf{W}_0,
\mathbf{W}_1, \mathbf{W}_2`, e.g. a line's reactance; on one complex the dataset's
``complex`` is then :meth:`ComplexOperators.with_weights` of them, docs/weights.md); ``format``
= ``"topo_contrastive.complex_data"``, ``version`` = 2. Any other key is an error. Files of the
earlier layouts read as they are: one complex as ``B1_*`` / ``B2_*`` COO arrays or
``edge_index`` with ``triangles`` or ``cell_nodes`` / ``cell_ptr``, samples as ``flows``
``[S, N1]``, ``labels``, ...; many complexes as version 1 of the format (one sample each).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import InMemoryDataset
from torch_geometric.data.dataset import _repr as _pyg_repr
from torch_geometric.data.dataset import files_exist

from topo_contrastive._utils.checks import check_int
from topo_contrastive._utils.files import atomic_torch_save, remove_stale_temporaries, sha256_of
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._checks import SPLITS, WEIGHTS, resplit, stratified_masks
from topo_contrastive.datasets._file import collated, content_of, read_file, write_file

#: Name of the raw file the constructors write into ``root/raw``.
RAW_FILE = "edge_flows.npz"
# the processed file's layout: a file of another version (or none) is re-processed on opening
_VERSION = 3  # 1: the earlier layouts; 2: development states of this one
_PARTS = ("paths", "labels", "pos", "masks", "sample_ids", "edge_weights")


def _settings_repr(obj: Any) -> str:
    """How a ``pre_transform`` is recorded and compared: PyG's ``repr`` without memory
    addresses, a function named by its module and qualified name; ``'None'`` for ``None``."""
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return f"<function {getattr(obj, '__module__', '?')}.{obj.__qualname__}>"
    return _pyg_repr(obj)


def _root(root: Any) -> str:
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"`root` must be a folder path (str), got {type(root).__name__}")
    return os.path.expanduser(os.fspath(root))


# ---------------------------------------------------------------------------- the dataset
class EdgeFlows(InMemoryDataset):
    r"""Edge flows of your own on one complex or many (PyG ``InMemoryDataset``).

    ``S`` edge flows on signed simplicial or cell complexes (:math:`\mathbf{B}_1`,
    :math:`\mathbf{B}_2`), with optional integer labels, node coordinates, per-edge weights, a
    standard split and sample ids; the base of :class:`SyntheticTrajectories`,
    :class:`OceanDrifters` (one complex) and :class:`RandomComplexTrajectories` (many). Every
    sample is a :class:`~topo_contrastive.data.ComplexData` with ``x_1`` ``float32 [N1, 1]``
    and, when labelled, ``y`` ``int64 [1]``. On **one complex** the complex is stored once
    (:attr:`complex`, its :attr:`pos` and :attr:`edge_weights`), the samples are
    :meth:`~topo_contrastive.data.ComplexData.on_shared_complex` samples and their flows one
    ``[S * N1, 1]`` tensor, so that the operators are built once; on **many complexes**
    every sample carries its complex (:meth:`~topo_contrastive.data.ComplexData.from_complex`,
    with ``pos`` and ``edge_weights`` where given), :attr:`complex` is ``None`` and a
    ``DataLoader`` batch is one block-diagonal complex.

    Ways in: :meth:`from_toponetx`, :meth:`from_incidence` (signed incidences in any
    orientation), :meth:`from_samples` (``ComplexData`` on complexes of their own), each
    validating everything, writing ``root/raw/edge_flows.npz`` and opening it; or
    ``EdgeFlows(root, file=...)`` on a file of the module's format (:meth:`write_npz`, by
    hand, or ``--data-file``). **Orientation** is the complex's own: edge ``e`` runs from
    ``edges[e, 0]`` to ``edges[e, 1]`` (``B1[tail, e] = -1``); node paths become flows by
    :meth:`ComplexOperators.path_to_flow`. **Splits**: the file's masks, else a stratified
    split of labelled data (per class ``round(fraction * n_c)`` validation and test samples
    with ``split_ratio``, drawn with ``split_seed``), else every sample in training;
    :meth:`split` draws re-splits with the standard split's per-class counts.

    The processed file ``processed/edge_flows_<sha256 of the file>_<split>.pt`` is re-made
    when the file changes or was processed by an earlier version; it loads with
    ``torch.load(weights_only=True)`` and records the ``pre_transform``: another one raises
    unless ``force_reload=True`` (PyG only warns).

    Args:
        root: dataset folder (``root/processed``; ``root/raw`` of the class methods).
        file: the ``.npz`` to read, only read (default ``None``: ``root/raw/edge_flows.npz``).
        split_ratio: train / validation / test fractions of the standard split of a labelled
            file without masks (default ``(0.6, 0.2, 0.2)``).
        split_seed: seed of that split (default 0).
        transform: PyG transform applied on access (default ``None``).
        pre_transform: PyG transform applied once before saving (default ``None``).
        force_reload: re-process even if the processed file exists (default ``False``).
        log: print progress to stderr (default ``True``).

    Shapes:
        - **x_1**: ``[N1, 1]`` per sample; ``[sum N1, 1]`` in a DataLoader batch.
        - **y** (labelled data): ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        FileNotFoundError: ``file`` (or ``root/raw/edge_flows.npz``) does not exist.
        ValueError: an invalid file (a missing or unknown key; an invalid complex, named; flows
            of the wrong length or with NaN/inf; labels of the wrong length; overlapping masks;
            a path along a non-edge: the message names the key, the expected and the given);
            ``split_ratio`` not three non-negative fractions summing to one; a processed file
            of another ``pre_transform``.
        TypeError: non-integer labels; a ``root`` or ``file`` that is not a path.

    Example:
        >>> import torch
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]], [[0, 1, 2]])
        >>> ds = EdgeFlows.from_incidence(
        ...     "data/toy", ops.B1, ops.B2, paths=[[0, 1, 2, 3], [3, 2, 0]], labels=[0, 1],
        ...     log=False)  # doctest: +SKIP
        >>> ds[1].x_1.view(-1).tolist(), ds.complex.num_triangles  # doctest: +SKIP
        ([0.0, 0.0, -1.0, -1.0], 1)
    """

    file: str | None = None  # the raw file read (None: a generated dataset)

    def __init__(self, root: str, file: str | os.PathLike | None = None,
                 split_ratio: tuple[float, float, float] = (0.6, 0.2, 0.2), split_seed: int = 0,
                 transform: Callable | None = None, pre_transform: Callable | None = None,
                 force_reload: bool = False, log: bool = True) -> None:  # fmt: skip
        ratio = tuple(float(r) for r in split_ratio)
        if len(ratio) != 3 or min(ratio) < 0 or not np.isclose(sum(ratio), 1.0):
            raise ValueError(
                f"`split_ratio` must be three non-negative fractions (train, val, test) summing "
                f"to 1, got {tuple(split_ratio)}"
            )
        self.split_ratio, self.split_seed = ratio, check_int(split_seed, "split_seed", 0)
        root = _root(root)
        self.file = os.path.abspath(os.path.expanduser(os.fspath(file)) if file is not None
                                    else os.path.join(root, "raw", RAW_FILE))  # fmt: skip
        if not os.path.isfile(self.file):
            raise FileNotFoundError(
                f"edge-flow file '{self.file}' does not exist; write one with "
                "EdgeFlows.write_npz, or build the dataset with EdgeFlows.from_incidence / "
                "EdgeFlows.from_toponetx / EdgeFlows.from_samples"
            )
        self._sha = sha256_of(self.file)
        self._open(root, transform, pre_transform, force_reload, log)

    def _open(self, root: str, transform: Callable | None, pre_transform: Callable | None,
              force_reload: bool, log: bool) -> None:  # fmt: skip
        """PyG's ``__init__`` (download, process) and the processed file's load; the
        subclasses' ``__init__`` call it."""
        self._complex: ComplexOperators | None = None
        self._fresh: dict[str, Any] | None = None  # the processed file, as last written or read
        super().__init__(_root(root), transform=transform, pre_transform=pre_transform,
                         force_reload=force_reload, log=log)  # fmt: skip
        self._load(self.processed_paths[0])

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_incidence(cls, root: str, B1: Any, B2: Any | None = None, flows: Any | None = None,
                       *, paths: Sequence[Sequence[int]] | None = None, labels: Any | None = None,
                       pos: Any | None = None, masks: Mapping[str, Any] | None = None,
                       sample_ids: Sequence[int | str] | None = None,
                       edge_weights: Any | None = None, **kwargs: Any) -> EdgeFlows:  # fmt: skip
        """Build the dataset from signed incidence matrices and flows (or node paths): every
        input is validated, then ``root/raw/edge_flows.npz`` written (atomically) and opened
        with ``EdgeFlows(root, **kwargs)``.

        Args:
            root: dataset folder.
            B1: ``[N0, N1]`` signed node-to-edge incidence (scipy sparse, torch sparse or
                dense, numpy), edges in any orientation.
            B2: ``[N1, N2]`` signed edge-to-2-cell incidence (triangles or polygons), or
                ``None`` (no 2-cells).
            flows: edge flows ``[S, N1]`` (``[S, N1, 1]`` accepted) in the column order and
                orientation of ``B1``; optional with ``paths``.
            paths: ``S`` node paths (rows of ``B1``): the flows when ``flows`` is ``None``,
                else stored beside them (walks on the complex).
            labels: ``int [S]`` class ids (default ``None``: unlabelled).
            pos: ``float [N0, 2]`` node coordinates (default ``None``).
            masks: ``{"train": bool [S], "val": ..., "test": ...}`` (default ``None``).
            sample_ids: ``S`` unique ints or strings (default ``None``: ``0 .. S-1``).
            edge_weights: ``float [N1]`` positive per-edge weights, the diagonal of
                :math:`\\mathbf{W}_1` (the dataset's complex is then weighted; default
                ``None``).
            **kwargs: passed to :class:`EdgeFlows` (``split_ratio``, ``transform``, ...).

        Raises:
            ValueError / TypeError: as :class:`EdgeFlows` (naming the argument) and as
                :meth:`ComplexOperators.from_incidence`.
        """
        return cls._build(root, ComplexOperators.from_incidence(B1, B2), flows, paths=paths,
                          labels=labels, pos=pos, masks=masks, sample_ids=sample_ids,
                          edge_weights=edge_weights, **kwargs)  # fmt: skip

    @classmethod
    def from_toponetx(cls, root: str, complex: Any, flows: Any | None = None, *,
                      paths: Sequence[Sequence[Any]] | None = None, labels: Any | None = None,
                      pos: Any | None = None, **kwargs: Any) -> EdgeFlows:  # fmt: skip
        """Build the dataset from a TopoNetX ``SimplicialComplex`` or ``CellComplex`` and
        flows (or node paths), as :meth:`from_incidence`. The order and orientation are
        TopoNetX's (:meth:`ComplexOperators.from_toponetx`), so ``flows`` follow
        ``complex.incidence_matrix(1)``'s columns; paths and ``pos`` use its node labels.

        Args:
            root: dataset folder.
            complex: a ``toponetx.SimplicialComplex`` or ``toponetx.CellComplex``.
            flows: ``[S, N1]`` in TopoNetX's edge order (optional with ``paths``).
            paths: ``S`` node paths in the complex's node labels.
            labels: ``int [S]`` class ids (default ``None``: unlabelled).
            pos: ``float [N0, 2]`` in TopoNetX's node order, or ``{node label: (x, y)}``.
            **kwargs: ``masks``, ``sample_ids``, ``edge_weights`` as :meth:`from_incidence`;
                the rest passed to :class:`EdgeFlows`.

        Raises:
            ValueError / TypeError: as :meth:`from_incidence`; a path or ``pos`` with a node
                that is not in the complex.
        """
        labelled = ComplexOperators.from_toponetx(complex)
        index = {label: row for row, label in enumerate(labelled.node_labels or ())}
        if paths is not None:
            rows = []
            for i, p in enumerate(_sequence(paths, "paths")):
                try:
                    rows.append([index[v] for v in _sequence(p, f"paths[{i}]")])
                except KeyError as err:
                    raise ValueError(f"`paths[{i}]` has the node {err.args[0]!r}, which is not a "
                                     "node of the complex") from None
            paths = rows
        if isinstance(pos, Mapping):
            missing = [v for v in index if v not in pos]
            if missing:
                raise ValueError(f"`pos` has no coordinates for the node {missing[0]!r}")
            pos = np.array([pos[v] for v in index], dtype=np.float64).reshape(-1, 2)
        # the paths are rows of B1 now: the dataset's complex is the one its file rebuilds
        B3 = labelled.B3 if labelled.num_tetrahedra else None  # [N2, 0] beside polygons
        ops = ComplexOperators.from_incidence(labelled.B1, labelled.B2, B3)
        return cls._build(root, ops, flows, paths=paths, labels=labels, pos=pos, **kwargs)

    @classmethod
    def from_samples(cls, root: str, samples: Sequence[Any], *,
                     masks: Mapping[str, Any] | None = None,
                     sample_ids: Sequence[int | str] | None = None, **kwargs: Any
                     ) -> EdgeFlows:  # fmt: skip
        """Build the dataset from :class:`~topo_contrastive.data.ComplexData` samples, each on
        its own complex (:meth:`~topo_contrastive.data.ComplexData.from_complex`), with their
        ``x_1`` ``[N1, 1]``, ``y`` and ``pos`` ``[N0, 2]`` (on every sample or none), as
        :meth:`from_incidence`.

        Args:
            root: dataset folder.
            samples: the samples (a list, or a dataset of them).
            masks, sample_ids: as :meth:`from_incidence`.
            **kwargs: passed to :class:`EdgeFlows`.

        Raises:
            TypeError: a sample that is not a ``ComplexData``; a ``Batch`` or one sample as
                ``samples`` (the message says what to pass).
            ValueError: no sample; a sample on the shared complex, without ``x_1`` or with
                several labels; ``y`` or ``pos`` on some samples only; as :meth:`from_incidence`.
        """
        return cls._build(root, samples, None, what="samples", masks=masks,
                          sample_ids=sample_ids, **kwargs)  # fmt: skip

    @classmethod
    def _build(cls, root: str, complex: Any, flows: Any, what: str = "complex", **parts: Any
               ) -> EdgeFlows:  # fmt: skip
        root = _root(root)
        kwargs = {k: parts.pop(k) for k in list(parts) if k not in _PARTS}
        content = content_of(complex, flows, what, **{k: parts.get(k) for k in _PARTS})
        write_file(os.path.join(root, "raw", RAW_FILE), content)
        return cls(root, **kwargs)

    @staticmethod
    def write_npz(path: str | os.PathLike, complex: Any, flows: Any | None = None, *,
                  paths: Sequence[Sequence[int]] | None = None, labels: Any | None = None,
                  pos: Any | None = None, masks: Mapping[str, Any] | None = None,
                  sample_ids: Sequence[int | str] | None = None,
                  edge_weights: Any | None = None) -> None:  # fmt: skip
        """Write a complex and its samples, or samples on complexes of their own, in the
        ``.npz`` format (module docstring), atomically, after validating everything (as
        :meth:`from_incidence`).

        Args:
            path: the file to write (conventionally ending in ``.npz``).
            complex: the :class:`ComplexOperators` the flows live on (its edge order and
                orientation, and its Hodge stars where it is weighted), or a list of
                :class:`~topo_contrastive.data.ComplexData` samples on complexes of their own
                (as :meth:`from_samples`; then ``flows``, ``paths``, ``labels`` and ``pos``
                are theirs).
            flows, paths, labels, pos, masks, sample_ids: as :meth:`from_incidence`.
            edge_weights: as :meth:`from_incidence` (default ``None``: the complex's own).

        Raises:
            TypeError: ``complex`` is neither a :class:`ComplexOperators` nor a list of
                ``ComplexData``.
            ValueError: as :meth:`from_incidence` and :meth:`from_samples`.
        """
        write_file(path, content_of(complex, flows, paths=paths, labels=labels, pos=pos,
                                  masks=masks, sample_ids=sample_ids,
                                  edge_weights=edge_weights))  # fmt: skip

    # ------------------------------------------------------------------ PyG
    @property
    def raw_dir(self) -> str:
        return os.path.dirname(self.file) if self.file else os.path.join(self.root, "raw")

    @property
    def raw_file_names(self) -> list[str]:
        return [os.path.basename(self.file)] if self.file else []

    @property
    def processed_file_names(self) -> list[str]:
        tr, va, te = self.split_ratio
        return [f"edge_flows_{self._sha[:16]}_split{tr:g}-{va:g}-{te:g}_seed{self.split_seed}.pt"]

    def download(self) -> None:  # a generated dataset has no raw file; a file is checked first
        return None

    def _download(self) -> None:
        remove_stale_temporaries(self.raw_dir, legacy=True)
        super()._download()

    def _process(self) -> None:
        """PyG's ``Dataset._process``, but stale temporaries are removed first, a processed
        file of an earlier version is re-processed, the ``pre_transform`` is recorded in the
        file (no ``pre_transform.pt``) and the messages follow ``log`` alone."""
        remove_stale_temporaries(self.raw_dir, legacy=True)
        remove_stale_temporaries(self.processed_dir, legacy=True)
        if not self.force_reload and files_exist(self.processed_paths):
            self._fresh = _read_processed(self.processed_paths[0])
            if isinstance(self._fresh, dict) and self._fresh.get("format_version") == _VERSION:
                return
        if self.log:
            print("Processing...", file=sys.stderr)
        os.makedirs(self.processed_dir, exist_ok=True)
        self.process()
        if self.log:
            print("Done!", file=sys.stderr)

    def process(self) -> None:
        content = read_file(self.file)
        if content["masks"] is None:
            content["masks"] = stratified_masks(content["y"], content["block"].size,
                                                 self.split_ratio, self.split_seed)  # fmt: skip
        self._save(content)

    # ------------------------------------------------------------------ processed file
    def _save(self, content: dict[str, Any], **extra: Any) -> None:
        """Write the processed file of the checked ``content`` (with its masks) and a
        subclass's ``extra`` keys."""
        self.data, self.slices = collated(content)
        if self.pre_transform is not None:
            samples = [self.pre_transform(self.get(i)) for i in range(content["block"].size)]
            self.data, self.slices = self.collate(samples)
            self._data_list = None
        one, ops = len(content["counts"]) == 1, content["complex"]
        tensor = (lambda a: None if a is None else torch.from_numpy(np.asarray(a)))  # noqa: E731
        ids = content["sample_ids"]
        ids = ids.tolist() if ids is not None and ids.dtype.kind == "U" else tensor(ids)
        paths = content["paths"] or (None, None)
        self._fresh = {
            "format_version": _VERSION, "data": self._data.to_dict(), "slices": self.slices,
            "complex": {k: tensor(v) for k, v in zip(
                ("B1_index", "B1_value", "B2_index", "B2_value", "counts"),
                (*_coo(ops.B1), *_coo(ops.B2), content["counts"]), strict=True)} if one else None,
            "pos": tensor(content["pos"]) if one else None,
            **{k: tensor(content[k]) if one else None for k in WEIGHTS},
            "path_nodes": tensor(paths[0]), "path_ptr": tensor(paths[1]),
            **{f"{s}_mask": tensor(m) for s, m in content["masks"].items()},
            "sample_ids": ids,
            "pre_transform": _settings_repr(self.pre_transform), **extra,
        }  # fmt: skip
        atomic_torch_save(self._fresh, self.processed_paths[0])

    def _load(self, path: str) -> None:
        from topo_contrastive.data import ComplexData

        obj, self._fresh = self._fresh or _read_processed(path), None
        self._check_pre_transform(path, obj)
        self.data, self.slices = ComplexData.from_dict(obj["data"]), obj["slices"]
        self._stored = obj

    def _check_pre_transform(self, path: str, obj: dict[str, Any]) -> None:
        """Raise unless the processed file was built with this dataset's ``pre_transform``."""
        recorded, given = obj.get("pre_transform"), _settings_repr(self.pre_transform)
        if recorded == given:
            return
        raise ValueError(
            f"the processed file '{path}' was built with pre_transform={recorded}, but this "
            f"dataset was given pre_transform={given}; pass `force_reload=True` to re-process "
            "it with the new pre_transform (this replaces the file), or use another folder"
        )

    # ------------------------------------------------------------------ the complex
    @property
    def complex(self) -> ComplexOperators | None:
        """The complex all samples share (:class:`ComplexOperators`, in the edge order and
        orientation of ``x_1``; weighted by the file's ``node_weights`` / ``edge_weights`` /
        ``cell_weights`` where it has them), or ``None`` on complexes of their own
        (``sample.complex()``)."""
        stored = self._stored["complex"]
        if self._complex is None and stored is not None:
            n0, n1, n2 = stored["counts"][0].tolist()
            B1, B2 = (sp.csr_matrix((stored[f"B{k}_value"].numpy(), tuple(
                stored[f"B{k}_index"].numpy())), shape=shape)
                for k, shape in ((1, (n0, n1)), (2, (n1, n2))))  # fmt: skip
            ops = ComplexOperators.from_incidence(B1, B2)
            stars = {k.removesuffix("_weights"): self._stored[k].numpy() for k in WEIGHTS
                     if self._stored.get(k) is not None}  # fmt: skip
            self._complex = ops.with_weights(**stars) if stars else ops
        return self._complex

    @property
    def edges(self) -> torch.Tensor | None:
        """Edges of the shared complex, ``int64 [N1, 2]``: tail and head of every column, in
        the given orientation (``None`` on many complexes)."""
        ops = self.complex
        return None if ops is None else torch.from_numpy(np.ascontiguousarray(ops.edges))

    @property
    def triangles(self) -> torch.Tensor | None:
        """Triangles of the shared complex, ``int64 [N2, 3]``, nodes sorted (``None`` on many
        complexes or where a 2-cell is not a triangle)."""
        ops = self.complex
        if ops is None or not ops.is_simplicial:
            return None
        return torch.from_numpy(np.ascontiguousarray(ops.triangles)).long()

    @property
    def pos(self) -> torch.Tensor | None:
        """Node coordinates of the shared complex, ``float64 [N0, 2]``, or ``None`` when none
        were given (on many complexes: every sample's ``pos``)."""
        return self._stored["pos"]

    @property
    def edge_weights(self) -> torch.Tensor | None:
        """Positive per-edge weights of the shared complex (the diagonal of its
        :math:`\\mathbf{W}_1`), ``float64 [N1]``, or ``None`` when none were given (on many
        complexes: every sample's ``edge_weights``)."""
        return self._stored["edge_weights"]

    # ------------------------------------------------------------------ the samples
    @property
    def has_labels(self) -> bool:
        """Whether the samples carry labels ``y``."""
        return "y" in self._data

    @property
    def labels(self) -> torch.Tensor | None:
        """The label of every sample of this dataset (or view), ``int64 [len(self)]``, or
        ``None`` for unlabelled data."""
        return self._view(self._data.y) if self.has_labels else None

    @property
    def sample_ids(self) -> list[int] | list[str]:
        """Ids of the samples of this dataset (or view), in order (default ``0 .. S-1``)."""
        ids = self._stored["sample_ids"]
        idx = list(self.indices())
        if ids is None:
            return idx
        return ids[torch.as_tensor(idx, dtype=torch.long)].tolist() if isinstance(
            ids, torch.Tensor) else [ids[i] for i in idx]  # fmt: skip

    def path(self, idx: int) -> torch.Tensor:
        """Node path of sample ``idx`` (``int64 [L]``, node ids of its complex; empty when the
        flows were given without paths), whose flow is ``self[idx].x_1``.

        Raises:
            IndexError: ``idx`` out of range.
            TypeError: ``idx`` is not an int.
        """
        indices = self.indices()
        idx = check_int(idx, "idx")
        if not -len(indices) <= idx < len(indices):
            raise IndexError(f"`idx`={idx} is out of range for a dataset of {len(indices)} samples")
        nodes, ptr = self._stored["path_nodes"], self._stored["path_ptr"]
        if nodes is None:
            return torch.zeros(0, dtype=torch.long)
        j = int(indices[idx])
        return nodes[ptr[j] : ptr[j + 1]]

    def paths(self) -> list[torch.Tensor]:
        """Node paths of all samples of this dataset (or view), in order."""
        return [self.path(i) for i in range(len(self))]

    # ------------------------------------------------------------------ splits
    def _view(self, full: torch.Tensor) -> torch.Tensor:
        if self._indices is None:
            return full.clone()
        return full[torch.as_tensor(list(self.indices()), dtype=torch.long)]

    @property
    def train_mask(self) -> torch.Tensor:
        """Standard training split, ``bool [len(self)]``."""
        return self._view(self._stored["train_mask"])

    @property
    def val_mask(self) -> torch.Tensor:
        """Standard validation split, ``bool [len(self)]``."""
        return self._view(self._stored["val_mask"])

    @property
    def test_mask(self) -> torch.Tensor:
        """Standard test split, ``bool [len(self)]``."""
        return self._view(self._stored["test_mask"])

    def _split_full(self, seed: int) -> dict[str, torch.Tensor]:
        y = self._data.y.view(-1).numpy() if self.has_labels else None
        std = {s: self._stored[f"{s}_mask"].numpy() for s in SPLITS}
        return {s: torch.from_numpy(m) for s, m in resplit(y, std, seed).items()}

    def split(self, seed: int | None = None) -> dict[str, torch.Tensor]:
        """The standard split (``seed=None``) or a random re-split with its per-class sizes.

        Args:
            seed: non-negative int, or ``None`` (default) for the standard split.

        Returns:
            ``{"train": mask, "val": mask, "test": mask}``, ``bool [len(self)]`` each.

        Raises:
            TypeError / ValueError: ``seed`` is not ``None`` or a non-negative int.
        """
        if seed is None:
            full = {s: self._stored[f"{s}_mask"] for s in SPLITS}
        else:
            full = self._split_full(check_int(seed, "seed", 0))
        return {s: self._view(full[s]) for s in SPLITS}

    def __repr__(self) -> str:
        counts = self._stored["complex"]
        where = (f"complex={tuple(counts['counts'][0].tolist())}" if counts is not None
                 else f"complexes={len(self._data.cell_counts)}")  # fmt: skip
        file = f", file='{os.path.basename(self.file)}'" if self.file else ""
        return (f"{type(self).__name__}({len(self)}, {where}, labels="
                f"{'yes' if self.has_labels else 'no'}{file})")


def _sequence(obj: Any, name: str) -> list:
    if isinstance(obj, (str, bytes)) or not hasattr(obj, "__iter__"):
        raise TypeError(f"`{name}` must be a sequence, got {type(obj).__name__}")
    return list(obj.tolist() if isinstance(obj, (np.ndarray, torch.Tensor)) else obj)


def _coo(mat: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    coo = mat.tocoo()
    return np.stack([coo.row, coo.col]).astype(np.int64), coo.data.astype(np.float64)


def _read_processed(path: str) -> Any:
    try:
        return torch.load(path, weights_only=True)
    except Exception as err:  # unreadable or foreign file
        raise ValueError(
            f"the processed file '{path}' cannot be read ({type(err).__name__}: {err}); "
            "delete it or pass `force_reload=True`"
        ) from err
