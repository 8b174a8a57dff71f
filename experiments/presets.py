"""The settings of a ``reproduce`` run (:class:`Preset`) and the two named ones
(:data:`PRESETS`: ``"full"``, the paper's protocol, and ``"quick"``).

They are read by :mod:`~experiments.protocol` (which units a run has, and
their epochs) and by :mod:`~experiments.reproduce` (which runs them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from topo_contrastive.training.configs import EDITIONS, ExperimentConfig, get_config


@dataclass(frozen=True)
class Preset:
    """Settings of a ``reproduce`` run.

    Args:
        name: ``"full"`` or ``"quick"`` (or a custom name).
        epochs: epochs per dataset (``None``: each configuration's own).
        num_splits: evaluation splits per row and dataset.
        pretrain_seeds: pre-trained encoders per contrastive row, per dataset.
        editions: editions of Table 1 to run.
        references: measure the reference rows.
        supervised_epochs: maximum epochs of the supervised SCNN per dataset (``None``: the
            configuration's).
        figure2_dataset: dataset of Figure 2 (``None``: no Figure 2).
        figure2_probs: uniform drop probabilities of Figure 2.
        figure2_splits: evaluation splits per point of Figure 2.
        figure2_pretrain_seeds: encoders per point of Figure 2.
        figure2_epochs: epochs of Figure 2's runs (``None``: as ``epochs``).
        figure1_draws: masks per flow and method of Figure 1 (``0``: no Figure 1).
        reduced: whether the settings are smaller than the paper's protocol.
    """

    name: str
    epochs: dict[str, int | None]
    num_splits: int = 16
    pretrain_seeds: dict[str, int] = field(default_factory=lambda: {"trajectory": 2, "ocean": 2})
    editions: tuple[str, ...] = EDITIONS
    references: bool = True
    supervised_epochs: dict[str, int | None] = field(default_factory=dict)
    figure2_dataset: str | None = "ocean"
    figure2_probs: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7)
    figure2_splits: int = 4
    figure2_pretrain_seeds: int = 2
    figure2_epochs: int | None = None
    figure1_draws: int = 20
    reduced: bool = False

    def epochs_for(self, dataset: str, config: ExperimentConfig) -> int:
        """(Maximum) epochs of ``config`` on ``dataset`` under this preset."""
        table = self.epochs if config.is_contrastive else self.supervised_epochs
        value = table.get(dataset)
        return config.epochs if value is None else int(value)

    def describe(self, editions: Sequence[str] | None = None) -> str:
        """One line naming the settings (``editions``: those run, default the preset's)."""
        eps = []
        for d in self.epochs:
            scl, sup = get_config("SCL", d), get_config("SCNN", d)
            eps.append(
                f"{d}: {self.epochs_for(d, scl)} contrastive / at most "
                f"{self.epochs_for(d, sup)} SCNN (patience {sup.patience})"
            )
        seeds = ", ".join(f"{d}: {n}" for d, n in self.pretrain_seeds.items())
        return (
            f"preset {self.name!r}; editions {', '.join(editions or self.editions)}; epochs "
            f"{'; '.join(eps)}; {self.num_splits} evaluation splits per row; pre-trained "
            f"encoders per contrastive row {seeds}; batch size 100"
        )


#: ``full``: the configurations' epochs, 16 splits shared out over 2 pre-trained encoders per
#: row, both editions, the reference rows, Figures 1-2. ``quick``: all rows of both editions
#: on both datasets in under 3 minutes on 2 cores, with far fewer epochs, splits and encoders
#: (its numbers are NOT the paper's protocol).
PRESETS: dict[str, Preset] = {
    "full": Preset("full", epochs={"trajectory": None, "ocean": None}, figure2_pretrain_seeds=1),
    "quick": Preset(
        "quick", epochs={"trajectory": 1, "ocean": 3}, num_splits=3,
        pretrain_seeds={"trajectory": 1, "ocean": 1},
        supervised_epochs={"trajectory": 2, "ocean": 5}, figure2_splits=2,
        figure2_pretrain_seeds=1, figure2_epochs=1, figure1_draws=3, reduced=True,
    ),  # fmt: skip
}


def adjust_preset(
    preset: Preset,
    config_names: Sequence[str],
    dataset_names: Sequence[str],
    epochs: int | None = None,
    num_splits: int | None = None,
    pretrain_seeds: int | None = None,
    figure2_dataset: str | None = None,
    figure2: bool = True,
    figure1: bool = True,
) -> Preset:
    """``preset`` with the given settings changed, marked reduced where it leaves the full
    protocol: fewer epochs than some row's own (of ``config_names`` on ``dataset_names``) or
    fewer than 16 splits.

    Args:
        preset: the preset to change (:data:`~experiments.PRESETS`).
        config_names: the rows that will run (resolved names).
        dataset_names: the datasets that will run (resolved names).
        epochs: epochs of every contrastive run, maximum epochs of the supervised SCNN and of
            Figure 2's runs.
        num_splits: evaluation splits per row (Figure 2: at most this many).
        pretrain_seeds: pre-trained encoders per contrastive row and dataset (Figure 2: at
            most this many).
        figure2_dataset: the dataset of Figure 2's sweep (a resolved name).
        figure2: ``False`` skips Figure 2.
        figure1: ``False`` skips Figure 1.

    Returns:
        The new preset (``preset`` itself when nothing changes).
    """
    changes: dict[str, Any] = {}
    if epochs:
        changes["epochs"] = {d: epochs for d in preset.epochs}
        changes["supervised_epochs"] = {d: epochs for d in preset.epochs}
        changes["figure2_epochs"] = epochs
    if num_splits:
        changes["num_splits"] = num_splits
        changes["figure2_splits"] = min(preset.figure2_splits, num_splits)
    if pretrain_seeds:
        changes["pretrain_seeds"] = {d: pretrain_seeds for d in preset.pretrain_seeds}
        changes["figure2_pretrain_seeds"] = min(preset.figure2_pretrain_seeds, pretrain_seeds)
    if not figure2:
        changes["figure2_dataset"] = None
    elif figure2_dataset is not None:
        changes["figure2_dataset"] = figure2_dataset
    if not figure1:
        changes["figure1_draws"] = 0
    if not changes:
        return preset
    # fewer epochs than some configuration's own, or fewer splits: not the full protocol
    fewer_epochs = epochs is not None and any(
        epochs < get_config(c, d).epochs for c in config_names for d in dataset_names
    )
    reduced = preset.reduced or fewer_epochs or bool(num_splits and num_splits < 16)
    return dataclasses.replace(preset, reduced=reduced, **changes)
