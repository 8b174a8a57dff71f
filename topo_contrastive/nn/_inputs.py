"""How the encoders read their inputs (private): the operators as one
:class:`~topo_contrastive.complex.Laplacians` value, the features in PyG's layout ``[N, C]``
(one sample; a batch of complexes; ``B`` samples on one complex with ``batch``) or densely
``[B, N1, C]``, handed to the kernel as ``[B, N1, C]``. Per call only metadata is checked;
checks that read values (the batch vector's numbering) run where the caller asks
(``SCNN.check_finite``) and never while ``torch.compile`` traces."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

from topo_contrastive._layout import check_batch_vector
from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn._scnn_kernel import kept_cache

#: PyG's pools of rows by a batch vector.
POOLS = {"mean": global_mean_pool, "sum": global_add_pool, "max": global_max_pool}


def operator_info(L: Laplacians) -> tuple[int, torch.dtype, torch.device, bool, bool]:
    """``(N, dtype, device, has L_down, has L_up)`` of the operators, kept on the value (so
    that ``torch.compile`` reads them without touching a sparse tensor)."""
    cache = kept_cache(L, "info")
    if "info" not in cache:
        cache["info"] = (L.num_cells, L.dtype, L.device, L.down is not None, L.up is not None)
    return cache["info"]


def as_laplacians(laplacians: Any, sides: tuple[int, int]) -> Laplacians | None:
    """The :class:`Laplacians` of a value or of a pair ``(L_down, L_up)`` (the sides whose
    order in ``sides = (K_down, K_up)`` is 0 ignored); ``None`` where no operator is given.

    Raises:
        TypeError: anything else.
        ValueError: an operator missing for an active side.
    """
    if not isinstance(laplacians, Laplacians):
        pair = laplacians if isinstance(laplacians, (tuple, list)) else ()
        if laplacians is not None and len(pair) != 2:
            raise TypeError(
                "`laplacians` must be a Laplacians (ComplexOperators.laplacians(), "
                "ComplexData.laplacians()) or a pair (L_down, L_up) of sparse tensors, got "
                f"{type(laplacians).__name__}"
            )
        pair = [L if k else None for L, k in zip(pair or (None, None), sides, strict=True)]
        if all(L is None for L in pair):
            if any(sides):
                raise ValueError(f"`laplacians` is empty but the layer has orders {sides} > 0")
            return None
        laplacians = Laplacians(*pair)
    given = operator_info(laplacians)[3:]
    for name, has, k in zip(("L_down", "L_up"), given, sides, strict=True):
        if k and not has:
            raise ValueError(f"`{name}` is None but the layer has {name[2:]} order {k} > 0")
    return laplacians


def _check_batch(batch: Any, rows: int) -> Tensor:
    if not isinstance(batch, Tensor) or batch.is_floating_point() or batch.dtype == torch.bool:
        got = batch.dtype if isinstance(batch, Tensor) else type(batch).__name__
        raise TypeError(f"`batch` must be an integer tensor [{rows}] (data.batch_1), got {got}")
    if batch.dim() != 1 or int(batch.shape[0]) != rows:
        raise ValueError(
            f"`batch` must be a vector of shape [{rows}] (the sample of every row of `x`), got "
            f"shape {tuple(batch.shape)}"
        )
    return batch


def _check_features(x: Any, L: Laplacians | None, in_channels: int) -> int | None:
    """Check ``x``'s type, dimensions and channels against the layer and the operators;
    return the operators' ``N`` (``None`` without operators)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"`x` must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"`x` must be a floating tensor, got dtype {x.dtype}")
    if x.dim() not in (2, 3):
        raise ValueError(
            "`x` must have shape [N1, C], [B, N1, C] or [B*N1, C] (with `batch`), got shape "
            f"{tuple(x.shape)}"
        )
    if x.size(-1) != in_channels:
        raise ValueError(
            f"`x` has {x.size(-1)} features in its last dimension (shape {tuple(x.shape)}), "
            f"but the layer has in_channels={in_channels}"
        )
    if L is None:
        return None
    n, dtype, device = operator_info(L)[:3]
    if n == 0:
        raise ValueError("the operators are [0, 0]: the complex has no edges")
    if device != x.device or dtype != x.dtype:
        raise ValueError(
            f"the operators have dtype {dtype} on {device} but `x` has dtype {x.dtype} on "
            f"{x.device}: they must share dtype and device (e.g. "
            "ops.laplacians(dtype=x.dtype, device=x.device), or laplacians.to(...))"
        )
    return n


