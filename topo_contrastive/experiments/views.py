"""Two masked views of a mini-batch of flows, with the library's PyG transforms (private)."""

from __future__ import annotations

import torch
from torch_geometric.data import Data

from topo_contrastive._layout import batch_vector, samples_to_rows
from topo_contrastive.experiments.configs import ExperimentConfig
from topo_contrastive.experiments.data import ExperimentData

__all__ = ["ViewMaker"]


class ViewMaker:
    """Make the two masked views of a batch of flows (paper §4, "edge flow masking").

    ``"uniform"`` masks apply :class:`~topo_contrastive.transforms.EdgeFlowMask` with the
    configuration's ``drop_prob``; ``"spectral"`` masks apply
    :class:`~topo_contrastive.transforms.HodgeSpectralMask` to a batch carrying the precomputed
    per-sample ``drop_prob`` (computed once per dataset, :meth:`ExperimentData.drop_probabilities`).
    Both views are drawn independently from the same distribution with ``generator``.

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
            EdgeFlowMask,
            HodgeSpectralMask,
            SimplexSignalMask,
        )

        self.kind = config.mask
        self.generator = generator
        if self.kind == "uniform":
            p = config.drop_prob if drop_prob is None else float(drop_prob)
            if data.rank == 1:
                self.transform = EdgeFlowMask(p, generator=generator)
            else:
                self.transform = SimplexSignalMask(p, rank=data.rank, generator=generator)
            self.drop_prob = None
        elif self.kind == "spectral":
            self.transform = HodgeSpectralMask(
                data.hodge,
                config.budget,
                perturb=tuple(config.perturb),
                preserve=tuple(config.preserve),
                generator=generator,
            )
            self.drop_prob = data.drop_probabilities_for(config)  # [S, N1]
        else:
            raise ValueError(f"the configuration {config.name!r} has no mask ({self.kind!r})")

    def __call__(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Views ``[2, B, N1]`` of flows ``x`` ``[B, N1]`` (samples ``index`` ``[B]``)."""
        B, n1 = x.shape
        # B flows on one Data: PyG's batch vector says which rows belong to which sample
        batch = Data(batch=batch_vector(B, n1, x.device))
        batch[self.transform.attr] = samples_to_rows(x.unsqueeze(-1))  # x_k [B*N1, 1]
        if self.drop_prob is not None:
            dp = self.drop_prob.to(x.device)[index.to(self.drop_prob.device)]
            batch.drop_prob = dp.reshape(-1, 1)  # [B*N1, 1]
        views = [self.transform(batch)[self.transform.attr].view_as(x) for _ in range(2)]
        return torch.stack(views)  # [2, B, N1]
