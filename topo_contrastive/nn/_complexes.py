"""Checks of a PyG batch of many complexes for the layers (private).

A batch of samples on different complexes is one complex with block-diagonal operators
``[sum N1, sum N1]`` and the edge features stacked ``[sum N1, C]``; PyG's batch vector
(``ComplexData.batch_1``) gives every edge's sample. The samples must be contiguous and in
order (PyG's layout), and no operator may couple two samples.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from topo_contrastive.complex._operators import operator_blocks

__all__ = ["blocks_of", "check_complexes_batch", "refuse_pooled_complexes"]


def blocks_of(*operators: Any) -> tuple[int, ...] | None:
    """The block sizes recorded on the first tagged operator (``ComplexData.laplacians``)."""
    for L in operators:
        if L is not None:
            blocks = operator_blocks(L)
            if blocks is not None:
                return blocks
    return None


def refuse_pooled_complexes(x: Any, operators: tuple[Any, ...]) -> None:
    """Refuse an input that is not the 2-D ``[sum N1, C]`` rows with their batch vector on
    the operators of a batch of several complexes (a 3-D ``[1, sum N1, C]``, or a 2-D input
    without ``batch``): pooled, it would give one embedding of several samples.

    Raises:
        ValueError: the operators are tagged with more than one block (a ``ComplexData``
            batch of several samples).
    """
    blocks = blocks_of(*operators)
    if blocks is None or len(blocks) <= 1:
        return
    shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
    raise ValueError(
        f"the operators belong to a batch of {len(blocks)} complexes (block-diagonal, "
        f"{sum(blocks)} edges) but `x` of shape {shape} came without its batch vector: "
        "pass `x` as [sum N1, C] with batch=data.batch_1, so that every sample gets its "
        "own embedding (without it the samples would be pooled into one)"
    )


def check_complexes_batch(batch: Any, rows: int, operators: tuple[Any, ...]) -> int:
    """Validate the batch vector of a batch of complexes and return the number of samples.

    Args:
        batch: PyG's batch vector ``[sum N1]`` (the sample of every edge).
        rows: the edges of the batch, :math:`\\sum N_1`.
        operators: the active operators ``[sum N1, sum N1]``.

    Under ``torch.compile`` (:func:`torch.compiler.is_compiling`) only the type and shape
    are checked: the checks of the values would break the compiled graph.

    Raises:
        TypeError: ``batch`` is not an integer tensor.
        ValueError: ``batch`` of the wrong length, not numbering the samples ``0, 1, ...``
            in contiguous blocks, other block sizes than the operators' samples, or an
            operator that couples edges of two samples.
    """
    if not isinstance(batch, Tensor) or batch.dtype not in (torch.int64, torch.int32):
        got = batch.dtype if isinstance(batch, Tensor) else type(batch).__name__
        raise TypeError(f"`batch` must be an integer tensor [sum N1] (data.batch_1), got {got}")
    if batch.dim() != 1 or int(batch.shape[0]) != rows:
        raise ValueError(
            f"`batch` must be a vector of shape [{rows}] (the sample of every edge, "
            f"data.batch_1), got shape {tuple(batch.shape)}"
        )
    if rows == 0:
        raise ValueError("the batch has no edges")
    if torch.compiler.is_compiling():
        # traced by torch.compile: the checks of the values would break the graph (they
        # ran in eager mode, and run again there); the sample count of a tagged batch is
        # known without reading the batch vector
        blocks = blocks_of(*operators)
        return len(blocks) if blocks is not None else int(batch[-1]) + 1
    b = batch.long()
    steps = b[1:] - b[:-1]
    if int(b[0]) != 0 or bool(((steps != 0) & (steps != 1)).any()):
        raise ValueError(
            "`batch` must number the samples 0, 1, ... with the edges of each sample "
            "contiguous and in order (PyG's batch vector, data.batch_1)"
        )
    num = int(b[-1]) + 1
    sizes = tuple(torch.bincount(b, minlength=num).tolist())
    blocks = blocks_of(*operators)
    if blocks is not None and blocks != sizes:
        raise ValueError(
            f"`batch` gives {num} samples with {list(sizes[:6])}{'...' if num > 6 else ''} "
            f"edges but the operators belong to a batch of {len(blocks)} complexes with "
            f"{list(blocks[:6])}{'...' if len(blocks) > 6 else ''} edges: the operators of "
            "one batch with the flows of another"
        )
    if blocks is None and num > 1:  # one sample: no operator can couple two
        for L in operators:
            if L is None:
                continue
            idx = L.detach().to_sparse_coo().coalesce().indices().to(b.device)
            cross = b[idx[0]] != b[idx[1]]
            if bool(cross.any()):
                i = int(cross.nonzero()[0, 0])
                r, c = int(idx[0, i]), int(idx[1, i])
                raise ValueError(
                    f"the operator couples edge {r} of sample {int(b[r])} with edge {c} of "
                    f"sample {int(b[c])}: the operators of a batch of complexes are "
                    "block-diagonal (ComplexData.laplacians()); `batch` does not fit them"
                )
    return num
