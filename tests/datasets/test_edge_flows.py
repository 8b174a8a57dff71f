"""EdgeFlows: your own complex and edge flows (three constructors, the .npz format)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.datasets import EdgeFlows, SyntheticTrajectories
from topo_contrastive.datasets.edge_flows import RAW_FILE

# A square 0-1-2-3 with the diagonal (0, 2), the triangle (0, 1, 2) filled, a pendant edge 3-4.
EDGES = [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3], [3, 4]]
TRIANGLES = [[0, 1, 2]]
PATHS = [[0, 1, 2, 3], [4, 3, 0, 2], [1, 0, 3, 4], [2, 1, 0], [3, 2, 1], [4, 3, 2, 0]]


def _ops() -> ComplexOperators:
    return ComplexOperators.from_simplices(EDGES, TRIANGLES)


def _reoriented(ops: ComplexOperators, s: np.ndarray) -> ComplexOperators:
    S = sp.diags(s)
    return ComplexOperators.from_incidence(ops.B1 @ S, S @ ops.B2)


def _files(root) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )


def test_round_trip_gives_identical_tensors_and_hodge_parts(tmp_path):
    ops = _ops()
    rng = np.random.default_rng(0)
    flows = rng.standard_normal((6, ops.num_edges)).astype(np.float32)
    labels = np.array([0, 1, 0, 1, 2, 2])
    pos = rng.random((ops.num_nodes, 2))
    masks = {
        "train": np.array([1, 1, 1, 0, 0, 0], bool),
        "val": np.array([0, 0, 0, 1, 0, 0], bool),
        "test": np.array([0, 0, 0, 0, 1, 1], bool),
    }
    ids = [f"trip-{i}" for i in range(6)]
    path = tmp_path / "flows.npz"
    EdgeFlows.write_npz(
        path, ops, flows, paths=PATHS, labels=labels, pos=pos, masks=masks, sample_ids=ids
    )
    ds = EdgeFlows(str(tmp_path / "ds"), file=path, log=False)
    assert len(ds) == 6 and ds.has_labels and ds.sample_ids == ids
    back = ds.complex
    assert (back.B1 != ops.B1).nnz == 0 and (back.B2 != ops.B2).nnz == 0
    x = torch.stack([ds[i].x_1.view(-1) for i in range(6)])
    assert torch.equal(x, torch.from_numpy(flows))
    assert torch.equal(torch.cat([ds[i].y for i in range(6)]), torch.from_numpy(labels))
    assert torch.equal(ds.pos, torch.from_numpy(pos))
    for split, m in masks.items():
        assert torch.equal(getattr(ds, f"{split}_mask"), torch.from_numpy(m))
    assert [ds.path(i).tolist() for i in range(6)] == PATHS
    a, b = HodgeDecomposition(ops)(x.double()), HodgeDecomposition(back)(x.double())
    for pa, pb in zip(a, b, strict=True):
        assert torch.equal(pa, pb)
    # nothing but the processed file was written next to the user's file
    assert _files(tmp_path).count("flows.npz") == 1 and not (tmp_path / "raw").exists()


def test_three_constructors_agree(tmp_path):
    tnx = pytest.importorskip("toponetx")
    ops = _ops()
    labels = [0, 1, 1, 0, 1, 0]
    a = EdgeFlows.from_incidence(
        str(tmp_path / "a"), ops.B1, ops.B2, paths=PATHS, labels=labels, log=False
    )
    # TopoNetX with string node labels: paths in those labels
    names = ["a", "b", "c", "d", "e"]
    sc = tnx.SimplicialComplex([[names[u] for u in t] for t in TRIANGLES])
    for u, v in EDGES:
        sc.add_simplex([names[u], names[v]])
    b = EdgeFlows.from_toponetx(
        str(tmp_path / "b"),
        sc,
        paths=[[names[v] for v in p] for p in PATHS],
        labels=labels,
        log=False,
    )
    # torch sparse incidences
    c = EdgeFlows.from_incidence(
        str(tmp_path / "c"),
        ops.operator("B1"),
        ops.operator("B2", layout=torch.sparse_csr),
        flows=torch.stack([ops.path_to_flow(p) for p in PATHS]),
        labels=labels,
        log=False,
    )
    d = EdgeFlows(str(tmp_path / "d"), file=tmp_path / "a" / "raw" / RAW_FILE, log=False)
    for ds in (b, c, d):
        assert (ds.complex.B1 != a.complex.B1).nnz == 0 and (ds.complex.B2 != a.complex.B2).nnz == 0
        assert torch.equal(ds._data.x_1, a._data.x_1) and torch.equal(ds._data.y, a._data.y)
    flows = a._data.x_1.view(6, -1)
    torch.testing.assert_close(flows[0], ops.path_to_flow(PATHS[0]))
    # every path flow has divergence -1 at its start and +1 at its end
    div = ops.divergence(flows)
    for p, dv in zip(PATHS, div, strict=True):
        assert torch.nonzero(dv).ravel().tolist() == sorted({p[0], p[-1]})
        assert dv[p[0]] == -1 and dv[p[-1]] == 1


def test_from_toponetx_cell_complex_matches_from_incidence(tmp_path):
    """A TopoNetX CellComplex with labels 10, 20, ... and a square 2-cell: the paths in its
    labels give the same flows as ``from_incidence`` with the paths in rows of ``B1``."""
    tnx = pytest.importorskip("toponetx")
    cc = tnx.CellComplex([[10, 20, 30, 40]])
    cc.add_edge(40, 50)
    paths = [[10, 20, 30], [50, 40, 10], [30, 40, 50], [20, 10, 40, 30]]
    ds = EdgeFlows.from_toponetx(str(tmp_path / "cc"), cc, paths=paths, log=False)
    B1 = cc.incidence_matrix(1, signed=True)
    B2 = cc.incidence_matrix(2, signed=True)
    rows = [[v // 10 - 1 for v in p] for p in paths]  # labels 10..50 are rows 0..4
    ref = EdgeFlows.from_incidence(str(tmp_path / "inc"), B1, B2, paths=rows, log=False)
    assert (ds.complex.B1 != ref.complex.B1).nnz == 0
    assert (ds.complex.B2 != ref.complex.B2).nnz == 0
    assert torch.equal(ds._data.x_1, ref._data.x_1)
    # edges (10,20), (10,40), (20,30), (30,40), (40,50), oriented low -> high
    flows = ds._data.x_1.view(4, -1).tolist()
    assert flows == [[1, 0, 1, 0, 0], [0, -1, 0, 0, -1], [0, 0, 0, 1, 1], [-1, 1, 0, -1, 0]]


def test_edge_index_and_triangles_form_of_the_file(tmp_path):
    ops = _reoriented(_ops(), np.array([1, -1, -1, 1, -1, 1.0]))
    path = tmp_path / "by_edges.npz"
    np.savez(
        path,
        edge_index=ops.edges.T,
        triangles=np.array([[2, 0, 1]]),
        path_nodes=np.concatenate(PATHS),
        path_ptr=np.cumsum([0] + [len(p) for p in PATHS]),
    )
    ds = EdgeFlows(str(tmp_path / "ds"), file=path, log=False)
    assert ds.complex.edges.tolist() == ops.edges.tolist()
    assert (abs(ds.complex.B2) != abs(ops.B2)).nnz == 0  # same triangle, maybe other sign
    assert not ds.has_labels and ds.train_mask.all() and not ds.test_mask.any()
    assert torch.equal(ds[1].x_1.view(-1), ops.path_to_flow(PATHS[1]))


def test_given_orientation_is_kept(tmp_path):
    """Edges not oriented low -> high (and a triangle whose edges run around it) are kept."""
    base = _ops()
    s = np.array([1.0, -1.0, -1.0, 1.0, -1.0, -1.0])  # 0 -> 1, 1 -> 2, 2 -> 0: cyclic triangle
    ops = _reoriented(base, s)
    assert ops.B2.toarray()[[0, 1, 3], 0].tolist() == [1, 1, 1]  # B2 column all +1
    ds = EdgeFlows.from_incidence(str(tmp_path), ops.B1, ops.B2, paths=PATHS, log=False)
    assert (
        ds.edges.tolist() == ops.edges.tolist() == [[0, 1], [2, 0], [3, 0], [1, 2], [3, 2], [4, 3]]
    )
    x = torch.stack([ds[i].x_1.view(-1) for i in range(len(ds))])
    x0 = torch.stack([base.path_to_flow(p) for p in PATHS])
    assert torch.equal(x, x0 * torch.from_numpy(s).float())  # signs flip with the edges


def test_default_split_is_stratified_and_resplits_keep_counts(tmp_path):
    ops = _ops()
    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1, 2], [10, 20, 5])
    flows = rng.standard_normal((labels.size, ops.num_edges))
    ds = EdgeFlows.from_incidence(str(tmp_path), ops.B1, ops.B2, flows, labels=labels, log=False)
    y = torch.from_numpy(labels)
    want = {0: (6, 2, 2), 1: (12, 4, 4), 2: (3, 1, 1)}  # round(0.2 * n) val and test per class
    for seed in (None, 0, 5):
        masks = ds.split(seed)
        assert (
            not (masks["train"] & masks["val"]).any() and not (masks["val"] & masks["test"]).any()
        )
        for c, counts in want.items():
            got = tuple(int((masks[s] & (y == c)).sum()) for s in ("train", "val", "test"))
            assert got == counts
    assert not torch.equal(ds.split(0)["test"], ds.split(5)["test"])
    sub = ds[ds.test_mask]
    assert (
        len(sub.sample_ids) == 7 and sub.sample_ids == torch.nonzero(ds.test_mask).ravel().tolist()
    )


def test_raw_file_change_is_reprocessed(tmp_path):
    ops = _ops()
    a = EdgeFlows.from_incidence(str(tmp_path), ops.B1, ops.B2, paths=PATHS[:2], log=False)
    b = EdgeFlows.from_incidence(str(tmp_path), ops.B1, ops.B2, paths=PATHS, log=False)
    assert len(a) == 2 and len(b) == 6


def _bad_cases():
    ops = _ops()
    n1 = ops.num_edges
    good = np.ones((3, n1))
    nan = good.copy()
    nan[1, 2] = np.nan
    inf = good.copy()
    inf[2, 0] = np.inf
    bad_b2 = ops.B2.toarray().copy()
    bad_b2[0] *= -1
    return [
        (
            dict(flows=np.ones((3, n1 - 1))),
            ValueError,
            r"`flows` must have shape \[S, N1\] with N1 = 6.*\(3, 5\)",
        ),
        (dict(flows=nan), ValueError, r"`flows` has a NaN or inf entry \(sample 1, edge 2\)"),
        (dict(flows=inf), ValueError, r"`flows` has a NaN or inf entry \(sample 2, edge 0\)"),
        (
            dict(flows=good, labels=[0, 1]),
            ValueError,
            r"`labels` must have shape \[S\] with S = 3.*\(2,\)",
        ),
        (
            dict(flows=good, labels=[0, 1.5, 1]),
            TypeError,
            r"`labels` must hold integer class ids, got the value 1.5",
        ),
        (
            dict(flows=good, labels=["a", "b", "c"]),
            TypeError,
            r"`labels` must hold integer.*dtype <U1",
        ),
        (
            dict(paths=[[0, 1, 3]]),
            ValueError,
            r"`paths`\[0\]: step 1 of the path, 1 -> 3, is not an edge",
        ),
        (dict(paths=[[0]]), ValueError, r"`paths`\[0\] has 1 node"),
        (
            dict(flows=good, pos=np.ones((4, 2))),
            ValueError,
            r"`pos` must be .*\[N0, 2\] with N0 = 5",
        ),
        (dict(flows=good, sample_ids=[1, 1, 2]), ValueError, r"`sample_ids` must be unique"),
        (
            dict(
                flows=good,
                masks={
                    "train": np.ones(3, bool),
                    "val": np.ones(3, bool),
                    "test": np.zeros(3, bool),
                },
            ),
            ValueError,
            "overlap",
        ),
        (dict(), ValueError, "give the samples as `flows`"),
        (dict(flows=good, B1=abs(ops.B1)), ValueError, r"`B1` column 0 is unsigned"),
        (dict(flows=good, B2=bad_b2), ValueError, r"B1 @ B2 != 0 at column 0 of `B2`.*expected"),
        (dict(flows=good, B2=np.ones((n1, 1))), ValueError,
         r"B1 @ B2 != 0 at column 0 of `B2`.*closed oriented cycle"),
    ]


@pytest.mark.parametrize("kwargs, error, message", _bad_cases())
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, kwargs, error, message):
    ops = _ops()
    B1 = kwargs.pop("B1", ops.B1)
    B2 = kwargs.pop("B2", ops.B2)
    flows = kwargs.pop("flows", None)
    root = tmp_path / "ds"
    with pytest.raises(error, match=message):
        EdgeFlows.from_incidence(str(root), B1, B2, flows, log=False, **kwargs)
    assert not root.exists()
    with pytest.raises(error, match=message):
        EdgeFlows.write_npz(
            tmp_path / "f.npz", ComplexOperators.from_incidence(B1, B2), flows, **kwargs
        )
    assert not (tmp_path / "f.npz").exists() and _files(tmp_path) == []


def _good_file_arrays() -> dict[str, np.ndarray]:
    ops = _ops()
    c1, c2 = ops.B1.tocoo(), ops.B2.tocoo()
    return {
        "B1_index": np.stack([c1.row, c1.col]),
        "B1_value": c1.data,
        "B1_shape": np.array(c1.shape),
        "B2_index": np.stack([c2.row, c2.col]),
        "B2_value": c2.data,
        "B2_shape": np.array(c2.shape),
        "flows": np.ones((4, ops.num_edges)),
        "labels": np.array([0, 1, 0, 1]),
    }


@pytest.mark.parametrize(
    "change, message",
    [
        ({"B1_value": None}, r"lacks the key\(s\) \['B1_value'\]"),
        ({"B2_shape": None}, r"lacks the key\(s\) \['B2_shape'\]"),
        ({"flows": None}, "give the samples as key 'flows'"),
        ({"flow": np.ones((4, 6))}, r"unknown key\(s\) \['flow'\]"),
        (
            {"flows": np.ones((4, 7))},
            r"key 'flows' of '.*bad.npz' must have shape \[S, N1\] with N1 = 6",
        ),
        ({"labels": np.array([0, 1, 0])}, r"key 'labels' .* must have shape \[S\] with S = 4"),
        ({"B2_value": np.ones(3)}, r"B1 @ B2 != 0 at column 0 of `B2`.*unsigned \(all \+1\)"),
        ({"B1_index": np.array([[9] * 12, [0] * 12])}, r"key 'B1_index' .* has an index outside"),
        ({"train_mask": np.ones(4, bool)}, "key 'val_mask' of .* is missing"),
        ({"edge_index": np.array([[0], [1]])}, "gives the edges twice"),
        ({"labels": np.array([0.5, 1, 0, 1])}, "integer class ids"),
        ({"sample_ids": np.array([{}, {}, {}, {}], dtype=object)}, "Python objects"),
    ],
)
def test_bad_file_is_a_clear_error_and_nothing_is_processed(tmp_path, change, message):
    arrays = _good_file_arrays()
    for key, value in change.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    root = tmp_path / "ds"
    with pytest.raises((ValueError, TypeError), match=message):
        EdgeFlows(str(root), file=path, log=False)
    assert not (root / "processed").exists() or not any(
        f.endswith(".pt") and f.startswith("edge_flows") for f in os.listdir(root / "processed")
    )


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist; write one with"):
        EdgeFlows(str(tmp_path))
    ops = _ops()
    with pytest.raises(ValueError, match="`split_ratio` must be three"):
        EdgeFlows.from_incidence(
            str(tmp_path / "x"), ops.B1, ops.B2, np.ones((2, 6)), split_ratio=(0.5, 0.5, 0.5)
        )
    with pytest.raises(TypeError, match="ComplexOperators"):
        EdgeFlows.write_npz(tmp_path / "f.npz", ops.B1, np.ones((2, 6)))
    tnx = pytest.importorskip("toponetx")
    sc = tnx.SimplicialComplex([[0, 1, 2]])
    with pytest.raises(ValueError, match="`paths\\[0\\]` has the node 7, which is not a node"):
        EdgeFlows.from_toponetx(str(tmp_path / "t"), sc, paths=[[0, 7]])
    assert not (tmp_path / "t").exists()


def test_user_dataset_of_the_trajectories_gives_the_same_embeddings(tmp_path):
    """The trajectory task loaded through EdgeFlows trains to the same encoder (same seed)."""
    from topo_contrastive.training import ExperimentData, get_config
    from topo_contrastive.training.loop import embed, pretrain

    traj = SyntheticTrajectories(
        str(tmp_path / "traj"),
        num_points=120,
        num_train=8,
        num_val=4,
        num_test=4,
        seed=0,
        log=False,
    )
    ops = traj.complex
    user = EdgeFlows.from_incidence(
        str(tmp_path / "user"),
        ops.B1,
        ops.B2,
        paths=[p.tolist() for p in traj.paths()],
        labels=traj._data.y,
        pos=traj.pos,
        masks={"train": traj.train_mask, "val": traj.val_mask, "test": traj.test_mask},
        log=False,
    )
    assert torch.equal(user._data.x_1, traj._data.x_1)
    out = []
    for ds in (traj, user):
        data = ExperimentData.from_dataset(ds, "trajectory")
        config = get_config(
            "SSCL_Spec", "trajectory", hidden_channels=8, projection_channels=8, batch_size=8
        )
        enc = pretrain(data, config, seed=3, epochs=2).encoder
        out.append(embed(enc, data))
    np.testing.assert_array_equal(out[0], out[1])
    for seed in (1, 2):  # the same stratified re-splits, hence the same evaluation
        for k in ("train", "val", "test"):
            assert torch.equal(traj.split(seed)[k], user.split(seed)[k])


def test_cell_complex_data_files_by_cycles_and_by_incidence(tmp_path):
    """Polygon 2-cells in a data file, as node cycles (cell_nodes / cell_ptr with
    edge_index) or as B2: the same complex, its flows and its harmonic dimension."""
    from tests._cell_complexes import square_pentagon_loop

    ops = square_pentagon_loop()
    paths = [[3, 7, 8, 0, 1], [4, 5, 6, 2, 3]]
    cells = ops.faces
    np.savez(
        tmp_path / "cells.npz",
        edge_index=ops.edges.T,
        cell_nodes=np.concatenate(cells),
        cell_ptr=np.cumsum([0] + [len(c) for c in cells]),
        path_nodes=np.concatenate(paths),
        path_ptr=np.cumsum([0] + [len(p) for p in paths]),
    )
    by_cycles = EdgeFlows(str(tmp_path / "a"), file=tmp_path / "cells.npz", log=False)
    by_b2 = EdgeFlows.from_incidence(str(tmp_path / "b"), ops.B1, ops.B2, paths=paths, log=False)
    for ds in (by_cycles, by_b2):
        assert (ds.complex.B2 != ops.B2).nnz == 0 and not ds.complex.is_simplicial
        assert HodgeDecomposition(ds.complex).dims["harmonic"] == 1
        assert torch.equal(ds[0].x_1.view(-1), ops.path_to_flow(paths[0]))
    bad = tmp_path / "bad.npz"
    np.savez(
        bad,
        edge_index=ops.edges.T,
        cell_nodes=np.array([0, 1, 7]),
        cell_ptr=np.array([0, 3]),
        path_nodes=np.array([0, 1]),
        path_ptr=np.array([0, 2]),
    )
    with pytest.raises(ValueError, match="cell_nodes.*a 2-cell steps along a pair"):
        EdgeFlows(str(tmp_path / "c"), file=bad, log=False)


@pytest.mark.parametrize(
    "weights, message",
    [(np.ones(3), r"shape \[N1\] with N1 = 4"), (np.array([1.0, 2.0, 0.0, 1.0]), "be positive"),
     (np.array([1.0, np.nan, 1.0, 1.0]), "NaN or inf weights")],
)  # fmt: skip
def test_the_optional_edge_weights_key_is_read_and_checked(tmp_path, weights, message):
    from topo_contrastive.datasets._file import read_file as read_edge_flow_file

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]], [[0, 1, 2]])
    good = tmp_path / "good.npz"
    EdgeFlows.write_npz(good, ops, np.ones((2, 4)))
    arrays = dict(np.load(good))
    np.savez(good, **arrays, edge_weights=np.array([0.5, 1.0, 2.0, 4.0]))
    assert read_edge_flow_file(str(good))["edge_weights"].tolist() == [0.5, 1.0, 2.0, 4.0]
    assert len(EdgeFlows(str(tmp_path / "ds"), file=str(good), log=False)) == 2
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays, edge_weights=weights)
    with pytest.raises(ValueError, match=f"key 'edge_weights' of .*{message}"):
        read_edge_flow_file(str(bad))
