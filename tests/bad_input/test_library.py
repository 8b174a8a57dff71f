# ruff: noqa: E501  (the case tables keep one case per line)
"""Bad input to the Python API: every case must raise ``ValueError`` or ``TypeError`` with a
message naming the argument and what was expected (never a crash, a hang or a result).

Each case is ``(id, call, exception, key words)``; the call takes the session's small complex.
Devices: ``meta`` tensors stand for "another device" on CPU-only machines.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from tests.bad_input.conftest import EDGES, expect
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE
from topo_contrastive.nn import SCNN, HodgeReadout, SCNNConv
from topo_contrastive.training.configs import ExperimentConfig, get_config

NAN, INF = float("nan"), float("inf")


def _lap(ops, dtype=torch.float32):
    return ops.laplacians(dtype=dtype)


def _with_value(L, value, at=0):
    L = L.coalesce()
    vals = L.values().clone()
    vals[at] = value
    return torch.sparse_coo_tensor(L.indices(), vals, L.shape).coalesce()


def _x(ops, b=3, c=1, dtype=torch.float32):
    return torch.randn(b, ops.num_edges, c, dtype=dtype)


# ---------------------------------------------------------------------------- complexes
COMPLEX_CASES = [
    ("simplices-not-list", lambda o: ComplexOperators.from_simplices(5), ValueError, "`edges`.*shape"),
    ("edge-3-nodes", lambda o: ComplexOperators.from_simplices([[0, 1, 2]]), ValueError, "edge"),
    ("edge-negative", lambda o: ComplexOperators.from_simplices([[-1, 1]]), ValueError, "-1"),
    ("edge-self-loop", lambda o: ComplexOperators.from_simplices([[1, 1]]), ValueError, "loop|twice|distinct|repeat"),
    ("edge-float", lambda o: ComplexOperators.from_simplices([[0.5, 1]]), (TypeError, ValueError), "integer|int"),
    ("edge-duplicate", lambda o: ComplexOperators.from_simplices([[0, 1], [1, 0]]), ValueError, "twice|duplicate|repeat"),
    ("triangle-missing-edge", lambda o: ComplexOperators.from_simplices([[0, 1], [1, 2]], [[0, 1, 2]]), ValueError, "edge|face"),
    ("triangle-twice", lambda o: ComplexOperators.from_simplices(EDGES, [[0, 1, 2], [2, 1, 0]]), ValueError, "twice|duplicate|repeat"),
    ("triangle-2-nodes", lambda o: ComplexOperators.from_simplices(EDGES, [[0, 1]]), ValueError, "triangle"),
    ("triangle-repeated-node", lambda o: ComplexOperators.from_simplices(EDGES, [[0, 0, 1]]), ValueError, "triangle|distinct|repeat|twice"),
    ("num-nodes-too-small", lambda o: ComplexOperators.from_simplices(EDGES, num_nodes=3), ValueError, "num_nodes|node"),
    ("num-nodes-negative", lambda o: ComplexOperators.from_simplices(EDGES, num_nodes=-1), ValueError, "num_nodes"),
    ("num-nodes-str", lambda o: ComplexOperators.from_simplices(EDGES, num_nodes="5"), ValueError, "`num_nodes`.*integer"),
    ("B1-not-matrix", lambda o: ComplexOperators.from_incidence("B1"), TypeError, "`B1` must be a real matrix"),
    ("B1-1d", lambda o: ComplexOperators.from_incidence(np.ones(3)), ValueError, "B1"),
    ("B1-three-nonzeros", lambda o: ComplexOperators.from_incidence(np.array([[-1.0], [1.0], [1.0]])), ValueError, "B1.*column 0"),
    ("B1-two-plus", lambda o: ComplexOperators.from_incidence(np.array([[1.0], [1.0]])), ValueError, "B1.*column 0"),
    ("B1-half", lambda o: ComplexOperators.from_incidence(np.array([[-0.5], [1.0]])), ValueError, "B1.*column 0"),
    ("B1-nan", lambda o: ComplexOperators.from_incidence(np.array([[NAN], [1.0]])), ValueError, "B1"),
    ("B1-inf", lambda o: ComplexOperators.from_incidence(np.array([[-INF], [1.0]])), ValueError, "B1"),
    ("B1-complex-dtype", lambda o: ComplexOperators.from_incidence(np.array([[-1 + 1j], [1.0]])), TypeError, "`B1`.*complex"),
    ("B1-string-dtype", lambda o: ComplexOperators.from_incidence(np.array([["a"], ["b"]])), TypeError, "`B1` must be a real matrix"),
    ("B2-rows-wrong", lambda o: ComplexOperators.from_incidence(o.B1, sp.csr_matrix(np.ones((5, 1)))), ValueError, "B2"),
    ("B2-not-boundary", lambda o: ComplexOperators.from_incidence(o.B1, sp.csr_matrix(np.array([[1.0], [1.0], [1.0], [0], [0], [0]]))), ValueError, "B2|B1 @ B2|boundary"),
    ("B2-nan", lambda o: ComplexOperators.from_incidence(o.B1, sp.csr_matrix(np.array([[NAN], [1.0], [-1.0], [0], [0], [0]]))), ValueError, "B2"),
    ("B2-duplicate-column", lambda o: ComplexOperators.from_incidence(o.B1, sp.hstack([o.B2, -o.B2]).tocsr()), ValueError, "twice|duplicate|same"),
    ("B2-without-B1-shape", lambda o: ComplexOperators.from_incidence(o.B1, np.ones(3)), ValueError, "B2"),
    ("rank-negative", lambda o: o.laplacians(rank=-1), ValueError, "rank"),
    ("rank-too-high", lambda o: o.laplacians(rank=7), ValueError, "rank"),
    ("rank-str", lambda o: o.laplacians(rank="1"), (TypeError, ValueError), "rank"),
    ("operator-name", lambda o: o.operator("L9"), ValueError, "name"),
    ("operator-int-dtype", lambda o: o.operator("L_up", dtype=torch.int64), TypeError, "dtype"),
    ("operator-layout", lambda o: o.operator("L_up", layout=torch.strided), ValueError, "layout"),
    ("path-not-walk", lambda o: o.path_to_flow([0, 3]), ValueError, "edge|walk|0.*3"),
    ("path-node-out-of-range", lambda o: o.path_to_flow([0, 99]), ValueError, "99|node"),
    ("path-empty", lambda o: o.path_to_flow([]), ValueError, "`path`.*at least one"),
    ("path-2d", lambda o: o.path_to_flow([[0, 1], [1, 2]]), ValueError, "`path`.*1-D"),
    ("path-float-nodes", lambda o: o.path_to_flow([0.0, 1.5]), ValueError, "`path`.*integer node id"),
    ("edge-lookup-missing", lambda o: o.edge_lookup(np.array([0]), np.array([3])), ValueError, "0.*3|edge"),
]

# ---------------------------------------------------------------------------- Hodge
HODGE_CASES = [
    ("hodge-not-complex", lambda o: HodgeDecomposition("ops"), TypeError, "ComplexOperators|complex"),
    ("hodge-rank-bad", lambda o: HodgeDecomposition(o, rank=9), ValueError, "rank"),
    ("hodge-backend-bad", lambda o: HodgeDecomposition(o, backend="magic"), ValueError, "backend"),
    ("decompose-wrong-length", lambda o: HodgeDecomposition(o)(torch.ones(o.num_edges + 1)), ValueError, "6|N1|edges"),
    ("decompose-int", lambda o: HodgeDecomposition(o)(torch.ones(o.num_edges, dtype=torch.int64)), TypeError, "float|dtype"),
    ("decompose-nan", lambda o: HodgeDecomposition(o)(torch.full((o.num_edges,), NAN)), ValueError, "NaN|finite"),
    ("decompose-inf", lambda o: HodgeDecomposition(o)(torch.full((2, o.num_edges), INF)), ValueError, "NaN|inf|finite"),
    ("decompose-str", lambda o: HodgeDecomposition(o)("flow"), TypeError, "tensor|array"),
    ("decompose-4d", lambda o: HodgeDecomposition(o)(torch.ones(1, 1, o.num_edges, 1, 1)), ValueError, "shape|dimension"),
    ("decompose-meta", lambda o: HodgeDecomposition(o)(torch.ones(o.num_edges, device="meta")), ValueError, "meta device"),
    ("basis-unknown", lambda o: HodgeDecomposition(o).basis("diagonal"), ValueError, "gradient|curl|harmonic"),
]

# ---------------------------------------------------------------------------- layers
def _conv():
    return SCNNConv(1, 4, K_down=2, K_up=2)


LAYER_CASES = [
    ("conv-in-channels-0", lambda o: SCNNConv(0, 4, 2, 2), ValueError, "in_channels"),
    ("conv-out-channels-neg", lambda o: SCNNConv(1, -4, 2, 2), ValueError, "out_channels"),
    ("conv-K-down-neg", lambda o: SCNNConv(1, 4, -1, 2), ValueError, "K_down"),
    ("conv-K-up-float", lambda o: SCNNConv(1, 4, 2, 2.0), TypeError, "K_up"),
    ("conv-bias-str", lambda o: SCNNConv(1, 4, 2, 2, bias="yes"), TypeError, "bias"),
    ("conv-channels-bool", lambda o: SCNNConv(True, 4, 2, 2), TypeError, "in_channels"),
    ("conv-x-list", lambda o: _conv()([1.0] * 6, _lap(o)), TypeError, "`x`"),
    ("conv-x-int", lambda o: _conv()(torch.ones(3, 6, 1, dtype=torch.int64), _lap(o)), TypeError, "`x`.*floating"),
    ("conv-x-1d", lambda o: _conv()(torch.ones(6), _lap(o)), ValueError, "`x`.*shape"),
    ("conv-x-4d", lambda o: _conv()(torch.ones(1, 3, 6, 1), _lap(o)), ValueError, "`x`.*shape"),
    ("conv-x-channels", lambda o: _conv()(torch.ones(3, 6, 2), _lap(o)), ValueError, "in_channels=1"),
    ("conv-x-edges", lambda o: _conv()(torch.ones(3, 7, 1), _lap(o)), ValueError, "7|edges|N1"),
    ("conv-x-rows", lambda o: _conv()(torch.ones(7, 1), _lap(o)), ValueError, "7 rows"),
    ("conv-x-empty-edges", lambda o: _conv()(torch.ones(3, 0, 1), _lap(o)), ValueError, "0|N1"),
    ("conv-x-float64", lambda o: _conv()(torch.ones(3, 6, 1, dtype=torch.float64), _lap(o)), ValueError, "dtype"),
    ("conv-x-meta", lambda o: _conv()(torch.ones(3, 6, 1, device="meta"), _lap(o)), ValueError, "device|meta"),
    ("conv-L-dense", lambda o: _conv()(_x(o), (_lap(o)[0].to_dense(), _lap(o)[1])), TypeError, "`L_down`.*dense"),
    ("conv-L-numpy", lambda o: _conv()(_x(o), (o.L_down, _lap(o)[1])), TypeError, "`L_down`"),
    ("conv-L-none", lambda o: _conv()(_x(o), (None, _lap(o)[1])), ValueError, "`L_down` is None"),
    ("conv-L-up-none", lambda o: _conv()(_x(o), (_lap(o)[0], None)), ValueError, "`L_up` is None"),
    ("conv-L-not-square", lambda o: _conv()(_x(o), (torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (6, 5)), _lap(o)[1])), ValueError, "`L_down`.*square"),
    ("conv-L-sizes-differ", lambda o: _conv()(_x(o), (_lap(o)[0], _lap(ComplexOperators.from_simplices([[0, 1], [1, 2]]))[1])), ValueError, "L_up"),
    ("conv-L-float64", lambda o: _conv()(_x(o), _lap(o, torch.float64)), ValueError, "operators have dtype .* must share dtype"),
    ("conv-L-meta", lambda o: _conv()(_x(o), (_lap(o)[0].to("meta"), _lap(o)[1])), ValueError, "`L_down` .*meta.* must share"),
    ("conv-L-requires-grad", lambda o: _conv()(_x(o), (_lap(o)[0].detach().clone().requires_grad_(), _lap(o)[1])), ValueError, "`L_down` requires grad"),
    ("conv-L-down-nan", lambda o: _conv()(_x(o), (_with_value(_lap(o)[0], NAN), _lap(o)[1])), ValueError, "`L_down` holds .*NaN or inf"),
    ("conv-L-up-inf", lambda o: _conv()(_x(o), (_lap(o)[0], _with_value(_lap(o)[1], INF))), ValueError, "`L_up` holds .*NaN or inf"),
    ("conv-L-up-neg-inf", lambda o: _conv()(_x(o), (_lap(o)[0], _with_value(_lap(o)[1], -INF, 1))), ValueError, "`L_up` holds"),
    ("conv-L-nan-normalized", lambda o: SCNNConv(1, 4, 2, 2, normalize=True)(_x(o), (_with_value(_lap(o)[0], NAN), _lap(o)[1])), ValueError, "`L_down` holds"),
    ("conv-L-nan-csr", lambda o: _conv()(_x(o), (_with_value(_lap(o)[0], NAN).to_sparse_csr(), _lap(o)[1])), ValueError, "`L_down` holds"),
    ("normalize-operator-nan", lambda o: SCNNConv.normalize_operator(_with_value(_lap(o)[0], NAN)), ValueError, "`L` holds"),
    ("normalize-operator-dense", lambda o: SCNNConv.normalize_operator(torch.eye(3)), TypeError, "`L`"),
    ("conv-batch-float", lambda o: _conv()(torch.ones(12, 1), _lap(o), batch=torch.zeros(12)), TypeError, "`batch`"),
    ("conv-batch-wrong", lambda o: _conv()(torch.ones(12, 1), _lap(o), batch=torch.zeros(12, dtype=torch.long)), ValueError, "`batch`|batch"),
    ("conv-batch-with-3d", lambda o: _conv()(torch.ones(2, 6, 1), _lap(o), batch=torch.zeros(12, dtype=torch.long)), ValueError, "`batch`"),
    ("scnn-hidden-0", lambda o: SCNN(hidden_channels=0), ValueError, "hidden_channels|out_channels"),
    ("scnn-layers-0", lambda o: SCNN(hidden_channels=4, num_layers=0), ValueError, "num_layers"),
    ("scnn-act-unknown", lambda o: SCNN(hidden_channels=4, act="swish2"), ValueError, "act"),
    ("scnn-readout-unknown", lambda o: SCNN(hidden_channels=4, readout="median"), ValueError, "readout"),
    ("scnn-readout-int", lambda o: SCNN(hidden_channels=4, readout=3), TypeError, "readout"),
    ("scnn-x-1d-multichannel", lambda o: SCNN(in_channels=2, hidden_channels=4)(torch.ones(6), _lap(o)), ValueError, "in_channels"),
    ("scnn-x-nan-L", lambda o: SCNN(hidden_channels=4)(_x(o), (_with_value(_lap(o)[0], NAN), _lap(o)[1])), ValueError, "`L_down` holds"),
    ("scnn-x-meta", lambda o: SCNN(hidden_channels=4)(torch.ones(2, 6, 1, device="meta"), _lap(o)), ValueError, "meta"),
    ("scnn-x-int", lambda o: SCNN(hidden_channels=4)(torch.ones(2, 6, 1, dtype=torch.int32), _lap(o)), TypeError, "floating"),
    ("scnn-readout-other-complex", lambda o: SCNN(hidden_channels=4, readout=HodgeReadout(HodgeDecomposition(o)))(_x(o), _lap(ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [1, 4]], [[0, 1, 2]]))), ValueError, "fingerprint.*HodgeReadout"),
    ("readout-not-hodge", lambda o: HodgeReadout(o), TypeError, "`hodge`"),
    ("readout-pool-bad", lambda o: HodgeReadout(HodgeDecomposition(o), pool="median"), ValueError, "`pool`"),
    ("readout-energies-str", lambda o: HodgeReadout(HodgeDecomposition(o), energies="no"), TypeError, "`energies`"),
    ("readout-H-int", lambda o: HodgeReadout(HodgeDecomposition(o))(torch.ones(2, 6, 3, dtype=torch.long)), TypeError, "`H`"),
    ("readout-H-edges", lambda o: HodgeReadout(HodgeDecomposition(o))(torch.ones(2, 5, 3)), ValueError, "N1 = 6"),
    ("readout-H-4d", lambda o: HodgeReadout(HodgeDecomposition(o))(torch.ones(1, 2, 6, 3)), ValueError, "`H`"),
    ("readout-H-rows", lambda o: HodgeReadout(HodgeDecomposition(o))(torch.ones(7, 3)), ValueError, "another complex|7|6"),
    ("readout-no-edges", lambda o: HodgeReadout(HodgeDecomposition(ComplexOperators.from_incidence(sp.csr_matrix((3, 0))))), ValueError, "no edges.*N1 = 0"),
    ("readout-empty", lambda o: HodgeReadout(HodgeDecomposition(ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])), pool="none"), ValueError, "empty"),
]

# ---------------------------------------------------------------------------- losses
def _z(b=4, d=8, value=None, dtype=torch.float32):
    z = torch.randn(b, d, dtype=dtype)
    if value is not None:
        z[1, 2] = value
    return z


LOSS_CASES = [
    ("infonce-temp-0", lambda o: InfoNCE(temperature=0), ValueError, "temperature"),
    ("infonce-temp-neg", lambda o: InfoNCE(temperature=-0.5), ValueError, "temperature"),
    ("infonce-temp-tiny", lambda o: InfoNCE(temperature=1e-45), ValueError, "temperature"),
    ("infonce-temp-nan", lambda o: InfoNCE(temperature=NAN), ValueError, "temperature"),
    ("infonce-temp-inf", lambda o: InfoNCE(temperature=INF), ValueError, "temperature"),
    ("infonce-temp-str", lambda o: InfoNCE(temperature="0.5"), TypeError, "temperature"),
    ("infonce-reduction", lambda o: InfoNCE(reduction="avg"), ValueError, "reduction"),
    ("infonce-z1-nan", lambda o: InfoNCE()(_z(value=NAN), _z()), ValueError, "z1.*NaN|NaN.*z1"),
    ("infonce-z2-inf", lambda o: InfoNCE()(_z(), _z(value=INF)), ValueError, "z2"),
    ("infonce-shapes-differ", lambda o: InfoNCE()(_z(4), _z(5)), ValueError, "z1|z2|shape"),
    ("infonce-dims-differ", lambda o: InfoNCE()(_z(4, 8), _z(4, 7)), ValueError, "z1|z2|shape"),
    ("infonce-1d", lambda o: InfoNCE()(torch.ones(4), torch.ones(4)), ValueError, "z1|shape"),
    ("infonce-int", lambda o: InfoNCE()(torch.ones(4, 2, dtype=torch.long), torch.ones(4, 2, dtype=torch.long)), TypeError, "z1|floating|dtype"),
    ("infonce-one-sample", lambda o: InfoNCE()(_z(1), _z(1)), ValueError, "sample|negative|2"),
    ("infonce-empty", lambda o: InfoNCE()(_z(0), _z(0)), ValueError, "sample|empty|0"),
    ("infonce-list", lambda o: InfoNCE()([[1.0]], [[1.0]]), TypeError, "z1|tensor"),
    ("infonce-meta", lambda o: InfoNCE()(_z().to("meta"), _z()), (TypeError, ValueError), "device|meta"),
    ("debiased-gamma-len", lambda o: HodgeDebiasedInfoNCE(gamma=(1.0, 1.0)), ValueError, "gamma"),
    ("debiased-gamma-neg", lambda o: HodgeDebiasedInfoNCE(gamma=(1.0, -1.0, 1.0)), ValueError, "gamma"),
    ("debiased-gamma-nan", lambda o: HodgeDebiasedInfoNCE(gamma=(1.0, NAN, 1.0)), ValueError, "gamma"),
    ("debiased-temp-0", lambda o: HodgeDebiasedInfoNCE(temperature=0.0), ValueError, "temperature"),
    ("debiased-eps-neg", lambda o: HodgeDebiasedInfoNCE(eps=-1.0), ValueError, "eps"),
    ("debiased-no-parts", lambda o: HodgeDebiasedInfoNCE()(_z(), _z()), ValueError, "hodge_parts|weights"),
    ("debiased-parts-wrong-batch", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(5 * 5, 3)), ValueError, "hodge_parts.*B = 4"),
    ("debiased-parts-two", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(4 * 6, 2)), ValueError, r"hodge_parts.*\[sum N1, 3\].*\(24, 2\)"),
    ("debiased-parts-sequence", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=[torch.ones(4, 6)] * 3), TypeError, r"hodge_parts.*\[sum N1, 3\].*torch.stack"),
    ("debiased-parts-stacked", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(3, 4, 6)), ValueError, r"hodge_parts.*\[sum N1, 3\].*permute\(1, 2, 0\)"),
    ("debiased-batch-out-of-range", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(6, 3), batch=torch.tensor([0, 1, 2, 3, 4, 4])), ValueError, r"batch.*B = 4.*\[0, 4\]"),
    ("debiased-batch-float", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(6, 3), batch=torch.zeros(6)), TypeError, "batch.*integer"),
    ("debiased-weights-shape", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), weights=torch.ones(3, 3)), ValueError, "weights"),
    ("debiased-weights-nan", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), weights=torch.full((4, 4), NAN)), ValueError, "weights"),
    ("debiased-z-nan", lambda o: HodgeDebiasedInfoNCE()(_z(value=NAN), _z(), weights=torch.ones(4, 4)), ValueError, "z1"),
    ("infonce-negatives", lambda o: InfoNCE(negatives="other"), ValueError, r"`negatives` must be one of \('both', 'cross_view'\), got 'other'"),
    ("debiased-negatives", lambda o: HodgeDebiasedInfoNCE(negatives=None), ValueError, r"`negatives` must be one of .*got None"),
    ("debiased-similarity", lambda o: HodgeDebiasedInfoNCE(similarity="cos"), ValueError, r"`similarity` must be one of \('auto', 'cosine', 'energy'\), got 'cos'"),
    ("debiased-parts-not-blocks", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(4 * 6 + 1, 3)), ValueError, (r"`hodge_parts` has 25 rows, not a positive multiple of the batch size B = 4", "pass `batch`")),
    ("debiased-parts-empty", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(0, 3)), ValueError, (r"`hodge_parts` has 0 rows", "pass `batch`")),
    ("debiased-batch-without-parts", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), weights=torch.ones(4, 4), batch=torch.arange(4)), ValueError, "`batch` is the batch vector of `hodge_parts`, got no `hodge_parts`"),
    ("debiased-batch-short", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), hodge_parts=torch.ones(6, 3), batch=torch.arange(4)), ValueError, r"`batch` must be a vector \[6\].*got shape \(4,\)"),
    ("debiased-weights-negative", lambda o: HodgeDebiasedInfoNCE()(_z(), _z(), weights=-torch.ones(4, 4)), ValueError, "`weights` must be >= 0, got minimum -1"),
]

# ---------------------------------------------------------------------------- configurations
CONFIG_CASES = [
    ("config-unknown-row", lambda o: get_config("SCL_X", "ocean"), ValueError, "unknown configuration.*SCL_X"),
    ("config-unknown-dataset", lambda o: get_config("SCL", "mars"), ValueError, "unknown dataset.*mars"),
    ("config-unknown-edition", lambda o: get_config("SCL", "ocean", "draft"), ValueError, "unknown edition"),
    ("config-name-int", lambda o: get_config(3, "ocean"), TypeError, "name"),
    ("config-unknown-field", lambda o: get_config("SCL", "ocean", colour=1), ValueError, "colour"),
    ("config-lr-0", lambda o: get_config("SCL", "ocean", lr=0.0), ValueError, "`lr`"),
    ("config-lr-nan", lambda o: get_config("SCL", "ocean", lr=NAN), ValueError, "`lr`"),
    ("config-lr-str", lambda o: get_config("SCL", "ocean", lr="0.1"), TypeError, "`lr`"),
    ("config-drop-above-1", lambda o: get_config("SCL", "ocean", drop_prob=1.5), ValueError, "`drop_prob`"),
    ("config-budget-neg", lambda o: get_config("SCL", "ocean", budget=-0.1), ValueError, "`budget`"),
    ("config-epochs-0", lambda o: get_config("SCL", "ocean", epochs=0), ValueError, "`epochs`"),
    ("config-epochs-float", lambda o: get_config("SCL", "ocean", epochs=2.0), TypeError, "`epochs`"),
    ("config-batch-1", lambda o: get_config("SCL", "ocean", batch_size=1), ValueError, "`batch_size`"),
    ("config-hidden-bool", lambda o: get_config("SCL", "ocean", hidden_channels=True), TypeError, "`hidden_channels`"),
    ("config-gamma-neg", lambda o: get_config("SSCL", "ocean", gamma=(1.0, -1.0, 0.0)), ValueError, "`gamma`"),
    ("config-perturb-unknown", lambda o: get_config("SCL_Spec", "ocean", perturb=("noise",)), ValueError, "`perturb`"),
    ("config-optimizer", lambda o: get_config("SCL", "ocean", optimizer="lbfgs"), ValueError, "`optimizer`"),
    ("config-readout", lambda o: get_config("SCL", "ocean", readout="median"), ValueError, "`readout`"),
    ("config-method", lambda o: ExperimentConfig(name="x", method="magic"), ValueError, "`method`"),
    ("config-no-loss", lambda o: ExperimentConfig(name="x", method="contrastive", mask="uniform"), ValueError, "`loss`"),
    ("config-momentum-2", lambda o: get_config("SCL", "ocean", momentum=2.0), ValueError, "`momentum`"),
    ("config-temp-inf", lambda o: get_config("SCL", "ocean", temperature=INF), ValueError, "`temperature`"),
]

ALL = COMPLEX_CASES + HODGE_CASES + LAYER_CASES + LOSS_CASES + CONFIG_CASES


@pytest.mark.parametrize(("call", "exc", "words"), [c[1:] for c in ALL], ids=[c[0] for c in ALL])
def test_bad_input_is_a_clear_error(ops, call, exc, words):
    expect(lambda: call(ops), exc, words)


def test_case_ids_are_unique():
    ids = [c[0] for c in ALL]
    assert len(ids) == len(set(ids))
