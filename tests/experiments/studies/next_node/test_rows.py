"""Next-node prediction from an encoder (frozen, fine-tuned, scratch) and its baselines."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from experiments.studies.next_node import next_node_samples
from experiments.studies.next_node import rows as nn_
from topo_contrastive import ComplexOperators
from topo_contrastive.training import get_config


@pytest.fixture(scope="module")
def setup(tiny_data):
    samples = next_node_samples(tiny_data.complex, tiny_data.dataset.paths(), seed=0)
    cfg = get_config("SCL", "trajectory", hidden_channels=8, num_layers=2)
    torch.manual_seed(0)
    encoder = tiny_data.encoder(cfg).eval()
    return samples, encoder, tiny_data.split(0)


def _state(m):
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


def test_markov_and_uniform_on_hand_built_paths():
    """Transitions counted from the training prefixes and next nodes; ties to the lowest id."""
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [1, 3], [2, 3], [3, 4]], [])
    paths = [[0, 1, 2, 3], [0, 1, 3, 4], [0, 1, 2, 3], [4, 3, 1, 2], [2, 1, 0, 1]]
    s = next_node_samples(ops, paths, truncate=False)
    # samples: (prefix -> next) 0,1 -> 2 | 0,1 -> 3 | 0,1 -> 2 | 4,3 -> 1 | 2,1 -> 0
    assert s.targets.tolist() == [2, 3, 2, 1, 0]
    # trained on samples 0-2: 1 -> 2 twice, 1 -> 3 once: from node 1 predict 2
    assert nn_.markov_accuracy(s, [0, 1, 2], [0, 1, 2]) == pytest.approx(2 / 3)
    # sample 3 (last node 3, never left in training): the lowest candidate, 1 = its target
    assert nn_.markov_accuracy(s, [0, 1, 2], [3]) == 1.0
    # sample 4 (last node 1; candidates 0, 2, 3): predicts 2, target 0
    assert nn_.markov_accuracy(s, [0, 1, 2], [4]) == 0.0
    # uniform: 1 / |candidates| (node 1 has 3 neighbours, node 3 has 3)
    assert nn_.uniform_accuracy(s, [0, 3]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="training and test"):
        nn_.markov_accuracy(s, [], [0])


def test_frozen_reuse_trains_only_the_head(tiny_data, setup):
    samples, encoder, split = setup
    before = _state(encoder)
    res = nn_.train_next_node(tiny_data, samples, encoder, "frozen", split["train"],
                              split["val"], split["test"], epochs=3)  # fmt: skip
    assert all(torch.equal(v, before[k]) for k, v in encoder.state_dict().items())
    assert 1 <= res.epoch <= res.epochs == 3 and 0.0 <= res.test_accuracy <= 1.0
    again = nn_.train_next_node(tiny_data, samples, encoder, "frozen", split["train"],
                                split["val"], split["test"], epochs=3)  # fmt: skip
    assert again == res  # same seed, same numbers
    # the kept epoch's predictions: candidates of their samples, and the test accuracy
    te = split["test"]
    pred = torch.as_tensor(res.test_predictions)
    assert pred.shape == (len(te),)
    assert bool(samples.candidates[torch.as_tensor(te), pred].all())
    hits = (pred == samples.targets[torch.as_tensor(te)]).double().mean()
    assert res.test_accuracy == pytest.approx(float(hits))


def test_untrained_row_uses_only_the_architecture_and_trains_only_the_head(tiny_data, setup):
    """"untrained": the encoder re-initialised from the seed, then frozen: the given weights
    never matter, the given encoder is unchanged, and the same seed gives the same numbers."""
    samples, encoder, split = setup
    before = _state(encoder)
    args = (split["train"], split["val"], split["test"])
    res = nn_.train_next_node(tiny_data, samples, encoder, "untrained", *args, epochs=3, seed=2)
    assert all(torch.equal(v, before[k]) for k, v in encoder.state_dict().items())
    other = copy.deepcopy(encoder)
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(-3.0).add_(0.5)  # other weights, same architecture
    assert nn_.train_next_node(tiny_data, samples, other, "untrained", *args, epochs=3,
                               seed=2) == res  # fmt: skip
    assert nn_.train_next_node(tiny_data, samples, other, "frozen", *args, epochs=3,
                               seed=2) != res  # fmt: skip
    cell = nn_.next_node_cell("untrained", tiny_data, samples, encoder, split, epochs=3, seed=2)
    assert cell["test_accuracy"] == res.test_accuracy and cell["epoch"] == res.epoch


def test_selection_never_reads_the_test_targets(tiny_data, setup):
    """Poisoned test targets change the test score only, never the kept epoch."""
    samples, encoder, split = setup
    te = torch.as_tensor(split["test"])
    poisoned_targets = samples.targets.clone()
    # another candidate of each test sample instead of its target
    cand = samples.candidates.clone()
    cand[te, samples.targets[te]] = False
    has_other = cand[te].any(1)
    poisoned_targets[te[has_other]] = cand[te[has_other]].float().argmax(1)
    poisoned = dataclasses.replace(samples, targets=poisoned_targets)
    for mode in ("finetune", "scratch"):
        a = nn_.train_next_node(tiny_data, samples, encoder, mode, split["train"], split["val"],
                                split["test"], epochs=3, seed=2)  # fmt: skip
        b = nn_.train_next_node(tiny_data, poisoned, encoder, mode, split["train"],
                                split["val"], split["test"], epochs=3, seed=2)  # fmt: skip
        assert (a.epoch, a.val_accuracy, a.train_accuracy) == (
            b.epoch, b.val_accuracy, b.train_accuracy)  # fmt: skip


def test_bad_arguments(tiny_data, setup):
    samples, encoder, split = setup
    tr, va, te = split["train"], split["val"], split["test"]
    with pytest.raises(ValueError, match="mode"):
        nn_.train_next_node(tiny_data, samples, encoder, "linear", tr, va, te)
    with pytest.raises(ValueError, match="disjoint"):
        nn_.train_next_node(tiny_data, samples, encoder, "frozen", tr, va, np.r_[te, tr[:1]])
    with pytest.raises(ValueError, match="`train_idx` must hold at least one sample index"):
        nn_.train_next_node(tiny_data, samples, encoder, "frozen", [], va, te)
    with pytest.raises(ValueError, match="epochs"):
        nn_.train_next_node(tiny_data, samples, encoder, "frozen", tr, va, te, epochs=0)
    other = dataclasses.replace(samples, flows=samples.flows[:, :-1])
    with pytest.raises(ValueError, match="another complex"):
        nn_.train_next_node(tiny_data, other, encoder, "frozen", tr, va, te)


def test_split_carves_validation_and_cells_match_train_next_node(tiny_data, setup):
    """next_node_split: the standard split where it has a validation part, else 20 % of the
    training samples (stratified with labels, random without); next_node_cell: the trained
    rows are train_next_node's numbers; an unknown row is refused."""
    samples, encoder, split = setup
    got = nn_.next_node_split(tiny_data, 0)
    assert all(np.array_equal(got[k], split[k]) for k in ("train", "val", "test"))
    no_val = {**split, "val": np.zeros(0, dtype=np.int64)}
    for labels in (tiny_data.labels, None):  # copies: the session's data stay as they are
        data = dataclasses.replace(tiny_data, labels=labels)
        data.split = lambda seed, s=no_val: s  # type: ignore[method-assign]
        carved = nn_.next_node_split(data, 3)
        assert carved["val"].size == int(split["train"].size * 0.2)
        assert np.array_equal(np.sort(np.r_[carved["train"], carved["val"]]), split["train"])
        assert np.array_equal(carved["test"], split["test"])
    cell = nn_.next_node_cell("frozen", tiny_data, samples, encoder, split, epochs=2, seed=1)
    res = nn_.train_next_node(tiny_data, samples, encoder, "frozen", split["train"],
                              split["val"], split["test"], epochs=2, seed=1)  # fmt: skip
    assert cell == {"test_accuracy": res.test_accuracy, "val_accuracy": res.val_accuracy,
                    "train_accuracy": res.train_accuracy, "epoch": res.epoch}  # fmt: skip
    ft = nn_.next_node_cell("finetune", tiny_data, samples, encoder, split, epochs=2, seed=1,
                            encoder_lr=0.05)  # fmt: skip
    res = nn_.train_next_node(tiny_data, samples, encoder, "finetune", split["train"],
                              split["val"], split["test"], epochs=2, seed=1, encoder_lr=0.05)
    assert ft["train_accuracy"] == res.train_accuracy and ft["epoch"] == res.epoch
    assert ft["test_accuracy"] == res.test_accuracy
    default = nn_.train_next_node(tiny_data, samples, encoder, "finetune", split["train"],
                                  split["val"], split["test"], epochs=2, seed=1)  # fmt: skip
    assert default != res  # the learning rate reaches the run (so the equality above means it)
    assert nn_.next_node_cell("markov", tiny_data, samples, None, split) == {
        "test_accuracy": nn_.markov_accuracy(samples, split["train"], split["test"])}
    with pytest.raises(ValueError, match="row"):
        nn_.next_node_cell("svm", tiny_data, samples, encoder, split)


