"""The Chicago example reads pytspl's files correctly (no training: the examples test runs it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.examples.test_examples import PYTSPL_MISSING
from topo_contrastive import ComplexOperators
from topo_contrastive.datasets import EdgeFlows

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pytspl") is None, reason=PYTSPL_MISSING)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))


@pytest.fixture(scope="module")
def net():
    import pytspl_chicago

    return pytspl_chicago, pytspl_chicago.load_chicago_sketch(pytspl_chicago.find_pytspl_data())


def test_complex_is_read_in_its_own_orientation(net):
    _, net = net
    ops = ComplexOperators.from_incidence(net["B1"], net["B2"])
    assert (ops.num_nodes, ops.num_edges, ops.num_triangles) == (546, 1088, 112)
    assert (ops.edges[:, 0] > ops.edges[:, 1]).all()  # pytspl orients every edge high -> low
    assert abs(ops.B1 @ ops.B2).max() == 0  # a valid signed pair
    assert net["pos"].shape == (546, 2) and net["demand"].shape == (387, 387)
    assert net["demand"].sum() == pytest.approx(1_260_907.44, rel=1e-6)  # the README's total
    # every directed road link is an edge of the complex
    links = net["links"].tocoo()
    col, _ = ops.edge_lookup(links.row, links.col)
    assert np.unique(col).size == ops.num_edges


def test_trips_are_routed_walks_with_their_direction(net, tmp_path):
    module, net = net
    paths, labels, ids = module.sample_trips(net, 40, np.random.default_rng(1), min_edges=8)
    assert len(paths) == 40 and len(set(ids)) == 40 and min(len(p) for p in paths) >= 9
    ds = EdgeFlows.from_incidence(
        str(tmp_path),
        net["B1"],
        net["B2"],
        paths=paths,
        labels=labels,
        pos=net["pos"],
        sample_ids=ids,
        log=False,
    )
    flows = ds._data.x_1.view(40, -1)
    div = ds.complex.divergence(flows)  # -1 at the start junction, +1 at the end
    starts = torch.tensor([p[0] for p in paths])
    ends = torch.tensor([p[-1] for p in paths])
    assert torch.equal(div[torch.arange(40), starts], -torch.ones(40))
    assert torch.equal(div[torch.arange(40), ends], torch.ones(40))
    assert int((div != 0).sum()) == 80
    north = net["pos"][ends.numpy(), 1] > net["pos"][starts.numpy(), 1]
    assert np.array_equal(labels, north.astype(int)) and 0 < labels.sum() < 40
    # the trip's zones: the one-based ids name the connector junctions of the table
    o, d = (int(v) for v in ids[0].split("->"))
    assert paths[0][0] == module.zone_junction(np.array(o - 1)) and paths[0][-1] == (
        module.zone_junction(np.array(d - 1))
    )
