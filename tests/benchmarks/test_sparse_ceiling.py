import numpy as np
import pytest
import torch

from benchmarks.bench_sparse_ceiling import empty_like, product_times, product_variants
from topo_contrastive.complex import ComplexOperators


@pytest.fixture(scope="module")
def laplacian():
    # two triangles sharing an edge, plus a pendant edge: 6 edges, L_down = B1^T B1
    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [1, 3], [3, 4]],
                                             [[0, 1, 2], [1, 2, 3]])  # fmt: skip
    Ld = (ops.B1.T @ ops.B1).tocoo()
    L = torch.sparse_coo_tensor(np.stack([Ld.row, Ld.col]), Ld.data.astype(np.float32),
                                Ld.shape, check_invariants=True).coalesce()  # fmt: skip
    return L, torch.from_numpy(Ld.toarray().astype(np.float32))


@pytest.mark.parametrize("batch", [1, 5])
def test_every_variant_computes_L_X_per_sample(laplacian, batch):
    L, dense = laplacian
    n1, c = dense.shape[0], 3
    x = torch.randn(batch * n1, c, generator=torch.Generator().manual_seed(batch))
    naive = torch.cat([dense @ x[i * n1 : (i + 1) * n1] for i in range(batch)])  # per sample
    v = product_variants(L, x, batch)
    assert v["nnz"] == int((dense != 0).sum())
    assert v["nnz_square"] == int(((dense @ dense) != 0).sum())
    for name in ("library", "scipy", "coo", "edge_major"):
        torch.testing.assert_close(v["rows"](name, v["fns"][name]()), naive, msg=name)
    naive2 = torch.cat([dense @ dense @ x[i * n1 : (i + 1) * n1] for i in range(batch)])
    for name in ("two_powers", "fused_square"):
        got = v["rows"](name, v["fns"][name]())
        torch.testing.assert_close(got, naive2, rtol=1e-5, atol=1e-4, msg=name)


def test_product_times_keys_and_threads_restored(laplacian):
    threads = torch.get_num_threads()
    out = product_times(laplacian[0], batch=2, channels=4, repeats=1)
    assert torch.get_num_threads() == threads
    for name in ("library", "scipy", "coo", "edge_major", "two_powers", "fused_square",
                 "library_1thread"):  # fmt: skip
        assert out[f"{name}_s"] > 0


def test_empty_like_has_the_shape_and_no_entries(laplacian):
    E = empty_like(laplacian[0])
    assert E.shape == laplacian[0].shape and E._nnz() == 0
    assert torch.sparse.mm(E, torch.ones(6, 2)).abs().sum() == 0
