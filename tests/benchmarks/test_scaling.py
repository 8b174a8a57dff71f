import math

import pytest

from benchmarks.bench_scaling import (
    loglog_slope,
    measure_in_child,
    report,
    reset_peak,
    step_flops,
)


@pytest.mark.skipif(not reset_peak(), reason="needs /proc/self/clear_refs (Linux)")
def test_peak_memory_of_a_step_on_200k_edges_is_linear_in_the_edges():
    # issue 27 item 5: no dense N1 x N1 object on the training path. A step's peak above the
    # memory it starts with stays under 32 bytes per edge per batch-channel (8 float32
    # activations of the batch's width; measured 10); one dense N1 x N1 float32 matrix would
    # be 160 GB.
    batch, hidden = 2, 16
    r = measure_in_child(num_edges=200_000, batch=batch, hidden=hidden, layers=2, k=2,
                         repeats=1, device="cpu", threads=1, seed=0)
    assert r["edges"] >= 200_000
    bound_mib = 32 * r["edges"] * batch * hidden / 2**20
    assert 0 < r["peak_mib"] < bound_mib, (r["peak_mib"], bound_mib)


def test_loglog_slope_and_flop_count_by_hand():
    assert loglog_slope([1, 10, 100], [2.0, 20.0, 200.0]) == pytest.approx(1.0)
    assert loglog_slope([1, 10], [1.0, 100.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="at least two"):
        loglog_slope([1], [1.0])
    # 2 layers, 10 edges, K = 1 per side (3 terms), width 4, batch 2, nnz 7 per pass:
    # layer 1: dense 2*10*2*3*1*4 = 480 (x2), sparse 2*7*2*1 = 28 (x1)
    # layer 2: dense 2*10*2*3*4*4 = 1920 (x3), sparse 2*7*2*4 = 112 (x2)
    assert step_flops(10, 7, 2, 4, 2, 1) == 2 * 480 + 28 + 3 * 1920 + 2 * 112


def test_report_states_both_slopes():
    rows = [
        {"edges": e, "nnz": 5 * e, "setup_s": 0.1, "step_s": 1e-6 * e ** 1.1, "gflops": 1.0,
         "peak_mib": e / 1000}
        for e in (1_000, 16_000, 64_000, 256_000)
    ]
    text = report(rows, dict(batch=8, hidden=32, layers=2, k=2, repeats=3, device="cpu",
                             threads=2, seed=0))
    assert "1.100 over all 4 sizes, 1.100 from 16k edges on" in text
    assert math.isclose(rows[-1]["peak_mib"] * 2**20 / rows[-1]["edges"], 1048.576)
    assert "| 256,000 |" in text and "| 1049 |" in text
