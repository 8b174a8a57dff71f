"""The named configurations of Table 1."""

from __future__ import annotations

import pytest

from topo_contrastive.training import CONFIG_NAMES, PAPER_TABLE1, ExperimentConfig, get_config
from topo_contrastive.training.configs import resolve_config_name, resolve_dataset_name


def test_six_rows_in_paper_order():
    assert CONFIG_NAMES == ("SSCL_Spec", "SCNN", "SSCL", "SCL_Spec", "SCL", "SCL_low")
    assert set(PAPER_TABLE1) == set(CONFIG_NAMES)
    assert PAPER_TABLE1["SSCL_Spec"]["trajectory"] == (97.9, 0.3)
    assert PAPER_TABLE1["SCL_low"]["ocean"] == (77.1, 1.2)


@pytest.mark.parametrize("dataset", ["trajectory", "ocean"])
def test_rows_differ_only_in_what_the_ablation_changes(dataset):
    rows = {name: get_config(name, dataset) for name in CONFIG_NAMES}
    expected = {
        "SSCL_Spec": ("hodge_debiased", "spectral"),
        "SSCL": ("hodge_debiased", "uniform"),
        "SCL_Spec": ("infonce", "spectral"),
        "SCL": ("infonce", "uniform"),
        "SCL_low": ("infonce", "uniform"),
    }
    for name, (loss, mask) in expected.items():
        assert rows[name].method == "contrastive"
        assert (rows[name].loss, rows[name].mask) == (loss, mask)
    assert rows["SCNN"].method == "supervised" and not rows["SCNN"].is_contrastive
    assert rows["SCL_low"].K_up == 0 and rows["SCL"].K_up > 0
    assert rows["SCL_low"].K_down == rows["SCL"].K_down
    # the contrastive rows share encoder and optimiser
    shared = ("num_layers", "K_down", "hidden_channels", "lr", "weight_decay", "temperature")
    for field in shared:
        assert len({getattr(rows[n], field) for n in expected}) == 1, field
    assert all(r.hidden_channels == 64 and r.act == "tanh" for r in rows.values())
    assert all(r.batch_size == 100 for r in rows.values())
    # every contrastive row of a dataset trains equally long
    assert len({rows[n].epochs for n in expected}) == 1


def test_names_are_case_insensitive_and_aliases_resolve():
    assert resolve_config_name("sscl-spec") == "SSCL_Spec"
    assert resolve_config_name("scl_LOW") == "SCL_low"
    assert resolve_dataset_name("Ocean_Drifters") == "ocean"
    assert resolve_dataset_name("trajectories") == "trajectory"


def test_unknown_names_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown configuration 'SimCLR'.*SSCL_Spec"):
        get_config("SimCLR", "ocean")
    with pytest.raises(ValueError, match="unknown dataset 'mnist'.*trajectory, ocean"):
        get_config("SCL", "mnist")
    with pytest.raises(TypeError):
        get_config(3, "ocean")


def test_overrides_are_validated():
    cfg = get_config("SCL", "ocean", epochs=3)
    assert cfg.epochs == 3 and cfg.name == "SCL"
    with pytest.raises(ValueError, match="unknown configuration field"):
        get_config("SCL", "ocean", learning_rate=0.1)
    with pytest.raises(ValueError, match="out of range"):
        get_config("SCL", "ocean", drop_prob=1.5)
    with pytest.raises(ValueError, match="out of range"):
        get_config("SCL", "ocean", temperature=0.0)
    with pytest.raises(ValueError, match="`loss`"):
        ExperimentConfig(name="x", method="contrastive", loss="triplet", mask="uniform")
    with pytest.raises(ValueError, match="`preserve`"):
        get_config("SCL", "ocean", preserve=("vorticity",))
    with pytest.raises(TypeError, match="`epochs`"):
        get_config("SCL", "ocean", epochs=2.5)


def test_to_dict_is_json_ready():
    d = get_config("SSCL", "trajectory").to_dict()
    assert isinstance(d["gamma"], list) and d["loss"] == "hodge_debiased"
    assert get_config("SSCL", "trajectory").architecture()["hidden_channels"] == 64
