import pytest

from benchmarks.bench_roofline import epoch_work, report, roofline_seconds
from topo_contrastive.nn import SCNN


def test_epoch_work_by_hand():
    # 2 layers (1 -> 4 -> 4), K_down = K_up = 1 (3 terms), mean readout; 10 edges,
    # nnz(L_down) = 6, nnz(L_up) = 4; 3 samples in batches of 2 (2 batches), head 4 -> 5 -> 5
    enc = SCNN(1, 4, 2, 1, 1)
    w = epoch_work(enc, (4, 5), n1=10, nnz_down=6, nnz_up=4, samples=3, batch=2)
    views = 6
    d0, d1 = 2 * 10 * 3 * 1 * 4, 2 * 10 * 3 * 4 * 4  # 240, 960
    s0, s1 = 2 * (6 + 4) * 1, 2 * (6 + 4) * 4  # 20, 80
    head = 3 * views * (2 * 4 * 5 + 2 * 5 * 5)
    loss = 3 * 2 * 2 * (2 * 2) ** 2 * 5
    assert w["dense_flops"] == views * (2 * d0 + 3 * d1) + head + loss
    assert w["sparse_flops"] == views * (s0 + 2 * s1)
    traffic = (4 * 10 * 4 * 2 + 12 * 10) + (4 * 10 * 4 * 2 + 4 * 10 * 4 * 2 + 2 * 12 * 10)
    assert w["bytes"] == views * (traffic + 4 * 10 * 2 * 2)


def test_roofline_is_the_larger_of_compute_and_traffic():
    work = {"dense_flops": 3e9, "sparse_flops": 1e9, "bytes": 2e9}
    assert roofline_seconds(work, 2.0, 4.0) == {"compute_s": 2.0, "traffic_s": 0.5,
                                                "bound_s": 2.0}
    assert roofline_seconds(work, 8.0, 1.0)["bound_s"] == 2.0  # traffic-bound
    with pytest.raises(ValueError, match="positive"):
        roofline_seconds(work, 0.0, 1.0)


def test_report_rows():
    row = {"data": "net", "edition": "hodge", "busy": True, "threads": 1, "edges": 1088,
           "samples": 1000, "dense_flops": 3.07e11, "sparse_flops": 9.4e9, "bytes": 4.68e9,
           "gemm_gflops": 64.4, "copy_gbps": 22.5, "bound_s": 4.91, "epoch_s": 9.93,
           "ratio": 2.02, "setup_s": 11.6}
    setup = {"edges": 100_010, "samples": 1000, "data_s": 20.7, "drop_prob_s": 7.6,
             "encoder_s": 0.06, "setup_s": 28.3, "step_s": 11.336, "step_flows": 10,
             "run20_s": 22671, "share": 28.3 / (28.3 + 22671)}
    text = report([row], [setup], "cpu")
    assert "| net | hodge | busy | 1 | 1,088 | 1,000 | 307 | 9.4 | 4.68 | 64.4 | 22.5 | 4.91 " \
           "| 9.93 | 2.02x | 11.6 |" in text
    assert "| 100,010 | 1,000 | 20.70 | 7.60 | 0.06 | 28.30 | 11.336 (10) | 22671 | 0.1 % |" in text


def test_memory_model_by_hand():
    from benchmarks.bench_roofline import memory_model

    # 1,000 edges, 10 flows, 4 views held of 1,280 bytes per edge, a basis of 3 columns
    m = memory_model(1000, 10, 4, 1280 * 1000, 3, base=500, retained=7)
    assert m["data_bytes"] == 1000 * 10 * 8
    assert m["activation_bytes"] == 4 * 1280 * 1000
    assert m["basis_bytes"] == 4 * 1000 * 3
    assert m["predicted_bytes"] == 500 + 80_000 + 5_120_000 + 12_000 + 7
    # batches of 5: drawing their views (16 bytes per edge and sample) or holding the two
    # views (8) through the step, whichever is more
    m = memory_model(1000, 10, 4, 1280 * 1000, 3, base=500, retained=7, batch=5)
    assert m["batch_bytes"] == 1000 * 5 * 16
    assert m["predicted_bytes"] == 500 + 80_000 + 40_000 + 5_120_000 + 7 + 12_000
    big = memory_model(1000, 10, 1, 10, 0, base=0, batch=5)  # drawing the views dominates
    # the graphs gradient caching keeps count beside the running chunk
    kept = memory_model(1000, 10, 4, 1280 * 1000, 3, base=500, retained=7, batch=5,
                        kept_views=6, kept_per_view=264 * 1000)
    assert kept["activation_bytes"] == 4 * 1280 * 1000 + 6 * 264 * 1000
    assert big["predicted_bytes"] == 80_000 + 80_000


