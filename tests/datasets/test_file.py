# ruff: noqa: E501  (the case table keeps one case per line)
"""The ``.npz`` file of edge flows on one or many complexes: written and read back sample by
sample, samples of one complex stored once, files of earlier versions read, bad files refused
naming the file and the key."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Batch

from tests._many_complexes import many_complexes
from topo_contrastive import ComplexOperators
from topo_contrastive.data import ComplexData
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.datasets._file import read_file


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """12 samples (Delaunay simplicial complexes and planar cell complexes) and their file;
    a file of 12 simplicial complexes only (every 2-cell a triangle: 3 entries each)."""
    root = tmp_path_factory.mktemp("many_file")
    samples = many_complexes(12, seed=1, cells=True)
    path = root / "many.npz"
    EdgeFlows.write_npz(path, samples, sample_ids=[f"net-{i}" for i in range(12)])
    tri = root / "triangles.npz"
    EdgeFlows.write_npz(tri, many_complexes(12, seed=2))
    return {"samples": samples, "path": path, "triangles": tri, "root": root}


def test_each_sample_read_back_equals_the_one_written(written, tmp_path):
    ds = EdgeFlows(str(tmp_path), file=written["path"], log=False)
    assert len(ds) == 12 and ds.complex is None
    assert ds.labels.tolist() == [i % 2 for i in range(12)]
    assert ds.sample_ids == [f"net-{i}" for i in range(12)]
    for given, read in zip(written["samples"], ds, strict=True):
        a, b = given.complex(), read.complex()
        assert a.sizes == b.sizes
        assert (a.B1 != b.B1).nnz == 0 and (a.B2 != b.B2).nnz == 0  # same signs, same order
        assert torch.equal(given.x_1, read.x_1)
        assert torch.equal(given.y, read.y)


def test_the_file_holds_the_batch_of_the_samples(written):
    """The arrays are the samples' PyG Batch: block-diagonal incidences, by ComplexData's
    attribute names."""
    batch = Batch.from_data_list(written["samples"])
    with np.load(written["path"]) as f:
        for key in ("cell_counts", "incidence_1_index", "incidence_2_index"):
            assert np.array_equal(f[key], batch[key].numpy()), key
        assert np.array_equal(f["incidence_2_value"], batch.incidence_2_value.numpy())
        assert np.array_equal(f["x_1"], batch.x_1.view(-1).numpy())
        assert np.array_equal(f["y"], batch.y.numpy())


def test_the_dataset_batches_as_the_samples(written, tmp_path):
    ds = EdgeFlows(str(tmp_path), file=written["path"], log=False)
    assert len(ds) == 12 and ds.labels.tolist() == [i % 2 for i in range(12)]
    masks = ds.split(3)
    assert sum(int(m.sum()) for m in masks.values()) == 12  # every sample in one split
    L = Batch.from_data_list([ds[i] for i in range(12)]).laplacians()
    want = Batch.from_data_list(written["samples"]).laplacians()
    for got, exp in zip(L, want, strict=True):
        assert torch.equal(got.to_dense(), exp.to_dense())


def _rewrite(src, dst, **changes):
    with np.load(src) as f:
        arrays = dict(f)
    for key, value in changes.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value(arrays) if callable(value) else value
    np.savez(dst, **arrays)
    return dst


def _first_row_elsewhere(a):
    index = a["incidence_1_index"].copy()
    index[0, 0] = a["cell_counts"][:, 0].sum() - 1  # a node of the last sample
    return index


def _more_edges(a):
    counts = a["cell_counts"].copy()
    counts[0, 1] += 1
    return counts


def _huge_count(a):
    counts = a["cell_counts"].astype(np.uint64)
    counts[3, 2] = 2**63 + 5  # wraps to a negative int64
    return counts


def _flip_face_sign(a):
    value = a["incidence_2_value"].copy()
    value[0] = -value[0]
    return value


BAD = [
    ("edges-do-not-add-up", {"cell_counts": _more_edges}, r"key 'incidence_1_index'.*entries.*sum N1"),
    ("missing-flows", {"x_1": None}, r"give the samples as key 'x_1'"),
    ("missing-face-values", {"incidence_2_value": None}, r"lacks the key 'incidence_2_value'"),
    ("short-flows", {"x_1": lambda a: a["x_1"][:-1]}, r"key 'x_1'.*shape \[sum N1\]"),
    ("short-labels", {"y": lambda a: a["y"][:-1]}, r"key 'y'.*shape \[S\] with S = 12"),
    ("float-labels", {"y": lambda a: a["y"] + 0.5}, r"key 'y'"),
    ("counts-shape", {"cell_counts": lambda a: a["cell_counts"][:, :2]}, r"key 'cell_counts'.*\[S, 3\]"),
    ("negative-count", {"cell_counts": lambda a: a["cell_counts"] * np.array([1, 1, -1])}, r"key 'cell_counts'.*negative"),
    ("too-many-nodes", {"cell_counts": lambda a: a["cell_counts"] + np.array([10**8, 0, 0])}, r"key 'cell_counts'.*above the limit"),
    ("not-block-diagonal", {"incidence_1_index": _first_row_elsewhere}, r"key 'incidence_1_index'.*entry 0.*block-diagonal"),
    ("few-face-entries", {"incidence_2_index": lambda a: a["incidence_2_index"][:, :-3], "incidence_2_value": lambda a: a["incidence_2_value"][:-3]}, r"incidence_2_index has .* entries .* at least three"),
    ("value-not-sign", {"incidence_1_value": lambda a: a["incidence_1_value"] * 2}, r"key 'incidence_1_value' of .* entry 0 is -2; incidence values are -1 or \+1"),
    ("bad-sample-complex", {"incidence_2_value": _flip_face_sign}, r"sample 0 \(row 0 of cell_counts\)"),
    ("counts-above-int64", {"cell_counts": _huge_count}, r"key 'cell_counts' of .* row 3 holds the size 9223372036854775813, above the largest int64"),
    ("counts-as-floats", {"cell_counts": lambda a: a["cell_counts"] + np.array([0.0, 0.0, 2.0**63])}, r"key 'cell_counts' of .* must be an integer array \[S, 3\].*got dtype float64"),
    ("counts-summing-above-int64", {"cell_counts": lambda a: a["cell_counts"] + np.array([0, 0, 2**62])}, r"key 'cell_counts' of .* declares N2 = \d+ over all samples, above the largest int64"),
    ("unknown-key", {"flows": lambda a: a["x_1"]}, r"unknown key\(s\) \['flows'\]"),
    ("wrong-format", {"format": np.array("topo_contrastive.edge_flows")}, r"key 'format'"),
]  # fmt: skip


@pytest.mark.parametrize("case, changes, words", BAD, ids=[c[0] for c in BAD])
def test_a_bad_file_is_refused_naming_the_key(written, tmp_path, case, changes, words):
    path = _rewrite(written["triangles"], tmp_path / f"{case}.npz", **changes)
    with pytest.raises((ValueError, TypeError)) as info:
        read_file(path)
    message = str(info.value)
    assert re.search(words, message), message
    assert str(path) in message  # the file is named


def _collated_one_by_one(path):
    """The naive reader: every sample built and checked alone, then collated by PyG."""
    from torch_geometric.data import InMemoryDataset

    from topo_contrastive import ComplexOperators
    from topo_contrastive.data import ComplexData

    with np.load(path) as f:
        a = dict(f)
    ends = [np.concatenate([[0], np.cumsum(a["cell_counts"][:, r])]) for r in range(3)]
    samples = []
    for s, (n0, n1, n2) in enumerate(a["cell_counts"].tolist()):
        mats = []
        for k, (rows, cols) in ((1, (n0, n1)), (2, (n1, n2))):
            index, value = a[f"incidence_{k}_index"], a[f"incidence_{k}_value"]
            mine = (index[1] >= ends[k][s]) & (index[1] < ends[k][s + 1])
            mats.append(sp.csr_matrix((value[mine], (index[0, mine] - ends[k - 1][s],
                                                     index[1, mine] - ends[k][s])),
                                      shape=(rows, cols)))  # fmt: skip
        ops = ComplexOperators.from_incidence(mats[0], mats[1] if n2 else None)
        x = torch.from_numpy(a["x_1"][ends[1][s] : ends[1][s + 1]]).view(-1, 1)
        samples.append(ComplexData.from_complex(ops, x_1=x, y=torch.tensor([int(a["y"][s])])))
    return InMemoryDataset.collate(samples)


@pytest.mark.parametrize("file", ["path", "triangles"])
def test_the_collated_storage_is_that_of_the_samples_read_one_by_one(written, file, tmp_path):
    data, slices = _collated_one_by_one(written[file])
    ds = EdgeFlows(str(tmp_path), file=written[file], log=False)
    assert sorted(ds._data.keys()) == sorted(data.keys())
    for key in data.keys():
        got, want = ds._data[key], data[key]
        assert torch.equal(got, want) if torch.is_tensor(want) else got == want, key
        assert got.dtype == want.dtype if torch.is_tensor(want) else True, key
    assert sorted(ds.slices) == sorted(slices)
    for key, cut in slices.items():
        assert torch.equal(ds.slices[key], cut), key
    assert ds._data._store._num_nodes == data._store._num_nodes


def test_an_invalid_sample_is_named_with_its_own_error(written, tmp_path):
    # sample 7 of 12 gets a 2-cell whose boundary does not close: the vectorised check names
    # it, with the message ComplexOperators.from_incidence gives for that sample alone
    with np.load(written["triangles"]) as f:
        a = dict(f)
    ends2 = np.concatenate([[0], np.cumsum(a["cell_counts"][:, 2])])
    entry = int(np.flatnonzero(a["incidence_2_index"][1] == ends2[7])[0])
    a["incidence_2_value"][entry] *= -1
    np.savez(tmp_path / "bad.npz", **a)
    with pytest.raises(ValueError) as info:
        read_file(tmp_path / "bad.npz")
    message = str(info.value)
    assert message.startswith(f"'{tmp_path / 'bad.npz'}', sample 7 (row 7 of cell_counts): ")
    with pytest.raises(ValueError) as alone:
        _collated_one_by_one(tmp_path / "bad.npz")
    assert message.endswith(str(alone.value))


def test_the_writer_refuses_what_it_cannot_store(written, tmp_path):
    samples = written["samples"]
    unlabelled = samples[0].clone()
    del unlabelled.y
    write = EdgeFlows.write_npz
    with pytest.raises(ValueError, match="`y` on some samples only"):
        write(tmp_path / "x.npz", [samples[1], unlabelled])
    with pytest.raises(TypeError, match=r"`complex`\[0\] must be a ComplexData"):
        write(tmp_path / "x.npz", [object()])
    with pytest.raises(ValueError, match="`complex` is empty"):
        write(tmp_path / "x.npz", [])
    with pytest.raises(TypeError, match=r"`complex` is a Batch of many samples; expected a list "
                       r".*: pass batch\.to_data_list\(\)"):  # fmt: skip
        write(tmp_path / "x.npz", Batch.from_data_list(samples[:3]))
    with pytest.raises(TypeError, match=r"`complex` is one ComplexData sample; .*pass \[sample\]"):
        write(tmp_path / "x.npz", samples[0])
    with pytest.raises(TypeError, match=r"`complex` must be a ComplexOperators .* or a list"):
        write(tmp_path / "x.npz", samples, np.ones(3))
    shared = ComplexData.on_shared_complex(samples[0].complex(), x_1=samples[0].x_1)
    with pytest.raises(ValueError, match=r"`samples`\[0\] lies on the shared complex"):
        EdgeFlows.from_samples(str(tmp_path / "ds"), [shared])
    assert not (tmp_path / "x.npz").exists() and not (tmp_path / "ds").exists()


# ---------------------------------------------------------------------------- one layout
def _two_blocks():
    """A triangle with its 2-cell and a square with its own, in one file's arrays."""
    tri = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
    square = ComplexOperators.from_cells([[0, 1], [1, 2], [2, 3], [0, 3]], [[0, 1, 2, 3]])
    return tri, square


