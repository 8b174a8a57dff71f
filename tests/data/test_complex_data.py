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
    blocks = batch.laplacians(dtype=torch.float64)
    assert blocks.ptr.diff().tolist() == [o.num_edges for o in ops] and blocks.num_blocks == 6
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


def test_non_finite_signals_are_refused_by_name():
    # a NaN flow used to be stored without a word (one of four embeddings NaN later)
    ops = square_pentagon_loop()
    x_1 = torch.ones(ops.num_edges, 2)
    x_1[3, 1] = float("nan")
    with pytest.raises(ValueError, match=r"`x_1` contains NaN or inf values \(edge 3; 1 in all"):
        ComplexData.from_complex(ops, x_1=x_1)
    x_0 = torch.zeros(ops.num_nodes)
    x_0[[1, 4]] = float("inf")
    with pytest.raises(ValueError, match=r"`x_0` contains NaN or inf values \(nodes 1, 4; 2"):
        ComplexData.on_shared_complex(ops, x_0=x_0)
    with pytest.raises(ValueError, match=r"`x_2` contains NaN or inf values \(2-cell 0"):
        ComplexData.from_complex(ops, x_2=torch.tensor([float("-inf"), 1.0]))
    finite = ComplexData.from_complex(ops, x_1=torch.ones(ops.num_edges, 2), x_0=x_0.nan_to_num())
    assert finite.x_1.shape == (ops.num_edges, 2)


def test_an_edit_of_the_incidences_changes_the_cached_operators():
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
    d = ComplexData.from_complex(ops, x_1=torch.ones(5, 1))
    down, up = (t.to_dense() for t in d.laplacians(dtype=torch.float64))
    # in place: re-orient edge 0 (its column of B1 and its row of B2 change sign)
    col = d.incidence_1_index[1] == 0
    d.incidence_1_value[col] *= -1
    d.incidence_2_value[d.incidence_2_index[0] == 0] *= -1
    s = torch.ones(5, dtype=torch.float64)
    s[0] = -1
    down2, up2 = (t.to_dense() for t in d.laplacians(dtype=torch.float64))
    torch.testing.assert_close(down2, s[:, None] * down * s[None, :], rtol=0, atol=0)
    torch.testing.assert_close(up2, s[:, None] * up * s[None, :], rtol=0, atol=0)
    assert not torch.equal(down2, down)
    assert d.complex().B1[:, 0].toarray().ravel().tolist() == [1.0, -1.0, 0.0, 0.0]
    # replaced: the triangle emptied, so L_up is zero
    d.incidence_2_index = torch.zeros(2, 0, dtype=torch.long)
    d.incidence_2_value = torch.zeros(0)
    d.cell_counts = torch.tensor([[4, 5, 0]])
    assert d.complex().num_faces == 0
    assert d.laplacians()[1].to_dense().abs().sum() == 0


def test_the_two_layouts_do_not_mix_in_a_batch_or_a_dataset():
    from topo_contrastive.data import MixedLayoutError

    own = many_complexes(2, seed=0)
    shared = ComplexData.on_shared_complex(own[0].complex(), x_1=own[0].x_1, y=torch.tensor([0]))
    for samples in ([shared, *own], [*own, shared]):
        for collate in (InMemoryDataset.collate, Batch.from_data_list):
            with pytest.raises(ValueError, match="collated with samples of the other layout"):
                collate(samples)
        with pytest.raises(MixedLayoutError, match="holds samples of one layout only"):
            next(iter(DataLoader(samples, batch_size=3)))
    # one layout collates and gives its samples back
    data, slices = InMemoryDataset.collate([shared, shared])
    assert data.shared_complex.tolist() == [True, True]
    assert Batch.from_data_list(own).to_data_list()[1].complex().sizes == own[1].complex().sizes
