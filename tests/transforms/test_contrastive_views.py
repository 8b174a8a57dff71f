"""ContrastiveViews: both views and the Hodge parts of a sample from one PyG dataset transform."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data, InMemoryDataset
from torch_geometric.loader import DataLoader

from topo_contrastive import HodgeDecomposition
from topo_contrastive.data import ComplexData
from topo_contrastive.transforms import (
    ContrastiveViews,
    EdgeFlowMask,
    HodgeSpectralMask,
    hodge_spectral_mask,
    optimize_drop_probabilities,
)

from .conftest import random_complex, random_flows


def _fitted(trajectories, mask):
    ds, _ = trajectories
    ds = ds.copy()
    views = ContrastiveViews(mask)
    ds.transform = views
    return views.fit(ds), views


def test_sample_holds_original_two_views_parts_and_num_nodes(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 1, density=0.8, seed=1)[0].view(n1, 1)
    data = Data(x_1=x.clone(), y=torch.tensor([1]))
    views = ContrastiveViews(EdgeFlowMask(0.5, generator=0), hodge=small_hodge)
    with pytest.warns(UserWarning, match="fit"):  # unfitted: parts computed per access
        out = views(data)
    assert set(out.keys()) == {
        "x_1", "y", "x_1_view1", "x_1_view2", "hodge_parts", "num_nodes", "cell_counts",
        "shared_complex",
    }
    assert set(data.keys()) == {"x_1", "y"} and torch.equal(data.x_1, x)  # input untouched
    ops = small_hodge.complex
    # a sample on the shared complex: its sizes, PyG's node count N0 (not rewritten to N1)
    assert isinstance(out, ComplexData) and out.is_shared
    assert out.cell_counts.tolist() == [[ops.num_nodes, n1, ops.num_faces]]
    assert torch.equal(out.x_1, x) and out.num_nodes == ops.num_nodes
    assert out.batch_1.tolist() == [0] * n1
    want = small_hodge(x)  # parts in the [N1, 1] layout
    torch.testing.assert_close(out.hodge_parts, torch.cat(list(want), dim=1), rtol=0, atol=0)
    for view in (out.x_1_view1, out.x_1_view2):
        assert view.shape == x.shape and view.dtype == x.dtype
        assert bool(((view == x) | (view == 0)).all())  # every edge kept or dropped
    assert not torch.equal(out.x_1_view1, out.x_1_view2)  # independent draws


def test_drop_frequencies_match_the_stored_probabilities(small_hodge):
    """Monte-Carlo: over many accesses an edge is dropped with its drop probability."""
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 1, density=1.0, seed=2)[0].view(n1, 1)
    mask = HodgeSpectralMask(0.4, hodge=small_hodge, generator=3)
    (data,) = ContrastiveViews(mask).fit([Data(x_1=x)])
    p = optimize_drop_probabilities(x.view(1, n1), small_hodge, 0.4)[0]
    torch.testing.assert_close(data.drop_prob.view(-1), p)
    views = ContrastiveViews(mask)
    draws = 2000
    dropped = torch.zeros(n1, dtype=torch.float64)
    for _ in range(draws // 2):
        out = views(data)
        dropped += (out.x_1_view1.view(-1) == 0).double() + (out.x_1_view2.view(-1) == 0).double()
    freq = dropped / draws
    assert float((freq - p).abs().max()) < 4 * 0.5 / draws**0.5  # 4 sigma of the worst case


def test_fit_binds_the_complex_and_stores_everything_once(trajectories, monkeypatch):
    ds, hodge = trajectories
    mask = HodgeSpectralMask(budget=0.3, generator=0)  # no complex given
    ds2, views = _fitted(trajectories, mask)
    assert views.hodge is mask.hodge  # one decomposition shared by the views and the mask
    assert views.hodge.complex.fingerprint() == ds.complex.fingerprint()
    n1 = ds.complex.num_edges
    flows = ds._data.x_1.view(len(ds), n1)
    parts = hodge(flows.double())
    stored = ds2._data.hodge_parts.view(len(ds), n1, 3)
    for k in range(3):
        torch.testing.assert_close(stored[:, :, k].double(), parts[k], atol=1e-6, rtol=0)
    want = optimize_drop_probabilities(flows, views.hodge, 0.3)
    torch.testing.assert_close(ds2._data.drop_prob.view(len(ds), n1), want, atol=1e-6, rtol=0)
    # after fit, an epoch only draws masks: neither the decomposition nor the optimiser runs
    calls = []
    monkeypatch.setattr(HodgeDecomposition, "decompose", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(hodge_spectral_mask, "optimize", lambda *a, **k: calls.append(1))
    for batch in DataLoader(ds2, batch_size=16):
        assert batch.x_1_view1.shape == batch.x_1.shape
    assert calls == []


def test_dataloader_batches_carry_the_batch_vector_and_split_back(trajectories):
    ds, _ = trajectories
    ds2, _ = _fitted(trajectories, EdgeFlowMask(0.3, generator=0))
    n1 = ds.complex.num_edges
    batch = next(iter(DataLoader(ds2, batch_size=5)))  # no follow_batch
    assert torch.equal(batch.batch_1, torch.arange(5).repeat_interleave(n1))
    n0 = ds.complex.num_nodes  # PyG's node batch vector counts the nodes, not the edges
    assert batch.ptr.tolist() == [i * n0 for i in range(6)] and batch.num_graphs == 5
    assert batch.hodge_parts.shape == (5 * n1, 3)
    for i, sample in enumerate(batch.to_data_list()):
        assert torch.equal(sample.x_1, ds._data.x_1[i * n1 : (i + 1) * n1])
        assert sample.hodge_parts.shape == (n1, 3) and sample.x_1_view2.shape == (n1, 1)
    # the parts of the batch are those of the batched flows (PyG layout, batch vector)
    parts = ds2.transform.hodge(batch.x_1, batch=batch.batch_1)
    torch.testing.assert_close(batch.hodge_parts, torch.cat(list(parts), 1), atol=1e-6, rtol=0)


def test_draw_gives_the_views_of_forward_without_storing_them(trajectories):
    # draw() is forward()'s pair of masks from the same generator state, not stored on
    # the batch (nor a batch vector of its rows); probabilities fitted once are reused
    ds, hodge = trajectories
    fitted, _ = _fitted(trajectories, HodgeSpectralMask(0.3, hodge=hodge, generator=0))
    fitted.transform = None
    collated = next(iter(DataLoader(fitted, batch_size=6)))
    a = ContrastiveViews(HodgeSpectralMask(0.3, hodge=hodge, generator=4))
    b = ContrastiveViews(HodgeSpectralMask(0.3, hodge=hodge, generator=4))
    view1, view2 = a.draw(copy.copy(collated))
    out = b(copy.copy(collated))
    assert torch.equal(view1, out.x_1_view1) and torch.equal(view2, out.x_1_view2)
    assert not torch.equal(view1, view2)
    kept = copy.copy(collated)
    a.draw(kept)
    assert set(kept.keys()) == set(collated.keys())  # nothing stored: no views, no batch vector
    assert "x_1_view1" not in kept.keys() and torch.equal(kept.batch, collated.batch)  # noqa: SIM118


def test_a_batch_in_the_main_process_gets_the_same_attributes(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 3, seed=4)
    batch = Batch.from_data_list([Data(x_1=x[i].view(-1, 1).float()) for i in range(3)])
    views = ContrastiveViews(HodgeSpectralMask(0.3, hodge=small_hodge, generator=1))
    with pytest.warns(UserWarning, match="fit"):
        out = views(batch)
    assert "hodge_parts" not in batch and batch.get("batch") is None  # input untouched
    assert torch.equal(out.batch, torch.arange(3).repeat_interleave(n1))
    assert out.hodge_parts.shape == (3 * n1, 3) and out.drop_prob.shape == (3 * n1, 1)
    samples = out.to_data_list()
    assert len(samples) == 3 and samples[2].x_1_view1.shape == (n1, 1)
    parts = small_hodge(x.float())
    torch.testing.assert_close(samples[2].hodge_parts[:, 1], parts.curl[2], atol=1e-6, rtol=0)


class _Transformed(torch.utils.data.Dataset):
    """A list of ``Data`` with a PyG-style ``transform`` applied on access."""

    def __init__(self, data, transform):
        self.data, self.transform = data, transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.transform(self.data[i])


def test_worker_masks_differ_across_workers_and_reproduce(small_hodge):
    """num_workers=2: every worker draws its own masks (the old behaviour gave the same
    masks in both), reproducibly under torch.manual_seed, and new masks each epoch."""
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 1, density=1.0, seed=6)[0].view(n1, 1).float()
    samples = [Data(x_1=x.clone()) for _ in range(4)]  # identical flows
    for mask in (
        EdgeFlowMask(0.5, generator=0),
        HodgeSpectralMask(0.5, hodge=small_hodge, generator=0),
    ):
        views = ContrastiveViews(mask, hodge=small_hodge)
        data = views.fit(samples)
        for d in data:  # optimised probabilities are often 0/1 (a vertex): draws would agree
            d.drop_prob = torch.full((n1, 1), 0.5)

        def epoch_masks(data=data, views=views):
            # a dataset with `transform=views`; batches of one alternate between the workers
            loader = DataLoader(_Transformed(data, views), batch_size=1, num_workers=2)
            return [b.x_1_view1.view(-1).clone() for b in loader]

        torch.manual_seed(123)
        first, second = epoch_masks(), epoch_masks()
        torch.manual_seed(123)
        again = epoch_masks()
        assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))  # reproducible
        assert not torch.equal(first[0], first[1])  # worker 0 vs worker 1, same flow
        assert not torch.equal(first[0], second[0])  # a new epoch draws new masks


def test_binding_errors_and_settings(small_hodge, trajectories):
    ds, _ = trajectories
    unbound = ContrastiveViews(EdgeFlowMask(0.2))
    with pytest.raises(TypeError, match="no complex yet"):
        unbound(Data(x_1=torch.ones(small_hodge.complex.num_edges, 1)))
    with pytest.raises(TypeError, match="has no complex"):
        unbound.fit([Data(x_1=torch.ones(3, 1))])  # a list of Data has no `complex`
    other = ContrastiveViews(EdgeFlowMask(0.2), hodge=random_complex(10, seed=5))
    with pytest.raises(ValueError, match="ContrastiveViews is bound to the complex with"):
        other.fit(ds.copy())
    bound = ContrastiveViews(EdgeFlowMask(0.2), hodge=small_hodge)
    with pytest.raises(ValueError, match="rows, but a single Data holds one flow of N1"):
        bound(Data(x_1=torch.ones(small_hodge.complex.num_edges + 1, 1)))
    with pytest.raises(ValueError, match="single-channel"):
        bound(Data(x_1=torch.ones(small_hodge.complex.num_edges, 2)))
    two = ContrastiveViews(EdgeFlowMask(0.2), hodge=small_hodge, hodge_parts=False)
    out = two(Data(x_1=torch.ones(small_hodge.complex.num_edges, 2)))
    assert "hodge_parts" not in out and out.x_1_view1.shape == (small_hodge.complex.num_edges, 2)
    with pytest.raises(TypeError, match="callable"):
        ContrastiveViews("spectral")
    with pytest.raises(ValueError, match="same `attr`"):
        ContrastiveViews(EdgeFlowMask(0.2, attr="flow"))
    with pytest.raises(TypeError, match="hodge_parts"):
        ContrastiveViews(EdgeFlowMask(0.2), hodge_parts=1)
    with pytest.raises(TypeError, match="`hodge` must be"):
        ContrastiveViews(EdgeFlowMask(0.2), hodge=small_hodge.complex.B1)
    assert repr(two) == (
        "ContrastiveViews(mask=EdgeFlowMask(p=0.2, attr='x_1'), attr='x_1', hodge_parts=False)"
    )


class _Saved(InMemoryDataset):
    """Samples saved by ``InMemoryDataset.save`` and read back, as a user's dataset."""

    def __init__(self, path: str, transform=None) -> None:
        super().__init__(None, transform=transform, log=False)
        self.load(path)


