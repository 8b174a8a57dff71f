"""The 'blocks' backend (exact per connected component, batched) equals the exact backend
on complexes of many components, and 'auto' picks it for a batch of complexes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from tests._many_complexes import many_complexes
from topo_contrastive import HodgeDecomposition


@pytest.fixture(scope="module")
def union():
    return Batch.from_data_list(many_complexes(12, seed=5, cells=True)).complex()


def test_blocks_equal_exact(union):
    blocks = HodgeDecomposition(union, backend="blocks")
    exact = HodgeDecomposition(union, backend="exact")
    assert blocks.dims == exact.dims
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((4, union.num_edges)))
    for a, b in zip(blocks(x), exact(x), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    rng = np.random.default_rng(1)
    sets = [np.sort(rng.choice(union.num_edges, 6, replace=False)) for _ in range(5)]
    sets.append(np.arange(10))  # spans two components
    got = blocks.projector_blocks(sets, dtype=torch.float64)
    want = exact.projector_blocks(sets, dtype=torch.float64)
    for name in got:
        for a, b in zip(got[name], want[name], strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_auto_picks_blocks_for_many_small_components(union):
    assert HodgeDecomposition(union, max_exact_edges=60).backend == "blocks"
    assert HodgeDecomposition(union).backend == "exact"  # small enough for one dense basis
    with pytest.raises(ValueError, match="one .* basis per connected component"):
        HodgeDecomposition(union, backend="blocks").basis("harmonic")
    with pytest.raises(ValueError, match="rank 1"):
        HodgeDecomposition(union, backend="blocks", rank=2)
