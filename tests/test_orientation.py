"""Re-orienting edges (``B1 S``, ``S B2``, ``S x`` with ``S = diag(+-1)``) across the library.

Edge orientations are a reference frame: re-orienting the edges of a complex and the flows on
it together gives the same data. Hodge parts flip their signs with the edges (equivariant);
the divergence, the spectral masks' drop probabilities and the debiased loss's negative
weights do not change (invariant). A cross-module property, hence one file.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Batch, Data

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.datasets import generate_trajectory_complex
from topo_contrastive.losses import HodgeDebiasedInfoNCE, hodge_negative_weights
from topo_contrastive.transforms import HodgeSpectralMask, optimize_drop_probabilities


@pytest.fixture(scope="module")
def setting():
    """A two-hole complex (~300 edges), a random re-orientation and some flows on both."""
    ops, pos = generate_trajectory_complex(120, rng=3)
    rng = np.random.default_rng(0)
    s = rng.choice([-1.0, 1.0], size=ops.num_edges)
    S = sp.diags(s)
    flipped = ComplexOperators.from_incidence(ops.B1 @ S, S @ ops.B2)
    # random walks (sparse flows) and dense random flows
    walks = []
    for start in rng.choice(ops.num_nodes, size=6, replace=False):
        path = [int(start)]
        for _ in range(12):
            nbrs = ops.edges[(ops.edges == path[-1]).any(axis=1)].ravel()
            nbrs = nbrs[(nbrs != path[-1]) & ~np.isin(nbrs, path)]
            if nbrs.size == 0:
                break
            path.append(int(rng.choice(nbrs)))
        walks.append(path)
    x = torch.cat(
        [
            torch.stack([ops.path_to_flow(p, dtype=torch.float64) for p in walks]),
            torch.from_numpy(rng.standard_normal((4, ops.num_edges))),
        ]
    )
    sign = torch.from_numpy(s)
    return ops, flipped, sign, x, walks


def test_operators_and_paths_follow_the_given_orientation(setting):
    ops, flipped, sign, x, walks = setting
    pairs = zip(ops.edges.tolist(), sign.tolist(), strict=True)
    assert flipped.edges.tolist() == [[u, v] if si > 0 else [v, u] for (u, v), si in pairs]
    assert (flipped.L0 != ops.L0).nnz == 0  # node Laplacian unchanged
    S = sp.diags(sign.numpy())
    for name in ("L_down", "L_up"):
        np.testing.assert_array_equal(
            getattr(flipped, name).toarray(), (S @ getattr(ops, name) @ S).toarray()
        )
    for p, xi in zip(walks, x, strict=False):
        assert torch.equal(flipped.path_to_flow(p, dtype=torch.float64), sign * xi)
    torch.testing.assert_close(flipped.divergence(sign * x), ops.divergence(x), rtol=0, atol=1e-12)
    col, sg = ops.edge_lookup(ops.edges[:, 0], ops.edges[:, 1])
    col_f, sg_f = flipped.edge_lookup(ops.edges[:, 0], ops.edges[:, 1])
    assert np.array_equal(col, col_f) and np.array_equal(sg_f, sg * sign.numpy())
    # another frame is another complex for saved encoders (their weights are frame-specific)
    assert flipped.fingerprint() != ops.fingerprint()


@pytest.mark.parametrize("backend", ["exact", "iterative"])
def test_hodge_parts_are_equivariant(setting, backend):
    ops, flipped, sign, x, _ = setting
    a = HodgeDecomposition(ops, backend=backend)
    b = HodgeDecomposition(flipped, backend=backend)
    assert a.dims == b.dims
    for pa, pb in zip(a(x), b(sign * x), strict=True):
        torch.testing.assert_close(pb, sign * pa, rtol=0, atol=1e-10)
    support = [np.flatnonzero(xi.numpy()) for xi in x[:3]]
    blocks_a = a.projector_blocks(support)
    blocks_b = b.projector_blocks(support)
    for k in blocks_a:
        for s_idx, ba, bb in zip(support, blocks_a[k], blocks_b[k], strict=True):
            d = sign[s_idx]
            torch.testing.assert_close(bb, d[:, None] * ba * d[None, :], rtol=0, atol=1e-10)


def test_drop_probabilities_and_masks_are_invariant(setting):
    ops, flipped, sign, x, _ = setting
    x = x[:7]  # the walks and one dense flow
    ha, hb = HodgeDecomposition(ops), HodgeDecomposition(flipped)
    kwargs = dict(budget=0.4, perturb=("gradient",), preserve=("curl", "harmonic"), num_steps=30)
    pa = optimize_drop_probabilities(x, ha, **kwargs)
    pb = optimize_drop_probabilities(sign * x, hb, **kwargs)
    assert pa.shape == x.shape and float(pa.max()) > 0
    torch.testing.assert_close(pb, pa, rtol=0, atol=1e-9)
    # the masked views (same seed) flip with the edges
    n1 = ops.num_edges
    ma = HodgeSpectralMask(0.4, hodge=ha, generator=7, num_steps=30)
    mb = HodgeSpectralMask(0.4, hodge=hb, generator=7, num_steps=30)

    def batch(flows: torch.Tensor) -> Batch:
        return Batch.from_data_list([Data(x_1=f.view(-1, 1)) for f in flows])

    va = ma(batch(x)).x_1.view(-1, n1)
    vb = mb(batch(sign * x)).x_1.view(-1, n1)
    assert torch.equal(vb, sign * va)
    assert not torch.equal(va, x)  # something was dropped


def test_negative_weights_and_debiased_loss_are_invariant(setting):
    ops, flipped, sign, x, _ = setting
    parts_a = HodgeDecomposition(ops)(x)
    parts_b = HodgeDecomposition(flipped)(sign * x)
    for gamma in ((1.0, 1.0, 1.0), (0.0, 1.0, 2.0)):
        wa = hodge_negative_weights(parts_a, gamma)
        wb = hodge_negative_weights(parts_b, gamma)
        torch.testing.assert_close(wb, wa, rtol=0, atol=1e-9)
        assert float(wa.std()) > 0  # not the uniform fallback
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(x.shape[0], 8, generator=g, dtype=torch.float64)
    z2 = torch.randn(x.shape[0], 8, generator=g, dtype=torch.float64)
    loss = HodgeDebiasedInfoNCE(temperature=0.5)
    rows_a, rows_b = (torch.stack(tuple(p), -1).reshape(-1, 3) for p in (parts_a, parts_b))
    torch.testing.assert_close(
        loss(z1, z2, hodge_parts=rows_b), loss(z1, z2, hodge_parts=rows_a), rtol=0, atol=1e-9
    )


@pytest.mark.parametrize("signs", [(1, 1), (1, -1)])
def test_a_triangle_listed_twice_in_b2_is_an_error(signs):
    """Issue 26 case 1: a duplicate column of B2 (the same three edges, in either orientation)
    used to be accepted."""
    B1 = np.array([[-1, 0, -1], [1, -1, 0], [0, 1, 1]])  # edges 0->1, 1->2, 0->2
    column = np.array([1, 1, -1])  # the boundary 0 -> 1 -> 2 -> 0
    B2 = np.stack([column, signs[1] * column], axis=1)
    with pytest.raises(ValueError, match=r"`B2` columns 0 and 1 are the same triangle \(edges "
                       r"\[0, 1, 2\]\): a triangle listed twice"):  # fmt: skip
        ComplexOperators.from_incidence(B1, B2)
    assert ComplexOperators.from_incidence(B1, B2[:, :1]).num_triangles == 1
