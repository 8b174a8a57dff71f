"""The missing-measurements protocol: bad input, the cells, resume without recomputing."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import topo_contrastive.training as training
from experiments.studies.missing_measurements import (
    FILLS,
    ROWS,
    cell_names,
    load_study_data,
    protocol,
)
from experiments.study import DataOptions, Settings
from tests.experiments.studies.reuse._networks import grid_network

TINY = {"fractions": (0.3,), "splits": 2, "epochs": 1}


def missing_measurements_study(items, out, modes=("random", "region"), **kw):
    return protocol.missing_measurements_study(items, Settings(out, **kw), modes)


def check_study(items, fractions=(0.1, 0.3, 0.5), modes=("random", "region"), splits=3,
                epochs=None):  # fmt: skip
    settings = Settings(".", fractions=fractions, splits=splits, epochs=epochs)
    return protocol.check_study(items, settings, modes)


def _load(datasets, networks, files, data_root):
    return load_study_data(DataOptions(root=data_root, datasets=tuple(datasets),
                                       networks=tuple(networks), files=tuple(files)))


@pytest.fixture
def grid(tmp_path):
    return grid_network(tmp_path / "g.npz", 4, 3, trips=40)


def _items(tmp_path, *files):
    return _load((), (), files, data_root=tmp_path / "data")


@pytest.fixture
def counted(monkeypatch):
    """Count the pre-trainings and the cells computed (both still run)."""
    calls = {"pretrain": 0, "cell": 0}
    real_pretrain, real_cell = training.pretrain, protocol._cell

    def pretrain(*args, **kwargs):
        calls["pretrain"] += 1
        return real_pretrain(*args, **kwargs)

    def cell(*args, **kwargs):
        calls["cell"] += 1
        return real_cell(*args, **kwargs)

    monkeypatch.setattr(training, "pretrain", pretrain)
    monkeypatch.setattr(protocol, "_cell", cell)
    return calls


def test_the_summary_holds_every_row_fill_and_cell_per_split(tmp_path, grid, counted):
    s = missing_measurements_study(_items(tmp_path, grid), tmp_path / "out", **TINY)
    rows = s["datasets"]["g"]["rows"]
    assert set(rows) == set(ROWS) and all(set(rows[r]) == set(FILLS) for r in ROWS)
    cells = cell_names([0.3], ["random", "region"])
    assert cells == ["complete", "random 0.3", "region 0.3"]
    for r in ROWS:
        for f in FILLS:
            assert list(rows[r][f]) == cells
            assert all(len(v) == 2 and all(0 <= a <= 1 for a in v) for v in rows[r][f].values())
        assert rows[r]["zeros"]["complete"] == rows[r]["interpolated"]["complete"]
    assert s["datasets"]["g"]["sizes"] == {"N1": 17, "flows": 40, "beta_1": 6}
    assert (s["computed"], s["resumed"]) == (2, 0) and counted == {"pretrain": 1, "cell": 2}


def test_finished_cells_are_read_back_not_recomputed(tmp_path, grid, counted):
    items = _items(tmp_path, grid)
    first = missing_measurements_study(items, tmp_path / "out", **TINY)
    again = missing_measurements_study(items, tmp_path / "out", **TINY)
    assert counted == {"pretrain": 1, "cell": 2}
    assert (again["computed"], again["resumed"]) == (0, 2)
    assert again["datasets"] == first["datasets"]
    # one more split: only its cell, with the encoder read back (not pre-trained again)
    more = missing_measurements_study(items, tmp_path / "out", **{**TINY, "splits": 3})
    assert counted == {"pretrain": 1, "cell": 3} and (more["computed"], more["resumed"]) == (1, 2)
    rows = more["datasets"]["g"]["rows"]["raw flows"]["zeros"]["random 0.3"]
    assert rows[:2] == first["datasets"]["g"]["rows"]["raw flows"]["zeros"]["random 0.3"]
    cells = json.loads((tmp_path / "out" / "cells" / "cells.json").read_text())
    assert [r["cell"] for r in cells["records"]] == ["g__split0", "g__split1", "g__split2"]
    # other settings: refused, naming them, nothing computed
    with pytest.raises(ValueError, match=r"they differ in fractions"):
        missing_measurements_study(items, tmp_path / "out", **{**TINY, "fractions": (0.5,)})
    assert counted == {"pretrain": 1, "cell": 3}


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path, grid, counted, monkeypatch):
    items = _items(tmp_path, grid)
    real = protocol._cell

    def interrupted(item, encoder, basis, split, st):
        if split == 1:
            raise KeyboardInterrupt
        return real(item, encoder, basis, split, st)

    monkeypatch.setattr(protocol, "_cell", interrupted)
    with pytest.raises(KeyboardInterrupt):
        missing_measurements_study(items, tmp_path / "out", **TINY)
    assert not (tmp_path / "out" / "cells" / "COMPLETE").exists()
    monkeypatch.setattr(protocol, "_cell", real)
    s = missing_measurements_study(items, tmp_path / "out", **TINY)
    assert (s["computed"], s["resumed"]) == (1, 1)
    assert counted["pretrain"] == 1  # the encoder of the first call is read back
    assert (tmp_path / "out" / "cells" / "COMPLETE").is_file()
    # the same numbers as a run without interruption
    fresh = missing_measurements_study(items, tmp_path / "fresh", **TINY)
    assert fresh["datasets"]["g"]["rows"] == s["datasets"]["g"]["rows"]


def test_a_dataset_changed_since_its_cells_is_refused(tmp_path, grid, counted):
    missing_measurements_study(_items(tmp_path, grid), tmp_path / "out", **TINY)
    grid_network(grid, 4, 3, trips=40, seed=1)  # other trips under the same name
    with pytest.raises(ValueError, match=r"--data-file .*g.npz has changed since its cell "
                       r"g__split0"):  # fmt: skip
        missing_measurements_study(_items(tmp_path, grid), tmp_path / "out", **TINY)
    assert counted["cell"] == 2


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_a_fraction_outside_0_1_is_refused_before_anything_is_written(tmp_path, grid, bad):
    with pytest.raises(ValueError, match=r"`fractions` must lie in \(0, 1\)"):
        missing_measurements_study(_items(tmp_path, grid), tmp_path / "out",
                                   **{**TINY, "fractions": (0.3, bad)})  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_bad_arguments_are_refused(tmp_path, grid):
    items = _items(tmp_path, grid)
    cases = [
        ({"fractions": ()}, "`fractions` is empty"),
        ({"fractions": (0.3, 0.30000001)}, "`fractions` names 0.3 twice"),
        ({"modes": ("random", "random")}, "`modes` must name each"),
        ({"modes": ("block",)}, "`modes` must be among random, region, got 'block'"),
        ({"splits": 0}, "`splits` must be a positive integer"),
        ({"epochs": 0}, "`epochs` must be a positive integer"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            check_study(items, **kwargs)
    with pytest.raises(ValueError, match="`datasets` is empty"):
        check_study([])
    assert check_study(items, (0.5, 0.1), ("region", "random")) == ([0.1, 0.5],
                                                                   ["random", "region"])


def test_bad_datasets_are_refused_before_anything_is_built(tmp_path, grid):
    other = tmp_path / "other"
    other.mkdir()
    copy = shutil.copy(grid, other / "g.npz")
    with pytest.raises(ValueError, match=r"--data-file .*other/g.npz has the same name as"):
        _items(tmp_path, grid, copy)
    with pytest.raises(ValueError, match="unknown dataset 'oceans'"):
        _load(["oceans"], (), (), data_root=tmp_path / "data")
    with pytest.raises(FileNotFoundError):
        _items(tmp_path, tmp_path / "missing.npz")
    assert not (tmp_path / "data").exists()  # refused before anything was built


def test_a_data_file_without_labels_or_with_one_class_is_refused(tmp_path, grid):
    plain = grid_network(tmp_path / "plain.npz", 4, 3, trips=10, labels=False)
    with pytest.raises(ValueError, match=r"--data-file .*plain.npz has no labels"):
        _load(["ocean"], (), [grid, plain], data_root=tmp_path / "data")
    assert not (tmp_path / "data" / "ocean_drifters").exists()  # before the paper datasets
    one = grid_network(tmp_path / "one.npz", 4, 3, trips=10, one_class=True)
    with pytest.raises(ValueError, match=r"one.npz has a single class"):
        _items(tmp_path, one)


def test_an_unknown_network_is_refused_before_anything_is_built(tmp_path):
    pytest.importorskip("scipy")
    from importlib.util import find_spec

    if find_spec("pytspl") is None:
        with pytest.raises(ModuleNotFoundError, match="pytspl"):
            _load((), ["nowhere"], (), data_root=tmp_path)
    else:
        with pytest.raises(FileNotFoundError, match="nowhere_net.tntp"):
            _load(["ocean"], ["nowhere"], (), data_root=tmp_path)
    assert not any(tmp_path.iterdir())


def test_the_masks_of_a_split_come_from_one_generator_seeded_seed_split(tmp_path, grid,
                                                                        monkeypatch):  # fmt: skip
    seen = []
    real = protocol.unobserved_masks

    def spy(ops, num, fraction, mode, rng):
        seen.append((mode, fraction, rng.bit_generator.state["state"]["state"]))
        return real(ops, num, fraction, mode, rng)

    monkeypatch.setattr(protocol, "unobserved_masks", spy)
    settings = {"seed": 5, "splits": 1, "epochs": 1, "fractions": (0.5, 0.1),
                "modes": ("region", "random")}  # fmt: skip
    missing_measurements_study(_items(tmp_path, grid), tmp_path / "out", **settings)
    assert [(m, f) for m, f, _ in seen] == [("random", 0.1), ("random", 0.5),
                                            ("region", 0.1), ("region", 0.5)]  # fmt: skip
    assert seen[0][2] == np.random.default_rng([5, 0]).bit_generator.state["state"]["state"]
