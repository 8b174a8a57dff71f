"""The many-complex encoders' part-energy readout against a per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import InMemoryDataset

from experiments.studies.reuse import part_energy_features, scnn_encoder
from tests._many_complexes import many_complexes
from topo_contrastive.hodge import HodgeDecomposition


class _Set(InMemoryDataset):
    """An in-memory dataset of the given samples (``pretrain_encoder`` copies its dataset)."""

    def __init__(self, items) -> None:
        super().__init__()
        self.data, self.slices = self.collate(items)


def _naive(encoder, samples) -> np.ndarray:
    """One sample at a time: its own complex's decomposition of every channel."""
    rows = []
    with torch.no_grad():
        for d in samples:
            ops = d.complex()
            H = encoder.edge_embeddings(d.x_1, ops.laplacians())[0].double()  # [N1, C]
            hodge = HodgeDecomposition(ops, backend="exact")
            feats = []
            for c in range(H.shape[1]):
                e = [float((p**2).sum()) for p in hodge(H[:, c])]
                total = sum(e)
                feats += [v / total if total > 0 else 0.0 for v in e]
            rows.append(feats)
    return np.array(rows)


def test_part_energies_equal_a_per_sample_loop():
    samples = many_complexes(7, seed=3, cells=True)
    torch.manual_seed(0)
    encoder = scnn_encoder(4, 2)
    got = part_energy_features(encoder, samples, batch_size=3)  # batches of 3, 3, 1
    assert got.shape == (7, 3 * 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, _naive(encoder, samples), rtol=1e-5, atol=1e-6)
    # each channel's three fractions add up to one
    np.testing.assert_allclose(got.reshape(7, 4, 3).sum(-1), 1.0, rtol=1e-5)
    # the harmonic fractions are not all zero: the readout sees the holes
    assert got.reshape(7, 4, 3)[..., 2].max() > 1e-3


def test_part_energies_need_samples_with_their_own_complexes():
    from torch_geometric.data import Data

    encoder = scnn_encoder(4, 1)
    with pytest.raises(ValueError, match="complexes of their own.*got Data"):
        part_energy_features(encoder, [Data(x_1=torch.ones(5, 1))])
    with pytest.raises(ValueError, match="got no sample"):
        part_energy_features(encoder, [])


def test_pretrain_encoder_trains_the_given_module_in_place_and_reproducibly():
    """``encoder=`` trains that module in place (every weight moves); two copies of one
    module, trained with the same seed, end bit-identical."""
    import copy

    from experiments.studies.reuse import pretrain_encoder

    ds = _Set(many_complexes(6, seed=4))
    kw = dict(hidden=4, epochs=1, batch_size=3, seed=7)
    torch.manual_seed(0)
    given = scnn_encoder(4, 1)
    twin, before = copy.deepcopy(given), copy.deepcopy(given.state_dict())
    assert pretrain_encoder(ds, "SCL", encoder=given, **kw) is given
    pretrain_encoder(ds, "SCL", encoder=twin, **kw)
    for k, v in given.state_dict().items():
        assert torch.equal(v, twin.state_dict()[k])
        assert v.numel() == 0 or not torch.equal(v, before[k])  # empty buffers stay


def test_topomodelx_encoder_row_pretrains_and_reads_out_part_energies():
    """TopoModelX's SCNN through the adapter: pre-trained by ``pretrain_encoder`` (its
    weights move), its part energies equal the per-sample loop."""
    pytest.importorskip("topomodelx")
    from experiments.studies.reuse import pretrain_encoder, topomodelx_encoder

    samples = many_complexes(5, seed=5)
    torch.manual_seed(0)
    encoder = topomodelx_encoder(4, 2)
    before = [p.detach().clone() for p in encoder.parameters()]
    out = pretrain_encoder(_Set(samples), "SSCL_Spec", epochs=1, batch_size=5, hidden=4,
                           encoder=encoder)  # fmt: skip
    assert out is encoder
    assert all(not torch.equal(a, b) for a, b in zip(before, encoder.parameters(), strict=True))
    got = part_energy_features(encoder, samples, batch_size=2)
    np.testing.assert_allclose(got, _naive(encoder, samples), rtol=1e-4, atol=1e-6)