def test_a_one_complex_file_is_the_format_with_one_block(tmp_path):
    tri, _ = _two_blocks()
    flows = np.arange(12.0).reshape(4, 3)
    EdgeFlows.write_npz(tmp_path / "one.npz", tri, flows, labels=[0, 1, 0, 1])
    with np.load(tmp_path / "one.npz") as f:
        assert f["cell_counts"].tolist() == [[3, 3, 1]] and f["x_1"].shape == (4, 3)
        assert str(f["format"]) == "topo_contrastive.complex_data" and int(f["version"]) == 2
        assert "sample_block" not in f and "flows" not in f
    ds = EdgeFlows(str(tmp_path / "ds"), file=tmp_path / "one.npz", log=False)
    assert (ds.complex.B1 != tri.B1).nnz == 0 and (ds.complex.B2 != tri.B2).nnz == 0
    assert ds[2].is_shared and ds[2].x_1.view(-1).tolist() == [6.0, 7.0, 8.0]
    # the flows are stored once, as one [S * N1, 1] tensor, not per sample
    assert ds._data.x_1.shape == (12, 1) and torch.equal(ds._data.x_1.view(4, 3),
                                                         torch.from_numpy(flows).float())
    # the same file by hand: x_1 flat, no format
    c1, c2 = tri.B1.tocoo(), tri.B2.tocoo()
    np.savez(tmp_path / "hand.npz", cell_counts=[[3, 3, 1]],
             incidence_1_index=np.stack([c1.row, c1.col]), incidence_1_value=c1.data,
             incidence_2_index=np.stack([c2.row, c2.col]), incidence_2_value=c2.data,
             x_1=flows.ravel(), y=[0, 1, 0, 1])  # fmt: skip
    hand = EdgeFlows(str(tmp_path / "hand"), file=tmp_path / "hand.npz", log=False)
    assert torch.equal(hand._data.x_1, ds._data.x_1) and torch.equal(hand.labels, ds.labels)


