"""Flows in physical units: the data model's input scale, the commands' --flow-scale, the
at-chance warning that names the flows' magnitude."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests._commands import main
from tests._tiny import tiny_dataset
from topo_contrastive import io
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.training import ExperimentData, embed, get_config, pretrain
from topo_contrastive.training.diagnostics import pretrain_diagnostics
from topo_contrastive.training.embeddings import read_embeddings

#: a power of two: flows times it and back are exact, so the runs must agree bit for bit
K = 1024.0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The tiny trajectory task as a data file of unit flows and of flows times K."""
    root = tmp_path_factory.mktemp("flow_scale")
    traj = tiny_dataset(root / "data" / "trajectories")
    ops = traj.complex
    flows = torch.stack([traj[i].x_1.view(-1) for i in range(len(traj))]).numpy()
    out = {"root": root}
    for name, k in (("unit", 1.0), ("physical", K)):
        out[name] = root / f"{name}.npz"
        EdgeFlows.write_npz(out[name], ops, flows=flows * k, labels=traj._data.y.numpy())
    return out


def _data(path, root):
    from topo_contrastive.training import load_data_file

    return ExperimentData.from_dataset(load_data_file(path, data_root=root / "d"), path.stem)


def test_the_rms_of_unit_flows_is_one_and_physical_flows_are_divided_by_theirs(files):
    unit, physical = _data(files["unit"], files["root"]), _data(files["physical"], files["root"])
    assert unit.flow_rms == 1.0 and unit.scale_flows("rms") == 1.0
    assert physical.flow_rms == K and physical.scale_flows("rms") == 1 / K
    assert physical.scale_flows("none") == 1.0 and physical.input_scale == 1.0
    with pytest.raises(ValueError, match="must be 'rms' or 'none', got 'max'"):
        physical.scale_flows("max")


def test_scaled_physical_flows_train_and_embed_as_unit_flows_bit_for_bit(files):
    unit, physical = _data(files["unit"], files["root"]), _data(files["physical"], files["root"])
    physical.scale_flows("rms")
    cfg = get_config("SSCL_Spec", "trajectory", hidden_channels=8)
    a, b = pretrain(unit, cfg, seed=1, epochs=1), pretrain(physical, cfg, seed=1, epochs=1)
    assert a.losses == b.losses
    assert np.array_equal(embed(a.encoder, unit), embed(b.encoder, physical))
    x, _, _ = physical.batch([0, 1])
    assert torch.equal(x, unit.batch([0, 1])[0])


def test_the_commands_scale_record_and_apply_it(files, tmp_path):
    flags = ["--data-root", str(files["root"] / "d"), "--no-progress", "--threads", "1"]
    runs = {}
    for name in ("unit", "physical"):
        out = tmp_path / name
        argv = ["pretrain", "--data-file", str(files[name]), "--config", "SCL", "--epochs", "1",
                "--hidden-channels", "8", "--out", str(out), *flags]  # fmt: skip
        assert main(argv) == 0
        hodge = _data(files[name], files["root"]).hodge
        _, meta = io.load_encoder(out / "encoder.pt", complex=hodge)
        assert json.loads((out / "pretrain.json").read_text())["input_scale"] == meta["input_scale"]
        argv = ["embed", "--data-file", str(files[name]), "--checkpoint",
                str(out / "encoder.pt"), "--out", str(out / "emb"), *flags]  # fmt: skip
        assert main(argv) == 0
        runs[name] = (meta["input_scale"], read_embeddings(out / "emb")["embeddings"])
    assert runs["unit"][0] == 1.0 and runs["physical"][0] == 1 / K
    np.testing.assert_array_equal(runs["unit"][1], runs["physical"][1])


def test_the_at_chance_warning_names_a_magnitude_far_from_one():
    h = np.random.default_rng(0).normal(size=(10, 4))
    far = pretrain_diagnostics([5.29], [5.293], h, flow_rms=2345.0)["warnings"]
    assert any("the flows' RMS is 2345" in w and "--flow-scale rms" in w for w in far)
    near = pretrain_diagnostics([5.29], [5.293], h, flow_rms=1.0)["warnings"]
    assert near and not any("RMS" in w for w in near)