def edge_samples(
    x: Any, L: Laplacians | None, batch: Any, in_channels: int, check_values: bool = True
) -> Tensor:
    """``x`` as ``[B, N1, C_in]`` (a view), checked against the operators and ``batch``; a
    batch of complexes ``[sum N1, C]`` comes back as ``[1, sum N1, C]``.

    Raises:
        TypeError: ``x`` not a floating tensor; ``batch`` not an integer tensor.
        ValueError: a shape, device or dtype that does not fit the operators; a ``batch``
            of the wrong length, or (with ``check_values``) not numbering equal blocks.
    """
    n = _check_features(x, L, in_channels)
    blocks = 1 if L is None else L.num_blocks
    if x.dim() == 3:
        if batch is not None:
            raise ValueError("`batch` is only used with a 2-D `x` of shape [B*N1, C]")
        if blocks > 1:
            raise ValueError(
                f"`x` of shape {tuple(x.shape)} is dense, but the operators are those of a "
                "batch of complexes, which takes `x` as [sum N1, C] with `batch`"
            )
        if n is not None and x.size(1) != n:
            raise ValueError(
                f"`x` has {x.size(1)} edges (shape {tuple(x.shape)}) but the operators are "
                f"[{n}, {n}]"
            )
        return x
    rows = int(x.shape[0])
    batch = None if batch is None else _check_batch(batch, rows)
    if n is None:  # no operator: the samples' size from `batch`
        num = 1 if batch is None or not rows else int(batch[-1]) + 1
        if rows % num:
            raise ValueError(f"`batch` says {num} samples, which do not divide {rows} rows")
        n = rows // num
    values = check_values and not torch.compiler.is_compiling()
    if rows == n:  # one sample, or a batch of complexes: [1, N, C]
        if batch is not None and (L is None or L.ptr is None) and values and bool(batch.any()):
            raise ValueError(
                f"`batch` names several samples but the operators [{n}, {n}] are those "
                "of one complex; a batch of complexes takes its block-diagonal operators "
                "with their blocks (ComplexData.laplacians(), or Laplacians(..., ptr=...))"
            )
        return x.unsqueeze(0)
    if rows % n or blocks > 1:
        raise ValueError(
            f"`x` has {rows} rows (shape {tuple(x.shape)}), not a multiple of N1={n}: the "
            f"operators are [{n}, {n}]"
            + (" (a batch of complexes takes all of its edges)" if rows % n == 0 else "")
        )
    if batch is None:
        raise ValueError(
            f"`x` has {rows} rows (shape {tuple(x.shape)}) but the operators are [{n}, {n}]; "
            "for a PyG mini-batch of flows pass `batch`"
        )
    if values:
        check_batch_vector(batch, rows, n)
    return x.view(rows // n, n, x.size(-1))  # [B, N1, C]


def complexes_batch(
    x: Tensor, L: Laplacians | None, batch: Any, check_values: bool = True
) -> int | None:
    """The number of samples where ``x`` ``[sum N1, C]`` is a batch of complexes (the
    operators' blocks, pooled by ``batch``), else ``None`` (the layouts on one complex).

    Raises:
        TypeError / ValueError: such a batch of several samples without ``batch`` (never one
            pooled embedding), a ``batch`` of the wrong type or length, or (with
            ``check_values``) other samples than the operators' blocks.
    """
    if L is None or L.ptr is None or x.dim() != 2 or int(x.shape[0]) != operator_info(L)[0]:
        return None
    num, rows = L.num_blocks, int(x.shape[0])
    if batch is None and num == 1:
        return None  # one sample
    if batch is None:
        raise ValueError(
            f"the operators belong to a batch of {num} complexes ({rows} edges) but no "
            "`batch` vector was given: pass batch=data.batch_1, so that every sample gets its "
            "own embedding (without it the samples would be pooled into one)"
        )
    batch = _check_batch(batch, rows)
    if check_values and not torch.compiler.is_compiling():
        sizes = L.ptr.diff()
        expected = torch.arange(num).repeat_interleave(sizes).to(batch.device)
        if not torch.equal(batch.long(), expected):
            raise ValueError(
                f"`batch` does not number the {num} samples of the operators' blocks "
                f"({sizes.tolist()[:6]}{'...' if num > 6 else ''} edges) 0, 1, ... in order: "
                "the operators of one batch with the flows of another"
            )
    return num