def test_the_weights_give_the_weighted_complex_and_go_with_each_sample(tmp_path):
    """A weighted complex's Hodge stars are written and give it back (the same fingerprint,
    so the same operators); ``edge_weights`` alone weights W1; on many complexes every sample
    carries its block's weights."""
    tri, square = _two_blocks()
    weighted = tri.with_weights(node=[1.0, 2.0, 4.0], edge=[0.5, 1.5, 3.0], cell=[2.0])
    EdgeFlows.write_npz(tmp_path / "w.npz", weighted, np.ones((2, 3)))
    ds = EdgeFlows(str(tmp_path / "w"), file=tmp_path / "w.npz", log=False)
    assert ds.complex.fingerprint() == weighted.fingerprint() != tri.fingerprint()
    assert ds.edge_weights.tolist() == [0.5, 1.5, 3.0]
    edge = EdgeFlows.from_incidence(str(tmp_path / "e"), tri.B1, tri.B2, np.ones((2, 3)),
                                    edge_weights=[0.5, 1.5, 3.0], log=False)  # fmt: skip
    assert edge.complex.hodge_star(1).tolist() == [0.5, 1.5, 3.0]
    assert edge.complex.hodge_star(0).tolist() == [1.0] * 3
    unit = EdgeFlows.from_incidence(str(tmp_path / "u"), tri.B1, tri.B2, np.ones((2, 3)),
                                    log=False)  # fmt: skip
    assert unit.complex.metric == "unweighted" and unit.edge_weights is None
    samples = [ComplexData.from_complex(ops, x_1=torch.ones(ops.num_edges, 1))
               for ops in (tri, square)]  # fmt: skip
    EdgeFlows.write_npz(tmp_path / "m.npz", samples, edge_weights=np.arange(1.0, 8.0))
    many = EdgeFlows(str(tmp_path / "m"), file=tmp_path / "m.npz", log=False)
    assert many[1].edge_weights.tolist() == [4.0, 5.0, 6.0, 7.0] and many.complex is None
    with pytest.raises(ValueError, match=r"`edge_weights` must be a real array of shape \[N1\]"):
        EdgeFlows.write_npz(tmp_path / "x.npz", samples, edge_weights=np.ones(3))


