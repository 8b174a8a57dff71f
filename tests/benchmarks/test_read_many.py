import json

import numpy as np
import pytest

from benchmarks.bench_read_many import loglog_slope, main, read_one_by_one, write_triangles
from topo_contrastive.datasets import EdgeFlows


def test_the_benchmark_writes_its_table_and_checks_the_baseline(tmp_path, capsys):
    rows = main(sizes=(20, 60), repeats=1, baseline_max=60, out=tmp_path / "r")
    assert [r["complexes"] for r in rows] == [20, 60]
    assert all(r["read_s"] > 0 and r["baseline_s"] > 0 for r in rows)  # the baseline ran
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["rows"] == rows and saved["settings"]["epoch_s"] is None
    text = (tmp_path / "r.md").read_text()
    assert "| 60 |" in text and "Log-log slope of the time against S" in text
    assert text in capsys.readouterr().out


def test_the_triangles_are_valid_and_randomly_oriented(tmp_path):
    write_triangles(tmp_path / "t.npz", 50, seed=3)
    samples = EdgeFlows(str(tmp_path / "ds"), file=tmp_path / "t.npz", log=False)
    signs = [s.complex().B2.toarray().ravel().tolist() for s in samples]
    assert len(samples) == 50 and len({tuple(v) for v in signs}) > 2  # orientations differ
    data, _ = read_one_by_one(tmp_path / "t.npz")
    assert np.array_equal(data.cell_counts.numpy(), np.tile([3, 3, 1], (50, 1)))


def test_loglog_slope_by_hand():
    assert loglog_slope([1, 10, 100], [2.0, 20.0, 200.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two"):
        loglog_slope([1], [1.0])
