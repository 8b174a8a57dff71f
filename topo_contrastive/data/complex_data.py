r"""The data layout of signals on complexes: :class:`ComplexData` (one sample, or a PyG
``Batch`` of many samples on different complexes)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from topo_contrastive._utils.checks import check_device, check_finite
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.data._layouts import (
    _INCIDENCE_KEYS,
    SHARED_MARK,
    _ComplexStorage,
)

#: Ranks whose signals and sizes a ``ComplexData`` carries (nodes, edges, 2-cells).
RANKS = (0, 1, 2)
_INCIDENCES = ("incidence_1", "incidence_2")
_WORDS = ("nodes", "edges", "2-cells")
#: The attributes the cached operators are built from (a change drops the caches).
_CACHE_KEYS = (*_INCIDENCE_KEYS, "cell_counts")


def as_complex(obj: Any, name: str = "complex") -> ComplexOperators:
    """A :class:`~topo_contrastive.ComplexOperators` from the ways a user holds a complex:
    the operators themselves, a ``HodgeDecomposition`` (its complex) or a TopoNetX
    ``SimplicialComplex`` / ``CellComplex``.

    Raises:
        TypeError: anything else (names ``name`` and the type given).
    """
    if isinstance(obj, ComplexOperators):
        return obj
    inner = getattr(obj, "complex", None)
    if isinstance(inner, ComplexOperators) and type(obj).__name__ == "HodgeDecomposition":
        return inner
    if type(obj).__name__ in ("SimplicialComplex", "CellComplex"):
        return ComplexOperators.from_toponetx(obj)
    raise TypeError(
        f"`{name}` must be a ComplexOperators, a HodgeDecomposition or a TopoNetX "
        f"SimplicialComplex / CellComplex, got {type(obj).__name__}"
    )


def _pairs(m: sp.spmatrix) -> tuple[Tensor, Tensor]:
    """``(index int64 [2, nnz], value float32 [nnz])`` of a scipy sparse matrix, row-major."""
    c = sp.coo_matrix(m)
    order = np.lexsort((c.col, c.row))
    index = np.stack([c.row[order], c.col[order]]).astype(np.int64)
    return torch.from_numpy(index), torch.from_numpy(c.data[order].astype(np.float32))


class ComplexData(Data):
    r"""Signals on the nodes, edges and 2-cells of a simplicial or cell complex, with the
    complex itself: the ``Data`` of a dataset of many complexes (one per sample), whose PyG
    ``Batch`` is one big complex with block-diagonal incidences.

    A sample carries

    - signals by rank ``x_0 [N0, C0]``, ``x_1 [N1, C1]`` (edge flows), ``x_2 [N2, C2]``
      (each optional) and any other attribute (``y``, ...);
    - the signed incidences :math:`\mathbf{B}_1` (nodes x edges) and :math:`\mathbf{B}_2`
      (edges x 2-cells of any length) as COO index/value pairs ``incidence_k_index``
      ``int64 [2, nnz]`` and ``incidence_k_value`` ``float32 [nnz]``, stored like
      ``edge_index``: a ``Batch`` offsets their rows and columns by the sizes of the
      earlier samples, so that its incidences are block-diagonal, and ``to_data_list``,
      ``get_example`` and ``InMemoryDataset`` indexing give the samples back;
    - ``cell_counts`` ``int64 [1, 3]``: :math:`(N_0, N_1, N_2)` (``[B, 3]`` in a batch), and
      ``num_nodes = N0`` (PyG's node count, never rewritten).

    **One shared complex** (the paper's setting: many flows on one complex) is the same
    layout without the incidences: the complex is stored once, on the dataset
    (``dataset.complex``), each sample carries ``cell_counts`` and its signals
    (:meth:`on_shared_complex`, marked by ``shared_complex`` ``bool [1]``); :attr:`is_shared`
    tells, and the operators come from the dataset's complex, ``[N1, N1]``, so that the
    one-complex fast path is kept. A ``Batch`` or ``InMemoryDataset`` holds samples of one
    layout: collating both raises :class:`MixedLayoutError` (a ``ValueError``), whichever
    comes first.

    **Batch vectors by rank.** :attr:`batch_0`, :attr:`batch_1`, :attr:`batch_2` map
    every node, edge and 2-cell to its sample (TopoBench's names; PyG's ``x_1_batch``
    with ``follow_batch``), for pooling with PyG's ``global_mean_pool``; a single sample
    gives zeros.

    **Operators.** :meth:`complex` assembles the sample's (or the batch's block-diagonal)
    :class:`~topo_contrastive.ComplexOperators`, and :meth:`laplacians` its
    :math:`(\mathbf{L}_\downarrow, \mathbf{L}_\uparrow)` as torch sparse tensors, cached
    on the object until its incidences or ``cell_counts`` change (replaced or edited in
    place); the operators of a batch know its samples, so that
    :class:`~topo_contrastive.nn.SCNN` refuses a 2-D input without the batch vector.

    Source: the layout of PyG's ``Data`` / ``Batch`` (Fey & Lenssen, 2019) and of TopoBench's
    topological data (Telyatnikov et al., 2024), with incidences as index/value pairs.

    Example:
        >>> import torch
        >>> square = ComplexData.from_complex(
        ...     ComplexOperators.from_cells([[0, 1], [1, 2], [2, 3], [0, 3]], [[0, 1, 2, 3]]),
        ...     x_1=torch.ones(4, 1))
        >>> triangle = ComplexData.from_complex(
        ...     ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]]),
        ...     x_1=torch.ones(3, 1))
        >>> batch = Batch.from_data_list([square, triangle])
        >>> batch.cell_counts.tolist(), batch.batch_1.tolist()
        ([[4, 4, 1], [3, 3, 1]], [0, 0, 0, 0, 1, 1, 1])
        >>> batch.complex().sizes[:3]  # one complex, block-diagonal incidences
        (7, 7, 2)
    """

    def __init__(
        self,
        x: Tensor | None = None,
        edge_index: Tensor | None = None,
        edge_attr: Tensor | None = None,
        y: Any = None,
        pos: Tensor | None = None,
        time: Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.__dict__["_store"] = _ComplexStorage(_parent=self)
        given = {"x": x, "edge_index": edge_index, "edge_attr": edge_attr, "y": y,
                 "pos": pos, "time": time}  # fmt: skip
        for key, value in {**{k: v for k, v in given.items() if v is not None}, **kwargs}.items():
            setattr(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        if key in _CACHE_KEYS:
            self._drop_caches()
        super().__setattr__(key, value)

    def __setitem__(self, key: str, value: Any) -> None:
        if key in _CACHE_KEYS:
            self._drop_caches()
        super().__setitem__(key, value)

    def __delattr__(self, key: str) -> None:
        if key in _CACHE_KEYS:
            self._drop_caches()
        super().__delattr__(key)

    # ------------------------------------------------------------------ operator caches
    def _drop_caches(self) -> None:
        for name in ("_complex_cache", "_laplacian_cache", "_cache_key"):
            self.__dict__.pop(name, None)

    def _operator_key(self) -> tuple[Any, ...]:
        """What the cached operators were built from: each incidence tensor and
        ``cell_counts`` by identity, storage and version (an in-place edit bumps it)."""
        store = self.__dict__.get("_store")
        mapping = getattr(store, "_mapping", {})
        key = []
        for name in _CACHE_KEYS:
            t = mapping.get(name)
            key.append(
                (id(t), t.data_ptr(), t._version) if isinstance(t, Tensor) else None
            )
        return tuple(key)

    def _check_caches(self) -> None:
        """Drop the cached operators when the incidences or sizes changed since."""
        key = self._operator_key()
        if self.__dict__.get("_cache_key") != key:
            self._drop_caches()
            self.__dict__["_cache_key"] = key

    # ------------------------------------------------------------------ PyG collation
    def __inc__(self, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        if key.endswith("_index") and key[: -len("_index")] in _INCIDENCES:
            k = int(key[len("incidence_")])
            counts = self._counts_row()
            return torch.tensor([[int(counts[k - 1])], [int(counts[k])]])
        return super().__inc__(key, value, *args, **kwargs)

    def __cat_dim__(self, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        if key.endswith("_index") and key[: -len("_index")] in _INCIDENCES:
            return 1
        return super().__cat_dim__(key, value, *args, **kwargs)

    def _counts_row(self) -> list[int]:
        counts = self._store.get("cell_counts")
        if counts is None:
            raise ValueError(
                "a ComplexData needs `cell_counts` [1, 3] = (N0, N1, N2); build it with "
                "ComplexData.from_complex / from_data / on_shared_complex"
            )
        _check_counts(counts)
        return [int(v) for v in counts.reshape(-1, 3)[0]]

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_complex(
        cls,
        complex: Any,
        x_0: Tensor | None = None,
        x_1: Tensor | None = None,
        x_2: Tensor | None = None,
        **attrs: Any,
    ) -> ComplexData:
        r"""A sample on its own complex.

        Args:
            complex: a :class:`~topo_contrastive.ComplexOperators` (simplicial or cell
                complex), a ``HodgeDecomposition`` or a TopoNetX ``SimplicialComplex`` /
                ``CellComplex``. Tetrahedra (``B3``) are not carried.
            x_0, x_1, x_2 (Tensor, optional): signals on the nodes ``[N0, C]``, edges
                ``[N1, C]`` and 2-cells ``[N2, C]`` (``[N_k]`` is read as one channel).
            **attrs: any other attributes (``y``, ...).

        Raises:
            TypeError: ``complex`` of another type; a signal that is not a tensor.
            ValueError: a signal whose rows are not the complex's :math:`N_k`, or with NaN or
                inf entries (naming the signal and its rows); a complex without edges.
        """
        ops = as_complex(complex)
        if ops.num_edges == 0:
            raise ValueError("`complex` has no edges (N1 = 0); a sample needs at least one edge")
        i1, v1 = _pairs(ops.B1)
        i2, v2 = _pairs(ops.B2)
        counts = torch.tensor([[ops.num_nodes, ops.num_edges, ops.num_faces]], dtype=torch.long)
        data = cls(
            incidence_1_index=i1,
            incidence_1_value=v1,
            incidence_2_index=i2,
            incidence_2_value=v2,
            cell_counts=counts,
            num_nodes=int(ops.num_nodes),
            **attrs,
        )
        data._set_signals(x_0, x_1, x_2)
        data._check_caches()
        data.__dict__["_complex_cache"] = ops
        return data

    @classmethod
    def on_shared_complex(
        cls,
        complex: Any,
        x_0: Tensor | None = None,
        x_1: Tensor | None = None,
        x_2: Tensor | None = None,
        **attrs: Any,
    ) -> ComplexData:
        """A sample on a complex shared by the whole dataset (stored once, on the dataset):
        signals and ``cell_counts``, no incidences (see :attr:`is_shared`).

        Args: as :meth:`from_complex`.

        Raises:
            TypeError / ValueError: as :meth:`from_complex`.
        """
        ops = as_complex(complex)
        counts = torch.tensor([[ops.num_nodes, ops.num_edges, ops.num_faces]], dtype=torch.long)
        data = cls(cell_counts=counts, num_nodes=int(ops.num_nodes), **attrs)
        data[SHARED_MARK] = torch.ones(1, dtype=torch.bool)
        data._set_signals(x_0, x_1, x_2)
        return data

    @classmethod
    def from_data(cls, data: Data, validate: bool = True) -> ComplexData:
        """The ``ComplexData`` of a plain PyG ``Data`` with TopoBench's keys: signals
        ``x_0``, ``x_1``, ``x_2`` and signed incidences ``incidence_1`` ``[N0, N1]``,
        ``incidence_2`` ``[N1, N2]`` as torch sparse (or dense) tensors; every other
        attribute is copied. A ``ComplexData`` is returned as is.

        Args:
            data: the sample.
            validate: check the incidences (signed, ``B1 B2 = 0``, every 2-cell one simple
                cycle; see :meth:`~topo_contrastive.ComplexOperators.from_incidence`)
                (default ``True``).

        Raises:
            TypeError: ``data`` is not a ``Data``.
            ValueError: no ``incidence_1``; invalid incidences; signals of the wrong length.
        """
        if isinstance(data, ComplexData):
            return data
        if not isinstance(data, Data) or isinstance(data, Batch):
            raise TypeError(
                f"`data` must be a torch_geometric Data sample, got {type(data).__name__}"
            )
        keys = set(data.keys())
        if "incidence_1" not in keys:
            raise ValueError(
                "`data` has no `incidence_1` (the signed [N0, N1] node-to-edge incidence): "
                "a sample of many complexes needs its complex (TopoBench's keys incidence_1, "
                "incidence_2)"
            )
        b2 = data["incidence_2"] if "incidence_2" in keys else None
        if b2 is not None and b2.shape[-1] == 0:
            b2 = None
        if validate:
            ops = ComplexOperators.from_incidence(data["incidence_1"], b2)
        else:  # pragma: no cover - the caller vouches for the incidences
            from topo_contrastive.complex._build import _to_scipy

            ops = ComplexOperators(
                _to_scipy(data["incidence_1"], "incidence_1"),
                _to_scipy(b2, "incidence_2") if b2 is not None else sp.csr_matrix(
                    (data["incidence_1"].shape[1], 0)),
                None,
                _validated=True,
            )
        rest = {
            k: data[k]
            for k in keys
            if k not in ("incidence_1", "incidence_2", "x_0", "x_1", "x_2", "num_nodes")
        }
        signals = {k: data[k] for k in ("x_0", "x_1", "x_2") if k in keys}
        return cls.from_complex(ops, **signals, **rest)

    def _set_signals(self, *signals: Tensor | None) -> None:
        counts = self._counts_row()
        for k, x in enumerate(signals):
            if x is None:
                continue
            if not isinstance(x, Tensor):
                raise TypeError(f"`x_{k}` must be a torch.Tensor, got {type(x).__name__}")
            x = x.unsqueeze(-1) if x.dim() == 1 else x
            if x.dim() != 2 or x.shape[0] != counts[k]:
                raise ValueError(
                    f"`x_{k}` must have shape [N{k}, C] with N{k} = {counts[k]} {_WORDS[k]} of "
                    f"the complex, got shape {tuple(x.shape)}"
                )
            check_finite(x, f"x_{k}", unit=_WORDS[k][:-1])  # a NaN flow: NaN embeddings later
            self[f"x_{k}"] = x

    # ------------------------------------------------------------------ sizes
    @property
    def is_shared(self) -> bool:
        """``True`` when the samples carry no incidences: they share the dataset's complex
        (stored once); ``False`` for samples with their own complexes."""
        return "incidence_1_index" not in self._store

    def num_cells(self, rank: int) -> Tensor:
        """:math:`N_k` of every sample, ``int64 [B]`` (``[1]`` for a single sample).

        Raises:
            ValueError: ``rank`` not in 0..2, or no ``cell_counts``.
        """
        if rank not in RANKS:
            raise ValueError(f"`rank` must be 0, 1 or 2, got {rank!r}")
        self._counts_row()
        return self._store["cell_counts"].reshape(-1, 3)[:, rank]

    def _batch_vector(self, rank: int) -> Tensor:
        counts = self.num_cells(rank)
        return torch.arange(counts.numel(), device=counts.device).repeat_interleave(counts)

    @property
    def batch_0(self) -> Tensor:
        """The sample of every node, ``int64 [sum N0]``."""
        return self._batch_vector(0)

    @property
    def batch_1(self) -> Tensor:
        """The sample of every edge, ``int64 [sum N1]`` (pool edge features with it)."""
        return self._batch_vector(1)

    @property
    def batch_2(self) -> Tensor:
        """The sample of every 2-cell, ``int64 [sum N2]``."""
        return self._batch_vector(2)

    # ------------------------------------------------------------------ operators
    def complex(self) -> ComplexOperators:
        """The complex of the sample, or of the batch: one complex whose incidences are
        the samples' on the diagonal (cached on the object).

        Raises:
            ValueError: the samples share the dataset's complex (:attr:`is_shared`: use
                ``dataset.complex``); incidences that are not signed, with ``B1 B2 != 0``,
                or of another size than ``cell_counts`` (the message names the sample).
        """
        self._check_caches()
        cached = self.__dict__.get("_complex_cache")
        if cached is not None:
            return cached
        if self.is_shared:
            raise ValueError(
                "the samples share one complex stored on the dataset (no incidences on the "
                "samples): use `dataset.complex`"
            )
        ops = _assemble(self)
        self.__dict__["_complex_cache"] = ops
        return ops

    def laplacians(
        self,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        rank: int = 1,
    ) -> Laplacians:
        r"""The :class:`~topo_contrastive.complex.Laplacians` of rank ``rank`` of the sample
        or the batch: torch sparse COO ``[sum N_k, sum N_k]`` (block-diagonal), with the
        offsets ``ptr`` of the samples' blocks and the (assembled) complex; cached per device,
        dtype and rank until the incidences change.

        Args:
            device: target device (default: that of ``cell_counts``).
            dtype: floating dtype (default ``torch.float32``).
            rank: rank of the signals (default ``1``: edge flows).

        Raises:
            ValueError: as :meth:`complex`; a ``device`` torch does not read (``"gpu0"``).
        """
        device = check_device(device)
        if device is None:
            device = self._store["cell_counts"].device if "cell_counts" in self._store else "cpu"
        key = (str(torch.device(device)), dtype, int(rank))
        self._check_caches()
        cache = self.__dict__.setdefault("_laplacian_cache", {})
        if key not in cache:
            ops = self.complex()
            L = ops.laplacians(device=device, dtype=dtype, rank=rank)
            sizes = self.num_cells(rank).cpu()
            ptr = torch.cat([sizes.new_zeros(1), sizes.cumsum(0)])
            cache[key] = Laplacians(*L, ptr=ptr, complex=ops, rank=L.rank, symmetric=True)
        return cache[key]

    def validate(self) -> ComplexData:
        """Check every sample's complex in full (signed incidences, ``B1 B2 = 0``, simple
        cycles, no repeated edge or 2-cell) and its signals' lengths; return ``self``.

        Raises:
            ValueError: the first invalid sample, named.
        """
        samples = self.to_data_list() if isinstance(self, Batch) else [self]
        for i, s in enumerate(samples):
            counts = s._counts_row()
            if s.is_shared:
                continue
            try:
                ops = ComplexOperators.from_incidence(*_sample_matrices(s, counts))
            except ValueError as err:
                raise ValueError(f"sample {i}: {err}") from None
            if ops.sizes[:3] != tuple(counts):
                raise ValueError(
                    f"sample {i}: its incidences give (N0, N1, N2) = {ops.sizes[:3]} but its "
                    f"cell_counts say {tuple(counts)}"
                )
            for k in RANKS:
                x = s._store.get(f"x_{k}")
                if isinstance(x, Tensor) and x.shape[0] != counts[k]:
                    raise ValueError(
                        f"sample {i}: `x_{k}` has {x.shape[0]} rows but its complex has "
                        f"N{k} = {counts[k]} {_WORDS[k]}"
                    )
        return self


# processed datasets of ComplexData load with torch.load(weights_only=True), as PyG's own
torch.serialization.add_safe_globals([ComplexData])


def _check_counts(counts: Any) -> None:
    """``cell_counts``: an integer tensor ``[1, 3]`` (``[B, 3]`` in a batch; ``[3]`` is read
    as one row) of non-negative sizes."""
    if not isinstance(counts, Tensor) or counts.is_floating_point() or counts.dtype == torch.bool:
        got = counts.dtype if isinstance(counts, Tensor) else type(counts).__name__
        raise TypeError(f"`cell_counts` must be an integer tensor [B, 3] = (N0, N1, N2), got {got}")
    shape = tuple(counts.shape)
    if counts.numel() == 0 or shape[-1] != 3 or counts.dim() > 2:
        raise ValueError(
            f"`cell_counts` must have shape [B, 3] (one row (N0, N1, N2) per sample; [3] for "
            f"one sample), got shape {shape}"
        )
    if bool((counts < 0).any()):
        raise ValueError(f"`cell_counts` holds negative sizes: {counts.reshape(-1, 3).tolist()}")


def _sample_matrices(data: ComplexData, counts: Sequence[int]) -> tuple[sp.csr_matrix, ...]:
    """The scipy ``(B1, B2)`` of one sample's index/value pairs."""
    out = []
    for k in (1, 2):
        idx = data._store[f"incidence_{k}_index"].detach().cpu().numpy()
        val = data._store[f"incidence_{k}_value"].detach().cpu().numpy().astype(np.float64)
        out.append(sp.csr_matrix((val, (idx[0], idx[1])), shape=(counts[k - 1], counts[k])))
    return tuple(out)


