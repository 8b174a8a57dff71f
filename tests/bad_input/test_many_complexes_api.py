# ruff: noqa: E501  (the case tables keep one case per line)
"""Bad input to the Python APIs of the many-complex layer and the surfaces beside it: every
case raises ``ValueError`` or ``TypeError`` naming the argument and what was expected.
Grouped by surface: batch vectors of the loss and the encoders, mixed layouts of
``ComplexData``, sizes read from small files, the geometry of face finding, and single
arguments of the public functions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, InMemoryDataset

from tests._many_complexes import many_complexes
from tests.bad_input.conftest import expect
from topo_contrastive import ContrastiveViews, EdgeFlowMask
from topo_contrastive.losses import HodgeDebiasedInfoNCE
from topo_contrastive.nn import SCNN, TopoModelXEncoder

# The cases that build a TopoModelX model (rather than stop at its arguments) need the
# optional ``topomodelx`` package; the README's test command runs without it.
BUILDS_TOPOMODELX = {"topomodelx-without-batch", "topomodelx-3d-without-batch", "checkpoint-model-width-edited", "checkpoint-model-order-edited"}


def _topomodelx_if_built(name: str) -> None:
    if name in BUILDS_TOPOMODELX:
        pytest.importorskip("topomodelx")


# ------------------------------------------------------------------ batch vectors
@pytest.fixture(scope="module")
def four():
    """Four samples on their own complexes with their Hodge parts, their batch and two
    views' embeddings ``[4, 4]``."""
    samples = ContrastiveViews(EdgeFlowMask(0.2)).fit(many_complexes(4, seed=0))
    g = torch.Generator().manual_seed(1)
    return Batch.from_data_list(samples), torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)


def _loss(four, batch=None, z=None):
    b, z1, z2 = four
    z1, z2 = (z1, z2) if z is None else (z1[:z], z2[:z])
    return lambda: HodgeDebiasedInfoNCE()(z1, z2, hodge_parts=b.hodge_parts, batch=batch(b) if batch else None)


def _shifted(b):
    """The batch vector with the first edge of sample 1 given to sample 0."""
    out = b.batch_1.clone()
    out[int((out == 1).nonzero()[0])] = 0
    return out


_SCNN_KW = dict(in_channels=1, hidden_channels=4, conv_order_down=1, conv_order_up=1)

BATCH_CASES = [
    ("loss-bool-batch", lambda f: _loss(f, lambda b: b.batch_1.bool()), TypeError, r"`batch` must be an integer tensor.*torch.bool"),
    ("loss-float-batch", lambda f: _loss(f, lambda b: b.batch_1.float()), TypeError, r"`batch` must be an integer tensor.*float32"),
    ("loss-3-samples-for-4", lambda f: _loss(f, lambda b: b.batch_1.clamp(max=2)), ValueError, r"`batch` gives no rows .* sample\(s\) \[3\] of the B = 4 .*names 3 samples"),
    ("loss-sample-without-rows", lambda f: _loss(f, lambda b: torch.where(b.batch_1 == 1, 0, b.batch_1)), ValueError, r"`batch` gives no rows .* sample\(s\) \[1\]"),
    ("loss-batch-short", lambda f: _loss(f, lambda b: b.batch_1[:-1]), ValueError, r"`batch` must be a vector \[\d+\]"),
    ("scnn-3d-input-of-a-batch", lambda f: (lambda: SCNN(1, 4)(f[0].x_1.unsqueeze(0), f[0].laplacians())), ValueError, r"`x` of shape \(1, \d+, 1\) is dense, but the operators are those of a batch of complexes, which takes `x` as \[sum N1, C\] with `batch`"),
    ("scnn-2d-input-without-batch", lambda f: (lambda: SCNN(1, 4)(f[0].x_1, f[0].laplacians())), ValueError, r"batch of 4 complexes .* no `batch` vector"),
    ("topomodelx-without-batch", lambda f: (lambda: TopoModelXEncoder("scnn", **_SCNN_KW)(f[0].x_1, f[0].laplacians())), ValueError, r"batch of 4 complexes .* no `batch` vector.*batch=data.batch_1"),
    ("topomodelx-in-channels-0", lambda f: (lambda: TopoModelXEncoder("scnn", **{**_SCNN_KW, "in_channels": 0})), ValueError, r"`in_channels` must be >= 1, got 0"),
    ("topomodelx-in-channels-all-0", lambda f: (lambda: TopoModelXEncoder("sccnn", in_channels_all=(1, 0, 1), hidden_channels_all=(4, 4, 4), conv_order=1, sc_order=2)), ValueError, r"`in_channels_all\[1\]` must be >= 1, got 0"),
    ("topomodelx-in-channels-float", lambda f: (lambda: TopoModelXEncoder("san", in_channels=1.5, hidden_channels=4)), TypeError, r"`in_channels` must be an int"),
    ("topomodelx-3d-without-batch", lambda f: (lambda: TopoModelXEncoder("scnn", **_SCNN_KW)(f[0].x_1.unsqueeze(0), f[0].laplacians())), ValueError, r"batch of complexes, which takes `x` as \[sum N1, C\] with `batch`"),
]


