"""Saving and loading encoders without the experiment classes (topo_contrastive.io)."""

from __future__ import annotations

import pytest
import torch

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.io import load_encoder, save_encoder
from topo_contrastive.nn import SCNN, HodgeReadout


def _square():
    """A square with one filled triangle and one hole (beta_1 = 1)."""
    return ComplexOperators.from_simplices(
        [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]]
    )


def _outputs(encoder, ops, channels=1):
    x = torch.randn(4, ops.num_edges, channels, generator=torch.Generator().manual_seed(0))
    return encoder.eval()(x, ops.laplacians())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"readout": "mean"},
        {"readout": "sum", "in_channels": 2, "act": "relu", "bias": False},
        {"readout": "max", "num_layers": 3, "K_down": 1, "K_up": 0, "normalize": True},
    ],
)
def test_round_trip_of_string_readouts(tmp_path, kwargs):
    ops = _square()
    torch.manual_seed(0)
    encoder = SCNN(hidden_channels=8, **kwargs)
    path = tmp_path / "encoder.pt"
    save_encoder(encoder, path, complex=ops, epochs=3, losses=[1.5, 1.2], note=None)
    assert [p.name for p in tmp_path.iterdir()] == ["encoder.pt"]  # atomic: no temporary file
    raw = torch.load(path, weights_only=True)  # plain tensors and numbers only
    assert raw["format"] == "topo_contrastive.encoder" and raw["version"] == 1
    assert raw["metadata"]["complex"] == {"sizes": [4, 5, 1], "fingerprint": ops.fingerprint()}
    loaded, meta = load_encoder(path, complex=ops)
    assert meta["epochs"] == 3 and meta["losses"] == [1.5, 1.2] and meta["note"] is None
    assert repr(loaded) == repr(encoder) and not loaded.training
    channels = kwargs.get("in_channels", 1)
    assert torch.equal(_outputs(loaded, ops, channels), _outputs(encoder, ops, channels))
    # the weights of a pooled readout do not depend on the complex: loading without it works
    bare, _ = load_encoder(path)
    assert torch.equal(_outputs(bare, ops, channels), _outputs(encoder, ops, channels))


def test_hodge_readout_is_rebuilt_on_the_given_complex(tmp_path, monkeypatch):
    ops = _square()
    hodge = HodgeDecomposition(ops)
    torch.manual_seed(1)
    encoder = SCNN(hidden_channels=4, readout=HodgeReadout(hodge, pool="max", energies=True))
    path = tmp_path / "hodge.pt"
    save_encoder(encoder, path, complex=hodge)
    meta = torch.load(path, weights_only=True)["metadata"]["architecture"]
    assert meta["readout"] == "hodge"
    assert meta["readout_options"] == {"pool": "max", "energies": True}
    built = []
    init = HodgeDecomposition.__init__

    def counting_init(self, *args, **kwargs):
        built.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(HodgeDecomposition, "__init__", counting_init)
    loaded, _ = load_encoder(path, complex=hodge)  # the given decomposition is reused
    assert built == []
    assert isinstance(loaded.readout, HodgeReadout) and loaded.readout.pool == "max"
    assert loaded.readout.energies and loaded.out_channels == encoder.out_channels == 16
    assert torch.equal(_outputs(loaded, ops), _outputs(encoder, ops))
    assert torch.equal(_outputs(load_encoder(path, complex=ops)[0], ops), _outputs(encoder, ops))
    with pytest.raises(ValueError, match="HodgeReadout tied to the one complex"):
        load_encoder(path)
    with pytest.raises(ValueError, match="HodgeReadout, which is tied to its complex"):
        save_encoder(encoder, tmp_path / "x.pt")


def test_input_skip_round_trips_and_is_checked_against_the_expected(tmp_path):
    ops = _square()
    torch.manual_seed(2)
    hodge = HodgeDecomposition(ops)
    encoder = SCNN(hidden_channels=4, readout=HodgeReadout(hodge, harmonic_channels=2),
                   input_skip=True)  # fmt: skip
    path = tmp_path / "skip.pt"
    save_encoder(encoder, path, complex=hodge)
    meta = torch.load(path, weights_only=True)["metadata"]["architecture"]
    assert meta["input_skip"] is True
    loaded, _ = load_encoder(path, complex=hodge, expected={"input_skip": True})
    assert loaded.input_skip and loaded.out_channels == encoder.out_channels == 5 + 2
    assert torch.equal(_outputs(loaded, ops), _outputs(encoder, ops))
    with pytest.raises(ValueError, match="input_skip: checkpoint True vs expected False"):
        load_encoder(path, complex=hodge, expected={"input_skip": False})


