"""Shared helpers of the masking transforms (private)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Batch


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
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"`data.{attr}` contains NaN or inf values")
    return x


def num_flows(data: Any, x: Tensor, num_edges: int, attr: str) -> int:
    """How many flows of ``num_edges`` rows the input holds, checking its layout.

    A plain ``Data`` holds **one** flow: ``data[attr]`` has ``N1`` rows. Several flows,
    stacked sample-major as ``[S * N1, C]``, need a PyG ``Batch`` (``S = num_graphs``, e.g.
    from a ``DataLoader``) or a ``batch`` vector ``[S * N1]`` giving every row's sample
    (PyG's convention for batched graphs), ``0 .. S-1`` in blocks of ``N1`` rows.

    Raises:
        ValueError: the rows do not match this layout.
    """
    rows, n1 = int(x.shape[0]), int(num_edges)
    if isinstance(data, Batch):
        try:
            graphs: int | None = int(data.num_graphs)
        except (ValueError, AttributeError, TypeError):  # a Batch built by hand
            graphs = None
        if graphs is not None:
            if rows != graphs * n1:
                raise ValueError(
                    f"`data.{attr}` of the Batch has {rows} rows, expected num_graphs * N1 = "
                    f"{graphs} * {n1} = {graphs * n1} (one flow of N1 rows per sample)"
                )
            return graphs
    batch = data["batch"] if "batch" in data.keys() else None  # noqa: SIM118 - Data API
    if batch is not None:
        if not isinstance(batch, Tensor) or batch.dim() != 1 or batch.shape[0] != rows:
            raise ValueError(
                f"`data.batch` must be a vector [{rows}] (the sample of every row of "
                f"`data.{attr}`), got {type(batch).__name__} "
                f"{tuple(batch.shape) if isinstance(batch, Tensor) else ''}"
            )
        flows = rows // n1 if n1 else 0
        expected = torch.arange(flows, device=batch.device).repeat_interleave(n1)
        if (n1 and rows % n1) or not torch.equal(batch.long(), expected):
            raise ValueError(
                f"`data.batch` must number the samples 0, 1, ... in blocks of N1 = {n1} rows "
                f"(flows stacked sample-major); got {rows} rows that do not form such blocks"
            )
        return flows
    if rows != n1:
        raise ValueError(
            f"`data.{attr}` has {rows} rows, but a single {type(data).__name__} holds one flow of "
            f"N1 = {n1} rows; to process several flows in one call pass a torch_geometric Batch "
            "(e.g. from a DataLoader) or set `data.batch` to the sample index of every row"
        )
    return 1


def uniform(rows: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    """``rows`` uniform draws in ``[0, 1)`` (float64) on ``device``, from ``generator``."""
    if generator is None:
        return torch.rand(rows, dtype=torch.float64, device=device)
    out = torch.rand(rows, dtype=torch.float64, generator=generator, device=generator.device)
    return out.to(device)


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
