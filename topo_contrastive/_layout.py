"""The layouts of signals on the simplices of one rank (:math:`N_k` rows per sample), and the
conversions between them: one signal ``[N_k]``, ``[N_k, 1]`` or ``[N_k, C]``; dense samples
``[B, N_k]`` or ``[B, N_k, C]``; a PyG batch ``[B * N_k, C]`` or ``[B * N_k]`` (the samples
one after the other on one complex, with PyG's batch vector or ``num_graphs = B``). Errors
name the argument, the expected and the given shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from topo_contrastive._utils.checks import check_int


def simplex_words(rank: int) -> tuple[str, str, str]:
    """``(label, simplices, signal)`` of a rank for messages: ``("N1", "edges", "flow")``."""
    rank = int(rank)
    names = ("nodes", "edges", "triangles", "tetrahedra")
    simplices = names[rank] if 0 <= rank < len(names) else f"rank-{rank} simplices"
    return f"N{rank}", simplices, "flow" if rank == 1 else f"rank-{rank} signal"


def batch_vector(num_samples: int, n: int, device: torch.device | str | None = None) -> Tensor:
    """PyG's batch vector ``int64 [num_samples * n]``: ``[0] * n + [1] * n + ...``."""
    return torch.arange(int(num_samples), device=device).repeat_interleave(int(n))