@pytest.mark.parametrize("case", BATCH_CASES, ids=[c[0] for c in BATCH_CASES])
def test_batch_vectors(four, case):
    name, make, exc, words = case
    _topomodelx_if_built(name)
    expect(make(four), exc, words)


# ------------------------------------------------------------------ mixed layouts
def _mixed(shared_first: bool, collate):
    from topo_contrastive.data import ComplexData

    own = many_complexes(2, seed=0)
    shared = ComplexData.on_shared_complex(own[0].complex(), x_1=own[0].x_1, y=torch.tensor([0]))
    return lambda: collate([shared, *own] if shared_first else [*own, shared])


LAYOUT_CASES = [
    ("dataset-shared-first", lambda: _mixed(True, InMemoryDataset.collate), ValueError, r"own complex .* collated with samples of the other layout \(missing `shared_complex`\)"),
    ("dataset-own-first", lambda: _mixed(False, InMemoryDataset.collate), ValueError, r"shared complex .* collated with samples of the other layout \(missing `incidence_1_index`\)"),
    ("batch-own-first", lambda: _mixed(False, Batch.from_data_list), ValueError, r"holds samples of one layout only.*from_complex.*on_shared_complex"),
    ("batch-shared-first", lambda: _mixed(True, Batch.from_data_list), ValueError, r"holds samples of one layout only"),
]


@pytest.mark.parametrize("case", LAYOUT_CASES, ids=[c[0] for c in LAYOUT_CASES])
def test_mixed_layouts(case):
    _, make, exc, words = case
    expect(make(), exc, words)


# ------------------------------------------------------------------ sizes from small files
def _npz(tmp_path, **arrays):
    from topo_contrastive.datasets._file import read_file as read_edge_flow_file

    path = tmp_path / "data.npz"
    np.savez(path, flows=np.ones((3, 1)), **arrays)
    assert path.stat().st_size < 4096  # a small file
    return lambda: read_edge_flow_file(str(path))


def _edited_checkpoint(tmp_path, **model_kwargs):
    from topo_contrastive.io import load_encoder, save_encoder

    path = tmp_path / "encoder.pt"
    save_encoder(TopoModelXEncoder("scnn", **_SCNN_KW), path)
    obj = torch.load(path, weights_only=True)
    obj["metadata"]["architecture"]["model_kwargs"].update(model_kwargs)
    torch.save(obj, path)
    return lambda: load_encoder(path)


def _exact_path(edges):
    from topo_contrastive import ComplexOperators, HodgeDecomposition

    ops = ComplexOperators.from_simplices([[i, i + 1] for i in range(edges)])
    return lambda: HodgeDecomposition(ops, backend="exact")


B1 = {"B1_index": np.array([[0, 1], [0, 0]]), "B1_value": np.array([-1, 1])}
SIZE_CASES = [
    ("B1-shape-745-GiB", lambda t: _npz(t, **B1, B1_shape=np.array([10**11, 1])), ValueError, r"'B1_shape'.* declares 100000000000 nodes, above the limit of 100000000"),
    ("B1-shape-more-edges-than-entries", lambda t: _npz(t, **B1, B1_shape=np.array([2, 10**9])), ValueError, r"'B1_shape'.* declares 1000000000 columns but .*'B1_index'.* stores 2 entries.*at most 1 edge"),
    ("B2-shape-more-cells-than-entries", lambda t: _npz(t, **B1, B1_shape=np.array([2, 1]), B2_index=np.zeros((2, 0), dtype=np.int64), B2_value=np.zeros(0), B2_shape=np.array([1, 10**10])), ValueError, r"'B2_shape'.* declares 10000000000 columns .* stores 0 entries"),
    ("exact-backend-above-budget", lambda t: _exact_path(40_000), ValueError, r"backend='exact' forms dense matrices of 47.7 GiB .*\(40001, 40000, 0\).*budget of 8 GiB.*backend='iterative'"),
    ("checkpoint-model-width-edited", lambda t: _edited_checkpoint(t, hidden_channels=10**9), ValueError, r"model_kwargs.hidden_channels = 1000000000 exceeds the \d+ weight entries"),
    ("checkpoint-model-order-edited", lambda t: _edited_checkpoint(t, conv_order_down=10**7), ValueError, r"model_kwargs.conv_order_down = 10000000 exceeds"),
]


