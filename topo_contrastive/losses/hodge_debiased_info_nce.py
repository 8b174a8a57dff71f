"""InfoNCE with Hodge-aware weights of the negatives (paper eqs. 6-8, docs/design.md §2.4-2.5)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from topo_contrastive.losses._nt_xent import (
    Pool,
    check_gather,
    check_reduction,
    check_temperature,
    check_weights,
    make_pool,
    nt_xent,
)
from topo_contrastive.losses.hodge_weights import (
    _check_eps,
    _check_gamma,
    _stack_parts,
    energy_fractions,
    hodge_energy_weights,
    hodge_negative_weights,
)
from topo_contrastive.utils.checks import check_bool

_SIMILARITIES = ("auto", "cosine", "energy")

__all__ = ["HodgeDebiasedInfoNCE"]


def _check_parts(parts: object) -> Tensor:
    """Check that ``hodge_parts`` is a batch's ``[sum N1, 3]`` tensor (the one layout the
    loss takes); other layouts get a message saying how to convert them."""
    expected = (
        "`hodge_parts` must be one tensor [sum N1, 3] (columns gradient, curl, harmonic: a "
        "PyG batch's `batch.hodge_parts` from ContrastiveViews)"
    )
    if not isinstance(parts, Tensor):
        if isinstance(parts, Sequence) and not isinstance(parts, (str, bytes)):
            shapes = [tuple(p.shape) if isinstance(p, Tensor) else type(p).__name__ for p in parts]
            raise TypeError(
                f"{expected}, got a sequence of {len(parts)} parts of shapes {shapes}; convert "
                "three [B * N1, 1] parts (a HodgeParts of a PyG batch's flows) with "
                "`torch.cat(tuple(parts), dim=1)`, three [B, N1] parts with "
                "`torch.stack(tuple(parts), dim=-1).reshape(-1, 3)`"
            )
        raise TypeError(f"{expected}, got {type(parts).__name__}")
    if parts.dim() != 2 or parts.shape[1] != 3:
        hint = ""
        if parts.dim() == 3 and parts.shape[0] == 3:
            hint = "; convert [3, B, N1] with `parts.permute(1, 2, 0).reshape(-1, 3)`"
        elif parts.dim() == 3 and parts.shape[2] == 3:
            hint = "; convert [B, N1, 3] with `parts.reshape(-1, 3)`"
        raise ValueError(f"{expected}, got shape {tuple(parts.shape)}{hint}")
    if not parts.is_floating_point():
        raise TypeError(f"`hodge_parts` must be floating point, got dtype {parts.dtype}")
    return parts


def _blocks(parts: Tensor, batch_size: int) -> int:
    """:math:`N_1` of ``parts`` ``[B * N1, 3]``: ``B`` consecutive blocks of equal size."""
    rows = int(parts.shape[0])
    if rows == 0 or rows % batch_size != 0:
        raise ValueError(
            f"`hodge_parts` has {rows} rows, not a positive multiple of the batch size "
            f"B = {batch_size} of `z1`: without `batch` the rows are B consecutive blocks "
            "of N1 rows on one shared complex; pass `batch` (e.g. `batch.batch_1`) for "
            "samples on different complexes"
        )
    return rows // batch_size


def _check_batch(batch: object, parts: Tensor, num: int) -> Tensor:
    """The batch vector ``[sum N1]`` of ``parts``: integer (not bool), one entry per row,
    values in ``[0, B)`` and every one of the ``B`` samples owning rows."""
    if not isinstance(batch, Tensor):
        raise TypeError(
            f"`batch` must be an integer tensor [sum N1] (data.batch_1), got "
            f"{type(batch).__name__}"
        )
    if batch.dtype == torch.bool or batch.is_floating_point() or batch.is_complex():
        raise TypeError(
            f"`batch` must be an integer tensor [sum N1] (the sample of every row of "
            f"`hodge_parts`, data.batch_1), got dtype {batch.dtype}"
        )
    rows = int(parts.shape[0])
    if batch.dim() != 1 or int(batch.shape[0]) != rows:
        raise ValueError(
            f"`batch` must be a vector [{rows}] (the sample of every row of `hodge_parts`), "
            f"got shape {tuple(batch.shape)}"
        )
    if rows == 0 or batch.is_meta:
        return batch
    low, high = int(batch.min()), int(batch.max())
    if low < 0 or high >= num:
        raise ValueError(
            f"`batch` must number the B = {num} samples of `z1`/`z2` (values in "
            f"[0, {num - 1}]), got values in [{low}, {high}]"
        )
    owned = torch.bincount(batch.long(), minlength=num)
    empty = (owned == 0).nonzero().view(-1)
    if empty.numel():
        raise ValueError(
            f"`batch` gives no rows of `hodge_parts` to the sample(s) "
            f"{empty[:5].tolist()}{' ...' if empty.numel() > 5 else ''} of the B = {num} "
            f"samples of `z1`/`z2` (it names {num - empty.numel()} samples): every "
            "embedding needs the rows of its flow"
        )
    return batch


class HodgeDebiasedInfoNCE(nn.Module):
    r"""Hodge-debiased InfoNCE: negatives reweighted by their spectral dissimilarity (eq. 6).

    The NT-Xent loss of :class:`~topo_contrastive.losses.InfoNCE` with per-negative weights
    :math:`w_{im}` from the original flows' Hodge parts
    (:func:`~topo_contrastive.losses.hodge_negative_weights`, eqs. 7-8, mean one over each
    anchor's negatives); both views of sample :math:`m` get :math:`w_{im}`, the positive 1:

    .. math::
        \ell_{i}^{(a)} = -s_{ii}^{(ab)} + \log\Big([\,e^{s_{ii}^{(ab)}}\,] + \sum_{m \ne i}
        \sum_{v=1}^{2} w_{im}\, e^{s_{im}^{(av)}}\Big),
        \qquad
        \mathcal{L} = \frac{1}{2B}\sum_{a=1}^{2}\sum_{i=1}^{B} \ell_i^{(a)},

    with :math:`s_{im}^{(av)} = \cos(\mathbf{z}_i^{(a)}, \mathbf{z}_m^{(v)}) / \tau`. A zero
    weight removes that negative; all weights one give exactly
    :class:`~topo_contrastive.losses.InfoNCE`; no gradient flows into the weights. The Hodge
    parts come as a batch's ``hodge_parts`` ``[sum N1, 3]``. Without ``batch`` they are
    ``B`` equal blocks on one shared complex and the weights are the paper's; with ``batch``
    (samples on different complexes: pass ``batch.batch_1`` of a
    :class:`~topo_contrastive.data.ComplexData` batch) the weights compare the samples'
    energy fractions (:func:`~topo_contrastive.losses.hodge_energy_weights`), which are
    comparable across complexes. ``gather_distributed=True``
    gathers embeddings and parts from all ranks, as for InfoNCE. Design notes:
    docs/design.md §2.4-2.5, §6.3 and §7.6.

    Args:
        temperature (float, optional): :math:`\tau \ge 10^{-6}`. (default: ``0.5``)
        gamma (Sequence[float], optional): :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0`, the
            weights of the gradient, curl and harmonic distances. (default: ``(1.0, 1.0, 1.0)``)
        include_positive_in_denominator (bool, optional): keep the positive in the
            denominator (NT-Xent) or leave it out (eq. 6 as written). (default: ``True``)
        gather_distributed (bool, optional): gather negatives from all ``torch.distributed``
            ranks. (default: ``False``)
        reduction (str, optional): ``"mean"``, ``"sum"`` or ``"none"`` (``[2, B]``).
            (default: ``"mean"``)
        eps (float, optional): zero threshold of the weights. (default: ``1e-6``)
        similarity (str, optional): ``"auto"`` (cosines of the parts on one complex, energy
            fractions with ``batch``), ``"cosine"`` or ``"energy"``. (default: ``"auto"``)

    Shapes:
        - **input:** ``z1``, ``z2`` ``[B, D]``; ``hodge_parts`` ``[sum N1, 3]`` (columns
          gradient, curl, harmonic: ``batch.hodge_parts`` from
          :class:`~topo_contrastive.transforms.ContrastiveViews`, rows of one sample after
          another); ``batch`` (optional) ``[sum N1]``, the sample of every row; or
          ``weights`` ``[B, M]`` (``M`` the global batch size when distributed).
        - **output:** scalar, or ``[2, B]`` for ``reduction="none"``.

    Raises:
        TypeError: non-numeric hyper-parameters, non-bool flags, non-tensor or non-floating
            inputs, ``hodge_parts`` that is not one tensor (e.g. three parts; the message
            says how to convert them), a ``batch`` that is not an integer tensor (a bool
            or float one).
        ValueError: bad hyper-parameters; NaN or inf in ``z1``/``z2``/``hodge_parts``; views
            of different shapes; fewer than 2 samples; not exactly one of ``hodge_parts`` /
            ``weights``; ``hodge_parts`` of another shape than ``[sum N1, 3]`` (e.g.
            ``[3, B, N1]``); rows not in ``B`` equal blocks (without ``batch``); a ``batch``
            that is not ``[sum N1]``, has values outside ``[0, B)``, leaves a sample without
            rows; ``weights`` of the wrong
            shape, negative, or with an anchor whose negatives all have weight 0.

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

    def __init__(
        self,
        temperature: float = 0.5,
        gamma: Sequence[float] = (1.0, 1.0, 1.0),
        include_positive_in_denominator: bool = True,
        gather_distributed: bool = False,
        reduction: str = "mean",
        eps: float = 1e-6,
        similarity: str = "auto",
    ) -> None:
        super().__init__()
        if not isinstance(similarity, str) or similarity not in _SIMILARITIES:
            raise ValueError(f"`similarity` must be one of {_SIMILARITIES}, got {similarity!r}")
        self.similarity = similarity
        self.temperature = check_temperature(temperature)
        self.gamma = _check_gamma(gamma)
        self.include_positive_in_denominator = check_bool(
            include_positive_in_denominator, "include_positive_in_denominator"
        )
        self.gather_distributed = check_gather(gather_distributed)
        self.reduction = check_reduction(reduction)
        self.eps = _check_eps(eps)

    def forward(
        self,
        z1: Tensor,
        z2: Tensor,
        hodge_parts: Tensor | None = None,
        weights: Tensor | None = None,
        batch: Tensor | None = None,
    ) -> Tensor:
        """Loss of the views ``z1``, ``z2`` ``[B, D]`` weighted by ``hodge_parts`` or ``weights``.

        Exactly one of ``hodge_parts`` (``[sum N1, 3]``) and ``weights`` (``[B, M]``) must be
        given; ``batch`` (the sample of every row of ``hodge_parts``) marks a batch of
        different complexes (see the class).
        """
        if (hodge_parts is None) == (weights is None):
            raise ValueError(
                "pass exactly one of `hodge_parts` (Hodge parts of the original flows) and "
                "`weights` (precomputed [B, M] negative weights), got "
                + ("both" if hodge_parts is not None else "neither")
            )
        pool = make_pool(z1, z2, self.gather_distributed)
        if batch is not None and hodge_parts is None:
            raise ValueError("`batch` is the batch vector of `hodge_parts`; it needs them")
        if hodge_parts is not None:
            parts = _check_parts(hodge_parts).detach()
            if batch is not None:
                batch = _check_batch(batch, parts, pool.batch_size)
            if batch is not None or self.similarity == "energy":
                w = self._energy_weights(parts, batch, pool)
            else:
                w = self._weights_from_parts(parts, pool)
        else:
            w = check_weights(weights, pool)
        return nt_xent(
            pool,
            self.temperature,
            self.include_positive_in_denominator,
            self.reduction,
            log_weights=torch.log(w),
        )

    def _weights_from_parts(self, parts: Tensor, pool: Pool) -> Tensor:
        """Weights ``[B, M]`` (eqs. 7-8) of the local anchors against the (gathered) pool from
        the parts ``[B * N1, 3]`` of one shared complex."""
        num = pool.batch_size
        n1 = _blocks(parts, num)
        per_sample = parts.reshape(num, n1, 3).permute(2, 0, 1).contiguous()  # [3, B, N1]
        per_sample = _stack_parts(per_sample, "hodge_parts").to(pool.a1.device)
        if pool.world_size == 1:
            cand, offset = None, 0
        else:
            cand = pool.gather(per_sample.transpose(0, 1)).transpose(0, 1)  # [3, M, N1]
            offset = pool.offset
        w = hodge_negative_weights(
            per_sample, self.gamma, self.eps, candidates=cand, anchor_offset=offset
        )
        return w.to(pool.a1.dtype)  # [B, M]

    def _energy_weights(self, parts: Tensor, batch: Tensor | None, pool: Pool) -> Tensor:
        """Weights ``[B, M]`` from the energy fractions of the parts ``[sum N1, 3]``."""
        if batch is not None and self.similarity == "cosine":
            raise ValueError(
                "similarity='cosine' compares the Hodge parts edge by edge, which needs one "
                "shared complex; a batch of different complexes (given `batch`) needs "
                "similarity='auto' or 'energy'"
            )
        if batch is None:  # one shared complex, energy similarity asked for
            n1 = _blocks(parts, pool.batch_size)
            batch = torch.arange(pool.batch_size, device=parts.device).repeat_interleave(n1)
        frac = energy_fractions(parts, batch, pool.batch_size)
        frac = frac.to(pool.a1.device)
        if pool.world_size == 1:
            cand, offset = None, 0
        else:
            cand = pool.gather(frac)  # [M, 3]
            offset = pool.offset
        w = hodge_energy_weights(frac, self.gamma, self.eps, candidates=cand, anchor_offset=offset)
        return w.to(pool.a1.dtype)

    def extra_repr(self) -> str:
        return (
            f"temperature={self.temperature}, gamma={self.gamma}, "
            f"include_positive_in_denominator={self.include_positive_in_denominator}, "
            f"gather_distributed={self.gather_distributed}, reduction={self.reduction!r}, "
            f"eps={self.eps}, similarity={self.similarity!r}"
        )