def test_samples_of_one_complex_among_many_are_stored_once_in_the_file(tmp_path):
    """``sample_block``: five samples on two complexes; each sample gets its complex."""
    tri, square = _two_blocks()
    block = np.array([1, 0, 1, 1, 0])
    paths = [[0, 1, 2, 3], [0, 1, 2], [3, 2], [1, 0, 3], [2, 0]]
    a = ComplexData.from_complex(tri, x_1=torch.zeros(3, 1))
    b = ComplexData.from_complex(square, x_1=torch.zeros(4, 1))
    batch = Batch.from_data_list([a, b])  # the two complexes, block-diagonal
    np.savez(tmp_path / "mixed.npz", cell_counts=batch.cell_counts.numpy(),
             **{k: batch[k].numpy() for k in ("incidence_1_index", "incidence_1_value",
                                              "incidence_2_index", "incidence_2_value")},
             sample_block=block, path_nodes=np.concatenate(paths),
             path_ptr=np.cumsum([0] + [len(p) for p in paths]), y=np.arange(5) % 2,
             pos=np.arange(14.0).reshape(7, 2), edge_weights=np.arange(1.0, 8.0))  # fmt: skip
    ds = EdgeFlows(str(tmp_path / "ds"), file=tmp_path / "mixed.npz", log=False)
    assert ds.complex is None and len(ds) == 5
    ops = (tri, square)
    for i, (k, p) in enumerate(zip(block, paths, strict=True)):
        got = ds[i]
        assert (got.complex().B1 != ops[k].B1).nnz == 0 and (got.complex().B2 != ops[k].B2).nnz == 0
        assert torch.equal(got.x_1.view(-1), ops[k].path_to_flow(p)) and torch.equal(ds.path(i),
                                                                                     torch.tensor(p))
        assert got.pos.tolist() == ([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]] if k == 0 else
                                    np.arange(6.0, 14.0).reshape(4, 2).tolist())  # fmt: skip
        assert got.edge_weights.tolist() == ([1.0, 2.0, 3.0] if k == 0 else [4.0, 5.0, 6.0, 7.0])
    # written back: the two complexes once, the samples by their block
    again = tmp_path / "again.npz"
    EdgeFlows.write_npz(again, list(ds))
    with np.load(again) as f:
        assert f["cell_counts"].shape == (5, 3)  # from samples: one complex per sample
    content = read_file(tmp_path / "mixed.npz")
    from topo_contrastive.datasets._file import write_file

    write_file(again, content)
    with np.load(again) as f:
        assert f["cell_counts"].tolist() == [[3, 3, 1], [4, 4, 1]] and f["sample_block"].tolist() == block.tolist()
    with pytest.raises(ValueError, match=r"key 'sample_block' .* blocks in \[0, 2\)"):
        read_file(_rewrite(tmp_path / "mixed.npz", tmp_path / "b.npz", sample_block=block + 1))


