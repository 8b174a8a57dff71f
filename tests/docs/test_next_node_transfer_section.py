"""docs/next_node_transfer_section.py: per-seed generalisation runs joined into one table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "next_node_transfer_section", ROOT / "docs" / "next_node_transfer_section.py"
)
section = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(section)


def _run(folder: Path, name: str, seed: int, accs: dict, checkpoint: str = "enc.pt") -> None:
    tests = {t: {"rows": [{"row": r, "splits": [{"test_accuracy": a[i], "seed": seed}]}
                          for r, a in accs.items()]}
             for i, t in enumerate(section.TESTS)}  # fmt: skip
    (folder / f"{name}_seed{seed}.json").write_text(json.dumps(
        {"tests": tests, "seeds": [seed], "epochs": 50, "checkpoint": checkpoint}))


def test_collect_joins_the_seeds_and_the_table_gives_mean_and_std(tmp_path):
    _run(tmp_path, "ocean", 0, {"markov": (0.5, 0.1, 0.2), "scone": (0.25, 0.4, 0.5)})
    _run(tmp_path, "ocean", 1, {"markov": (0.3, 0.1, 0.0), "scone": (0.25, 0.2, 0.3),
                                "untrained": (0.2, 0.2, 0.2)})  # fmt: skip
    _run(tmp_path, "trajectory", 3, {"markov": (0.7, 0.0, 0.1)})
    (tmp_path / "ocean_seed1.md").write_text("not a run")
    runs = section.collect(tmp_path)
    assert sorted(runs) == ["ocean", "trajectory"] and runs["ocean"]["seeds"] == [0, 1]
    assert runs["ocean"]["tests"]["reversed"]["scone"] == pytest.approx([40.0, 20.0])
    text = section.markdown(runs)
    assert "| ocean: test (2 seeds) |" in text and "trajectory: other region (1 seeds)" in text
    markov = next(line for line in text.splitlines() if line.startswith("| Markov"))
    cells = [c.strip() for c in markov.split("|")[2:-1]]
    assert cells[:3] == ["40.0 ± 10.0", "10.0 ± 0.0", "10.0 ± 10.0"]
    assert cells[3] == "70.0 ± 0.0"
    scone = next(line for line in text.splitlines() if "SCoNe" in line)
    assert scone.split("|")[-2].strip() == ""  # no SCoNe row on the trajectories
    untrained = next(line for line in text.splitlines() if line.startswith("| untrained"))
    assert "20.0 ± 0.0 (1 seeds)" in untrained  # a row on fewer seeds says so
    out = section.main(tmp_path, tmp_path / "out", name="t5")
    saved = json.loads((tmp_path / "out" / "t5.json").read_text())
    assert (tmp_path / "out" / "t5.md").read_text() == text
    assert saved["ocean"]["mean"]["other region"]["scone"] == pytest.approx(40.0)
    assert saved["ocean"]["std"]["test"]["markov"] == pytest.approx(np.std([50, 30]))
    assert out["trajectory"]["seeds"] == [3]


def test_collect_refuses_mixed_runs_and_an_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="no <dataset>_seed"):
        section.collect(tmp_path)
    _run(tmp_path, "ocean", 0, {"markov": (0.5, 0.1, 0.2)})
    _run(tmp_path, "ocean", 1, {"markov": (0.5, 0.1, 0.2)}, checkpoint="other.pt")
    with pytest.raises(ValueError, match="another checkpoint"):
        section.collect(tmp_path)