def rows_to_samples(
    x: Tensor, n: int, rank: int = 1, name: str = "x", of: str | None = None, hint: str = ""
) -> Tensor:
    """A PyG batch ``[B * n, ...]`` as dense samples ``[B, n, ...]`` (a view where possible);
    a ``ValueError`` naming ``name`` (and ``of``, what ``n`` is) unless ``n`` divides the rows."""
    rows = int(x.shape[0])
    if n == 0 or rows % n != 0:
        label, simplices, _ = simplex_words(rank)
        what = of if of is not None else f"the complex's {label} = {n} {simplices}"
        raise ValueError(f"`{name}` has {rows} rows, not a multiple of {what}{hint}")
    return x.reshape(rows // n, n, *x.shape[1:])


def samples_to_rows(x: Tensor) -> Tensor:
    """Dense samples ``[B, n, ...]`` as a PyG batch ``[B * n, ...]`` (a view where possible)."""
    return x.reshape(-1, *x.shape[2:])


def check_num_simplices(x: Tensor, dim: int, n: int, rank: int, name: str, of: str) -> None:
    """A ``ValueError`` unless ``x.size(dim) == n``; ``of`` says where ``n`` comes from."""
    if x.size(dim) != n:
        _, simplices, _ = simplex_words(rank)
        raise ValueError(
            f"`{name}` has {x.size(dim)} {simplices} (shape {tuple(x.shape)}) but {of}"
        )


def check_batch_vector(
    batch: Tensor, rows: int, n: int, rank: int = 1, name: str = "batch", x_name: str = "x"
) -> int:
    """``B`` of PyG's batch vector ``batch [B * n]`` of ``rows`` rows of ``x_name`` (samples
    ``0 .. B-1`` in order, each ``n`` consecutive rows); a ``ValueError`` otherwise."""
    label, simplices, _ = simplex_words(rank)
    if batch.dim() != 1 or int(batch.shape[0]) != rows:
        raise ValueError(
            f"`{name}` must be a vector of shape [{rows}] (the sample of every row of "
            f"`{x_name}`), got shape {tuple(batch.shape)}"
        )
    num = rows // n if n else 0
    if (n and rows % n) or not torch.equal(batch.long(), batch_vector(num, n, batch.device)):
        raise ValueError(
            f"`{name}` must number the samples 0, 1, ... in blocks of {label} = {n} "
            f"consecutive rows of `{x_name}` ({simplices} of one sample contiguous and in "
            f"order: PyG's layout of signals on one complex); got {rows} rows"
            + (f" with values {int(batch.min())}..{int(batch.max())}" if batch.numel() else "")
        )
    return num


def as_samples(
    x: Any,
    n1: int,
    rank: int,
    batch: Tensor | None = None,
    num_graphs: int | None = None,
    name: str = "x",
) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
    """``(signals [B, N_k], restore)`` of finite single-channel signals ``x`` in a layout
    ``[N_k]``, ``[N_k, 1]``, ``[B, N_k]``, ``[B, N_k, 1]`` or a PyG batch ``[B * N_k, 1]`` /
    ``[B * N_k]`` (with ``batch`` or ``num_graphs``); ``restore`` maps a ``[B, N_k]``
    result back to the layout of ``x``. ``TypeError`` / ``ValueError`` name what is wrong."""
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    what = "edge flows" if rank == 1 else f"rank-{rank} signals"
    if not x.is_floating_point():
        raise TypeError(f"`{name}` must be a floating tensor ({what}), got dtype {x.dtype}")
    if x.device.type == "meta":
        raise ValueError(
            f"`{name}` is on the meta device, which holds no values; give {what} on the cpu "
            "or a cuda device"
        )
    nk = f"N{rank}"
    shape = tuple(x.shape)
    layouts = (
        f"[{nk}], [{nk}, 1], [B, {nk}], [B, {nk}, 1] or a PyG batch [B * {nk}, 1] (with "
        f"`batch` or `num_graphs`), {nk} = {n1}"
    )
    stacked = (x.dim() == 2 and shape[1] == 1 and shape[0] != n1 and n1 != 1) or (
        x.dim() == 1 and shape[0] != n1
    )  # a PyG batch: samples one after the other, one row per simplex (N1 = 1: [B, N1])
    if batch is not None or num_graphs is not None or stacked:
        if x.dim() not in (1, 2) or (x.dim() == 2 and shape[1] != 1):
            raise ValueError(
                f"`{name}` of shape {shape} is not a PyG batch of {what} "
                f"([B * {nk}, 1] or [B * {nk}]); accepted layouts: {layouts}"
            )
        flows = rows_to_samples(
            x.reshape(-1), n1, rank, name,
            hint=" (" + ("flows" if rank == 1 else "signals") + " of another complex?)",
        )
        _check_pyg_batch(shape[0], n1, rank, batch, num_graphs, name)
        return _finite(flows, name), lambda out: out.reshape(shape)
    if x.dim() == 1 and shape[0] == n1:
        return _finite(x.reshape(1, n1), name), lambda out: out[0]
    if x.dim() == 2 and shape[1] == n1:
        return _finite(x, name), lambda out: out
    if x.dim() == 2 and shape == (n1, 1):
        return _finite(x.reshape(1, n1), name), lambda out: out.reshape(n1, 1)
    if x.dim() == 3 and shape[1:] == (n1, 1):
        return _finite(x.reshape(shape[0], n1), name), lambda out: out.unsqueeze(-1)
    raise ValueError(f"`{name}` must have shape {layouts}; got {shape}")


def _check_pyg_batch(
    rows: int, n1: int, rank: int, batch: Tensor | None, num_graphs: int | None, name: str
) -> None:
    """Check that ``batch`` / ``num_graphs`` describe ``rows = B * N_k`` rows of ``name``."""
    if batch is None and num_graphs is None:
        raise ValueError(
            f"`{name}` has {rows} rows = {rows // n1} x N{rank}: for a PyG batch of flows "
            "pass `batch` (its batch vector, `data.batch`) or `num_graphs`"
        )
    if num_graphs is not None:
        num_graphs = check_int(num_graphs, "num_graphs")
        if int(num_graphs) * n1 != rows:
            label, simplices, signal = simplex_words(rank)
            raise ValueError(
                f"`num_graphs`={num_graphs} does not match `{name}`: {rows} rows hold "
                f"{rows // n1 if n1 else 0} {signal}s of {label} = {n1} {simplices}"
            )
    if batch is not None:
        if not isinstance(batch, Tensor) or batch.dtype not in (torch.int64, torch.int32):
            got = batch.dtype if isinstance(batch, Tensor) else type(batch).__name__
            raise TypeError(
                f"`batch` must be an integer tensor [B * N{rank}] (PyG's batch vector), got "
                f"{got}"
            )
        check_batch_vector(batch, rows, n1, rank, "batch", name)


def _finite(x: Tensor, name: str) -> Tensor:
    """``x``, or a ``ValueError`` for NaN or inf values."""
    if not torch.isfinite(x).all():
        raise ValueError(f"`{name}` contains NaN or inf values")
    return x
