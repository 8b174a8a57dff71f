"""Output folders: stale temporaries, completeness markers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from topo_contrastive.experiments.outputs import (
    begin_outputs,
    check_output_dir,
    mark_complete,
    marker_beside,
)


def test_check_output_dir_removes_temporaries_of_dead_processes(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".runs.json.{dead.pid}.{'a' * 32}.tmp"
    live = tmp_path / f".runs.json.{os.getpid()}.{'b' * 32}.tmp"
    for path in (stale, live):
        path.write_text("{")
        old = time.time() - 60
        os.utime(path, (old, old))
    (tmp_path / "runs.json").write_text("{}")
    check_output_dir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "runs.json"])


def test_markers(tmp_path):
    out = tmp_path / "search.csv"
    marker = marker_beside(out)
    assert marker == tmp_path / "search.csv.COMPLETE"
    out.write_text("old")
    mark_complete(marker, "done\n")
    assert marker.read_text() == "done\n"
    begin_outputs(marker, stale=[out, tmp_path / "missing.json"])
    assert list(tmp_path.iterdir()) == []
