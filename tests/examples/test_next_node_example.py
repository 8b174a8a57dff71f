"""examples/next_node_prediction.py: its refusals (before any data is loaded or trained)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "next_node_prediction",
    Path(__file__).resolve().parents[2] / "examples" / "next_node_prediction.py",
)
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


def test_unknown_shape_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"`shape` must be one of \('paper', 'scone'\)"):
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path), shape="wide")


def test_a_folder_of_another_shape_or_encoder_lr_is_refused(tmp_path):
    from experiments.run_folder import RunFolder

    settings = {"epochs": 1, "shape": "scone", "encoder_lr": 0.01, "quick": False}
    run = RunFolder(tmp_path, "next-node-prediction", settings, records="next_node.json")
    run.save("trajectory|finetune|0|1", {"dataset": "trajectory", "row": "finetune", "seed": 0,
                                         "fraction": 1.0, "test_accuracy": 0.5})  # fmt: skip
    before = (tmp_path / "next_node.json").read_bytes()
    # refused before any data is loaded (there is none under no_data)
    with pytest.raises(ValueError, match=r"differ in encoder_lr \(0.01 then, 0.001 now\), "
                                         r"shape \('scone' then, 'paper' now\)"):  # fmt: skip
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path / "no_data"))
    with pytest.raises(ValueError, match=r"differ in encoder_lr \(0.01 then, 0.001 now\);"):
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path / "no_data"), shape="scone")
    with pytest.raises(ValueError, match=r"differ in epochs \(1 then, 2 now\);"):
        example.main(["trajectory"], 1, 2, tmp_path, str(tmp_path / "no_data"), shape="scone",
                     encoder_lr=0.01)  # fmt: skip
    assert (tmp_path / "next_node.json").read_bytes() == before
    assert not (tmp_path / "no_data").exists()
