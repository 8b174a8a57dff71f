"""Fixtures of the transform tests: small random complexes and a small trajectory dataset."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial import Delaunay

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.datasets import SyntheticTrajectories


def random_complex(num_points: int = 14, seed: int = 0, keep: float = 0.7) -> ComplexOperators:
    """Delaunay complex of random points with about ``1 - keep`` of its triangles left
    unfilled (so it has gradient, curl and, usually, harmonic flows)."""
    rng = np.random.default_rng(seed)
    pts = rng.random((num_points, 2))
    tri = np.sort(Delaunay(pts).simplices, axis=1)
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(pairs, axis=0)
    filled = tri[rng.random(len(tri)) < keep]
    return ComplexOperators.from_simplices(edges, filled, num_points)


def random_flows(
    num_edges: int, num_samples: int, density: float = 0.5, seed: int = 0
) -> torch.Tensor:
    """float64 ``[S, N1]`` flows with about ``density`` of the entries non-zero."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(num_samples, num_edges, generator=gen, dtype=torch.float64)
    keep = torch.rand(num_samples, num_edges, generator=gen) < density
    return x * keep


@pytest.fixture(scope="session")
def small_hodge() -> HodgeDecomposition:
    ops = random_complex(14, seed=3)
    hodge = HodgeDecomposition(ops, backend="exact")
    assert min(hodge.dims.values()) > 0, "fixture should have all three components"
    return hodge


@pytest.fixture(scope="session")
def trajectories(tmp_path_factory) -> tuple[SyntheticTrajectories, HodgeDecomposition]:
    """A small seeded trajectory dataset (40 flows on about 400 edges) and its Hodge
    decomposition (exact backend)."""
    root = tmp_path_factory.mktemp("trajectories")
    ds = SyntheticTrajectories(
        str(root), num_points=150, num_train=20, num_val=10, num_test=10, seed=0, log=False
    )
    return ds, HodgeDecomposition(ds.complex, backend="exact")
