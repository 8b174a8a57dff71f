"""examples/road_networks.py: TNTP networks from pytspl as data files with route labels."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.examples.test_examples import PYTSPL_MISSING
from topo_contrastive.datasets import EdgeFlows

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pytspl") is None, reason=PYTSPL_MISSING)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))


@pytest.fixture(scope="module")
def rn():
    import road_networks

    return road_networks


def test_route_side_on_a_hand_built_square(rn):
    # junctions at the corners of the unit square; the landmark below its diagonal 0 -> 2
    pos = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    c = np.array([0.6, 0.4])
    # 0 -> 1 -> 2 runs counter-clockwise around c: c is on its left
    assert rn.route_side(pos, [0, 1, 2], c) == 1
    # 0 -> 3 -> 2 runs clockwise: c is on its right
    assert rn.route_side(pos, [0, 3, 2], c) == 0
    # the reverse trips swap the sides
    assert rn.route_side(pos, [2, 1, 0], c) == 0 and rn.route_side(pos, [2, 3, 0], c) == 1
    # a landmark east of the square: both routes pass it on their right
    far = np.array([3.0, 0.5])
    assert rn.route_side(pos, [0, 1, 2], far) == rn.route_side(pos, [0, 3, 2], far) == 0
    assert rn.route_side(pos, [2, 1, 0], far) == rn.route_side(pos, [2, 3, 0], far) == 1


@pytest.mark.parametrize(("name", "sizes"), [("anaheim", (378, 568, 54)),
                                             ("chicago-sketch", (546, 1088, 112))])  # fmt: skip
def test_complex_of_the_tntp_network(rn, name, sizes):
    cx = rn.build_complex(rn.load_tntp(rn.find_network(name), name))
    edges, tri = cx["edges"], cx["triangles"]
    assert (cx["pos"].shape[0], edges.shape[0], tri.shape[0]) == sizes
    assert (edges[:, 0] < edges[:, 1]).all() and np.unique(edges, axis=0).shape == edges.shape
    # every triangle is a 3-clique: its three sides are edges
    known = {tuple(e) for e in edges.tolist()}
    for a, b, c in tri.tolist():
        assert {(a, b), (a, c), (b, c)} <= known


def test_data_file_loads_and_labels_depend_on_the_route(rn, tmp_path):
    report = rn.main(str(tmp_path), networks=("anaheim",), num_trips=120, seed=3, probe=False)
    stats = report["networks"]["anaheim"]
    ds = EdgeFlows(str(tmp_path / "data"), file=str(tmp_path / "anaheim.npz"))
    assert len(ds) == 120 and ds.has_labels
    assert 0.2 < stats["class_1_share"] < 0.8
    # the same origin-destination pair takes routes on both sides of the landmark
    assert stats["pairs_with_both_labels"] >= 1
    assert (tmp_path / "road_networks.md").read_text().startswith("| network |")
    # same seed, same file
    rn.main(str(tmp_path / "again"), networks=("anaheim",), num_trips=120, seed=3, probe=False)
    a, b = np.load(tmp_path / "anaheim.npz"), np.load(tmp_path / "again" / "anaheim.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.files)


@pytest.mark.parametrize("name", ["anaheim", "chicago-sketch"])
def test_faces_of_the_road_map(rn, name):
    """Faces: every crossing road set aside, beta_1 = roads set aside that close a cycle
    (+ faces left open); filling the overpasses leaves only those without a ground route."""
    cx = rn.build_complex(rn.load_tntp(rn.find_network(name), name))
    n0, n1 = cx["pos"].shape[0], cx["edges"].shape[0]
    tri = rn.fill_cells(cx)
    assert tri["stats"]["beta_1"] == n1 - n0 + 1 - len(tri["cells"])  # independent triangles
    faces = rn.fill_cells(cx, "faces")
    s = faces["stats"]
    assert s["pinched_faces"] == s["faces_too_long"] == s["faces_too_large"] == 0
    assert s["faces"] == len(faces["cells"]) and s["set_aside"] > 0
    # Euler on the planar part: its faces are independent and fill every cycle of it
    assert s["beta_1"] == n1 - n0 + 1 - s["faces"]
    assert s["beta_1"] < tri["stats"]["beta_1"] / 1.5
    filled = rn.fill_cells(cx, "faces", overpasses="fill")["stats"]
    assert filled["overpass_cells"] + filled["overpasses_open"] == s["set_aside"]
    assert filled["beta_1"] == s["beta_1"] - filled["overpass_cells"]
    limited = rn.fill_cells(cx, "faces", max_face_length=5)["stats"]
    assert limited["faces"] + limited["faces_too_long"] == s["faces"]
    assert limited["beta_1"] == s["beta_1"] + limited["faces_too_long"]
    # no coordinates: chordless cycles up to 4 roads hold the triangles
    cycles = rn.fill_cells(cx, "cycles", max_face_length=4)
    assert {tuple(sorted(c)) for c in tri["cells"]} <= {tuple(sorted(c)) for c in cycles["cells"]}


def test_faces_data_file_has_the_same_trips(rn, tmp_path):
    rn.main(str(tmp_path), networks=("anaheim",), num_trips=60, seed=1, probe=False)
    rep = rn.main(str(tmp_path), networks=("anaheim",), num_trips=60, seed=1, probe=False,
                  cells={"cells": "faces", "max_face_area": 50.0})  # fmt: skip
    a, b = np.load(tmp_path / "anaheim.npz"), np.load(tmp_path / "anaheim_faces_area50.npz")
    for key in ("edge_index", "path_nodes", "path_ptr", "labels", "pos", "sample_ids"):
        assert np.array_equal(a[key], b[key])
    assert "triangles" in a.files and {"cell_nodes", "cell_ptr"} <= set(b.files)
    ds = EdgeFlows(str(tmp_path / "data"), file=str(tmp_path / "anaheim_faces_area50.npz"))
    stats = rep["networks"]["anaheim"]["complex"]
    assert ds.complex.num_faces == stats["faces"] == len(b["cell_ptr"]) - 1
    md = (tmp_path / "road_networks_faces_area50.md").read_text()
    assert "faces (area <= 50 seg^2), overpasses open" in md and "roads set aside" in md
    with pytest.raises(ValueError, match="--max-face-length"):
        rn.check_cells("cycles")
    with pytest.raises(ValueError, match="need --cells faces"):
        rn.check_cells("triangles", max_face_area=2.0)


def test_open_landmark_leaves_one_face_open_and_the_label_is_its_winding(rn, tmp_path):
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert rn.winding_number(square, np.array([0.5, 0.5])) == 1
    assert rn.winding_number(square[::-1], np.array([0.5, 0.5])) == -1
    assert rn.winding_number(square, np.array([1.5, 0.5])) == 0
    cells = {"cells": "faces", "overpasses": "fill", "open_landmark": True}
    rep = rn.main(str(tmp_path), networks=("anaheim",), num_trips=60, seed=1, probe=False,
                  cells=cells)  # fmt: skip
    stats = rep["networks"]["anaheim"]["complex"]
    closed = rn.fill_cells(rn.build_complex(rn.load_tntp(rn.find_network("anaheim"), "anaheim")),
                           "faces", overpasses="fill")["stats"]  # fmt: skip
    # the face of the landmark and the overpass cells around it (independent 2-cells:
    # beta_1 grows by one each)
    opened = stats["landmark_cells_opened"]
    assert opened >= 1 and stats["beta_1"] == closed["beta_1"] + opened
    f = np.load(tmp_path / "anaheim_faces_overpasses_openlandmark.npz")
    assert len(f["cell_ptr"]) - 1 == closed["faces"] + closed["overpass_cells"] - opened
    assert sum(stats["cell_lengths"].values()) == len(f["cell_ptr"]) - 1
