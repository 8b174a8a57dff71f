"""write_embeddings: .npz, .csv and .json of the embeddings of every sample."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from topo_contrastive.training import write_embeddings


def test_files_round_trip(tmp_path):
    emb = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    ids = ["a", "b,c", "d", "e", 'f"g']
    paths = write_embeddings(tmp_path / "out", emb, ids, labels=[0, 1, 1, 0, 2], metadata={"k": 1})
    with np.load(paths["npz"], allow_pickle=False) as f:
        np.testing.assert_array_equal(f["embeddings"], emb)
        assert f["sample_ids"].tolist() == ids and f["labels"].tolist() == [0, 1, 1, 0, 2]
    with open(paths["csv"], newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["sample_id", "label", "h_0", "h_1", "h_2"]
    assert [r[0] for r in rows[1:]] == ids and [r[1] for r in rows[1:]] == ["0", "1", "1", "0", "2"]
    np.testing.assert_array_equal(np.array([r[2:] for r in rows[1:]], dtype=np.float32), emb)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(embeddings=np.ones(4)), r"shape \[S, D\]"),
        (dict(embeddings=np.full((2, 2), np.nan)), "NaN or inf"),
        (dict(sample_ids=[1, 2, 3]), r"`sample_ids` must have 2 entries"),
        (dict(labels=[0]), r"`labels` must have 2 entries"),
    ],
)
def test_bad_input_writes_nothing(tmp_path, kwargs, message):
    args = {"embeddings": np.ones((2, 2)), **kwargs}
    with pytest.raises(ValueError, match=message):
        write_embeddings(tmp_path / "out", **args)
    assert not (tmp_path / "out").exists()
