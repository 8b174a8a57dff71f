"""Next-node samples from node paths (SCoNe's data preparation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.next_node import next_node_samples
from topo_contrastive import ComplexOperators


def _grid():
    """A 3 x 3 grid of nodes 0..8 (row-major), all unit edges, two filled triangles."""
    edges = [[0, 1], [1, 2], [3, 4], [4, 5], [6, 7], [7, 8], [0, 3], [3, 6], [1, 4], [4, 7],
             [2, 5], [5, 8], [0, 4]]  # fmt: skip
    return ComplexOperators.from_simplices(edges, [[0, 1, 4], [0, 3, 4]])


def test_exact_sample_on_a_hand_built_complex():
    ops = _grid()
    s = next_node_samples(ops, [[0, 1, 4, 5, 8]], truncate=False)
    # prefix 0 -> 1 -> 4, next node 5 (the last node 8 is SCoNe's second-hop suffix)
    assert s.last_nodes.tolist() == [4] and s.targets.tolist() == [5]
    assert s.candidates[0].nonzero().ravel().tolist() == [0, 1, 3, 5, 7]  # neighbours of 4
    expected = torch.zeros(ops.num_edges)
    col, sign = ops.edge_lookup(np.array([0, 1]), np.array([1, 4]))
    expected[torch.as_tensor(col)] = torch.as_tensor(sign, dtype=torch.float32)
    assert torch.equal(s.flows[0], expected)
    assert s.prefixes[0].tolist() == [0, 1, 4] and len(s) == 1


def test_truncation_and_reversal_follow_scone_split_paths():
    """The cut of a path of n >= 7 nodes is its first 4 + t nodes, t from {2, .., n - 5} drawn
    with the seeded generator in path order (a naive loop of SCoNe's split_paths); shorter
    paths stay whole; reverse=True reverses each whole path before the cut."""
    ops = _grid()
    walks = [[0, 1, 2, 5, 4, 3, 6, 7, 8], [3, 4, 5, 8, 7], [6, 3, 0, 1, 4, 7, 8, 5]]
    for reverse in (False, True):
        s = next_node_samples(ops, walks, seed=7, reverse=reverse)
        rng = np.random.default_rng(7)
        for k, w in enumerate(walks):
            p = np.array(w[::-1] if reverse else w)
            if p.size >= 7:
                p = p[: 4 + int(rng.choice(np.arange(2, p.size - 4)))]
            assert s.prefixes[k].tolist() == p[:-2].tolist()
            assert int(s.targets[k]) == p[-2] and int(s.last_nodes[k]) == p[-3]
            assert torch.equal(s.flows[k], ops.path_to_flow(p[:-2]))
    same = next_node_samples(ops, walks, seed=7)
    assert torch.equal(same.flows, next_node_samples(ops, walks, seed=7).flows)
    sub = same.subset([2, 0])
    assert sub.targets.tolist() == [same.targets[2], same.targets[0]]


@pytest.mark.parametrize(
    "paths, error, words",
    [
        ([], ValueError, "empty"),
        ([[0, 1]], ValueError, "path 0 has 2 node"),
        # 3 nodes: the prefix would be one node, of zero flow
        ([[0, 1, 4]], ValueError, "path 0 has 3 node.*at least 4.*not zero"),
        ([[0, 1, 4, 5], [4]], ValueError, "path 1 has 1 node"),
        ([[0, 1, 4, 5], [0, 2, 5, 8]], ValueError, "path 1 is not a walk"),
        ([[0, 1, 9, 8]], ValueError, "outside"),
        ([[0, -1, 4, 5]], ValueError, "outside"),
    ],
)
def test_bad_paths(paths, error, words):
    with pytest.raises(error, match=words):
        next_node_samples(_grid(), paths, truncate=False)
    with pytest.raises(TypeError, match="ComplexOperators"):
        next_node_samples("grid", [[0, 1, 4]])