def test_hodge_given_to_the_views_reaches_an_unbound_spectral_mask(small_hodge, tmp_path):
    """Fitted on a shared complex, saved, reloaded; then the views get ``hodge=`` and the
    spectral mask none: the mask uses the views' complex and the stored probabilities."""
    ops = small_hodge.complex
    samples = [Data(x_1=x.view(-1, 1).float()) for x in random_flows(ops.num_edges, 3, seed=4)]
    fitted = ContrastiveViews(HodgeSpectralMask(0.3, hodge=ops)).fit(samples)
    InMemoryDataset.save(fitted, str(tmp_path / "samples.pt"))
    mask = HodgeSpectralMask(0.3)
    views = ContrastiveViews(mask, hodge=ops)
    assert mask.hodge is views.hodge  # one decomposition shared by both
    ds = _Saved(str(tmp_path / "samples.pt"), transform=views)
    for i in range(3):
        out = ds[i]
        assert torch.equal(out.drop_prob, fitted[i].drop_prob)
        assert torch.equal(out.hodge_parts, fitted[i].hodge_parts)
        assert bool(((out.x_1_view1 == out.x_1) | (out.x_1_view1 == 0)).all())
    with pytest.raises(ValueError, match="is bound to the complex with fingerprint"):
        ContrastiveViews(HodgeSpectralMask(0.3, hodge=random_complex(10, seed=5)), hodge=ops)


