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