def test_report_memory_rows():
    row = {"data": "net", "edition": "hodge", "busy": False, "threads": 1, "edges": 18830,
           "samples": 1000, "dense_flops": 1e12, "sparse_flops": 1e10, "bytes": 1e10,
           "gemm_gflops": 70.0, "copy_gbps": 30.0, "bound_s": 20.0, "epoch_s": 30.0,
           "ratio": 1.5, "setup_s": 10.0, "views_held": 5, "views_kept": 185,
           "gradient_caching": True,
           "base_bytes": 4.5e8, "data_bytes": 3.0e8, "activation_bytes": 1.06e9,
           "basis_bytes": 1.9e7, "retained_bytes": 2**30, "predicted_bytes": 1.83e9,
           "peak_rss_bytes": 2.4e9,
           "memory_ratio": 2.4 / 1.83}
    text = report([row], [], "cpu")
    assert "| net | 18,830 | 1,000 | 5 (yes) | 185 | 0.45 | 0.30 | 0.00 | 1.06 | 0.019 " \
           "| 1.07 | 1.83 | 2.40 | 1.31x |" in text


def test_synthetic_file_is_read_by_the_command(tmp_path):
    from benchmarks.bench_roofline import write_synthetic_file
    from topo_contrastive.datasets import EdgeFlows

    file = write_synthetic_file(tmp_path / "net.npz", 60, 5, seed=0)
    ds = EdgeFlows(str(tmp_path / "root"), file=str(file), log=False)
    assert len(ds) == 5 and ds[0].x_1.shape[0] >= 60
    assert all(int((ds[i].x_1 != 0).sum()) >= 1 for i in range(5))


def test_epoch_work_counts_the_sketch_columns_of_a_hodge_readout():
    """A HodgeReadout with a sketch of k directions: ``2 * 2 N1 k c`` FLOPs per view (the
    sketch's k, not beta_1)."""
    from benchmarks._complexes import delaunay_complex
    from topo_contrastive import HodgeDecomposition
    from topo_contrastive.nn import HodgeReadout

    ops = delaunay_complex(300, seed=0)  # two holes: beta_1 = 2
    hodge = HodgeDecomposition(ops)
    sketch = HodgeReadout(hodge, harmonic="sketch", sketch_dim=1, harmonic_channels=2)
    assert sketch.beta1 == 2 and sketch.harmonic_dim == 1
    n1 = ops.num_edges
    plain = epoch_work(SCNN(1, 4, 1, 1, 1), (8, 5), n1, 6, 4, samples=2, batch=2)
    enc = SCNN(1, 4, 1, 1, 1, readout=sketch)
    w = epoch_work(enc, (enc.out_channels, 5), n1, 6, 4, samples=2, batch=2)
    head = 3 * 4 * (2 * enc.out_channels * 5 - 2 * 8 * 5)
    assert w["dense_flops"] - plain["dense_flops"] - head == 4 * (2 * 2 * n1 * 1 * 2)


def test_the_script_runs_on_the_library_it_measures(tmp_path):
    # the calls into the library (the command's own parser and inputs, the prepared data,
    # the views, one training step) on a small network: a renamed or moved function fails
    # here, not on a long benchmark run
    from benchmarks.bench_roofline import _load, setup_case, write_synthetic_file

    file = write_synthetic_file(tmp_path / "net.npz", 300, 12, seed=0)
    data, config, edition = _load(["--data-file", str(file)], tmp_path)
    assert data.num_samples == 12 and edition == "hodge" and config.name == "SSCL_Spec"
    L_down, L_up = data.complex.laplacians(rank=data.rank)
    assert L_down.shape == (data.sizes[1], data.sizes[1])
    row = setup_case(300, 12, 4, seed=0)
    assert row["samples"] == 12 and row["step_s"] > 0 and row["setup_s"] > 0
