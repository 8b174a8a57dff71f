"""The Laplacians value: checks, copies, the samples' rows and blocks of a batch."""

import pickle

import pytest
import torch
from torch_geometric.data import Batch

from topo_contrastive.complex import ComplexOperators, Laplacians

from .._many_complexes import many_complexes


@pytest.fixture(scope="module")
def batch():
    return Batch.from_data_list(many_complexes(5, seed=4, cells=True))


def test_a_batch_knows_its_blocks_and_copies_keep_them(batch):
    L = batch.laplacians(dtype=torch.float64)
    sizes = batch.num_cells(1).tolist()
    assert L.num_blocks == 5 and L.ptr.diff().tolist() == sizes and L.symmetric
    for copy in (L.clone(), L.detach(), L.to(torch.float32), pickle.loads(pickle.dumps(L))):
        assert torch.equal(copy.ptr, L.ptr) and copy.rank == 1 and copy.complex is not None
        assert not copy.cache or list(copy.cache) == ["__versions__"]  # prepared again
    down, up = L  # unpacks as the pair
    assert down is L.down and up is L.up and len(L) == 2 and L[1] is up
    assert "num_blocks=5" in repr(L)


def test_rows_and_blocks_are_the_samples_diagonal_blocks(batch):
    L = batch.laplacians(dtype=torch.float64)
    ptr = L.ptr.tolist()
    a, b = L.rows(1, 4)
    assert (a, b) == (ptr[1], ptr[4])
    sub = L.blocks(1, 4)
    dense = L.down.to_dense()
    torch.testing.assert_close(sub.down.to_dense(), dense[a:b, a:b], rtol=0, atol=0)
    torch.testing.assert_close(sub.up.to_dense(), L.up.to_dense()[a:b, a:b], rtol=0, atol=0)
    assert sub.ptr.tolist() == [p - a for p in ptr[1:5]] and sub.num_blocks == 3
    twice = L.repeat(2)
    assert twice.num_blocks == 10 and twice.num_cells == 2 * L.num_cells
    torch.testing.assert_close(
        twice.down.to_dense(), torch.block_diag(dense, dense), rtol=0, atol=0
    )


def test_one_complex_acts_on_any_number_of_samples():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
    L = ops.laplacians()
    assert L.rows(2, 5) == (6, 15) and L.blocks(2, 5) is L and L.repeat(3) is L
    assert L.fingerprint == ops.fingerprint() and ops.laplacians() is L


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((None, None), ValueError, "needs at least one"),
        ((torch.eye(3), None), TypeError, "`L_down` is a dense tensor"),
        ((torch.eye(3).to_sparse(), torch.eye(2).to_sparse()), ValueError, "same complex"),
        ((torch.ones(2, 3).to_sparse(), None), ValueError, "square"),
        ((torch.eye(3, dtype=torch.long).to_sparse(), None), TypeError, "floating dtype"),
    ],
)
def test_bad_operators_are_refused_by_name(args, error, match):
    with pytest.raises(error, match=match):
        Laplacians(*args)


def test_a_bad_ptr_is_refused():
    L = torch.eye(4).to_sparse()
    with pytest.raises(ValueError, match="`ptr` must run from 0 to N = 4"):
        Laplacians(L, None, ptr=torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="without decreasing"):
        Laplacians(L, None, ptr=torch.tensor([0, 3, 2, 4]))
    with pytest.raises(TypeError, match="`ptr` must be an integer tensor"):
        Laplacians(L, None, ptr=torch.tensor([0.0, 4.0]))