def test_without_validation_the_last_epoch_is_kept(tiny_data, setup):
    """No validation samples: nothing is selected, the last epoch is kept (its validation
    accuracy NaN), whatever the epoch count; next_node_cell reports it as None."""
    samples, encoder, split = setup
    tr, te = split["train"], split["test"]
    res = nn_.train_next_node(tiny_data, samples, encoder, "finetune", tr, [], te, epochs=3,
                              seed=1)  # fmt: skip
    assert res.epoch == res.epochs == 3 and np.isnan(res.val_accuracy)
    short = nn_.train_next_node(tiny_data, samples, encoder, "finetune", tr, [], te, epochs=2,
                                seed=1)  # fmt: skip
    assert short.epoch == 2
    cell = nn_.next_node_cell("finetune", tiny_data, samples, encoder,
                              {"train": tr, "val": np.zeros(0, np.int64), "test": te},
                              epochs=3, seed=1)  # fmt: skip
    assert cell["val_accuracy"] is None and cell["epoch"] == 3
    assert cell["test_accuracy"] == res.test_accuracy


def test_labelled_split_draws_a_fraction_of_train_and_val(tiny_data):
    split = nn_.next_node_split(tiny_data, 0)
    assert {k: v.tolist() for k, v in nn_.labelled_split(split, 1.0, 3).items()} == {
        k: sorted(v.tolist()) for k, v in split.items()}  # fmt: skip
    n_tr, n_va = split["train"].size, split["val"].size
    half = nn_.labelled_split(split, 0.5, 3)
    assert half["train"].size == round(0.5 * n_tr)
    assert set(half["train"]) <= set(split["train"]) and set(half["val"]) <= set(split["val"])
    assert np.array_equal(half["test"], np.sort(split["test"]))  # the test set unchanged
    want_val = round(0.5 * n_va)
    assert half["val"].size == (want_val if want_val >= 5 else 0)
    again = nn_.labelled_split(split, 0.5, 3)
    assert all(np.array_equal(again[k], half[k]) for k in half)  # same seed, same draw
    tiny = nn_.labelled_split(split, 1e-6, 3)  # at least one training prefix, no selection
    assert tiny["train"].size == 1 and tiny["val"].size == 0
    few = nn_.labelled_split(split, 0.5, 3, min_val=10**6)
    assert few["val"].size == 0
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="fraction"):
            nn_.labelled_split(split, bad, 0)
    for bad in (True, "0.5"):  # not a number: a TypeError
        with pytest.raises(TypeError, match="fraction"):
            nn_.labelled_split(split, bad, 0)
    with pytest.raises(ValueError, match="min_val"):
        nn_.labelled_split(split, 0.5, 0, min_val=0)


