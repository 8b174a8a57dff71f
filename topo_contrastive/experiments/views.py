"""The configuration's :class:`~topo_contrastive.transforms.ContrastiveViews` for the
experiments' dense batches of flows (private)."""

from __future__ import annotations

import torch

from topo_contrastive.experiments.configs import ExperimentConfig
from topo_contrastive.experiments.data import ExperimentData

__all__ = ["ViewMaker"]


class ViewMaker:
    """Make the two masked views of a batch of flows (paper §4, "edge flow masking") with
    the library's dataset transform.

    It builds the :class:`~topo_contrastive.transforms.ContrastiveViews` of the
    configuration: ``"uniform"`` masks with :class:`~topo_contrastive.transforms.EdgeFlowMask`
    (:class:`~topo_contrastive.transforms.SimplexSignalMask` at rank k) and the
    configuration's ``drop_prob``; ``"spectral"`` masks with
    :class:`~topo_contrastive.transforms.HodgeSpectralMask` and the precomputed per-sample
    ``drop_prob`` (computed once per dataset, :meth:`ExperimentData.drop_probabilities`).
    A call is :meth:`ContrastiveViews.views` on the batch ``[B, N1]``: the two views are
    drawn independently with ``generator``, as the transform draws them on a PyG batch.

    Args:
        config: the run's configuration (``mask``, ``drop_prob``, ``budget``, ...).
        data: the prepared dataset.
        generator: the seeded ``torch.Generator`` of the masks.
        drop_prob: override of the uniform drop probability (Figure 2's sweep).
    """

    def __init__(
        self,
        config: ExperimentConfig,
        data: ExperimentData,
        generator: torch.Generator,
        drop_prob: float | None = None,
    ) -> None:
        from topo_contrastive.transforms import (
            ContrastiveViews,
            EdgeFlowMask,
            HodgeSpectralMask,
            SimplexSignalMask,
        )

        self.kind = config.mask
        self.generator = generator
        if self.kind == "uniform":
            p = config.drop_prob if drop_prob is None else float(drop_prob)
            if data.rank == 1:
                mask = EdgeFlowMask(p, generator=generator)
            else:
                mask = SimplexSignalMask(p, rank=data.rank, generator=generator)
            self.drop_prob = None
        elif self.kind == "spectral":
            mask = HodgeSpectralMask(
                data.hodge,
                config.budget,
                perturb=tuple(config.perturb),
                preserve=tuple(config.preserve),
                generator=generator,
            )
            self.drop_prob = data.drop_probabilities_for(config)  # [S, N1]
        else:
            raise ValueError(f"the configuration {config.name!r} has no mask ({self.kind!r})")
        self.transform = ContrastiveViews(mask, hodge=data.hodge, hodge_parts=False)

    def __call__(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Views ``[2, B, N1]`` of flows ``x`` ``[B, N1]`` (samples ``index`` ``[B]``)."""
        dp = None
        if self.drop_prob is not None:
            dp = self.drop_prob.to(x.device)[index.to(self.drop_prob.device)]  # [B, N1]
        return self.transform.views(x, dp)
