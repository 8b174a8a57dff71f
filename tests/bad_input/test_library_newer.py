# ruff: noqa: E501  (the case tables keep one case per line)
"""Bad input to the newer Python APIs (next-node prediction, fine-tuning, label efficiency, the
HodgeReadout, user labels): every case raises ``ValueError`` or ``TypeError`` naming the
argument, or gives the right answer. One case per class of fault: numpy scalars where Python
ones are accepted, NaN/inf in a signal, label values of any integer type, index arguments,
learning rates, counts and seeds, folds, a complex with beta_1 = 0.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.label_efficiency.subsets import labelled_subsets
from experiments.studies.next_node import NextNodeHead
from experiments.studies.next_node import rows as nn_
from experiments.studies.next_node.samples import next_node_samples
from tests.bad_input.conftest import EDGES, TRIANGLES, expect
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.evaluation import finetune as ft
from topo_contrastive.io import load_encoder, save_encoder
from topo_contrastive.nn import SCNN, HodgeReadout
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.embeddings import write_embeddings

NAN, INF = float("nan"), float("inf")
S = 40


def _data(tmp_path_factory, labels, name) -> ExperimentData:
    root = tmp_path_factory.mktemp(name)
    ops = ComplexOperators.from_simplices(EDGES, TRIANGLES)
    flows = np.random.default_rng(0).standard_normal((S, ops.num_edges)).astype(np.float32)
    EdgeFlows.write_npz(root / "d.npz", ops, flows, labels=labels)
    return ExperimentData.from_dataset(EdgeFlows(str(root / "ds"), file=str(root / "d.npz"), log=False), name)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return _data(tmp_path_factory, np.arange(S) % 2, "plain")


@pytest.fixture(scope="module")
def parts(data):
    """``(data, samples, encoder, tr, va, te)``: 20 next-node samples on the session's complex."""
    torch.manual_seed(0)
    samples = next_node_samples(data.complex, [[0, 1, 2, 3, 4]] * 20, truncate=False)
    return data, samples, SCNN(hidden_channels=4, num_layers=1), np.arange(10), np.arange(10, 15), np.arange(15, 20)


def _tnn(parts, **kw):
    data, samples, enc, tr, va, te = parts
    args = {"train_idx": tr, "val_idx": va, "test_idx": te, **{k: v for k, v in kw.items() if k.endswith("_idx")}}
    opts = {"epochs": 1, **{k: v for k, v in kw.items() if not k.endswith("_idx")}}
    return lambda: nn_.train_next_node(data, samples, enc, opts.pop("mode", "frozen"), args["train_idx"], args["val_idx"], args["test_idx"], **opts)


def _ft(parts, **kw):
    data, _, enc, _, _, _ = parts
    opts = {"epochs": 1, **kw}
    tr, te = opts.pop("train_idx", np.arange(20)), opts.pop("test_idx", np.arange(20, 40))
    return lambda: ft.fine_tune(data, enc, opts.pop("config", None), tr, te, **opts)


