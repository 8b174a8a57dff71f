import os
import warnings

import numpy as np
import pytest
import torch
from torch_geometric.loader import DataLoader

import topo_contrastive.datasets.synthetic_trajectories as st
from topo_contrastive.datasets import SyntheticTrajectories

BOXES = {
    "start": (0.0, 0.2, 0.8, 1.0),
    0: (0.0, 0.2, 0.0, 0.2),
    1: (0.8, 1.0, 0.8, 1.0),
    "end": (0.8, 1.0, 0.0, 0.2),
}


def inside(p, box):
    x0, x1, y0, y1 = box
    return x0 <= p[0] <= x1 and y0 <= p[1] <= y1


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return SyntheticTrajectories(str(tmp_path_factory.mktemp("traj")), seed=0, log=False)


def test_sizes_and_types(ds):
    assert len(ds) == 400
    n1 = ds.complex.num_edges
    assert 1000 <= n1 <= 1160  # "about 1,080 edges"
    for i in (0, 399):
        d = ds[i]
        assert set(d.keys()) == {"x_1", "y", "cell_counts", "shared_complex", "num_nodes"}
        assert d.cell_counts.tolist() == [[ds.complex.num_nodes, n1, ds.complex.num_triangles]]
        assert d.is_shared and d.num_nodes == ds.complex.num_nodes  # as on_shared_complex
        assert d.x_1.shape == (n1, 1) and d.x_1.dtype == torch.float32
        assert d.y.shape == (1,) and d.y.dtype == torch.long
    assert ds.pos.shape == (ds.complex.num_nodes, 2)
    assert ds.num_classes == 2
    # edges sorted and oriented low -> high, the order of x_1
    e = ds.edges.numpy()
    assert (e[:, 0] < e[:, 1]).all()
    assert (np.lexsort((e[:, 1], e[:, 0])) == np.arange(len(e))).all()
    np.testing.assert_array_equal(ds.complex.edges, e)


