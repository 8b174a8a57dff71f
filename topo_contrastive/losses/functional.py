"""Functional forms of the losses (paper eqs. 4, 6-8): :func:`info_nce` and
:func:`hodge_debiased_info_nce`, which :class:`~topo_contrastive.losses.InfoNCE` and
:class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE` call with their options."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from topo_contrastive.losses._nt_xent import (
    Pool,
    check_options,
    check_weights,
    make_pool,
    nt_xent,
)
from topo_contrastive.losses.hodge_weights import (
    check_batch,
    check_eps,
    check_gamma,
    check_parts,
    energy_weights,
    fractions,
    part_weights,
)

__all__ = ["hodge_debiased_info_nce", "info_nce"]

_SIMILARITIES = ("auto", "cosine", "energy")


def info_nce(
    z1: Tensor,
    z2: Tensor,
    temperature: float = 0.5,
    include_positive_in_denominator: bool = True,
    gather_distributed: bool = False,
    reduction: str = "mean",
    negatives: str = "both",
) -> Tensor:
    r"""The InfoNCE / NT-Xent loss of two views (paper eq. 4): the loss of
    :class:`~topo_contrastive.losses.InfoNCE` with these options (``temperature``, ...,
    ``negatives`` as there, where the formula and the distributed reduction are given).

    Args:
        z1 (Tensor): the first view's embeddings.
        z2 (Tensor): the second view's embeddings, of the same samples in the same order.

    Shapes:
        - **z1**, **z2:** ``[B, D]``, floating; **output:** scalar, or ``[2, B]`` for
          ``reduction="none"``.

    Raises:
        TypeError, ValueError: as :class:`~topo_contrastive.losses.InfoNCE`.
    """
    options = check_options(
        temperature, include_positive_in_denominator, gather_distributed, reduction, negatives
    )
    return nt_xent(make_pool(z1, z2, options.gather_distributed), options)


def check_similarity(similarity: str) -> str:
    if not isinstance(similarity, str) or similarity not in _SIMILARITIES:
        raise ValueError(f"`similarity` must be one of {_SIMILARITIES}, got {similarity!r}")
    return similarity


def _weights(
    parts: Tensor, batch: Tensor | None, pool: Pool, gamma: tuple, eps: float, similarity: str
) -> Tensor:
    """Weights ``[B, M]`` of the local anchors against the pool: eqs. 7-8 from ``B`` equal
    blocks of one shared complex, or from the energy fractions (``batch`` or ``"energy"``)."""
    B, rows = pool.a1.shape[0], int(parts.shape[0])
    if batch is None and (rows == 0 or rows % B != 0):
        raise ValueError(
            f"`hodge_parts` has {rows} rows, not a positive multiple of the batch size B = {B} "
            "of `z1`: without `batch` the rows are B consecutive blocks of N1 rows on one "
            "shared complex; pass `batch` (e.g. `batch.batch_1`) for samples on different "
            "complexes"
        )
    if batch is not None and similarity == "cosine":
        raise ValueError(
            "similarity='cosine' compares the Hodge parts edge by edge, which needs one "
            "shared complex; a batch of different complexes (given `batch`) needs "
            "similarity='auto' or 'energy'"
        )
    if batch is None and similarity != "energy":
        per_sample = parts.reshape(B, rows // B, 3).permute(2, 0, 1).contiguous()  # [3, B, N1]
        per_sample = per_sample.to(pool.a1.device)
        cand = pool.gather(per_sample.transpose(0, 1)).transpose(0, 1)  # [3, M, N1]
        w = part_weights(per_sample, None if pool.world_size == 1 else cand, gamma, eps,
                         pool.offset)  # fmt: skip
    else:
        if batch is None:  # one shared complex, energy similarity asked for
            batch = torch.arange(B, device=parts.device).repeat_interleave(rows // B)
        frac = fractions(parts, batch, B).to(pool.a1.device)  # [B, 3]
        w = energy_weights(frac, gamma, eps, pool.gather(frac), pool.offset)
    return w.to(pool.a1.dtype)


def hodge_debiased_info_nce(
    z1: Tensor,
    z2: Tensor,
    hodge_parts: Tensor | None = None,
    weights: Tensor | None = None,
    batch: Tensor | None = None,
    temperature: float = 0.5,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    include_positive_in_denominator: bool = True,
    gather_distributed: bool = False,
    reduction: str = "mean",
    eps: float = 1e-6,
    similarity: str = "auto",
    negatives: str = "both",
) -> Tensor:
    r"""The Hodge-debiased InfoNCE loss of two views (paper eqs. 6-8): the loss of
    :class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE` with these options
    (``temperature``, ..., ``negatives`` as there, where the formula, the weights and the
    layouts are given).

    Args:
        z1 (Tensor): the first view's embeddings.
        z2 (Tensor): the second view's embeddings, of the same samples in the same order.
        hodge_parts (Tensor, optional): the Hodge parts of the original flows, a batch's
            ``hodge_parts`` (exactly one of ``hodge_parts`` and ``weights``).
        weights (Tensor, optional): precomputed weights of the negatives.
        batch (Tensor, optional): the sample of every row of ``hodge_parts``, for samples on
            different complexes.

    Shapes:
        - **z1**, **z2:** ``[B, D]``; **hodge_parts:** ``[sum N1, 3]``; **batch:**
          ``[sum N1]``; **weights:** ``[B, M]``; **output:** scalar, or ``[2, B]``.

    Raises:
        TypeError, ValueError: as :class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE`.
    """
    options = check_options(
        temperature, include_positive_in_denominator, gather_distributed, reduction, negatives
    )
    gamma, eps, similarity = check_gamma(gamma), check_eps(eps), check_similarity(similarity)
    if (hodge_parts is None) == (weights is None):
        raise ValueError(
            "pass exactly one of `hodge_parts` (Hodge parts of the original flows) and "
            "`weights` (precomputed [B, M] negative weights), got "
            + ("both" if hodge_parts is not None else "neither")
        )
    pool = make_pool(z1, z2, options.gather_distributed)
    if hodge_parts is None:
        if batch is not None:
            raise ValueError("`batch` is the batch vector of `hodge_parts`, got no `hodge_parts`")
        w = check_weights(weights, pool)
    else:
        parts = check_parts(hodge_parts).detach()
        if batch is not None:
            batch = check_batch(batch, int(parts.shape[0]), pool.a1.shape[0])
        w = _weights(parts, batch, pool, gamma, eps, similarity)
    return nt_xent(pool, options, log_weights=torch.log(w))