def test_flows_changed_after_fit_are_refused_with_the_order_of_transforms(small_hodge):
    """``Compose([scale, views])`` after ``views.fit``: the stored parts belong to the
    unscaled flows; the views refuse them and say where the scaling belongs."""
    from torch_geometric.transforms import Compose

    ops = small_hodge.complex
    samples = [Data(x_1=x.view(-1, 1).float()) for x in random_flows(ops.num_edges, 4, seed=6)]
    views = ContrastiveViews(EdgeFlowMask(0.2, generator=0), hodge=small_hodge)
    fitted = views.fit(samples)

    def scale_flows(data):
        data = copy.copy(data)
        data.x_1 = 2.0 * data.x_1
        return data

    with pytest.raises(ValueError, match=r"do not sum to `data.x_1`.*pre_transform"):
        Compose([scale_flows, views])(fitted[0])
    with pytest.raises(ValueError, match="do not sum"):  # a batch of them too
        views(Batch.from_data_list([scale_flows(d) for d in fitted]))
    # scaled before fitting: the parts are those of the scaled flows, and the views accept them
    refit = views.fit([scale_flows(d) for d in samples])
    out = views(refit[0])
    torch.testing.assert_close(out.hodge_parts.sum(dim=1, keepdim=True), 2.0 * samples[0].x_1)
    assert views(Batch.from_data_list(fitted)).hodge_parts.shape == (4 * ops.num_edges, 3)
    with pytest.raises(ValueError, match=r"`data.hodge_parts` must have shape \[\d+, 3\]"):
        views(Data(x_1=samples[0].x_1, hodge_parts=torch.zeros(ops.num_edges, 2)))