def test_another_complex_or_architecture_is_refused(tmp_path):
    ops = _square()
    path = tmp_path / "encoder.pt"
    save_encoder(SCNN(hidden_channels=8), path, complex=ops)
    other = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]])
    with pytest.raises(ValueError, match="trained on another complex"):
        load_encoder(path, complex=other)  # same sizes but no triangle
    with pytest.raises(ValueError, match="hidden_channels: checkpoint 8 vs expected 64"):
        load_encoder(path, expected={"hidden_channels": 64, "K_up": 2})
    obj = torch.load(path, weights_only=True)
    obj["metadata"]["architecture"]["hidden_channels"] = 16  # contradicts the weights
    torch.save(obj, path)
    with pytest.raises(ValueError, match="width 16"):
        load_encoder(path)


def test_non_finite_weights_are_refused_at_save_and_load(tmp_path):
    encoder = SCNN(hidden_channels=8)
    path = tmp_path / "encoder.pt"
    save_encoder(encoder, path)
    with torch.no_grad():
        encoder.convs[1].weight[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"weight 'convs.1.weight' holds NaN or inf values"):
        save_encoder(encoder, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()
    obj = torch.load(path, weights_only=True)
    obj["state_dict"]["convs.0.bias"][2] = float("inf")
    torch.save(obj, path)
    with pytest.raises(ValueError, match=r"weight 'convs.0.bias' holds NaN or inf values \(1 of"):
        load_encoder(path)


def test_files_of_the_first_version_without_the_newer_entries_load(tmp_path):
    """Files written before in_channels, bias and readout_options were stored."""
    path = tmp_path / "old.pt"
    encoder = SCNN(hidden_channels=8)
    save_encoder(encoder, path)
    obj = torch.load(path, weights_only=True)
    for key in ("in_channels", "bias", "readout_options"):
        del obj["metadata"]["architecture"][key]
    obj["metadata"]["complex"] = {"sizes": [4, 5, 1], "fingerprint": _square().fingerprint()}
    torch.save(obj, path)
    loaded, _ = load_encoder(path, complex=_square())
    assert torch.equal(_outputs(loaded, _square()), _outputs(encoder, _square()))


def test_bad_arguments_and_files(tmp_path):
    encoder = SCNN(hidden_channels=8)
    with pytest.raises(TypeError, match="must be an SCNN"):
        save_encoder(torch.nn.Linear(2, 2), tmp_path / "a.pt")
    with pytest.raises(TypeError, match="ComplexOperators, a HodgeDecomposition or None"):
        save_encoder(encoder, tmp_path / "a.pt", complex="square")
    with pytest.raises(TypeError, match=r"metadata metadata\['when'\] is a object"):
        save_encoder(encoder, tmp_path / "a.pt", when=object())
    with pytest.raises(ValueError, match="reserved"):
        save_encoder(encoder, tmp_path / "a.pt", architecture={})
    with pytest.raises(TypeError, match="cannot save a readout module of type Identity"):
        save_encoder(SCNN(hidden_channels=8, readout=torch.nn.Identity()), tmp_path / "a.pt")
    assert list(tmp_path.iterdir()) == []  # nothing written on an error
    with pytest.raises(FileNotFoundError):
        load_encoder(tmp_path / "none.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read with weights_only=True"):
        load_encoder(bad)
    torch.save({"weights": torch.zeros(2)}, bad)
    with pytest.raises(ValueError, match="format"):
        load_encoder(bad)
    save_encoder(encoder, bad)
    obj = torch.load(bad, weights_only=True)
    obj["version"] = 7
    torch.save(obj, bad)
    with pytest.raises(ValueError, match="unsupported version 7"):
        load_encoder(bad)


def test_basis_free_readout_saves_and_loads_without_a_complex(tmp_path):
    """An encoder not tied to one complex (string or basis-free readout) round-trips without
    ``complex=`` and gives the same embeddings on a batch of complexes."""
    from torch_geometric.data import Batch

    from topo_contrastive import HodgeReadout, load_encoder, save_encoder
    from topo_contrastive.nn import SCNN

    from ._many_complexes import many_complexes

    b = Batch.from_data_list(many_complexes(4, seed=2, cells=True))
    torch.manual_seed(0)
    encoder = SCNN(hidden_channels=8, readout=HodgeReadout(None, energies=True))
    save_encoder(encoder, tmp_path / "enc.pt", epochs=1)
    loaded, meta = load_encoder(tmp_path / "enc.pt")
    assert meta["architecture"]["readout_options"]["basis_free"] is True
    L = b.laplacians()
    torch.testing.assert_close(loaded(b.x_1, L, b.batch_1), encoder(b.x_1, L, b.batch_1))