# (id, case(parts) -> call, exception, key words)
CASES = [
    # ---- train_next_node: indices, counts, rates, seeds
    ("tnn-negative-index", lambda p: _tnn(p, train_idx=np.array([-1, 2])), ValueError, r"`train_idx` must hold indices in \[0, 20\).*-1"),
    ("tnn-fractional-index", lambda p: _tnn(p, train_idx=np.array([0.5, 2.0])), TypeError, "`train_idx` must hold integer sample indices, got 0.5"),
    ("tnn-out-of-range-index", lambda p: _tnn(p, test_idx=np.array([15, 99])), ValueError, r"`test_idx` must hold indices in \[0, 20\).*99"),
    ("tnn-boolean-mask", lambda p: _tnn(p, train_idx=np.arange(20) < 10), TypeError, "`train_idx`.*boolean mask.*flatnonzero"),
    ("tnn-2d-index", lambda p: _tnn(p, train_idx=np.arange(10).reshape(2, 5)), ValueError, "`train_idx` must be a 1-D sequence"),
    ("tnn-repeated-index", lambda p: _tnn(p, train_idx=np.array([0, 0, 1])), ValueError, "`train_idx` holds the sample 0 2 times"),
    ("tnn-val-is-test", lambda p: _tnn(p, val_idx=np.arange(15, 20)), ValueError, "`val_idx` and `test_idx` share 5 sample"),
    ("tnn-val-in-train", lambda p: _tnn(p, val_idx=np.arange(3)), ValueError, "`train_idx` and `val_idx` share 3 sample"),
    ("tnn-batch-size-negative", lambda p: _tnn(p, batch_size=-1), ValueError, "`batch_size` must be >= 1, got -1"),
    ("tnn-batch-size-zero", lambda p: _tnn(p, batch_size=0), ValueError, "`batch_size` must be >= 1, got 0"),
    ("tnn-head-lr-nan", lambda p: _tnn(p, head_lr=NAN), ValueError, "`head_lr` must be a finite number > 0, got nan"),
    ("tnn-head-lr-negative", lambda p: _tnn(p, head_lr=-0.1), ValueError, "`head_lr` must be a finite number > 0"),
    ("tnn-encoder-lr-inf", lambda p: _tnn(p, mode="finetune", encoder_lr=INF), ValueError, "`encoder_lr` must be a finite number > 0, got inf"),
    ("tnn-weight-decay-negative", lambda p: _tnn(p, weight_decay=-1.0), ValueError, "`weight_decay` must be a finite number >= 0"),
    ("tnn-seed-negative", lambda p: _tnn(p, seed=-1), ValueError, "`seed` must be >= 0, got -1"),
    ("tnn-seed-overflow", lambda p: _tnn(p, seed=2**70), ValueError, r"`seed` must be an int in \[0, 2147483647\]"),
    ("tnn-epochs-float", lambda p: _tnn(p, epochs=2.0), TypeError, "`epochs` must be an int, got float"),
    ("tnn-epochs-huge", lambda p: _tnn(p, epochs=10**9), ValueError, "`epochs` must be <= 100000"),
    ("tnn-test-parts-negative", lambda p: _tnn(p, test_parts=[6, -1]), ValueError, r"`test_parts\[\]` must be >= 0"),
    ("tnn-encoder-not-scnn", lambda p: lambda: nn_.train_next_node(p[0], p[1], "enc", "frozen", p[3], p[4], p[5]), TypeError, "`encoder` must be an SCNN, got str"),
    ("tnn-mode-unknown", lambda p: _tnn(p, mode="linear"), ValueError, "`mode` must be one of"),
    # ---- fine_tune
    ("ft-val-is-test", lambda p: _ft(p, val_idx=np.arange(20, 40), max_epochs=1, epochs=None), ValueError, "`val_idx` and `test_idx` share 20 sample"),
    ("ft-val-in-train", lambda p: _ft(p, val_idx=np.arange(5), max_epochs=1, epochs=None), ValueError, "`train_idx` and `val_idx` share 5 sample"),
    ("ft-boolean-mask", lambda p: _ft(p, train_idx=np.arange(S) < 20), TypeError, "`train_idx`.*boolean mask"),
    ("ft-fractional-index", lambda p: _ft(p, train_idx=np.arange(20) + 0.5), TypeError, "`train_idx` must hold integer sample indices"),
    ("ft-repeated-index", lambda p: _ft(p, train_idx=np.r_[np.arange(20), 0]), ValueError, "`train_idx` holds the sample 0 2 times"),
    ("ft-folds-0", lambda p: _ft(p, folds=0), ValueError, "`folds` must be >= 2, got 0"),
    ("ft-folds-1", lambda p: _ft(p, folds=1), ValueError, "`folds` must be >= 2, got 1"),
    ("ft-encoder-lr-negative", lambda p: _ft(p, encoder_lr=-1e-3), ValueError, "`encoder_lr` must be a finite number > 0"),
    ("ft-head-lr-zero", lambda p: _ft(p, head_lr=0.0), ValueError, "`head_lr` must be a finite number > 0, got 0.0"),
    ("ft-encoder-lrs-negative", lambda p: _ft(p, encoder_lrs=[1e-3, -1.0]), ValueError, r"`encoder_lrs\[1\]` must be a finite number > 0"),
    ("ft-weight-decay-nan", lambda p: _ft(p, weight_decay=NAN), ValueError, "`weight_decay` must be a finite number >= 0, got nan"),
    ("ft-config-name", lambda p: _ft(p, config="SCL"), TypeError, "`config` must be an ExperimentConfig or None, got str"),
    ("ft-seed-negative", lambda p: _ft(p, seed=-1), ValueError, "`seed` must be >= 0"),
    ("ft-frozen-string", lambda p: _ft(p, frozen="no"), TypeError, "`frozen` must be a bool, got str"),
    ("ft-epochs-zero", lambda p: _ft(p, epochs=0), ValueError, "`epochs` must be >= 1, got 0"),
    ("ft-select-folds-1", lambda p: lambda: ft.select_hyperparameters(np.arange(20) % 2, np.arange(20), None, max_epochs=1, default_epochs=1, encoder_lr=1e-3, folds=1), ValueError, "`folds` must be >= 2"),
    # ---- next-node samples and rows
    ("nns-fractional-node", lambda p: lambda: next_node_samples(p[0].complex, [[0, 1.5, 2, 3]]), TypeError, "path 0 must hold integer node ids, got 1.5"),
    ("nns-2d-path", lambda p: lambda: next_node_samples(p[0].complex, [[[0, 1], [2, 3]]]), ValueError, r"path 0 must be a 1-D sequence of node ids, got shape \(2, 2\)"),
    ("nns-boolean-path", lambda p: lambda: next_node_samples(p[0].complex, [[True, False, True]]), TypeError, "path 0 must hold integer node ids, got dtype bool"),
    ("nns-seed-negative", lambda p: lambda: next_node_samples(p[0].complex, [[0, 1, 2, 3]], seed=-1), ValueError, "`seed` must be >= 0, got -1"),
    ("nns-truncate-string", lambda p: lambda: next_node_samples(p[0].complex, [[0, 1, 2, 3]], truncate="no"), TypeError, "`truncate` must be a bool"),
    ("nnrows-no-seeds", lambda p: lambda: nn_.next_node_rows(p[2], p[0], []), ValueError, "`seeds` is empty"),
    ("nnrows-seed-twice", lambda p: lambda: nn_.next_node_rows(p[2], p[0], [1, 1]), ValueError, "`seeds` holds the seed 1 twice"),
    ("nn-markov-boolean", lambda p: lambda: nn_.markov_accuracy(p[1], np.arange(20) < 5, [7]), TypeError, "`train_idx`.*boolean mask"),
    ("nn-split-not-a-mapping", lambda p: lambda: nn_.next_node_cell("uniform", p[0], p[1], p[2], [1, 2]), ValueError, "`split` must be a mapping"),
    ("nn-labelled-split-seed", lambda p: lambda: nn_.labelled_split({"train": p[3], "val": p[4], "test": p[5]}, 0.5, -3), ValueError, "`seed` must be >= 0"),
    # ---- labelled subsets (label efficiency)
    ("subsets-fraction-twice", lambda p: lambda: labelled_subsets(np.arange(S) % 2, np.arange(20), [0.5, 0.5], 2), ValueError, "fractions 0.5 and 0.5 both give 10"),
    ("subsets-fractions-same-size", lambda p: lambda: labelled_subsets(np.arange(S) % 2, np.arange(20), [0.5, 0.5000001], 2), ValueError, "both give 10 of the 20"),
    ("subsets-draws-float", lambda p: lambda: labelled_subsets(np.arange(S) % 2, np.arange(20), [0.5], 2.5), TypeError, "`draws` must be an int"),
    ("subsets-draws-huge", lambda p: lambda: labelled_subsets(np.arange(S) % 2, np.arange(20), [0.5], 10**9), ValueError, "`draws` must be <= 1000"),
    ("subsets-more-draws-than-subsets", lambda p: lambda: labelled_subsets(np.arange(S) % 2, np.arange(20), [0.1], 500), ValueError, "more than the 190 distinct subsets of 2"),
    ("subsets-seed-negative", lambda p: lambda: labelled_subsets(np.arange(S) % 2, np.arange(20), [0.5], 2, -1), ValueError, "`seed` must be >= 0"),
    # ---- NaN/inf in a signal, at every public forward
    ("scnn-nan", lambda p: lambda: p[2](torch.tensor([[0.0] * 5 + [NAN]]).unsqueeze(-1), p[0].complex.laplacians()), ValueError, "`x` contains NaN or inf values \\(sample 0;"),
    ("scnn-edge-embeddings-inf", lambda p: lambda: p[2].edge_embeddings(torch.zeros(3, 6, 1).index_fill_(0, torch.tensor([2]), INF), p[0].complex.laplacians()), ValueError, "`x` contains NaN or inf values \\(sample 2;"),
    ("hodge-readout-nan", lambda p: lambda: HodgeReadout(p[0].hodge)(torch.full((2, 6, 3), NAN)), ValueError, "`H` contains NaN or inf values \\(samples 0, 1"),
    ("next-node-head-inf", lambda p: lambda: NextNodeHead(4, p[0].complex)(torch.full((1, 6, 4), INF), torch.ones(1, 5, dtype=torch.bool)), ValueError, "`H` contains NaN or inf values"),
    ("experiment-data-nan", lambda p: lambda: ExperimentData(name="x", dataset=None, complex=p[0].complex, flows=p[0].flows.clone().index_fill_(0, torch.tensor([3]), NAN), labels=None, hodge=p[0].hodge), ValueError, "`flows` contains NaN or inf values \\(sample 3;"),
    # ---- the training and probing entry points
    ("pretrain-seed-negative", lambda p: lambda: _training().pretrain(p[0], _scl(), seed=-1, epochs=1), ValueError, "`seed` must be >= 0, got -1"),
    ("pretrain-seed-overflow", lambda p: lambda: _training().pretrain(p[0], _scl(), seed=2**70, epochs=1), ValueError, "`seed` must be an int in"),
    ("pretrain-epochs-huge", lambda p: lambda: _training().pretrain(p[0], _scl(), epochs=10**9), ValueError, "`epochs` must be <= 100000"),
    ("embed-batch-size-zero", lambda p: lambda: _training().embed(p[2], p[0], batch_size=0), ValueError, "`batch_size` must be >= 1, got 0"),
    ("probe-boolean-mask", lambda p: lambda: _llp()(p[0].flows.numpy(), p[0].labels.numpy(), np.arange(S) < 20, np.arange(20, 40)), TypeError, "`train_idx`.*boolean mask"),
    ("probe-overlap", lambda p: lambda: _llp()(p[0].flows.numpy(), p[0].labels.numpy(), np.arange(20), np.arange(10, 40)), ValueError, "`train_idx` and `test_idx` share 10 sample"),
    ("evaluate-encoder-no-seeds", lambda p: lambda: _protocol().evaluate_encoder(p[2], p[0], []), ValueError, "`split_seeds` is empty"),
    ("carve-validation-seed", lambda p: lambda: _supervised().carve_validation(np.arange(20), p[0].labels.numpy(), -1), ValueError, "`seed` must be >= 0"),
    ("embeddings-ids-twice", lambda p: lambda: write_embeddings("/nonexistent", np.zeros((2, 3)), sample_ids=[7, 7]), ValueError, "`sample_ids` must be unique, but 7 occurs 2 times"),
    # ---- labels
    ("labels-float-1e20", lambda p: lambda: EdgeFlows.write_npz("/nonexistent/x.npz", p[0].complex, p[0].flows.numpy(), labels=np.where(np.arange(S) % 2, 1e20, 0.0)), ValueError, "`labels` holds 1e\\+20 .*outside the int64 range"),
    ("labels-uint64-huge", lambda p: lambda: EdgeFlows.write_npz("/nonexistent/x.npz", p[0].complex, p[0].flows.numpy(), labels=np.where(np.arange(S) % 2, np.uint64(2**63 + 5), np.uint64(0))), ValueError, "outside the int64 range"),
    ("labels-fractional", lambda p: lambda: EdgeFlows.write_npz("/nonexistent/x.npz", p[0].complex, p[0].flows.numpy(), labels=np.arange(S) * 0.5), TypeError, "`labels` must hold integer class ids, got the value 0.5"),
    ("embeddings-labels-1e20", lambda p: lambda: write_embeddings("/nonexistent", np.zeros((2, 3)), labels=np.array([0.0, 1e20])), ValueError, "`labels` holds 1e\\+20"),
]


