"""Networks pooled as one dataset of many complexes: each sample on its own file's complex,
one set of class ids for all files; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.studies.many_complexes import pool_networks
from experiments.studies.reuse import load_networks
from tests.experiments.studies.reuse._networks import grid_network


def _shift_labels(path, by: int):
    """Rewrite a data file's label values as ``labels + by``."""
    arrays = dict(np.load(path))
    arrays["labels"] = arrays["labels"] + by
    np.savez(path, **arrays)
    return path


def test_each_sample_keeps_its_own_files_complex(tmp_path):
    a = grid_network(tmp_path / "a.npz", 3, 3, trips=6, seed=1)
    b = _shift_labels(grid_network(tmp_path / "b.npz", 4, 3, trips=5, seed=2), 1)
    nets = load_networks(data_files=[a, b], folder=tmp_path / "data")
    ds = pool_networks(nets)
    assert len(ds) == 11
    for i, d in enumerate(ds):
        k, trip = (0, i) if i < 6 else (1, i - 6)
        assert int(d.network) == k and int(d.trip) == trip
        own = nets[k].dataset.complex
        for got, want in zip(d.complex().laplacians(), own.laplacians(), strict=True):
            np.testing.assert_array_equal(got.to_dense().numpy(), want.to_dense().numpy())
        np.testing.assert_array_equal(d.x_1.numpy(), nets[k].dataset[trip].x_1.numpy())
    # label values 0/1 of a and 1/2 of b: classes 0, 1, 2, label 1 one class in both
    raw = [int(nets[0].dataset[i].y) for i in range(6)]
    raw += [int(nets[1].dataset[i].y) for i in range(5)]
    assert [int(d.y) for d in ds] == raw and set(raw) == {0, 1, 2}
    assert {int(nets[1].dataset[i].y) for i in range(5)} <= {1, 2}


def test_bad_networks_are_refused(tmp_path):
    a = grid_network(tmp_path / "a.npz", 3, 3, trips=6)
    plain = grid_network(tmp_path / "plain.npz", 4, 3, trips=6, labels=False)
    one = grid_network(tmp_path / "one.npz", 3, 4, trips=6, one_class=True)
    with pytest.raises(ValueError, match="'plain' .* has no labelled samples"):
        pool_networks(load_networks(data_files=[a, plain], folder=tmp_path / "data"))
    nets = load_networks(data_files=[a], folder=tmp_path / "data")
    with pytest.raises(ValueError, match="has the same name as"):
        pool_networks([nets[0], nets[0]])
    with pytest.raises(ValueError, match="every labelled sample has the label 1"):
        pool_networks(load_networks(data_files=[one], folder=tmp_path / "data"))
    with pytest.raises(ValueError, match="give at least one network"):
        pool_networks([])
