"""Weights-only encoder checkpoints: round trip, and clear errors on mismatches."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.training import (
    ExperimentData,
    embed,
    get_config,
    load_experiment_encoder,
    pretrain,
    save_experiment_encoder,
)


@pytest.fixture(scope="module")
def trained(tiny_data):
    cfg = get_config("SCL", "trajectory", hidden_channels=16)
    return cfg, pretrain(tiny_data, cfg, seed=0, epochs=1).encoder


def test_round_trip_with_weights_only(tmp_path, tiny_data, trained):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    save_experiment_encoder(enc, path, tiny_data, cfg, seed=0, epochs=1)
    assert [p.name for p in tmp_path.iterdir()] == ["encoder.pt"]  # no temporary file left
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == "topo_contrastive.encoder"
    assert raw["metadata"]["complex"]["sizes"] == list(tiny_data.sizes)
    loaded, meta = load_experiment_encoder(path, data=tiny_data, expected=cfg.architecture())
    assert meta["config"] == "SCL" and meta["seed"] == 0
    assert np.array_equal(embed(loaded, tiny_data), embed(enc, tiny_data))


def test_other_complex_is_rejected(tmp_path, tiny_data, trained):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    save_experiment_encoder(enc, path, tiny_data, cfg)
    other = ExperimentData.from_dataset(
        SyntheticTrajectories(
            str(tmp_path / "other"), num_points=160, num_train=4, num_val=2, num_test=2, log=False
        ),
        "trajectory",
    )
    with pytest.raises(ValueError, match="trained on another complex"):
        load_experiment_encoder(path, data=other)


def test_other_width_is_rejected(tmp_path, tiny_data, trained):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    save_experiment_encoder(enc, path, tiny_data, cfg)
    with pytest.raises(ValueError, match="hidden_channels: checkpoint 16 vs expected 64"):
        load_experiment_encoder(
            path, data=tiny_data, expected=get_config("SCL", "trajectory").architecture()
        )
    # weights that contradict the stored architecture
    obj = torch.load(path, weights_only=True)
    obj["metadata"]["architecture"]["hidden_channels"] = 32
    torch.save(obj, path)
    with pytest.raises(ValueError, match="width 32"):
        load_experiment_encoder(path)


def test_foreign_or_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_experiment_encoder(tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read"):
        load_experiment_encoder(bad)
    torch.save({"weights": torch.zeros(2)}, bad)
    with pytest.raises(ValueError, match="format"):
        load_experiment_encoder(bad)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights_are_rejected_at_load_and_save(tmp_path, tiny_data, trained, bad):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    save_experiment_encoder(enc, path, tiny_data, cfg)
    obj = torch.load(path, weights_only=True)
    name = sorted(obj["state_dict"])[-1]
    obj["state_dict"][name].view(-1)[0] = bad
    torch.save(obj, path)
    with pytest.raises(ValueError, match=f"weight '{name}' holds NaN or inf"):
        load_experiment_encoder(path, data=tiny_data)
    # a diverged encoder is not written in the first place
    diverged = copy.deepcopy(enc)
    with torch.no_grad():
        next(diverged.parameters()).view(-1)[0] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        save_experiment_encoder(diverged, tmp_path / "diverged.pt", tiny_data, cfg)
    assert not (tmp_path / "diverged.pt").exists()


def test_hodge_readout_configuration_round_trip(tmp_path, tiny_data):
    cfg = get_config("SCL", "trajectory", hidden_channels=8, num_layers=1, readout="hodge")
    enc = pretrain(tiny_data, cfg, seed=0, epochs=1).encoder
    path = tmp_path / "encoder.pt"
    save_experiment_encoder(enc, path, tiny_data, cfg)
    loaded, meta = load_experiment_encoder(path, data=tiny_data, expected=cfg.architecture())
    assert meta["architecture"]["readout"] == "hodge" and loaded.readout_name == "HodgeReadout"
    assert np.array_equal(embed(loaded, tiny_data), embed(enc, tiny_data))
    with pytest.raises(ValueError, match="needs the complex"):
        load_experiment_encoder(path)