def _training():
    from topo_contrastive.training import loop as training

    return training


def _scl():
    from topo_contrastive.training.configs import get_config

    return get_config("SCL", "trajectory", hidden_channels=4)


def _llp():
    from experiments.studies.label_efficiency.probe import low_label_probe

    return low_label_probe


def _protocol():
    from experiments import protocol

    return protocol


def _supervised():
    from topo_contrastive.evaluation import supervised

    return supervised


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused(parts, case):
    _, make, exc, words = case
    expect(make(parts), exc, words)


def test_numpy_scalars_are_accepted(parts):
    """numpy integers and floats wherever Python ones are: the same result."""
    data, samples, enc, tr, va, te = parts
    a = nn_.train_next_node(data, samples, enc, "frozen", tr, va, te, epochs=1, head_lr=0.01, seed=3)
    b = nn_.train_next_node(data, samples, enc, "frozen", tr, va, te, epochs=np.int64(1),
                            head_lr=np.float32(0.01), seed=np.int32(3), batch_size=np.int16(100))  # fmt: skip
    assert a == b
    f1 = _reference_fine_tune(parts)
    f2 = ft.fine_tune(data, enc, None, np.arange(20), np.arange(20, 40), epochs=np.int64(1),
                      max_epochs=np.int64(40), folds=np.int8(3), seed=np.uint8(0))  # fmt: skip
    assert f1.losses == f2.losses
    assert HodgeReadout(data.hodge, harmonic_channels=np.int64(2)).harmonic_channels == 2
    assert nn_.labelled_split({"train": tr, "val": va, "test": te}, np.float64(0.5), np.int64(1))["train"].size == 5
    # integral floats are indices too
    c = nn_.train_next_node(data, samples, enc, "frozen", tr.astype(float), va, te, epochs=1, head_lr=0.01, seed=3)
    assert c == a


