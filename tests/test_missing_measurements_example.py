"""examples/missing_measurements.py: the unobserved edges are what the docstring says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from topo_contrastive import ComplexOperators

REPO = Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location(
        "missing_measurements_example", REPO / "examples" / "missing_measurements.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grid(n: int = 6) -> ComplexOperators:
    """An n x n grid of squares' nodes with every square split into two triangles."""
    triangles = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, i * n + j + 1, (i + 1) * n + j, (i + 1) * n + j + 1
            triangles += [(a, b, d), (a, c, d)]
    edges = sorted(
        {tuple(sorted(e)) for t in triangles for e in ((t[0], t[1]), (t[0], t[2]), (t[1], t[2]))}
    )
    return ComplexOperators.from_simplices(edges, triangles)


def test_random_masks_hide_the_fraction_of_every_flow():
    ex, ops = _example(), _grid()
    masks = ex.unobserved_masks(ops, 20, 0.3, "random", np.random.default_rng(0))
    assert masks.shape == (20, ops.num_edges)
    assert (masks.sum(1) == round(0.3 * ops.num_edges)).all()
    assert len({m.tobytes() for m in masks}) > 1  # each flow its own draw


def test_region_masks_are_the_edges_nearest_a_node():
    ex, ops = _example(), _grid()
    masks = ex.unobserved_masks(ops, 10, 0.25, "region", np.random.default_rng(1))
    adjacency = abs(ops.B1) @ abs(ops.B1).T
    for m in masks:
        assert m.sum() == round(0.25 * ops.num_edges)
        # some node's hop distances put every hidden edge at or below every observed one
        tail, head = ops.edges[:, 0], ops.edges[:, 1]
        ok = False
        for source in range(ops.num_nodes):
            hops = shortest_path(adjacency, unweighted=True, indices=source)
            d = np.minimum(hops[tail], hops[head])
            if d[m].max() <= d[~m].min():
                ok = True
                break
        assert ok


def test_a_fraction_outside_zero_one_is_refused_before_any_work(tmp_path):
    ex = _example()
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"`fractions` must lie in \(0, 1\)"):
            ex.main(tmp_path / "out", datasets=("ocean",), fractions=(0.3, bad))
    assert not (tmp_path / "out").exists()
