"""InfoNCE with Hodge-aware weights of the negatives (paper eqs. 6-8, docs/design.md §2.4-2.5)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from topo_contrastive.losses._nt_xent import (
    Loss,
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

__all__ = ["HodgeDebiasedInfoNCE", "hodge_debiased_info_nce"]

_SIMILARITIES = ("auto", "cosine", "energy")


def _check_similarity(similarity: str) -> str:
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
    """The loss of :class:`HodgeDebiasedInfoNCE` as a function (same arguments, same value)."""
    options = check_options(
        temperature, include_positive_in_denominator, gather_distributed, reduction, negatives
    )
    gamma, eps, similarity = check_gamma(gamma), check_eps(eps), _check_similarity(similarity)
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


class HodgeDebiasedInfoNCE(Loss):
    r"""Hodge-debiased InfoNCE: the negatives reweighted by their spectral dissimilarity
    (paper eq. 6).

    The loss of :class:`~topo_contrastive.losses.InfoNCE` with a weight :math:`w_{im}` on
    both views of negative :math:`m` (the positive keeps weight 1):

    .. math::
        \ell_{i}^{(a)} = -s_{ii}^{(ab)} + \log\Big([\,e^{s_{ii}^{(ab)}}\,] + \sum_{m \ne i}
        \sum_{v \in V} w_{im}\, e^{s_{im}^{(av)}}\Big),
        \qquad
        \mathcal{L} = \frac{1}{2B}\sum_{a=1}^{2}\sum_{i=1}^{B} \ell_i^{(a)},

    :math:`s_{im}^{(av)} = \cos(\mathbf{z}_i^{(a)}, \mathbf{z}_m^{(v)}) / \tau`, :math:`V =
    \{1, 2\}` (``negatives="both"``) or the other view only (``"cross_view"``). The weights
    come from the original flows' ``hodge_parts``: without ``batch`` these are ``B`` equal
    blocks on one shared complex and the weights are eqs. 7-8
    (:func:`~topo_contrastive.losses.hodge_negative_weights`); with ``batch`` (samples on
    different complexes) or ``similarity="energy"`` the cosine distances are replaced by
    :math:`\sum_k \gamma_k |f_k(\mathbf{x}_i) - f_k(\mathbf{x}_m)|` of the energy fractions
    (:func:`~topo_contrastive.losses.energy_fractions`), comparable across complexes. Or
    ``weights`` come precomputed (e.g. :func:`~topo_contrastive.losses.weights_from_cosines`).
    A zero weight removes a negative, all weights one give exactly InfoNCE, no gradient
    flows into the weights; ``gather_distributed`` gathers embeddings and parts as for
    InfoNCE; value checks are skipped under ``torch.compile`` (docs/design.md §2.4, §7.6).

    Args:
        temperature (float, optional): :math:`\tau \ge 10^{-6}`. (default: ``0.5``)
        gamma (Sequence[float], optional): :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0`.
            (default: ``(1.0, 1.0, 1.0)``)
        include_positive_in_denominator (bool, optional): keep the positive in the
            denominator. (default: ``True``)
        gather_distributed (bool, optional): gather negatives from all ranks.
            (default: ``False``)
        reduction (str, optional): ``"mean"``, ``"sum"`` or ``"none"`` (``[2, B]``).
            (default: ``"mean"``)
        eps (float, optional): zero threshold of the weights in ``[0, 1)``.
            (default: ``1e-6``)
        similarity (str, optional): ``"auto"`` (cosines on one complex, energy fractions
            with ``batch``), ``"cosine"`` or ``"energy"``. (default: ``"auto"``)
        negatives (str, optional): ``"both"`` views or ``"cross_view"``. (default: ``"both"``)

    Shapes:
        - **input:** ``z1``, ``z2`` ``[B, D]``; ``hodge_parts`` ``[sum N1, 3]`` (columns
          gradient, curl, harmonic, from
          :class:`~topo_contrastive.transforms.ContrastiveViews`) and optionally ``batch``
          ``[sum N1]``; or ``weights`` ``[B, M]`` (``M`` the global batch when distributed).
        - **output:** scalar, or ``[2, B]`` for ``reduction="none"``.

    Raises:
        TypeError: non-numeric options, non-bool flags, non-tensor or non-floating inputs,
            ``hodge_parts`` in another layout (the message gives the conversion), a
            non-integer ``batch``.
        ValueError: bad options, NaN or inf inputs, views of different shapes, fewer than 2
            samples, not exactly one of ``hodge_parts`` / ``weights``, rows of
            ``hodge_parts`` not ``B`` equal blocks without ``batch``, a ``batch`` of the
            wrong length, outside ``[0, B)`` or leaving a sample without rows,
            ``similarity="cosine"`` with ``batch``, negative ``weights`` or weights leaving
            an anchor without a negative.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
        >>> hodge = HodgeDecomposition(ops)
        >>> x_1 = torch.randn(4 * ops.num_edges, 1)  # a PyG batch's flows, B = 4
        >>> z1, z2 = torch.randn(4, 8), torch.randn(4, 8)  # embeddings of the two views
        >>> loss_fn = HodgeDebiasedInfoNCE(temperature=0.5, gamma=(0.0, 1.0, 1.0))
        >>> parts = torch.cat(hodge(x_1, num_graphs=4), dim=1)  # [B * N1, 3]
        >>> loss = loss_fn(z1, z2, hodge_parts=parts)
        >>> bool(loss.isfinite()), loss.shape
        (True, torch.Size([]))
    """

    _shown = ("temperature", "gamma", "include_positive_in_denominator", "gather_distributed",
              "reduction", "eps", "similarity")  # fmt: skip

    def __init__(
        self,
        temperature: float = 0.5,
        gamma: Sequence[float] = (1.0, 1.0, 1.0),
        include_positive_in_denominator: bool = True,
        gather_distributed: bool = False,
        reduction: str = "mean",
        eps: float = 1e-6,
        similarity: str = "auto",
        negatives: str = "both",
    ) -> None:
        similarity = _check_similarity(similarity)
        super().__init__(
            temperature, include_positive_in_denominator, gather_distributed, reduction, negatives
        )
        self.gamma, self.eps, self.similarity = check_gamma(gamma), check_eps(eps), similarity

    def forward(
        self,
        z1: Tensor,
        z2: Tensor,
        hodge_parts: Tensor | None = None,
        weights: Tensor | None = None,
        batch: Tensor | None = None,
    ) -> Tensor:
        """Loss of the views ``z1``, ``z2`` ``[B, D]`` weighted by exactly one of
        ``hodge_parts`` ``[sum N1, 3]`` (with ``batch`` ``[sum N1]`` for samples on different
        complexes) and ``weights`` ``[B, M]``."""
        t, pos, gather, reduction, negatives = self.options
        return hodge_debiased_info_nce(
            z1, z2, hodge_parts, weights, batch, t, self.gamma, pos, gather, reduction, self.eps,
            self.similarity, negatives,
        )  # fmt: skip
