"""The cache-friendly edge order of large complexes (topo_contrastive/nn/scnn.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from topo_contrastive import HodgeDecomposition
from topo_contrastive.complex import Laplacians
from topo_contrastive.nn import SCNN, HodgeReadout
from topo_contrastive.nn import _scnn_kernel as kernel
from topo_contrastive.nn import scnn as locality

from ._helpers import delaunay_complex


def _bandwidth(L: torch.Tensor) -> int:
    row, col = L.coalesce().indices()
    return int((row - col).abs().max())


@pytest.fixture
def reorder_everything(monkeypatch):
    """Renumber every complex, however small (the order is otherwise used from 16k edges)."""
    monkeypatch.setattr(kernel, "MIN_EDGES", 0)


def _shuffled_complex(seed=0):
    """A Delaunay complex whose nodes are numbered at random: edge neighbours far apart."""
    ops = delaunay_complex(120, seed=seed)
    return ops


def _run(enc, x, L_down, L_up):
    enc.zero_grad(set_to_none=True)
    x = x.clone().requires_grad_(True)
    h = enc(x, (L_down, L_up))
    (h.square().sum() + h.sum()).backward()
    grads = [p.grad.clone() for p in enc.parameters()]
    return h.detach(), x.grad, grads


HODGE_HEADS = {
    "hodge": {},
    "hodge_reduced": {"harmonic_channels": 3},  # the [N1, B*c] GEMM branch
    "hodge_energies": {"energies": True},  # features gathered back to the complex's order
}


@pytest.mark.parametrize("readout", ["mean", "sum", "max", *HODGE_HEADS])
@pytest.mark.parametrize("input_skip", [False, True])
def test_renumbered_layers_compute_the_same_function(monkeypatch, readout, input_skip):
    """The same embedding and gradients in the renumbered order; a HodgeReadout without
    energies takes the features in that order (its basis gathered, no gather of ``H``)."""
    ops = _shuffled_complex()
    L_down, L_up = (L.double() for L in ops.laplacians())
    torch.manual_seed(0)
    head = readout
    if readout in HODGE_HEADS:
        head = HodgeReadout(HodgeDecomposition(ops), **HODGE_HEADS[readout])
    backs, permute_edges = [], locality.permute_edges

    def spy(x, order, back=False):
        backs.append(back)
        return permute_edges(x, order, back)

    monkeypatch.setattr(locality, "permute_edges", spy)
    enc = SCNN(1, 8, 3, 2, 2, act="tanh", readout=head, input_skip=input_skip).double()
    x = torch.randn(5, ops.num_edges, 1, dtype=torch.float64)

    monkeypatch.setattr(kernel, "MIN_EDGES", 10**12)
    plain = _run(enc, x, L_down, L_up)
    assert locality.locality_order(Laplacians(L_down, L_up)) is None
    monkeypatch.setattr(kernel, "MIN_EDGES", 0)
    order = locality.locality_order(Laplacians(L_down, L_up))
    assert order is not None and not torch.equal(order.perm, torch.arange(ops.num_edges))
    renumbered = _run(enc, x, L_down, L_up)
    assert any(backs) == (readout == "hodge_energies")
    # the same function up to the order of additions (float64)
    torch.testing.assert_close(renumbered[0], plain[0], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(renumbered[1], plain[1], rtol=1e-9, atol=1e-9)
    for a, b in zip(renumbered[2], plain[2], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_edge_embeddings_come_back_in_the_complex_numbering(reorder_everything):
    ops = _shuffled_complex(1)
    L_down, L_up = (L.double() for L in ops.laplacians())
    enc = SCNN(1, 4, 2, 1, 1).double()
    x = torch.randn(3, ops.num_edges, 1, dtype=torch.float64)
    got = enc.edge_embeddings(x, (L_down, L_up))
    # the same layers by hand in the complex's own numbering
    h = x
    for conv in enc.convs:
        h = torch.tanh(conv(h, (L_down, L_up))) if enc.act == "tanh" else conv(h, (L_down, L_up))
    torch.testing.assert_close(got, h, rtol=1e-12, atol=1e-12)


def test_order_narrows_the_band_of_a_randomly_numbered_complex():
    ops = delaunay_complex(700, seed=2)  # ~2,000 edges numbered without regard to position
    L_down, L_up = ops.laplacians()
    coo = (L_down + L_up).coalesce()
    row, col = coo.indices().numpy()
    pattern = sp.csr_matrix((np.ones(row.size), (row, col)), shape=tuple(coo.shape))
    perm = sp.csgraph.reverse_cuthill_mckee(pattern, symmetric_mode=True)
    order = locality.Order(torch.from_numpy(np.ascontiguousarray(perm).astype(np.int64)),
                           Laplacians(L_down, L_up))
    before = max(_bandwidth(L_down), _bandwidth(L_up))
    after = max(_bandwidth(order.laplacians.down), _bandwidth(order.laplacians.up))
    assert after < before / 4
    # the permuted operator is P L P^T, entry by entry
    dense, moved = L_up.to_dense(), order.laplacians.up.to_dense()
    torch.testing.assert_close(moved, dense[order.perm][:, order.perm])
    # and locality_order finds this same order
    kernel.MIN_EDGES, saved = 0, kernel.MIN_EDGES
    try:
        found = locality.locality_order(Laplacians(L_down, L_up))
        torch.testing.assert_close(found.perm, order.perm)
    finally:
        kernel.MIN_EDGES = saved


def test_order_is_kept_on_the_laplacians_value(reorder_everything):
    ops = _shuffled_complex(3)
    laplacians = ops.laplacians()
    first = locality.locality_order(laplacians)
    assert locality.locality_order(laplacians) is first
    assert locality.locality_order(ops.laplacians()) is first  # the complex's one value
    other = locality.locality_order(laplacians.clone())  # a copy: prepared again, the same
    assert other is not first
    torch.testing.assert_close(other.perm, first.perm)
    laplacians.down.mul_(1.0)  # an in-place edit: the value prepares again
    assert locality.locality_order(laplacians) is not first


def test_permute_edges_backward_is_the_inverse_gather():
    order = locality.Order(torch.tensor([2, 0, 3, 1]), Laplacians(torch.eye(4).to_sparse(), None))
    x = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    y = locality.permute_edges(x, order)
    torch.testing.assert_close(y, x[:, order.perm])
    torch.testing.assert_close(locality.permute_edges(y, order, back=True), x)
    assert torch.autograd.gradcheck(lambda t: locality.permute_edges(t, order), (x,))
    assert torch.autograd.gradcheck(lambda t: locality.permute_edges(t, order, back=True), (x,))


def test_small_complexes_and_missing_operators_keep_their_numbering():
    ops = _shuffled_complex(4)
    L_down, L_up = ops.laplacians()
    assert ops.num_edges < kernel.MIN_EDGES
    assert locality.locality_order(Laplacians(L_down, L_up)) is None  # the paper's sizes


def test_one_sided_operators_are_renumbered(reorder_everything):
    ops = _shuffled_complex(5)
    L_down, _ = ops.laplacians()
    order = locality.locality_order(Laplacians(L_down, None))
    assert order is not None and order.laplacians.up is None
    enc = SCNN(1, 4, 2, K_down=2, K_up=0).double()
    x = torch.randn(2, ops.num_edges, 1, dtype=torch.float64)
    got = enc(x, (L_down.double(), None))
    kernel.MIN_EDGES = 10**12
    torch.testing.assert_close(got, enc(x, (L_down.double(), None)), rtol=1e-12, atol=1e-12)


def test_non_finite_operator_is_refused_in_the_complex_numbering(reorder_everything):
    ops = _shuffled_complex(6)
    L_down, L_up = ops.laplacians()
    L_up = L_up.coalesce()
    values = L_up.values().clone()
    values[3] = float("nan")
    bad = torch.sparse_coo_tensor(L_up.indices(), values, L_up.shape)
    assert locality.locality_order(Laplacians(L_down, bad)) is None
    row, col = L_up.indices()[:, 3].tolist()
    with pytest.raises(ValueError, match=f"row {row}, column {col}"):
        SCNN(1, 4, 1)(torch.randn(1, ops.num_edges, 1), (L_down, bad))