def _assemble(data: ComplexData) -> ComplexOperators:
    """The (block-diagonal) complex of a sample or batch, with the cheap structural checks:
    index ranges, two entries +-1 per edge column, at least three +-1 per 2-cell column and
    ``B1 B2 = 0`` (a failing column is named by its sample). The full checks of
    :meth:`~topo_contrastive.ComplexOperators.from_incidence` ran when the samples were
    built (:meth:`ComplexData.from_complex`, :meth:`ComplexData.from_data`,
    :meth:`ComplexData.validate`)."""
    counts = data._store["cell_counts"].reshape(-1, 3).cpu().numpy()
    totals = counts.sum(0)
    # the first column of every sample per rank: edges (rank 1), 2-cells (rank 2)
    starts = {k: np.concatenate([[0], np.cumsum(counts[:, k])]) for k in (1, 2)}
    b1, b2 = (_checked_incidence(data, k, (int(totals[k - 1]), int(totals[k])), starts[k])
              for k in (1, 2))  # fmt: skip
    prod = (b1 @ b2).tocsc()
    prod.eliminate_zeros()
    if prod.nnz:
        c = int(np.flatnonzero(np.diff(prod.indptr))[0])
        s = _sample_of(c, starts[2])
        raise ValueError(
            f"sample {s}: B1 @ B2 != 0 at its 2-cell {c - int(starts[2][s])}: the column of "
            "`incidence_2` is not a closed oriented cycle of the edges of `incidence_1`"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b1.sort_indices()
        b2.sort_indices()
    return ComplexOperators(b1, b2, None, _validated=True)


def _sample_of(col: int, starts: np.ndarray) -> int:
    """The sample of the batch's column ``col`` (its samples' first columns ``starts``)."""
    return int(np.searchsorted(starts, col, side="right") - 1)


def _checked_incidence(
    data: ComplexData, k: int, shape: tuple[int, int], starts: np.ndarray
) -> sp.csr_matrix:
    """The batch's ``incidence_k`` ``shape`` as CSR, its indices in range and its columns
    of the form of rank ``k`` (``_assemble``); a bad column named by its sample."""
    idx = data._store[f"incidence_{k}_index"].detach().cpu().numpy()
    val = data._store[f"incidence_{k}_value"].detach().cpu().numpy().astype(np.float64)
    if idx.size and (idx.min() < 0 or idx[0].max() >= shape[0] or idx[1].max() >= shape[1]):
        raise ValueError(
            f"`incidence_{k}_index` holds indices outside [0, {shape[0]}) x [0, "
            f"{shape[1]}): the incidences do not fit the samples' cell_counts"
        )
    m = sp.csc_matrix((val, (idx[0], idx[1])), shape=shape)
    m.sum_duplicates()
    m.eliminate_zeros()
    counts_k = np.diff(m.indptr)
    bad_val = ~np.isin(m.data, (-1.0, 1.0))
    bad = np.flatnonzero(counts_k != 2) if k == 1 else np.flatnonzero(counts_k < 3)
    if bad.size or bad_val.any():
        c = int(bad[0]) if bad.size else int(
            np.searchsorted(m.indptr, np.flatnonzero(bad_val)[0], side="right") - 1
        )
        s = _sample_of(c, starts)
        what = "edge" if k == 1 else "2-cell"
        need = "one -1 and one +1" if k == 1 else "at least three entries +-1"
        got = m.data[m.indptr[c] : m.indptr[c + 1]].tolist()
        raise ValueError(
            f"sample {s}: `incidence_{k}` column {c - int(starts[s])} ({what}) has entries "
            f"{got}; expected {need}"
        )
    if k == 1:  # two entries per column: one -1 and one +1
        pair = m.data.reshape(-1, 2)
        wrong = np.flatnonzero(pair.sum(1) != 0)
        if wrong.size:
            s = _sample_of(int(wrong[0]), starts)
            raise ValueError(
                f"sample {s}: `incidence_1` column {int(wrong[0]) - int(starts[s])} has "
                f"entries {pair[wrong[0]].tolist()}; expected one -1 and one +1"
            )
    return m.tocsr()
