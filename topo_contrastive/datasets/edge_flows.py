r"""Your own complex and edge flows as a PyG dataset, and its ``.npz`` file format.

:class:`EdgeFlows` holds many edge flows on one simplicial complex of a user's, with optional
labels and splits, in the form of the paper's two datasets (``Data(x_1=[N1, 1], y=[1])``), so
that everything the library does with those (pre-training, spectral masks, the debiased loss,
embeddings, the linear evaluation) works on it.

**The file format** (``.npz``, read with ``allow_pickle=False``; written by
:meth:`EdgeFlows.write_npz`). The complex is given by one of

- ``B1_index`` ``int [2, nnz]`` (node row, edge column), ``B1_value`` ``[nnz]`` (+-1) and
  ``B1_shape`` ``int [2]`` = ``(N0, N1)``: the signed node-to-edge incidence as COO arrays;
  optionally ``B2_index`` ``int [2, nnz2]`` (edge row, 2-cell column), ``B2_value``
  ``[nnz2]`` (+-1) and ``B2_shape`` ``int [2]`` = ``(N1, N2)``: every column the oriented
  boundary cycle of a 2-cell (a triangle, or a polygon of a cell complex); or
- ``edge_index`` ``int [2, N1]``: tail and head node of every edge, column ``e`` oriented
  ``edge_index[0, e] -> edge_index[1, e]`` (one column per edge, not both directions);
  optionally ``triangles`` ``int [N2, 3]`` (node triples of the filled triangles, oriented by
  their sorted nodes), or 2-cells of any length as node cycles ``cell_nodes`` ``int [L2]`` with
  offsets ``cell_ptr`` ``int [N2 + 1]`` (2-cell ``f`` is ``cell_nodes[cell_ptr[f]:cell_ptr[f +
  1]]``, oriented along its cycle; e.g. the faces of a road network from
  :func:`~topo_contrastive.complex.planar_faces`), and ``num_nodes`` (default: the rows of
  ``pos``, else the largest id + 1).

The samples are given by ``flows`` ``float [S, N1]`` (edge flows in the column order and
orientation of the complex) and/or node paths ``path_nodes`` ``int [L]`` with offsets
``path_ptr`` ``int [S + 1]`` (path ``i`` is ``path_nodes[path_ptr[i]:path_ptr[i + 1]]``; its
flow, when ``flows`` is absent, is :meth:`ComplexOperators.path_to_flow`: every step adds
+1 along the edge's orientation and -1 against it). Optional: ``labels`` ``int [S]``; ``pos``
``float [N0, 2]`` node coordinates; ``train_mask``, ``val_mask``, ``test_mask`` ``bool [S]``
(all three, disjoint); ``sample_ids`` ``[S]`` (unique integers or strings); ``edge_weights``
``float [N1]``, positive: the diagonal of an edge metric :math:`\mathbf{W}_1` (a line's
reactance, a pipe's resistance; written by the physical-flow datasets' ``to_npz``, checked on
reading), and likewise ``node_weights`` ``float [N0]`` and ``cell_weights`` ``float [N2]``
(:math:`\mathbf{W}_0`, :math:`\mathbf{W}_2`): the dataset's ``complex`` is then
:meth:`ComplexOperators.with_weights` of them, and every Hodge quantity is in its metric
(docs/weights.md). Any other key is an error (a misspelt key would otherwise be ignored silently).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive._utils.checks import check_int
from topo_contrastive._utils.files import sha256_of
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._base import EdgeFlowDataset
from topo_contrastive.datasets._edge_flow_file import (
    WEIGHT_KEYS,
    read_edge_flow_file,
    write_edge_flow_file,
)
from topo_contrastive.datasets._edge_flow_samples import Names, validate_samples

#: Name of the raw file the constructors write into ``root/raw``.
RAW_FILE = "edge_flows.npz"


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
    converted with :meth:`ComplexOperators.path_to_flow` (+1 along an edge's orientation,
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
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]], [[0, 1, 2]])
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
            B2: ``[N1, N2]`` signed edge-to-2-cell incidence (triangles or polygons), or
                ``None`` (no 2-cells).
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
                :meth:`ComplexOperators.from_incidence`.
        """
        ops = ComplexOperators.from_incidence(B1, B2)
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
        """Build the dataset from a TopoNetX ``SimplicialComplex`` or ``CellComplex`` and
        flows (or node paths).

        The complex's node, edge and triangle order and orientation are TopoNetX's
        (:meth:`ComplexOperators.from_toponetx`: for sortable node labels, edges sorted
        and oriented from the lower to the higher label), so ``flows`` follow
        ``complex.incidence_matrix(1)``'s columns. Paths and ``pos`` use TopoNetX's node
        labels (any hashable), mapped to rows of ``B1``.

        Args:
            root: dataset folder.
            complex: a ``toponetx.SimplicialComplex`` or ``toponetx.CellComplex``.
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
        labelled = ComplexOperators.from_toponetx(complex)
        paths, pos = _rows_of_node_labels(labelled, paths, pos)
        # the paths are rows of B1 now: the dataset's complex is the one its file rebuilds
        B3 = labelled.B3 if labelled.num_tetrahedra else None  # [N2, 0] beside polygons
        ops = ComplexOperators.from_incidence(labelled.B1, labelled.B2, B3)
        return cls._from_operators(
            root, ops, flows, paths=paths, labels=labels, pos=pos, masks=masks,
            sample_ids=sample_ids, **kwargs,
        )  # fmt: skip

    @classmethod
    def _from_operators(
        cls, root: str, ops: ComplexOperators, flows: Any, **parts: Any
    ) -> EdgeFlows:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a folder path (str), got {type(root).__name__}")
        kwargs = {k: parts.pop(k) for k in list(parts) if k not in _SAMPLE_PARTS}
        content = validate_samples(ops, flows=flows, name=Names(), **parts)
        target = os.path.join(os.path.expanduser(os.fspath(root)), "raw", RAW_FILE)
        write_edge_flow_file(target, ops, content)
        return cls(os.fspath(root), **kwargs)

    @staticmethod
    def write_npz(
        path: str | os.PathLike,
        complex: ComplexOperators,
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
            complex: the :class:`ComplexOperators` (its edge order and orientation, and
                its weights where :meth:`~ComplexOperators.with_weights` gave it some).
            flows, paths, labels, pos, masks, sample_ids: as :meth:`from_incidence`.

        Raises:
            TypeError: ``complex`` is not a :class:`ComplexOperators`.
            ValueError: as :meth:`from_incidence`.
        """
        if not isinstance(complex, ComplexOperators):
            raise TypeError(
                f"`complex` must be a ComplexOperators, got {type(complex).__name__}"
            )
        content = validate_samples(
            complex, flows=flows, paths=paths, labels=labels, pos=pos, masks=masks,
            sample_ids=sample_ids, name=Names(),
        )  # fmt: skip
        for rank, key in enumerate(WEIGHT_KEYS if complex.metric != "unweighted" else ()):
            content[key] = complex.hodge_star(rank)  # the complex's metric
        write_edge_flow_file(path, complex, content)

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
        content = read_edge_flow_file(self.file)
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
            "num_triangles": int(ops.num_faces),
            "has_labels": labels is not None,
            "has_paths": content["paths"] is not None,
            "sample_ids": (
                torch.arange(flows.shape[0])
                if ids is None
                else (ids.tolist() if ids.dtype.kind == "U" else torch.from_numpy(ids))
            ),
            "source_sha256": self._sha,
            "weights": {k: torch.from_numpy(content[k]) for k in WEIGHT_KEYS if k in content},
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
    def complex(self) -> ComplexOperators:
        """The complex (:class:`ComplexOperators`) in the given edge order and orientation:
        edge ``e`` runs from ``edges[e, 0]`` to ``edges[e, 1]``; weighted by the file's
        ``node_weights`` / ``edge_weights`` / ``cell_weights`` where it has them."""
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
            ops = ComplexOperators.from_incidence(B1, B2)
            weights = {k.removesuffix("_weights"): v.numpy()
                       for k, v in self._extra.get("weights", {}).items()}  # fmt: skip
            self._complex = ops.with_weights(**weights) if weights else ops
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


def _rows_of_node_labels(
    labelled: ComplexOperators, paths: Any, pos: Any
) -> tuple[Any, Any]:
    """``paths`` and a ``{node label: (x, y)}`` ``pos`` of a TopoNetX complex (``labelled``:
    its operators with :attr:`~ComplexOperators.node_labels`) in rows of ``B1`` (node ids);
    a ``pos`` array and ``None`` pass unchanged.

    Raises:
        ValueError: a path or ``pos`` with a node that is not in the complex.
        TypeError: ``paths`` or a path that is not a sequence.
    """
    # node label -> row of B1
    index = {label: row for row, label in enumerate(labelled.node_labels or ())}
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
    return paths, pos
