"""HodgeReadout: exact values, the naive formula, orientation invariance, edge cases."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from tests.nn._helpers import delaunay_complex, tiny_complex
from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.nn import SCNN, HodgeReadout, canonical_harmonic_basis
from topo_contrastive.nn.harmonic_features import harmonic_sketch


def _holey_complex(seed: int = 0) -> ComplexOperators:
    """Delaunay complex of 120 points with the triangles touching two square holes removed
    (beta_1 = 2 unless a hole is empty)."""
    rng = np.random.default_rng(seed)
    pts = rng.random((120, 2))
    import scipy.spatial

    tri = scipy.spatial.Delaunay(pts).simplices
    in_hole = ((pts > 0.2) & (pts < 0.45)).all(1) | ((pts > 0.55) & (pts < 0.8)).all(1)
    tri = tri[~in_hole[tri].any(1)]
    used = np.unique(tri)
    remap = -np.ones(len(pts), dtype=np.int64)
    remap[used] = np.arange(used.size)
    tri = remap[tri]
    edges = np.unique(
        np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), 1), axis=0
    )
    return ComplexOperators.from_simplices(edges, tri, used.size)


def test_exact_values_on_a_square_cycle():
    # 4-cycle 0-1-2-3 without triangles: beta_1 = 1, edges (0,1) (0,3) (1,2) (2,3).
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3], [0, 3]])
    readout = HodgeReadout(HodgeDecomposition(ops))
    # the cycle 0 -> 1 -> 2 -> 3 -> 0, signed along its pivot edge (0, 1) low -> high
    np.testing.assert_allclose(
        readout.harmonic_basis.numpy(), [[0.5], [-0.5], [0.5], [0.5]], atol=1e-7
    )
    assert readout.pivots.tolist() == [0]
    H = torch.tensor([[[1.0, 0.0], [-1.0, 2.0], [1.0, 0.0], [1.0, 4.0]]])  # [1, 4, 2]
    # mean = [0.5, 1.5]; U^T H = [(1 + 1 + 1 + 1) / 2, (0 - 2 + 0 + 4) / 2] = [2, 1]
    torch.testing.assert_close(readout(H), torch.tensor([[0.5, 1.5, 2.0, 1.0]]))


@pytest.mark.parametrize("pool", ["mean", "sum", "max", "none"])
def test_equals_naive_formula(pool):
    ops = _holey_complex(1)
    hodge = HodgeDecomposition(ops)
    readout = HodgeReadout(hodge, pool=pool, energies=True)
    assert readout.beta1 == hodge.dims["harmonic"] >= 1
    g = torch.Generator().manual_seed(0)
    H = torch.randn(5, ops.num_edges, 3, generator=g, dtype=torch.float64)
    u = readout.harmonic_basis.double()
    B1 = torch.from_numpy(ops.B1.toarray())
    B2 = torch.from_numpy(ops.B2.toarray())
    rows = []
    for h in H:  # one sample at a time, from the formula
        parts = {"mean": [h.mean(0)], "sum": [h.sum(0)], "max": [h.max(0).values], "none": []}
        coords = [u[:, k] @ h for k in range(readout.beta1)]
        energies = [
            (B1 @ h).pow(2).sum(0) / ops.num_edges,
            (B2.T @ h).pow(2).sum(0) / ops.num_edges,
        ]
        rows.append(torch.cat(parts[pool] + coords + energies))
    out = readout(H)
    assert out.shape == (5, readout.out_features(3))
    torch.testing.assert_close(out, torch.stack(rows), rtol=1e-10, atol=1e-10)
    # PyG layout [B*N1, C] and a single sample [N1, C] give the same rows
    torch.testing.assert_close(readout(H.reshape(-1, 3)), out)
    torch.testing.assert_close(readout(H[2]), out[2:3])


def test_basis_is_canonical_across_backends_and_orthonormal():
    ops = _holey_complex(2)
    exact, pe = canonical_harmonic_basis(HodgeDecomposition(ops, backend="exact"))
    iterative, pi = canonical_harmonic_basis(HodgeDecomposition(ops, backend="iterative"))
    assert pe.tolist() == pi.tolist()
    np.testing.assert_allclose(exact, iterative, atol=1e-9)
    np.testing.assert_allclose(exact.T @ exact, np.eye(exact.shape[1]), atol=1e-12)
    L1 = (ops.L_down + ops.L_up).toarray()
    np.testing.assert_allclose(L1 @ exact, 0.0, atol=1e-10)  # harmonic


def test_basis_is_computed_once_per_decomposition(monkeypatch):
    """A second call on the same decomposition reuses the basis (copies: the caller may
    change them); another decomposition of the same complex computes its own, equal one."""
    hodge = HodgeDecomposition(_holey_complex(2))
    calls = []
    basis = hodge.basis
    monkeypatch.setattr(hodge, "basis", lambda part: calls.append(part) or basis(part))
    first, p1 = canonical_harmonic_basis(hodge)
    first[:] = 0.0  # the caller's copy
    second, p2 = canonical_harmonic_basis(hodge)
    assert calls == ["harmonic"] and p1.tolist() == p2.tolist()
    fresh, _ = canonical_harmonic_basis(HodgeDecomposition(_holey_complex(2)))
    np.testing.assert_array_equal(second, fresh)


def test_invariant_to_edge_orientation():
    ops = _holey_complex(3)
    rng = np.random.default_rng(0)
    s = rng.choice([-1.0, 1.0], size=ops.num_edges)
    S = sp.diags(s)
    B2 = (S @ ops.B2).tocsc()
    # a triangle whose edges now all run along its boundary gets the opposite orientation
    signs = np.ones(ops.num_triangles)
    cyclic = (np.asarray(B2.todense()) > 0).sum(0) == 3
    signs[np.asarray(cyclic).ravel()] = -1.0
    flipped = ComplexOperators.from_incidence(ops.B1 @ S, B2 @ sp.diags(signs))
    g = torch.Generator().manual_seed(1)
    H = torch.randn(4, ops.num_edges, 6, generator=g, dtype=torch.float64)
    Hs = H * torch.from_numpy(s)[None, :, None]
    for hodge_kwargs in ({"backend": "exact"}, {"backend": "iterative"}):
        a = HodgeReadout(HodgeDecomposition(ops, **hodge_kwargs), pool="none", energies=True)
        b = HodgeReadout(HodgeDecomposition(flipped, **hodge_kwargs), pool="none", energies=True)
        torch.testing.assert_close(
            b.harmonic_basis.double(),
            a.harmonic_basis.double() * torch.from_numpy(s)[:, None],
            rtol=0,
            atol=1e-6,
        )
        torch.testing.assert_close(b(Hs), a(H), rtol=1e-6, atol=1e-6)
    # an orientation-equivariant encoder (no bias, odd activation) + the readout: invariant
    torch.manual_seed(0)
    enc = SCNN(
        1, 8, num_layers=2, bias=False, readout=HodgeReadout(HodgeDecomposition(ops), pool="none")
    ).double()
    enc_f = SCNN(
        1,
        8,
        num_layers=2,
        bias=False,
        readout=HodgeReadout(HodgeDecomposition(flipped), pool="none"),
    ).double()
    enc_f.convs.load_state_dict(enc.convs.state_dict())
    x = torch.randn(3, ops.num_edges, 1, generator=g, dtype=torch.float64)
    xs = x * torch.from_numpy(s)[None, :, None]
    torch.testing.assert_close(
        enc_f(xs, flipped.laplacians(dtype=torch.float64)),
        enc(x, ops.laplacians(dtype=torch.float64)),
    )


def test_no_harmonic_part_returns_the_pooled_block():
    ops = delaunay_complex(20, seed=0)  # a filled disc: beta_1 = 0
    readout = HodgeReadout(HodgeDecomposition(ops))
    assert readout.beta1 == 0 and readout.out_features(4) == 4
    H = torch.randn(3, ops.num_edges, 4)
    torch.testing.assert_close(readout(H), H.mean(1))
    with pytest.raises(ValueError, match="empty"):
        HodgeReadout(HodgeDecomposition(ops), pool="none")


def test_a_fully_filled_cell_complex_has_no_harmonic_block(tmp_path):
    """A street grid with every block filled as a square 2-cell (beta_1 = 0): the
    HodgeReadout is the mean pool, and an encoder with it saves and loads."""
    from topo_contrastive.complex import planar_faces
    from topo_contrastive.io import load_encoder, save_encoder

    pos = np.array([[x, y] for y in range(4) for x in range(4)], dtype=float)
    edges = [[i, i + 1] for i in range(16) if i % 4 < 3] + [[i, i + 4] for i in range(12)]
    ops = ComplexOperators.from_cells(edges, planar_faces(edges, pos))
    assert ops.num_faces == 9 and not ops.is_simplicial
    readout = HodgeReadout(HodgeDecomposition(ops))
    assert readout.beta1 == 0 and readout.out_features(5) == 5
    H = torch.randn(3, ops.num_edges, 5, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(readout(H), H.mean(1))
    torch.manual_seed(0)
    enc = SCNN(hidden_channels=5, num_layers=2, readout=readout)
    x = torch.randn(3, ops.num_edges, 1)
    h = enc(x, ops.laplacians())
    save_encoder(enc, tmp_path / "encoder.pt", complex=ops)
    loaded, _ = load_encoder(tmp_path / "encoder.pt", complex=ops)
    assert torch.equal(loaded(x, ops.laplacians()), h.detach())


def test_bad_inputs():
    ops = tiny_complex()
    hodge = HodgeDecomposition(ops)
    readout = HodgeReadout(hodge)
    with pytest.raises(ValueError, match="N1 = 9"):
        readout(torch.randn(2, 10, 3))  # built on another complex
    with pytest.raises(ValueError, match="multiple"):
        readout(torch.randn(10, 3))
    with pytest.raises(ValueError, match="must be"):
        readout(torch.randn(9))
    with pytest.raises(TypeError, match="floating"):
        readout(torch.ones(2, 9, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="HodgeDecomposition"):
        HodgeReadout(ops)
    with pytest.raises(ValueError, match="pool"):
        HodgeReadout(hodge, pool="median")
    with pytest.raises(TypeError, match="energies"):
        HodgeReadout(hodge, energies=1)


def test_in_scnn_state_dict_dtype_and_repr():
    ops = tiny_complex()
    L_down, L_up = ops.laplacians()
    readout = HodgeReadout(HodgeDecomposition(ops), energies=True)
    assert repr(readout) == "HodgeReadout(num_edges=9, beta1=2, pool='mean', energies=True)"
    enc = SCNN(1, 8, num_layers=2, readout=readout)
    assert enc.out_channels == readout.out_features(8) == (1 + 2 + 2) * 8
    assert enc.readout_name == "HodgeReadout"
    x = torch.randn(4, ops.num_edges, 1)
    h = enc(x, (L_down, L_up))
    torch.testing.assert_close(h, readout(enc.edge_embeddings(x, (L_down, L_up))))
    assert "readout.harmonic_basis" in enc.state_dict()
    enc64 = SCNN(1, 8, num_layers=2, readout=HodgeReadout(HodgeDecomposition(ops), energies=True))
    enc64.load_state_dict(enc.state_dict())
    enc64 = enc64.double()
    out = enc64(x.double(), ops.laplacians(dtype=torch.float64))
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.float(), h, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- signals of other ranks
def _rank_complex():
    from tests._rank_complexes import solid_and_hollow

    return solid_and_hollow()  # rank 2: gradient 6, curl 1 (the solid), harmonic 1 (the cavity)


@pytest.mark.parametrize("rank", [0, 2])
@pytest.mark.parametrize("backend", ["exact", "iterative"])
def test_readout_at_rank_k_formula(rank, backend):
    ops = _rank_complex()
    hodge = HodgeDecomposition(ops, backend=backend, rank=rank)
    readout = HodgeReadout(hodge, energies=True)
    n = ops.num_simplices(rank)
    assert readout.num_edges == n and readout.rank == rank
    assert readout.beta1 == hodge.dims["harmonic"] == (2 if rank == 0 else 1)
    H = torch.randn(3, n, 4, dtype=torch.float64)
    out = readout.double()(H)
    assert out.shape == (3, readout.out_features(4))
    u = readout.harmonic_basis.double()
    np.testing.assert_allclose(u.numpy() @ u.numpy().T, hodge.projector_block(
        np.arange(n), "harmonic").numpy(), atol=1e-7)  # float32 buffer
    lower = ops.incidence(rank).toarray() if rank else np.zeros((0, n))
    upper = ops.incidence(rank + 1).toarray().T
    expected = torch.cat([
        H.mean(1),
        torch.einsum("nk,bnc->bkc", u, H).reshape(3, -1),
        torch.einsum("rn,bnc->brc", torch.from_numpy(lower), H).pow(2).sum(1) / n,
        torch.einsum("rn,bnc->brc", torch.from_numpy(upper), H).pow(2).sum(1) / n,
    ], dim=1)
    torch.testing.assert_close(out, expected)
    assert repr(readout).startswith(f"HodgeReadout(rank={rank}, num_simplices={n}, beta=")
    what = ("nodes", "edges", "triangles")[rank]
    with pytest.raises(ValueError, match=f"built on a complex with N{rank} = {n} {what}"):
        readout(torch.randn(2, n + 1, 4, dtype=torch.float64))


def test_rank_two_basis_turns_with_the_triangles():
    """Re-orienting triangles (B2 T, T B3) turns the canonical rank-2 basis into T U_H, so
    the harmonic coordinates of re-oriented signals T x are unchanged; both backends agree."""
    ops = _rank_complex()
    flip = np.ones(ops.num_triangles)
    flip[[0, 5, 6]] = -1.0
    t = sp.diags(flip)
    other = ComplexOperators.from_incidence(ops.B1, ops.B2 @ t, t @ ops.B3)
    u, piv = canonical_harmonic_basis(HodgeDecomposition(ops, rank=2))
    v, piv2 = canonical_harmonic_basis(HodgeDecomposition(other, rank=2, backend="iterative"))
    np.testing.assert_array_equal(piv, piv2)
    np.testing.assert_allclose(v, flip[:, None] * u, atol=1e-12)
    x = np.random.default_rng(0).standard_normal(ops.num_triangles)
    np.testing.assert_allclose((flip * x) @ v, x @ u, atol=1e-12)


def test_scnn_with_readout_at_rank_two():
    ops = _rank_complex()
    hodge = HodgeDecomposition(ops, rank=2)
    L_down, L_up = ops.laplacians(rank=2)
    enc = SCNN(1, 8, num_layers=2, readout=HodgeReadout(hodge))
    out = enc(torch.randn(5, ops.num_triangles, 1), (L_down, L_up))
    assert out.shape == (5, enc.out_channels) == (5, 16)


@pytest.mark.parametrize(("kept", "used"), [(1, 1), (2, 2), (5, 3)])
def test_harmonic_channels_keeps_the_coordinates_of_the_first_channels(kept, used):
    ops = _holey_complex(1)
    hodge = HodgeDecomposition(ops)
    full = HodgeReadout(hodge, energies=True)
    part = HodgeReadout(hodge, energies=True, harmonic_channels=kept)
    beta, C = full.beta1, 3
    assert part.out_features(C) == (1 + 2) * C + beta * used
    H = torch.randn(4, ops.num_edges, C, generator=torch.Generator().manual_seed(1))
    a, b = full(H), part(H)
    coords = a[:, C : C + beta * C].reshape(4, beta, C)  # harmonic-dimension-major
    torch.testing.assert_close(b[:, :C], a[:, :C])  # the pooled block
    torch.testing.assert_close(b[:, C : C + beta * used], coords[:, :, :used].reshape(4, -1))
    torch.testing.assert_close(b[:, C + beta * used :], a[:, C + beta * C :])  # energies
    assert f"harmonic_channels={kept}" in repr(part)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [(0, ValueError, ">= 1"), (-2, ValueError, ">= 1"), (1.5, TypeError, "must be an int"),
     (True, TypeError, "must be an int")],
)  # fmt: skip
def test_harmonic_channels_bad_values(value, error, match):
    with pytest.raises(error, match=match):
        HodgeReadout(HodgeDecomposition(_holey_complex(1)), harmonic_channels=value)


def test_harmonic_channels_survive_a_checkpoint(tmp_path):
    from topo_contrastive.io import load_encoder, save_encoder

    ops = _holey_complex(1)
    readout = HodgeReadout(HodgeDecomposition(ops), harmonic_channels=2)
    enc = SCNN(hidden_channels=6, readout=readout)
    save_encoder(enc, tmp_path / "e.pt", complex=ops)
    loaded, meta = load_encoder(tmp_path / "e.pt", complex=ops)
    assert loaded.readout.harmonic_channels == 2 and loaded.out_channels == enc.out_channels
    assert meta["architecture"]["readout_options"]["harmonic_channels"] == 2
    x = torch.randn(2, ops.num_edges, 1)
    L = ops.laplacians()
    torch.testing.assert_close(loaded(x, L), enc.eval()(x, L))


@pytest.mark.parametrize("kwargs", [{}, {"harmonic_channels": 2}, {"pool": "max"}])
def test_edge_perm_reads_renumbered_features(kwargs):
    """``edge_perm``: features in a renumbering of the edges give the readout of the
    features in the complex's numbering; refused with the energies (their tables are in the
    complex's numbering)."""
    ops = _holey_complex(1)
    readout = HodgeReadout(HodgeDecomposition(ops), **kwargs).double()
    assert readout.harmonic_dim > 0
    g = torch.Generator().manual_seed(3)
    H = torch.randn(4, ops.num_edges, 5, generator=g, dtype=torch.float64)
    perm = torch.randperm(ops.num_edges, generator=g)
    torch.testing.assert_close(readout(H[:, perm], edge_perm=perm), readout(H),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    energies = HodgeReadout(HodgeDecomposition(ops), energies=True)
    with pytest.raises(ValueError, match="`edge_perm` is not supported with energies=True"):
        energies(H.float(), edge_perm=perm)


@pytest.mark.parametrize("harmonic", ["exact", "sketch"])
def test_coordinates_in_the_metric_of_a_weighted_complex(harmonic):
    ops = _holey_complex(2)
    w = np.random.default_rng(3).uniform(0.05, 20.0, ops.num_edges)
    hodge = HodgeDecomposition(ops.with_weights("resistance", edge=w))
    readout = HodgeReadout(hodge, pool="none", harmonic=harmonic, sketch_dim=6)
    H = torch.randn(3, ops.num_edges, 2, generator=torch.Generator().manual_seed(4),
                    dtype=torch.float64)  # fmt: skip
    # the dense projectors of the W1 metric (docs/weights.md)
    B1, B2, W = ops.B1.toarray(), ops.B2.toarray(), np.diag(w)
    pg = np.diag(1 / w) @ B1.T @ np.linalg.pinv(B1 @ np.diag(1 / w) @ B1.T) @ B1
    pc = B2 @ np.linalg.pinv(B2.T @ W @ B2) @ B2.T @ W
    out = readout(H).view(3, -1, 2).numpy()  # [B, d, C]
    scale = np.abs(out).max()
    # the gradient and curl parts in the metric leave the coordinates where they are
    moved = readout(H + torch.from_numpy(np.einsum("ef,bfc->bec", pg + pc, H.numpy())))
    np.testing.assert_allclose(moved.view(3, -1, 2).numpy(), out, atol=1e-5 * scale)
    if harmonic == "exact":  # U^T W1 H, U W1-orthonormal: U (U^T W1 H) = P_H H
        u = canonical_harmonic_basis(hodge)[0]
        np.testing.assert_allclose(u.T @ W @ u, np.eye(u.shape[1]), atol=1e-10)
        np.testing.assert_allclose(out, u.T @ W @ H.numpy(), atol=1e-5 * scale)
        ph = np.eye(ops.num_edges) - pg - pc
        np.testing.assert_allclose(np.einsum("ek,bkc->bec", u, out), ph @ H.numpy(),
                                   atol=1e-5 * scale)  # fmt: skip
    # unweighted: the basis (or the sketch) itself
    plain = HodgeDecomposition(ops)
    m = (canonical_harmonic_basis(plain)[0] if harmonic == "exact"
         else harmonic_sketch(plain, 6))  # fmt: skip
    unweighted = HodgeReadout(plain, pool="none", harmonic=harmonic, sketch_dim=6)
    assert torch.equal(unweighted.harmonic_basis, torch.from_numpy(m).float())
