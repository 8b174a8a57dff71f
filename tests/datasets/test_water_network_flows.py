"""WaterNetworkFlows: EPANET's networks as complexes, pipe flows that conserve water at every
node, leak labels, determinism, and refused options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("wntr")

from topo_contrastive.datasets import WaterNetworkFlows  # noqa: E402
from topo_contrastive.datasets import water_network_flows as wnf  # noqa: E402
from topo_contrastive.datasets._file import read_file  # noqa: E402


@pytest.fixture(scope="module")
def leaks(tmp_path_factory):
    root = tmp_path_factory.mktemp("net3")
    return WaterNetworkFlows(str(root), network="Net3", num_samples=12, n_jobs=1, log=False)


def test_sizes_of_net3(leaks):
    ops = leaks.complex
    # 92 junctions, 3 tanks, 2 reservoirs; 117 pipes and 2 pumps
    assert (ops.num_nodes, ops.num_edges) == (97, 119)
    assert len(leaks) == 12 and leaks[0].x_1.shape == (119, 1)
    assert leaks.flows.shape == (12, 119) and leaks.injections.shape == (12, 97)
    assert leaks.losses is None and bool((leaks.edge_weights > 0).all())
    assert leaks.settings["source"].startswith("wntr 1.5")
    assert len(leaks.settings["source_sha256"]) == 64


def test_water_is_conserved_at_every_node_of_every_sample(leaks):
    B1, f, p = leaks.complex.B1, leaks.flows.numpy(), leaks.injections.numpy()
    # EPANET's results are single precision: conservation to its rounding
    assert np.abs(B1 @ f.T + p.T).max() < 1e-6 * np.abs(f).max()
    assert np.abs(f).max() > 1.0  # L/s


def test_a_leak_adds_demand_at_its_junction_and_labels_its_region(leaks):
    info = leaks.sample_info
    node, diameter = info["leak_node"].numpy(), info["leak_diameter"].numpy()
    assert (node >= 0).all() and ((diameter >= 0.01) & (diameter <= 0.04)).all()
    assert np.array_equal(leaks.regions.numpy()[node], leaks._data.y.numpy())
    # a leak draws water even where the junction has no demand; such junctions otherwise draw 0
    wn = wnf._load("Net3")
    idle = [i for i, n in enumerate(wn.node_name_list) if n in wn.junction_name_list
            and sum(d.base_value for d in wn.get_node(n).demand_timeseries_list) == 0]  # fmt: skip
    drawn = -leaks.injections.numpy()
    assert (drawn[np.arange(12), node] > 0).all()
    for s in range(12):
        assert np.all(drawn[s, [i for i in idle if i != node[s]]] == 0)


def test_demand_task_labels_the_period_of_the_day(tmp_path):
    ds = WaterNetworkFlows(str(tmp_path), network="Net1", task="demand", num_samples=8,
                           num_regions=2, n_jobs=1, log=False)  # fmt: skip
    hour = ds.sample_info["hour"].numpy()
    assert np.array_equal(ds._data.y.numpy(), hour // 6)
    assert (ds.sample_info["leak_node"].numpy() == -1).all()


def test_determinism_by_seed(tmp_path):
    kw = dict(network="Net1", num_samples=6, num_regions=2, n_jobs=1, log=False)
    one = WaterNetworkFlows(str(tmp_path / "a"), **kw)
    again = WaterNetworkFlows(str(tmp_path / "b"), **kw)
    other = WaterNetworkFlows(str(tmp_path / "c"), **{**kw, "seed": 4})
    assert torch.equal(one._data.x_1, again._data.x_1) and torch.equal(one._data.y, again._data.y)
    assert not torch.allclose(one.flows, other.flows)


def test_export_keeps_the_resistances(leaks, tmp_path):
    leaks.to_npz(tmp_path / "net3.npz")
    content = read_file(str(tmp_path / "net3.npz"))
    assert np.array_equal(content["edge_weights"], leaks.edge_weights.numpy())
    # Hazen-Williams: a pipe twice as long has twice the resistance
    wn = wnf._load("Net3")
    r = wnf._resistances(wn)
    pipe = wn.get_link(wn.link_name_list[0])
    assert np.isclose(r[0], 10.67 * pipe.length / (pipe.roughness**1.852 * pipe.diameter**4.871))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"network": "Net99"}, "network"), ({"task": "burst"}, "task"),
        ({"lifting": "faces"}, "lifting"), ({"observed": 1.5}, "observed"),
        ({"leak_diameter": (0.05, 0.01)}, "leak_diameter"),
        ({"demand_sigma": -0.1}, "demand_sigma"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_naming_the_argument(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        WaterNetworkFlows(str(tmp_path), log=False, **kwargs)
    assert not (tmp_path / "processed").exists()
