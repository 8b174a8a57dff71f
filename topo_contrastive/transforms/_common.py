"""Shared helpers of the masking transforms (private)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import get_worker_info
from torch_geometric.data import Batch, InMemoryDataset

from topo_contrastive._layout import check_batch_vector
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.utils.checks import check_finite


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
    """The generator ``owner`` (a masking transform with a ``generator`` attribute) draws from.

    In the main process: ``owner.generator`` itself (``None``: torch's global generator).
    In a ``DataLoader`` worker, a seeded ``owner.generator`` would be a copy of the main
    process's, identical in every worker and restarting at every epoch; instead each worker
    gets its own generator, seeded once per worker from ``owner.generator.initial_seed()``
    and the worker's seed (``torch.utils.data.get_worker_info().seed``: the DataLoader's
    base seed, drawn per epoch from its ``generator`` or torch's global one, plus the worker
    id) through ``numpy.random.SeedSequence``. So the masks are reproducible (same seeds,
    same masks), differ across workers and across epochs. Without a generator, the global
    generator is used: PyTorch seeds it per worker already.
    """
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


def num_flows(data: Any, x: Tensor, num_edges: int, attr: str, rank: int = 1) -> int:
    """How many flows of ``num_edges`` rows the input holds, checking its layout (signals of
    rank ``rank``: ``num_edges`` is then :math:`N_k`, named in the messages).

    A plain ``Data`` holds **one** flow: ``data[attr]`` has ``N1`` rows. Several flows,
    stacked sample-major as ``[S * N1, C]``, need a PyG ``Batch`` (``S = num_graphs``, e.g.
    from a ``DataLoader``) or a ``batch`` vector ``[S * N1]`` giving every row's sample
    (PyG's convention for batched graphs), ``0 .. S-1`` in blocks of ``N1`` rows.

    Raises:
        ValueError: the rows do not match this layout.
    """
    rows, n1 = int(x.shape[0]), int(num_edges)
    nk = f"N{rank}"
    one = "one flow" if rank == 1 else f"one rank-{rank} signal"
    if isinstance(data, Batch):
        try:
            graphs: int | None = int(data.num_graphs)
        except (ValueError, AttributeError, TypeError):  # a Batch built by hand
            graphs = None
        if graphs is not None:
            if rows != graphs * n1:
                raise ValueError(
                    f"`data.{attr}` of the Batch has {rows} rows, expected num_graphs * {nk} = "
                    f"{graphs} * {n1} = {graphs * n1} ({one} of {nk} rows per sample)"
                )
            return graphs
    batch = data["batch"] if "batch" in data.keys() else None  # noqa: SIM118 - Data API
    if batch is not None:
        if not isinstance(batch, Tensor):
            raise ValueError(
                f"`data.batch` must be a vector [{rows}] (the sample of every row of "
                f"`data.{attr}`), got {type(batch).__name__}"
            )
        return check_batch_vector(batch, rows, n1, rank, "data.batch", f"data.{attr}")
    if rows != n1:
        raise ValueError(
            f"`data.{attr}` has {rows} rows, but a single {type(data).__name__} holds {one} of "
            f"{nk} = {n1} rows; to process several {'flows' if rank == 1 else 'signals'} in one "
            "call pass a torch_geometric Batch "
            "(e.g. from a DataLoader) or set `data.batch` to the sample index of every row"
        )
    return 1


#: Rows of a mask drawn at once by :func:`drop_rows` on the CPU (larger inputs are drawn a
#: chunk at a time, the same draws).
DRAW_ROWS = 2**22


def uniform(rows: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    """``rows`` uniform draws in ``[0, 1)`` (float64) on ``device``, from ``generator``."""
    if generator is None:
        return torch.rand(rows, dtype=torch.float64, device=device)
    out = torch.rand(rows, dtype=torch.float64, generator=generator, device=generator.device)
    return out.to(device)


def drop_rows(x: Tensor, p: float | Tensor, generator: torch.Generator | None) -> Tensor:
    r"""The masked copy :math:`\mathbf{x} \circ (\mathbf{1} - \mathbf{d})`,
    :math:`d_i \sim \mathrm{Ber}(p_i)`, one draw per row of ``x``: the batched sampling of
    every mask (a ``Data``/``Batch`` ``[rows, C]``, or dense samples ``[B, N_k]`` read as
    ``B * N_k`` rows).

    Args:
        x: ``[rows]`` or ``[rows, C]`` (the channels of a row share its draw).
        p: one drop probability, or ``[rows]`` / ``[rows, 1]`` per row.
        generator: the generator of the ``rows`` uniform draws (float64), or ``None``.

    Returns:
        ``x``'s shape, device and dtype.
    """
    rows = x.shape[0]
    p_rows = p.reshape(-1) if isinstance(p, Tensor) else p
    on_cpu = (x.device if generator is None else generator.device).type == "cpu"
    if rows <= DRAW_ROWS or not on_cpu:
        return _drop_slice(x, p_rows, generator, 0, rows)
    # many rows: the same draws a chunk at a time (the CPU generator's stream does not
    # depend on how its draws are split), so no [rows] float64 temporaries
    out = torch.empty_like(x)
    for lo in range(0, rows, DRAW_ROWS):
        hi = min(lo + DRAW_ROWS, rows)
        out[lo:hi] = _drop_slice(x, p_rows, generator, lo, hi)
    return out


def _drop_slice(
    x: Tensor, p: float | Tensor, generator: torch.Generator | None, lo: int, hi: int
) -> Tensor:
    """:func:`drop_rows` of the rows ``lo .. hi - 1`` (``p`` one value or ``[rows]``)."""
    draws = uniform(hi - lo, generator, x.device)  # [hi - lo]
    if isinstance(p, Tensor):
        p = p[lo:hi].to(x.device, torch.float64)
    return apply_drop(x[lo:hi], draws < p)


def apply_drop(x: Tensor, drop: Tensor) -> Tensor:
    """``x * (1 - d)`` with the row mask ``drop [rows]`` shared by all channels."""
    keep = (~drop).to(x.dtype).view(-1, *([1] * (x.dim() - 1)))  # [rows, 1...]
    return x * keep


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


def as_hodge(obj: Any, name: str = "hodge") -> HodgeDecomposition | None:
    """``None``, a :class:`HodgeDecomposition` (as is) or a :class:`ComplexOperators`
    (decomposed with the default backend)."""
    if obj is None or isinstance(obj, HodgeDecomposition):
        return obj
    if isinstance(obj, ComplexOperators) or type(obj).__name__ in (
        "SimplicialComplex",
        "CellComplex",
    ):  # the library's complex, or TopoNetX's
        return HodgeDecomposition(obj)
    raise TypeError(
        f"`{name}` must be a HodgeDecomposition, a ComplexOperators or None (bound by "
        f"fit(dataset)), got {type(obj).__name__}"
    )


def bind_hodge(
    hodge: HodgeDecomposition | None, dataset: Any, owner: str
) -> HodgeDecomposition:
    """The decomposition to use for ``dataset``: ``hodge`` if given (checked against the
    dataset's ``complex`` when it has one), else one of ``dataset.complex``."""
    ops = getattr(dataset, "complex", None)
    if ops is not None and not isinstance(ops, ComplexOperators):
        raise TypeError(
            f"`dataset.complex` must be a ComplexOperators, got {type(ops).__name__}"
        )
    if hodge is None:
        if ops is None:
            raise TypeError(
                f"{owner} has no complex: pass `hodge=` (a HodgeDecomposition or "
                f"ComplexOperators) or fit a dataset with a `complex` attribute, got "
                f"{type(dataset).__name__}"
            )
        return HodgeDecomposition(ops)
    if ops is not None and ops.fingerprint() != hodge.complex.fingerprint():
        raise ValueError(
            f"the dataset's complex ({ops.num_edges} edges, fingerprint {ops.fingerprint()}) "
            f"is not the one {owner} was built for ({hodge.complex.num_edges} edges, "
            f"fingerprint {hodge.complex.fingerprint()})"
        )
    return hodge


def stacked_flows(
    dataset: InMemoryDataset | Iterable[Any], attr: str, n1: int, rank: int = 1
) -> tuple[Tensor, Any]:
    """The flows ``attr`` of all samples of ``dataset`` stacked ``[S * N1, C]``
    (sample-major), and the samples to hand to :func:`store_rows` with the values computed
    from them (the ``InMemoryDataset`` itself, or a list of the other iterable's ``Data``).

    ``rank`` (default 1) names the signals' rank in the messages (``N_k`` rows).

    Raises:
        ValueError: a sample without a valid flow of ``N1`` rows.
    """
    if isinstance(dataset, InMemoryDataset):
        storage = dataset._data  # the collated samples (PyG's documented internal store)
        slices = dataset.slices
        if slices is None or attr not in slices:
            raise ValueError(f"the dataset's samples have no attribute {attr!r}")
        if not bool((slices[attr].diff() == n1).all()):
            raise ValueError(
                f"every sample's `{attr}` must have N{rank} = {n1} rows (a "
                + ("flow" if rank == 1 else f"rank-{rank} signal")
                + " on the complex of `hodge`)"
            )
        return get_flow(storage, attr), dataset
    data_list = list(dataset)
    flows = []
    for i, data in enumerate(data_list):
        x = get_flow(data, attr)
        if x.shape[0] != n1:
            raise ValueError(
                f"sample {i} has `{attr}` with {x.shape[0]} rows, expected N{rank} = {n1}"
            )
        flows.append(x)
    return (torch.cat(flows) if flows else torch.zeros(0, 1)), data_list


def store_rows(
    samples: Any,
    attr: str,
    n1: int,
    values: dict[str, Tensor],
    per_sample: dict[str, Tensor] | None = None,
) -> Any:
    """Store per-row ``values`` ``{key: [S * N1, ...]}`` (computed from
    :func:`stacked_flows`) and ``per_sample`` values ``{key: [S, ...]}`` (one row per
    sample) on ``samples``: an ``InMemoryDataset`` gets the new keys in its storage, in
    place, sliced like ``attr`` (views made by indexing share them; PyG's cache of separated
    samples is dropped) and is returned; a list of ``Data`` gives a list of shallow copies
    carrying the new keys."""
    per_sample = per_sample or {}
    if isinstance(samples, InMemoryDataset):
        storage, slices = samples._data, samples.slices
        bounds = slices[attr]
        for key, value in values.items():
            storage[key] = value
            slices[key] = bounds.clone()  # in place: views share storage and slices
        for key, value in per_sample.items():
            storage[key] = value
            slices[key] = torch.arange(value.shape[0] + 1, device=bounds.device)
        samples._data_list = None  # drop PyG's cache of separated samples
        return samples
    parts = {k: v.split(n1) for k, v in values.items()}
    parts.update({k: v.split(1) for k, v in per_sample.items()})
    out = []
    for i, data in enumerate(samples):
        data = copy.copy(data)
        for key, rows in parts.items():
            data[key] = rows[i]
        out.append(data)
    return out
