"""Shared machinery of the edge-flow datasets (private); their files are written through
:mod:`topo_contrastive._utils.files`.

An edge-flow dataset holds many flows on **one** simplicial complex. Its processed
file is a plain ``dict`` of tensors, ints and strings, so that it loads with
``torch.load(path, weights_only=True)`` and no pickled classes:

``data`` / ``slices``
    the collated samples (``Data(x_1=[N1, 1], y=[1])``, after ``pre_transform``),
    in the form of :meth:`torch_geometric.data.InMemoryDataset.collate`;
``edges`` ``[N1, 2]``, ``triangles`` ``[N2, 3]``, ``num_nodes``
    the complex (tail and head of every edge column; the built-in datasets sort their edges
    and orient them low -> high, :class:`EdgeFlows` keeps the given ones);
``pos`` ``[N0, 2]`` (float64)
    node coordinates;
``path_nodes`` / ``path_ptr``
    the node path of every sample, concatenated, with offsets ``[S + 1]``;
``train_mask`` / ``val_mask`` / ``test_mask`` ``[S]`` (bool)
    the standard split;
``pre_transform`` (str)
    the ``pre_transform`` the samples were built with, as compared on re-opening (files
    written before this key existed fall back to PyG's ``pre_transform.pt`` beside them).

Re-opening a processed file built with another ``pre_transform`` raises a ``ValueError``
(PyG only warns and returns the old data); ``force_reload=True`` re-processes it, as in PyG.
Temporary files left in ``raw/`` or ``processed/`` by a process that was killed during a
write are removed on the next open (those of earlier versions too: the folders are the
dataset's own).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.data.dataset import _repr as _pyg_repr
from torch_geometric.data.dataset import files_exist

from topo_contrastive._utils.checks import check_int
from topo_contrastive._utils.files import atomic_torch_save, remove_stale_temporaries
from topo_contrastive.complex import ComplexOperators

_FORMAT_VERSION = 1
_KEYS = (
    "format_version",
    "data",
    "slices",
    "edges",
    "triangles",
    "num_nodes",
    "pos",
    "path_nodes",
    "path_ptr",
    "train_mask",
    "val_mask",
    "test_mask",
)
_SPLITS = ("train", "val", "test")


def settings_repr(obj: Any) -> str:
    """How a ``pre_transform`` is recorded and compared: PyG's ``repr`` without memory
    addresses, except that a function is named by its module and qualified name (PyG's
    ``_repr`` makes every function ``'<function>'``); ``'None'`` for ``None``."""
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return f"<function {getattr(obj, '__module__', '?')}.{obj.__qualname__}>"
    return _pyg_repr(obj)


def concat_paths(paths: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenate node paths into ``(nodes [sum len], ptr [len(paths) + 1])``."""
    lengths = torch.tensor([len(p) for p in paths], dtype=torch.long)
    ptr = torch.zeros(len(paths) + 1, dtype=torch.long)
    ptr[1:] = torch.cumsum(lengths, 0)
    nodes = (
        torch.from_numpy(np.concatenate([np.asarray(p, dtype=np.int64) for p in paths]))
        if paths
        else torch.zeros(0, dtype=torch.long)
    )
    return nodes, ptr


