"""The many-complex encoders' part-energy readout against a per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests._many_complexes import many_complexes
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.studies.reuse import part_energy_features, scnn_encoder


def _naive(encoder, samples) -> np.ndarray:
    """One sample at a time: its own complex's decomposition of every channel."""
    rows = []
    with torch.no_grad():
        for d in samples:
            ops = d.complex()
            H = encoder.edge_embeddings(d.x_1, *ops.laplacians())[0].double()  # [N1, C]
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
