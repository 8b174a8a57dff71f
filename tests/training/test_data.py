"""Finding and loading the datasets of the experiment."""

from __future__ import annotations

import pytest
import torch

from topo_contrastive.training import ExperimentData, find_ocean_file, get_config, load_dataset
from topo_contrastive.training.data import OCEAN_ENV_VAR


def test_experiment_data_tensors(tiny_data):
    S, n1 = tiny_data.flows.shape
    assert S == 40 and n1 == tiny_data.complex.num_edges
    # the dataset fitted by a configuration's views: Hodge parts that add up to the flows,
    # stored on a copy (the experiment's dataset is left alone), computed once
    views = tiny_data.contrastive_views(get_config("SCL", "trajectory"))
    fitted = tiny_data.contrastive_dataset(views)
    parts = torch.stack([fitted[i].hodge_parts for i in range(S)])  # [S, N1, 3]
    assert (parts.sum(-1) - tiny_data.flows).abs().max() < 1e-5
    assert tiny_data.contrastive_dataset(views) is fitted
    assert "hodge_parts" not in tiny_data.dataset[0].keys()
    assert tiny_data.labels.tolist().count(0) == 20
    L1, _ = tiny_data.complex.laplacians()
    assert tiny_data.complex.laplacians()[0] is L1  # cached
    split = tiny_data.split(3)
    assert [len(split[k]) for k in ("train", "val", "test")] == [20, 10, 10]
    assert len(tiny_data.fingerprint) == 16


def test_unknown_dataset(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'cifar'"):
        load_dataset("cifar", tmp_path)


def test_explicit_or_env_path_must_exist(tmp_path, monkeypatch):
    monkeypatch.delenv(OCEAN_ENV_VAR, raising=False)
    assert find_ocean_file() is None  # nothing else is searched
    with pytest.raises(FileNotFoundError, match="--ocean-raw"):
        find_ocean_file(tmp_path / "missing.jld2")
    with pytest.raises(FileNotFoundError, match="which is a folder; expected the file"):
        find_ocean_file(tmp_path)
    monkeypatch.setenv(OCEAN_ENV_VAR, str(tmp_path / "missing.jld2"))
    with pytest.raises(FileNotFoundError, match=OCEAN_ENV_VAR):
        find_ocean_file()
    real = tmp_path / "dataBuoys.jld2"
    real.write_bytes(b"x")
    monkeypatch.setenv(OCEAN_ENV_VAR, str(real))
    assert find_ocean_file() == real


def test_ocean_without_any_file_or_network(tmp_path, monkeypatch):
    """No raw file, no environment variable, no network: the shipped task."""
    import topo_contrastive.datasets.ocean_drifters as od

    monkeypatch.delenv(OCEAN_ENV_VAR, raising=False)

    def offline(*args, **kwargs):
        raise AssertionError("a download was attempted")

    monkeypatch.setattr(od, "download_url", offline)
    monkeypatch.chdir(tmp_path)
    data = ExperimentData.from_dataset(load_dataset("ocean", tmp_path / "data"), "ocean")
    assert data.sizes == (133, 320, 186) and data.num_samples == 200
    assert not data.dataset.val_mask.any()
    assert not (tmp_path / "data" / "ocean_drifters" / "raw" / "dataBuoys.jld2").exists()


def test_named_ocean_file_is_copied_and_read(tmp_path, monkeypatch, trust_fake):
    monkeypatch.setenv(OCEAN_ENV_VAR, str(trust_fake["path"]))
    ds = load_dataset("ocean", tmp_path)
    assert (tmp_path / "ocean_drifters" / "raw" / "dataBuoys.jld2").is_file()
    assert ds.complex.num_edges == len(trust_fake["content"]["edges"])  # read from the file


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_failed_ocean_copy_leaves_no_temporary(tmp_path, monkeypatch, error):
    import topo_contrastive.training.data as data_mod

    source = tmp_path / "source.jld2"
    source.write_bytes(b"x" * 1000)

    def failing_copy(src, dst):
        with open(dst, "wb") as f:
            f.write(b"x" * 10)  # part of the file, then the failure
        raise error

    monkeypatch.setattr(data_mod.shutil, "copyfile", failing_copy)
    expected = ValueError if isinstance(error, OSError) else KeyboardInterrupt
    with pytest.raises(expected, match="cannot copy" if expected is ValueError else None):
        load_dataset("ocean", tmp_path / "data", ocean_raw=source)
    raw = tmp_path / "data" / "ocean_drifters" / "raw"
    assert list(raw.iterdir()) == []  # neither the file nor a temporary


def test_ocean_raw_is_checked_even_when_a_processed_dataset_exists(
    tmp_path, monkeypatch, trust_fake
):
    """--ocean-raw used to be ignored once data_root held a processed dataset: a wrong file
    now is an error, the right one loads the (identical) processed dataset."""
    monkeypatch.delenv(OCEAN_ENV_VAR, raising=False)
    given = trust_fake["path"]
    first = load_dataset("ocean", tmp_path, ocean_raw=given)  # builds the processed file
    processed = tmp_path / "ocean_drifters" / "processed" / "ocean_drifters.pt"
    assert processed.is_file()
    wrong = tmp_path / "wrong.jld2"
    wrong.write_bytes(given.read_bytes()[:-10])  # a truncated copy
    with pytest.raises(ValueError, match="is not the ocean drifter file .* its sha256"):
        load_dataset("ocean", tmp_path, ocean_raw=wrong)
    with pytest.raises(FileNotFoundError, match="--ocean-raw"):
        load_dataset("ocean", tmp_path, ocean_raw=tmp_path / "missing.jld2")
    again = load_dataset("ocean", tmp_path, ocean_raw=given)
    assert again.complex.fingerprint() == first.complex.fingerprint()


def test_contrastive_dataset_shares_the_flows_and_leaves_the_dataset_alone(tiny_data):
    # fitting stores drop probabilities and parts on a copy that holds the same flow tensor
    # (no second copy of every flow) and adds nothing to the original dataset
    cfg = get_config("SSCL_Spec", "trajectory")
    fitted = tiny_data.contrastive_dataset(tiny_data.contrastive_views(cfg))
    assert fitted._data.x_1.data_ptr() == tiny_data.dataset._data.x_1.data_ptr()
    assert "drop_prob" in fitted[0].keys() and "hodge_parts" in fitted[0].keys()  # noqa: SIM118
    assert "drop_prob" not in tiny_data.dataset[0].keys()  # noqa: SIM118
    assert "drop_prob" not in tiny_data.dataset._data.keys()  # noqa: SIM118
    torch.testing.assert_close(fitted[3].x_1, tiny_data.dataset[3].x_1, rtol=0, atol=0)


def test_flows_are_a_view_of_the_dataset_storage(tiny_data):
    # the prepared flows share the dataset's float32 storage (no copy of every flow) and
    # are its samples in order
    stored = tiny_data.dataset._data.x_1
    assert tiny_data.flows.data_ptr() == stored.data_ptr()
    for i in (0, 7, tiny_data.num_samples - 1):
        assert torch.equal(tiny_data.flows[i], tiny_data.dataset[i].x_1.view(-1))
    # a subset is read sample by sample (a copy)
    sub = ExperimentData.from_dataset(tiny_data.dataset[torch.arange(5, 12)], "trajectory")
    assert sub.flows.data_ptr() != stored.data_ptr()
    assert torch.equal(sub.flows, tiny_data.flows[5:12])
