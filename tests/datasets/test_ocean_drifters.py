import os
import shutil
import urllib.error
import warnings

import h5py
import numpy as np
import pytest
import torch

import topo_contrastive.datasets._base as base
import topo_contrastive.datasets.ocean_drifters as od
from topo_contrastive.datasets import OceanDrifters

SHA = "4b312f54fb451d989629b5330cd4633c61f23dc90ea7e1bff6e6fb00a3ed5caa"


@pytest.fixture(scope="module")
def ds(tmp_path_factory, ocean_file):
    root = tmp_path_factory.mktemp("ocean")
    (root / "raw").mkdir()
    shutil.copyfile(ocean_file, root / "raw" / "dataBuoys.jld2")
    return OceanDrifters(str(root), log=False)


@pytest.fixture(scope="module")
def reference(ocean_file):
    """The task rebuilt with plain loops straight from PROVENANCE.md §2."""
    with h5py.File(ocean_file, "r") as f:
        elist = f["elist"][()]
        hexes = f["HexcentersXY"][()]
        trajectories = []
        for ref in f["TrajectoriesNodes"][()]:
            trajectories.append([int(f[r][()]) - 1 for r in f[ref][()]])
    edge_index = {}
    for k in range(elist.shape[1]):
        edge_index[(int(elist[0, k]) - 1, int(elist[1, k]) - 1)] = k
    paths = []
    for t in trajectories:
        p = []
        for node in t:
            if len(p) >= 2 and p[-2] == node:
                p.pop()
            else:
                p.append(node)
        if len(p) >= 5:
            if p[0] == p[-1]:
                p = p[:-1]
            paths.append(p)
    xs = [h[0] for h in hexes]
    ys = [h[1] for h in hexes]
    c = (sum(xs) / len(xs) - 0.03, sum(ys) / len(ys))
    labels, flows = [], []
    for p in paths:
        p2, p3 = (xs[p[0]], ys[p[0]]), (xs[p[-1]], ys[p[-1]])
        v = (p2[1] - c[1]) * (p3[0] - p2[0]) - (p2[0] - c[0]) * (p3[1] - p2[1])
        labels.append(0 if v > 0 else 1)
        flow = {}
        for a, b in zip(p[:-1], p[1:], strict=True):
            key, sign = ((a, b), 1) if a < b else ((b, a), -1)
            flow[key] = flow.get(key, 0) + sign
        flows.append(flow)
    return {"edge_index": edge_index, "paths": paths, "labels": labels, "flows": flows}


def test_sizes(ds):
    ops = ds.complex
    assert (ops.num_nodes, ops.num_edges, ops.num_triangles) == (133, 320, 186)
    assert len(ds) == 200
    d = ds[0]
    assert d.x_1.shape == (320, 1) and d.x_1.dtype == torch.float32
    assert d.y.shape == (1,) and d.y.dtype == torch.long
    assert torch.bincount(ds._data.y).tolist() == [110, 90]
    assert ds.pos.shape == (133, 2) and ds.pos.dtype == torch.float64
    assert len(ds.paths()) == 200


def test_harmonic_dimension(ds):
    b1, b2 = ds.complex.B1.toarray(), ds.complex.B2.toarray()
    np.testing.assert_array_equal(b1 @ b2, 0)
    assert 320 - np.linalg.matrix_rank(b1) - np.linalg.matrix_rank(b2) == 2


def test_matches_reference_construction(ds, reference):
    edges = [tuple(e) for e in ds.edges.tolist()]
    assert sorted(reference["edge_index"]) == edges  # same edge set, sorted order
    assert [p.tolist() for p in ds.paths()] == reference["paths"]
    assert ds._data.y.tolist() == reference["labels"]
    col = {e: k for k, e in enumerate(edges)}
    for i, flow in enumerate(reference["flows"]):
        expected = np.zeros(320)
        for key, value in flow.items():
            expected[col[key]] = value
        np.testing.assert_array_equal(ds[i].x_1[:, 0].numpy(), expected)
    # flows accumulate: some edge is traversed twice in the same direction
    assert ds._data.x_1.abs().max() >= 2


