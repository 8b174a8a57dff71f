"""The rank-2 task of examples/triangle_signals.py: the complex has two cavities, the
membranes carry their label in the harmonic part only, the dataset follows PyG (x_2)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from topo_contrastive import HodgeDecomposition
from topo_contrastive.training import ExperimentData

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "triangle_signals.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("triangle_signals_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def task(example):
    ops, pos, walls = example.generate_cavity_complex(40, seed=0)
    signals, labels = example.generate_membranes(ops, pos, walls, 24, seed=1)
    return ops, pos, walls, signals, labels


def test_complex_has_two_cavities(task):
    ops, pos, walls, _, _ = task
    assert ops.num_tetrahedra > 0 and pos.shape == (ops.num_nodes, 3)
    hodge = HodgeDecomposition(ops, rank=2, backend="exact")
    assert hodge.dims["harmonic"] == 2
    assert HodgeDecomposition(ops, rank=0).dims["harmonic"] == 1  # connected
    w = torch.from_numpy(np.stack(walls))
    assert float(abs(ops.B2 @ w.numpy().T).max()) == 0.0  # walls are closed surfaces
    assert all(int((wi != 0).sum()) == 20 for wi in walls)  # icosahedral shells
    coords = hodge.coordinates(w, "harmonic")  # the walls span the harmonic space
    assert abs(float(torch.linalg.det(coords))) > 1e-3


def test_membranes_carry_the_label_in_the_harmonic_part_only(task):
    ops, _, walls, signals, labels = task
    assert np.bincount(labels).tolist() == [12, 12]
    hodge = HodgeDecomposition(ops, rank=2, backend="exact")
    x = torch.from_numpy(signals)
    parts = hodge(x)
    wall_h = hodge.project(torch.from_numpy(np.stack(walls)), "harmonic")  # [2, N2]
    torch.testing.assert_close(parts.harmonic, wall_h[torch.from_numpy(labels)])
    # shapes and noise vary within a class: curl and gradient parts differ between samples
    same = np.flatnonzero(labels == labels[0])
    assert not torch.allclose(parts.curl[same[0]], parts.curl[same[1]])
    assert np.all(signals == np.round(signals))


def test_dataset_and_experiment_data(example, task):
    ops, _, _, signals, labels = task
    ds = example.TriangleSignals(signals, labels, ops)
    assert len(ds) == 24 and ds.rank == 2
    assert ds[3].x_2.shape == (ops.num_triangles, 1) and int(ds[3].y) == labels[3]
    masks = ds.split(0)
    total = masks["train"].long() + masks["val"].long() + masks["test"].long()
    assert torch.equal(total, torch.ones(24, dtype=torch.long))
    assert np.bincount(labels[masks["test"].numpy()]).tolist() == [3, 3]
    data = ExperimentData.from_dataset(ds)
    assert data.rank == 2 and data.flows.shape == (24, ops.num_triangles)
    L_down, _ = data.complex.laplacians(rank=data.rank)
    assert L_down.shape == (ops.num_triangles, ops.num_triangles)
    torch.testing.assert_close(torch.stack(list(data.hodge(data.flows))).sum(0), data.flows)
    with pytest.raises(ValueError, match="must hold `x_2` with N2 = "):
        ExperimentData.from_dataset(example.TriangleSignals(signals[:, :-1], labels, ops))


def test_main_writes_the_table_and_the_supervised_training_accuracy(example, tmp_path):
    result = example.main(num_points=40, num_samples=24, splits=2, seeds=1, epochs=1,
                          editions=("hodge",), out=str(tmp_path), progress=False)  # fmt: skip
    runs = result["supervised"]["hodge"]
    assert [r["split_seed"] for r in runs] == [0, 1]
    for r in runs:
        assert 0.0 <= r["train_accuracy"] <= 1.0
        assert 1 <= r["best_epoch"] <= r["epochs_run"] <= 1
    table = result["table"]["hodge"]
    assert set(table) == {"untrained", "SCL", "SSCL_Spec", "SCNN", "SVM on U_H^T x",
                          "SVM on raw x_2"}  # fmt: skip
    # two splits x one seed per encoder row, one run per split for the SCNN
    assert len(result["accuracies"]["hodge"]["SCL"]) == 2
    assert len(result["accuracies"]["hodge"]["SCNN"]) == 2
    text = (tmp_path / "triangle_signals.md").read_text()
    train = 100 * np.array([r["train_accuracy"] for r in runs])
    line = f"SCNN, hodge edition: training accuracy {train.mean():.1f} ± {train.std():.1f} %"
    assert line in text
    for name in ("triangle_signals.json", "triangle_signals.csv", "triangle_signals.png"):
        assert (tmp_path / name).stat().st_size > 0
