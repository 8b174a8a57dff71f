import json

import pytest

from experiments.search import grid_point_config
from topo_contrastive.training.configs import get_config


def test_grid_point_K_ties_the_orders_and_keeps_SCL_low_without_upper_laplacian():
    scl = grid_point_config(get_config("SCL", "trajectory"), {"K": 3, "lr": 0.01})
    assert (scl.K_down, scl.K_up, scl.lr) == (3, 3, 0.01)
    low = grid_point_config(get_config("SCL_low", "trajectory"), {"K": 3})
    assert (low.K_down, low.K_up) == (3, 0)
    base = get_config("SCL", "ocean")
    assert grid_point_config(base, {}) == base


def test_grid_point_rejects_unknown_fields_and_bad_values():
    base = get_config("SCL", "trajectory")
    with pytest.raises((TypeError, ValueError), match="eta"):
        grid_point_config(base, {"eta": 1})
    with pytest.raises(ValueError, match="mask_steps"):
        grid_point_config(base, {"mask_steps": 0})
    with pytest.raises(ValueError, match="K_down"):
        grid_point_config(base, {"K": -1})


def test_grid_search_scores_several_epoch_counts_from_one_run(tiny_data):
    from experiments.search import grid_search

    base = get_config("SCL", "trajectory", num_layers=1)
    rows = grid_search(tiny_data, base, {"lr": [1e-3]}, seeds=1, eval_epochs=[1, 2])
    assert [r["epochs"] for r in rows] == [1, 2]
    single = grid_search(tiny_data, base, {"lr": [1e-3]}, epochs=1, seeds=1)
    assert single[0]["score"] == rows[0]["score"]


def test_interrupted_search_never_looks_complete(tiny_data, tmp_path, monkeypatch):
    import experiments.search as search

    base = get_config("SCL", "trajectory", num_layers=1, hidden_channels=8)
    out = tmp_path / "search.csv"
    status, marker = tmp_path / "search.csv.json", tmp_path / "search.csv.COMPLETE"
    rows = search.grid_search(tiny_data, base, {"lr": [1e-3, 2e-3]}, epochs=1, seeds=1, out=out)
    assert len(rows) == 2 and marker.is_file()
    done = json.loads(status.read_text())
    assert done["complete"] is True and done["points_done"] == done["points_total"] == 2
    assert len(out.read_text().strip().splitlines()) == 3

    real = search.pretrain
    calls = []

    def interrupted(*args, **kwargs):  # Ctrl-C during the second grid point
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "pretrain", interrupted)
    with pytest.raises(KeyboardInterrupt):
        search.grid_search(tiny_data, base, {"lr": [3e-3, 4e-3]}, epochs=1, seeds=1, out=out)
    assert not marker.exists()  # the stale marker of the first search is gone
    partial = json.loads(status.read_text())
    assert partial["complete"] is False
    assert (partial["points_done"], partial["points_total"]) == (1, 2)
    lines = out.read_text().strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("0.003,")  # the new point, not the old ones
    # interrupted before the first point: no CSV of the earlier search is left either
    calls.clear()
    calls.append(1)
    with pytest.raises(KeyboardInterrupt):
        search.grid_search(tiny_data, base, {"lr": [5e-3]}, epochs=1, seeds=1, out=out)
    assert not out.exists() and not marker.exists()
    assert json.loads(status.read_text())["points_done"] == 0