def test_divergence_only_at_end_nodes(ds):
    x = ds._data.x_1.view(200, 320).double()
    div = ds.complex.divergence(x).numpy()  # [200, 133]
    for i, p in enumerate(ds.paths()):
        expected = np.zeros(133)
        expected[int(p[0])] -= 1
        expected[int(p[-1])] += 1
        np.testing.assert_array_equal(div[i], expected)
        assert np.count_nonzero(div[i]) <= 2


def test_standard_split(ds):
    # PROVENANCE step 5 with numpy's legacy global RNG, as published
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(1)  # noqa: NPY002
        mask = np.array([1] * 160 + [0] * 40)
        np.random.shuffle(mask)  # noqa: NPY002
    finally:
        np.random.set_state(state)  # noqa: NPY002
    assert ds.train_mask.tolist() == (mask == 1).tolist()
    assert ds.test_mask.tolist() == (mask == 0).tolist()
    assert ds.val_mask.dtype == torch.bool and not ds.val_mask.any()
    assert (int(ds.train_mask.sum()), int(ds.test_mask.sum())) == (160, 40)


def test_resplit(ds):
    one = ds.split(1)
    assert all(torch.equal(one[s], getattr(ds, f"{s}_mask")) for s in one)
    a, b = ds.split(7), ds.split(7)
    assert all(torch.equal(a[s], b[s]) for s in a)
    assert not torch.equal(a["train"], ds.train_mask)
    assert int(a["train"].sum()) == 160 and int(a["test"].sum()) == 40 and not a["val"].any()
    assert torch.equal(a["train"], ~a["test"])
    before = np.random.get_state()  # noqa: NPY002
    ds.split(3)
    after = np.random.get_state()  # noqa: NPY002
    np.testing.assert_array_equal(after[1], before[1])  # the global RNG is untouched
    assert after[2] == before[2]


def test_processed_file_loads_weights_only(ds):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = torch.load(ds.processed_paths[0], weights_only=True)
    assert obj["train_mask"].sum() == 160


def test_root_holding_the_file_directly(tmp_path, ocean_file):
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copyfile(ocean_file, folder / "dataBuoys.jld2")
    with pytest.raises(ValueError, match="processed_dir"):
        OceanDrifters(str(folder), log=False)
    ds = OceanDrifters(str(folder), processed_dir=str(tmp_path / "cache"), log=False)
    assert len(ds) == 200 and ds.raw_dir == str(folder)
    assert sorted(os.listdir(folder)) == ["dataBuoys.jld2"]  # nothing written beside the data
    assert os.path.isfile(tmp_path / "cache" / "ocean_drifters.pt")


def test_processed_dir_not_writable(ocean_root):
    blocker = ocean_root / "a_file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="processed_dir"):
        OceanDrifters(str(ocean_root), processed_dir=str(blocker / "sub"), log=False)


def test_bad_argument_types(ocean_root):
    with pytest.raises(TypeError, match="root"):
        OceanDrifters(3)
    with pytest.raises(TypeError, match="processed_dir"):
        OceanDrifters(str(ocean_root), processed_dir=3)


def assert_nothing_processed(root):
    folder = root / "processed"
    assert not folder.exists() or os.listdir(folder) == []


def test_corrupted_file(ocean_root):
    raw = ocean_root / "raw" / "dataBuoys.jld2"
    data = bytearray(raw.read_bytes())
    data[100_000] ^= 0xFF
    raw.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupted") as info:
        OceanDrifters(str(ocean_root), log=False)
    msg = str(info.value)
    assert SHA in msg and os.path.join(str(ocean_root), "raw", "dataBuoys.jld2") in msg
    assert_nothing_processed(ocean_root)


