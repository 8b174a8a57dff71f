"""examples/next_node_prediction.py: its refusals (before any data is loaded or trained)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "next_node_prediction",
    Path(__file__).resolve().parents[1] / "examples" / "next_node_prediction.py",
)
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


def test_unknown_shape_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"`shape` must be one of \('paper', 'scone'\)"):
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path), shape="wide")


def test_a_folder_of_another_shape_or_encoder_lr_is_refused(tmp_path):
    rec = {"dataset": "trajectory", "row": "finetune", "seed": 0, "fraction": 1.0,
           "shape": "scone", "encoder_lr": 0.01, "test_accuracy": 0.5}  # fmt: skip
    (tmp_path / "next_node.json").write_text(json.dumps({"records": [rec]}))
    with pytest.raises(ValueError, match="another encoder shape than 'paper'"):
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path / "no_data"))
    with pytest.raises(ValueError, match="another encoder_lr than 0.001"):
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path / "no_data"), shape="scone")
    # records without the fields are the paper shape at the default encoder_lr (earlier runs)
    old = {k: v for k, v in rec.items() if k not in ("shape", "encoder_lr")}
    (tmp_path / "next_node.json").write_text(json.dumps({"records": [old]}))
    with pytest.raises(ValueError, match="another encoder shape than 'scone'"):
        example.main(["trajectory"], 1, 1, tmp_path, str(tmp_path / "no_data"), shape="scone")