_REFERENCE: dict = {}


def _reference_fine_tune(parts):
    """One epoch of fine-tuning on labels 0 / 1 (computed once)."""
    if not _REFERENCE:
        _REFERENCE["ft"] = ft.fine_tune(parts[0], parts[2], None, np.arange(20), np.arange(20, 40), epochs=1)
    return _REFERENCE["ft"]


@pytest.mark.parametrize(
    "values",
    [np.where(np.arange(S) % 2, 1, -1), (np.arange(S) % 2) * 7 + 3, (np.arange(S) % 2).astype(float),
     np.where(np.arange(S) % 2, 2**40, 0)],
    ids=["minus-one-plus-one", "non-contiguous", "integral-floats", "two-to-the-40"],
)
def test_label_values_are_mapped_to_classes(tmp_path_factory, parts, values):
    """Any integer labels (or integral floats) are classes 0 .. C-1 in increasing order of value
    everywhere: the same fine-tuning as labels 0 / 1, the values kept for the files."""
    d = _data(tmp_path_factory, values, "labels")
    assert d.labels.tolist() == (np.arange(S) % 2).tolist()
    assert d.original_labels().tolist() == np.asarray(values).astype(np.int64).tolist()
    ref = _reference_fine_tune(parts)
    got = ft.fine_tune(d, parts[2], None, np.arange(20), np.arange(20, 40), epochs=1)
    assert got.losses == ref.losses and got.test_accuracy == ref.test_accuracy