def _old_one_complex_arrays(ops, rng):
    """The arrays of a file of the earlier one-complex layout, as its writer stored them."""
    c1, c2 = ops.B1.tocoo(), ops.B2.tocoo()
    s = 6
    paths = [[0, 1, 2], [2, 1], [1, 2, 0], [0, 2], [2, 0, 1], [1, 0]]
    return paths, {
        "format": np.array("topo_contrastive.edge_flows"), "version": np.array(1),
        "B1_index": np.stack([c1.row, c1.col]).astype(np.int64), "B1_value": c1.data.astype(np.int8),
        "B1_shape": np.array(c1.shape), "B2_index": np.stack([c2.row, c2.col]).astype(np.int64),
        "B2_value": c2.data.astype(np.int8), "B2_shape": np.array(c2.shape),
        "flows": rng.standard_normal((s, ops.num_edges)), "labels": np.arange(s) % 2,
        "path_nodes": np.concatenate(paths), "path_ptr": np.cumsum([0] + [len(p) for p in paths]),
        "pos": rng.random((ops.num_nodes, 2)), "train_mask": np.arange(s) < 4,
        "val_mask": np.arange(s) == 4, "test_mask": np.arange(s) == 5,
        "sample_ids": np.array([f"t{i}" for i in range(s)]), "edge_weights": rng.random(ops.num_edges) + 0.5,
    }  # fmt: skip


