"""Property tests with ``hypothesis`` on random small 2-complexes (random points, their
Delaunay triangulation, a random subset of the triangles filled, random edge orientations)
and on random planar cell complexes (the same triangulations with triangles merged into
quadrilaterals, a random subset of the faces filled).

Properties (paper eq. 1 and 3; Schaub et al. 2021, §2: orientations are a reference frame):

- ``B1 @ B2 = 0``;
- the three Hodge parts are pairwise orthogonal and sum to the flow; both backends agree;
- re-orienting edges (``S = diag(+-1)``: ``B1 S``, ``S B2``, ``S x``) flips the parts at the
  re-oriented edges only;
- ``SCNNConv`` (no bias) is orientation- and permutation-equivariant;
- ``HodgeReadout(pool="none")`` and the Hodge-debiased loss are invariant.

Example counts are bounded so that the default suite stays fast.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial import Delaunay

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.losses import HodgeDebiasedInfoNCE
from topo_contrastive.nn import HodgeReadout, SCNNConv

from ._cell_complexes import random_planar_cell_complex

SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def complexes(draw):
    """``(ops, signs, perm, rng)``: a random complex, edge signs and an edge permutation."""
    seed = draw(st.integers(0, 2**31 - 1))
    n = draw(st.integers(6, 22))
    fill = draw(st.floats(0.3, 1.0))
    cells = draw(st.booleans())  # a cell complex with polygon 2-cells
    rng = np.random.default_rng(seed)
    if cells:
        ops = random_planar_cell_complex(rng, n, fill)
        signs = rng.choice([-1.0, 1.0], size=ops.num_edges)
        return ops, signs, rng.permutation(ops.num_edges), rng
    pts = rng.random((n, 2))
    tri = np.sort(Delaunay(pts).simplices, axis=1)
    edges = np.unique(np.concatenate([tri[:, [0, 1]], tri[:, [0, 2]], tri[:, [1, 2]]]), axis=0)
    filled = tri[rng.random(len(tri)) < fill]
    ops = ComplexOperators.from_simplices(edges, filled if len(filled) else None, n)
    signs = rng.choice([-1.0, 1.0], size=ops.num_edges)
    perm = rng.permutation(ops.num_edges)
    return ops, signs, perm, rng


def reoriented(
    ops: ComplexOperators, signs: np.ndarray, cell_signs: np.ndarray | None = None
) -> ComplexOperators:
    S = sp.diags(signs)
    B2 = None if ops.num_faces == 0 else S @ ops.B2
    if B2 is not None and cell_signs is not None:
        B2 = B2 @ sp.diags(cell_signs)
    return ComplexOperators.from_incidence(ops.B1 @ S, B2)


def permuted(ops: ComplexOperators, perm: np.ndarray) -> ComplexOperators:
    B2 = None if ops.num_faces == 0 else ops.B2.tocsr()[perm]
    return ComplexOperators.from_incidence(ops.B1.tocsc()[:, perm], B2)


@SETTINGS
@given(complexes())
def test_boundary_of_boundary_is_zero(case):
    ops, signs, _, _ = case
    for c in (ops, reoriented(ops, signs)):
        if c.num_faces:
            assert abs(c.B1 @ c.B2).max() == 0


@SETTINGS
@given(complexes())
def test_parts_are_orthogonal_sum_to_the_flow_and_backends_agree(case):
    ops, _, _, rng = case
    x = torch.from_numpy(rng.standard_normal((4, ops.num_edges)))  # [B, N1] float64
    exact = HodgeDecomposition(ops, backend="exact")(x)
    total = exact.gradient + exact.curl + exact.harmonic
    torch.testing.assert_close(total, x, rtol=0, atol=1e-9)
    scale = float((x * x).sum())
    for a, b in ((exact.gradient, exact.curl), (exact.gradient, exact.harmonic),
                 (exact.curl, exact.harmonic)):  # fmt: skip
        assert float((a * b).sum(-1).abs().max()) <= 1e-9 * scale
    iterative = HodgeDecomposition(ops, backend="iterative")(x)
    for name in ("gradient", "curl", "harmonic"):
        torch.testing.assert_close(
            getattr(iterative, name), getattr(exact, name), rtol=0, atol=1e-6
        )


@SETTINGS
@given(complexes())
def test_reorienting_edges_flips_the_parts_there_only(case):
    ops, signs, _, rng = case
    x = torch.from_numpy(rng.standard_normal((3, ops.num_edges)))
    s = torch.from_numpy(signs)
    base = HodgeDecomposition(ops, backend="exact")(x)
    cell_signs = rng.choice([-1.0, 1.0], size=ops.num_faces)  # re-oriented 2-cells too
    flipped = HodgeDecomposition(reoriented(ops, signs, cell_signs), backend="exact")(x * s)
    for name in ("gradient", "curl", "harmonic"):
        torch.testing.assert_close(getattr(flipped, name), getattr(base, name) * s, atol=1e-9,
                                   rtol=0)  # fmt: skip


def _conv(ops: ComplexOperators, x: torch.Tensor, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    conv = SCNNConv(2, 3, K_down=2, K_up=2, bias=False).double()
    L_down, L_up = ops.laplacians(dtype=torch.float64)
    return conv(x, (L_down, L_up))


@SETTINGS
@given(complexes())
def test_scnn_conv_is_orientation_and_permutation_equivariant(case):
    ops, signs, perm, rng = case
    x = torch.from_numpy(rng.standard_normal((2, ops.num_edges, 2)))  # [B, N1, C]
    s = torch.from_numpy(signs)[None, :, None]
    p = torch.from_numpy(perm)
    out = _conv(ops, x, 0)
    torch.testing.assert_close(_conv(reoriented(ops, signs), x * s, 0), out * s, atol=1e-9,
                               rtol=0)  # fmt: skip
    torch.testing.assert_close(_conv(permuted(ops, perm), x[:, p], 0), out[:, p], atol=1e-9,
                               rtol=0)  # fmt: skip


@SETTINGS
@given(complexes())
def test_hodge_readout_without_pooling_is_orientation_invariant(case):
    ops, signs, _, rng = case
    if ops.num_edges - np.linalg.matrix_rank(ops.B1.toarray()) - (
        np.linalg.matrix_rank(ops.B2.toarray()) if ops.num_faces else 0
    ) == 0:
        return  # no harmonic part: the readout would be empty
    H = torch.from_numpy(rng.standard_normal((2, ops.num_edges, 3)))
    s = torch.from_numpy(signs)[None, :, None]
    base = HodgeReadout(HodgeDecomposition(ops), pool="none").double()(H)
    turned = HodgeReadout(HodgeDecomposition(reoriented(ops, signs)), pool="none").double()
    torch.testing.assert_close(turned(H * s), base, atol=1e-7, rtol=0)


@SETTINGS
@given(complexes())
def test_debiased_loss_is_invariant_to_orientation_and_edge_order(case):
    ops, signs, perm, rng = case
    B = 5
    x = torch.from_numpy(rng.standard_normal((B, ops.num_edges)))
    z1, z2 = (torch.from_numpy(rng.standard_normal((B, 4))) for _ in range(2))
    parts = torch.stack(list(HodgeDecomposition(ops)(x)))  # [3, B, N1]
    loss = HodgeDebiasedInfoNCE(0.5, (1.0, 0.5, 2.0))

    def rows(t: torch.Tensor) -> torch.Tensor:  # [3, B, N1] -> the batch layout [B * N1, 3]
        return t.permute(1, 2, 0).reshape(-1, 3)

    ref = loss(z1, z2, hodge_parts=rows(parts))
    s = torch.from_numpy(signs)
    torch.testing.assert_close(loss(z1, z2, hodge_parts=rows(parts * s)), ref, atol=1e-12, rtol=0)
    p = torch.from_numpy(perm)
    torch.testing.assert_close(
        loss(z1, z2, hodge_parts=rows(parts[:, :, p])), ref, atol=1e-12, rtol=0
    )


def test_the_strategy_draws_complexes_with_holes_and_triangles():
    """The generator covers what the properties are about (a test that could fail)."""
    seen = {"holes": 0, "triangles": 0, "polygons": 0}

    # derandomized: a fixed set of draws, so the coverage count cannot fail by chance (the
    # random draws gave 4 polygon complexes of 30 in one CI run)
    @settings(max_examples=30, deadline=None, database=None, derandomize=True)
    @given(complexes())
    def look(case):
        ops = case[0]
        dims = HodgeDecomposition(ops, backend="exact").dims
        seen["holes"] += dims["harmonic"] > 0
        seen["triangles"] += ops.num_faces > 0 and ops.is_simplicial
        seen["polygons"] += bool((ops.face_sizes > 3).any())

    look()
    assert seen["holes"] >= 5 and seen["triangles"] >= 5 and seen["polygons"] >= 5, seen


@pytest.mark.parametrize("n", [7])
def test_reoriented_complex_is_a_valid_complex(n):
    rng = np.random.default_rng(n)
    pts = rng.random((n, 2))
    tri = np.sort(Delaunay(pts).simplices, axis=1)
    edges = np.unique(np.concatenate([tri[:, [0, 1]], tri[:, [0, 2]], tri[:, [1, 2]]]), axis=0)
    ops = ComplexOperators.from_simplices(edges, tri, n)
    flipped = reoriented(ops, -np.ones(ops.num_edges))
    assert (flipped.B1 != -ops.B1).nnz == 0 and (flipped.B2 != -ops.B2).nnz == 0
