"""Temperature-scaled InfoNCE / NT-Xent loss (paper eq. 4, docs/design.md §2.5)."""

from __future__ import annotations

from torch import Tensor, nn

from topo_contrastive.losses._nt_xent import (
    check_gather,
    check_reduction,
    check_temperature,
    make_pool,
    nt_xent,
)
from topo_contrastive.utils.checks import check_bool

__all__ = ["InfoNCE"]


class InfoNCE(nn.Module):
    r"""The temperature-scaled InfoNCE loss of the paper's eq. (4) in the NT-Xent layout.

    For a batch of :math:`B` samples with two views :math:`\mathbf{z}^{(1)}, \mathbf{z}^{(2)}`
    and :math:`s(\mathbf{u}, \mathbf{v}) = \mathbf{u}^\top\mathbf{v} / (\|\mathbf{u}\|_2
    \|\mathbf{v}\|_2\,\tau)`, the anchor :math:`(i, a)` has the positive :math:`(i, b)`,
    :math:`b \ne a`, and the :math:`2(B-1)` negatives :math:`(m, 1), (m, 2)`, :math:`m \ne i`
    (SimCLR convention, docs/design.md §2.5):

    .. math::
        \ell_{i}^{(a)} = -s(\mathbf{z}_i^{(a)}, \mathbf{z}_i^{(b)}) + \log\Big(
        [\,e^{s(\mathbf{z}_i^{(a)}, \mathbf{z}_i^{(b)})}\,] + \sum_{m \ne i}\sum_{v=1}^{2}
        e^{s(\mathbf{z}_i^{(a)}, \mathbf{z}_m^{(v)})}\Big),
        \qquad
        \mathcal{L} = \frac{1}{2B}\sum_{a=1}^{2}\sum_{i=1}^{B} \ell_i^{(a)},

    where the bracketed positive term is present for ``include_positive_in_denominator=True``
    (SimCLR's NT-Xent) and absent otherwise (eq. 4 as written). The loss is symmetric in the two
    views and is computed with ``logsumexp``, so it is finite for small temperatures. Each
    embedding is divided by its largest absolute entry before its norm is taken, so finite
    embeddings of any magnitude (e.g. ``1e20`` or ``1e-30`` in float32) are normalised without
    overflow or underflow (the value and gradient are those of the formula). A zero embedding
    has cosine similarity 0 with everything.

    **Distributed.** With ``gather_distributed=True`` under an initialised ``torch.distributed``
    process group of :math:`R > 1` ranks, each rank's anchors are its local samples and the
    negatives are the samples of all ranks (gathered with gradients flowing back, batch sizes
    may differ between ranks). With ``reduction="mean"`` a rank returns
    :math:`\frac{R}{2M}\sum_{\text{local anchors}} \ell` (:math:`M` the global batch size) and
    with ``"sum"`` :math:`R\sum_{\text{local anchors}}\ell`, so the mean over ranks (what
    ``DistributedDataParallel``'s gradient averaging optimises) equals the single-process loss on
    the concatenated batch, and so do the parameter gradients. Without a process group, or with
    one rank, the loss is the single-process loss.

    Args:
        temperature (float, optional): temperature :math:`\tau \ge 10^{-6}`. (default: ``0.5``)
        include_positive_in_denominator (bool, optional): keep the positive pair in the
            denominator (NT-Xent) or leave it out (eq. 4 as written). (default: ``True``)
        gather_distributed (bool, optional): gather negatives from all ``torch.distributed``
            ranks. (default: ``False``)
        reduction (str, optional): ``"mean"`` over the :math:`2B` anchors, ``"sum"``, or
            ``"none"`` for the per-anchor losses ``[2, B]`` (row ``a`` = anchors of view ``a``;
            unscaled local values when distributed). (default: ``"mean"``)

    Shapes:
        - **input:** ``z1`` ``[B, D]``, ``z2`` ``[B, D]`` (views of the same ``B`` samples in the
          same order), floating point; half precision is computed in ``float32``.
        - **output:** scalar, or ``[2, B]`` for ``reduction="none"``.

    Raises:
        TypeError: for a non-numeric ``temperature``, non-bool flags, or non-tensor /
            non-floating inputs.
        ValueError: for ``temperature < 1e-6`` (or not finite), NaN or inf in
            ``z1``/``z2``, an unknown ``reduction``, views of different shapes or devices,
            inputs that are not 2-D, or fewer than 2 samples in total.

    Example:
        >>> loss_fn = InfoNCE(temperature=0.5)
        >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)  # projected views [B, D]
        >>> loss = loss_fn(z1, z2)  # e.g. z = head(encoder(view)) in a training loop
        >>> loss.shape, bool(loss > 0)
        (torch.Size([]), True)
    """

    def __init__(
        self,
        temperature: float = 0.5,
        include_positive_in_denominator: bool = True,
        gather_distributed: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.include_positive_in_denominator = check_bool(
            include_positive_in_denominator, "include_positive_in_denominator"
        )
        self.gather_distributed = check_gather(gather_distributed)
        self.reduction = check_reduction(reduction)

    def forward(self, z1: Tensor, z2: Tensor) -> Tensor:
        """Loss of the two views ``z1``, ``z2`` ``[B, D]``."""
        pool = make_pool(z1, z2, self.gather_distributed)
        return nt_xent(pool, self.temperature, self.include_positive_in_denominator, self.reduction)

    def extra_repr(self) -> str:
        return (
            f"temperature={self.temperature}, "
            f"include_positive_in_denominator={self.include_positive_in_denominator}, "
            f"gather_distributed={self.gather_distributed}, reduction={self.reduction!r}"
        )
