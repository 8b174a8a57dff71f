# ruff: noqa: E501  (the case table keeps one case per line)
"""The many-complex ``.npz`` file: written and read back sample by sample, bad files refused
naming the file and the key."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Batch

from tests._many_complexes import many_complexes
from topo_contrastive.datasets import (
    EdgeFlows,
    ManyComplexFlows,
    read_many_complexes,
    write_many_complexes,
)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """12 samples (Delaunay simplicial complexes and planar cell complexes) and their file;
    a file of 12 simplicial complexes only (every 2-cell a triangle: 3 entries each)."""
    root = tmp_path_factory.mktemp("many_file")
    samples = many_complexes(12, seed=1, cells=True)
    path = root / "many.npz"
    write_many_complexes(path, samples, sample_ids=[f"net-{i}" for i in range(12)])
    tri = root / "triangles.npz"
    write_many_complexes(tri, many_complexes(12, seed=2))
    return {"samples": samples, "path": path, "triangles": tri, "root": root}


def test_each_sample_read_back_equals_the_one_written(written):
    content = read_many_complexes(written["path"])
    assert len(content["samples"]) == 12
    assert content["labels"].tolist() == [i % 2 for i in range(12)]
    assert content["sample_ids"].tolist() == [f"net-{i}" for i in range(12)]
    for given, read in zip(written["samples"], content["samples"], strict=True):
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


def test_the_dataset_batches_as_the_samples(written):
    ds = ManyComplexFlows(written["path"])
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
    ("missing-flows", {"x_1": None}, r"lacks the key\(s\) \['x_1'\]"),
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
        read_many_complexes(path)
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
def test_the_collated_storage_is_that_of_the_samples_read_one_by_one(written, file):
    data, slices = _collated_one_by_one(written[file])
    ds = ManyComplexFlows(written[file])
    assert sorted(ds._data.keys()) == sorted(data.keys())
    for key in data.keys():
        got, want = ds._data[key], data[key]
        assert torch.equal(got, want) if torch.is_tensor(want) else got == want, key
        assert got.dtype == want.dtype if torch.is_tensor(want) else True, key
    assert sorted(ds.slices) == sorted(slices)
    for key, cut in slices.items():
        assert torch.equal(ds.slices[key], cut), key
    assert ds._data._store._num_nodes == data._store._num_nodes
    samples = read_many_complexes(written[file])["samples"]
    for i in (0, 5, 11):
        for key in data.keys():
            assert torch.equal(samples[i][key], ds[i][key]) if key != "num_nodes" else True


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
        read_many_complexes(tmp_path / "bad.npz")
    message = str(info.value)
    assert message.startswith(f"'{tmp_path / 'bad.npz'}', sample 7 (row 7 of cell_counts): ")
    with pytest.raises(ValueError) as alone:
        _collated_one_by_one(tmp_path / "bad.npz")
    assert message.endswith(str(alone.value))


def test_the_one_complex_reader_names_the_layout(written, tmp_path):
    with pytest.raises(ValueError, match="holds many complexes .*key 'cell_counts'"):
        EdgeFlows(str(tmp_path / "ef"), file=str(written["path"]), log=False)


def test_the_writer_refuses_what_it_cannot_store(written, tmp_path):
    samples = written["samples"]
    unlabelled = samples[0].clone()
    del unlabelled.y
    with pytest.raises(ValueError, match="labels `y` on some samples only"):
        write_many_complexes(tmp_path / "x.npz", [samples[1], unlabelled])
    with pytest.raises(TypeError, match=r"`samples`\[0\] must be a ComplexData"):
        write_many_complexes(tmp_path / "x.npz", [object()])
    with pytest.raises(ValueError, match="`samples` is empty"):
        write_many_complexes(tmp_path / "x.npz", [])
    with pytest.raises(TypeError, match=r"`samples` is a Batch of many samples; expected a list "
                       r".*: pass batch\.to_data_list\(\)"):  # fmt: skip
        write_many_complexes(tmp_path / "x.npz", Batch.from_data_list(samples[:3]))
    with pytest.raises(TypeError, match=r"`samples` is one ComplexData sample; .*pass \[sample\]"):
        write_many_complexes(tmp_path / "x.npz", samples[0])
    assert not (tmp_path / "x.npz").exists()
