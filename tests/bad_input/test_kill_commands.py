"""Interruption safety of the commands: each writer killed (SIGKILL) at random moments.

The same harness as ``test_kill.py``, for the command-line writers: ``pretrain``,
``evaluate --out``, ``reproduce`` (``runs.json``, ``--resume``), ``search`` and
``label-efficiency`` (``--resume``), on the tiny trajectory task. A child started by a
forkserver (torch and the library imported) runs the command over and over into one folder
and is killed at a seeded random moment spread over one run's wall time (measured on an
uninterrupted reference run). After each kill the folder must be

- complete: the marker present and every output readable and the same as the reference
  run's (accuracies, losses, rows), or
- clearly incomplete: no marker; every file present is whole (readable JSON / CSV), and a
  rerun without ``--overwrite`` refuses the non-empty folder.

The commands with ``--resume`` resume in the next child after a kill (a killed resume is
killed again), and a last ``--resume`` in the test process must finish with the reference
run's results. No temporary is left after the stale-temporary sweep.

Marked ``slow``. ``TOPO_KILLS`` sets the kills per writer (default 20).
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import random
import time
from pathlib import Path

import pytest

from tests._tiny import TINY_FLAGS

pytestmark = pytest.mark.slow

KILLS = int(os.environ.get("TOPO_KILLS", "20"))
SEED = 26


def _flags(root) -> list[str]:
    return ["--data-root", str(root), *TINY_FLAGS, "--no-progress", "--threads", "1"]


# ---------------------------------------------------------------------------- the commands
def _pretrain(root, out) -> list[str]:
    return ["pretrain", "--dataset", "trajectory", "--config", "SCL", "--epochs", "1",
            "--hidden-channels", "4", "--seed", "1", "--out", str(out), *_flags(root)]  # fmt: skip


def _evaluate(root, out, ckpt, seeds: int = 2) -> list[str]:
    return ["evaluate", "--checkpoint", str(ckpt), "--dataset", "trajectory", "--seeds",
            str(seeds), "--out", str(Path(out) / "eval.json"), *_flags(root)]  # fmt: skip


def _reproduce(root, out) -> list[str]:
    return ["reproduce", "--quick", "--datasets", "trajectory", "--configs", "SCL", "SCNN",
            "--epochs", "1", "--seeds", "2", "--pretrain-seeds", "1", "--figure2-dataset",
            "none", "--no-figure1", "--out", str(out), *_flags(root)]  # fmt: skip


def _search(root, out) -> list[str]:
    return ["search", "--dataset", "trajectory", "--config", "SCL", "--grid",
            "temperature=0.2,0.5", "--epochs", "1", "--seeds", "1", "--out",
            str(Path(out) / "search.csv"), *_flags(root)]  # fmt: skip


def _label_efficiency(root, out) -> list[str]:
    return ["label-efficiency", "--dataset", "trajectory", "--out", str(out), "--rows", "raw",
            "probe:SCL:paper", "--fractions", "0.5", "1", "--draws", "2", "--epochs", "1",
            "--hidden-channels", "4", *_flags(root)]  # fmt: skip


def _quiet_main(argv: list[str]) -> int:
    import contextlib
    import io

    from tests._commands import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


# ---------------------------------------------------------------------------- the children
def _once(argv: list[str], ready, done, took) -> None:
    """Run ``argv`` once (a finished folder is left for the kill to find), then idle;
    ``took`` gets the run's wall time."""
    ready.set()
    start = time.perf_counter()
    _quiet_main(argv)
    took.value = time.perf_counter() - start
    done.set()
    time.sleep(3600)


def _next_argv(writer: str, argv: list[str], kill: int) -> list[str]:
    """The command of the child of kill ``kill``: the writers with ``--resume`` resume an
    unfinished run and start over after a finished one; the others rerun with
    ``--overwrite``; ``evaluate`` alternates 2 and 3 splits (so that the JSON of one run
    beside the report of another would show)."""
    if writer == "evaluate":
        at = argv.index("--seeds")
        argv = [*argv[: at + 1], str(2 + kill % 2), *argv[at + 2 :]]
    if not WRITERS[writer][2]:
        return [*argv, "--overwrite"]
    out = Path(argv[argv.index("--out") + 1])
    finished = (out / "COMPLETE").exists() or not out.exists()
    return [*argv, "--overwrite" if finished else "--resume"]