@pytest.mark.parametrize("case", SIZE_CASES, ids=[c[0] for c in SIZE_CASES])
def test_sizes_from_small_files(tmp_path, case):
    name, make, exc, words = case
    _topomodelx_if_built(name)
    expect(make(tmp_path), exc, words)


# ------------------------------------------------------------------ next-node samples
def test_a_three_node_path_gives_no_sample_of_zero_flow():
    from experiments.studies.next_node.samples import next_node_samples
    from topo_contrastive import ComplexOperators

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3]])
    expect(lambda: next_node_samples(ops, [[0, 1, 2, 3], [0, 1, 2]], truncate=False), ValueError, r"path 1 has 3 node\(s\); a next-node sample needs at least 4")
    s = next_node_samples(ops, [[0, 1, 2, 3]], truncate=False)  # the shortest: one step
    assert s.flows.tolist() == [[1.0, 0.0, 0.0]] and s.targets.tolist() == [2]


# ------------------------------------------------------------------ single arguments
def _interp(x_value, observed_all=False, smoothing=0.0):
    from topo_contrastive import ComplexOperators
    from topo_contrastive.hodge.interpolation import interpolate_flows

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
    x = torch.tensor([1.0, 2.0, x_value, 0.5])
    observed = torch.tensor([True, True, observed_all, True])
    return lambda: interpolate_flows(ops, x, observed, smoothing=smoothing)


def _counts(value):
    d = many_complexes(1, seed=0)[0].clone()
    d.cell_counts = value
    return lambda: d.batch_1


def _rct(tmp_path, **kw):
    from topo_contrastive.datasets import RandomComplexTrajectories

    return lambda: RandomComplexTrajectories(str(tmp_path / "rct"), log=False, **kw)


def _operators_on(device):
    from topo_contrastive import ComplexOperators

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
    return lambda: ops.laplacians(device=device)


ARGUMENT_CASES = [
    ("interpolate-nan-where-observed", lambda t: _interp(float("nan"), observed_all=True), ValueError, r"`x` contains NaN or inf at 1 entries that `observed` marks as observed \(e.g. flow 0, edge 2\).*False in `observed`"),
    ("interpolate-smoothing-negative-numpy", lambda t: _interp(0.0, smoothing=np.float64(-1.0)), ValueError, r"`smoothing` must be a finite number >= 0, got -1.0"),
    ("interpolate-smoothing-string", lambda t: _interp(0.0, smoothing="1"), TypeError, r"`smoothing` must be a real number"),
    ("device-gpu0-operators", lambda t: _operators_on("gpu0"), ValueError, r"`device` must be a torch.device or a device string such as 'cpu', 'cuda' or 'cuda:0', got 'gpu0'"),
    ("device-gpu0-complexdata", lambda t: (lambda: many_complexes(1)[0].laplacians(device="gpu0")), ValueError, r"`device` must be .* got 'gpu0'"),
    ("cell-counts-1d-of-2", lambda t: _counts(torch.tensor([3, 4])), ValueError, r"`cell_counts` must have shape \[B, 3\] .* got shape \(2,\)"),
    ("cell-counts-float", lambda t: _counts(torch.tensor([[3.0, 4.0, 1.0]])), TypeError, r"`cell_counts` must be an integer tensor"),
    ("cell-counts-negative", lambda t: _counts(torch.tensor([[3, -4, 1]])), ValueError, r"`cell_counts` holds negative sizes"),
    ("rct-huge-num-samples", lambda t: _rct(t, num_samples=10**9), ValueError, r"`num_samples` = 1000000000 complexes .* need about 305175.8 GiB .*limit of 16 GiB"),
    ("rct-huge-points", lambda t: _rct(t, points=(20, 10**12)), ValueError, r"`points` = 1000000000000 points need about .* GiB"),
]


@pytest.mark.parametrize("case", ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_single_arguments(tmp_path, case):
    _, make, exc, words = case
    expect(make(tmp_path), exc, words)
    assert not (tmp_path / "rct").exists()  # refused before anything is written


def test_cell_counts_of_one_row_as_a_vector_are_read_as_one_sample():
    d = many_complexes(1, seed=0)[0]
    flat = d.clone()
    flat.cell_counts = d.cell_counts.reshape(-1)
    assert flat.batch_1.tolist() == d.batch_1.tolist()
    assert flat.complex().sizes == d.complex().sizes
