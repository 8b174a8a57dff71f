import os

import matplotlib.figure
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.quiver import Quiver

from topo_contrastive import ComplexOperators
from topo_contrastive.datasets import SyntheticTrajectories, plot_complex

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def square():
    # 0-1-2-3 unit square with a diagonal; triangle (0, 1, 2) filled, (0, 2, 3) empty.
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3], [0, 3], [0, 2]], [[0, 1, 2]])
    pos = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    return ops, pos


def quivers(fig):
    return [c for c in fig.axes[0].get_children() if isinstance(c, Quiver)]


def test_saves_png_and_draws_what_it_is_given(tmp_path):
    ops, pos = square()
    out = tmp_path / "square.png"
    fig = plot_complex(ops, pos, paths=[[3, 0, 1, 2]], path=str(out), title="square")
    assert isinstance(fig, matplotlib.figure.Figure)
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert [f for f in os.listdir(tmp_path)] == ["square.png"]  # no temporary file left
    polys = [c for c in fig.axes[0].collections if type(c) is PolyCollection]
    assert len(polys) == 1 and len(polys[0].get_paths()) == ops.num_triangles
    (q,) = quivers(fig)
    # one arrow per step, from node to node
    np.testing.assert_allclose(q.U, [0.0, 1.0, 0.0])
    np.testing.assert_allclose(q.V, [-1.0, 0.0, 1.0])


def test_flow_arrows_follow_the_sign(tmp_path):
    ops, pos = square()
    # edges sorted: (0,1), (0,2), (0,3), (1,2), (2,3)
    flow = torch.tensor([[1.0], [0.0], [-1.0], [0.0], [0.0]])  # [N1, 1]
    fig = plot_complex(ops, pos, flows=flow)
    (q,) = quivers(fig)
    np.testing.assert_allclose(q.X, [0.0, 0.0])  # 0 -> 1 and 3 -> 0
    np.testing.assert_allclose(q.Y, [0.0, 1.0])
    np.testing.assert_allclose(q.U, [1.0, 0.0])
    np.testing.assert_allclose(q.V, [0.0, -1.0])
    fig = plot_complex(ops, pos, flows=torch.eye(5)[:3], labels=[0, 1, 0])  # [K, N1]
    assert len(quivers(fig)) == 3


def test_holes_are_visible(tmp_path):
    ds = SyntheticTrajectories(str(tmp_path), num_train=2, num_val=2, num_test=2, log=False)
    fig = plot_complex(ds, paths=[ds.path(0)], labels=ds[0].y)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    img = np.asarray(canvas.buffer_rgba())[..., :3]
    ax = fig.axes[0]

    def pixel(x, y):
        px, py = ax.transData.transform((x, y))
        return img[int(round(img.shape[0] - py)), int(round(px))]

    for centre in ((0.3, 0.3), (0.7, 0.7)):  # centres of the two holes: background
        assert (pixel(*centre) == 255).all()
    pos = ds.pos.numpy()
    tri = ds.complex.triangles
    u, v = pos[tri[:, 1]] - pos[tri[:, 0]], pos[tri[:, 2]] - pos[tri[:, 0]]
    area = np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    centroid = pos[tri[np.argmax(area)]].mean(axis=0)  # inside a filled triangle: shaded
    assert not (pixel(*centroid) == 255).all()


def test_draws_into_given_axes():
    ops, pos = square()
    fig = matplotlib.figure.Figure()
    ax = fig.add_subplot()
    assert plot_complex(ops, torch.tensor(pos), ax=ax) is fig


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    ops, pos = square()

    def broken(self, fname, **kwargs):
        with open(fname, "wb") as f:
            f.write(PNG_MAGIC)
        raise OSError("disk full")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    with pytest.raises(OSError, match="disk full"):
        plot_complex(ops, pos, path=str(tmp_path / "x.png"))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"dataset_or_complex": "complex"}, TypeError, "dataset_or_complex"),
        ({"pos": None}, ValueError, "pos"),
        ({"pos": np.zeros((3, 2))}, ValueError, "pos"),
        ({"flows": torch.zeros(4)}, ValueError, "flows"),
        ({"paths": [[0, 7]]}, ValueError, r"paths\[0\]"),
        ({"paths": [[0, 1]], "labels": [0, 1]}, ValueError, "labels"),
        ({"path": "figure.pdf"}, ValueError, ".png"),
    ],
)
def test_bad_input(kwargs, error, match):
    ops, pos = square()
    args = {"dataset_or_complex": ops, "pos": pos, **kwargs}
    with pytest.raises(error, match=match):
        plot_complex(**args)
