"""Under load: pre-training on the ocean data while another process reads the same folders.

Marked ``slow`` (about a minute on 2 cores; not in the default run, see ``pyproject.toml``);
CI runs it with ``pytest -m slow``. One process repeatedly re-processes the ocean dataset
(``force_reload=True``: the processed file is rewritten) and pre-trains a few short epochs with
the command line (``encoder.pt``, ``pretrain.json`` and ``COMPLETE`` rewritten each round).
Meanwhile a second process keeps opening the dataset and reading every visible file of the
dataset and output folders. No read may fail or see other data, no visible file may be partial,
and no temporary may be left once both are done.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 12
EPOCHS_PER_ROUND = 3

_TRAINER = """
import sys
from pathlib import Path

import torch

from tests._commands import main
from topo_contrastive.datasets import OceanDrifters

torch.set_num_threads(1)
data_root, out, rounds, epochs = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    for r in range(rounds):
        OceanDrifters(str(data_root / "ocean_drifters"), force_reload=True, log=False)
        rc = main(["pretrain", "--dataset", "ocean", "--config", "SSCL_Spec", "--epochs", epochs,
                   "--hidden-channels", "16", "--seed", str(r), "--threads", "1", "--out", out,
                   "--data-root", str(data_root), "--no-progress", "--overwrite"])
        assert rc == 0, rc
finally:  # also on failure, so that the reader stops at once
    (Path(out) / "trainer-done").write_text("done")
"""

_READER = """
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch

from topo_contrastive.datasets import OceanDrifters
from topo_contrastive import io

torch.set_num_threads(1)
root, out = Path(sys.argv[1]), Path(sys.argv[2])
processed = root / "processed"


def digest(ds):
    h = hashlib.sha256()
    for t in (ds._data.x_1, ds._data.y, ds.edges, ds.triangles):
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


reference = digest(OceanDrifters(str(root), log=False))
counts = {"dataset_opens": 0, "processed_reads": 0, "encoder_loads": 0, "json_reads": 0,
          "complete_runs_seen": 0, "files_absent_mid_rewrite": 0}
errors = []
deadline = time.time() + 600
while not (out / "trainer-done").exists() and time.time() < deadline:
    try:
        ds = OceanDrifters(str(root), log=False)
        counts["dataset_opens"] += 1
        if len(ds) != 200 or digest(ds) != reference:
            errors.append("the dataset read other data")
        for path in processed.iterdir():  # every visible file must be whole
            if not path.name.startswith("."):
                torch.load(path, weights_only=True)
                counts["processed_reads"] += 1
    except Exception as err:
        errors.append(f"dataset: {type(err).__name__}: {err}")
    for name in ("pretrain.json", "encoder.pt"):
        path = out / name
        try:
            if name.endswith(".json"):
                json.loads(path.read_text())
                counts["json_reads"] += 1
            else:
                io.load_encoder(path)
                counts["encoder_loads"] += 1
        except FileNotFoundError:  # removed by the next round before its training
            counts["files_absent_mid_rewrite"] += 1
        except Exception as err:
            errors.append(f"{name}: {type(err).__name__}: {err}")
    # the marker is written after the final pretrain.json and removed by the next round
    # before it rewrites pretrain.json: while one marker file stays in place (same inode and
    # time stamp before and after the read), pretrain.json must say complete
    try:
        before = os.stat(out / "COMPLETE")
        log = json.loads((out / "pretrain.json").read_text())
        after = os.stat(out / "COMPLETE")
    except FileNotFoundError:
        continue
    same = (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    if same and not log["complete"]:
        errors.append("COMPLETE beside an unfinished pretrain.json")
    counts["complete_runs_seen"] += 1
print(json.dumps({"counts": counts, "errors": errors[:20], "num_errors": len(errors)}))
"""


@pytest.mark.slow
def test_pretraining_while_another_process_reads_the_dataset(tmp_path):
    data_root, out = tmp_path / "data", tmp_path / "out"  # the shipped ocean task
    out.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OMP_NUM_THREADS": "1",
    }
    # the reader needs the processed file to exist before its first open
    subprocess.run(
        [sys.executable, "-c", "import sys; from topo_contrastive.datasets import OceanDrifters;"
         " OceanDrifters(sys.argv[1], log=False)", str(data_root / "ocean_drifters")],
        check=True, env=env, timeout=300,
    )  # fmt: skip
    trainer = subprocess.Popen(
        [sys.executable, "-c", _TRAINER, str(data_root), str(out), str(ROUNDS),
         str(EPOCHS_PER_ROUND)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(data_root / "ocean_drifters"), str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        t_out, t_err = trainer.communicate(timeout=900)
        r_out, r_err = reader.communicate(timeout=900)
    finally:
        for proc in (trainer, reader):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert trainer.returncode == 0, t_err[-3000:]
    assert reader.returncode == 0, r_err[-3000:]
    report = json.loads(r_out.strip().splitlines()[-1])
    print("concurrent reader:", report)  # shown in CI logs with -rA / -s
    assert report["num_errors"] == 0, report
    counts = report["counts"]
    assert counts["dataset_opens"] >= 5 and counts["processed_reads"] >= 5, counts
    assert counts["encoder_loads"] + counts["json_reads"] >= 5, counts
    # every writer finished: no temporary is left, and the last run is complete
    for folder in (data_root / "ocean_drifters" / "processed", out):
        assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert sorted(p.name for p in out.iterdir()) == [
        "COMPLETE", "encoder.pt", "pretrain.json", "trainer-done"
    ]  # fmt: skip
    assert json.loads((out / "pretrain.json").read_text())["complete"] is True
