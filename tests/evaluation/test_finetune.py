"""Fine-tuning and the low-label probe (:mod:`topo_contrastive.evaluation.finetune`,
:mod:`experiments.studies.label_efficiency.probe`) on the tiny trajectory task."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from experiments.studies.label_efficiency.probe import low_label_probe
from topo_contrastive.evaluation.finetune import fine_tune, supervised_from_scratch
from topo_contrastive.training import get_config
from topo_contrastive.training.loop import embed


@pytest.fixture(scope="module")
def setup(tiny_data):
    cfg = get_config("SCL", "trajectory", hidden_channels=8)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        encoder = tiny_data.encoder(cfg).eval()
    split = tiny_data.split(0)
    return cfg, encoder, split


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _poisoned(data, test_idx):
    """``data`` with every test label flipped (the test split's labels are garbage)."""
    labels = data.labels.clone()
    labels[torch.as_tensor(test_idx)] = 1 - labels[torch.as_tensor(test_idx)]
    return dataclasses.replace(data, labels=labels)


def test_fine_tuning_copies_the_encoder(tiny_data, setup):
    cfg, encoder, split = setup
    before = _state(encoder)
    res = fine_tune(tiny_data, encoder, cfg, split["train"], split["test"], epochs=2)
    assert _equal(before, _state(encoder))  # the caller's encoder is untouched
    assert res.encoder is not encoder and not _equal(before, _state(res.encoder))
    assert res.selection.rule == "fixed" and res.selection.epochs == 2 and len(res.losses) == 2


def test_frozen_fine_tuning_leaves_the_encoder_bit_identical(tiny_data, setup):
    cfg, encoder, split = setup
    res = fine_tune(tiny_data, encoder, cfg, split["train"], split["test"], epochs=3, frozen=True)
    assert _equal(_state(encoder), _state(res.encoder))
    assert res.frozen and res.record()["encoder_lr"] is None


def test_same_seed_same_numbers(tiny_data, setup):
    cfg, encoder, split = setup
    runs = [
        fine_tune(tiny_data, encoder, cfg, split["train"], split["test"], max_epochs=3, seed=s)
        for s in (4, 4, 5)
    ]
    assert runs[0].losses == runs[1].losses and runs[0].selection == runs[1].selection
    assert _equal(_state(runs[0].encoder), _state(runs[1].encoder))
    assert runs[0].losses != runs[2].losses


def test_selection_never_sees_the_test_labels(tiny_data, setup):
    cfg, encoder, split = setup
    labels = tiny_data.labels.numpy()
    assert np.bincount(labels[split["train"]]).min() >= 5  # the cross-validated rule runs
    poisoned = _poisoned(tiny_data, split["test"])
    for frozen in (True, False):
        a, b = (
            fine_tune(d, encoder, cfg, split["train"], split["test"], max_epochs=3, frozen=frozen)
            for d in (tiny_data, poisoned)
        )
        assert a.selection.rule == "cv" and a.selection == b.selection
        assert a.losses == b.losses and a.train_accuracy == b.train_accuracy
        assert b.test_accuracy == pytest.approx(1 - a.test_accuracy)  # only the score moves
    probe = [
        low_label_probe(embed(encoder, d), d.labels.numpy(), split["train"], split["test"])
        for d in (tiny_data, poisoned)
    ]
    assert probe[0].selection == "cv" and probe[0].C == probe[1].C
    assert probe[0].scaling == probe[1].scaling and probe[0].cv_accuracy == probe[1].cv_accuracy
    assert probe[1].test_accuracy == pytest.approx(1 - probe[0].test_accuracy)


def test_defaults_below_five_labels_per_class(tiny_data, setup):
    cfg, encoder, split = setup
    labels = tiny_data.labels.numpy()
    few = np.concatenate([split["train"][labels[split["train"]] == c][:2] for c in (0, 1)])
    res = fine_tune(tiny_data, encoder, cfg, few, split["test"], max_epochs=2)
    assert res.selection.rule == "default" and res.selection.epochs == 2
    probe = low_label_probe(tiny_data.flows.numpy(), labels, few[[0, 2]], split["test"])
    assert (probe.selection, probe.C, probe.scaling) == ("default", 1.0, "l2")
    val = fine_tune(tiny_data, encoder, cfg, few, split["test"], max_epochs=3, val_idx=split["val"])
    assert val.selection.rule == "validation" and len(val.selection.curve) == 3
    assert val.selection.epochs == int(np.argmax(val.selection.curve)) + 1


def test_supervised_from_scratch_uses_the_configuration(tiny_data, setup):
    _, _, split = setup
    cfg = get_config("SCNN", "trajectory", hidden_channels=8, lr=0.01)
    few = split["train"][:6]
    a = supervised_from_scratch(tiny_data, cfg, few, split["test"], max_epochs=2)
    b = supervised_from_scratch(tiny_data, cfg, few, split["test"], max_epochs=2)
    assert a.selection.encoder_lr == 0.01 and a.head_lr == 0.01 and not a.frozen
    assert a.losses == b.losses
    with pytest.raises(TypeError, match="config"):
        supervised_from_scratch(tiny_data, "SCNN", split["train"], split["test"])


def test_bad_input(tiny_data, setup):
    cfg, encoder, split = setup
    tr, te = split["train"], split["test"]
    with pytest.raises(ValueError, match="`head` must be one of linear, mlp, got 'cnn'"):
        fine_tune(tiny_data, encoder, cfg, tr, te, head="cnn")
    with pytest.raises(TypeError, match="`encoder` must be an SCNN, got Linear"):
        fine_tune(tiny_data, torch.nn.Linear(2, 2), cfg, tr, te)
    with pytest.raises(ValueError, match="`train_idx` and `test_idx` share 1 sample"):
        fine_tune(tiny_data, encoder, cfg, tr, np.r_[te, tr[:1]])
    with pytest.raises(ValueError, match="`encoder_lr` must be a finite number > 0, got -1"):
        fine_tune(tiny_data, encoder, cfg, tr, te, encoder_lr=-1)
    with pytest.raises(ValueError, match=r"`test_idx` must hold indices in \[0, 40\)"):
        fine_tune(tiny_data, encoder, cfg, tr, [999])
    with pytest.raises(ValueError, match="needs labels"):
        fine_tune(dataclasses.replace(tiny_data, labels=None), encoder, cfg, tr, te)
    with pytest.raises(ValueError, match="`classifier` must be one of logistic, svm"):
        low_label_probe(tiny_data.flows.numpy(), tiny_data.labels.numpy(), tr, te, classifier="knn")
    res = fine_tune(tiny_data, encoder, cfg, tr, te, head="mlp", epochs=1, frozen=True)
    assert res.head == "mlp"


def test_evaluate_adds_fine_tuned_rows_on_the_same_splits(tiny_data, setup, tmp_path, monkeypatch):
    import functools

    from topo_contrastive.cli._runs import evaluate_saved
    from topo_contrastive.evaluation import references

    fast = functools.partial(references.fine_tune_rows, max_epochs=2)
    monkeypatch.setattr(references, "fine_tune_rows", fast)
    _, encoder, _ = setup
    out = tmp_path / "eval.json"
    summary = evaluate_saved(encoder, tiny_data, [2], metadata={"seed": 0}, out=out,
                             references=False, fine_tune=True)  # fmt: skip
    rows = {r["row"]: r for r in summary["references"]["rows"]}
    assert list(rows) == ["encoder", "finetune", "finetune_control"]
    for name in ("finetune", "finetune_control"):
        (split,) = rows[name]["splits"]
        assert split["split_seed"] == 2 and split["selection"] == "validation"
        assert split["epochs"] <= 2
    assert "Fine-tuned rows: linear head" in references.references_markdown(summary)
    assert out.with_suffix(".md").is_file()


def test_evaluate_adds_the_supervised_row_trained_as_supervised_from_scratch(
    tiny_data, setup, tmp_path
):
    """``evaluate --supervised``: on every split, the row equals supervised_from_scratch with
    the encoder's architecture (same seed, same labels, epoch on the validation part), and the
    test labels do not change what is trained (only the score)."""
    from topo_contrastive.cli._runs import evaluate_saved
    from topo_contrastive.evaluation import references

    _, encoder, _ = setup
    sup = get_config("SCNN", "trajectory", hidden_channels=8).replace(epochs=3)
    out = tmp_path / "eval.json"
    summary = evaluate_saved(encoder, tiny_data, [1, 2], metadata={"seed": 0}, out=out,
                             references=False, supervised=sup)  # fmt: skip
    rows = {r["row"]: r for r in summary["references"]["rows"]}
    assert list(rows) == ["encoder", "supervised"]
    for got in rows["supervised"]["splits"]:
        idx = tiny_data.split(got["split_seed"])
        want = supervised_from_scratch(tiny_data, sup, idx["train"], idx["test"],
                                       val_idx=idx["val"], seed=got["split_seed"])  # fmt: skip
        assert got["test_accuracy"] == want.test_accuracy
        assert got["train_accuracy"] == want.train_accuracy
        assert got["epochs"] == want.selection.epochs <= 3
        assert got["selection"] == "validation"
    assert "Supervised row: an SCNN of the encoder's architecture" in out.with_suffix(
        ".md"
    ).read_text()
    # poisoned test labels: the same training, so the same training accuracy
    (s,) = references.supervised_row(encoder, _poisoned(tiny_data, idx["test"]), [2], sup)[
        "splits"
    ]
    assert s["train_accuracy"] == rows["supervised"]["splits"][1]["train_accuracy"]
    with pytest.raises(TypeError, match="config"):
        references.supervised_row(encoder, tiny_data, [2], "SCNN")