# ---------------------------------------------------------------------------- the checks
def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))  # raises on a half file


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _whole_files(folder: Path) -> None:
    """Every visible JSON / CSV under ``folder`` is whole; every checkpoint loads."""
    for path in folder.rglob("*"):
        if path.name.startswith(".") or not path.is_file():
            continue
        if path.suffix == ".json":
            _json(path)
        elif path.suffix == ".csv":
            _csv_rows(path)
        elif path.suffix == ".pt":
            from topo_contrastive.io import load_encoder

            load_encoder(path)  # the weights' digest is checked
        elif path.suffix == ".png":
            assert path.read_bytes()[-8:] == b"IEND\xaeB`\x82"  # PNG end chunk


def _refuses(argv: list[str]) -> None:
    """A rerun without ``--overwrite`` / ``--resume`` refuses, before any work."""
    assert _quiet_main(argv) == 2


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _check_pretrain(folder: Path, ref: Path, argv) -> str:
    _whole_files(folder)
    if not (folder / "COMPLETE").exists():
        if _visible(folder):
            _refuses(argv)
        return "incomplete"
    log, want = _json(folder / "pretrain.json"), _json(ref / "pretrain.json")
    assert log["complete"] is True and log["losses"] == want["losses"]
    import torch

    got = torch.load(folder / "encoder.pt", weights_only=True)
    assert (
        got["weights_sha256"] == torch.load(ref / "encoder.pt", weights_only=True)["weights_sha256"]
    )  # the same weights as the reference run
    return "complete"


def _check_evaluate(folder: Path, ref: Path, argv) -> str:
    _whole_files(folder)
    out, md = folder / "eval.json", folder / "eval.md"
    if not out.exists():  # the JSON is written last: without it the report is unfinished
        if _visible(folder):
            _refuses(argv)
        return "incomplete"
    summary = _json(out)
    seeds = len(summary["splits"])
    want = _json(ref / f"eval{seeds}.json")
    assert [s["test_accuracy"] for s in summary["splits"]] == [
        s["test_accuracy"] for s in want["splits"]
    ]
    assert md.read_text() == (ref / f"eval{seeds}.md").read_text()  # the same run's report
    _refuses(argv)
    return "complete"


def _records(payload: dict, key: str) -> dict:
    return {r[key]: r["test_accuracy"] for r in payload["records"] if "test_accuracy" in r}


def _check_reproduce(folder: Path, ref: Path, argv) -> str:
    _whole_files(folder)
    if not (folder / "COMPLETE").exists():
        if _visible(folder):
            _refuses(argv)
        return "incomplete"
    runs, want = _json(folder / "runs.json"), _json(ref / "runs.json")
    assert runs["complete"] is True
    assert _records(runs, "unit") == _records(want, "unit") and runs["records"]
    assert len(_csv_rows(folder / "runs.csv")) == len(runs["records"])
    assert (folder / "table1.md").is_file()
    return "complete"


def _check_search(folder: Path, ref: Path, argv) -> str:
    _whole_files(folder)
    out = folder / "search.csv"
    if not (folder / "search.csv.COMPLETE").exists():
        if out.exists():
            _refuses(argv)
        return "incomplete"
    assert _json(folder / "search.csv.json")["complete"] is True
    rows, want = _csv_rows(out), _csv_rows(ref / "search.csv")
    assert [r["score"] for r in rows] == [r["score"] for r in want] and len(rows) == 2
    return "complete"


def _check_label_efficiency(folder: Path, ref: Path, argv) -> str:
    _whole_files(folder)
    if not (folder / "COMPLETE").exists():
        if _visible(folder):
            _refuses(argv)
        return "incomplete"
    got, want = _json(folder / "label_efficiency.json"), _json(ref / "label_efficiency.json")
    assert got["complete"] is True and len(got["records"]) == len(want["records"]) == 8
    assert _records(got, "cell") == _records(want, "cell")
    assert len(_csv_rows(folder / "label_efficiency.csv")) == 8
    assert (folder / "label_efficiency.md").is_file()
    assert (folder / "label_efficiency.png").is_file()
    return "complete"


