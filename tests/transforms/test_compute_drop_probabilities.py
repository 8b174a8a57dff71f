import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from topo_contrastive import HodgeDecomposition
from topo_contrastive.datasets import SyntheticTrajectories, generate_trajectory_complex
from topo_contrastive.transforms import (
    ComputeDropProbabilities,
    HodgeSpectralMask,
    optimize_drop_probabilities,
)

from .conftest import random_flows


def test_pre_transform_stores_probabilities_in_the_dataset(tmp_path, trajectories):
    ds, _ = trajectories
    # the dataset's complex is the first thing drawn from default_rng(seed)
    ops, _ = generate_trajectory_complex(150, np.random.default_rng(0))
    hodge = HodgeDecomposition(ops, backend="exact")
    pre = ComputeDropProbabilities(0.3, hodge=hodge)
    with_probs = SyntheticTrajectories(
        str(tmp_path),
        num_points=150,
        num_train=20,
        num_val=10,
        num_test=10,
        seed=0,
        pre_transform=pre,
        log=False,
    )
    assert torch.equal(with_probs._data.x_1, ds._data.x_1)
    want = optimize_drop_probabilities(ds._data.x_1.view(len(ds), -1), hodge, 0.3)
    assert torch.allclose(with_probs[7].drop_prob.view(-1), want[7], atol=1e-6)
    # fitting the whole dataset at once gives the same probabilities
    fitted = pre.fit(ds.copy())
    assert torch.allclose(fitted._data.drop_prob, with_probs._data.drop_prob, atol=1e-6)


def test_transform_on_batch_is_batched_and_input_untouched(small_hodge):
    n1 = small_hodge.complex.num_edges
    x = random_flows(n1, 3, seed=0)
    batch = Batch.from_data_list([Data(x_1=x[i].view(-1, 1)) for i in range(3)])
    out = ComputeDropProbabilities(0.4, hodge=small_hodge)(batch)
    assert "drop_prob" not in batch
    want = optimize_drop_probabilities(x, small_hodge, 0.4)
    assert torch.allclose(out.drop_prob.view(3, n1), want)
    assert out.drop_prob.dtype == torch.float64
    assert torch.equal(out.x_1, batch.x_1)


def test_fit_errors(small_hodge, trajectories):
    ds, _ = trajectories
    pre = ComputeDropProbabilities(0.3, hodge=small_hodge)
    with pytest.raises(ValueError, match="not the one ComputeDropProbabilities was built for"):
        pre.fit(ds.copy())  # flows of another complex
    with pytest.raises(ValueError, match="rows"):
        pre.fit([Data(x_1=d.x_1) for d in ds[:2]])  # no `complex` to compare: the rows
    with pytest.raises(ValueError, match="no attribute"):
        ComputeDropProbabilities(0.3, hodge=trajectories[1], attr="x_2").fit(ds.copy())
    with pytest.raises(ValueError, match="expected N1"):
        pre.fit([Data(x_1=torch.ones(3, 1))])


def test_overwrites_existing_probabilities(small_hodge):
    n1 = small_hodge.complex.num_edges
    data = Data(x_1=torch.zeros(n1, 1), drop_prob=torch.ones(n1, 1))
    out = ComputeDropProbabilities(0.3, hodge=small_hodge)(data)
    assert bool((out.drop_prob == 0).all()) and bool((data.drop_prob == 1).all())


def test_complex_bound_by_fit_or_given_as_operators(trajectories):
    ds, hodge = trajectories
    unbound = ComputeDropProbabilities(budget=0.3)
    with pytest.raises(TypeError, match="no complex yet"):
        unbound(ds[0])
    fitted = unbound.fit(ds.copy())  # binds ds.complex: the dataset is built only once
    assert unbound.hodge.complex.fingerprint() == ds.complex.fingerprint()
    from_ops = ComputeDropProbabilities(0.3, hodge=ds.complex).fit([Data(x_1=ds[5].x_1)])
    assert torch.allclose(fitted[5].drop_prob, from_ops[0].drop_prob, atol=1e-6)
    with pytest.raises(TypeError, match="has no complex"):
        ComputeDropProbabilities(budget=0.3).fit([ds[0]])


def test_bad_settings(small_hodge):
    with pytest.raises(TypeError, match="HodgeDecomposition, a ComplexOperators or None"):
        ComputeDropProbabilities(0.3, hodge=small_hodge.complex.B1)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'budget'"):
        ComputeDropProbabilities(hodge=small_hodge)
    with pytest.raises(ValueError, match="budget"):
        ComputeDropProbabilities(2.0, hodge=small_hodge)
    with pytest.raises(TypeError, match="unknown optimiser"):
        ComputeDropProbabilities(0.3, hodge=small_hodge, steps=3)
    with pytest.raises(TypeError, match="prob_attr"):
        ComputeDropProbabilities(0.3, hodge=small_hodge, prob_attr=3)


@pytest.mark.parametrize("cls", [ComputeDropProbabilities, HodgeSpectralMask])
def test_budget_comes_first(small_hodge, cls):
    """The old order (hodge first) is refused with a message naming the new one."""
    name = cls.__name__
    for first in (small_hodge, small_hodge.complex):
        with pytest.raises(TypeError) as info:
            cls(first, 0.3)
        message = str(info.value)
        assert "`budget` must be a float in [0, 1]" in message
        assert f"got {type(first).__name__}" in message
        assert f"budget comes first: {name}(budget, hodge=...)" in message
    with pytest.raises(TypeError, match="got NoneType"):
        cls(None, hodge=small_hodge)
    new = cls(0.3, hodge=small_hodge)
    assert new.budget == 0.3 and new.hodge is small_hodge
    assert cls(budget=0.3, hodge=small_hodge).budget == 0.3
