# ruff: noqa: E501  (the case tables keep one case per line)
"""Bad files: edge-flow data files (every key wrong in turn), checkpoints (edited, foreign,
truncated, of another complex) and embeddings folders. Each must be a ``ValueError`` or
``TypeError`` naming the file's key or the argument, never a raw numpy/torch/zip error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.bad_input.conftest import EDGES, expect, small_complex
from topo_contrastive import ComplexOperators
from topo_contrastive.datasets._file import read_file as read_edge_flow_file
from topo_contrastive.io import load_encoder, save_encoder
from topo_contrastive.nn import SCNN
from topo_contrastive.training.embeddings import read_embeddings, write_embeddings

EI = np.array(EDGES).T  # [2, 6]
FLOWS = np.ones((3, 6), dtype=np.float32)

# (id, arrays of the file, exception, key words); every file also gets the flows unless
# the arrays set "flows"
DATA_FILE_CASES = [
    ("flows-overflow-float32", {"edge_index": EI, "flows": np.full((3, 6), 1e39)}, ValueError, ("'flows'", "overflows float32")),
    ("flows-overflow-negative", {"edge_index": EI, "flows": np.full((3, 6), -4e38)}, ValueError, ("'flows'", "overflows float32")),
    ("flows-nan", {"edge_index": EI, "flows": np.full((3, 6), np.nan)}, ValueError, ("'flows'", "NaN or inf")),
    ("flows-inf", {"edge_index": EI, "flows": np.full((3, 6), np.inf)}, ValueError, ("'flows'", "NaN or inf")),
    ("flows-wrong-edges", {"edge_index": EI, "flows": np.ones((3, 5))}, ValueError, ("'flows'", "N1 = 6")),
    ("flows-1d", {"edge_index": EI, "flows": np.ones(6)}, ValueError, ("'flows'", r"\[S, N1\]")),
    ("flows-3d", {"edge_index": EI, "flows": np.ones((3, 6, 2))}, ValueError, ("'flows'", r"\[S, N1\]")),
    ("flows-bool", {"edge_index": EI, "flows": np.ones((3, 6), dtype=bool)}, TypeError, ("'flows'", "real numbers")),
    ("flows-strings", {"edge_index": EI, "flows": np.full((3, 6), "x")}, TypeError, ("'flows'", "real numbers")),
    ("flows-complex", {"edge_index": EI, "flows": np.ones((3, 6), dtype=complex)}, TypeError, ("'flows'", "real numbers")),
    ("flows-no-samples", {"edge_index": EI, "flows": np.ones((0, 6))}, ValueError, ("'flows'", "no samples")),
    ("no-samples-at-all", {"edge_index": EI, "flows": None}, ValueError, ("flows", "node paths")),
    ("no-edges", {"edge_index": np.zeros((2, 0), dtype=np.int64), "num_nodes": np.array(3), "flows": np.ones((3, 0))}, ValueError, ("no edges", "N1 = 0")),
    ("no-edges-b1", {"B1_index": np.zeros((2, 0), dtype=np.int64), "B1_value": np.zeros(0, dtype=np.int8), "B1_shape": np.array([4, 0]), "flows": np.ones((3, 0))}, ValueError, ("no edges", "N1 = 0")),
    ("num-nodes-too-small", {"edge_index": EI, "num_nodes": np.array(3)}, ValueError, ("'edge_index'", "num_nodes = 3", "from key 'num_nodes'")),
    ("num-nodes-zero", {"edge_index": EI, "num_nodes": np.array(0)}, ValueError, ("'num_nodes'", "got 0")),
    ("num-nodes-negative", {"edge_index": EI, "num_nodes": np.array(-5)}, ValueError, ("'num_nodes'", "-5")),
    ("num-nodes-float", {"edge_index": EI, "num_nodes": np.array(5.5)}, ValueError, ("'num_nodes'", "one integer", "5.5")),
    ("num-nodes-array", {"edge_index": EI, "num_nodes": np.array([5, 5])}, ValueError, ("'num_nodes'", "one integer", r"shape \(2,\)")),
    ("num-nodes-string", {"edge_index": EI, "num_nodes": np.array("5")}, ValueError, ("'num_nodes'", "one integer")),
    ("num-nodes-huge", {"edge_index": EI, "num_nodes": np.array(10**12)}, ValueError, ("'num_nodes'", "1000000000000")),
    ("num-nodes-with-B1", {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-1, 1]), "B1_shape": np.array([2, 1]), "num_nodes": np.array(2), "flows": np.ones((3, 1))}, ValueError, ("num_nodes", "B1_shape")),
    ("version-2", {"edge_index": EI, "version": np.array(2)}, ValueError, ("'version'", "expected the integer 1")),
    ("version-string", {"edge_index": EI, "version": np.array("one")}, ValueError, ("'version'", "'one'")),
    ("version-array", {"edge_index": EI, "version": np.array([1, 1])}, ValueError, ("'version'", r"shape \(2,\)")),
    ("version-float", {"edge_index": EI, "version": np.array(1.5)}, ValueError, ("'version'", "1.5")),
    ("format-other", {"edge_index": EI, "format": np.array("csv")}, ValueError, ("'format'", "'csv'", "topo_contrastive.edge_flows")),
    ("format-array", {"edge_index": EI, "format": np.array([1, 2])}, ValueError, ("'format'", "expected the string")),
    ("unknown-key", {"edge_index": EI, "weights": np.ones(6)}, ValueError, ("unknown key", "weights")),
    ("edge-index-float", {"edge_index": EI.astype(float)}, ValueError, ("'edge_index'", "integer array")),
    ("edge-index-3-rows", {"edge_index": np.vstack([EI, EI[:1]])}, ValueError, ("'edge_index'", r"\[2, N1\]")),
    ("edge-index-negative", {"edge_index": EI - 1}, ValueError, ("'edge_index'", "outside")),
    ("edge-index-self-loop", {"edge_index": np.array([[0, 1, 1], [1, 1, 2]]), "flows": np.ones((3, 3))}, ValueError, ("'edge_index'", "self-loop")),
    ("edge-index-twice", {"edge_index": np.array([[0, 1, 0], [1, 2, 1]]), "flows": np.ones((3, 3))}, ValueError, ("twice|duplicate|same",)),
    ("edges-given-twice", {"edge_index": EI, "B1_index": np.zeros((2, 0), dtype=np.int64)}, ValueError, ("edges twice",)),
    ("B1-keys-missing", {"B1_index": np.array([[0, 1], [0, 0]]), "flows": np.ones((3, 1))}, ValueError, ("lacks the key", "B1_value")),
    ("B1-shape-3", {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-1, 1]), "B1_shape": np.array([2, 1, 1]), "flows": np.ones((3, 1))}, ValueError, ("'B1_shape'", "two non-negative")),
    ("B1-shape-negative", {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-1, 1]), "B1_shape": np.array([-2, 1]), "flows": np.ones((3, 1))}, ValueError, ("'B1_shape'",)),
    ("B1-index-outside", {"B1_index": np.array([[0, 5], [0, 0]]), "B1_value": np.array([-1, 1]), "B1_shape": np.array([2, 1]), "flows": np.ones((3, 1))}, ValueError, ("'B1_index'", "outside the shape")),
    ("B1-value-length", {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-1, 1, 1]), "B1_shape": np.array([2, 1]), "flows": np.ones((3, 1))}, ValueError, ("'B1_value'", r"\[nnz\]")),
    ("B1-value-half", {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-0.5, 1.0]), "B1_shape": np.array([2, 1]), "flows": np.ones((3, 1))}, ValueError, ("B1", "column 0")),
    ("B1-index-float", {"B1_index": np.array([[0.0, 1.0], [0.0, 0.0]]), "B1_value": np.array([-1, 1]), "B1_shape": np.array([2, 1]), "flows": np.ones((3, 1))}, ValueError, ("'B1_index'", "integer")),
    ("B2-partial", {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-1, 1]), "B1_shape": np.array([2, 1]), "B2_index": np.zeros((2, 0), dtype=np.int64), "flows": np.ones((3, 1))}, ValueError, ("lacks the key", "B2")),
    ("triangles-with-B2", {"edge_index": EI, "triangles": np.array([[0, 1, 2]]), "B2_index": np.zeros((2, 0), dtype=np.int64)}, ValueError, ("triangles",)),
    ("triangle-not-on-edges", {"edge_index": EI, "triangles": np.array([[0, 2, 3]])}, ValueError, ("'triangles'", "face")),
    ("triangle-twice", {"edge_index": EI, "triangles": np.array([[0, 1, 2], [2, 0, 1]])}, ValueError, ("twice|duplicate|same",)),
    ("triangles-2-columns", {"edge_index": EI, "triangles": np.array([[0, 1]])}, ValueError, ("'triangles'", r"\[N2, 3\]")),
    ("triangles-float", {"edge_index": EI, "triangles": np.array([[0.0, 1.0, 2.0]])}, ValueError, ("'triangles'", "integer")),
    ("paths-without-ptr", {"edge_index": EI, "path_nodes": np.array([0, 1]), "flows": None}, ValueError, ("path_nodes and path_ptr",)),
    ("paths-2d", {"edge_index": EI, "path_nodes": np.array([[0, 1], [1, 2]]), "path_ptr": np.array([0, 2, 4]), "flows": None}, ValueError, ("'path_nodes'", "1-D integer", r"shape \(2, 2\)")),
    ("paths-float", {"edge_index": EI, "path_nodes": np.array([0.0, 1.0]), "path_ptr": np.array([0, 2]), "flows": None}, ValueError, ("'path_nodes'", "1-D integer", "float64")),
    ("paths-ptr-float", {"edge_index": EI, "path_nodes": np.array([0, 1]), "path_ptr": np.array([0.0, 2.0]), "flows": None}, ValueError, ("'path_ptr'", "1-D integer")),
    ("paths-ptr-past-end", {"edge_index": EI, "path_nodes": np.array([0, 1, 1, 2]), "path_ptr": np.array([0, 5, 4]), "flows": None}, ValueError, ("'path_ptr'", "rise from 0")),
    ("paths-ptr-not-zero", {"edge_index": EI, "path_nodes": np.array([0, 1]), "path_ptr": np.array([1, 2]), "flows": None}, ValueError, ("'path_ptr'", "rise from 0")),
    ("paths-ptr-falling", {"edge_index": EI, "path_nodes": np.array([0, 1, 1, 2]), "path_ptr": np.array([0, 3, 2, 4]), "flows": None}, ValueError, ("'path_ptr'", "rise")),
    ("path-not-walk", {"edge_index": EI, "path_nodes": np.array([0, 3]), "path_ptr": np.array([0, 2]), "flows": None}, ValueError, ("'paths'|paths", "not an edge")),
    ("path-one-node", {"edge_index": EI, "path_nodes": np.array([0, 0, 1]), "path_ptr": np.array([0, 1, 3]), "flows": None}, ValueError, ("1 node", "at least 2")),
    ("path-node-outside", {"edge_index": EI, "path_nodes": np.array([0, 9]), "path_ptr": np.array([0, 2]), "flows": None}, ValueError, ("9", "outside")),
    ("paths-and-flows-count", {"edge_index": EI, "path_nodes": np.array([0, 1]), "path_ptr": np.array([0, 2])}, ValueError, ("1 paths", "3 samples")),
    ("labels-length", {"edge_index": EI, "labels": np.array([0, 1])}, ValueError, ("'labels'", "S = 3")),
    ("labels-strings", {"edge_index": EI, "labels": np.array(["a", "b", "c"])}, TypeError, ("'labels'", "integer class ids")),
    ("labels-fractional", {"edge_index": EI, "labels": np.array([0.0, 0.5, 1.0])}, TypeError, ("'labels'", "0.5")),
    ("labels-nan", {"edge_index": EI, "labels": np.array([0.0, np.nan, 1.0])}, TypeError, ("'labels'", "nan")),
    ("pos-rows", {"edge_index": EI, "pos": np.ones((4, 2))}, ValueError, ("'edge_index'", "from the rows of key 'pos'")),
    ("pos-3-columns", {"edge_index": EI, "num_nodes": np.array(5), "pos": np.ones((5, 3))}, ValueError, ("'pos'", r"\[N0, 2\]")),
    ("pos-nan", {"edge_index": EI, "num_nodes": np.array(5), "pos": np.full((5, 2), np.nan)}, ValueError, ("'pos'", "NaN or inf")),
    ("mask-missing-split", {"edge_index": EI, "train_mask": np.array([True, False, False]), "val_mask": np.array([False, True, False])}, ValueError, ("'test_mask'", "missing")),
    ("mask-not-bool", {"edge_index": EI, "train_mask": np.array([1, 0, 0]), "val_mask": np.array([0, 1, 0]), "test_mask": np.array([0, 0, 1])}, ValueError, ("'train_mask'", "bool")),
    ("mask-overlap", {"edge_index": EI, "train_mask": np.array([True, True, False]), "val_mask": np.array([False, True, False]), "test_mask": np.array([False, False, True])}, ValueError, ("overlap", "sample 1")),
    ("mask-length", {"edge_index": EI, "train_mask": np.array([True]), "val_mask": np.array([False]), "test_mask": np.array([False])}, ValueError, ("'train_mask'", r"shape \[3\]")),
    ("sample-ids-repeated", {"edge_index": EI, "sample_ids": np.array([1, 1, 2])}, ValueError, ("'sample_ids'", "unique", "1")),
    ("sample-ids-length", {"edge_index": EI, "sample_ids": np.array([1, 2])}, ValueError, ("'sample_ids'", "S = 3")),
    ("sample-ids-float", {"edge_index": EI, "sample_ids": np.array([0.5, 1.5, 2.5])}, TypeError, ("'sample_ids'", "integers or strings")),
]


@pytest.mark.parametrize(("arrays", "exc", "words"), [c[1:] for c in DATA_FILE_CASES], ids=[c[0] for c in DATA_FILE_CASES])
def test_bad_data_file_key(tmp_path, arrays, exc, words):
    arrays = dict(arrays)
    if "flows" not in arrays:
        arrays["flows"] = FLOWS
    if arrays["flows"] is None:
        del arrays["flows"]
    path = tmp_path / "data.npz"
    np.savez(path, **arrays)
    expect(lambda: read_edge_flow_file(str(path)), exc, words)


def _truncated(path, out):
    data = path.read_bytes()
    out.write_bytes(data[: len(data) // 2])


UNREADABLE_CASES = [
    ("truncated-npz", lambda f, t: _truncated(f["data"], t / "x.npz"), ("not a readable .npz file",)),
    ("csv-renamed-npz", lambda f, t: (t / "x.npz").write_text("a,b\n1,2\n"), ("not a readable .npz file|not a zip", "edge-flow file")),
    ("empty-file", lambda f, t: (t / "x.npz").write_bytes(b""), ("not a readable .npz file|empty",)),
    ("single-npy", lambda f, t: np.save(open(t / "x.npz", "wb"), np.ones(3)), ("single .npy array",)),
    ("pickled-objects", lambda f, t: np.savez(t / "x.npz", flows=np.array([[1, 2], [3]], dtype=object)), ("Python objects",)),
    ("checkpoint-as-data", lambda f, t: (t / "x.npz").write_bytes(f["checkpoint"].read_bytes()), ("edge-flow file|unknown key|not a readable",)),
]


@pytest.mark.parametrize(("make", "words"), [c[1:] for c in UNREADABLE_CASES], ids=[c[0] for c in UNREADABLE_CASES])
def test_unreadable_data_file(files, tmp_path, make, words):
    make(files, tmp_path)
    expect(lambda: read_edge_flow_file(str(tmp_path / "x.npz")), ValueError, words)


def test_data_file_that_is_a_folder(files):
    expect(lambda: read_edge_flow_file(str(files["folder"])), ValueError, ("is a folder", "expected"))


# ---------------------------------------------------------------------------- checkpoints
def _edit(files, tmp_path, change):
    obj = torch.load(files["checkpoint"], weights_only=True)
    change(obj)
    path = tmp_path / "edited.pt"
    torch.save(obj, path)
    return path


def _scale(obj, name, factor):
    obj["state_dict"][name] = obj["state_dict"][name] * factor


OTHER = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [1, 4]], [[0, 1, 2]])

CHECKPOINT_CASES = [
    ("weights-scaled", lambda o: _scale(o, "convs.0.weight", 1.01), {}, ValueError, ("weights were changed after saving", "sha256")),
    ("weights-one-entry", lambda o: o["state_dict"]["convs.0.weight"].view(-1).__setitem__(0, 0.5), {}, ValueError, ("weights were changed after saving",)),
    ("bias-edited", lambda o: o["state_dict"]["convs.0.bias"].add_(1.0), {}, ValueError, ("weights were changed after saving",)),
    ("weights-swapped-dtype", lambda o: o["state_dict"].__setitem__("convs.0.weight", o["state_dict"]["convs.0.weight"].double()), {}, ValueError, ("changed after saving|dtype",)),
    ("digest-garbage", lambda o: o.__setitem__("weights_sha256", "abc"), {}, ValueError, ("weights_sha256", "not a sha256")),
    ("digest-int", lambda o: o.__setitem__("weights_sha256", 7), {}, ValueError, ("weights_sha256",)),
    ("weight-nan", lambda o: o["state_dict"]["convs.0.weight"].view(-1).__setitem__(0, float("nan")), {}, ValueError, ("NaN or inf",)),
    ("weight-missing", lambda o: o["state_dict"].pop("convs.0.bias"), {}, ValueError, ("its weights are",)),
    ("weight-shape", lambda o: o["state_dict"].__setitem__("convs.0.weight", torch.zeros(2, 2, 2)), {}, ValueError, ("shape",)),
    ("weight-not-tensor", lambda o: o["state_dict"].__setitem__("convs.0.bias", 3), {}, ValueError, ("not tensors",)),
    ("format-other", lambda o: o.__setitem__("format", "other"), {}, ValueError, ("format",)),
    ("version-other", lambda o: o.__setitem__("version", 2), {}, ValueError, ("unsupported version 2",)),
    ("architecture-missing", lambda o: o["metadata"].pop("architecture"), {}, ValueError, ("architecture metadata",)),
    ("architecture-width", lambda o: o["metadata"]["architecture"].__setitem__("hidden_channels", 9), {}, ValueError, ("width 9",)),
    ("architecture-act", lambda o: o["metadata"]["architecture"].__setitem__("act", "swish9"), {}, ValueError, ("architecture is invalid", "act")),
    ("other-complex", lambda o: None, {"complex": OTHER}, ValueError, ("another complex", "fingerprint")),
    ("complex-wrong-type", lambda o: None, {"complex": "ops"}, TypeError, ("`complex`",)),
    ("expected-width", lambda o: None, {"expected": {"hidden_channels": 64}}, ValueError, ("hidden_channels: checkpoint 4 vs expected 64",)),
]


@pytest.mark.parametrize(("change", "kwargs", "exc", "words"), [c[1:] for c in CHECKPOINT_CASES], ids=[c[0] for c in CHECKPOINT_CASES])
def test_bad_checkpoint(files, tmp_path, change, kwargs, exc, words):
    path = _edit(files, tmp_path, change)
    kwargs = dict(kwargs)
    if kwargs.get("complex") is None and "complex" not in kwargs:
        kwargs["complex"] = small_complex()
    expect(lambda: load_encoder(path, **kwargs), exc, words)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda f, t: _truncated(f["checkpoint"], t / "x.pt"), ("cannot be read with weights_only",)),
        (lambda f, t: (t / "x.pt").write_text("hello"), ("cannot be read with weights_only",)),
        (lambda f, t: (t / "x.pt").write_bytes(f["data"].read_bytes()), ("cannot be read|format",)),
        (lambda f, t: (t / "x.pt").mkdir(), ("is a folder",)),
    ],
    ids=["truncated", "text", "data-file", "folder"],
)
def test_unreadable_checkpoint(files, tmp_path, make, words):
    make(files, tmp_path)
    expect(lambda: load_encoder(tmp_path / "x.pt"), ValueError, words)


@pytest.mark.parametrize(
    ("call", "exc", "words"),
    [
        (lambda t: save_encoder("model", t / "e.pt"), TypeError, "`encoder` must be an SCNN"),
        (lambda t: save_encoder(SCNN(hidden_channels=4), t / "e.pt", complex=3), TypeError, "`complex`"),
        (lambda t: save_encoder(SCNN(hidden_channels=4), t / "e.pt", architecture=1), ValueError, "reserved"),
        (lambda t: save_encoder(SCNN(hidden_channels=4), t / "e.pt", note=object()), TypeError, "metadata"),
        (lambda t: save_encoder(SCNN(hidden_channels=4, readout=torch.nn.Identity()), t / "e.pt"), TypeError, "readout module"),
    ],
    ids=["not-scnn", "complex-int", "reserved-key", "metadata-object", "readout-module"],
)
def test_bad_save(tmp_path, call, exc, words):
    expect(lambda: call(tmp_path), exc, words)
    assert not (tmp_path / "e.pt").exists()


# ---------------------------------------------------------------------------- embeddings
EMBED_CASES = [
    ("embeddings-1d", lambda t: write_embeddings(t, np.ones(3)), ValueError, "`embeddings`.*\\[S, D\\]"),
    ("embeddings-nan", lambda t: write_embeddings(t, np.full((2, 2), np.nan)), ValueError, "`embeddings`.*NaN"),
    ("ids-length", lambda t: write_embeddings(t, np.ones((2, 2)), sample_ids=[1]), ValueError, "`sample_ids`"),
    ("labels-length", lambda t: write_embeddings(t, np.ones((2, 2)), labels=[1, 2, 3]), ValueError, "`labels`"),
    ("read-unfinished", lambda t: read_embeddings(t), ValueError, "no finished embeddings.*COMPLETE"),
]


@pytest.mark.parametrize(("call", "exc", "words"), [c[1:] for c in EMBED_CASES], ids=[c[0] for c in EMBED_CASES])
def test_bad_embeddings(tmp_path, call, exc, words):
    expect(lambda: call(tmp_path), exc, words)
    assert not (tmp_path / "COMPLETE").exists()