#: A session on the dataset at ROOT: its items and a DataLoader batch (saved to OUT if given)
_SESSION = """
import numpy as np, torch
from torch_geometric.loader import DataLoader
from topo_contrastive.datasets import SyntheticTrajectories, generate_trajectory_complex
from topo_contrastive.transforms import ContrastiveViews, HodgeSpectralMask
ops, _ = generate_trajectory_complex(150, np.random.default_rng(0))
pre = ContrastiveViews(HodgeSpectralMask(0.3, hodge=ops), fit_only=True)
views = ContrastiveViews(HodgeSpectralMask(0.3, generator=0))  # no complex, no fit
ds = SyntheticTrajectories(ROOT, num_points=150, num_train=4, num_val=2, num_test=2,
                           seed=0, pre_transform=pre, transform=views, log=False)
keys = ("x_1", "x_1_view1", "x_1_view2", "hodge_parts", "drop_prob")
items = [[ds[i][k] for k in keys] for i in range(len(ds))]
batch = next(iter(DataLoader(ds, batch_size=8)))
result = {"items": items, "batch": [batch.x_1_view1, batch.batch_1, batch.ptr]}
if OUT:
    torch.save(result, OUT)
"""


def test_a_dataset_reopened_from_its_root_needs_no_second_fit(tmp_path):
    """The fit processed into the dataset's file (``fit_only`` views as its pre_transform):
    reopened in a new process with an unbound spectral mask in its transform, the dataset
    gives the views and Hodge parts of the first session, without fit() or a complex."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from topo_contrastive.datasets import generate_trajectory_complex

    repo = str(Path(__file__).resolve().parents[2])
    root, saved = str(tmp_path / "ds"), tmp_path / "second.pt"
    scope = {"ROOT": root, "OUT": None}
    exec(_SESSION, scope)  # the first session, here: builds the processed file
    first = scope["result"]
    stamp = [f.stat().st_mtime_ns for f in sorted(Path(root, "processed").glob("*.pt"))]
    script = f"ROOT, OUT = {root!r}, {str(saved)!r}\n{_SESSION}"  # the second: a new process
    subprocess.run([sys.executable, "-c", script], check=True, cwd=repo,
                   env={**os.environ, "PYTHONPATH": repo})  # fmt: skip
    assert stamp == [f.stat().st_mtime_ns for f in sorted(Path(root, "processed").glob("*.pt"))]
    second = torch.load(saved)
    for a, b in zip([*first["items"], first["batch"]], [*second["items"], second["batch"]],
                    strict=True):  # fmt: skip
        assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    ops, _ = generate_trajectory_complex(150, np.random.default_rng(0))
    hodge = HodgeDecomposition(ops)
    flows = torch.stack([item[0].view(-1) for item in first["items"]])  # [8, N1]
    want = optimize_drop_probabilities(flows, hodge, 0.3)
    for i, (x, view1, view2, parts, p) in enumerate(first["items"]):
        torch.testing.assert_close(p.view(-1), want[i], rtol=0, atol=1e-6)
        torch.testing.assert_close(parts, torch.stack(list(hodge(x.view(-1))), -1),
                                   rtol=0, atol=1e-5)  # fmt: skip
        for view in (view1, view2):
            assert bool(((view == x) | (view == 0)).all())
            assert bool((view[p == 0] == x[p == 0]).all())  # p = 0: never dropped
    assert any(not torch.equal(item[1], item[0]) for item in first["items"])  # masks drawn
