"""Weights-only encoder checkpoints: round trip, and clear errors on mismatches."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from topo_contrastive import io
from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.training import ExperimentData, embed, get_config, pretrain


@pytest.fixture(scope="module")
def trained(tiny_data):
    cfg = get_config("SCL", "trajectory", hidden_channels=16)
    return cfg, pretrain(tiny_data, cfg, seed=0, epochs=1).encoder


def test_round_trip_with_weights_only(tmp_path, tiny_data, trained):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    io.save_encoder(enc, path, complex=tiny_data.complex, dataset=tiny_data.name,
                    config=cfg.name, seed=0, epochs=1)  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["encoder.pt"]  # no temporary file left
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == "topo_contrastive.encoder"
    assert raw["metadata"]["complex"]["sizes"] == list(tiny_data.sizes)
    loaded, meta = io.load_encoder(path, complex=tiny_data.hodge, expected=cfg.architecture())
    assert meta["config"] == "SCL" and meta["seed"] == 0
    assert np.array_equal(embed(loaded, tiny_data), embed(enc, tiny_data))


def test_other_complex_is_rejected(tmp_path, tiny_data, trained):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    io.save_encoder(enc, path, complex=tiny_data.complex, dataset=tiny_data.name, config=cfg.name)
    other = ExperimentData.from_dataset(
        SyntheticTrajectories(
            str(tmp_path / "other"), num_points=160, num_train=4, num_val=2, num_test=2, log=False
        ),
        "trajectory",
    )
    with pytest.raises(ValueError, match="trained on another complex"):
        io.load_encoder(path, complex=other.hodge)


def test_other_width_is_rejected(tmp_path, tiny_data, trained):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    io.save_encoder(enc, path, complex=tiny_data.complex, dataset=tiny_data.name, config=cfg.name)
    with pytest.raises(ValueError, match="hidden_channels: checkpoint 16 vs expected 64"):
        expected = get_config("SCL", "trajectory").architecture()
        io.load_encoder(path, complex=tiny_data.hodge, expected=expected)
    # weights that contradict the stored architecture
    obj = torch.load(path, weights_only=True)
    obj["metadata"]["architecture"]["hidden_channels"] = 32
    torch.save(obj, path)
    with pytest.raises(ValueError, match="width 32"):
        io.load_encoder(path)


def test_foreign_or_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        io.load_encoder(tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read"):
        io.load_encoder(bad)
    torch.save({"weights": torch.zeros(2)}, bad)
    with pytest.raises(ValueError, match="format"):
        io.load_encoder(bad)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights_are_rejected_at_load_and_save(tmp_path, tiny_data, trained, bad):
    cfg, enc = trained
    path = tmp_path / "encoder.pt"
    io.save_encoder(enc, path, complex=tiny_data.complex, dataset=tiny_data.name, config=cfg.name)
    obj = torch.load(path, weights_only=True)
    name = sorted(obj["state_dict"])[-1]
    obj["state_dict"][name].view(-1)[0] = bad
    torch.save(obj, path)
    with pytest.raises(ValueError, match=f"weight '{name}' holds NaN or inf"):
        io.load_encoder(path, complex=tiny_data.hodge)
    # a diverged encoder is not written in the first place
    diverged = copy.deepcopy(enc)
    with torch.no_grad():
        next(diverged.parameters()).view(-1)[0] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        io.save_encoder(diverged, tmp_path / "diverged.pt", complex=tiny_data.complex)
    assert not (tmp_path / "diverged.pt").exists()


def test_hodge_readout_configuration_round_trip(tmp_path, tiny_data):
    cfg = get_config("SCL", "trajectory", hidden_channels=8, num_layers=1, readout="hodge")
    enc = pretrain(tiny_data, cfg, seed=0, epochs=1).encoder
    path = tmp_path / "encoder.pt"
    io.save_encoder(enc, path, complex=tiny_data.complex, dataset=tiny_data.name, config=cfg.name)
    loaded, meta = io.load_encoder(path, complex=tiny_data.hodge, expected=cfg.architecture())
    assert meta["architecture"]["readout"] == "hodge" and loaded.readout_name == "HodgeReadout"
    assert np.array_equal(embed(loaded, tiny_data), embed(enc, tiny_data))
    with pytest.raises(ValueError, match="tied to the one complex"):
        io.load_encoder(path)
