import json

import pytest

from benchmarks.protocol_flops import (
    encoder_flops,
    main,
    protocol_flops,
    supervised_split_sizes,
)


def _config(method, layers=2, k_down=2, k_up=2):
    return {"method": method, "num_layers": layers, "K_down": k_down, "K_up": k_up}


def test_encoder_flops_by_hand():
    # 2 layers, 10 edges, K = 4 (5 terms), width 64:
    # layer 1 (1 -> 64): 2*10*5*1*64 = 6,400 per pass; layer 2 (64 -> 64): 409,600
    assert encoder_flops(2, 10, 4, train=False) == 6_400 + 409_600
    # training: layer 1 forward + weight gradient, layer 2 + input gradient
    assert encoder_flops(2, 10, 4, train=True) == 2 * 6_400 + 3 * 409_600


def test_supervised_split_sizes_follow_the_datasets():
    assert supervised_split_sizes("trajectory", 400) == (200, 100, 100)
    # the ocean drifters have no validation split: 20 % of 160 training samples held out
    assert supervised_split_sizes("ocean", 200) == (128, 32, 40)
    with pytest.raises(ValueError, match="samples: the standard split of 'ocean' has 200"):
        supervised_split_sizes("ocean", 8)


def _runs():
    configs = {
        "paper/trajectory/SCL": _config("contrastive"),
        "paper/ocean/SCNN": _config("supervised", layers=1, k_up=0),
    }
    rec = []
    for split in range(3):  # one pre-trained encoder serves three splits
        rec.append({"unit": f"SCL/{split}", "experiment": "table1", "edition": "paper",
                    "dataset": "trajectory", "config": "SCL", "pretrain_seed": 0,
                    "epochs": 2, "unit_seconds": 1.0})  # fmt: skip
    rec.append({"unit": "SCNN/0", "experiment": "table1", "edition": "paper", "dataset": "ocean",
                "config": "SCNN", "pretrain_seed": None, "epochs": 200, "epochs_run": 5,
                "unit_seconds": 2.0})
    rec.append({"unit": "raw", "experiment": "table1", "edition": "shared", "dataset": "ocean",
                "config": "raw", "unit_seconds": 0.5})
    data = {"trajectory": {"sizes": [5, 10, 4], "samples": 400},
            "ocean": {"sizes": [4, 7, 2], "samples": 200}}  # fmt: skip
    return {"settings": {"fingerprint_parts": {"configs": configs}, "data": data},
            "records": rec}


def test_protocol_flops_counts_each_pretraining_once():
    groups = protocol_flops(_runs())
    train, fwd = encoder_flops(2, 10, 4, True), encoder_flops(2, 10, 4, False)
    assert groups[("paper", "trajectory", "contrastive")] == 2 * 400 * 2 * train + 400 * fwd
    s_train, s_fwd = encoder_flops(1, 7, 2, True), encoder_flops(1, 7, 2, False)
    # 200 ocean samples: 128 train, 32 validation, 40 test
    assert groups[("paper", "ocean", "SCNN")] == 5 * (128 * s_train + 32 * s_fwd) + 40 * s_fwd
    assert set(groups) == {("paper", "trajectory", "contrastive"), ("paper", "ocean", "SCNN")}


def test_main_table_and_bad_input(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(_runs()))
    out = tmp_path / "t.md"
    text = main(str(path), rate=1.0, out=str(out))
    assert out.read_text() == text
    assert "wall time of the run: 0.1 min (sum of 5 units)" in text  # 5.5 s
    total = sum(protocol_flops(_runs()).values())
    assert f"| all | | | {total / 1e12:.1f} | {total / 1e9 / 60:.1f} |" in text.splitlines()
    with pytest.raises(ValueError, match="rate"):
        main(str(path), rate=0.0)
    path.write_text("[]")
    with pytest.raises(ValueError, match="runs_path"):
        main(str(path), rate=1.0)


def test_sparse_products_and_probe_fits_by_hand(tmp_path):
    from benchmarks.protocol_flops import probe_fits

    # 1 layer, 10 edges, K = 2 (3 terms), width 4, 7 non-zeros touched per pass:
    # dense 2*10*3*1*4 = 240, sparse 2*7*min(1, 4) = 14; training: dense x2, sparse x1
    assert encoder_flops(1, 10, 2, True, hidden=4, nnz=7) == 2 * 240 + 14
    assert encoder_flops(1, 10, 2, False, hidden=4, nnz=7) == 240 + 14
    # 2 layers: the second (4 -> 4) adds dense 2*10*3*4*4 = 960 (x3), sparse 2*7*4 = 56 (x2)
    assert encoder_flops(2, 10, 2, True, hidden=4, nnz=7) == 2 * 240 + 14 + 3 * 960 + 2 * 56
    runs = _runs()
    nnz = {"trajectory": (3, 5), "ocean": (2, 0)}
    dense, both = protocol_flops(runs), protocol_flops(runs, nnz)
    assert all(both[g] > dense[g] for g in dense)
    # probe fits: the 3 SCL splits and the raw row; the raw unit's 0.5 s over its 1 split
    assert probe_fits(runs) == (4, 0.5)
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    text = main(str(path), rate=1.0, nnz=nnz)
    bound = sum(both.values()) / 1e9 + 4 * 0.5
    assert f"{bound / 60:.1f} min; the run took 0.1 min: **{5.5 / bound:.2f}x** the bound" in text
    no_refs = {**runs, "records": [r for r in runs["records"] if r["config"] != "raw"]}
    with pytest.raises(ValueError, match="reference-row"):
        probe_fits(no_refs)