def test_truncated_file(ocean_root):
    raw = ocean_root / "raw" / "dataBuoys.jld2"
    raw.write_bytes(raw.read_bytes()[:1_000_000])
    with pytest.raises(ValueError, match="truncated") as info:
        OceanDrifters(str(ocean_root), log=False)
    assert SHA in str(info.value) and "raw" in str(info.value)
    assert_nothing_processed(ocean_root)


@pytest.mark.parametrize("size", [20, 4_000_000])
def test_non_hdf5_file(ocean_root, size):
    raw = ocean_root / "raw" / "dataBuoys.jld2"
    raw.write_text(("not an hdf5 file\n" * size)[:size])
    match = "truncated" if size < 3_684_908 else "not an HDF5"
    with pytest.raises(ValueError, match=match) as info:
        OceanDrifters(str(ocean_root), log=False)
    assert SHA in str(info.value)
    assert_nothing_processed(ocean_root)


def test_no_file_and_no_network(tmp_path, monkeypatch):
    def offline(url, folder, log=True, filename=None):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(od, "download_url", offline)
    with pytest.raises(FileNotFoundError, match="could not be downloaded") as info:
        OceanDrifters(str(tmp_path), log=False)
    msg = str(info.value)
    assert os.path.join(str(tmp_path), "raw", "dataBuoys.jld2") in msg and OceanDrifters.url in msg
    assert os.listdir(tmp_path / "raw") == []  # no temporary download folder left
    assert_nothing_processed(tmp_path)


def test_download(tmp_path, monkeypatch, ocean_file):
    seen = []

    def fake(url, folder, log=True, filename=None):
        seen.append(url)
        path = os.path.join(folder, filename)
        shutil.copyfile(ocean_file, path)
        return path

    monkeypatch.setattr(od, "download_url", fake)
    ds = OceanDrifters(str(tmp_path), log=False)
    assert seen == [OceanDrifters.url] and len(ds) == 200
    assert os.listdir(tmp_path / "raw") == ["dataBuoys.jld2"]
    assert base.sha256_of(str(tmp_path / "raw" / "dataBuoys.jld2")) == SHA

    # with the processed file present, a missing raw file is neither needed nor fetched
    os.remove(tmp_path / "raw" / "dataBuoys.jld2")
    monkeypatch.setattr(od, "download_url", None)
    again = OceanDrifters(str(tmp_path), log=False)
    assert torch.equal(again._data.y, ds._data.y)


def test_download_of_a_bad_file(tmp_path, monkeypatch):
    def fake(url, folder, log=True, filename=None):
        path = os.path.join(folder, filename)
        with open(path, "w") as f:
            f.write("<html>rate limited</html>")
        return path

    monkeypatch.setattr(od, "download_url", fake)
    with pytest.raises(ValueError, match="sha256"):
        OceanDrifters(str(tmp_path), log=False)
    assert os.listdir(tmp_path / "raw") == []


def test_failure_leaves_no_processed_file(ocean_root, monkeypatch):
    def pre(data):
        raise RuntimeError("pre_transform failed")

    with pytest.raises(RuntimeError, match="pre_transform failed"):
        OceanDrifters(str(ocean_root), pre_transform=pre, log=False)
    assert_nothing_processed(ocean_root)

    def partial_save(obj, f):
        with open(f, "wb") as fh:
            fh.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(base.torch, "save", partial_save)
    with pytest.raises(OSError, match="disk full"):
        OceanDrifters(str(ocean_root), log=False)
    assert_nothing_processed(ocean_root)


def test_unreadable_processed_file(ocean_root):
    folder = ocean_root / "processed"
    folder.mkdir()
    (folder / "ocean_drifters.pt").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="force_reload"):
        OceanDrifters(str(ocean_root), log=False)
    ds = OceanDrifters(str(ocean_root), force_reload=True, log=False)
    assert len(ds) == 200