def test_standard_split_sizes_and_classes(ds):
    y = ds._data.y
    masks = [ds.train_mask, ds.val_mask, ds.test_mask]
    assert [int(m.sum()) for m in masks] == [200, 100, 100]
    assert all(m.dtype == torch.bool and m.shape == (400,) for m in masks)
    assert (sum(m.long() for m in masks) == 1).all()  # disjoint and covering
    # samples 0..199 train, 200..299 val, 300..399 test, each class-balanced
    assert ds.train_mask[:200].all() and ds.val_mask[200:300].all() and ds.test_mask[300:].all()
    for m, n in zip(masks, (200, 100, 100), strict=True):
        assert torch.bincount(y[m], minlength=2).tolist() == [n // 2, n - n // 2]


def test_odd_split_sizes_keep_both_classes(tmp_path):
    ds = SyntheticTrajectories(
        str(tmp_path), num_train=7, num_val=3, num_test=2, seed=5, log=False
    )
    y = ds._data.y
    for m, n in zip((ds.train_mask, ds.val_mask, ds.test_mask), (7, 3, 2), strict=True):
        assert torch.bincount(y[m], minlength=2).tolist() == [n // 2, n - n // 2]
    for seed in range(5):
        for m in ds.split(seed).values():
            assert set(y[m].tolist()) == {0, 1}


def naive_flow(path, edges):
    index = {(int(u), int(v)): k for k, (u, v) in enumerate(edges)}
    x = np.zeros(len(edges))
    for a, b in zip(path[:-1], path[1:], strict=True):
        if (a, b) in index:
            x[index[(a, b)]] += 1
        else:
            x[index[(b, a)]] -= 1
    return x


def test_flows_live_on_the_complex(ds):
    ops = ds.complex
    b1 = ops.B1.toarray()
    pos = ds.pos.numpy()
    x = torch.stack([ds[i].x_1[:, 0] for i in range(len(ds))]).double().numpy()  # [S, N1]
    div = x @ b1.T  # [S, N0]
    for i in range(len(ds)):
        p = ds.path(i).tolist()
        assert len(set(p)) == len(p)  # simple path
        expected = np.zeros(ops.num_nodes)
        expected[p[0]], expected[p[-1]] = -1.0, 1.0
        np.testing.assert_array_equal(div[i], expected)  # non-zero exactly at start and end
        np.testing.assert_array_equal(x[i], naive_flow(p, ops.edges))
        label = int(ds[i].y)
        assert inside(pos[p[0]], BOXES["start"]) and inside(pos[p[-1]], BOXES["end"])
        assert any(inside(pos[v], BOXES[label]) for v in p)


def published_walks(edges, pos, labels, rng):
    """The published procedure (Bodnar et al. 2021, cwn ``flow_utils.generate_trajectory``)
    written as a naive loop, with the library's random stream (one Generator; draws in the
    order start, checkpoint, end; neighbours in ascending id) and one documented deviation:
    reaching the end vertex before the checkpoint does not end the walk."""
    adj = {v: set() for v in range(len(pos))}
    for u, v in edges.tolist():
        adj[u].add(v)
        adj[v].add(u)

    def box(b):
        return [v for v in range(len(pos)) if inside(pos[v], b)]

    starts, ends = box(BOXES["start"]), box(BOXES["end"])
    checkpoints = [box(BOXES[0]), box(BOXES[1])]
    paths, restarts = [], 0
    for label in labels:
        while True:  # one attempt per pass; a stuck walk starts over with new draws
            start = starts[rng.integers(len(starts))]
            checkpoint = checkpoints[label][rng.integers(len(checkpoints[label]))]
            end = ends[rng.integers(len(ends))]
            vertex, path, explored, reached = start, [start], set(), False
            while not (vertex == end and reached):
                explored.add(vertex)
                if vertex == checkpoint:
                    reached = True
                free = sorted(n for n in adj[vertex] if n not in explored)
                if not free:
                    break  # stuck
                target = pos[end] if reached else pos[checkpoint]
                if rng.random() < 0.1:
                    vertex = free[rng.integers(len(free))]
                else:
                    vertex = min(free, key=lambda n: ((pos[n] - target) ** 2).sum())
                path.append(vertex)
            else:
                paths.append(path)
                break
            restarts += 1
    return paths, restarts


@pytest.mark.parametrize("seed", [0, 3])
def test_walks_follow_the_published_procedure(ds, seed):
    labels = np.tile([0, 1], 30)
    ops, pos = ds.complex, ds.pos.numpy()
    got = st.generate_trajectories(ops, pos, labels, seed)
    want, restarts = published_walks(ops.edges, pos, labels.tolist(), np.random.default_rng(seed))
    assert restarts > 0  # the restart rule is exercised
    assert got == want


def test_stuck_walk_restarts_with_new_draws(ds, monkeypatch):
    calls = []

    def walk(neighbours, pos, start, checkpoint, end, rng):
        calls.append((start, checkpoint, end))
        return None if len(calls) < 3 else [start, end]  # stuck twice, then done

    monkeypatch.setattr(st, "_walk", walk)
    pos = ds.pos.numpy()
    paths = st.generate_trajectories(ds.complex, pos, np.array([1]), 7)
    # every attempt draws start, checkpoint and end anew from the same stream
    rng = np.random.default_rng(7)
    regions = [np.flatnonzero([inside(p, BOXES[k]) for p in pos]) for k in ("start", 1, "end")]
    expected = [tuple(int(r[rng.integers(r.size)]) for r in regions) for _ in range(3)]
    assert calls == expected and len(set(calls)) == 3
    assert paths == [[calls[2][0], calls[2][2]]]


def test_walk_does_not_accept_end_before_checkpoint():
    # nodes on a line 0 - 1 - 2 - 3 - 4; start 0, end 2, checkpoint 4: the published loop
    # would return [0, 1, 2] (no checkpoint); here the end is used up and the walk gets stuck
    neighbours = [np.array(n) for n in ([1], [0, 2], [1, 3], [2, 4], [3])]
    pos = np.stack([np.arange(5.0), np.zeros(5)], axis=1)
    for seed in range(5):
        assert st._walk(neighbours, pos, 0, 4, 2, np.random.default_rng(seed)) is None
    assert st._walk(neighbours, pos, 0, 2, 4, np.random.default_rng(0)) == [0, 1, 2, 3, 4]


def test_complex_has_two_holes(ds):
    ops = ds.complex
    b1, b2 = ops.B1.toarray(), ops.B2.toarray()
    np.testing.assert_array_equal(b1 @ b2, 0)
    harmonic_dim = ops.num_edges - np.linalg.matrix_rank(b1) - np.linalg.matrix_rank(b2)
    assert harmonic_dim == 2
    pos = ds.pos.numpy()
    for lo, hi in ((0.2, 0.4), (0.6, 0.8)):
        assert not (((pos >= lo) & (pos <= hi)).all(axis=1)).any()  # no vertex in a hole
    assert ops.num_nodes == len(np.unique(ds.complex.triangles))  # no orphaned vertex


def test_generator_matches_its_description():
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(3)
    ops, pos = st.generate_trajectory_complex(400, rng)
    points = np.random.default_rng(3).uniform(-0.05, 1.05, size=(400, 2))
    in_hole = np.zeros(400, bool)
    for lo, hi in ((0.2, 0.4), (0.6, 0.8)):
        in_hole |= ((points >= lo) & (points <= hi)).all(axis=1)
    tri = Delaunay(points).simplices
    kept = tri[~in_hole[tri].any(axis=1)]
    in_kept = np.zeros(400, bool)
    in_kept[kept.ravel()] = True
    orphans = ~in_hole & ~in_kept
    assert orphans.sum() == 1  # this seed leaves one orphaned vertex, which is dropped
    # kept nodes: the points in a kept triangle, in drawing order
    np.testing.assert_array_equal(pos, points[in_kept])
    assert ops.num_triangles == len(kept)
    renumber = np.cumsum(in_kept) - 1
    expected = np.sort(renumber[kept], axis=1)
    expected = expected[np.lexsort(expected.T[::-1])]
    np.testing.assert_array_equal(ops.triangles, expected)
    # the published construction cuts the holes one after the other and renumbers after
    # each cut (cwn flow_utils.create_hole): same nodes, numbering and triangles
    pts, tris = points, tri
    for lo, hi in ((0.2, 0.4), (0.6, 0.8)):
        tris = tris[~((pts[tris] >= lo) & (pts[tris] <= hi)).all(axis=2).any(axis=1)]
        keep = np.isin(np.arange(len(pts)), tris)
        pts, tris = pts[keep], (np.cumsum(keep) - 1)[tris]
    np.testing.assert_array_equal(pos, pts)
    tris = np.sort(tris, axis=1)
    np.testing.assert_array_equal(ops.triangles, tris[np.lexsort(tris.T[::-1])])


def test_determinism_by_seed(ds, tmp_path):
    again = SyntheticTrajectories(str(tmp_path / "a"), seed=0, log=False)
    np.testing.assert_array_equal(again.edges, ds.edges)
    np.testing.assert_array_equal(again.pos, ds.pos)
    torch.testing.assert_close(again._data.x_1, ds._data.x_1, rtol=0, atol=0)
    assert torch.equal(again._data.y, ds._data.y)
    assert all(torch.equal(again.path(i), ds.path(i)) for i in range(len(ds)))
    other = SyntheticTrajectories(str(tmp_path / "a"), seed=1, log=False)
    assert not torch.equal(other.pos, ds.pos)
    # different seeds do not collide in the same root
    names = sorted(f for f in os.listdir(tmp_path / "a" / "processed") if f.startswith("traj"))
    assert names == [f"trajectories_n400_200-100-100_seed{s}.pt" for s in (0, 1)]


def test_resplit(ds):
    y = ds._data.y
    a, b, c = ds.split(1), ds.split(1), ds.split(2)
    assert set(a) == {"train", "val", "test"}
    for s in a:
        assert torch.equal(a[s], b[s])
        std = getattr(ds, f"{s}_mask")
        assert torch.bincount(y[a[s]], minlength=2).tolist() == torch.bincount(
            y[std], minlength=2
        ).tolist()
    assert not torch.equal(a["train"], c["train"])
    assert (a["train"].long() + a["val"].long() + a["test"].long() == 1).all()
    std = ds.split(None)
    assert all(torch.equal(std[s], getattr(ds, f"{s}_mask")) for s in std)
    with pytest.raises(ValueError, match="seed"):
        ds.split(-1)
    with pytest.raises(TypeError, match="seed"):
        ds.split(1.5)


def test_subset_view_and_loader(ds):
    train = ds[ds.train_mask]
    assert len(train) == 200 and train.train_mask.all() and not train.test_mask.any()
    idx = torch.nonzero(ds.train_mask).view(-1)
    assert torch.equal(train.path(3), ds.path(int(idx[3])))
    assert len(train.split(4)["train"]) == 200
    batch = next(iter(DataLoader(ds, batch_size=100)))
    assert batch.x_1.shape == (100 * ds.complex.num_edges, 1) and batch.y.shape == (100,)
    with pytest.raises(IndexError):
        ds.path(400)
    with pytest.raises(TypeError):
        ds.path("0")


def test_processed_file_is_plain(ds):
    path = ds.processed_paths[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = torch.load(path, weights_only=True)
    assert obj["complex"]["B1_index"].shape == (2, 2 * ds.complex.num_edges)
    assert obj["path_ptr"].shape == (401,) and obj["data"]["x_1"].shape == (400 * 1082, 1)


def test_reload_does_not_regenerate(ds, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("regenerated")

    monkeypatch.setattr(st, "generate_trajectories", boom)
    again = SyntheticTrajectories(ds.root, seed=0, log=False)
    assert torch.equal(again._data.y, ds._data.y)
    with pytest.raises(AssertionError, match="regenerated"):
        SyntheticTrajectories(ds.root, seed=0, force_reload=True, log=False)


def test_transforms(tmp_path):
    def pre(data):
        data.x_1 = data.x_1 * 2
        return data

    ds = SyntheticTrajectories(
        str(tmp_path), num_train=4, num_val=2, num_test=2, pre_transform=pre, log=False
    )
    assert set(torch.unique(ds[0].x_1).tolist()) <= {-2.0, 0.0, 2.0}
    ds.transform = lambda d: d.__class__(x_1=d.x_1 + 1, y=d.y)
    assert set(torch.unique(ds[0].x_1).tolist()) <= {-1.0, 1.0, 3.0}


def test_failure_leaves_no_processed_file(tmp_path, monkeypatch):
    def pre(data):
        raise RuntimeError("pre_transform failed")

    with pytest.raises(RuntimeError, match="pre_transform failed"):
        SyntheticTrajectories(str(tmp_path / "a"), pre_transform=pre, log=False)
    assert not [f for f in os.listdir(tmp_path / "a" / "processed")]

    def partial_save(obj, f):  # f: the open temporary file atomic_torch_save writes to
        f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", partial_save)  # atomic_torch_save calls it
    with pytest.raises(OSError, match="disk full"):
        SyntheticTrajectories(str(tmp_path / "b"), log=False)
    assert os.listdir(tmp_path / "b" / "processed") == []


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_train": 1}, ValueError, "num_train"),
        ({"num_val": 0}, ValueError, "num_val"),
        ({"num_test": 2.0}, TypeError, "num_test"),
        ({"num_points": 10}, ValueError, "num_points"),
        ({"num_points": "400"}, TypeError, "num_points"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": True}, TypeError, "seed"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        SyntheticTrajectories(str(tmp_path), **kwargs)
    assert not (tmp_path / "processed").exists()


def test_bad_root():
    with pytest.raises(TypeError, match="root"):
        SyntheticTrajectories(None)


def test_generate_trajectories_bad_input():
    ops, pos = st.generate_trajectory_complex(400, 0)
    with pytest.raises(ValueError, match="labels"):
        st.generate_trajectories(ops, pos, np.array([0, 2]))
    with pytest.raises(ValueError, match="pos"):
        st.generate_trajectories(ops, pos[:-1], np.array([0, 1]))
    with pytest.raises(ValueError, match="region"):
        st.generate_trajectories(ops, pos + 5.0, np.array([0, 1]))


def test_triangles_and_edges_are_the_shared_complexs(ds):
    ops = ds.complex
    assert ds.triangles.dtype == torch.int64 and ds.edges.dtype == torch.int64
    assert ds.triangles.tolist() == np.asarray(ops.triangles).tolist()
    assert ds.edges.tolist() == np.asarray(ops.edges).tolist()
    assert ds.triangles.shape == (ops.num_faces, 3)
    # every triangle's three sides are edges of the complex
    sides = {tuple(e) for e in ds.edges.tolist()}
    assert all({(a, b), (a, c), (b, c)} <= sides for a, b, c in ds.triangles.tolist())
