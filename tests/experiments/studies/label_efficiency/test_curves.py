"""The label-efficiency curves (:mod:`experiments.studies.label_efficiency.curves`) on the
tiny trajectory task (20 train / 10 test samples, two classes)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from experiments.studies.label_efficiency import curves as le
from experiments.studies.label_efficiency.curves import labelled_subsets, resolve_rows
from experiments.study import Settings
from topo_contrastive.cli import _runs as runs
from topo_contrastive.evaluation import finetune

FRACTIONS = (0.1, 0.25, 0.5, 1.0)
TINY = dict(fractions=(0.1, 1.0), draws=2, label_epochs=2, hidden=8)


def label_efficiency(data, out, task, **kw):
    return le.label_efficiency(data, Settings(out, **kw), task)


def test_subsets_are_stratified_nested_and_fixed(tiny_data):
    labels = tiny_data.labels.numpy()
    train = tiny_data.split(0)["train"]
    subsets = labelled_subsets(labels, train, FRACTIONS, draws=3, seed=0)
    assert subsets.keys() == {(f, d) for f in FRACTIONS for d in range(3)}
    counts = np.bincount(labels[train])
    for (f, _d), idx in subsets.items():
        assert idx.size == max(1, round(f * train.size)) and np.isin(idx, train).all()
        assert np.unique(idx).size == idx.size
        per_class = np.bincount(labels[idx], minlength=2)
        assert per_class.min() >= 1  # every class has a label
        assert np.abs(per_class - f * counts).max() <= 1  # stratified
    for d in range(3):  # nested within a draw
        for small, large in zip(FRACTIONS[:-1], FRACTIONS[1:], strict=True):
            assert np.isin(subsets[(small, d)], subsets[(large, d)]).all()
    assert not np.array_equal(subsets[(0.25, 0)], subsets[(0.25, 1)])  # draws differ
    again = labelled_subsets(labels, train, FRACTIONS, draws=3, seed=0)
    assert all(np.array_equal(subsets[k], again[k]) for k in subsets)


def test_bad_fractions_and_labels(tiny_data):
    labels = tiny_data.labels.numpy()
    train = tiny_data.split(0)["train"]
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"must be in \(0, 1\]"):
            labelled_subsets(labels, train, [bad])
    with pytest.raises(ValueError, match="gives 1 label.*fewer than the 2 classes"):
        labelled_subsets(labels, train, [0.01])
    one_class = train[labels[train] == 0]
    with pytest.raises(ValueError, match=r"class\(es\) \[1\] have no sample in the training"):
        labelled_subsets(labels, one_class, [0.5])
    with pytest.raises(ValueError, match="needs labels"):
        label_efficiency(dataclasses.replace(tiny_data, labels=None), "x", "trajectory")
    with pytest.raises(ValueError, match="unknown row 'nope'"):
        resolve_rows(["nope"])


def test_rows_resolve_by_kind_and_key():
    keys = [r.key for r in resolve_rows(["probe", "control:hodge", "raw"])]
    assert keys == ["probe:SSCL_Spec:paper", "probe:SSCL_Spec:hodge", "probe:SCL:paper",
                    "probe:SCL:hodge", "control:hodge", "raw"]  # fmt: skip
    assert len(resolve_rows()) == 17


def test_cells_are_written_and_resumed_without_recomputation(tiny_data, tmp_path, monkeypatch):
    out = tmp_path / "le"
    rows = ["raw", "harmonic", "control:paper"]
    first = label_efficiency(tiny_data, out, "trajectory", rows=rows, **TINY)
    assert first.computed_cells == 3 * 2 * 2 and first.resumed_cells == 0
    names = {p.name for p in out.iterdir()}
    assert {"label_efficiency.json", "label_efficiency.csv", "label_efficiency.md",
            "label_efficiency.png", "COMPLETE"} <= names  # fmt: skip
    payload = json.loads((out / "label_efficiency.json").read_text())
    assert payload["complete"] and len(payload["records"]) == 12
    by_cell = {}
    for r in payload["records"]:  # the same subsets for every row
        by_cell.setdefault((r["fraction"], r["draw"]), set()).add(r["subset"])
    assert all(len(v) == 1 for v in by_cell.values())
    md = (out / "label_efficiency.md").read_text()
    assert "| raw flows |" in md and "best pre-trained row" not in md  # no pre-trained row

    calls = []
    monkeypatch.setattr(finetune, "fine_tune", lambda *a, **k: calls.append(1) / 0)
    again = label_efficiency(tiny_data, out, "trajectory", rows=rows, resume=True, **TINY)
    assert calls == [] and again.computed_cells == 0 and again.resumed_cells == 12
    stamps = {r["cell"]: r["finished_at"] for r in payload["records"]}
    assert {r["cell"]: r["finished_at"] for r in again.records} == stamps

    before = (out / "label_efficiency.json").read_bytes()
    with pytest.raises(ValueError, match="other settings"):
        label_efficiency(tiny_data, out, "trajectory", rows=rows, resume=True,
                         **{**TINY, "draws": 3})  # fmt: skip
    assert (out / "label_efficiency.json").read_bytes() == before


def test_resume_refuses_another_commands_folder(tiny_data, tmp_path):
    (tmp_path / "runs.json").write_text("{}")
    with pytest.raises(ValueError, match="holds no label_efficiency.json but runs.json"):
        label_efficiency(tiny_data, tmp_path, "trajectory", rows=["raw"], resume=True, **TINY)
    (tmp_path / "label_efficiency.json").write_text(json.dumps({"command": "reproduce"}))
    with pytest.raises(ValueError, match="not written by `label-efficiency`"):
        label_efficiency(tiny_data, tmp_path, "trajectory", rows=["raw"], resume=True, **TINY)


def test_encoders_are_pretrained_once(tiny_data, tmp_path, monkeypatch):
    calls = []
    real = runs.pretrain_to_folder
    monkeypatch.setattr(
        runs, "pretrain_to_folder", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    opts = dict(TINY, fractions=(0.5,), epochs=1)
    label_efficiency(tiny_data, tmp_path, "trajectory", rows=["probe:SCL:paper"], **opts)
    assert len(calls) == 1 and (tmp_path / "encoders" / "SCL-paper-seed0" / "COMPLETE").is_file()
    res = label_efficiency(tiny_data, tmp_path, "trajectory", resume=True,
                           rows=["probe:SCL:paper", "finetune:SCL:paper"], **opts)  # fmt: skip
    assert len(calls) == 1  # the checkpoint was loaded, not pre-trained again
    assert res.resumed_cells == 2 and res.computed_cells == 2
    assert "- 50 %: no reference row" in (tmp_path / "label_efficiency.md").read_text()


def test_large_harmonic_space_is_reduced(tiny_data, tmp_path, monkeypatch):
    monkeypatch.setattr(le, "HARMONIC_MAX", 1)
    res = label_efficiency(tiny_data, tmp_path, "trajectory", rows=["harmonic"],
                           **dict(TINY, draws=1))  # fmt: skip
    assert "top 1 principal directions over all flows" in res.records[0]["label"]


def test_reduce_harmonic_is_the_top_principal_directions_over_all_flows():
    from experiments.studies.label_efficiency.curves import reduce_harmonic

    rng = np.random.default_rng(0)
    small = rng.normal(size=(30, 5))
    assert reduce_harmonic(small, keep=5) is small
    feats = rng.normal(size=(40, 12)) @ np.diag(np.arange(12, 0, -1.0))
    red = reduce_harmonic(feats, keep=3)
    centred = feats - feats.mean(0)
    _, vecs = np.linalg.eigh(centred.T @ centred)
    naive = centred @ vecs[:, ::-1][:, :3]  # the top 3 eigenvectors of the scatter matrix
    np.testing.assert_allclose(np.abs(red), np.abs(naive), atol=1e-8)  # up to signs
