"""InfoNCE with Hodge-aware weights of the negatives (paper eqs. 6-8, docs/design.md §2.4-2.5)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from topo_contrastive.losses._nt_xent import (
    Pool,
    check_bool,
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

_SIMILARITIES = ("auto", "cosine", "energy")

__all__ = ["HodgeDebiasedInfoNCE"]


def _per_sample(parts: Sequence[Tensor] | Tensor, batch_size: int) -> Sequence[Tensor] | Tensor:
    """PyG-batched Hodge parts (``[B * N1, 3]``, or three ``[B * N1, 1]`` / ``[B * N1]``) as
    ``[3, B, N1]`` / three ``[B, N1]``; other layouts are returned as given."""

    def rows_to_samples(t: Tensor, what: str) -> Tensor:
        if t.shape[0] % batch_size != 0:
            raise ValueError(
                f"`hodge_parts` {what} has {t.shape[0]} rows, not a multiple of the batch size "
                f"B = {batch_size} of `z1` (a PyG batch holds B blocks of N1 rows)"
            )
        return t.reshape(batch_size, -1)

    if batch_size < 1:
        return parts
    if isinstance(parts, Tensor):
        if parts.dim() == 2 and parts.shape[1] == 3:  # a PyG batch's hodge_parts [B*N1, 3]
            return torch.stack([rows_to_samples(parts[:, k], "column") for k in range(3)])
        return parts
    if isinstance(parts, Sequence) and not isinstance(parts, (str, bytes)):
        out = []
        for p in parts:
            batched = isinstance(p, Tensor) and (
                p.dim() == 1 or (p.dim() == 2 and p.shape[1] == 1 and p.shape[0] != batch_size)
            )
            out.append(rows_to_samples(p, "part") if batched else p)
        return out
    return parts


class HodgeDebiasedInfoNCE(nn.Module):
    r"""Hodge-debiased InfoNCE: negatives reweighted by their spectral dissimilarity (eq. 6).

    The NT-Xent loss of :class:`~topo_contrastive.losses.InfoNCE` with per-negative weights
    :math:`w_{im} = w(\mathbf{x}_i, \mathbf{x}_m)` that depend on the original (un-augmented)
    flows only, from :func:`~topo_contrastive.losses.hodge_negative_weights` (eqs. 7-8,
    normalised to mean one over each anchor's negatives, docs/design.md §2.4). Both views of sample
    :math:`m` get the weight :math:`w_{im}`; the positive has weight 1:

    .. math::
        \ell_{i}^{(a)} = -s_{ii}^{(ab)} + \log\Big([\,e^{s_{ii}^{(ab)}}\,] + \sum_{m \ne i}
        \sum_{v=1}^{2} w_{im}\, e^{s_{im}^{(av)}}\Big),
        \qquad
        \mathcal{L} = \frac{1}{2B}\sum_{a=1}^{2}\sum_{i=1}^{B} \ell_i^{(a)},

    with :math:`s_{im}^{(av)} = \cos(\mathbf{z}_i^{(a)}, \mathbf{z}_m^{(v)}) / \tau`, computed as
    ``logsumexp(s + log w)`` (a zero weight is ``log w = -inf``: that negative drops out). With
    all weights equal to one (e.g. all :math:`\gamma_k = 0`) the loss is exactly
    :class:`~topo_contrastive.losses.InfoNCE` (same code path). The weights are constants: no
    gradient flows into them.

    **Many complexes.** The cosines of the parts compare two flows edge by edge, so they
    need both on one complex. For a batch of samples on different complexes pass the
    batch's ``hodge_parts`` ``[sum N1, 3]`` with its batch vector ``batch=data.batch_1``:
    the weights then compare the samples' energy fractions
    :math:`f_k = \lVert\mathbf{P}_k\mathbf{x}\rVert^2/\lVert\mathbf{x}\rVert^2`
    (:func:`~topo_contrastive.losses.hodge_energy_weights`: basis-, order- and
    orientation-free), ``similarity="auto"`` (default). Without a batch vector the Hodge
    parts are those of one shared complex and the weights are exactly the paper's.
    ``similarity="energy"`` uses the energy fractions on one complex too; ``"cosine"``
    refuses a batch of complexes.

    **Distributed.** As for :class:`~topo_contrastive.losses.InfoNCE`: with
    ``gather_distributed=True`` the embeddings *and* the Hodge parts (without gradient) are
    gathered from all ranks, the weights of the local anchors against the :math:`M` gathered
    samples are ``[B, M]``, and the per-rank reduction is scaled so that the mean over ranks
    equals the single-process loss on the concatenated batch.

    Args:
        temperature (float, optional): temperature :math:`\tau \ge 10^{-6}`. (default: ``0.5``)
        gamma (Sequence[float], optional): :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0`, the
            weights of the gradient, curl and harmonic cosine distances. (default:
            ``(1.0, 1.0, 1.0)``)
        include_positive_in_denominator (bool, optional): keep the positive pair in the
            denominator (NT-Xent) or leave it out (eq. 6 as written). (default: ``True``)
        gather_distributed (bool, optional): gather negatives from all ``torch.distributed``
            ranks. (default: ``False``)
        reduction (str, optional): ``"mean"``, ``"sum"`` or ``"none"`` (``[2, B]``), as for
            :class:`~topo_contrastive.losses.InfoNCE`. (default: ``"mean"``)
        eps (float, optional): zero threshold of
            :func:`~topo_contrastive.losses.hodge_negative_weights`. (default: ``1e-6``)
        similarity (str, optional): ``"auto"`` (cosines of the parts on one complex, energy
            fractions with a batch vector), ``"cosine"`` or ``"energy"``.
            (default: ``"auto"``)

    Shapes:
        - **input:** ``z1``, ``z2`` ``[B, D]``; ``hodge_parts`` of the original flows: three
          tensors ``(gradient, curl, harmonic)`` (a ``HodgeParts`` named tuple) each
          ``[B, N1]`` or in a PyG batch's layout ``[B * N1, 1]`` / ``[B * N1]`` (e.g.
          ``hodge(batch.x_1, batch=batch.batch)``), or one tensor ``[3, B, N1]``, or a PyG
          batch's ``hodge_parts`` ``[B * N1, 3]`` (columns gradient, curl, harmonic, from
          :class:`~topo_contrastive.transforms.ContrastiveViews`); the rows of a batched
          layout are ``B`` consecutive blocks of ``N1``, ``B`` taken from ``z1``. Signals of
          rank k work the same (``N_k`` for ``N1``, parts of ``HodgeDecomposition(ops,
          rank=k)``). Or
          ``weights`` ``[B, M]`` (``M = B`` single-process, the global batch size when
          distributed; the anchor's own column is ignored). With ``batch`` ``[sum N1]``:
          ``hodge_parts`` ``[sum N1, 3]`` of a batch of complexes.
        - **output:** scalar, or ``[2, B]`` for ``reduction="none"``.

    Raises:
        TypeError: for non-numeric hyper-parameters, non-bool flags, or non-tensor /
            non-floating inputs.
        ValueError: for ``temperature < 1e-6`` (or not finite), NaN or inf in
            ``z1``/``z2``, a ``gamma`` that is not three finite non-negative numbers,
            views of different shapes, fewer than 2 samples, not exactly
            one of ``hodge_parts`` / ``weights``, Hodge parts whose batch size differs from the
            views' or with NaN/inf entries, batched Hodge parts whose rows are not a
            multiple of ``B``, or ``weights`` of the wrong shape, with NaN/inf or negative
            entries, or with an anchor whose negatives all have weight 0.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
        >>> hodge = HodgeDecomposition(ops)
        >>> x_1 = torch.randn(4 * ops.num_edges, 1)  # a PyG batch's flows, B = 4
        >>> z1, z2 = torch.randn(4, 8), torch.randn(4, 8)  # embeddings of the two views
        >>> loss_fn = HodgeDebiasedInfoNCE(temperature=0.5, gamma=(0.0, 1.0, 1.0))
        >>> loss = loss_fn(z1, z2, hodge_parts=hodge(x_1, num_graphs=4))
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
        hodge_parts: Sequence[Tensor] | Tensor | None = None,
        weights: Tensor | None = None,
        batch: Tensor | None = None,
    ) -> Tensor:
        """Loss of the views ``z1``, ``z2`` ``[B, D]`` weighted by ``hodge_parts`` or ``weights``.

        Exactly one of ``hodge_parts`` and ``weights`` must be given; ``batch`` (the
        sample of every row of ``hodge_parts`` ``[sum N1, 3]``) marks a batch of
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
        if hodge_parts is not None and (batch is not None or self.similarity == "energy"):
            w = self._energy_weights(hodge_parts, batch, pool)
        elif hodge_parts is not None:
            w = self._weights_from_parts(hodge_parts, pool)
        else:
            w = check_weights(weights, pool)
        return nt_xent(
            pool,
            self.temperature,
            self.include_positive_in_denominator,
            self.reduction,
            log_weights=torch.log(w),
        )

    def _weights_from_parts(self, hodge_parts: Sequence[Tensor] | Tensor, pool: Pool) -> Tensor:
        """Weights ``[B, M]`` of the local anchors against the (gathered) pool."""
        parts = _stack_parts(
            _per_sample(hodge_parts, pool.batch_size), "hodge_parts"
        ).detach()  # [3, B, N1]
        if parts.shape[1] != pool.batch_size:
            raise ValueError(
                f"`hodge_parts` must hold the B = {pool.batch_size} samples of `z1`/`z2`, "
                f"got {parts.shape[1]}"
            )
        parts = parts.to(pool.a1.device)
        if pool.world_size == 1:
            cand, offset = None, 0
        else:
            cand = pool.gather(parts.transpose(0, 1)).transpose(0, 1)  # [3, M, N1]
            offset = pool.offset
        w = hodge_negative_weights(
            parts, self.gamma, self.eps, candidates=cand, anchor_offset=offset
        )
        return w.to(pool.a1.dtype)  # [B, M]

    def _energy_weights(
        self, hodge_parts: Sequence[Tensor] | Tensor, batch: Tensor | None, pool: Pool
    ) -> Tensor:
        """Weights ``[B, M]`` from the energy fractions of the parts."""
        if batch is not None and self.similarity == "cosine":
            raise ValueError(
                "similarity='cosine' compares the Hodge parts edge by edge, which needs one "
                "shared complex; a batch of different complexes (given `batch`) needs "
                "similarity='auto' or 'energy'"
            )
        if batch is None:  # one shared complex, energy similarity asked for
            parts = _stack_parts(_per_sample(hodge_parts, pool.batch_size), "hodge_parts")
            _, num, n1 = parts.shape  # [3, B, N1]
            rows = torch.arange(num, device=parts.device).repeat_interleave(n1)  # [B*N1]
            frac = energy_fractions(parts.detach().permute(1, 2, 0).reshape(-1, 3), rows, num)
        else:
            if not isinstance(hodge_parts, Tensor):
                raise TypeError(
                    "`hodge_parts` with a batch vector must be one tensor [sum N1, 3], got "
                    f"{type(hodge_parts).__name__}"
                )
            frac = energy_fractions(hodge_parts.detach(), batch, pool.batch_size)
        if frac.shape[0] != pool.batch_size:
            raise ValueError(
                f"`hodge_parts` must hold the B = {pool.batch_size} samples of `z1`/`z2`, "
                f"got {frac.shape[0]}"
            )
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
