import numpy as np
import pytest

from benchmarks._complexes import delaunay_complex, delaunay_simplices, random_path_supports


@pytest.mark.parametrize("holes, beta1", [((), 0), (((0.2, 0.4), (0.6, 0.8)), 2)])
def test_delaunay_complex_size_and_betti_number(holes, beta1):
    ops = delaunay_complex(600, holes=holes, seed=1)
    assert 600 <= ops.num_edges <= 640
    # Euler characteristic of a connected planar domain with h holes: 1 - h
    assert ops.num_nodes - ops.num_edges + ops.num_triangles == 1 - beta1
    assert np.bincount(ops.triangles.ravel(), minlength=ops.num_nodes).min() > 0  # no orphans


def test_random_path_supports_are_simple_paths():
    ops = delaunay_complex(300, seed=2)
    supports = random_path_supports(ops, 20, min_edges=3, max_edges=6, seed=3)
    assert len(supports) == 20
    for cols in supports:
        assert 1 <= cols.size <= 6 and np.unique(cols).size == cols.size
        nodes, counts = np.unique(ops.edges[cols], return_counts=True)
        assert nodes.size == cols.size + 1  # a simple path visits |S| + 1 nodes
        assert (counts == 1).sum() == 2 and counts.max() <= 2


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_edges"):
        delaunay_complex(2)
    with pytest.raises(ValueError, match="num_points"):
        delaunay_simplices(2)
    with pytest.raises(ValueError, match="min_edges"):
        random_path_supports(delaunay_complex(30), 1, min_edges=5, max_edges=2)
