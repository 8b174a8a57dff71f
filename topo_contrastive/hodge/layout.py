"""Layouts of the signals :class:`~topo_contrastive.HodgeDecomposition` accepts.

One flow ``[N_k]``, one sample's ``[N_k, 1]``, a batch ``[B, N_k]`` / ``[B, N_k, 1]`` or a
PyG batch ``[B * N_k, 1]`` / ``[B * N_k]`` (with ``batch`` or ``num_graphs``) become
validated samples ``[B, N_k]`` and a map of results back to the input's layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["as_samples"]


def as_samples(
    x: Any,
    n1: int,
    rank: int,
    batch: torch.Tensor | None = None,
    num_graphs: int | None = None,
    name: str = "x",
) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
    """Validate edge flows in one of the accepted layouts (see
    :meth:`~topo_contrastive.HodgeDecomposition.decompose`).

    ``n1``: the length :math:`N_k` of one signal of rank ``rank``.

    Returns ``(flows [B, N1], restore)`` where ``restore`` maps a ``[B, N1]`` result
    back to the layout of ``x``.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    what = "edge flows" if rank == 1 else f"rank-{rank} signals"
    if not x.is_floating_point():
        raise TypeError(f"`{name}` must be a floating tensor ({what}), got dtype {x.dtype}")
    nk = f"N{rank}"  # N1 = number of edges for edge flows
    shape = tuple(x.shape)
    layouts = (
        f"[{nk}], [{nk}, 1], [B, {nk}], [B, {nk}, 1] or a PyG batch [B * {nk}, 1] (with "
        f"`batch` or `num_graphs`), {nk} = {n1}"
    )
    stacked = (x.dim() == 2 and shape[1] == 1 and shape[0] != n1 and n1 != 1) or (
        x.dim() == 1 and shape[0] != n1
    )  # a PyG batch: samples one after the other, one row per edge (N1 = 1: [B, N1])
    if batch is not None or num_graphs is not None or stacked:
        if x.dim() not in (1, 2) or (x.dim() == 2 and shape[1] != 1):
            raise ValueError(
                f"`{name}` of shape {shape} is not a PyG batch of {what} "
                f"([B * {nk}, 1] or [B * {nk}]); accepted layouts: {layouts}"
            )
        rows = shape[0]
        b = _num_samples(rows, n1, rank, batch, num_graphs, name)
        flows = x.reshape(b, n1)
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


def _num_samples(
    rows: int,
    n1: int,
    rank: int,
    batch: torch.Tensor | None,
    num_graphs: int | None,
    name: str,
) -> int:
    """Number of samples ``B`` of a PyG batch of ``rows = B * N1`` rows (validated)."""
    nk = f"N{rank}"  # N1 = number of edges for edge flows
    simplices = ("nodes", "edges", "triangles")[rank]
    if n1 == 0 or rows % n1 != 0:
        raise ValueError(
            f"`{name}` has {rows} rows, not a multiple of the complex's {nk} = {n1} "
            f"{simplices} (" + ("flows" if rank == 1 else "signals")
            + " of another complex?)"
        )
    b = rows // n1
    if batch is None and num_graphs is None:
        raise ValueError(
            f"`{name}` has {rows} rows = {b} x {nk}: for a PyG batch of flows pass `batch` "
            "(its batch vector, `data.batch`) or `num_graphs`"
        )
    if num_graphs is not None:
        if isinstance(num_graphs, bool) or not isinstance(num_graphs, (int, np.integer)):
            raise TypeError(f"`num_graphs` must be an int, got {type(num_graphs).__name__}")
        if int(num_graphs) != b:
            raise ValueError(
                f"`num_graphs`={num_graphs} does not match `{name}`: {rows} rows hold "
                f"{b} flows of {nk} = {n1} {simplices}"
            )
    if batch is not None:
        if not isinstance(batch, torch.Tensor) or batch.dtype not in (
            torch.int64,
            torch.int32,
        ):
            got = batch.dtype if isinstance(batch, torch.Tensor) else type(batch).__name__
            raise TypeError(
                f"`batch` must be an integer tensor [B * {nk}] (PyG's batch vector), got "
                f"{got}"
            )
        expected = torch.arange(b, device=batch.device).repeat_interleave(n1)
        if tuple(batch.shape) != (rows,) or not torch.equal(batch.long(), expected):
            raise ValueError(
                f"`batch` must give each of the {b} samples {nk} = {n1} consecutive rows of "
                f"`{name}` (PyG's layout of flows on one complex), got shape "
                f"{tuple(batch.shape)}"
                + (f" with values 0..{int(batch.max())}" if batch.numel() else "")
            )
    return b


def _finite(x: torch.Tensor, name: str) -> torch.Tensor:
    if not torch.isfinite(x).all():
        raise ValueError(f"`{name}` contains NaN or inf values")
    return x
