"""Nothing lost: a refused, failed, concurrent or interrupted run never deletes or mixes an
earlier result in ``--out`` (``topo_contrastive/_utils/outputs.py`` and the commands built on it).

Fast cases (the default suite): the lock, the staging folder and its swap, a full disk made
by an ``OSError``-raising writer, refusals before ``--out`` is touched. The kill and
two-process cases are in ``test_concurrency.py`` (slow).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.bad_input.conftest import EDGES, TRIANGLES, run_cli
from topo_contrastive import ComplexOperators
from topo_contrastive._utils.outputs import OutputBusyError, OutputLock, output_run
from topo_contrastive.datasets import EdgeFlows


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


# ---------------------------------------------------------------------------- the helper
def test_fresh_folder_is_written_in_place_and_refused_after(tmp_path):
    out = tmp_path / "run"
    with output_run(out) as work:
        assert work == out and out.is_dir()
        (work / "result.json").write_text("1")
    with pytest.raises(ValueError, match="is not empty .*result.json.*--overwrite"):
        with output_run(out):
            pass
    assert _names(tmp_path) == ["run"]  # no lock file, no staging folder left


def test_overwrite_swaps_only_a_complete_result(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "result.json").write_text("old")
    (out / "COMPLETE").write_text("done")
    (out / "notes.txt").write_text("the user's")
    with pytest.raises(RuntimeError):  # a failing run: the earlier result stays
        with output_run(out, overwrite=True, owns=("result.json", "COMPLETE")) as work:
            assert work != out and work.parent == tmp_path and work.name.startswith(".run.")
            (work / "result.json").write_text("half")
            assert (out / "result.json").read_text() == "old"  # a reader sees the old run
            raise RuntimeError("refused midway")
    kept = {"result.json": b"old", "COMPLETE": b"done", "notes.txt": b"the user's"}
    assert _snapshot(out) == kept
    assert _names(tmp_path) == ["run"]
    with output_run(out, overwrite=True, owns=("result.json", "COMPLETE")) as work:
        (work / "result.json").write_text("new")  # no marker this time
    # the new result, the user's file carried over, the old run's marker gone (not mixed)
    assert _snapshot(out) == {"result.json": b"new", "notes.txt": b"the user's"}
    assert _names(tmp_path) == ["run"]


def test_full_disk_leaves_the_earlier_result(tmp_path, monkeypatch):
    """An ``OSError`` (ENOSPC) from a writer inside the run: the earlier files as they were."""
    import errno

    from topo_contrastive._utils import files as _files

    out = tmp_path / "run"
    out.mkdir()
    _files.write_text(out / "a.txt", "old a")
    _files.write_text(out / "b.txt", "old b")
    calls = []

    def full(path, write):
        calls.append(Path(path).name)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, write)

    real = _files.atomic_write
    monkeypatch.setattr(_files, "atomic_write", full)
    with pytest.raises(OSError, match="No space left"):
        with output_run(out, overwrite=True, owns=("*.txt",)) as work:
            _files.write_text(work / "a.txt", "new a")
            _files.write_text(work / "b.txt", "new b")
    assert _snapshot(out) == {"a.txt": b"old a", "b.txt": b"old b"}
    assert _names(tmp_path) == ["run"]


def test_files_are_swapped_with_the_marker_last(tmp_path):
    md, js = tmp_path / "eval.md", tmp_path / "eval.json"
    with output_run(js, files=[md, js]) as work:
        assert work == tmp_path
        md.write_text("m1")
        js.write_text("j1")
    with pytest.raises(ValueError, match="already exists; pass --overwrite"):
        with output_run(js, files=[md, js]):
            pass
    with output_run(js, files=[md, js], overwrite=True) as work:
        assert work != tmp_path
        (work / "eval.json").write_text("j2")  # this run writes no report
        assert js.read_text() == "j1" and md.read_text() == "m1"
    assert _names(tmp_path) == ["eval.json"] and js.read_text() == "j2"  # not m1 beside j2


def test_a_held_lock_names_its_holder(tmp_path):
    out = tmp_path / "run"
    with OutputLock(out):
        with pytest.raises(OutputBusyError) as info:
            with output_run(out):
                pass
    message = str(info.value)
    assert f"pid {os.getpid()}" in message and "being written by another run" in message
    assert "host" in message and ".run.lock" in message
    assert not out.exists()  # refused before anything was made


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom topo_contrastive._utils.outputs import "
         "OutputLock\nOutputLock(sys.argv[1]).acquire()\nprint('held', flush=True)\n"
         "time.sleep(120)", str(out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusyError, match=f"pid {holder.pid} "):
            OutputLock(out).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert (tmp_path / ".run.lock").exists()  # left behind by the killed run
    lock = OutputLock(out).acquire()
    assert lock.stale is not None and lock.stale["pid"] == holder.pid
    lock.release()
    assert not (tmp_path / ".run.lock").exists()


def test_overwrite_of_the_current_folder_is_refused(tmp_path, monkeypatch):
    (tmp_path / "x").write_text("1")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="holds the current folder"):
        with output_run(tmp_path, overwrite=True):
            pass
    assert _names(tmp_path) == ["x"]


# ---------------------------------------------------------------------------- the commands
@pytest.fixture(scope="module")
def paths_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("paths")
    ops = ComplexOperators.from_simplices(EDGES, TRIANGLES)
    paths = [[0, 1, 2, 3, 4, 0, 1][: 4 + (i % 3)] for i in range(30)]
    EdgeFlows.write_npz(root / "paths.npz", ops, paths=paths, labels=np.arange(30) % 2)
    return root / "paths.npz"


def _predict(files, paths_file, out, *more):
    return ["predict-next", "--checkpoint", files["checkpoint"], "--data-file", paths_file,
            "--seeds", "1", "--epochs", "1", "--out", out, "--data-root", files["root"] / "dr",
            "--no-progress", "--threads", "1", *more]  # fmt: skip


def test_predict_next_full_disk_keeps_the_earlier_result(files, paths_file, tmp_path, monkeypatch):
    """``predict-next --overwrite`` with the disk full while writing: status 1, the error
    named, the earlier JSON and Markdown unchanged (not a new table beside an old JSON)."""
    import errno

    from topo_contrastive._utils import files as _files

    out = tmp_path / "pn.json"
    assert run_cli(_predict(files, paths_file, out))[0] == 0
    before = _snapshot(tmp_path)
    assert sorted(before) == ["pn.json", "pn.md"]
    real = _files.atomic_write

    def full(path, write):
        if Path(path).suffix == ".json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, write)

    monkeypatch.setattr(_files, "atomic_write", full)
    status, err = run_cli(_predict(files, paths_file, out, "--seeds", "2", "--overwrite"))
    assert status == 1 and "no space left on device" in err and "as it was" in err
    assert _snapshot(tmp_path) == before and _names(tmp_path) == ["pn.json", "pn.md"]


def test_predict_next_fraction_is_honoured_or_refused(files, paths_file, tmp_path):
    """A --fraction that labels no training prefix (round(fraction x size) = 0) is refused
    before any work, naming the size and the smallest fraction; one that labels a prefix runs
    and the table says the share really labelled."""
    import re

    for tiny in ("1e-9", "0.01"):
        status, err = run_cli(_predict(files, paths_file, tmp_path / "pn.json", "--fraction", tiny))
        assert status == 2, err
        f = f"{float(tiny):g}"
        found = re.search(rf"--fraction {f} labels round\({f} x (\d+)\) = 0 of the (\d+) "
                          r"training prefixes of seed 0: expected a fraction above "
                          r"([0-9.e-]+) and at most 1", err)  # fmt: skip
        assert found, err
        assert not (tmp_path / "pn.json").exists() and not (tmp_path / "pn.md").exists()
    total = int(found[1])
    assert float(found[3]) == pytest.approx(0.5 / total)
    one = f"{1 / total:.6f}"
    status, err = run_cli(_predict(files, paths_file, tmp_path / "pn.json", "--fraction", one))
    assert status == 0, err
    table = (tmp_path / "pn.md").read_text()
    (cell,) = json.loads((tmp_path / "pn.json").read_text())["labelled"]
    assert cell["train"] == 1 and cell["train_total"] == total
    words = (f"1 of {total} training prefixes labelled ({100 / total:.1f} %; --fraction "
             f"{float(one):g})")  # fmt: skip
    assert words in table


@pytest.mark.parametrize("name", ["result.md", "result.MD"])
def test_predict_next_and_evaluate_refuse_an_out_named_md(files, paths_file, tmp_path, name):
    """--out names the JSON summary, the table goes beside it: a name ending in .md would put
    the JSON where the table is expected, refused before any work."""
    evaluate = ["evaluate", "--checkpoint", files["checkpoint"], "--data-file", files["data"],
                "--seeds", "1", "--out", tmp_path / name, "--data-root", files["root"] / "dr",
                "--no-progress", "--threads", "1"]  # fmt: skip
    for words in (_predict(files, paths_file, tmp_path / name), evaluate):
        status, err = run_cli(words)
        assert status == 2, err
        assert f"--out '{tmp_path / name}' ends in .md" in err
        assert f"such as '{tmp_path / 'result.json'}'" in err
        assert _names(tmp_path) == []


def test_evaluate_refused_overwrite_keeps_the_earlier_result(files, tmp_path):
    out = tmp_path / "eval.json"
    base = ["evaluate", "--checkpoint", files["checkpoint"], "--data-file", files["data"],
            "--seeds", "1", "--no-references", "--out", out, "--data-root", files["root"] / "dr",
            "--no-progress", "--threads", "1"]  # fmt: skip
    assert run_cli(base)[0] == 0
    before = _snapshot(tmp_path)
    for bad in (["--seed", str(2**31 - 1), "--seeds", "2"], ["--seed", str(2**70)]):
        status, err = run_cli([*base, "--overwrite", *bad])
        assert status == 2 and "--seed" in err
        assert _snapshot(tmp_path) == before


def test_a_command_into_a_locked_out_is_refused(files, tmp_path):
    out = tmp_path / "run"
    with OutputLock(out):
        status, err = run_cli(["embed", "--checkpoint", files["checkpoint"], "--data-file",
                               files["data"], "--out", out, "--data-root", files["root"] / "dr",
                               "--no-progress", "--threads", "1"])  # fmt: skip
    assert status == 2 and "is being written by another run" in err and f"pid {os.getpid()}" in err
    assert not out.exists()


@pytest.mark.parametrize("transfer", [[], ["--transfer"]])
def test_predict_next_on_paths_without_labels_names_the_file(files, tmp_path, transfer):
    """A paths file without labels or split masks puts every path in training: refused
    before any training, naming the file and the split's sizes (not "`idx` must hold ...")."""
    ops = ComplexOperators.from_simplices(EDGES, TRIANGLES)
    f = tmp_path / "unlabelled_paths.npz"
    EdgeFlows.write_npz(f, ops, paths=[[0, 1, 2, 3, 4, 0, 1][: 4 + (i % 3)] for i in range(30)])
    status, err = run_cli(_predict(files, f, tmp_path / "pn.json", *transfer))
    assert status == 2, err
    assert f"--data-file '{f}' gives no test paths for seed 0 (its split: 24 training, 6 " \
           "validation, 0 test paths); a file without labels" in err  # fmt: skip
    assert "`idx`" not in err and not (tmp_path / "pn.json").exists()


