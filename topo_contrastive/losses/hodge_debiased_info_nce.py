"""InfoNCE with Hodge-aware weights of the negatives (paper eqs. 6-8, docs/design.md §2.4-2.5)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from topo_contrastive.losses._nt_xent import Loss
from topo_contrastive.losses.functional import check_similarity, hodge_debiased_info_nce
from topo_contrastive.losses.hodge_weights import check_eps, check_gamma


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
          :class:`~topo_contrastive.transforms.ContrastiveViews`; on a weighted complex
          the parts scaled by :math:`\mathbf{W}_1^{1/2}`, as it stores them, so that the
          cosines and energies are those of the metric, docs/weights.md) and optionally ``batch``
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
        similarity = check_similarity(similarity)
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
