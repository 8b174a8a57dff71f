"""How the layers read their inputs (private).

The operators come as one :class:`~topo_contrastive.complex.Laplacians` value (or a pair of
sparse tensors, wrapped into one on every call). The features come in PyG's layout
``[N, C]`` (one sample, a batch of complexes with block-diagonal operators, or ``B`` samples
on one complex, ``N = B * N1``, with ``batch``) or densely as ``[B, N1, C]``; the kernel
takes them as ``[B, N1, C]``.

Checks of the values (finite features, the batch vector's numbering) run only where the
caller asks for them (``SCNN.check_finite``) and never while ``torch.compile`` traces.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from topo_contrastive.complex.laplacians import Laplacians

__all__ = ["as_laplacians", "check_blocks_batch", "edge_samples"]


def as_laplacians(laplacians: Any, sides: tuple[int, int]) -> Laplacians | None:
    """The :class:`Laplacians` of ``laplacians`` (a value, or a pair ``(L_down, L_up)``, of
    which the sides whose order in ``sides = (K_down, K_up)`` is 0 are ignored); ``None``
    where no operator is given, or a pair's active sides are none.

    Raises:
        TypeError: anything else.
        ValueError: an operator missing for an active side.
    """
    if not isinstance(laplacians, Laplacians):
        pair = laplacians if isinstance(laplacians, (tuple, list)) else None
        empty = pair is not None and len(pair) == 2 and not any(
            L is not None and k for L, k in zip(pair, sides, strict=True)
        )
        if laplacians is None or empty:
            if any(sides):
                raise ValueError(f"`laplacians` is empty but the layer has orders {sides} > 0")
            return None
        if pair is None or len(pair) != 2:
            raise TypeError(
                "`laplacians` must be a Laplacians (ComplexOperators.laplacians(), "
                "ComplexData.laplacians()) or a pair (L_down, L_up) of sparse tensors, got "
                f"{type(laplacians).__name__}"
            )
        laplacians = Laplacians(*(L if k else None for L, k in zip(pair, sides, strict=True)))
    for name, L, k in (("L_down", laplacians.down, sides[0]), ("L_up", laplacians.up, sides[1])):
        if k and L is None:
            raise ValueError(f"`{name}` is None but the layer has {name[2:]} order {k} > 0")
    return laplacians


def _check_batch_type(batch: Any, rows: int) -> Tensor:
    if not isinstance(batch, Tensor) or batch.is_floating_point() or batch.dtype == torch.bool:
        got = batch.dtype if isinstance(batch, Tensor) else type(batch).__name__
        raise TypeError(f"`batch` must be an integer tensor [{rows}] (data.batch_1), got {got}")
    if batch.dim() != 1 or int(batch.shape[0]) != rows:
        raise ValueError(
            f"`batch` must be a vector of shape [{rows}] (the sample of every row of `x`), got "
            f"shape {tuple(batch.shape)}"
        )
    return batch


def edge_samples(
    x: Any,
    laplacians: Laplacians | None,
    batch: Any,
    in_channels: int,
    check_values: bool = True,
) -> Tensor:
    """``x`` as ``[B, N1, C_in]`` (a view), checked against the operators and ``batch``.

    ``x`` is ``[B, N1, C]`` (dense, one complex), ``[N, C]`` with ``N`` the operators' size
    (one sample, or a batch of complexes), or ``[B * N1, C]`` with ``batch`` (``B`` samples on
    one complex); a batch of complexes comes back as ``[1, sum N1, C]``.

    Raises:
        TypeError: ``x`` not a floating tensor; ``batch`` not an integer tensor.
        ValueError: a shape, device or dtype that does not fit the operators; a ``batch``
            of the wrong length, or (with ``check_values``) not numbering equal blocks.
    """
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
    if laplacians is not None:
        n = laplacians.num_cells
        if n == 0:
            raise ValueError("the operators are [0, 0]: the complex has no edges")
        if laplacians.device != x.device or laplacians.dtype != x.dtype:
            raise ValueError(
                f"the operators have dtype {laplacians.dtype} on {laplacians.device} but `x` "
                f"has dtype {x.dtype} on {x.device}: they must share dtype and device (e.g. "
                "ops.laplacians(dtype=x.dtype, device=x.device), or laplacians.to(...))"
            )
    if x.dim() == 3:
        if batch is not None:
            raise ValueError("`batch` is only used with a 2-D `x` of shape [B*N1, C]")
        if laplacians is not None and laplacians.num_blocks > 1:
            raise ValueError(
                f"`x` of shape {tuple(x.shape)} is dense, but the operators are those of a "
                "batch of complexes, which takes `x` as [sum N1, C] with `batch`"
            )
        if laplacians is not None and x.size(1) != n:
            raise ValueError(
                f"`x` has {x.size(1)} edges (shape {tuple(x.shape)}) but the operators are "
                f"[{n}, {n}]"
            )
        return x
    rows = int(x.shape[0])
    if batch is not None:
        batch = _check_batch_type(batch, rows)
    if laplacians is None:  # no operator: the samples' size from `batch`
        num = 1 if batch is None or not rows else int(batch[-1]) + 1
        n = rows // num if rows % num == 0 else -1
        if n < 0:
            raise ValueError(f"`batch` says {num} samples, which do not divide {rows} rows")
    if rows == n:  # one sample, or a batch of complexes: [1, N, C]
        blocks = laplacians is not None and laplacians.ptr is not None
        if batch is not None and not blocks and check_values and batch.numel():
            if not torch.compiler.is_compiling() and bool(batch.any()):
                raise ValueError(
                    f"`batch` names several samples but the operators [{n}, {n}] are those "
                    "of one complex; a batch of complexes takes its block-diagonal operators "
                    "with their blocks (ComplexData.laplacians(), or Laplacians(..., ptr=...))"
                )
        return x.unsqueeze(0)
    if rows % n or laplacians is not None and laplacians.num_blocks > 1:
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
    num = rows // n
    if check_values and not torch.compiler.is_compiling():
        expected = torch.arange(num, device=batch.device).repeat_interleave(n)
        if not torch.equal(batch.long(), expected):
            raise ValueError(
                f"`batch` must number the samples 0, 1, ... in blocks of N1 = {n} consecutive "
                "rows of `x`, contiguous and in order (PyG's layout of flows on one complex)"
            )
    return x.view(num, n, x.size(-1))  # [B, N1, C]


def check_blocks_batch(batch: Any, laplacians: Laplacians, check_values: bool = True) -> int:
    """Check the batch vector of a batch of complexes against the blocks of ``laplacians``
    and return the number of samples.

    Raises:
        TypeError / ValueError: no ``batch`` (the samples would be pooled into one), a
            ``batch`` of the wrong type or length, or (with ``check_values``) other samples
            than the operators' blocks.
    """
    num, rows = laplacians.num_blocks, laplacians.num_cells
    if batch is None:
        raise ValueError(
            f"the operators belong to a batch of {num} complexes ({rows} edges) but no "
            "`batch` vector was given: pass batch=data.batch_1, so that every sample gets its "
            "own embedding (without it the samples would be pooled into one)"
        )
    batch = _check_batch_type(batch, rows)
    if check_values and not torch.compiler.is_compiling():
        sizes = laplacians.ptr.diff()
        expected = torch.arange(num).repeat_interleave(sizes).to(batch.device)
        if not torch.equal(batch.long(), expected):
            raise ValueError(
                f"`batch` does not number the {num} samples of the operators' blocks "
                f"({sizes.tolist()[:6]}{'...' if num > 6 else ''} edges) 0, 1, ... in order: "
                "the operators of one batch with the flows of another"
            )
    return num
