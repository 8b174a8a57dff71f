"""A data file with weights (``node_weights`` / ``edge_weights`` / ``cell_weights``): read as
a weighted complex, written back, refused when malformed, and named in the one-line summaries
of ``pretrain``, ``evaluate`` and ``embed``."""

from __future__ import annotations

import numpy as np
import pytest

from tests._commands import main
from tests._tiny import tiny_dataset
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.datasets._file import read_file as read_edge_flow_file


@pytest.fixture(scope="module")
def weighted_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("weighted_file")
    traj = tiny_dataset(root / "data" / "trajectories")
    lengths = np.random.default_rng(0).uniform(0.5, 2.0, traj.complex.num_edges)
    ops = traj.complex.with_weights("resistance", edge=lengths)
    masks = {"train": traj.train_mask, "val": traj.val_mask, "test": traj.test_mask}
    path = root / "weighted.npz"
    EdgeFlows.write_npz(path, ops, paths=[p.tolist() for p in traj.paths()],
                        labels=traj._data.y, masks=masks)  # fmt: skip
    return root, path, lengths


def test_the_file_gives_the_weighted_complex(weighted_file, tmp_path):
    root, path, lengths = weighted_file
    with np.load(path) as f:
        assert f["edge_weights"].tolist() == lengths.tolist()
        assert f["node_weights"].tolist() == [1.0] * f["cell_counts"][0, 0]
    ds = EdgeFlows(str(tmp_path / "ds"), file=str(path), log=False)
    assert ds.complex.metric == "weighted" and ds.complex.hodge_star(1).tolist() == lengths.tolist()
    bad = dict(np.load(path))
    bad["cell_weights"] = np.zeros(3)
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match=r"key 'cell_weights' .* shape \[N2\]"):
        read_edge_flow_file(str(tmp_path / "bad.npz"))


def test_commands_say_the_metric(weighted_file, tmp_path, capsys):
    root, path, _ = weighted_file
    flags = ["--data-file", str(path), "--data-root", str(root / "data"), "--no-progress",
             "--threads", "1"]  # fmt: skip
    run = tmp_path / "run"
    assert main(["pretrain", "--config", "SSCL_Spec", "--epochs", "1", "--hidden-channels",
                 "8", "--out", str(run), *flags]) == 0  # fmt: skip
    assert "in the weighted metric (edge weights)" in capsys.readouterr().err
    assert main(["evaluate", "--checkpoint", str(run / "encoder.pt"), "--seeds", "1",
                 "--no-references", *flags]) == 0  # fmt: skip
    assert "in the weighted metric (edge weights): test accuracy" in capsys.readouterr().out
    assert main(["embed", "--checkpoint", str(run / "encoder.pt"), "--out", str(tmp_path / "e"),
                 *flags]) == 0  # fmt: skip
    assert "in the weighted metric (edge weights) into" in capsys.readouterr().err