@pytest.mark.parametrize(
    "simplices",
    [([[0, 1], [1, 2], [2, 3], [1, 4]], []), ([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])],
    ids=["tree", "filled-disc"],
)
def test_hodge_readout_without_harmonic_part(tmp_path, simplices):
    """beta_1 = 0: the HodgeReadout embeds, saves and loads (an empty harmonic basis)."""
    ops = ComplexOperators.from_simplices(*simplices)
    torch.manual_seed(0)
    enc = SCNN(hidden_channels=3, num_layers=1, readout=HodgeReadout(HodgeDecomposition(ops)))
    assert enc.readout.beta1 == 0
    x = torch.randn(4, ops.num_edges, 1)
    h = enc(x, ops.laplacians())
    assert h.shape == (4, 3)
    save_encoder(enc, tmp_path / "encoder.pt", complex=ops)
    loaded, _ = load_encoder(tmp_path / "encoder.pt", complex=ops)
    assert torch.equal(loaded(x, ops.laplacians()), h.detach())


def test_check_finite_can_be_switched_off(parts):
    data, _, enc, _, _, _ = parts
    x = torch.full((1, 6, 1), NAN)
    quiet = SCNN(hidden_channels=4, num_layers=1)
    quiet.check_finite = False
    assert torch.isnan(quiet(x, data.complex.laplacians())).all()
    assert SCNN.check_finite and HodgeReadout.check_finite and NextNodeHead.check_finite


