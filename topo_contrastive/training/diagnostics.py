r"""Did pre-training learn anything? Two checks a user should not have to run by hand.

On a road network of 1,088 edges the default pre-training once kept its loss at chance for
all 20 epochs (5.25 -> 5.29 against :math:`\ln 199 = 5.29` for batches of 100) and its
embeddings collapsed (median per-dimension spread 0.006 against a mean :math:`|h|` of 0.30);
the linear probe then scored below an untrained encoder. :func:`pretrain_diagnostics`
measures both from a finished run, and ``topo-contrastive pretrain`` prints its warnings and
records the numbers in ``pretrain.json``:

- **loss at chance**: the last epoch's loss against the loss the same batches would have had
  with identical embeddings (:attr:`PretrainResult.chance_losses
  <topo_contrastive.training.loop.PretrainResult>`, e.g. :math:`\ln(2B - 1)` for
  InfoNCE): less than :data:`MIN_LOSS_DROP` (2 %) below it means the views were not told
  apart;
- **collapse**: the median over embedding dimensions of the standard deviation across
  samples, relative to the mean :math:`|h|`: below :data:`MIN_SPREAD` (0.05) every sample
  maps to nearly the same vector.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topo_contrastive._utils.words import count

#: Relative drop of the final loss below the chance loss under which a warning is given.
MIN_LOSS_DROP = 0.02
#: Share of the flows' energy in their mean flow above which the loss-at-chance warning
#: names the shared flow as a likely cause.
MAX_COMMON_SHARE = 0.5
#: Median per-dimension spread relative to the mean magnitude under which embeddings count
#: as collapsed.
MIN_SPREAD = 0.05


def common_share(flows: Any) -> float:
    r"""The share of the flows' energy in their mean flow, :math:`S \lVert \bar{x}
    \rVert^2 / \sum_i \lVert x_i \rVert^2` of ``flows`` ``[S, N1]`` or ``[S, N1, C]``
    (float64 sums): 0 for flows without a common part, near 1 for noisy copies of one flow,
    0 for all-zero flows."""
    x = flows.reshape(flows.shape[0], -1).double()  # [S, N1 * C]
    total = float(x.square().sum())
    return flows.shape[0] * float(x.mean(0).square().sum()) / total if total else 0.0


def pretrain_diagnostics(
    losses: list[float],
    chance_losses: list[float],
    embeddings: np.ndarray,
    flow_rms: float | None = None,
    common_share: float | None = None,
) -> dict[str, Any]:
    r"""The loss-at-chance and collapse checks of a pre-training run.

    Args:
        losses: mean loss of every epoch (:attr:`PretrainResult.losses
            <topo_contrastive.training.loop.PretrainResult>`).
        chance_losses: the loss of identical embeddings on the same batches, per epoch
            (:attr:`PretrainResult.chance_losses
            <topo_contrastive.training.loop.PretrainResult>`).
        embeddings: ``[S, D]`` embeddings :math:`\mathbf{h}` of all samples after training
            (:func:`~topo_contrastive.training.embed`).
        flow_rms: the RMS of the flows the encoder saw (after any scaling); where it lies
            outside ``[1/4, 4]`` the loss-at-chance warning names it as a likely cause (the
            layers expect flows of order one). Default ``None``: not checked.
        common_share: the share of the flows' energy in their mean flow,
            :math:`S \lVert \bar{x} \rVert^2 / \sum_i \lVert x_i \rVert^2`
            (:func:`common_share`); above
            :data:`MAX_COMMON_SHARE` the loss-at-chance warning names it as a likely cause
            (samples that share one large flow differ less from each other than a masked
            view from its flow). Default ``None``: not checked.

    Returns:
        ``{"final_loss", "chance_loss", "loss_drop"`` (``(chance - final) / chance``),
        ``"spread"`` (median per-dimension std), ``"magnitude"`` (mean :math:`|h|`),
        ``"relative_spread"``, ``"effective_rank"`` (exponential of the entropy of the
        normalised singular values of the centred embeddings, between 1 and ``min(S, D)``),
        ``"warnings"``: a list of sentences, empty when both checks pass``}``.

    Raises:
        ValueError: no epochs, lists of different lengths, embeddings that are not a
            non-empty finite ``[S, D]`` array.

    Example:
        >>> import numpy as np
        >>> d = pretrain_diagnostics([5.29], [5.293], np.ones((10, 4)))
        >>> [w.split(":")[0] for w in d["warnings"]]
        ['the contrastive loss stayed at chance', 'the embeddings collapsed']
    """
    if not losses or len(losses) != len(chance_losses):
        raise ValueError(
            f"`losses` and `chance_losses` must be equally long and non-empty, got "
            f"{len(losses)} and {len(chance_losses)}"
        )
    h = np.asarray(embeddings, dtype=np.float64)
    if h.ndim != 2 or h.size == 0 or not np.isfinite(h).all():
        raise ValueError(
            f"`embeddings` must be a non-empty finite [S, D] array, got shape {h.shape}"
        )
    final, chance = float(losses[-1]), float(chance_losses[-1])
    drop = (chance - final) / abs(chance) if chance else 0.0
    spread = float(np.median(h.std(axis=0)))
    magnitude = float(np.abs(h).mean())
    relative = spread / magnitude if magnitude > 0 else 0.0
    sv = np.linalg.svd(h - h.mean(axis=0), compute_uv=False)
    p = sv / sv.sum() if sv.sum() > 0 else np.ones(1)
    erank = float(np.exp(-(p * np.log(np.where(p > 0, p, 1.0))).sum()))
    warnings = []
    if drop < MIN_LOSS_DROP:
        warnings.append(
            f"the contrastive loss stayed at chance: {final:.4f} after "
            f"{count(len(losses), 'epoch')} "
            f"against {chance:.4f} for identical embeddings ({100 * drop:.1f} % below; "
            f"expected at least {100 * MIN_LOSS_DROP:.0f} %): the encoder did not learn to "
            "tell the views apart"
            + (
                f"; the flows' RMS is {flow_rms:.4g}, far from the order one the layers "
                "expect: divide them by it (--flow-scale rms)"
                if flow_rms is not None and flow_rms > 0 and not 0.25 <= flow_rms <= 4.0
                else ""
            )
            + (
                f"; the samples share one flow that holds {100 * common_share:.0f} % of "
                "their energy, so that a masked view differs more from its own flow than the "
                "samples from each other: subtract the mean flow of the training samples "
                "from every sample (centre the flows) before pre-training"
                if common_share is not None and common_share > MAX_COMMON_SHARE
                else ""
            )
        )
    if relative < MIN_SPREAD:
        warnings.append(
            f"the embeddings collapsed: their median per-dimension spread is {spread:.3g} "
            f"against a mean |h| of {magnitude:.3g} (ratio {relative:.3g}, expected at least "
            f"{MIN_SPREAD}); effective rank {erank:.1f} of {h.shape[1]}"
        )
    return {
        "final_loss": final,
        "chance_loss": chance,
        "loss_drop": drop,
        "spread": spread,
        "magnitude": magnitude,
        "relative_spread": relative,
        "effective_rank": erank,
        "warnings": warnings,
    }
