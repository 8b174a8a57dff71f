"""The transforms on samples with complexes of their own: no complex bound, every sample's
Hodge parts and drop probabilities those of its own complex (equal to per-sample runs), a
dataset fitted a chunk at a time, TopoBench's plain Data accepted, nothing rewritten."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data, InMemoryDataset
from torch_geometric.loader import DataLoader

from topo_contrastive import (
    ContrastiveViews,
    EdgeFlowMask,
    HodgeDecomposition,
    HodgeSpectralMask,
)
from topo_contrastive.data import ComplexData
from topo_contrastive.transforms import _common, optimize_drop_probabilities

from .._many_complexes import many_complexes


class _Memory(InMemoryDataset):
    def __init__(self, data_list, transform=None):
        super().__init__(None, transform=transform)
        self.data, self.slices = self.collate(data_list)


def _own(s: ComplexData):
    """Per-sample reference: parts and probabilities on the sample's own complex."""
    hodge = HodgeDecomposition(s.complex())
    x = s.x_1.view(-1)
    parts = torch.stack(list(hodge(x.double())), dim=-1).float()
    p = optimize_drop_probabilities(x.view(1, -1), hodge, 0.3)[0].view(-1, 1)
    return parts, p


@pytest.mark.parametrize("chunk", [10**6, 40])  # one chunk, or a chunk of about two samples
def test_fit_on_a_list_equals_per_sample_runs(monkeypatch, chunk):
    monkeypatch.setattr(_common, "CHUNK_EDGES", chunk)
    samples = many_complexes(8, seed=3, cells=True)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=0))
    fitted = views.fit(samples)
    assert len(fitted) == 8 and all(isinstance(s, ComplexData) for s in fitted)
    for s, f in zip(samples, fitted, strict=True):
        assert "hodge_parts" not in s and "drop_prob" not in s  # inputs untouched
        parts, p = _own(s)
        torch.testing.assert_close(f.hodge_parts, parts, rtol=0, atol=1e-6)
        torch.testing.assert_close(f.drop_prob, p, rtol=0, atol=1e-6)
        assert f.num_nodes == s.num_nodes  # never rewritten


def test_fit_on_an_in_memory_dataset_and_a_dataloader_pipeline():
    samples = many_complexes(6, seed=4)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=1))
    ds = views.fit(_Memory(samples, transform=views))
    batch = next(iter(DataLoader(ds, batch_size=6)))
    assert batch.x_1_view1.shape == batch.x_1.shape and batch.hodge_parts.shape[1] == 3
    for i, s in enumerate(samples):
        parts, p = _own(s)
        got = batch.get_example(i)
        torch.testing.assert_close(got.hodge_parts, parts, rtol=0, atol=1e-6)
        torch.testing.assert_close(got.drop_prob, p, rtol=0, atol=1e-6)
        kept = (got.x_1_view1 == got.x_1) | (got.x_1_view1 == 0)
        assert bool(kept.all())
        assert bool((got.x_1_view1[p == 0] == got.x_1[p == 0]).all())  # p = 0: never dropped


def test_unfitted_transform_computes_the_same_per_access():
    samples = many_complexes(4, seed=6, cells=True)
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=2))
    with pytest.warns(UserWarning, match="fit"):
        out = views(Batch.from_data_list(samples))
    for i, s in enumerate(samples):
        parts, p = _own(s)
        torch.testing.assert_close(out.get_example(i).hodge_parts, parts, rtol=0, atol=1e-6)
        torch.testing.assert_close(out.get_example(i).drop_prob, p, rtol=0, atol=1e-6)


def test_topobench_plain_data_and_other_masks():
    s = many_complexes(1, seed=7, cells=True)[0]
    ops = s.complex()
    plain = Data(
        x_1=s.x_1,
        incidence_1=torch.from_numpy(ops.B1.toarray()).float().to_sparse(),
        incidence_2=torch.from_numpy(ops.B2.toarray()).float().to_sparse(),
    )
    out = HodgeSpectralMask(budget=0.3, fit_only=True)(plain)
    assert isinstance(out, ComplexData) and "drop_prob" not in plain
    torch.testing.assert_close(out.drop_prob, _own(s)[1], rtol=0, atol=1e-6)
    masked = HodgeSpectralMask(budget=0.3, generator=0)(plain)
    assert isinstance(masked, ComplexData) and masked.x_1.shape == s.x_1.shape
    uniform = ContrastiveViews(EdgeFlowMask(0.5, generator=0)).fit([plain])[0]
    torch.testing.assert_close(uniform.hodge_parts, _own(s)[0], rtol=0, atol=1e-6)


def test_bad_samples_are_named():
    samples = many_complexes(3, seed=8)
    short = samples[2].clone()
    short.x_1 = short.x_1[:-1]
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3))
    with pytest.raises(ValueError, match="sample 2: .* rows but the sample's complex has N1"):
        views.fit([samples[0], samples[1], short])
    shared = ComplexData.on_shared_complex(samples[0].complex(), x_1=samples[0].x_1)
    with pytest.raises(ValueError, match="sample 1 carries no complex of its own"):
        views.fit([samples[0], shared])
    with pytest.raises(ValueError, match="sample 0 has no attribute 'x_1'"):
        views.fit([ComplexData.from_complex(samples[0].complex())])


def test_views_fit_decomposes_each_chunk_once(monkeypatch):
    """The drop probabilities and the Hodge parts of a chunk share its decomposition."""
    monkeypatch.setattr(_common, "CHUNK_EDGES", 10**6)
    made = []
    real = _common.HodgeDecomposition

    def counting(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_common, "HodgeDecomposition", counting)
    ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=0)).fit(many_complexes(5, seed=2))
    assert len(made) == 1
