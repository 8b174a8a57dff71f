"""The progress bar of long set-up work (the iterative backend's projector blocks)."""

from __future__ import annotations

import io

import numpy as np
import torch

from tests._rank_complexes import torus
from topo_contrastive import HodgeDecomposition
from topo_contrastive.hodge import _iterative as iterative
from topo_contrastive.hodge import _linalg


def test_bar_on_a_terminal_only(monkeypatch):
    shown = []

    class Recorder:
        def __init__(self, seq, **kwargs):
            shown.append(kwargs)
            self.seq = seq

        def __iter__(self):
            return iter(self.seq)

    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    assert list(_linalg.progress_bar([1], "x")) == [1] and not shown  # below the minimum
    assert list(_linalg.progress_bar([1, 2, 3], "blocks", unit="group")) == [1, 2, 3]
    assert shown == [dict(desc="blocks", unit="group", disable=None, leave=False)]


def test_disable_none_prints_nothing_off_a_terminal():
    from tqdm.auto import tqdm

    out = io.StringIO()  # not a terminal: tqdm's disable=None turns the bar off
    assert list(tqdm([1, 2], file=out, disable=None)) == [1, 2] and out.getvalue() == ""


def test_projector_blocks_report_their_groups(monkeypatch):
    seen = []

    def recorder(items, desc, unit="it", minimum=2):
        seen.append((desc, unit, len(items)))
        yield from items

    monkeypatch.setattr(iterative, "progress_bar", recorder)
    ops = torus(6, 6)
    hodge = HodgeDecomposition(ops, backend="iterative")
    rng = np.random.default_rng(0)
    sets = [np.sort(rng.choice(ops.num_edges, 4, replace=False)) for _ in range(6)]
    blocks = hodge.projector_blocks(sets, dtype=torch.float64)
    assert seen and seen[0][:2] == ("projector blocks", "group") and seen[0][2] >= 1
    assert len(blocks["harmonic"]) == 6