def _same_dataset(a, b):
    assert len(a) == len(b) and sorted(a._data.keys()) == sorted(b._data.keys())
    for key in a._data.keys():
        x, y = a._data[key], b._data[key]
        assert torch.equal(x, y) if torch.is_tensor(x) else x == y, key
    for key in ("train_mask", "val_mask", "test_mask", "labels"):
        assert torch.equal(getattr(a, key), getattr(b, key)), key
    assert a.sample_ids == b.sample_ids and [p.tolist() for p in a.paths()] == [p.tolist() for p in b.paths()]
    for key in ("pos", "edge_weights"):
        x, y = getattr(a, key), getattr(b, key)
        assert (x is None and y is None) or torch.equal(x, y), key
    if a.complex is not None:
        assert (a.complex.B1 != b.complex.B1).nnz == 0 and (a.complex.B2 != b.complex.B2).nnz == 0
    assert all(torch.equal(a.split(s)["test"], b.split(s)["test"]) for s in (1, 2))


def test_files_of_the_earlier_layouts_read_as_before(written, tmp_path):
    """A one-complex file and a many-complex file as the earlier writers stored them (plain
    np.savez) give the datasets of the same content in the current layout."""
    tri, _ = _two_blocks()
    paths, old = _old_one_complex_arrays(tri, np.random.default_rng(0))
    np.savez(tmp_path / "old_one.npz", **old)
    EdgeFlows.write_npz(tmp_path / "new_one.npz", tri, old["flows"], paths=paths,
                        labels=old["labels"], pos=old["pos"], sample_ids=old["sample_ids"],
                        edge_weights=old["edge_weights"],
                        masks={s: old[f"{s}_mask"] for s in ("train", "val", "test")})  # fmt: skip
    a = EdgeFlows(str(tmp_path / "a"), file=tmp_path / "old_one.npz", log=False)
    _same_dataset(a, EdgeFlows(str(tmp_path / "b"), file=tmp_path / "new_one.npz", log=False))
    assert a.edge_weights.tolist() == old["edge_weights"].tolist() and a.sample_ids[1] == "t1"
    # the many-complex layout of version 1: one sample per complex, x_1 flat
    with np.load(written["path"]) as f:
        arrays = {k: f[k] for k in f if k not in ("format", "version")}
    np.savez(tmp_path / "old_many.npz", format=np.array("topo_contrastive.complex_data"),
             version=np.array(1), **arrays)  # fmt: skip
    _same_dataset(EdgeFlows(str(tmp_path / "c"), file=tmp_path / "old_many.npz", log=False),
                  EdgeFlows(str(tmp_path / "d"), file=written["path"], log=False))
