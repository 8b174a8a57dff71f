import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from topo_contrastive import HodgeDecomposition
from topo_contrastive.datasets import SyntheticTrajectories, generate_trajectory_complex
from topo_contrastive.transforms import (
    ContrastiveViews,
    EdgeFlowMask,
    HodgeSpectralMask,
    hodge_spectral_mask,
    optimize_drop_probabilities,
)

from .conftest import random_flows


def flows_data(hodge, num=4, seed=0):
    x = random_flows(hodge.complex.num_edges, num, density=0.5, seed=seed).float()
    return [Data(x_1=x[i].view(-1, 1), y=torch.tensor([i % 2])) for i in range(num)]


def perturb_all(hodge, **kwargs):
    # objective that spends the whole budget, so the masks are not trivial
    return HodgeSpectralMask(
        0.5, hodge=hodge, perturb=("gradient", "curl", "harmonic"), preserve=(), **kwargs
    )


def _never_optimise(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("stored probabilities must be used")

    monkeypatch.setattr(hodge_spectral_mask, "optimize", fail)


def test_uses_stored_probabilities_without_optimising(small_hodge, monkeypatch):
    n1 = small_hodge.complex.num_edges
    x = torch.ones(n1, 1)
    prob = torch.zeros(n1, 1)
    prob[: n1 // 2] = 1.0
    data = Data(x_1=x, drop_prob=prob)
    mask = HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)
    _never_optimise(monkeypatch)
    out = mask(data)
    assert bool((out.x_1[: n1 // 2] == 0).all()) and bool((out.x_1[n1 // 2 :] == 1).all())
    assert torch.equal(data.x_1, x)  # input untouched
    assert out.drop_prob is data.drop_prob


def test_computes_missing_probabilities(small_hodge):
    data = flows_data(small_hodge, 1)[0]
    mask = HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)
    out = mask(data)
    want = optimize_drop_probabilities(data.x_1.view(-1), small_hodge, 0.3)
    assert out.drop_prob.shape == (small_hodge.complex.num_edges, 1)
    assert out.drop_prob.dtype == data.x_1.dtype
    assert torch.allclose(out.drop_prob.view(-1), want)
    assert "drop_prob" not in data  # input untouched
    # dropped entries are those of the probabilities' support only
    dropped = (out.x_1 == 0) & (data.x_1 != 0)
    assert bool((out.drop_prob[dropped] > 0).all())


def test_batch_probabilities_equal_per_sample(small_hodge):
    data_list = flows_data(small_hodge, 5, seed=1)
    batch = Batch.from_data_list(data_list)
    mask = HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)
    out = mask(batch)
    per_sample = torch.cat([mask(d).drop_prob for d in data_list])
    assert torch.allclose(out.drop_prob, per_sample, atol=1e-6)
    # registered as a per-sample attribute of the batch
    parts = out.to_data_list()
    assert torch.allclose(
        parts[2].drop_prob, per_sample[2 * len(data_list[0].x_1) :][: len(data_list[0].x_1)]
    )
    assert "drop_prob" not in batch


def test_batch_sampling_matches_probabilities_in_distribution(small_hodge):
    data_list = flows_data(small_hodge, 4, seed=2)
    batch = perturb_all(small_hodge, fit_only=True)(Batch.from_data_list(data_list))
    mask = perturb_all(small_hodge, generator=5)
    draws = 4000
    dropped = torch.zeros_like(batch.x_1, dtype=torch.float64)
    for _ in range(draws):
        dropped += (mask(batch).x_1 == 0).double()
    support = batch.x_1 != 0
    freq = (dropped / draws)[support]
    p = batch.drop_prob[support].double()
    se = (p * (1 - p) / draws).sqrt()
    assert bool(((freq - p).abs() <= 4 * se + 1e-9).all())
    assert p.min() < 0.9 and p.max() > 0.1  # non-trivial probabilities were tested


def test_two_calls_give_independent_masks_and_seed_reproduces(small_hodge):
    n1 = small_hodge.complex.num_edges
    data = Data(x_1=torch.ones(n1, 1), drop_prob=torch.full((n1, 1), 0.5))
    mask = HodgeSpectralMask(0.3, hodge=small_hodge, generator=11)
    v1, v2 = mask(data), mask(data)
    assert not torch.equal(v1.x_1, v2.x_1)
    again = HodgeSpectralMask(0.3, hodge=small_hodge, generator=11)(data)
    assert torch.equal(again.x_1, v1.x_1)
    # same uniform draws as EdgeFlowMask with the same seed and p
    assert torch.equal(EdgeFlowMask(0.5, generator=11)(data).x_1, v1.x_1)


def test_channels_share_the_mask_with_stored_probabilities(small_hodge):
    n1 = small_hodge.complex.num_edges
    data = Data(x_1=torch.ones(n1, 3), drop_prob=torch.full((n1,), 0.5))
    out = HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)(data)
    dropped = out.x_1 == 0
    assert torch.equal(dropped.all(-1), dropped.any(-1))


def test_all_zero_flow_gets_zero_probabilities(small_hodge):
    n1 = small_hodge.complex.num_edges
    data = Data(x_1=torch.zeros(n1, 1))
    out = HodgeSpectralMask(0.5, hodge=small_hodge, generator=0)(data)
    assert bool((out.drop_prob == 0).all()) and bool((out.x_1 == 0).all())


def test_fit_in_memory_dataset_and_loader(trajectories, monkeypatch):
    ds, hodge = trajectories
    ds = ds.copy()  # own storage: fit works in place
    mask = HodgeSpectralMask(0.3, hodge=hodge, generator=0)
    train = ds[ds.train_mask]
    returned = mask.fit(ds)
    assert returned is ds
    x = ds._data.x_1.view(len(ds), -1)
    want = optimize_drop_probabilities(x, hodge, 0.3)
    assert torch.allclose(ds[5].drop_prob.view(-1), want[5])
    # views made by indexing share the storage
    idx = int(torch.nonzero(ds.train_mask)[0])
    assert torch.allclose(train[0].drop_prob.view(-1), want[idx])
    fresh = trajectories[0].copy()  # a view fitted: every sample of the storage it shares
    HodgeSpectralMask(0.3, hodge=hodge).fit(fresh[fresh.train_mask])
    assert torch.equal(fresh._data.drop_prob, ds._data.drop_prob)
    assert fresh._data.drop_prob_settings.shape == (len(fresh), 1)
    batch = next(iter(DataLoader(ds, batch_size=8)))
    assert batch.drop_prob.shape == batch.x_1.shape

    _never_optimise(monkeypatch)  # the fitted probabilities are reused
    view1, view2 = mask(batch), mask(batch)
    assert view1.x_1.shape == batch.x_1.shape
    assert bool((view1.x_1[batch.drop_prob == 0] == batch.x_1[batch.drop_prob == 0]).all())
    assert bool((view2.x_1[batch.drop_prob == 1] == 0).all())


def test_fitted_probabilities_are_tagged_per_sample_and_refused_by_other_settings(
    trajectories, small_hodge
):
    # fit() stores one settings tag per sample (not per row); a mask of another budget
    # refuses the fitted samples, a list's copies and the DataLoader's batches alike
    ds, hodge = trajectories
    ds = HodgeSpectralMask(0.3, hodge=hodge, generator=0).fit(ds.copy())
    assert ds[4].drop_prob_settings.shape == (1, 1)
    batch = next(iter(DataLoader(ds, batch_size=8)))
    assert batch.drop_prob_settings.shape == (8, 1)
    other = HodgeSpectralMask(0.5, hodge=hodge, generator=0)
    for given in (ds[4], batch):
        with pytest.raises(ValueError, match="other settings than this mask"):
            other(given)
    same = HodgeSpectralMask(0.3, hodge=hodge, generator=0)
    assert same(batch).x_1.shape == batch.x_1.shape
    copies = HodgeSpectralMask(0.3, hodge=small_hodge).fit(flows_data(small_hodge, 3, seed=1))
    assert copies[2].drop_prob_settings.shape == (1, 1)
    with pytest.raises(ValueError, match="other settings than this mask"):
        HodgeSpectralMask(0.4, hodge=small_hodge)(copies[2])


def test_fit_list_of_data(small_hodge):
    data_list = flows_data(small_hodge, 3, seed=3)
    out = HodgeSpectralMask(0.3, hodge=small_hodge).fit(data_list)
    assert len(out) == 3 and all("drop_prob" not in d for d in data_list)
    want = optimize_drop_probabilities(
        torch.stack([d.x_1.view(-1) for d in data_list]), small_hodge, 0.3
    )
    for i, d in enumerate(out):
        assert torch.allclose(d.drop_prob.view(-1), want[i])
        assert d.x_1 is data_list[i].x_1
    assert HodgeSpectralMask(0.3, hodge=small_hodge).fit([]) == []


def test_settings_and_repr(small_hodge):
    mask = HodgeSpectralMask(0.2, hodge=small_hodge, alpha={"harmonic": 2.0}, num_steps=20)
    assert mask.budget == 0.2 and mask.perturb == ("gradient",)
    assert mask.preserve == ("curl", "harmonic") and mask.alpha["harmonic"] == 2.0
    assert mask.hodge is small_hodge and mask.attr == "x_1" and mask.prob_attr == "drop_prob"
    assert mask.optimizer_options == {"num_steps": 20} and not mask.fit_only
    assert repr(mask) == (
        "HodgeSpectralMask(budget=0.2, perturb=('gradient',), preserve=('curl', 'harmonic'), "
        "attr='x_1', prob_attr='drop_prob', alpha={'harmonic': 2.0}, num_steps=20)"
    )


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"budget": 1.2}, ValueError),
        ({"budget": -0.2}, ValueError),
        ({"perturb": ("grad",)}, ValueError),
        ({"alpha": {"curl": -0.5}}, ValueError),
        ({"generator": "x"}, TypeError),
        ({"num_step": 10}, TypeError),
        ({"lr": -1.0}, ValueError),
        ({"prob_attr": "x_1"}, ValueError),
    ],
)
def test_bad_settings(small_hodge, kwargs, err):
    args = {"budget": 0.3, **kwargs}
    with pytest.raises(err):
        HodgeSpectralMask(hodge=small_hodge, **args)


