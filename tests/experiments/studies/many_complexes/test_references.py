"""The complex-agnostic reference features against a per-sample loop from the formula."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.many_complexes import REFERENCES, PooledSamples, reference_features
from tests._many_complexes import many_complexes
from topo_contrastive.hodge import HodgeDecomposition


def _samples() -> list:
    """Seven walks on complexes of their own, with flows of random sizes and signs on their
    support, and one all-zero flow."""
    samples = many_complexes(7, seed=5, cells=True)
    rng = np.random.default_rng(0)
    for d in samples:
        scale = torch.from_numpy(rng.uniform(-3.0, 3.0, size=d.x_1.shape)).float()
        d.x_1 = d.x_1 * scale
    samples[4].x_1 = torch.zeros_like(samples[4].x_1)
    return samples


def _naive(samples) -> np.ndarray:
    """One sample at a time: f_k = ||P_k x||^2 / ||x||^2 on its own complex, the length
    (edges with x_e != 0) and the total |x|; then the products of every pair, i <= j."""
    rows = []
    for d in samples:
        x = d.x_1[:, 0].double()
        parts = HodgeDecomposition(d.complex(), backend="exact")(x)
        energy = [float((p**2).sum()) for p in parts]
        total_energy = float((x**2).sum())
        frac = [e / total_energy if total_energy > 0 else 0.0 for e in energy]
        v = frac + [float((x != 0).sum()), float(x.abs().sum())]
        products = [v[i] * v[j] for i in range(5) for j in range(i, 5)]
        rows.append(v + products)
    return np.array(rows)


def test_reference_features_equal_a_per_sample_loop():
    samples = _samples()
    got = reference_features(PooledSamples(samples))
    assert list(got) == list(REFERENCES)
    naive = _naive(samples)
    shapes = {"energy fractions": 3, "length, total flow": 2, "fractions + length": 5,
              "fractions + length, products": 20}  # fmt: skip
    for name, width in shapes.items():
        assert got[name].shape == (7, width) and got[name].dtype == np.float64, name
    # the parts come from the float32 flows: float32 round-off in the fractions
    np.testing.assert_allclose(got["fractions + length, products"], naive, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got["energy fractions"], naive[:, :3], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got["length, total flow"], naive[:, 3:5], rtol=1e-6)
    np.testing.assert_allclose(got["fractions + length"], naive[:, :5], rtol=1e-6, atol=1e-7)
    # the all-zero flow: no fractions, no length, no flow
    np.testing.assert_array_equal(got["fractions + length"][4], 0.0)
    # the others' fractions add up to one, and some harmonic share is there (the holes)
    others = np.delete(got["energy fractions"], 4, axis=0)
    np.testing.assert_allclose(others.sum(1), 1.0, rtol=1e-6)
    assert others[:, 2].max() > 1e-3


def test_reference_features_do_not_modify_the_dataset():
    ds = PooledSamples(_samples())
    before = ds._data.x_1.clone()
    reference_features(ds)
    assert torch.equal(ds._data.x_1, before) and ds.transform is None


def test_reference_features_need_samples_with_their_own_complexes():
    from torch_geometric.data import Data

    with pytest.raises(ValueError, match="complexes of their own.*got Data"):
        reference_features([Data(x_1=torch.ones(5, 1))])
    with pytest.raises(ValueError, match="got no sample"):
        reference_features([])
