r"""Edge order for memory locality on large complexes (private to
:class:`~topo_contrastive.nn.SCNN`).

A Laplacian product :math:`\mathbf{L}\mathbf{X}` gathers, for every edge, the feature rows
of its neighbours. When the edges are numbered without regard to where they lie (a
Delaunay complex of random points, a user's network in file order), those rows are
scattered over the whole ``[N1, C]`` block; once a sample's features no longer fit in
the CPU caches (from about 10^4 edges at width 32-64), every gather misses and the
step's time per edge grows with ``N1``.

:func:`locality_order` renumbers the edges by the reverse Cuthill-McKee order of the
pattern of :math:`\mathbf{L}_{down} + \mathbf{L}_{up}` (``scipy.sparse.csgraph``), which
keeps every edge's neighbours within a narrow band of indices. The SCNN then permutes its
input once, runs every layer with the permuted operators
:math:`\mathbf{P}\mathbf{L}\mathbf{P}^\top`, and permutes the last layer's features back:
the function computed is the same (an SCNN layer is equivariant to renumbering the
edges), up to the order of floating-point additions inside the sparse products.

Measured on 2 AMD EPYC cores (``benchmarks/bench_scaling.py``: 2 layers, width 32, batch 8,
Delaunay complexes): a training step at 16k / 64k / 256k / 1M edges took 0.104 / 0.455 /
2.85 / 14.9 s in the complex's own order and 0.087 / 0.402 / 1.88 / 8.4 s in this order;
the order itself costs 2 ms / 10 ms / 60 ms / 0.34 s, once per pair of operators (cached).
Below :data:`MIN_EDGES` the features stay in cache and nothing is reordered, so results on
the paper's complexes (about 1,100 edges and fewer) are bit-for-bit those of the plain
order.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import reverse_cuthill_mckee
from torch import Tensor

from topo_contrastive.complex.laplacians import Laplacians

__all__ = ["MIN_EDGES", "Order", "locality_order", "permute_edges", "permute_operator"]

#: Complexes with at least this many edges are renumbered on the CPU (see the module).
MIN_EDGES = 16_384


class Order:
    """A renumbering of the edges and the operators in it.

    Attributes:
        perm: ``int64 [N1]``; new edge ``i`` is old edge ``perm[i]``.
        inverse: ``int64 [N1]``; old edge ``j`` is new edge ``inverse[j]``.
        laplacians: the operators in the new numbering.
    """

    __slots__ = ("inverse", "laplacians", "perm")

    def __init__(self, perm: Tensor, laplacians: Laplacians) -> None:
        self.perm = perm
        self.inverse = torch.empty_like(perm)
        self.inverse[perm] = torch.arange(perm.numel(), device=perm.device)
        down, up = (None if L is None else permute_operator(L, self.inverse) for L in laplacians)
        self.laplacians = Laplacians(
            down, up, rank=laplacians.rank, symmetric=laplacians.symmetric
        )


def _gather_rows(x: Tensor, index: Tensor) -> Tensor:
    """``x[:, index]`` for ``x`` ``[B, N1, C]``, as one row gather of the ``[B*N1, C]`` view
    (several times faster on the CPU than ``index_select`` along dimension 1)."""
    B, n1, C = x.shape
    x = x.contiguous()
    rows = (torch.arange(B, device=x.device) * n1).unsqueeze(1) + index.to(x.device)  # [B, N1]
    return x.view(B * n1, C).index_select(0, rows.view(-1)).view(B, n1, C)


class _Permute(torch.autograd.Function):
    """``x[:, perm]``; its adjoint is the gather by the inverse permutation (no scatter)."""

    @staticmethod
    def forward(ctx, x: Tensor, perm: Tensor, inverse: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(inverse)
        return _gather_rows(x, perm)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        (inverse,) = ctx.saved_tensors
        return _gather_rows(grad, inverse), None, None


def permute_edges(x: Tensor, order: Order, back: bool = False) -> Tensor:
    """Edge features ``[B, N1, C]`` in the new numbering of ``order`` (``back``: from the new
    numbering to the complex's), differentiable."""
    if back:
        return _Permute.apply(x, order.inverse, order.perm)
    return _Permute.apply(x, order.perm, order.inverse)


def permute_operator(L: Tensor, inverse: Tensor) -> Tensor:
    """:math:`\\mathbf{P}\\mathbf{L}\\mathbf{P}^\\top` as a coalesced sparse COO tensor, where
    old index ``j`` becomes ``inverse[j]`` (same dtype and device as ``L``)."""
    coo = L.detach().to_sparse_coo().coalesce()
    idx = inverse.to(coo.device)[coo.indices()]  # [2, nnz]
    return torch.sparse_coo_tensor(
        idx, coo.values(), coo.shape, is_coalesced=False, check_invariants=False
    ).coalesce()


def _pattern(L: Tensor) -> sp.csr_matrix:
    coo = L.detach().to_sparse_coo().coalesce()
    row, col = coo.indices().cpu().numpy()
    ones = np.ones(row.size, dtype=np.int8)
    return sp.csr_matrix((ones, (row, col)), shape=tuple(coo.shape))


def locality_order(laplacians: Laplacians) -> Order | None:
    """The :class:`Order` of the operators of ``laplacians`` (kept on the value), or ``None``
    where nothing is reordered: fewer than :data:`MIN_EDGES` edges, or not on the CPU.

    The order is the reverse Cuthill-McKee permutation of the symmetrised pattern of
    ``L_down + L_up``; it is computed once per value (and in-place versions).
    """
    if laplacians.num_cells < MIN_EDGES or laplacians.device.type != "cpu":
        return None
    cache = laplacians.cache
    if "locality_order" not in cache:
        cache["locality_order"] = _order(laplacians)
    return cache["locality_order"]


def _order(laplacians: Laplacians) -> Order | None:
    given = [L for L in laplacians if L is not None]
    if not all(bool(torch.isfinite(L.detach().to_sparse_coo().coalesce().values()).all())
               for L in given):
        return None  # the plain path refuses the operator, with positions in its own numbering
    pattern = _pattern(given[0])
    for L in given[1:]:
        pattern = pattern + _pattern(L)
    pattern = (pattern + pattern.T).tocsr()
    perm = np.ascontiguousarray(reverse_cuthill_mckee(pattern, symmetric_mode=True))
    return Order(torch.from_numpy(perm.astype(np.int64)), laplacians)
