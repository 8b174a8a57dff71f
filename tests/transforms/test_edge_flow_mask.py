import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from topo_contrastive.transforms import EdgeFlowMask


def make_data(n=1000, c=1, seed=0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, generator=gen).to(dtype)
    x[x.abs() < 1e-3] = 1.0  # all entries non-zero, so dropped == zeroed
    return Data(x_1=x, y=torch.tensor([1]))


@pytest.mark.parametrize("p", [0.1, 0.3, 0.7])
def test_drop_fraction_matches_p(p):
    n = 100_000
    data = make_data(n)
    out = EdgeFlowMask(p, generator=0)(data)
    frac = (out.x_1 == 0).double().mean().item()
    assert abs(frac - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_kept_entries_unchanged_and_dropped_are_zero():
    data = make_data(500)
    out = EdgeFlowMask(0.4, generator=1)(data)
    kept = out.x_1 != 0
    assert torch.equal(out.x_1[kept], data.x_1[kept])
    assert 0 < int(kept.sum()) < 500


def test_input_untouched_and_new_tensor():
    data = make_data(300)
    before = data.x_1.clone()
    out = EdgeFlowMask(0.5, generator=2)(data)
    assert torch.equal(data.x_1, before)
    assert out is not data
    assert out.x_1.data_ptr() != data.x_1.data_ptr()
    assert out.y is data.y  # other attributes shared (shallow copy)


def test_seeded_determinism_and_independent_calls():
    data = make_data(400)
    a, b = EdgeFlowMask(0.5, generator=7), EdgeFlowMask(0.5, generator=7)
    first_a, first_b = a(data), b(data)
    assert torch.equal(first_a.x_1, first_b.x_1)
    second_a = a(data)
    assert not torch.equal(first_a.x_1, second_a.x_1)  # two views differ
    gen = torch.Generator().manual_seed(7)
    assert torch.equal(EdgeFlowMask(0.5, generator=gen)(data).x_1, first_a.x_1)


def test_global_rng_when_no_generator():
    data = make_data(400)
    torch.manual_seed(3)
    a = EdgeFlowMask(0.5)(data).x_1
    torch.manual_seed(3)
    b = EdgeFlowMask(0.5)(data).x_1
    assert torch.equal(a, b)


def test_batch_gets_one_mask_per_sample_and_channels_share_it():
    data_list = [make_data(50, c=3, seed=s) for s in range(8)]
    batch = Batch.from_data_list(data_list)
    out = EdgeFlowMask(0.5, generator=4)(batch)
    assert out.x_1.shape == (400, 3)
    dropped = out.x_1 == 0  # [400, 3]
    # channels of an edge share its draw
    assert torch.equal(dropped.all(-1), dropped.any(-1))
    masks = dropped[:, 0].view(8, 50)
    assert len({tuple(m.tolist()) for m in masks}) == 8  # samples differ
    assert isinstance(out, Batch) and out.num_graphs == 8
    assert torch.equal(
        out.to_data_list()[3].x_1[~dropped[150:200]], data_list[3].x_1[~dropped[150:200]]
    )


def test_zero_flow_edges_stay_zero():
    x = torch.zeros(200, 1)
    x[::4] = 1.0
    out = EdgeFlowMask(0.5, generator=0)(Data(x_1=x))
    assert bool((out.x_1[x == 0] == 0).all())
    assert set(out.x_1[x != 0].tolist()) <= {0.0, 1.0}


def test_p_zero_and_one_and_1d_flows_and_dtype():
    data = make_data(100, dtype=torch.float64)
    assert torch.equal(EdgeFlowMask(0.0, generator=0)(data).x_1, data.x_1)
    out = EdgeFlowMask(1.0, generator=0)(data)
    assert bool((out.x_1 == 0).all()) and out.x_1.dtype == torch.float64
    flat = Data(x_1=torch.ones(50))
    res = EdgeFlowMask(0.5, generator=0)(flat).x_1
    assert res.shape == (50,)


def test_other_attr():
    data = Data(x_1=torch.ones(10, 1), flow=torch.ones(20, 1))
    out = EdgeFlowMask(1.0, attr="flow", generator=0)(data)
    assert bool((out.flow == 0).all()) and torch.equal(out.x_1, data.x_1)


def test_repr():
    assert repr(EdgeFlowMask(0.25)) == "EdgeFlowMask(p=0.25, attr='x_1')"


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"p": -0.1}, ValueError),
        ({"p": 1.1}, ValueError),
        ({"p": float("nan")}, ValueError),
        ({"p": "0.3"}, TypeError),
        ({"p": True}, TypeError),
        ({"p": 0.3, "generator": "seed"}, TypeError),
        ({"p": 0.3, "generator": -1}, ValueError),
        ({"p": 0.3, "attr": ""}, TypeError),
    ],
)
def test_bad_settings(kwargs, err):
    with pytest.raises(err):
        EdgeFlowMask(**kwargs)


def test_bad_data():
    mask = EdgeFlowMask(0.3, generator=0)
    with pytest.raises(ValueError, match="x_1"):
        mask(Data(x=torch.ones(3, 1)))
    with pytest.raises(TypeError, match="floating"):
        mask(Data(x_1=torch.ones(3, 1, dtype=torch.long)))
    with pytest.raises(ValueError, match="NaN"):
        mask(Data(x_1=torch.tensor([[1.0], [float("nan")]])))
    with pytest.raises(ValueError, match="shape"):
        mask(Data(x_1=torch.ones(3, 1, 1)))