def test_rows_at_a_labelled_fraction(tiny_data, setup):
    """next_node_rows(fraction=...): every row on the same labelled subset; the Markov chain
    counts only the labelled training prefixes."""
    _, encoder, _ = setup
    out = nn_.next_node_rows(encoder, tiny_data, [0], epochs=2, fraction=0.25)
    assert out["fraction"] == 0.25
    samples = next_node_samples(tiny_data.complex, tiny_data.dataset.paths(), seed=0)
    sub = nn_.labelled_split(nn_.next_node_split(tiny_data, 0), 0.25, 0)
    rows = {r["row"]: r for r in out["rows"]}
    assert rows["markov"]["mean_accuracy"] == pytest.approx(
        100 * nn_.markov_accuracy(samples, sub["train"], sub["test"]))
    cell = nn_.next_node_cell("frozen", tiny_data, samples, encoder, sub, epochs=2, seed=0)
    assert rows["frozen"]["mean_accuracy"] == pytest.approx(100 * cell["test_accuracy"])


def test_cell_gives_the_kept_epochs_predictions_on_request(tiny_data, setup):
    """next_node_cell(predictions=True): the trained row's test predictions are those of
    train_next_node's kept epoch; without the flag (and for the baselines) none are given."""
    samples, encoder, _ = setup
    split = nn_.next_node_split(tiny_data, 0)
    cell = nn_.next_node_cell("finetune", tiny_data, samples, encoder, split, epochs=2, seed=1,
                              predictions=True)  # fmt: skip
    res = nn_.train_next_node(tiny_data, samples, encoder, "finetune", split["train"],
                              split["val"], split["test"], epochs=2, seed=1)  # fmt: skip
    assert cell["test_predictions"] == list(res.test_predictions)
    assert cell["test_accuracy"] == res.test_accuracy
    plain = nn_.next_node_cell("finetune", tiny_data, samples, encoder, split, epochs=2, seed=1)
    assert "test_predictions" not in plain and plain["test_accuracy"] == res.test_accuracy
    base = nn_.next_node_cell("markov", tiny_data, samples, encoder, split, predictions=True)
    assert "test_predictions" not in base