def test_bad_hodge():
    with pytest.raises(TypeError, match="HodgeDecomposition"):
        HodgeSpectralMask(0.3, hodge=object())


def test_fit_binds_the_datasets_complex(trajectories):
    """The mask can be made before the dataset: fit binds ds.complex (no second dataset)."""
    ds, hodge = trajectories
    mask = HodgeSpectralMask(budget=0.3, generator=0)
    with pytest.raises(TypeError, match="no complex yet"):
        mask(ds[0])
    ds2 = mask.fit(ds.copy())
    assert mask.hodge.complex.fingerprint() == ds.complex.fingerprint()
    want = optimize_drop_probabilities(ds[3].x_1.view(1, -1), hodge, 0.3)
    assert torch.allclose(ds2[3].drop_prob.view(-1), want[0], atol=1e-6)
    assert mask.bind(ds) is mask.hodge  # bound once; the same complex is accepted again


def test_bad_data(small_hodge):
    n1 = small_hodge.complex.num_edges
    mask = HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)
    with pytest.raises(ValueError, match=f"has {n1 + 1} rows.*one flow of N1 = {n1}"):
        mask(Data(x_1=torch.ones(n1 + 1, 1)))  # flow of the wrong length
    with pytest.raises(ValueError, match="single-channel"):
        mask(Data(x_1=torch.ones(n1, 2)))
    with pytest.raises(ValueError, match="NaN"):
        bad = torch.ones(n1, 1)
        bad[0] = math.nan
        mask(Data(x_1=bad))
    with pytest.raises(ValueError, match="x_1"):
        mask(Data(x=torch.ones(n1, 1)))
    with pytest.raises(ValueError, match="shape"):
        mask(Data(x_1=torch.ones(n1, 1), drop_prob=torch.ones(n1 - 1, 1)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mask(Data(x_1=torch.ones(n1, 1), drop_prob=torch.full((n1, 1), 1.5)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mask(Data(x_1=torch.ones(n1, 1), drop_prob=torch.full((n1, 1), math.nan)))
    with pytest.raises(TypeError, match="floating"):
        mask(Data(x_1=torch.ones(n1, 1), drop_prob=torch.ones(n1, 1, dtype=torch.long)))


@pytest.mark.parametrize("stored", [False, True])
def test_plain_data_holds_one_flow(small_hodge, stored):
    # [2 * N1, 1] on a plain Data is not read as two flows
    n1 = small_hodge.complex.num_edges
    two = torch.cat([d.x_1 for d in flows_data(small_hodge, 2, seed=4)])  # [2 * N1, 1]
    data = Data(x_1=two, drop_prob=torch.full_like(two, 0.5)) if stored else Data(x_1=two)
    match = f"has {2 * n1} rows, but a single Data holds one flow of N1 = {n1} rows"
    with pytest.raises(ValueError, match=match):
        HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)(data)
    with pytest.raises(ValueError, match=match):
        HodgeSpectralMask(0.3, hodge=small_hodge, fit_only=True)(Data(x_1=two))


def test_several_flows_on_a_data_with_a_batch_vector_or_in_a_batch(small_hodge):
    n1 = small_hodge.complex.num_edges
    data_list = flows_data(small_hodge, 3, seed=5)
    x = torch.cat([d.x_1 for d in data_list])  # [3 * N1, 1]
    batch_vec = torch.arange(3).repeat_interleave(n1)
    mask = HodgeSpectralMask(0.3, hodge=small_hodge, generator=0)
    out = mask(Data(x_1=x, batch=batch_vec))
    per_sample = torch.cat([mask(d).drop_prob for d in data_list])
    torch.testing.assert_close(out.drop_prob, per_sample, rtol=0, atol=1e-6)
    # a batch vector that does not number the rows in blocks of N1
    with pytest.raises(ValueError, match="blocks of N1"):
        mask(Data(x_1=x, batch=batch_vec.flip(0)))
    with pytest.raises(ValueError, match="blocks of N1"):
        mask(Data(x_1=x[:-1], batch=torch.zeros(3 * n1 - 1, dtype=torch.long)))
    with pytest.raises(ValueError, match=r"`data.batch` must be a vector"):
        mask(Data(x_1=x, batch=batch_vec[:-1]))
    # a Batch of 3 samples whose flows are not N1 rows each
    bad = Batch.from_data_list([Data(x_1=torch.ones(n1 + 1, 1)) for _ in range(3)])
    with pytest.raises(ValueError, match="num_graphs \\* N1"):
        mask(bad)


def test_complex_without_edges_gives_empty_views():
    from topo_contrastive import ComplexOperators, HodgeDecomposition

    hodge = HodgeDecomposition(ComplexOperators.from_simplices([], num_nodes=2))
    out = HodgeSpectralMask(0.3, hodge=hodge, generator=0)(Data(x_1=torch.zeros(0, 1)))
    assert out.x_1.shape == (0, 1) and out.drop_prob.shape == (0, 1)
    assert optimize_drop_probabilities(torch.zeros(2, 0), hodge, 0.3).shape == (2, 0)


def test_bind_binds_once_and_refuses_another_complex(small_hodge):
    from topo_contrastive import ComplexOperators

    mask = HodgeSpectralMask(budget=0.3)
    assert mask.hodge is None
    assert mask.bind(small_hodge) is small_hodge
    assert mask.hodge is small_hodge
    assert mask.bind(small_hodge.complex) is small_hodge  # the same complex: kept
    other = ComplexOperators.from_simplices([(0, 1), (0, 2), (1, 2)], [(0, 1, 2)])
    with pytest.raises(ValueError, match="bound to the complex with fingerprint"):
        mask.bind(other)
    with pytest.raises(TypeError, match="HodgeDecomposition or ComplexOperators"):
        mask.bind(None)


def test_views_bind_an_unbound_mask_to_their_complex(small_hodge):
    mask = HodgeSpectralMask(budget=0.3)
    views = ContrastiveViews(mask)

    class _Dataset(list):
        complex = small_hodge.complex

    views.bind(_Dataset())
    assert mask.hodge is views.hodge  # one decomposition shared by both


def test_fit_only_as_pre_transform_stores_the_probabilities(tmp_path, trajectories):
    """``fit_only=True`` as a dataset's pre_transform: each sample's probabilities (and
    their tag) are processed into the file, as the batched fit computes them."""
    ds, _ = trajectories
    # the dataset's complex is the first thing drawn from default_rng(seed)
    ops, _ = generate_trajectory_complex(150, np.random.default_rng(0))
    hodge = HodgeDecomposition(ops, backend="exact")
    pre = HodgeSpectralMask(0.3, hodge=hodge, fit_only=True)
    with_probs = SyntheticTrajectories(
        str(tmp_path), num_points=150, num_train=20, num_val=10, num_test=10, seed=0,
        pre_transform=pre, log=False,
    )  # fmt: skip
    assert torch.equal(with_probs._data.x_1, ds._data.x_1)  # the flows are not masked
    want = optimize_drop_probabilities(ds._data.x_1.view(len(ds), -1), hodge, 0.3)
    assert torch.allclose(with_probs[7].drop_prob.view(-1), want[7], atol=1e-6)
    fitted = pre.fit(ds.copy())  # the whole dataset at once: the same probabilities
    assert torch.allclose(fitted._data.drop_prob, with_probs._data.drop_prob, atol=1e-6)
    tag = with_probs[7].drop_prob_settings
    assert tag.shape == (ds.complex.num_edges, 1)
    assert bool((tag == fitted[7].drop_prob_settings).all())


def test_fit_only_on_a_batch_is_batched_and_overwrites(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 3, seed=0)
    batch = Batch.from_data_list([Data(x_1=x[i].view(-1, 1), drop_prob=torch.ones(n1, 1))
                                  for i in range(3)])  # fmt: skip
    out = HodgeSpectralMask(0.4, hodge=small_hodge, fit_only=True)(batch)
    assert bool((batch.drop_prob == 1).all())  # input untouched
    want = optimize_drop_probabilities(x, small_hodge, 0.4)
    assert torch.allclose(out.drop_prob.view(3, n1), want)
    assert out.drop_prob.dtype == torch.float64 and torch.equal(out.x_1, batch.x_1)


def test_fit_errors(small_hodge, trajectories):
    ds, hodge = trajectories
    mask = HodgeSpectralMask(0.3, hodge=small_hodge)
    with pytest.raises(ValueError, match="HodgeSpectralMask is bound to the complex with"):
        mask.fit(ds.copy())  # flows of another complex
    with pytest.raises(ValueError, match="rows"):
        mask.fit([Data(x_1=d.x_1) for d in ds[:2]])  # no `complex` to compare: the rows
    with pytest.raises(ValueError, match="no attribute"):
        HodgeSpectralMask(0.3, hodge=hodge, attr="x_2").fit(ds.copy())
    with pytest.raises(ValueError, match="expected N1"):
        mask.fit([Data(x_1=torch.ones(3, 1))])
    with pytest.raises(TypeError, match="has no complex"):
        HodgeSpectralMask(budget=0.3).fit([ds[0]])
    from_ops = HodgeSpectralMask(0.3, hodge=ds.complex).fit([Data(x_1=ds[5].x_1)])
    want = optimize_drop_probabilities(ds[5].x_1.view(1, -1), hodge, 0.3)
    assert torch.allclose(from_ops[0].drop_prob.view(-1), want[0], atol=1e-6)


def test_budget_comes_first(small_hodge):
    """The old order (hodge first) is refused with a message naming the new one."""
    for first in (small_hodge, small_hodge.complex):
        with pytest.raises(TypeError) as info:
            HodgeSpectralMask(first, 0.3)
        message = str(info.value)
        assert "`budget` must be a float in [0, 1]" in message
        assert f"got {type(first).__name__}" in message
        assert "budget comes first: HodgeSpectralMask(budget, hodge=...)" in message
    with pytest.raises(TypeError, match="got NoneType"):
        HodgeSpectralMask(None, hodge=small_hodge)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'budget'"):
        HodgeSpectralMask(hodge=small_hodge)
    with pytest.raises(TypeError, match="prob_attr"):
        HodgeSpectralMask(0.3, hodge=small_hodge, prob_attr=3)
    with pytest.raises(TypeError, match="fit_only"):
        HodgeSpectralMask(0.3, fit_only="yes")
    new = HodgeSpectralMask(0.3, hodge=small_hodge)
    assert new.budget == 0.3 and new.hodge is small_hodge