class EdgeFlowDataset(InMemoryDataset):
    r"""Base class: labelled edge flows on one simplicial complex (private).

    Subclasses implement ``process()`` (calling :meth:`_save_processed`),
    ``processed_file_names`` and ``_split_full(seed)``.
    """

    def __init__(
        self,
        root: str,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        log: bool = True,
    ) -> None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a folder path (str), got {type(root).__name__}")
        self._complex: ComplexOperators | None = None
        super().__init__(
            os.fspath(root),
            transform=transform,
            pre_transform=pre_transform,
            force_reload=force_reload,
            log=log,
        )
        self._load_processed(self.processed_paths[0])

    # ------------------------------------------------------------------ PyG hooks
    def _download(self) -> None:
        remove_stale_temporaries(self.raw_dir, legacy=True)
        super()._download()

    def _process(self) -> None:
        """PyG's ``Dataset._process`` with four changes: stale temporaries are removed
        first; the ``pre_transform`` is recorded inside the processed file (one atomic write
        with the data, checked by :meth:`_load_processed`, which raises on a mismatch where
        PyG warns); PyG's separate ``pre_transform.pt`` / ``pre_filter.pt`` (one per folder,
        written after the data, not atomically) are neither read nor written; the
        ``Processing...`` / ``Done!`` lines follow ``log`` alone (PyG also hides them under
        a test runner; here ``log=False`` does)."""
        remove_stale_temporaries(self.raw_dir, legacy=True)
        remove_stale_temporaries(self.processed_dir, legacy=True)
        if not self.force_reload and files_exist(self.processed_paths):
            return
        if self.log:
            print("Processing...", file=sys.stderr)
        os.makedirs(self.processed_dir, exist_ok=True)
        self.process()
        if self.log:
            print("Done!", file=sys.stderr)

    # ------------------------------------------------------------------ processed file
    def _build_processed(
        self,
        flows: torch.Tensor,
        labels: torch.Tensor | None,
        ops: ComplexOperators,
        pos: np.ndarray,
        paths: Sequence[Sequence[int]],
        masks: dict[str, torch.Tensor],
    ) -> dict[str, Any]:
        """Make the processed ``dict`` from flows ``[S, N1]`` and labels ``[S]`` (or ``None``:
        unlabelled samples have no ``y``)."""
        data_list = []
        for i in range(flows.shape[0]):
            data = Data(x_1=flows[i].to(torch.float32).view(-1, 1))
            if labels is not None:
                data.y = labels[i].view(1).long()
            if self.pre_transform is not None:
                data = self.pre_transform(data)
            data_list.append(data)
        data, slices = self.collate(data_list)
        path_nodes, path_ptr = concat_paths(paths)
        return {
            "format_version": _FORMAT_VERSION,
            "data": data.to_dict(),
            "slices": slices,
            "edges": torch.from_numpy(np.ascontiguousarray(ops.edges, dtype=np.int64)),
            "triangles": torch.from_numpy(  # a cell complex keeps its B2 elsewhere (EdgeFlows)
                np.ascontiguousarray(
                    ops.triangles if ops.is_simplicial else np.zeros((0, 3)), dtype=np.int64
                )
            ),
            "num_nodes": int(ops.num_nodes),
            "pos": torch.as_tensor(np.asarray(pos, dtype=np.float64)),
            "path_nodes": path_nodes,
            "path_ptr": path_ptr,
            "train_mask": masks["train"].bool(),
            "val_mask": masks["val"].bool(),
            "test_mask": masks["test"].bool(),
            "pre_transform": settings_repr(self.pre_transform),
        }

    def _save_processed(self, obj: dict[str, Any]) -> None:
        atomic_torch_save(obj, self.processed_paths[0])

    def _load_processed(self, path: str) -> None:
        try:
            obj = torch.load(path, weights_only=True)
        except Exception as err:  # unreadable or foreign file
            raise ValueError(
                f"the processed file '{path}' cannot be read ({type(err).__name__}: {err}); "
                "delete it or pass `force_reload=True`"
            ) from err
        if not isinstance(obj, dict) or any(k not in obj for k in _KEYS) or (
            obj["format_version"] != _FORMAT_VERSION
        ):
            raise ValueError(
                f"the processed file '{path}' has an unknown format; delete it or pass "
                "`force_reload=True`"
            )
        self._check_pre_transform(path, obj)
        self.data = Data.from_dict(obj["data"])
        self.slices = obj["slices"]
        self._edges = obj["edges"]
        self._triangles = obj["triangles"]
        self._num_nodes0 = int(obj["num_nodes"])
        self._pos = obj["pos"]
        self._path_nodes = obj["path_nodes"]
        self._path_ptr = obj["path_ptr"]
        self._masks = {s: obj[f"{s}_mask"] for s in _SPLITS}

    def _check_pre_transform(self, path: str, obj: dict[str, Any]) -> None:
        """Raise unless the processed file was built with this dataset's ``pre_transform``."""
        recorded = obj.get("pre_transform")
        given = settings_repr(self.pre_transform)
        if recorded is None:  # written before the record: PyG's pre_transform.pt, if any
            legacy = os.path.join(os.path.dirname(path), "pre_transform.pt")
            try:
                recorded = torch.load(legacy, weights_only=True)
            except Exception:  # missing or unreadable: nothing says how it was built
                recorded = None
            given = _pyg_repr(self.pre_transform)
        if recorded == given:
            return
        built = "an unrecorded pre_transform" if recorded is None else f"pre_transform={recorded}"
        raise ValueError(
            f"the processed file '{path}' was built with {built}, but this dataset was given "
            f"pre_transform={given}; pass `force_reload=True` to re-process it with the new "
            "pre_transform (this replaces the file), or use another folder"
        )

    # ------------------------------------------------------------------ complex
    @property
    def complex(self) -> ComplexOperators:
        """The simplicial complex the flows live on (:class:`ComplexOperators`).

        Its edge order and orientation are those of ``x_1``: edge ``e`` runs from
        node ``edges[e, 0]`` to node ``edges[e, 1]`` (lower to higher id).
        """
        if self._complex is None:
            self._complex = ComplexOperators.from_simplices(
                self._edges, self._triangles, self._num_nodes0
            )
        return self._complex

    @property
    def edges(self) -> torch.Tensor:
        """Edges of the complex, ``int64 [N1, 2]``, sorted, oriented low -> high."""
        return self._edges

    @property
    def triangles(self) -> torch.Tensor:
        """Filled triangles of the complex, ``int64 [N2, 3]``, nodes sorted."""
        return self._triangles

    @property
    def pos(self) -> torch.Tensor:
        """Node coordinates, ``float64 [N0, 2]`` (for plotting)."""
        return self._pos

    # ------------------------------------------------------------------ paths
    def _full_index(self, idx: int) -> int:
        indices = self.indices()
        idx = check_int(idx, "idx")
        if not -len(indices) <= idx < len(indices):
            raise IndexError(f"`idx`={idx} is out of range for a dataset of {len(indices)} samples")
        return int(indices[int(idx)])

    def path(self, idx: int) -> torch.Tensor:
        """Node path of sample ``idx`` (``int64 [L]``), whose flow is ``self[idx].x_1``.

        Raises:
            IndexError: ``idx`` out of range.
            TypeError: ``idx`` is not an int.
        """
        j = self._full_index(idx)
        return self._path_nodes[self._path_ptr[j] : self._path_ptr[j + 1]]

    def paths(self) -> list[torch.Tensor]:
        """Node paths of all samples of this dataset (or view), in order."""
        return [self.path(i) for i in range(len(self))]

    # ------------------------------------------------------------------ splits
    def _view(self, mask: torch.Tensor) -> torch.Tensor:
        if self._indices is None:
            return mask.clone()
        return mask[torch.as_tensor(list(self.indices()), dtype=torch.long)]

    @property
    def train_mask(self) -> torch.Tensor:
        """Standard training split, ``bool [len(self)]``."""
        return self._view(self._masks["train"])

    @property
    def val_mask(self) -> torch.Tensor:
        """Standard validation split, ``bool [len(self)]``."""
        return self._view(self._masks["val"])

    @property
    def test_mask(self) -> torch.Tensor:
        """Standard test split, ``bool [len(self)]``."""
        return self._view(self._masks["test"])

    def _split_full(self, seed: int) -> dict[str, torch.Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def split(self, seed: int | None = None) -> dict[str, torch.Tensor]:
        """Random re-split with the sizes of the standard split.

        Args:
            seed: non-negative int, or ``None`` (default) for the standard split.

        Returns:
            ``{"train": mask, "val": mask, "test": mask}``, ``bool [len(self)]`` each.

        Raises:
            TypeError / ValueError: ``seed`` is not ``None`` or a non-negative int.
        """
        if seed is None:
            full = {s: self._masks[s] for s in _SPLITS}
        else:
            full = self._split_full(check_int(seed, "seed", 0))
        return {s: self._view(full[s]) for s in _SPLITS}