#: writer -> (command, check, resumable)
WRITERS = {
    "pretrain": (_pretrain, _check_pretrain, False),
    "evaluate": (_evaluate, _check_evaluate, False),
    "reproduce": (_reproduce, _check_reproduce, True),
    "search": (_search, _check_search, False),
    "label-efficiency": (_label_efficiency, _check_label_efficiency, True),
}


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([
        "torch", "numpy", "sklearn.svm", "sklearn.linear_model", "matplotlib.pyplot",
        "topo_contrastive.cli", "topo_contrastive.cli._runs",
        "experiments.reproduce", "experiments.search",
        "experiments.studies.label_efficiency.curves", __name__,
    ])  # fmt: skip
    return ctx


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("kill_data")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, data_root):
    out = tmp_path_factory.mktemp("kill_ckpt")
    assert _quiet_main(_pretrain(data_root, out)) == 0
    return out / "encoder.pt"


def _run_child(context, argv: list[str]) -> float:
    """Run ``argv`` in a forkserver child to its end, as the killed ones run: its wall time."""
    ready, done, took = context.Event(), context.Event(), context.Value("d", 0.0)
    child = context.Process(target=_once, args=(argv, ready, done, took), daemon=True)
    child.start()
    assert ready.wait(60)
    assert done.wait(300), f"{argv[0]} did not finish"
    child.kill()
    child.join(10)
    return took.value


def _reference(context, writer: str, data_root, checkpoint, ref: Path) -> float:
    """Run ``writer`` once, uninterrupted, into ``ref``: the wall time of one run."""
    if writer == "evaluate":
        seconds = []
        for seeds in (2, 3):
            seconds.append(_run_child(context, _evaluate(data_root, ref, checkpoint, seeds)))
            (ref / "eval.json").rename(ref / f"eval{seeds}.json")
            (ref / "eval.md").rename(ref / f"eval{seeds}.md")
        return max(seconds)
    return _run_child(context, WRITERS[writer][0](data_root, ref))


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.startswith(".") and p.name.endswith(".tmp")]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_killed_command_leaves_a_complete_or_clearly_incomplete_folder(
    context, data_root, checkpoint, tmp_path, monkeypatch, writer
):
    from topo_contrastive._utils import files as _files

    command, check, resumable = WRITERS[writer]
    ref = tmp_path / "reference"
    ref.mkdir()
    seconds = _reference(context, writer, data_root, checkpoint, ref)
    folder = tmp_path / "killed"
    args = (data_root, folder, checkpoint) if writer == "evaluate" else (data_root, folder)
    argv = command(*args)
    if writer == "evaluate":
        folder.mkdir()
    rng = random.Random(f"{SEED}-{writer}")
    outcomes = []
    start = time.perf_counter()
    for kill in range(KILLS):
        ready, done, took = context.Event(), context.Event(), context.Value("d", 0.0)
        this = _next_argv(writer, argv, kill)
        child = context.Process(target=_once, args=(this, ready, done, took), daemon=True)
        child.start()
        assert ready.wait(60), f"{writer} did not start"
        # spread over the run and past its end (+0.5 s: the start and scheduling delays of
        # a child on busy cores)
        time.sleep(rng.uniform(0.0, 1.25 * seconds + 0.5))
        child.kill()  # SIGKILL
        child.join(10)
        assert child.exitcode == -9, f"{writer} kill {kill}: exit code {child.exitcode}"
        outcome = check(folder, ref, argv) if folder.exists() else "incomplete"
        assert outcome == "complete" or not done.is_set(), f"{writer} finished, not complete"
        outcomes.append(outcome)
        if done.is_set() and "--resume" not in this:  # the latest whole run's wall time
            seconds = took.value  # (the first run in a process is slower: imports, caches)
    killed = time.perf_counter() - start
    if resumable:  # the killed run resumes and finishes with the reference run's results
        done = (folder / "COMPLETE").exists()
        assert _quiet_main([*argv, "--overwrite" if done else "--resume"]) == 0
        assert check(folder, ref, argv) == "complete"
    # the temporaries of the killed writers go with the next run in the folder
    monkeypatch.setattr(_files, "_STALE_MIN_AGE_S", 0.0)
    for sub in {folder, *(p.parent for p in _temporaries(folder))}:
        _files.remove_stale_temporaries(sub)
    assert _temporaries(folder) == []
    assert len(outcomes) == KILLS
    print(f"{writer}: {outcomes.count('complete')} complete, "
          f"{outcomes.count('incomplete')} clearly incomplete of {KILLS} kills; one run "
          f"{seconds:.1f} s, kills {killed:.1f} s")  # fmt: skip
