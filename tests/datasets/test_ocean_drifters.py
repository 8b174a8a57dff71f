import os
import shutil
import urllib.error
import warnings

import h5py
import numpy as np
import pytest
import torch

import topo_contrastive.datasets._ocean_source as source
import topo_contrastive.datasets.ocean_drifters as od
from topo_contrastive._utils.files import sha256_of
from topo_contrastive.datasets import OceanDrifters

SHA = "4b312f54fb451d989629b5330cd4633c61f23dc90ea7e1bff6e6fb00a3ed5caa"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """No test of this module may reach the network: a download attempt fails loudly."""

    def offline(url, folder, log=True, filename=None):
        raise AssertionError(f"a download was attempted: {url}")

    monkeypatch.setattr(od, "download_url", offline)


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    """The shipped task: no raw file, no network."""
    return OceanDrifters(str(tmp_path_factory.mktemp("ocean")), log=False)


def plain_loop_reference(path):
    """A task rebuilt with plain loops straight from PROVENANCE.md §2 (any file of the layout)."""
    with h5py.File(path, "r") as f:
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


def assert_matches_reference(ds, reference):
    edges = [tuple(e) for e in ds.edges.tolist()]
    assert sorted(reference["edge_index"]) == edges  # same edge set, sorted order
    assert [p.tolist() for p in ds.paths()] == reference["paths"]
    assert ds._data.y.tolist() == reference["labels"]
    n1 = len(edges)
    col = {e: k for k, e in enumerate(edges)}
    for i, flow in enumerate(reference["flows"]):
        expected = np.zeros(n1)
        for key, value in flow.items():
            expected[col[key]] = value
        np.testing.assert_array_equal(ds[i].x_1[:, 0].numpy(), expected)


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


def test_raw_reader_matches_plain_loops(ocean_root, fake_ocean):
    """The raw-file reader (a small file in the original layout, written by the test) against
    the procedure written as plain loops: edges, paths (back-and-forth steps removed, short
    paths dropped, closed paths cut), labels and flows."""
    built = OceanDrifters(str(ocean_root), log=False)
    reference = plain_loop_reference(fake_ocean["path"])
    assert len(built) == 200 and len(fake_ocean["content"]["walks"]) > 200
    assert_matches_reference(built, reference)
    assert [0, 1, 7, 13, 12, 6] in reference["paths"]  # the closed walk, its last node cut
    assert built.complex.num_triangles == len(fake_ocean["content"]["triangles"])


def test_shipped_flows_accumulate(ds):
    # flows accumulate: some edge is traversed twice in the same direction
    assert ds._data.x_1.abs().max() >= 2
    for i, p in enumerate(ds.paths()[:20]):
        expected = ds.complex.path_to_flow(p.tolist())
        np.testing.assert_array_equal(ds[i].x_1[:, 0].numpy(), expected.numpy())


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


def test_root_holding_the_file_directly(tmp_path, trust_fake):
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copyfile(trust_fake["path"], folder / "dataBuoys.jld2")
    with pytest.raises(ValueError, match="processed_dir"):
        OceanDrifters(str(folder), log=False)
    ds = OceanDrifters(str(folder), processed_dir=str(tmp_path / "cache"), log=False)
    assert len(ds) == 200 and ds.raw_dir == str(folder)
    assert ds.complex.num_edges == len(trust_fake["content"]["edges"])  # built from the file
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
    with pytest.raises(TypeError, match="download"):
        OceanDrifters(str(ocean_root), download="yes")


def assert_nothing_processed(root):
    folder = root / "processed"
    assert not folder.exists() or os.listdir(folder) == []


def test_corrupted_raw_file(ocean_root, trust_fake):
    raw = ocean_root / "raw" / "dataBuoys.jld2"
    data = bytearray(raw.read_bytes())
    data[100_000] ^= 0xFF
    raw.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupted") as info:
        OceanDrifters(str(ocean_root), log=False)
    msg = str(info.value)
    assert trust_fake["sha256"] in msg and str(raw) in msg
    assert_nothing_processed(ocean_root)


