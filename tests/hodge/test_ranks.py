"""Exact ranks of boundary matrices (``hodge.ranks``) and the exact Hodge dimensions of the
iterative backend on complexes with many closed 2-cycles."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._rank_complexes import hollow_tetrahedron, torus
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.hodge import ranks
from topo_contrastive.hodge.ranks import exact_rank, independent_columns


def skeleton(n: int) -> ComplexOperators:
    """The 2-skeleton of the simplex on ``n`` vertices: beta_1 = 0, beta_2 = C(n-1, 3)."""
    return ComplexOperators.from_simplices(
        list(itertools.combinations(range(n), 2)), list(itertools.combinations(range(n), 3))
    )


def projective_plane() -> ComplexOperators:
    """The six-vertex triangulation of RP^2: H_2(RP^2; Q) = 0 but H_1 = Z/2, so B2 has
    full column rank over Q and loses one over F_2."""
    tris = [(0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5), (0, 1, 5),
            (1, 2, 4), (2, 3, 5), (1, 3, 4), (2, 4, 5), (1, 3, 5)]  # fmt: skip
    edges = sorted({tuple(sorted(e)) for t in tris for e in itertools.combinations(t, 2)})
    return ComplexOperators.from_simplices(edges, tris)


def dense_rank(m) -> int:
    return int(np.linalg.matrix_rank(np.asarray(m.toarray() if sp.issparse(m) else m, float)))


@pytest.fixture(params=["dense", "sparse"])
def core_path(request, monkeypatch):
    """Both reductions of the core: dense arrays, and sparse columns (forced)."""
    if request.param == "sparse":
        monkeypatch.setattr(ranks, "_DENSE_CORE_ENTRIES", 0)
    return request.param


def fraction_rank(a) -> int:
    """The rank over Q by Gaussian elimination in exact fractions (the reference)."""
    m = [[Fraction(int(v)) for v in row] for row in np.asarray(a, dtype=object)]
    rank = 0
    for c in range(len(m[0]) if m else 0):
        top = next((r for r in range(rank, len(m)) if m[r][c] != 0), None)
        if top is None:
            continue
        m[rank], m[top] = m[top], m[rank]
        for r in range(rank + 1, len(m)):
            f = m[r][c] / m[rank][c]
            m[r] = [x - f * y for x, y in zip(m[r], m[rank], strict=True)]
        rank += 1
    return rank


def test_random_unit_matrices_match_the_dense_rank(core_path):
    # entries +-1, as in every boundary matrix: the modular reduction of the core
    rng = np.random.default_rng(0)
    for trial in range(200):
        m, n = (int(v) for v in rng.integers(1, 25, 2))
        a = rng.choice([-1, 0, 0, 0, 0, 1], size=(m, n))
        if trial % 3 == 0 and n > 1:
            a[:, n // 2 :] = a[:, : n - n // 2]  # repeated columns: rank deficient
        cols = independent_columns(a)
        assert exact_rank(a) == cols.size == dense_rank(a)
        assert dense_rank(a[:, cols]) == cols.size  # the columns are independent


def test_any_int64_entries_match_exact_fractions(monkeypatch):
    # entries other than +-1 are reduced over the integers (the modular reduction must not
    # run), also those beyond float precision and multiples of both primes
    monkeypatch.setattr(ranks, "_core_pivot_columns", None)
    rng = np.random.default_rng(1)
    P = ranks._PRIMES[0] * ranks._PRIMES[1]  # ~ 4.6e18 < 2**63
    for trial in range(150):
        m, n = (int(v) for v in rng.integers(1, 12, 2))
        a = rng.choice([-2, -1, 0, 0, 0, 1, 3, 7], size=(m, n)).astype(np.int64)
        if trial % 3 == 0 and n > 1:
            a[:, n // 2 :] = 2 * a[:, : n - n // 2]  # rank deficient
        if trial % 4 == 1:
            a = a * rng.choice([1, P // 7, 2**60 + 1], size=(1, n))  # huge columns
        cols = independent_columns(a)
        assert exact_rank(a) == cols.size == fraction_rank(a), a
        assert fraction_rank(a[:, cols]) == cols.size


def test_matrices_that_fooled_both_primes():
    # a core whose minors are multiples of both primes: the two primes agreed on a wrong rank
    p1, p2 = ranks._PRIMES
    full = np.array([[p1 + 1, p2], [1, p2]])  # det = p1 p2, entries below 2**32
    assert exact_rank(full) == 2 == fraction_rank(full)  # was 1
    P = p1 * p2
    multiples = np.array([[P, P, 0], [P, 2 * P, P], [0, P, 2 * P]])  # non-singular: det = P^3
    assert exact_rank(multiples) == 3 == fraction_rank(multiples)  # was 0
    rank2 = np.array([[P, 0, P], [0, P, P], [P, P, 2 * P]])  # row 3 = row 1 + row 2
    assert exact_rank(rank2) == 2 == fraction_rank(rank2)
    assert exact_rank(rank2.astype(float)) == 2  # integral floats below 2**63: exact


@pytest.mark.parametrize(
    ("build", "n2", "rank_b2"),
    [
        (hollow_tetrahedron, 4, 3),  # one closed 2-cycle
        (lambda: torus(3, 4), 24, 23),  # a closed orientable surface: beta_2 = 1
        (projective_plane, 10, 10),  # torsion: over F_2 the rank would be 9
        (lambda: skeleton(12), comb(12, 3), comb(12, 3) - comb(11, 3)),
    ],
)
def test_hand_built_complexes(build, n2, rank_b2, core_path):
    ops = build()
    assert ops.num_faces == n2
    assert exact_rank(ops.B2) == rank_b2 == dense_rank(ops.B2)
    assert exact_rank(ops.B1) == ops.num_nodes - 1  # connected


def test_peeling_alone_settles_a_surface_with_boundary(monkeypatch):
    """A disc (a triangulated grid) collapses by peeling: the core is never reduced."""
    def fail(*_):
        raise AssertionError("the core should be empty")

    monkeypatch.setattr(ranks, "_core_pivot_columns", fail)
    n = 6
    idx = np.arange(n * n).reshape(n, n)
    tris = [t for i in range(n - 1) for j in range(n - 1)
            for t in ((idx[i, j], idx[i + 1, j], idx[i + 1, j + 1]),
                      (idx[i, j], idx[i, j + 1], idx[i + 1, j + 1]))]  # fmt: skip
    edges = sorted({tuple(sorted(e)) for t in tris for e in itertools.combinations(t, 2)})
    ops = ComplexOperators.from_simplices(edges, tris)
    assert exact_rank(ops.B2) == ops.num_faces


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_torch_tensors_are_accepted_and_object_arrays_refused():
    ops = torus(3, 4)
    b2 = ops.operator("B2", dtype=torch.float64)  # sparse COO
    assert exact_rank(b2) == exact_rank(b2.to_sparse_csr()) == exact_rank(b2.to_dense()) == 23
    assert exact_rank(torch.zeros(3, 4).to_sparse()) == 0
    # entries beyond int64 (they used to wrap around: 3 for a rank-2 matrix)
    big = np.array([[2**64, 2**65, 0], [2**65, 2**66, 0], [0, 0, 1]], dtype=object)
    with pytest.raises(TypeError, match="must hold numbers of an integer or float dtype, got "
                       r"dtype object \(convert Python ints to int64"):  # fmt: skip
        exact_rank(big, "B2")
    with pytest.raises(ValueError, match=r"holds the entry 1e\+20, beyond the int64 range"):
        exact_rank(np.array([[1e20, 1.0], [2.0, 3.0]]))
    with pytest.raises(ValueError, match=r"holds the entry 9223372036854775808, beyond"):
        exact_rank(np.array([[2**63, 1]], dtype=np.uint64))
    with pytest.raises(TypeError, match=r"2-D matrix, got shape \(2, 2, 2\)"):
        exact_rank(torch.zeros(2, 2, 2))


def test_a_large_core_of_other_entries_is_refused_not_guessed(monkeypatch):
    monkeypatch.setattr(ranks, "_EXACT_CORE_ENTRIES", 8)
    with pytest.raises(ValueError, match=r"3 x 3, holds entries other than \+-1 and is larger"):
        exact_rank(np.array([[2, 1, 1], [1, 2, 1], [1, 1, 2]]), "M")


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match=r"`B2` must hold integer entries"):
        exact_rank(np.array([[0.5, 1.0]]), "B2")
    with pytest.raises(ValueError, match="integer entries"):
        exact_rank(np.array([[np.nan, 1.0]]))
    with pytest.raises(TypeError, match=r"2-D matrix, got shape \(3,\)"):
        exact_rank(np.ones(3))


def test_a_core_that_fills_in_is_refused_not_guessed(monkeypatch):
    monkeypatch.setattr(ranks, "_DENSE_CORE_ENTRIES", 0)
    monkeypatch.setattr(ranks, "_SPARSE_CORE_WORK", 10)
    with pytest.raises(ValueError, match="the rank of `B2` cannot be established"):
        exact_rank(skeleton(8).B2, "B2")


@pytest.mark.parametrize("n", [9, 16, 24])
def test_iterative_dims_on_skeletons_with_hundreds_of_closed_2_cycles(n):
    """beta_2 = C(n-1, 3): 56, 455 and 1,771 closed 2-cycles (ARPACK's count stopped at
    32); the iterative parts equal the exact backend's."""
    ops = skeleton(n)
    it = HodgeDecomposition(ops, backend="iterative")
    assert it.dims == {"gradient": n - 1, "curl": comb(n - 1, 2), "harmonic": 0}
    assert ops.num_faces - it.dims["curl"] == comb(n - 1, 3)
    x = torch.randn(5, ops.num_edges, generator=torch.Generator().manual_seed(0),
                    dtype=torch.float64)  # fmt: skip
    ex = HodgeDecomposition(ops, backend="exact")
    assert ex.dims == it.dims
    for a, b in zip(it.decompose(x), ex.decompose(x), strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


@st.composite
def closed_cycle_complexes(draw):
    """Random complexes with many closed 2-cycles: hollow tetrahedra and octahedra glued
    at random vertices, a random part of a simplex's 2-skeleton, and holes (edges)."""
    n = draw(st.integers(6, 11))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    tris: set[tuple[int, ...]] = set()
    for _ in range(draw(st.integers(1, 8))):
        quad = sorted(rng.choice(n, 4, replace=False).tolist())
        tris.update(itertools.combinations(quad, 3))  # a hollow tetrahedron
    for _ in range(draw(st.integers(0, 3))):
        a, b, c, d, e, f = rng.choice(n, 6, replace=False).tolist()  # a hollow octahedron
        tris.update(tuple(sorted(t)) for t in itertools.product((a, b), (c, d), (e, f)))
    every = list(itertools.combinations(range(n), 3))
    keep = rng.random(len(every)) < draw(st.floats(0.0, 0.5))
    tris.update(t for t, k in zip(every, keep, strict=True) if k)
    edges = {tuple(sorted(e)) for t in tris for e in itertools.combinations(t, 2)}
    extra = rng.choice(n, (draw(st.integers(0, 6)), 2)).tolist()
    edges.update(tuple(sorted(e)) for e in extra if e[0] != e[1])
    return ComplexOperators.from_simplices(sorted(edges), sorted(tris), num_nodes=n)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(closed_cycle_complexes())
def test_iterative_dims_and_parts_equal_the_exact_backend(ops):
    """Property: on random complexes with closed 2-cycles the iterative backend's dims are
    the ranks of the dense incidence matrices and its parts the exact backend's."""
    it = HodgeDecomposition(ops, backend="iterative")
    ex = HodgeDecomposition(ops, backend="exact")
    rank_b1, rank_b2 = dense_rank(ops.B1), dense_rank(ops.B2)
    expected = {"gradient": rank_b1, "curl": rank_b2,
                "harmonic": ops.num_edges - rank_b1 - rank_b2}  # fmt: skip
    assert it.dims == ex.dims == expected
    x = torch.randn(3, ops.num_edges, generator=torch.Generator().manual_seed(1),
                    dtype=torch.float64)  # fmt: skip
    for a, b in zip(it.decompose(x), ex.decompose(x), strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=0)
