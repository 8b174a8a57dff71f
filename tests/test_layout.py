"""topo_contrastive._layout: the one place where signal layouts are converted."""

from __future__ import annotations

import pytest
import torch

from topo_contrastive._layout import (
    as_samples,
    batch_vector,
    check_batch_vector,
    check_num_simplices,
    rows_to_samples,
    samples_to_rows,
    simplex_words,
)


def test_rows_and_samples_round_trip():
    x = torch.arange(12.0).view(6, 2)  # a PyG batch [B * N1, C], N1 = 3
    dense = rows_to_samples(x, 3)
    assert dense.shape == (2, 3, 2) and torch.equal(dense[1, 0], x[3])
    assert torch.equal(samples_to_rows(dense), x)
    assert rows_to_samples(torch.zeros(6), 2).shape == (3, 2)
    with pytest.raises(ValueError, match=r"`H` has 7 rows, not a multiple of the complex's N2 = 3 "
                       "triangles"):
        rows_to_samples(torch.zeros(7, 1), 3, rank=2, name="H")
    with pytest.raises(ValueError, match="not a multiple of N1=3 here"):
        rows_to_samples(torch.zeros(7, 1), 3, of="N1=3 here")
    with pytest.raises(ValueError, match="multiple"):
        rows_to_samples(torch.zeros(0, 1), 0)


def test_batch_vector_and_its_check():
    b = batch_vector(3, 2)
    assert b.tolist() == [0, 0, 1, 1, 2, 2]
    assert check_batch_vector(b, 6, 2) == 3
    with pytest.raises(ValueError, match=r"must be a vector of shape \[6\]"):
        check_batch_vector(b[:-1], 6, 2)
    with pytest.raises(ValueError, match="blocks of N1 = 2 consecutive rows.*contiguous"):
        check_batch_vector(b.flip(0), 6, 2)
    with pytest.raises(ValueError, match="blocks of N0 = 4"):
        check_batch_vector(torch.zeros(6, dtype=torch.long), 6, 4, rank=0)


def test_num_graphs_and_num_simplices_checks():
    assert as_samples(torch.ones(6, 1), 3, 1, num_graphs=2)[0].shape == (2, 3)
    with pytest.raises(TypeError, match="`num_graphs` must be an int"):
        as_samples(torch.ones(6, 1), 3, 1, num_graphs=2.0)
    with pytest.raises(ValueError, match="`num_graphs`=3 does not match `x`: 6 rows hold 2 flows"):
        as_samples(torch.ones(6, 1), 3, 1, num_graphs=3)
    check_num_simplices(torch.zeros(2, 3, 1), 1, 3, 1, "x", "the operators are [3, 3]")
    with pytest.raises(ValueError, match=r"`x` has 4 edges \(shape \(2, 4, 1\)\) but the op"):
        check_num_simplices(torch.zeros(2, 4, 1), 1, 3, 1, "x", "the operators are [3, 3]")
    assert simplex_words(2) == ("N2", "triangles", "rank-2 signal")


def test_as_samples_layouts_restore():
    n1 = 3
    for x in (torch.ones(n1), torch.ones(n1, 1), torch.ones(2, n1), torch.ones(2, n1, 1)):
        flows, restore = as_samples(x, n1, 1)
        assert flows.dim() == 2 and flows.shape[1] == n1
        assert restore(flows).shape == x.shape
    pyg = torch.ones(2 * n1, 1)
    flows, restore = as_samples(pyg, n1, 1, batch=batch_vector(2, n1))
    assert flows.shape == (2, n1) and restore(flows).shape == pyg.shape
    with pytest.raises(ValueError, match="consecutive rows"):
        as_samples(pyg, n1, 1, batch=torch.arange(2).repeat(n1))
    with pytest.raises(ValueError, match="NaN"):
        as_samples(torch.full((n1,), float("nan")), n1, 1)