def test_save_encoder_into_a_missing_folder(tmp_path, parts):
    expect(lambda: save_encoder(parts[2], tmp_path / "no" / "encoder.pt", complex=parts[0].complex),
           FileNotFoundError, ("cannot write '.*encoder.pt'", "its folder .* does not exist"))  # fmt: skip


def test_views_refuse_probabilities_of_another_budget(tmp_path, files):
    """A dataset fitted with one budget and a mask of another: refused, not drawn from the
    stored probabilities of the first."""
    from topo_contrastive.transforms import ContrastiveViews, HodgeSpectralMask

    views = ContrastiveViews(HodgeSpectralMask(budget=0.1, generator=0))
    ds = EdgeFlows(str(tmp_path / "ds"), file=str(files["data"]), transform=views, log=False)
    ds = views.fit(ds)
    assert ds[0].x_1_view1.shape == ds[0].x_1.shape  # the fitted budget: fine
    ds.transform = ContrastiveViews(HodgeSpectralMask(0.9, hodge=ds.complex, generator=0))
    expect(lambda: ds[0], ValueError, ("`data.drop_prob` was computed with other settings", "budget=0.9", "fit"))
    ds.transform = ContrastiveViews(HodgeSpectralMask(0.1, hodge=ds.complex, generator=0))
    assert ds[0].x_1_view1.shape == ds[0].x_1.shape  # the same settings: accepted


def test_check_finite_reduction_first_is_exact():
    """``check_finite`` tests one sum first: a finite tensor whose sum overflows passes (the
    elementwise test decides), and NaN / inf / -inf in any row are named."""
    from topo_contrastive._utils.checks import check_finite

    big = torch.full((3, 4), 3e38)
    assert not torch.isfinite(big.sum())
    check_finite(big, "x")  # finite entries, no error
    for bad in (NAN, float("inf"), -float("inf")):
        x = torch.zeros(5, 2, 3)
        x[3, 1, 2] = bad
        expect(lambda x=x: check_finite(x, "x"), ValueError,
               (r"`x` contains NaN or inf values \(sample 3; 1 in all\)",))  # fmt: skip
    check_finite(torch.zeros(0, 3), "x")
