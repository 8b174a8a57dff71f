"""Issue 26, second round: what the refused cases leave working, and the right answers.

The refusals themselves are cases of the bad-input suite (test_library.py, test_files.py,
test_cli.py); here: nodes-only complexes for rank-0 signals (case 3), untouched and older
checkpoints (case 4), operators of the same complex and copies (cases 7, 8), the fields
``--set`` still takes (case 10), an interrupted ``embed`` (case 16).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from tests.bad_input.conftest import expect, small_complex
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.complex import Laplacians
from topo_contrastive.io import UncheckedWeightsWarning, load_encoder, save_encoder, weights_digest
from topo_contrastive.nn import SCNN, HodgeReadout, SCNNConv
from topo_contrastive.training import embeddings as embeddings_module
from topo_contrastive.training.embeddings import read_embeddings, write_embeddings
from topo_contrastive.training.fields import _coerce, parse_grid, settable_fields


# ---------------------------------------------------------------------------- case 3
def test_nodes_only_complex_still_carries_node_signals():
    ops = ComplexOperators.from_incidence(sp.csr_matrix((4, 0)))
    assert (ops.num_nodes, ops.num_edges) == (4, 0)
    parts = HodgeDecomposition(ops, rank=0)(torch.arange(4.0))
    assert torch.allclose(parts.harmonic, torch.arange(4.0))  # no edges: all harmonic
    L_down, L_up = ops.laplacians(rank=0)
    out = SCNNConv(1, 2, K_down=0, K_up=1)(torch.randn(4, 1), (L_down, L_up))
    assert out.shape == (4, 2)


# ---------------------------------------------------------------------------- case 4
def test_digest_is_the_weights_and_an_untouched_file_loads_silently(tmp_path):
    ops = small_complex()
    torch.manual_seed(0)
    encoder = SCNN(hidden_channels=4)
    save_encoder(encoder, tmp_path / "e.pt", complex=ops)
    obj = torch.load(tmp_path / "e.pt", weights_only=True)
    assert obj["weights_sha256"] == weights_digest(encoder.state_dict())
    other = SCNN(hidden_channels=4)
    assert weights_digest(other.state_dict()) != obj["weights_sha256"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded, _ = load_encoder(tmp_path / "e.pt", complex=ops)
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(),
                                                  encoder.state_dict().values(), strict=True))


def test_older_checkpoint_without_digest_loads_with_a_warning(tmp_path):
    ops = small_complex()
    encoder = SCNN(hidden_channels=4)
    save_encoder(encoder, tmp_path / "e.pt", complex=ops)
    obj = torch.load(tmp_path / "e.pt", weights_only=True)
    del obj["weights_sha256"]
    torch.save(obj, tmp_path / "old.pt")
    with pytest.warns(UncheckedWeightsWarning, match="no recorded weights_sha256"):
        loaded, _ = load_encoder(tmp_path / "old.pt", complex=ops)
    x = torch.randn(2, ops.num_edges, 1)
    assert torch.equal(loaded(x, ops.laplacians()), encoder.eval()(x, ops.laplacians()))


# ---------------------------------------------------------------------------- cases 7, 8
def test_operators_know_their_complex_and_so_do_their_copies():
    import pickle

    ops = small_complex()
    laplacians = ops.laplacians()
    assert laplacians.fingerprint == ops.fingerprint() and laplacians.complex is ops
    for copy in (laplacians.clone(), laplacians.to(torch.float64), pickle.loads(
            pickle.dumps(laplacians))):  # fmt: skip
        assert copy.fingerprint == ops.fingerprint()
    assert Laplacians(*laplacians).fingerprint is None  # a bare pair: unknown


def test_hodge_readout_accepts_its_own_complex_rebuilt_and_refuses_another():
    ops = small_complex()
    encoder = SCNN(hidden_channels=4, readout=HodgeReadout(HodgeDecomposition(ops)))
    x = torch.randn(2, ops.num_edges, 1)
    same = small_complex()  # another object, the same complex
    assert torch.equal(encoder(x, same.laplacians()), encoder(x, ops.laplacians()))
    moved = ComplexOperators.from_simplices(
        [[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [1, 4]], [[0, 1, 2]]
    )
    assert moved.num_edges == ops.num_edges and moved.fingerprint() != ops.fingerprint()
    expect(lambda: encoder(x, moved.laplacians()), ValueError,
           ("the operators come from the complex", moved.fingerprint(), ops.fingerprint()))


def test_operator_values_are_checked_once_per_value(monkeypatch):
    from topo_contrastive.nn import _scnn_kernel

    ops = small_complex()
    laplacians = ops.laplacians()
    conv = SCNNConv(1, 4, 2, 2)
    calls = []
    real = torch.isfinite
    monkeypatch.setattr(_scnn_kernel.torch, "isfinite",
                        lambda t: calls.append(t.numel()) or real(t))
    for _ in range(3):
        conv(torch.randn(2, ops.num_edges, 1), laplacians)
    assert len(calls) == 2  # L_down and L_up once each, not per call


# ---------------------------------------------------------------------------- case 10
def test_set_keeps_every_hyper_parameter_and_optional_values_parse():
    fields = settable_fields()
    assert {"lr", "temperature", "K", "gamma", "epochs"} <= set(fields)
    assert not {"name", "method", "loss", "mask", "notes"} & set(fields)
    assert parse_grid(["lr=0.1", "K=2"], option="--set") == {"lr": [0.1], "K": [2]}
    assert _coerce("none", str | None) is None and _coerce("x", str | None) == "x"


# ---------------------------------------------------------------------------- case 16
def test_embed_interrupted_before_the_marker_is_not_readable(tmp_path, monkeypatch):
    emb = np.arange(6, dtype=np.float32).reshape(3, 2)
    write_embeddings(tmp_path, emb, labels=[0, 1, 0])
    done = read_embeddings(tmp_path)
    assert np.array_equal(done["embeddings"], emb) and done["labels"].tolist() == [0, 1, 0]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process stops while writing the JSON

    monkeypatch.setattr(embeddings_module, "write_json", killed)
    with pytest.raises(KeyboardInterrupt):
        write_embeddings(tmp_path, emb * 2)
    expect(lambda: read_embeddings(tmp_path), ValueError, "no finished embeddings")
    assert not (tmp_path / "embeddings.json").exists()  # the earlier run's file is gone too
