"""SCoNe's generalisation tests: reversed test paths and another region."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from experiments.studies.next_node import next_node_samples
from experiments.studies.next_node import rows as nn_
from experiments.studies.next_node import transfer as tr_
from topo_contrastive.training import get_config


@pytest.fixture(scope="module")
def encoder(tiny_data):
    cfg = get_config("SCL", "trajectory", hidden_channels=8, num_layers=2)
    torch.manual_seed(0)
    return tiny_data.encoder(cfg).eval()


def test_splits_hold_forward_then_reversed_samples_and_regions_by_label(tiny_data):
    samples, splits = tr_.transfer_splits(tiny_data, 2)
    paths = tiny_data.dataset.paths()
    m = len(paths)
    assert len(samples) == 2 * m
    fwd = next_node_samples(tiny_data.complex, paths, seed=2)
    rev = next_node_samples(tiny_data.complex, paths, reverse=True, seed=2)
    assert torch.equal(samples.targets[:m], fwd.targets)
    assert torch.equal(samples.targets[m:], rev.targets)
    assert torch.equal(samples.flows[m:], rev.flows)
    std = nn_.next_node_split(tiny_data, 2)
    assert all(np.array_equal(splits["test"][k], std[k]) for k in std)
    assert np.array_equal(splits["reversed"]["train"], std["train"])
    assert np.array_equal(splits["reversed"]["test"], std["test"] + m)
    labels = tiny_data.labels.numpy()
    region = splits["other region"]
    assert set(labels[region["train"]]) == {0} and set(labels[region["val"]]) == {0}
    assert set(labels[region["test"]]) == {1}
    assert np.array_equal(region["train"], std["train"][labels[std["train"]] == 0])
    # without labels there is no region test
    _, no_region = tr_.transfer_splits(dataclasses.replace(tiny_data, labels=None), 2)
    assert no_region["other region"] is None


def test_test_parts_are_the_accuracies_of_each_part(tiny_data, encoder):
    samples, splits = tr_.transfer_splits(tiny_data, 0)
    fwd, rev = splits["test"], splits["reversed"]
    te = np.concatenate([fwd["test"], rev["test"]])
    res = nn_.train_next_node(tiny_data, samples, encoder, "frozen", fwd["train"], fwd["val"],
                              te, epochs=3, seed=0, test_parts=(fwd["test"].size,
                                                                rev["test"].size))
    alone = nn_.train_next_node(tiny_data, samples, encoder, "frozen", fwd["train"],
                                fwd["val"], fwd["test"], epochs=3, seed=0)
    assert res.test_parts[0] == alone.test_accuracy  # the same run, scored on a part
    n = fwd["test"].size
    assert res.test_accuracy == pytest.approx(
        (res.test_parts[0] * n + res.test_parts[1] * rev["test"].size) / te.size
    )
    with pytest.raises(ValueError, match="add up"):
        nn_.train_next_node(tiny_data, samples, encoder, "frozen", fwd["train"], fwd["val"],
                            te, epochs=1, test_parts=(1, 2))


def test_transfer_table_has_every_row_under_every_test(tiny_data, encoder):
    calls = []
    out = tr_.next_node_transfer(encoder, tiny_data, [0], epochs=2,
                                 progress=lambda *a: calls.append(a))
    assert list(out["tests"]) == list(tr_.TESTS)
    for test in tr_.TESTS:
        assert [r["row"] for r in out["tests"][test]["rows"]] == list(nn_.ROWS)
    assert len(calls) == len(tr_.TESTS) * len(nn_.ROWS)
    # the Markov chain on reversed paths is the chain of the forward training paths
    samples, splits = tr_.transfer_splits(tiny_data, 0)
    markov = {r["row"]: r for r in out["tests"]["reversed"]["rows"]}["markov"]
    assert markov["mean_accuracy"] == pytest.approx(100 * nn_.markov_accuracy(
        samples, splits["reversed"]["train"], splits["reversed"]["test"]))
    # the forward test of a trained row is next_node_rows' number on the same seed
    rows = nn_.next_node_rows(encoder, tiny_data, [0], epochs=2)
    want = {r["row"]: r["mean_accuracy"] for r in rows["rows"]}
    got = {r["row"]: r["mean_accuracy"] for r in out["tests"]["test"]["rows"]}
    assert got == pytest.approx(want)
    # a selection of rows, in its order: the same cells as in the full run
    part = tr_.next_node_transfer(encoder, tiny_data, [0], epochs=2, rows=("untrained", "markov"))
    for test in tr_.TESTS:
        full = {r["row"]: r for r in out["tests"][test]["rows"]}
        assert [r["row"] for r in part["tests"][test]["rows"]] == ["untrained", "markov"]
        for r in part["tests"][test]["rows"]:
            assert r["splits"] == full[r["row"]]["splits"]
    for bad in ((), ("finetune", "lstm")):
        with pytest.raises(ValueError, match="`rows`"):
            tr_.next_node_transfer(encoder, tiny_data, [0], epochs=1, rows=bad)


def test_scone_without_topomodelx_is_refused_before_training(tiny_data, encoder, monkeypatch):
    """scone=True in an environment without TopoModelX: ImportError before any cell runs."""
    from experiments.studies.next_node import scone as next_node_scone

    if next_node_scone.scone_available():
        pytest.skip("TopoModelX is installed (tests/nn/test_topomodelx_interop.py runs the row)")
    calls = []
    with pytest.raises(ImportError, match="topomodelx"):
        tr_.next_node_transfer(encoder, tiny_data, [0], epochs=1, scone=True,
                               progress=lambda *a: calls.append(a))
    assert calls == []


def test_samples_of_other_complexes_are_not_joined(tiny_data):
    samples, _ = tr_.transfer_splits(tiny_data, 0)
    other = dataclasses.replace(samples, flows=samples.flows[:, :-1])
    with pytest.raises(ValueError, match="cannot join"):
        tr_.concat_samples(samples, other)


def test_no_seeds_are_refused_not_an_empty_result(tiny_data, encoder):
    with pytest.raises(ValueError, match="`seeds` is empty: give at least one seed"):
        tr_.next_node_transfer(encoder, tiny_data, [], epochs=1)
    with pytest.raises(ValueError, match="`seeds` holds the seed 3 twice"):
        tr_.next_node_transfer(encoder, tiny_data, [3, 3], epochs=1)
    with pytest.raises(TypeError, match=r"`seeds\[0\]` must be an int, got float"):
        tr_.next_node_transfer(encoder, tiny_data, [0.5], epochs=1)