# ---------------------------------------------------------------------------- inputs kept
def _copy(source: Path, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(source.read_bytes())
    return folder / name


def _evaluate(files, data, out):
    return ["evaluate", "--checkpoint", files["checkpoint"], "--data-file", data, "--seeds", "1",
            "--no-references", "--out", out, "--overwrite", "--data-root", files["root"] / "dr",
            "--no-progress", "--threads", "1"]  # fmt: skip


@pytest.mark.parametrize("how", ["same-path", "hard-link", "beside"])
def test_evaluate_never_replaces_its_data_file(files, tmp_path, how):
    data = _copy(files["data"], tmp_path, "g.npz")
    out = {"same-path": data, "hard-link": tmp_path / "h.json", "beside": tmp_path / "g.json"}[how]
    if how == "hard-link":
        os.link(data, out)
    if how == "beside":  # the Markdown report beside --out g.json is g.md: the data as g.md
        data = data.rename(tmp_path / "g.md")
    before = data.read_bytes()
    words = _evaluate(files, data, out)
    if how == "beside":  # with the reference rows, the report is written
        words.remove("--no-references")
    status, err = run_cli(words)
    assert status == 2, err
    assert f"would replace --data-file '{data}', a file this command reads" in err
    assert data.read_bytes() == before


def test_commands_with_an_output_folder_keep_their_inputs(files, paths_file, tmp_path):
    # an input inside --out under a name the command writes would be replaced by --overwrite
    run = tmp_path / "run"
    data = _copy(files["data"], run, "pretrain.json")  # an edge-flow file under that name
    status, err = run_cli(["pretrain", "--data-file", data, "--config", "SCL", "--epochs", "1",
                           "--out", run, "--overwrite", "--data-root", files["root"] / "dr",
                           "--no-progress", "--threads", "1"])  # fmt: skip
    assert status == 2 and f"would replace --data-file '{data}'" in err, err
    assert data.read_bytes() == files["data"].read_bytes()
    ckpt = _copy(files["checkpoint"], run, "encoder.pt")
    data = _copy(files["data"], run, "embeddings.npz")
    status, err = run_cli(["embed", "--checkpoint", ckpt, "--data-file", data, "--out", run,
                           "--overwrite", "--data-root", files["root"] / "dr", "--no-progress",
                           "--threads", "1"])  # fmt: skip
    assert status == 2 and f"would replace --data-file '{data}'" in err, err
    assert data.read_bytes() == files["data"].read_bytes()
    # an input the command does not write stays where it is: embed beside its encoder
    data.unlink()
    status, err = run_cli(["embed", "--checkpoint", ckpt, "--data-file", files["data"], "--out",
                           run, "--overwrite", "--data-root", files["root"] / "dr",
                           "--no-progress", "--threads", "1"])  # fmt: skip
    assert status == 0, err
    assert ckpt.read_bytes() == files["checkpoint"].read_bytes()
    out = tmp_path / "pn.json"
    os.link(paths_file, out)
    status, err = run_cli(_predict(files, paths_file, out, "--overwrite"))
    assert status == 2 and f"would replace --data-file '{paths_file}'" in err, err
