"""Shared helpers of the transforms (private): generators, the flow's checks, the batched draw
of a mask, binding a complex, and the one/many branch: samples on the dataset's shared complex
or on complexes of their own (docs/design.md §6, §7.5, §7.9)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import get_worker_info
from torch_geometric.data import Batch, Data, InMemoryDataset

from topo_contrastive._layout import (
    check_batch_vector,
    rows_to_samples,
    samples_to_rows,
    simplex_words,
)
from topo_contrastive._utils.checks import check_finite
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.data import ComplexData
from topo_contrastive.hodge import HodgeDecomposition

#: Rows of a mask drawn at once on the CPU (more are drawn a chunk at a time: the same draws).
DRAW_ROWS = 2**22
#: Edges of a chunk of samples on their own complexes fitted together (one block-diagonal
#: complex per chunk).
CHUNK_EDGES = 32_768

#: TopoNetX's complexes (not imported: an optional dependency)
_TOPONETX = ("SimplicialComplex", "CellComplex")

def make_generator(generator: Any) -> torch.Generator | None:
    """``None``, a ``torch.Generator`` (used as is) or a non-negative int seed (new CPU one)."""
    if generator is None or isinstance(generator, torch.Generator):
        return generator
    if isinstance(generator, bool) or not isinstance(generator, (int, np.integer)):
        raise TypeError(
            "`generator` must be a torch.Generator, an int seed or None, got "
            f"{type(generator).__name__}"
        )
    if generator < 0:
        raise ValueError(f"`generator` seed must be >= 0, got {generator}")
    return torch.Generator().manual_seed(int(generator))


def draw_generator(owner: Any) -> torch.Generator | None:
    """The generator a mask draws from: ``owner.generator`` in the main process; in a
    ``DataLoader`` worker one of its own, seeded once from the generator's seed and the
    worker's seed (which PyTorch derives per epoch from the loader's generator or the
    global seed), so that workers and epochs differ and reproduce (docs/design.md §7.9)."""
    base = owner.generator
    info = get_worker_info()
    if base is None or info is None:
        return base
    key = (info.id, info.seed, base.initial_seed())
    cached = owner.__dict__.get("_worker_generator")
    if cached is None or cached[0] != key:
        words = np.random.SeedSequence([base.initial_seed(), info.seed]).generate_state(2)
        seed = (int(words[0]) << 32) | int(words[1])  # 64 bits
        owner._worker_generator = (key, torch.Generator(device=base.device).manual_seed(seed))
    return owner._worker_generator[1]


def check_attr(attr: Any, name: str) -> str:
    if not isinstance(attr, str) or not attr:
        raise TypeError(f"`{name}` must be a non-empty str, got {attr!r}")
    return attr


def rank_of(attr: str) -> int:
    """The rank ``k`` of a signal named ``x_k`` (1 for other names)."""
    return int(attr[2]) if len(attr) == 3 and attr[:2] == "x_" and attr[2] in "012" else 1


def get_flow(data: Any, attr: str) -> Tensor:
    """The finite floating edge-flow tensor ``data[attr]`` (``[rows]`` or ``[rows, C]``)."""
    if not hasattr(data, "keys") or attr not in data.keys():  # noqa: SIM118 - Data API
        raise ValueError(
            f"the input ({type(data).__name__}) has no edge-flow attribute {attr!r}; set `attr`"
        )
    x = data[attr]
    if not isinstance(x, Tensor):
        raise TypeError(f"`data.{attr}` must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"`data.{attr}` must be a floating tensor (edge flows), got {x.dtype}")
    if x.dim() not in (1, 2):
        raise ValueError(
            f"`data.{attr}` must have shape [N1] or [N1, C] (or [B * N1, C] on a Batch), "
            f"got {tuple(x.shape)}"
        )
    check_finite(x, f"data.{attr}", unit="row")  # a sum first: no [rows] temporary
    return x


def check_rows(data: Any, x: Tensor, attr: str, hodge: HodgeDecomposition | None) -> None:
    """On the shared complex of ``hodge`` (when known), check that the rows of ``x`` are
    whole signals of :math:`N_k` rows: one on a ``Data``, PyG's ``num_graphs`` on a
    ``Batch``, or numbered by a ``batch`` vector in blocks of :math:`N_k`. (Samples on their
    own complexes are checked against theirs where they are computed on.)"""
    if hodge is None or has_own_complex(data):
        return
    rows, n, rank = int(x.shape[0]), hodge.num_simplices, hodge.rank
    nk = f"N{rank}"
    one = "one flow" if rank == 1 else f"one rank-{rank} signal"
    try:
        graphs = int(data.num_graphs) if isinstance(data, Batch) else None
    except (ValueError, AttributeError, TypeError):  # a Batch built by hand
        graphs = None
    if graphs is not None:
        if rows != graphs * n:
            raise ValueError(
                f"`data.{attr}` of the Batch has {rows} rows, expected num_graphs * {nk} = "
                f"{graphs} * {n} = {graphs * n} ({one} of {nk} rows per sample)"
            )
        return
    batch = data["batch"] if "batch" in data.keys() else None  # noqa: SIM118 - Data API
    if batch is not None:
        if not isinstance(batch, Tensor):
            raise ValueError(
                f"`data.batch` must be a vector [{rows}] (the sample of every row of "
                f"`data.{attr}`), got {type(batch).__name__}"
            )
        check_batch_vector(batch, rows, n, rank, "data.batch", f"data.{attr}")
        return
    if rows != n:
        raise ValueError(
            f"`data.{attr}` has {rows} rows, but a single {type(data).__name__} holds {one} of "
            f"{nk} = {n} rows; to process several {'flows' if rank == 1 else 'signals'} in one "
            "call pass a torch_geometric Batch "
            "(e.g. from a DataLoader) or set `data.batch` to the sample index of every row"
        )


def drop_rows(x: Tensor, p: float | Tensor, generator: torch.Generator | None) -> Tensor:
    r""":math:`\mathbf{x} \circ (\mathbf{1} - \mathbf{d})`, :math:`d_i \sim
    \mathrm{Ber}(p_i)`: one float64 uniform draw per row of ``x`` ``[rows, ...]`` (its
    channels share it) from ``generator``; ``p`` one value or ``[rows]`` / ``[rows, 1]``. On
    the CPU many rows are drawn a chunk at a time: the same draws (the generator's stream
    does not depend on how it is split), no ``[rows]`` float64 temporaries."""
    rows = x.shape[0]
    p = p.reshape(-1) if isinstance(p, Tensor) else p
    on_cpu = (x.device if generator is None else generator.device).type == "cpu"
    step = DRAW_ROWS if on_cpu else max(rows, 1)
    parts = []
    for lo in range(0, rows, step) if rows else [0]:
        hi = min(lo + step, rows)
        if generator is None:
            draws = torch.rand(hi - lo, dtype=torch.float64, device=x.device)
        else:
            draws = torch.rand(
                hi - lo, dtype=torch.float64, generator=generator, device=generator.device
            ).to(x.device)
        p_lo = p[lo:hi].to(x.device, torch.float64) if isinstance(p, Tensor) else p
        keep = (~(draws < p_lo)).to(x.dtype).view(-1, *([1] * (x.dim() - 1)))  # [rows, 1...]
        parts.append(x[lo:hi] * keep)
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def store(data: Any, key: str, value: Tensor, like: str) -> None:
    """Set ``data[key] = value``; on a ``Batch`` also register the per-sample slices of
    ``key`` as those of ``like`` (new dicts: the input's are shared by the shallow copy)."""
    data[key] = value
    if isinstance(data, Batch):
        slices = getattr(data, "_slice_dict", None)
        incs = getattr(data, "_inc_dict", None)
        if slices is not None and like in slices:
            data._slice_dict = {**slices, key: slices[like]}
        if incs is not None and like in incs:
            data._inc_dict = {**incs, key: incs[like]}


# ---------------------------------------------------------------------------- the complex
def as_hodge(obj: Any, name: str = "hodge") -> HodgeDecomposition | None:
    """``None``, a :class:`HodgeDecomposition` (as is), or a :class:`ComplexOperators` or
    TopoNetX complex (decomposed with the default backend)."""
    if obj is None or isinstance(obj, HodgeDecomposition):
        return obj
    if isinstance(obj, ComplexOperators) or type(obj).__name__ in _TOPONETX:
        return HodgeDecomposition(obj)
    raise TypeError(
        f"`{name}` must be a HodgeDecomposition, a ComplexOperators or None (bound by "
        f"fit(dataset)), got {type(obj).__name__}"
    )


def bind_hodge(hodge: HodgeDecomposition | None, source: Any, owner: str) -> HodgeDecomposition:
    """The decomposition ``owner`` uses after binding ``source``: a complex (or its
    decomposition), or a dataset with a ``complex`` (a list of samples may have none).
    Unbound (``hodge=None``) it is the source's; bound, the source must be the same complex
    (same fingerprint)."""
    direct = isinstance(source, (HodgeDecomposition, ComplexOperators)) or (
        type(source).__name__ in _TOPONETX
    )
    ops = source if direct else getattr(source, "complex", None)
    if source is None or not (direct or ops is None or isinstance(ops, ComplexOperators)):
        raise TypeError(
            f"{owner}.bind needs a dataset with a `complex` (a ComplexOperators), a "
            f"HodgeDecomposition or ComplexOperators, got {type(ops or source).__name__}"
        )
    if hodge is None:
        if ops is None:
            raise TypeError(
                f"{owner} has no complex: pass `hodge=` (a HodgeDecomposition or "
                f"ComplexOperators) or fit a dataset with a `complex` attribute, got "
                f"{type(source).__name__}"
            )
        return as_hodge(ops)
    given = ops if ops is None or isinstance(ops, ComplexOperators) else as_hodge(ops).complex
    if given is not None and given.fingerprint() != hodge.complex.fingerprint():
        raise ValueError(
            f"{owner} is bound to the complex with fingerprint {hodge.complex.fingerprint()} "
            f"({hodge.complex.num_edges} edges), not to the given one ({given.fingerprint()}, "
            f"{given.num_edges} edges)"
        )
    return hodge


def no_complex(owner: str) -> TypeError:
    return TypeError(
        f"{owner} has no complex yet: pass `hodge=` (a HodgeDecomposition or ComplexOperators) "
        "or call fit(dataset) first"
    )


# ---------------------------------------------------------------------------- one or many
def has_own_complex(data: Any) -> bool:
    """The one/many branch: ``True`` for a sample (or batch) that carries its own complex
    (a ``ComplexData`` with incidences, or TopoBench's plain ``Data`` with
    ``incidence_1``), ``False`` for one on the dataset's shared complex."""
    if isinstance(data, ComplexData):
        return not data.is_shared
    return isinstance(data, Data) and "incidence_1" in data.keys()  # noqa: SIM118


def as_input(data: Any) -> Any:
    """``data`` as the transforms read it: a sample on its own complex as ``ComplexData``
    (TopoBench's plain ``Data`` converted); other inputs as they are."""
    return ComplexData.from_data(data) if has_own_complex(data) else data


def hodge_of(data: ComplexData, rank: int) -> HodgeDecomposition:
    """The decomposition of a sample's or batch's own complex (cached on the object)."""
    cache = data.__dict__.setdefault("_hodge_cache", {})
    if rank not in cache:
        cache[rank] = HodgeDecomposition(data.complex(), rank=rank)
    return cache[rank]


def samples_as_rows(data: ComplexData, x: Tensor, rank: int, attr: str) -> Tensor:
    """The sample of every row of ``x`` ``[sum N_k]``, the signals of the samples' own
    complexes (raises ``ValueError`` for another number of rows)."""
    counts = data.num_cells(rank)
    total = int(counts.sum())
    if int(x.shape[0]) != total:
        per = counts.tolist()
        raise ValueError(
            f"`data.{attr}` has {x.shape[0]} rows but the sample"
            + (f"s' complexes have N{rank} = {per[:6]}{'...' if len(per) > 6 else ''}"
               f" (sum {total})" if len(per) > 1 else f"'s complex has N{rank} = {total}")
            + f" {('nodes', 'edges', '2-cells')[rank]}: a signal of another complex?"
        )
    return data._batch_vector(rank)


def signals(
    data: Any,
    x: Tensor,
    attr: str,
    rank: int,
    hodge: HodgeDecomposition | None,
    owner: str,
    split: bool,
) -> tuple[HodgeDecomposition, Tensor, Callable[[Tensor], Tensor]]:
    """The one/many branch of the computations: the single-channel signals ``x`` ``[rows]``
    of ``data`` as dense rows on a complex, ``(decomposition, flows [S, N], back)``, ``back``
    mapping a result ``[S, N, ...]`` to ``[rows, ...]``. Samples on their own complexes are
    on their batch's block-diagonal complex: all in one row, or (``split``, for a
    per-sample optimisation) one row each, zero elsewhere. Samples on the shared complex
    (``hodge``; ``data=None``: the samples stacked by a fit) are its blocks of ``N_k`` rows."""
    if data is not None and has_own_complex(data):
        rows = samples_as_rows(data, x, rank, attr)  # [sum N_k]
        if not split:
            return hodge_of(data, rank), x.reshape(1, -1), samples_to_rows
        n = int(rows.numel())
        dense = x.new_zeros(int(data.num_cells(rank).numel()), n)
        dense[rows, torch.arange(n, device=x.device)] = x.reshape(-1)
        return hodge_of(data, rank), dense, lambda p: p.sum(0)  # each row in one sample
    if hodge is None:
        raise no_complex(owner)
    if hodge.num_simplices == 0 and x.shape[0] == 0:  # no simplices: no samples
        return hodge, x.reshape(0, 0), samples_to_rows
    hint = " (a signal of the wrong length)"
    flows = rows_to_samples(x.reshape(-1), hodge.num_simplices, hodge.rank, attr, hint=hint)
    return hodge, flows, samples_to_rows


def fit_plan(dataset: Any, attr: str) -> tuple[Any, list[ComplexData] | None]:
    """The first step of a fit: the dataset (an ``InMemoryDataset``, or the iterable as a
    list) and, for samples on their own complexes, them as ``ComplexData`` copies (else
    ``None``: samples of the shared complex, which the caller binds)."""
    memory = isinstance(dataset, InMemoryDataset)
    dataset = dataset if memory else list(dataset)
    if not len(dataset) or not has_own_complex(dataset.get(0) if memory else dataset[0]):
        return dataset, None
    samples = dataset
    if memory:
        if dataset.slices is None or attr not in dataset.slices:
            raise ValueError(f"the dataset's samples have no attribute {attr!r}")
        samples = [dataset.get(i) for i in range(int(dataset.slices[attr].numel()) - 1)]
    own = []
    for i, s in enumerate(samples):
        if not has_own_complex(s):
            raise ValueError(
                f"sample {i} carries no complex of its own (no incidences): mixing samples "
                "on the dataset's shared complex with samples on their own complexes"
            )
        c = copy.copy(s) if isinstance(s, ComplexData) else ComplexData.from_data(s)
        if attr not in c.keys():  # noqa: SIM118 - Data API
            raise ValueError(f"sample {i} has no attribute {attr!r}")
        own.append(c)
    return dataset, own


def fit_inputs(
    dataset: Any, own: list[ComplexData] | None, attr: str, rank: int, hodge: Any
) -> Iterator[tuple[Any, Tensor]]:
    """The inputs ``(data, x)`` of a fit's computation: the batches of the samples on their
    own complexes, a chunk of about :data:`CHUNK_EDGES` edges at a time (one block-diagonal
    complex each; a sample of the wrong length is named), or ``(None, x [S * N, C])``, the
    stacked signals of the samples on the shared complex of ``hodge``."""
    if own is None:
        if len(dataset):
            yield None, _stacked(dataset, attr, hodge.num_simplices, hodge.rank)
        return
    start = 0
    while start < len(own):
        stop, edges = start, 0
        while stop < len(own) and (stop == start or edges < CHUNK_EDGES):
            edges += int(own[stop].num_cells(1).sum())
            stop += 1
        for j in range(start, stop):
            try:
                samples_as_rows(own[j], own[j][attr], rank, attr)
            except ValueError as err:
                raise ValueError(f"sample {j}: {err}") from None
        chunk = Batch.from_data_list(own[start:stop])
        yield chunk, chunk[attr]
        start = stop


def _stacked(dataset: Any, attr: str, n: int, rank: int) -> Tensor:
    """The signals ``attr`` of all samples on the shared complex, stacked ``[S * N, C]``."""
    label, _, signal = simplex_words(rank)
    if isinstance(dataset, InMemoryDataset):
        slices = dataset.slices
        if slices is None or attr not in slices:
            raise ValueError(f"the dataset's samples have no attribute {attr!r}")
        if not bool((slices[attr].diff() == n).all()):
            raise ValueError(
                f"every sample's `{attr}` must have {label} = {n} rows (a {signal} on the "
                "complex of `hodge`)"
            )
        return get_flow(dataset._data, attr)  # the collated samples (PyG's storage)
    flows = []
    for i, data in enumerate(dataset):
        x = get_flow(data, attr)
        if x.shape[0] != n:
            raise ValueError(
                f"sample {i} has `{attr}` with {x.shape[0]} rows, expected {label} = {n}"
            )
        flows.append(x)
    return torch.cat(flows)


def fit_store(
    dataset: Any,
    own: list[ComplexData] | None,
    attr: str,
    values: list[dict[str, Tensor]],
    per_sample: dict[str, Tensor],
) -> Any:
    """The last step of a fit: store the computed ``values`` (``{key: [rows, ...]}`` per
    input of :func:`fit_inputs`) and ``per_sample`` values ``{key: [1, ...]}`` once per
    sample. An ``InMemoryDataset`` gets them in its storage, in place (views made by
    indexing share them), and is returned; a list gives a list of copies."""
    if not values or not values[0]:
        return dataset
    values = {k: torch.cat([v[k] for v in values]) for k in values[0]}
    if isinstance(dataset, InMemoryDataset):  # every sample of its storage (views share it)
        storage, slices = dataset._data, dataset.slices
        num = int(slices[attr].numel()) - 1
        for key, value in values.items():
            storage[key] = value
            slices[key] = slices[attr].clone()  # in place: views share storage and slices
        for key, value in per_sample.items():
            storage[key] = value.expand(num, *value.shape[1:]).clone()
            slices[key] = torch.arange(num + 1, device=slices[attr].device)
        dataset._data_list = None  # drop PyG's cache of separated samples
        return dataset
    samples = own if own is not None else [copy.copy(s) for s in dataset]
    parts = {k: v.split([int(s[attr].shape[0]) for s in samples]) for k, v in values.items()}
    for i, s in enumerate(samples):
        for key, rows in parts.items():
            s[key] = rows[i]
        for key, value in per_sample.items():
            s[key] = value
    return samples
