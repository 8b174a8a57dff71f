import numpy as np
import pytest
import torch

from benchmarks._complexes import delaunay_complex
from benchmarks.bench_sparse_ceiling import (
    _row_loop_kernel,
    empty_like,
    product_times,
    product_variants,
)


def _laplacian_down():
    ops = delaunay_complex(300, seed=0)
    return ops.laplacians()[0].coalesce()


@pytest.mark.parametrize("batch", [1, 3, 5])
def test_every_product_variant_computes_the_same_rows(batch):
    L = _laplacian_down()
    n1, channels = L.shape[0], 4
    x = torch.randn(batch * n1, channels, generator=torch.Generator().manual_seed(batch))
    v = product_variants(L, x, batch)
    dense = L.to_dense()
    expected = torch.cat([dense @ x[s * n1 : (s + 1) * n1] for s in range(batch)])
    squared = torch.cat([dense @ dense @ x[s * n1 : (s + 1) * n1] for s in range(batch)])
    names = {"library", "scipy", "coo", "edge_major", "two_powers", "fused_square"}
    assert names <= set(v["fns"])
    for name, fn in v["fns"].items():
        want = squared if name in ("two_powers", "fused_square") else expected
        torch.testing.assert_close(v["rows"](name, fn()), want, rtol=1e-5, atol=1e-5)
    assert v["nnz"] == L._nnz()
    assert v["nnz_square"] == int(np.count_nonzero((dense @ dense).numpy()))


def test_row_loop_kernel_is_a_csr_product():
    kernel = _row_loop_kernel()
    if kernel is None:
        pytest.skip("numba is not installed (an optional benchmark row)")
    csr = _laplacian_down().to_sparse_csr()
    x = np.random.default_rng(0).standard_normal((csr.shape[0], 3)).astype(np.float32)
    out = np.full_like(x, np.nan)  # every entry must be written
    kernel(csr.crow_indices().numpy(), csr.col_indices().numpy(), csr.values().numpy(), x, out)
    np.testing.assert_allclose(out, (csr.to_dense() @ torch.from_numpy(x)).numpy(), rtol=1e-5,
                               atol=1e-5)


def test_product_times_keys_and_threads_restored():
    threads = torch.get_num_threads()
    out = product_times(_laplacian_down(), batch=2, channels=4, repeats=1)
    assert torch.get_num_threads() == threads
    for name in ("library", "scipy", "coo", "edge_major", "two_powers", "fused_square",
                 "library_1thread"):  # fmt: skip
        assert out[f"{name}_s"] > 0
    assert out["row_loop_s"] is None if _row_loop_kernel() is None else out["row_loop_s"] > 0


def test_empty_like_has_the_shape_and_no_entries():
    L = _laplacian_down()
    E = empty_like(L)
    assert E.shape == L.shape and E._nnz() == 0
    assert torch.sparse.mm(E, torch.ones(L.shape[0], 2)).abs().sum() == 0
