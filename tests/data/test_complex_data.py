"""ComplexData: the layout of samples on their own complexes and of their PyG batches.

Collation against scipy's block_diag of the samples' incidences, the round trips of
to_data_list / get_example / InMemoryDataset indexing, TopoBench's plain Data, the shared
layout, and the bad inputs (the sample is named)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Batch, Data, InMemoryDataset
from torch_geometric.loader import DataLoader

from topo_contrastive import ComplexOperators
from topo_contrastive.complex._operators import operator_blocks
from topo_contrastive.data import ComplexData

from .._cell_complexes import square_pentagon_loop
from .._many_complexes import many_complexes


class _Memory(InMemoryDataset):
    def __init__(self, data_list):
        super().__init__(None)
        self.data, self.slices = self.collate(data_list)


def _dense(data: ComplexData, k: int) -> np.ndarray:
    counts = data.cell_counts.reshape(-1, 3).sum(0).tolist()
    idx, val = data[f"incidence_{k}_index"], data[f"incidence_{k}_value"]
    out = np.zeros((counts[k - 1], counts[k]))
    out[idx[0].numpy(), idx[1].numpy()] = val.numpy()
    return out


def test_batch_is_one_complex_with_block_diagonal_incidences():
    samples = many_complexes(6, seed=1, cells=True)
    batch = Batch.from_data_list(samples)
    ops = [s.complex() for s in samples]
    for k, name in ((1, "B1"), (2, "B2")):
        want = sp.block_diag([getattr(o, name) for o in ops]).toarray()
        np.testing.assert_array_equal(_dense(batch, k), want)
    assert batch.cell_counts.tolist() == [list(o.sizes[:3]) for o in ops]
    assert batch.num_nodes == sum(o.num_nodes for o in ops)  # PyG's count: the nodes
    for k in range(3):
        sizes = [o.sizes[k] for o in ops]
        want = torch.arange(6).repeat_interleave(torch.tensor(sizes))
        assert torch.equal(getattr(batch, f"batch_{k}"), want)
    union = batch.complex()
    assert union.sizes[:3] == tuple(int(v) for v in batch.cell_counts.sum(0))
    L_down, L_up = batch.laplacians(dtype=torch.float64)
    want_down = sp.block_diag([o.L_down for o in ops]).toarray()
    np.testing.assert_array_equal(L_down.to_dense().numpy(), want_down)
    assert operator_blocks(L_down) == tuple(o.num_edges for o in ops)
    assert batch.laplacians(dtype=torch.float64)[0] is L_down  # cached on the batch


def test_samples_round_trip_through_batches_and_datasets():
    samples = many_complexes(5, seed=2, cells=True)
    batch = Batch.from_data_list(samples)
    memory = _Memory(samples)
    for i, s in enumerate(samples):
        for got in (batch.to_data_list()[i], batch.get_example(i), memory[i]):
            assert isinstance(got, ComplexData)
            for key in ("x_1", "incidence_1_index", "incidence_2_value", "cell_counts", "y"):
                assert torch.equal(got[key], s[key]), key
            assert got.complex().fingerprint() == s.complex().fingerprint()
    loaded = next(iter(DataLoader(memory, batch_size=5)))
    np.testing.assert_array_equal(_dense(loaded, 2), _dense(batch, 2))


def test_topobench_plain_data_gives_the_same_sample():
    ops = square_pentagon_loop()
    x = torch.randn(ops.num_edges, 1)
    plain = Data(
        x_1=x,
        incidence_1=torch.from_numpy(ops.B1.toarray()).float().to_sparse(),
        incidence_2=torch.from_numpy(ops.B2.toarray()).float().to_sparse(),
        y=torch.tensor([3]),
    )
    got = ComplexData.from_data(plain)
    want = ComplexData.from_complex(ops, x_1=x, y=torch.tensor([3]))
    assert set(got.keys()) == set(want.keys())
    for key in want.keys():
        a, b = got[key], want[key]
        assert torch.equal(a, b) if torch.is_tensor(a) else a == b, key
    assert ComplexData.from_data(got) is got


def test_shared_layout_stores_no_incidences():
    ops = square_pentagon_loop()
    s = ComplexData.on_shared_complex(ops, x_1=torch.ones(ops.num_edges, 1))
    assert s.is_shared and "incidence_1_index" not in s
    batch = Batch.from_data_list([s, s])
    assert batch.is_shared and batch.batch_1.tolist() == [0] * 11 + [1] * 11
    with pytest.raises(ValueError, match="dataset.complex"):
        batch.complex()


def test_bad_samples_are_named():
    ops = square_pentagon_loop()
    with pytest.raises(ValueError, match=r"`x_1` must have shape \[N1, C\] with N1 = 11"):
        ComplexData.from_complex(ops, x_1=torch.ones(10, 1))
    with pytest.raises(ValueError, match="no edges"):
        ComplexData.from_complex(ComplexOperators.from_simplices(np.zeros((0, 2)), num_nodes=3))
    with pytest.raises(TypeError, match="ComplexOperators, a HodgeDecomposition or a TopoNetX"):
        ComplexData.from_complex("a complex")
    with pytest.raises(ValueError, match="no `incidence_1`"):
        ComplexData.from_data(Data(x_1=torch.ones(3, 1)))
    samples = many_complexes(3, seed=3)
    broken = samples[2].clone()
    broken.incidence_2_value = -broken.incidence_2_value.clone()
    broken.incidence_2_value[0] = -broken.incidence_2_value[0]  # one sign off: B1 B2 != 0
    batch = Batch.from_data_list([samples[0], samples[1], broken])
    with pytest.raises(ValueError, match="sample 2: B1 @ B2 != 0 at its 2-cell"):
        batch.complex()
    with pytest.raises(ValueError, match="sample 2: B1 @ B2 != 0"):
        batch.validate()
    short = samples[1].clone()
    short.x_1 = short.x_1[:-1]
    with pytest.raises(ValueError, match="sample 1: `x_1` has"):
        Batch.from_data_list([samples[0], short]).validate()