def test_truncated_raw_file(ocean_root, trust_fake):
    raw = ocean_root / "raw" / "dataBuoys.jld2"
    raw.write_bytes(raw.read_bytes()[: trust_fake["size"] // 2])
    with pytest.raises(ValueError, match="truncated") as info:
        OceanDrifters(str(ocean_root), log=False)
    assert trust_fake["sha256"] in str(info.value) and str(raw) in str(info.value)
    assert_nothing_processed(ocean_root)


@pytest.mark.parametrize("longer", [False, True])
def test_non_hdf5_raw_file(ocean_root, trust_fake, longer):
    raw = ocean_root / "raw" / "dataBuoys.jld2"
    size = trust_fake["size"] + 10 if longer else 20
    raw.write_text(("not an hdf5 file\n" * size)[:size])
    match = "not an HDF5" if longer else "truncated"
    with pytest.raises(ValueError, match=match) as info:
        OceanDrifters(str(ocean_root), log=False)
    assert trust_fake["sha256"] in str(info.value) and str(raw) in str(info.value)
    assert_nothing_processed(ocean_root)


def test_raw_file_with_the_original_sha256_is_required(tmp_path, fake_ocean):
    """Without trusting the fake, a raw file in the right layout is still refused: only the
    original file (its published sha256) builds the task."""
    (tmp_path / "raw").mkdir()
    shutil.copyfile(fake_ocean["path"], tmp_path / "raw" / "dataBuoys.jld2")
    with pytest.raises(ValueError, match=f"expected {SHA}"):
        OceanDrifters(str(tmp_path), log=False)
    assert_nothing_processed(tmp_path)


def test_read_raw_errors(tmp_path, fake_ocean):
    text = tmp_path / "text.jld2"
    text.write_text("not hdf5")
    with pytest.raises(ValueError, match="not an HDF5/JLD2 file") as info:
        source.read_raw(text)
    assert str(text) in str(info.value)
    partial = tmp_path / "partial.jld2"
    with h5py.File(partial, "w", userblock_size=512) as f:
        f["elist"] = np.array([[1], [2]])
    with pytest.raises(ValueError, match="no tlist, HexcentersXY, TrajectoriesNodes"):
        source.read_raw(partial)


def test_nothing_is_downloaded_by_default(tmp_path):
    """With no raw file the shipped task is used; ``download_url`` (an error here, see the
    autouse fixture) is never called."""
    built = OceanDrifters(str(tmp_path), log=False)
    assert len(built) == 200
    assert not (tmp_path / "raw" / "dataBuoys.jld2").exists()


def test_explicit_download_without_network(tmp_path, monkeypatch):
    def offline(url, folder, log=True, filename=None):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(od, "download_url", offline)
    with pytest.raises(FileNotFoundError, match="could not be downloaded") as info:
        OceanDrifters(str(tmp_path), log=False, download=True)
    msg = str(info.value)
    assert os.path.join(str(tmp_path), "raw", "dataBuoys.jld2") in msg and OceanDrifters.url in msg
    assert os.listdir(tmp_path / "raw") == []  # no temporary download folder left
    assert_nothing_processed(tmp_path)


def test_explicit_download(tmp_path, monkeypatch, trust_fake):
    seen = []

    def fake(url, folder, log=True, filename=None):
        seen.append(url)
        path = os.path.join(folder, filename)
        shutil.copyfile(trust_fake["path"], path)
        return path

    monkeypatch.setattr(od, "download_url", fake)
    ds = OceanDrifters(str(tmp_path), log=False, download=True)
    assert seen == [OceanDrifters.url] and len(ds) == 200
    assert os.listdir(tmp_path / "raw") == ["dataBuoys.jld2"]
    assert sha256_of(str(tmp_path / "raw" / "dataBuoys.jld2")) == trust_fake["sha256"]

    # with the processed file present, a missing raw file is neither needed nor fetched
    os.remove(tmp_path / "raw" / "dataBuoys.jld2")
    monkeypatch.setattr(od, "download_url", None)
    again = OceanDrifters(str(tmp_path), log=False, download=True)
    assert torch.equal(again._data.y, ds._data.y)


def test_download_of_a_bad_file(tmp_path, monkeypatch):
    def fake(url, folder, log=True, filename=None):
        path = os.path.join(folder, filename)
        with open(path, "w") as f:
            f.write("<html>rate limited</html>")
        return path

    monkeypatch.setattr(od, "download_url", fake)
    with pytest.raises(ValueError, match="sha256"):
        OceanDrifters(str(tmp_path), log=False, download=True)
    assert os.listdir(tmp_path / "raw") == []


def corrupted_copy(tmp_path, offset):
    copy = tmp_path / "ocean_drifters.npz"
    data = bytearray(source.SHIPPED_FILE.read_bytes())
    data[offset] ^= 0x01
    copy.write_bytes(bytes(data))
    return copy


@pytest.mark.parametrize("offset", [0, 100, -30])
def test_corrupted_shipped_file(tmp_path, monkeypatch, offset):
    copy = corrupted_copy(tmp_path, offset)
    with pytest.raises(ValueError, match="is corrupted: its sha256 is") as info:
        source.load_shipped(copy)
    assert str(copy) in str(info.value) and source.SHIPPED_SHA256 in str(info.value)
    monkeypatch.setattr(source, "SHIPPED_FILE", copy)
    root = tmp_path / "root"
    with pytest.raises(ValueError, match="reinstall the package"):
        OceanDrifters(str(root), log=False)
    assert_nothing_processed(root)


def test_missing_shipped_file(tmp_path):
    with pytest.raises(ValueError, match="is missing: the installation"):
        source.load_shipped(tmp_path / "absent.npz")


def test_shipped_file_is_compact_and_documented():
    assert source.SHIPPED_FILE.stat().st_size < 100_000
    provenance = source.SHIPPED_FILE.with_name("ocean_drifters.PROVENANCE.md").read_text()
    for fact in (SHA, source.SHIPPED_SHA256, "Copyright (c) 2021 Nicholas Glaze", "MIT",
                 "35cf6bfa75eaf3cae5635729ccdf15d17a6177c7", "nglaze00/SCoNe_GCN"):  # fmt: skip
        assert fact in provenance


def test_failure_leaves_no_processed_file(tmp_path, monkeypatch):
    def pre(data):
        raise RuntimeError("pre_transform failed")

    with pytest.raises(RuntimeError, match="pre_transform failed"):
        OceanDrifters(str(tmp_path), pre_transform=pre, log=False)
    assert_nothing_processed(tmp_path)

    def partial_save(obj, f):  # f: the open temporary file atomic_torch_save writes to
        f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", partial_save)  # atomic_torch_save calls it
    with pytest.raises(OSError, match="disk full"):
        OceanDrifters(str(tmp_path), log=False)
    assert_nothing_processed(tmp_path)


def test_unreadable_processed_file(tmp_path):
    folder = tmp_path / "processed"
    folder.mkdir()
    (folder / "ocean_drifters.pt").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="force_reload"):
        OceanDrifters(str(tmp_path), log=False)
    ds = OceanDrifters(str(tmp_path), force_reload=True, log=False)
    assert len(ds) == 200


@pytest.mark.raw_data
def test_original_file_gives_the_shipped_task(original_ocean_file, tmp_path):
    """The original dataBuoys.jld2 gives exactly the shipped arrays, and the dataset built from
    it equals the shipped one and the procedure written as plain loops."""
    assert sha256_of(str(original_ocean_file)) == SHA
    assert source.read_raw(original_ocean_file).equals(source.load_shipped())
    (tmp_path / "raw").mkdir()
    shutil.copyfile(original_ocean_file, tmp_path / "raw" / "dataBuoys.jld2")
    from_raw = OceanDrifters(str(tmp_path), log=False)
    shipped = OceanDrifters(str(tmp_path / "shipped"), log=False)
    assert torch.equal(from_raw._data.x_1, shipped._data.x_1)
    assert torch.equal(from_raw._data.y, shipped._data.y)
    assert torch.equal(from_raw.edges, shipped.edges)
    assert all(torch.equal(from_raw.split()[k], shipped.split()[k]) for k in ("train", "test"))
    assert_matches_reference(from_raw, plain_loop_reference(original_ocean_file))
