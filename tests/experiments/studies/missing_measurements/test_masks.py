"""unobserved_masks: the count per flow, the region as a ball of hops, the draws, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from experiments.studies.missing_measurements import MODES, unobserved_masks
from topo_contrastive import ComplexOperators


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


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.25, 0.5, 1.0])
def test_every_flow_hides_round_fraction_times_n1_edges(mode, fraction):
    ops = _grid()
    masks = unobserved_masks(ops, 12, fraction, mode, np.random.default_rng(0))
    assert masks.shape == (12, ops.num_edges) and masks.dtype == bool
    assert (masks.sum(1) == round(fraction * ops.num_edges)).all()
    if 0 < fraction < 1:
        assert len({m.tobytes() for m in masks}) > 1  # each flow its own draw


def test_region_masks_are_the_edges_nearest_a_node():
    ops = _grid()
    masks = unobserved_masks(ops, 10, 0.25, "region", np.random.default_rng(1))
    adjacency = abs(ops.B1) @ abs(ops.B1).T
    tail, head = ops.edges[:, 0], ops.edges[:, 1]
    for m in masks:
        # some node's hop distances put every hidden edge at or below every observed one
        balls = []
        for source in range(ops.num_nodes):
            hops = shortest_path(adjacency, unweighted=True, indices=source)
            d = np.minimum(hops[tail], hops[head])
            balls.append(d[m].max() <= d[~m].min())
        assert any(balls)
    # random masks of the same size are not balls (a check that the check can fail)
    m = unobserved_masks(ops, 1, 0.25, "random", np.random.default_rng(1))[0]
    dists = [np.minimum(h[tail], h[head]) for h in
             (shortest_path(adjacency, unweighted=True, indices=s) for s in range(ops.num_nodes))]
    assert not any(d[m].max() <= d[~m].min() for d in dists)


def test_the_draws_follow_the_documented_order():
    ops = _grid(4)
    n1, k = ops.num_edges, round(0.3 * ops.num_edges)
    rng = np.random.default_rng(7)
    expected = np.zeros((3, n1), dtype=bool)
    for i in range(3):
        expected[i, rng.choice(n1, size=k, replace=False)] = True
    assert (unobserved_masks(ops, 3, 0.3, "random", np.random.default_rng(7)) == expected).all()
    # region: a node, then the tie-breakers; nearest first by (distance, tie-breaker)
    rng = np.random.default_rng(7)
    adjacency = abs(ops.B1) @ abs(ops.B1).T
    source = int(rng.integers(ops.num_nodes))
    hops = shortest_path(adjacency, unweighted=True, indices=source)
    d = np.minimum(hops[ops.edges[:, 0]], hops[ops.edges[:, 1]])
    order = np.lexsort((rng.random(n1), d))
    got = unobserved_masks(ops, 1, 0.3, "region", np.random.default_rng(7))[0]
    assert set(np.flatnonzero(got)) == set(order[:k].tolist())


def test_a_region_spills_into_another_component_only_when_its_own_is_exhausted():
    # two triangles' boundaries (3 edges each), no 2-cells: the far component is at infinity
    ops = ComplexOperators.from_simplices([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)])
    for seed in range(10):
        m = unobserved_masks(ops, 1, 4 / 6, "region", np.random.default_rng(seed))[0]
        assert m.sum() == 4
        assert m[:3].all() or m[3:].all()  # one whole component, one edge of the other


def test_bad_input_is_refused():
    ops, rng = _grid(3), np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"`fraction` must lie in \[0, 1\], got 1.5"):
        unobserved_masks(ops, 2, 1.5, "random", rng)
    with pytest.raises(ValueError, match="`fraction`"):
        unobserved_masks(ops, 2, float("nan"), "random", rng)
    with pytest.raises(ValueError, match="`mode` must be one of random, region, got 'block'"):
        unobserved_masks(ops, 2, 0.3, "block", rng)
    with pytest.raises(ValueError, match="`num` must be >= 0"):
        unobserved_masks(ops, -1, 0.3, "random", rng)
    with pytest.raises(TypeError, match="`rng` must be a numpy.random.Generator"):
        unobserved_masks(ops, 2, 0.3, "random", 0)
    with pytest.raises(TypeError, match="`complex` must be a ComplexOperators"):
        unobserved_masks(ops.B1, 2, 0.3, "random", rng)
