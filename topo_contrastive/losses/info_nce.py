"""Temperature-scaled InfoNCE / NT-Xent loss (paper eq. 4, docs/design.md §2.5)."""

from __future__ import annotations

from torch import Tensor

from topo_contrastive.losses._nt_xent import Loss
from topo_contrastive.losses.functional import info_nce


class InfoNCE(Loss):
    r"""The temperature-scaled InfoNCE loss of the paper's eq. (4) in the NT-Xent layout.

    With :math:`s(\mathbf{u}, \mathbf{v}) = \cos(\mathbf{u}, \mathbf{v}) / \tau`, the anchor
    :math:`\mathbf{z}_i^{(a)}` of view :math:`a` has the positive :math:`\mathbf{z}_i^{(b)}`,
    :math:`b \ne a`, and the negatives :math:`\mathbf{z}_m^{(v)}`, :math:`m \ne i`, of both
    views, :math:`V = \{1, 2\}` (``negatives="both"``: SimCLR's NT-Xent, docs/design.md
    §2.5), or of the other view only, :math:`V = \{b\}` (``"cross_view"``, the authors'
    code):

    .. math::
        \ell_{i}^{(a)} = -s(\mathbf{z}_i^{(a)}, \mathbf{z}_i^{(b)}) + \log\Big(
        [\,e^{s(\mathbf{z}_i^{(a)}, \mathbf{z}_i^{(b)})}\,] + \sum_{m \ne i}\sum_{v \in V}
        e^{s(\mathbf{z}_i^{(a)}, \mathbf{z}_m^{(v)})}\Big),
        \qquad
        \mathcal{L} = \frac{1}{2B}\sum_{a=1}^{2}\sum_{i=1}^{B} \ell_i^{(a)},

    the bracketed positive present for ``include_positive_in_denominator=True`` (NT-Xent)
    and absent otherwise (eq. 4 as written). It is computed with ``logsumexp`` on rows
    scaled by their largest entry, so it is finite for small temperatures and embeddings of
    any finite magnitude; a zero embedding has cosine 0 with everything.

    With ``gather_distributed=True`` under a ``torch.distributed`` group of :math:`R > 1`
    ranks, the negatives are the samples of all ranks (gathered with gradients; batch sizes
    may differ) and a rank returns :math:`\frac{R}{2M}\sum_{\text{local}}\ell` (``"sum"``:
    :math:`R\sum_{\text{local}}\ell`, :math:`M` the global batch), so the mean over ranks
    that ``DistributedDataParallel`` optimises is the single-process loss of the whole
    batch. Checks that read values (NaN) are skipped under ``torch.compile``.

    Args:
        temperature (float, optional): :math:`\tau \ge 10^{-6}`. (default: ``0.5``)
        include_positive_in_denominator (bool, optional): keep the positive in the
            denominator. (default: ``True``)
        gather_distributed (bool, optional): gather negatives from all ranks.
            (default: ``False``)
        reduction (str, optional): ``"mean"`` over the :math:`2B` anchors, ``"sum"``, or
            ``"none"`` (``[2, B]``, row ``a`` the anchors of view ``a``). (default: ``"mean"``)
        negatives (str, optional): ``"both"`` views or ``"cross_view"``. (default: ``"both"``)

    Shapes:
        - **input:** ``z1``, ``z2`` ``[B, D]``, the two views of the same samples, floating
          point (half precision is computed in float32).
        - **output:** scalar, or ``[2, B]`` for ``reduction="none"``.

    Raises:
        TypeError: a non-numeric ``temperature``, non-bool flags, non-tensor or non-floating
            inputs.
        ValueError: ``temperature < 1e-6`` or not finite, an unknown ``reduction`` or
            ``negatives``, NaN or inf inputs, views of different shapes or devices, inputs
            that are not 2-D, fewer than 2 samples in all.

    Example:
        >>> loss_fn = InfoNCE(temperature=0.5)
        >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)  # projected views [B, D]
        >>> loss = loss_fn(z1, z2)
        >>> loss.shape, bool(loss > 0)
        (torch.Size([]), True)
    """

    def forward(self, z1: Tensor, z2: Tensor) -> Tensor:
        """Loss of the two views ``z1``, ``z2`` ``[B, D]``."""
        return info_nce(z1, z2, *self.options)
