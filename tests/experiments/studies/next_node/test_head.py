"""NextNodeHead: B1 H w, masked to the candidates; invariant to re-orienting edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.next_node import NextNodeHead
from tests.nn._helpers import tiny_complex
from topo_contrastive import ComplexOperators
from topo_contrastive.nn import SCNN


def test_scores_equal_the_dense_formula_and_mask_the_candidates():
    ops = tiny_complex()
    torch.manual_seed(0)
    head = NextNodeHead(3, ops).double()
    H = torch.randn(2, ops.num_edges, 3, dtype=torch.float64)
    cand = torch.zeros(2, ops.num_nodes, dtype=torch.bool)
    cand[0, [1, 2]] = True
    cand[1, [0, 3, 5]] = True
    logits = head(H, cand)
    dense = torch.as_tensor(ops.B1.toarray())  # [N0, N1]
    expected = torch.stack([dense @ (H[b] @ head.weight) for b in range(2)])
    torch.testing.assert_close(logits[cand], expected[cand])
    assert torch.isinf(logits[~cand]).all() and (logits[~cand] < 0).all()
    torch.testing.assert_close(head(H[0], cand[:1]), logits[:1])  # one sample [N1, C]
    assert repr(head) == f"NextNodeHead(3, num_nodes={ops.num_nodes})"


def test_prediction_is_invariant_to_re_orienting_edges():
    """Flip the sign of edges in B1, B2 and the flow: a bias-free tanh SCNN and the head give
    the same logits (SCoNe's orientation invariance)."""
    ops = tiny_complex()
    flip = np.ones(ops.num_edges)
    flip[[0, 3, 7]] = -1.0
    S = np.diag(flip)
    other = ComplexOperators.from_incidence(ops.B1.toarray() @ S, S @ ops.B2.toarray())
    torch.manual_seed(1)
    enc = SCNN(1, 6, num_layers=2, bias=False).double()
    head = NextNodeHead(6, ops).double()
    head2 = NextNodeHead(6, other).double()
    head2.weight.data.copy_(head.weight.data)
    x = torch.randn(4, ops.num_edges, 1, dtype=torch.float64)
    cand = torch.ones(4, ops.num_nodes, dtype=torch.bool)
    a = head(enc.edge_embeddings(x, ops.laplacians(dtype=torch.float64)), cand)
    xs = x * torch.as_tensor(flip)[:, None]
    b = head2(enc.edge_embeddings(xs, other.laplacians(dtype=torch.float64)), cand)
    torch.testing.assert_close(a, b)
    assert torch.equal(a.argmax(1), b.argmax(1))
    # with a bias (the paper edition's encoder) the invariance is lost: tanh(z + b) is not odd
    torch.manual_seed(1)
    biased = SCNN(1, 6, num_layers=2, bias=True).double()
    with torch.no_grad():
        for name, p in biased.named_parameters():
            if "bias" in name:
                p.uniform_(0.5, 1.0)
    a = head(biased.edge_embeddings(x, ops.laplacians(dtype=torch.float64)), cand)
    b = head2(biased.edge_embeddings(xs, other.laplacians(dtype=torch.float64)), cand)
    assert not torch.allclose(a, b, atol=1e-6)


def test_bad_arguments():
    ops = tiny_complex()
    with pytest.raises(ValueError, match="in_channels"):
        NextNodeHead(0, ops)
    with pytest.raises(TypeError, match="in_channels"):
        NextNodeHead(2.0, ops)
    with pytest.raises(TypeError, match="ComplexOperators"):
        NextNodeHead(2, ops.B1)
    head = NextNodeHead(2, ops)
    cand = torch.ones(1, ops.num_nodes, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"\[B, 9, 2\]"):
        head(torch.randn(1, 8, 2), cand)
    with pytest.raises(TypeError, match="floating"):
        head(torch.ones(1, 9, 2, dtype=torch.long), cand)
    with pytest.raises(TypeError, match="bool"):
        head(torch.randn(1, 9, 2), cand.float())
    with pytest.raises(ValueError, match="at least one candidate"):
        head(torch.randn(1, 9, 2), torch.zeros_like(cand))
    with pytest.raises(ValueError, match="candidates"):
        head(torch.randn(2, 9, 2), cand)
