"""Exact Hodge dimensions on real complexes shipped by pytspl: road networks with their
3-cliques filled, an exchange market and a co-listening network, whose closed 2-cycles
(beta_2 from 1 to 584) an eigenvalue count got wrong. The complexes are built from their
edges and triangles (pytspl's own B2 is mis-signed on some networks), and the reference
numbers are those of an independent dense cross-check."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.examples.test_examples import PYTSPL_MISSING
from topo_contrastive import ComplexOperators, HodgeDecomposition

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pytspl") is None, reason=PYTSPL_MISSING)


def data_dir() -> Path:
    return Path(importlib.util.find_spec("pytspl").origin).parent / "data"


def from_csv(b1: str, b2t: str) -> ComplexOperators:
    """Edges from the columns of ``B1``, triangles from the supports of the rows of
    ``B2^T`` (their signs are not used)."""
    B1 = np.loadtxt(data_dir() / b1, delimiter=",")
    edges = np.sort(np.stack([np.flatnonzero(col) for col in B1.T]), axis=1)
    B2t = np.atleast_2d(np.loadtxt(data_dir() / b2t, delimiter=","))
    tris = {tuple(np.unique(edges[np.flatnonzero(row)]).tolist()) for row in B2t}
    return ComplexOperators.from_simplices(edges, sorted(tris), num_nodes=B1.shape[0])


def clique_complex_of_tntp(name: str) -> ComplexOperators:
    """Every link of a TNTP network (connectors included) as an undirected edge, every
    3-clique filled."""
    path = data_dir() / "transportation_networks" / name / f"{name}_net.tntp"
    rows = [ln.split() for ln in path.read_text().split("~", 1)[1].splitlines()]
    pairs = {tuple(sorted((int(r[0]), int(r[1])))) for r in rows if r and r[0].isdigit()}
    pairs = {p for p in pairs if p[0] != p[1]}
    nodes = sorted({v for p in pairs for v in p})
    index = {v: i for i, v in enumerate(nodes)}
    edges = sorted((index[a], index[b]) for a, b in pairs)
    nbrs: list[set[int]] = [set() for _ in nodes]
    for a, b in edges:
        nbrs[a].add(b)
        nbrs[b].add(a)
    tris = sorted((a, b, c) for a, b in edges for c in nbrs[a] & nbrs[b] if c > b)
    return ComplexOperators.from_simplices(edges, tris, num_nodes=len(nodes))


CASES = {
    # name: (build, (N0, N1, N2), (gradient, curl, harmonic)); beta_2 = N2 - curl
    "winnipeg": (lambda: clique_complex_of_tntp("winnipeg"), (1040, 1595, 185), (1039, 152, 404)),
    "foreign exchange": (
        lambda: from_csv("foreign_exchange/B1.csv", "foreign_exchange/B2t.csv"),
        (25, 210, 770),
        (24, 186, 0),
    ),
    "lastfm-artist": (
        lambda: from_csv("lastfm-dataset-1K/B1-artist.csv", "lastfm-dataset-1K/B2t-artist.csv"),
        (657, 1997, 1276),
        (656, 864, 477),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_iterative_dims_on_real_complexes(name):
    build, sizes, dims = CASES[name]
    ops = build()
    assert (ops.num_nodes, ops.num_edges, ops.num_faces) == sizes
    it = HodgeDecomposition(ops, backend="iterative")
    assert tuple(it.dims.values()) == dims


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[] if n == "foreign exchange" else pytest.mark.slow)
             for n in CASES]
)  # fmt: skip
def test_iterative_parts_equal_the_exact_backend_on_real_complexes(name):
    ops = CASES[name][0]()
    it = HodgeDecomposition(ops, backend="iterative")
    ex = HodgeDecomposition(ops, backend="exact")
    assert ex.dims == it.dims
    x = torch.randn(4, ops.num_edges, generator=torch.Generator().manual_seed(0),
                    dtype=torch.float64)  # fmt: skip
    for a, b in zip(it.decompose(x), ex.decompose(x), strict=True):
        torch.testing.assert_close(a, b, atol=1e-10 * float(x.norm(dim=-1).max()), rtol=0)


@pytest.mark.slow
def test_lastfm_songs_auto_backend_is_exact():
    """5,507 edges, beta_2 = 34: ``backend="auto"`` takes the iterative path (the reported
    curl part was off by 0.022 ||f||)."""
    ops = from_csv("lastfm-dataset-1K/B1.csv", "lastfm-dataset-1K/B2t.csv")
    auto = HodgeDecomposition(ops)
    assert auto.backend != "exact"
    assert auto.dims == {"gradient": 3091, "curl": 537, "harmonic": 1879}
    assert ops.num_faces - auto.dims["curl"] == 34
    x = torch.randn(2, ops.num_edges, generator=torch.Generator().manual_seed(0),
                    dtype=torch.float64)  # fmt: skip
    parts = auto.decompose(x)
    ex = HodgeDecomposition(ops, backend="exact").decompose(x)
    for a, b in zip(parts, ex, strict=True):
        torch.testing.assert_close(a, b, atol=1e-9 * float(x.norm(dim=-1).max()), rtol=0)


