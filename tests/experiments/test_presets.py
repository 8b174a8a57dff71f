"""The presets of ``reproduce`` and their adjustment (:mod:`experiments.presets`)."""

from __future__ import annotations

from experiments import PRESETS
from experiments.presets import adjust_preset


def test_adjust_preset_marks_only_a_reduced_protocol():
    full = PRESETS["full"]
    assert adjust_preset(full, ["SCL"], ["trajectory"]) is full
    same = adjust_preset(full, ["SCL"], ["trajectory"], epochs=200, num_splits=16)
    assert not same.reduced and same.epochs == {"trajectory": 200, "ocean": 200}
    fewer = adjust_preset(full, ["SCL"], ["trajectory"], num_splits=4, pretrain_seeds=1)
    assert fewer.reduced and fewer.figure2_splits == 4 and fewer.figure2_pretrain_seeds == 1
    short = adjust_preset(full, ["SCL"], ["trajectory"], epochs=1, figure2=False, figure1=False)
    assert short.reduced and short.figure2_dataset is None and short.figure1_draws == 0
    moved = adjust_preset(full, ["SCL"], ["trajectory"], figure2_dataset="trajectory")
    assert moved.figure2_dataset == "trajectory" and not moved.reduced
