"""Reference rows beside an encoder's accuracy (:mod:`topo_contrastive.evaluation.references`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topo_contrastive.evaluation import linear_probe
from topo_contrastive.evaluation.probe import probe_splits, reference_features
from topo_contrastive.evaluation.references import (
    REFERENCE_ROWS,
    below_line,
    reference_rows,
    references_markdown,
    untrained_like,
)
from topo_contrastive.training import get_config
from topo_contrastive.training.loop import embed

SEEDS = [0, 1]


@pytest.fixture(scope="module")
def trained(tiny_data):
    """A 16-wide SCL encoder as `pretrain` starts it from seed 3 (the untrained row's twin)."""
    cfg = get_config("SCL", "trajectory", hidden_channels=16)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        return tiny_data.encoder(cfg).eval()


def test_untrained_like_is_the_pretraining_start(tiny_data, trained):
    fresh = untrained_like(trained, tiny_data, seed=3)
    assert fresh is not trained and not fresh.training
    for k, v in trained.state_dict().items():
        assert torch.equal(v, fresh.state_dict()[k]), k
    other = untrained_like(trained, tiny_data, seed=4)
    assert not torch.equal(other.convs[0].weight, trained.convs[0].weight)
    state = torch.random.get_rng_state()
    untrained_like(trained, tiny_data, seed=5)
    assert torch.equal(state, torch.random.get_rng_state())  # global RNG untouched


def test_rows_are_probed_on_the_same_splits(tiny_data, trained):
    enc = probe_splits(embed(trained, tiny_data), tiny_data, SEEDS, probe="svm")
    seen = []
    refs = reference_rows(
        trained, tiny_data, SEEDS, enc, seed=3, progress=lambda row, r: seen.append(row),
        probe="svm",
    )
    names = [r["row"] for r in refs["rows"]]
    assert names[0] == "encoder" and set(names[1:]) | set(refs["omitted"]) == set(REFERENCE_ROWS)
    assert seen == [n for n in names[1:] for _ in SEEDS]  # progress per row and split
    rows = {r["row"]: r for r in refs["rows"]}
    labels = tiny_data.labels.numpy()
    for s, split in zip(SEEDS, rows["raw"]["splits"], strict=True):
        idx = tiny_data.split(s)
        direct = linear_probe(
            tiny_data.flows.numpy(), labels, idx["train"], idx["test"], val_idx=idx["val"], seed=s
        )
        assert split["split_seed"] == s and split["test_accuracy"] == direct.test_accuracy
        assert split["C"] == direct.C
    flows = tiny_data.flows.double().numpy()
    assert np.array_equal(reference_features(tiny_data, "abs"), np.abs(flows))
    assert rows["abs"]["features"] == rows["raw"]["features"] == tiny_data.flows.shape[1]
    assert rows["harmonic"]["features"] == tiny_data.hodge.dims["harmonic"] > 0
    # the untrained encoder of the same seed is the encoder itself here: equal, not "below"
    assert rows["untrained"]["splits"] == rows["encoder"]["splits"]
    assert "untrained" not in refs["below"]
    acc = 100 * np.array([r["test_accuracy"] for r in rows["raw"]["splits"]])
    assert rows["raw"]["mean_accuracy"] == pytest.approx(acc.mean())
    assert rows["raw"]["std_accuracy"] == pytest.approx(acc.std())
    proto = refs["protocol"]
    idx = tiny_data.split(0)
    assert (proto["train"], proto["val"], proto["test"]) == tuple(
        len(idx[k]) for k in ("train", "val", "test")
    )
    assert proto["split_seeds"] == SEEDS and "stratified" in proto["selection"]
    assert proto["probe"] == "svm" and proto["C_grid"]


def test_the_default_probe_is_the_ridge_probe_on_every_row(tiny_data, trained):
    """reference_rows' default probe is the ridge probe, the same on every row and split."""
    from topo_contrastive.evaluation.references import protocol_line
    from topo_contrastive.evaluation.ridge_probe import ridge_probe

    enc = probe_splits(embed(trained, tiny_data), tiny_data, SEEDS, probe="ridge")
    refs = reference_rows(trained, tiny_data, SEEDS, enc, seed=3)
    assert refs["protocol"]["probe"] == "ridge" and refs["protocol"]["folds"] == "loo"
    assert "leave-one-out" in protocol_line(refs["protocol"])
    labels = tiny_data.labels.numpy()
    features = {"raw": tiny_data.flows.numpy(), "abs": np.abs(tiny_data.flows.numpy()),
                "harmonic": reference_features(tiny_data, "harmonic")}  # fmt: skip
    rows = {r["row"]: r for r in refs["rows"]}
    for name, feats in features.items():
        for s, split in zip(SEEDS, rows[name]["splits"], strict=True):
            idx = tiny_data.split(s)
            direct = ridge_probe(feats, labels, idx["train"], idx["test"], val_idx=idx["val"])
            assert split["test_accuracy"] == direct.test_accuracy
            assert split["alpha"] == direct.alpha and "C" not in split
    assert rows["untrained"]["splits"] == rows["encoder"]["splits"]


def _refs(encoder: float, **others: float) -> dict:
    rows = [{"row": "encoder", "label": "encoder", "features": 16, "mean_accuracy": encoder,
             "std_accuracy": 1.0, "splits": []}]  # fmt: skip
    for name, acc in others.items():
        rows.append({"row": name, "label": name, "features": 9, "mean_accuracy": acc,
                     "std_accuracy": 0.5, "splits": []})  # fmt: skip
    below = sorted((n for n, a in others.items() if a > encoder), key=lambda n: -others[n])
    return {"rows": rows, "below": below, "omitted": {}}


def test_below_line_names_exactly_the_better_rows():
    line = below_line(_refs(65.0, untrained=70.0, raw=93.5, abs=60.0, harmonic=93.0))
    assert line == (
        "the encoder (65.0 %) is below: raw flows 93.5 %, harmonic coordinates 93.0 %, "
        "untrained encoder 70.0 %"
    )
    assert "below" not in below_line(_refs(95.0, untrained=70.0, raw=95.0))  # a tie is not


def test_a_broken_encoder_is_below_the_raw_flows(tiny_data, trained):
    """An encoder whose embeddings are all zero scores at chance; the raw flows do not."""
    zero = untrained_like(trained, tiny_data, seed=3)
    with torch.no_grad():
        for p in zero.parameters():
            p.zero_()
    enc = probe_splits(embed(zero, tiny_data), tiny_data, SEEDS)
    refs = reference_rows(zero, tiny_data, SEEDS, enc, seed=3)
    rows = {r["row"]: r for r in refs["rows"]}
    assert rows["raw"]["mean_accuracy"] > rows["encoder"]["mean_accuracy"]
    assert "raw" in refs["below"]
    enc = rows["encoder"]["mean_accuracy"]
    assert refs["line"].startswith(f"the encoder ({enc:.1f} %) is below:")
    assert f"raw flows {rows['raw']['mean_accuracy']:.1f} %" in refs["line"]
    summary = {"dataset": "trajectory", "metadata": {"config": "SCL"}, "references": refs}
    md = references_markdown(summary)
    assert "| raw flows |" in md and "\\|flows\\|" in md and "The encoder (" in md


def test_harmonic_row_is_omitted_without_harmonic_space(tiny_data, trained, monkeypatch):
    hodge_type = type(tiny_data.hodge)
    dims = dict(tiny_data.hodge.dims, harmonic=0)
    monkeypatch.setattr(hodge_type, "dims", property(lambda self: dims))
    enc = probe_splits(embed(trained, tiny_data), tiny_data, [0])
    refs = reference_rows(trained, tiny_data, [0], enc, seed=3)
    assert "harmonic" in refs["omitted"] and "beta_1 = 0" in refs["omitted"]["harmonic"]
    assert "harmonic" not in [r["row"] for r in refs["rows"]]


def test_reference_features_rejects_unknown_kinds(tiny_data):
    with pytest.raises(ValueError, match="'abs'"):
        reference_features(tiny_data, "squared")


def test_the_harmonic_row_on_a_cell_complex_is_the_sketch_not_omitted():
    # the sketch used to refuse a cell complex ("use `faces` instead of `triangles`") and
    # the row was omitted; its features are the flows times the sketch P_H G
    from torch_geometric.data import Data

    from tests._cell_complexes import random_planar_cell_complex
    from topo_contrastive.nn.harmonic_features import harmonic_sketch, use_harmonic_budget
    from topo_contrastive.training.data import ExperimentData

    ops = random_planar_cell_complex(np.random.default_rng(4), 60, fill=0.6)
    assert not ops.is_simplicial

    class Flows(list):
        complex = ops

        def split(self, seed):  # 24 / 8 / 8 samples
            perm = torch.from_numpy(np.random.default_rng(seed).permutation(len(self)))
            parts = {"train": perm[:24], "val": perm[24:32], "test": perm[32:]}
            return {k: torch.zeros(len(self), dtype=torch.bool).index_fill_(0, v, True)
                    for k, v in parts.items()}  # fmt: skip

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((40, ops.num_edges))).float()
    data = ExperimentData.from_dataset(
        Flows(Data(x_1=f[:, None], y=torch.tensor([i % 2])) for i, f in enumerate(x))
    )
    budget = 8 * ops.num_edges * (2 * 2 + 5 * 2 + 13)  # a sketch of 2 directions
    with use_harmonic_budget(budget):
        enc = probe_splits(data.flows.numpy(), data, SEEDS, probe="ridge")
        refs = reference_rows(None, data, SEEDS, enc, rows=("harmonic",), probe="ridge")
    row = {r["row"]: r for r in refs["rows"]}["harmonic"]
    assert data.hodge.dims["harmonic"] > 27  # the budget held no basis before either
    assert refs["omitted"] == {} and row["features"] == 2
    assert row["label"] == f"harmonic sketch G^T P_H x (k = 2 of beta_1 = "\
        f"{data.hodge.dims['harmonic']})"  # fmt: skip
    with use_harmonic_budget(budget):
        feats = reference_features(data, "harmonic")
    np.testing.assert_allclose(feats, x.double().numpy() @ harmonic_sketch(data.hodge, 2))
