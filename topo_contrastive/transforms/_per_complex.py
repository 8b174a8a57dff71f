"""Per-sample Hodge quantities on samples with complexes of their own (private).

A sample of a dataset of many complexes (:class:`~topo_contrastive.data.ComplexData` with
incidences, or a plain ``Data`` with TopoBench's ``incidence_1`` / ``incidence_2``) carries
its complex. A batch of such samples is one complex with block-diagonal operators, whose
Hodge decomposition is that of every sample (the ``"blocks"`` backend computes it
component by component). So the Hodge parts and the drop probabilities of many samples are
computed a chunk of samples at a time, on the chunk's block-diagonal complex, and split
back per sample.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data, InMemoryDataset

from topo_contrastive.data import ComplexData
from topo_contrastive.hodge import HodgeDecomposition

__all__ = [
    "as_complex_data",
    "fit_per_complex",
    "has_own_complex",
    "hodge_of",
    "samples_as_rows",
]

#: Edges per chunk of samples decomposed together in ``fit`` (one block-diagonal complex).
CHUNK_EDGES = 32_768


def has_own_complex(data: Any) -> bool:
    """``True`` for a sample (or batch) that carries its own complex: a ``ComplexData``
    with incidences, or a plain ``Data`` with ``incidence_1``."""
    if isinstance(data, ComplexData):
        return not data.is_shared
    return isinstance(data, Data) and "incidence_1" in data.keys()  # noqa: SIM118


def as_complex_data(data: Any) -> ComplexData:
    """The ``ComplexData`` of a sample with its own complex (plain TopoBench-style ``Data``
    are converted, a shallow copy otherwise; the input is not modified)."""
    if isinstance(data, ComplexData):
        return copy.copy(data)
    return ComplexData.from_data(data)


def hodge_of(data: ComplexData, rank: int = 1) -> HodgeDecomposition:
    """The decomposition of the sample's or batch's complex (cached on the object)."""
    cache = data.__dict__.setdefault("_hodge_cache", {})
    if rank not in cache:
        cache[rank] = HodgeDecomposition(data.complex(), rank=rank)
    return cache[rank]


def samples_as_rows(data: ComplexData, x: Tensor, rank: int, attr: str) -> Tensor:
    """Check that the rows of ``x`` are the simplices of rank ``rank`` of the samples and
    return the sample of every row ``[sum N_k]``.

    Raises:
        ValueError: another number of rows (the signal of another complex).
    """
    counts = data.num_cells(rank)
    total = int(counts.sum())
    if int(x.shape[0]) != total:
        words = ("nodes", "edges", "2-cells")[rank]
        per = counts.tolist()
        raise ValueError(
            f"`data.{attr}` has {x.shape[0]} rows but the sample"
            + (f"s' complexes have N{rank} = {per[:6]}{'...' if len(per) > 6 else ''}"
               f" (sum {total})" if len(per) > 1 else f"'s complex has N{rank} = {total}")
            + f" {words}: a signal of another complex?"
        )
    return data._batch_vector(rank)


def fit_per_complex(
    dataset: InMemoryDataset | Iterable[Any],
    attr: str,
    rank: int,
    compute: Callable[[ComplexData, Tensor, Tensor], dict[str, Tensor]],
) -> Any:
    """Store per-row attributes of every sample with its own complex, a chunk of samples
    at a time (one block-diagonal complex per chunk of about :data:`CHUNK_EDGES` edges).

    ``compute(batch, x, rows)`` maps a chunk's ``ComplexData`` batch, its stacked signals
    ``x = batch[attr]`` and their samples ``rows`` to ``{key: [sum N_k, ...]}``. An
    ``InMemoryDataset`` of ``ComplexData`` gets the new keys in its storage, in place,
    sliced like ``attr``; another iterable gives a list of ``ComplexData`` copies.

    Raises:
        ValueError: a sample without its own complex or without ``attr``; a signal of the
            wrong length (the sample is named).
    """
    if isinstance(dataset, InMemoryDataset):
        storage, slices = dataset._data, dataset.slices
        if slices is None or attr not in slices:
            raise ValueError(f"the dataset's samples have no attribute {attr!r}")
        samples = [dataset.get(i) for i in range(int(slices[attr].numel()) - 1)]
    else:
        storage, slices = None, None
        samples = list(dataset)
    converted = []
    for i, s in enumerate(samples):
        if not has_own_complex(s):
            raise ValueError(
                f"sample {i} carries no complex of its own (no incidences): mixing samples "
                "on the dataset's shared complex with samples on their own complexes"
            )
        c = as_complex_data(s)
        if attr not in c.keys():  # noqa: SIM118 - Data API
            raise ValueError(f"sample {i} has no attribute {attr!r}")
        converted.append(c)
    results: dict[str, list[Tensor]] = {}
    start = 0
    while start < len(converted):
        stop, edges = start, 0
        while stop < len(converted) and (stop == start or edges < CHUNK_EDGES):
            edges += int(converted[stop].num_cells(1).sum())
            stop += 1
        chunk = Batch.from_data_list(converted[start:stop])
        x = chunk[attr]
        try:
            rows = samples_as_rows(chunk, x, rank, attr)
        except ValueError:
            for j in range(start, stop):  # name the sample
                try:
                    samples_as_rows(converted[j], converted[j][attr], rank, attr)
                except ValueError as err:
                    raise ValueError(f"sample {j}: {err}") from None
            raise
        for key, value in compute(chunk, x, rows).items():
            results.setdefault(key, []).append(value)
        start = stop
    if storage is not None and slices is not None:
        for key, parts in results.items():
            storage[key] = torch.cat(parts) if parts else storage[attr][:0]
            slices[key] = slices[attr].clone()
        dataset._data_list = None
        return dataset
    out = []
    sizes = [int(c[attr].shape[0]) for c in converted]
    split = {k: torch.cat(v).split(sizes) for k, v in results.items()}
    for i, c in enumerate(converted):
        for key, parts in split.items():
            c[key] = parts[i]
        out.append(c)
    return out
