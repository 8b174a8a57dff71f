"""The leave-one-network-out protocol: bad input, the split, resume."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from experiments.studies.reuse import (
    check_networks,
    load_networks,
    pretraining_indices,
    protocol,
    reuse_study,
    scnn_encoder,
)
from experiments.study import Settings
from tests.experiments.studies.reuse._networks import grid_network

TINY = {"fractions": (0.25, 1.0), "draws": 2, "seeds": 1, "epochs": 1, "label_epochs": 1,
        "hidden": 4}  # fmt: skip


@pytest.fixture
def files(tmp_path):
    return [grid_network(tmp_path / f"g{w}.npz", w, 4, seed=w) for w in (4, 5, 6)]


def _study(nets, out, held_out=None, **kw):
    return reuse_study(nets, Settings(out, **kw), held_out)


def _nets(tmp_path, files):
    return load_networks(data_files=files, folder=tmp_path / "data")


def test_the_same_network_twice_is_refused(tmp_path, files):
    with pytest.raises(ValueError, match="`networks`: --data-file .*g4.npz has the same name"):
        check_networks(_nets(tmp_path, [files[0], files[1], files[0]]), None)


def test_the_same_complex_under_another_name_is_refused(tmp_path, files):
    copy = tmp_path / "copy" / "other.npz"
    copy.parent.mkdir()
    shutil.copy(files[0], copy)
    with pytest.raises(ValueError, match="other.npz has the same complex as --data-file"):
        check_networks(_nets(tmp_path, [files[0], files[1], copy]), None)


def test_one_network_alone_and_an_unknown_held_out_name_are_refused(tmp_path, files):
    nets = _nets(tmp_path, files)
    with pytest.raises(ValueError, match="at least two networks"):
        check_networks(nets[:1], None)
    with pytest.raises(ValueError, match="`held_out`: 'anaheim' is not among"):
        check_networks(nets, ["anaheim"])


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan")])
def test_a_fraction_outside_0_1_is_refused(tmp_path, files, bad):
    with pytest.raises(ValueError, match=r"`fractions` must lie in \(0, 1\]"):
        _study(_nets(tmp_path, files), tmp_path / "out", **{**TINY, "fractions": (bad, 1)})
    assert not (tmp_path / "out").exists()


def test_a_network_without_labelled_trips_cannot_be_held_out(tmp_path, files):
    unlabelled = grid_network(tmp_path / "plain.npz", 7, 3, labels=False)
    nets = _nets(tmp_path, [*files[:2], unlabelled])
    with pytest.raises(ValueError, match="'plain' .* has no labelled trips"):
        check_networks(nets, None)  # default: every network in turn
    assert check_networks(nets, ["g4", "g5"]) == ["g4", "g5"]  # pre-trained on only: fine
    one_class = grid_network(tmp_path / "same.npz", 7, 3, one_class=True)
    with pytest.raises(ValueError, match="'same' has a single class"):
        check_networks(_nets(tmp_path, [files[0], one_class]), None)


def test_the_held_out_networks_trips_never_reach_pre_training(tmp_path, files, monkeypatch):
    nets = _nets(tmp_path, files)
    seen = []

    def fake_pretrain(dataset, config="SSCL_Spec", *, hidden, layers, seed, **kw):
        seen.append((dataset.network.view(-1).numpy().copy(), dataset.trip.view(-1).numpy()))
        return scnn_encoder(hidden, layers)

    monkeypatch.setattr(protocol, "pretrain_encoder", fake_pretrain)
    _study(nets, tmp_path / "out", held_out=["g5"], **TINY)
    (transfer_net, transfer_trip), (own_net, own_trip) = seen
    sizes = [len(n.dataset) for n in nets]
    # the transferred encoder: every trip of g4 and g6, none of g5
    assert sorted(set(transfer_net.tolist())) == [0, 2]
    for k in (0, 2):
        assert sorted(transfer_trip[transfer_net == k].tolist()) == list(range(sizes[k]))
    # the in-domain encoder: g5's own trips, all of them
    assert set(own_net.tolist()) == {1} and sorted(own_trip.tolist()) == list(range(sizes[1]))
    assert pretraining_indices(np.array([0, 1, 1, 2, 0]), 1).tolist() == [0, 3, 4]


def test_finished_cells_are_read_back_not_recomputed(tmp_path, monkeypatch):
    small = [grid_network(tmp_path / f"s{w}.npz", w, 3, trips=16, seed=w) for w in (3, 4)]
    nets = _nets(tmp_path, small)
    calls = []

    def counting(dataset, config="SSCL_Spec", *, hidden, layers, **kwargs):
        calls.append(1)
        return scnn_encoder(hidden, layers)

    monkeypatch.setattr(protocol, "pretrain_encoder", counting)
    one = {**TINY, "held_out": ["s3"], "fractions": (1.0,), "draws": 1}
    first = _study(nets, tmp_path / "out", **one)
    assert len(calls) == 2 and first["computed"] == 1  # transferred and in-domain
    cells = json.loads((tmp_path / "out" / "cells" / "cells.json").read_text())
    assert [r["cell"] for r in cells["records"]] == ["s3__seed0"]
    again = _study(nets, tmp_path / "out", **one)
    assert len(calls) == 2 and again["resumed"] == 1 and again["held_out"] == first["held_out"]
    # one more seed: only its cell is computed
    more = _study(nets, tmp_path / "out", **{**one, "seeds": 2})
    assert len(calls) == 4 and (more["computed"], more["resumed"]) == (1, 1)
    # other settings: refused, naming them, nothing computed
    with pytest.raises(ValueError, match="temperature"):
        _study(nets, tmp_path / "out", **{**one, "temperature": 0.25})
    assert len(calls) == 4


def test_target_check_is_one_sided_and_counts_both_ways():
    """Gaps are in-domain minus transferred, in points; a network meets the target when
    transfer costs at most 2 points at every fraction (ahead counts), and is counted
    "both ways" only when every gap's magnitude is at most 2."""
    from experiments.studies.reuse import target_check

    def net(transferred, in_domain):
        return {"rows": {"transferred, probed": {f: {"mean": t} for f, t in transferred.items()},
                         "in-domain, probed": {f: {"mean": i} for f, i in in_domain.items()}}}

    summary = {"held_out": {
        "a": net({"0.1": 0.60, "1": 0.80}, {"0.1": 0.61, "1": 0.79}),    # gaps +1, -1
        "b": net({"0.1": 0.60, "1": 0.85}, {"0.1": 0.60, "1": 0.80}),    # 0, -5: ahead
        "c": net({"0.1": 0.50, "1": 0.80}, {"0.1": 0.525, "1": 0.80}),   # +2.5: missed
    }}  # fmt: skip
    t = target_check(summary)
    assert t["per_network"]["a"]["gaps"]["0.1"] == pytest.approx(1.0)
    assert t["per_network"]["b"]["gaps"]["1"] == pytest.approx(-5.0)
    assert [t["per_network"][n]["met"] for n in "abc"] == [True, True, False]
    assert [t["per_network"][n]["both_ways"] for n in "abc"] == [True, False, False]
    assert (t["networks_met"], t["networks_both_ways"], t["needed"], t["met"]) == (2, 1, 2, True)
