# ruff: noqa: E501  (the case tables keep one case per line)
"""Wrong flags for every command of ``topo-contrastive``, run in this process
(``topo_contrastive.cli.main``): each must end with status 2 and a message naming the option
(argparse's own refusals included: ``SystemExit(2)`` with its usage line), before any work:
``--out`` is not created."""

from __future__ import annotations

import pytest

from tests.bad_input.conftest import run_cli

# {data}, {unlabelled}, {checkpoint}, {folder}, {text}, {out}, {root} are filled per test
PRETRAIN = ["pretrain", "--config", "SCL", "--out", "{out}", "--data-root", "{root}"]
EVALUATE = ["evaluate", "--checkpoint", "{checkpoint}", "--data-root", "{root}"]
EMBED = ["embed", "--checkpoint", "{checkpoint}", "--out", "{out}", "--data-root", "{root}"]
REPRODUCE = ["reproduce", "--out", "{out}", "--data-root", "{root}"]
SEARCH = ["search", "--dataset", "trajectory", "--config", "SCL", "--out", "{out}.csv", "--data-root", "{root}"]

CASES = [
    # ---- pretrain
    ("pretrain-no-data", PRETRAIN, "one of the arguments --dataset --data-file is required"),
    ("pretrain-both-data", PRETRAIN + ["--dataset", "ocean", "--data-file", "{data}"], "not allowed with argument"),
    ("pretrain-unknown-dataset", PRETRAIN + ["--dataset", "mars"], "unknown dataset 'mars'"),
    ("pretrain-unknown-config", ["pretrain", "--config", "SCL_X", "--dataset", "ocean", "--out", "{out}"], "unknown configuration 'SCL_X'"),
    ("pretrain-supervised-row", ["pretrain", "--config", "SCNN", "--dataset", "ocean", "--out", "{out}"], "supervised baseline"),
    ("pretrain-epochs-0", PRETRAIN + ["--dataset", "ocean", "--epochs", "0"], "--epochs: expected a positive integer, got 0"),
    ("pretrain-epochs-negative", PRETRAIN + ["--dataset", "ocean", "--epochs", "-3"], "--epochs: expected a positive integer"),
    ("pretrain-epochs-text", PRETRAIN + ["--dataset", "ocean", "--epochs", "many"], "--epochs: expected a positive integer, got 'many'"),
    ("pretrain-epochs-float", PRETRAIN + ["--dataset", "ocean", "--epochs", "2.5"], "--epochs: expected a positive integer"),
    ("pretrain-seed-negative", PRETRAIN + ["--dataset", "ocean", "--seed", "-1"], "--seed: expected an integer >= 0"),
    ("pretrain-hidden-0", PRETRAIN + ["--dataset", "ocean", "--hidden-channels", "0"], "--hidden-channels: expected a positive integer"),
    ("pretrain-threads-0", PRETRAIN + ["--dataset", "ocean", "--threads", "0"], "--threads: expected a positive integer"),
    ("pretrain-dist-timeout-0", PRETRAIN + ["--dataset", "ocean", "--dist-timeout", "0"], "--dist-timeout"),
    ("pretrain-unknown-edition", PRETRAIN + ["--dataset", "ocean", "--edition", "draft"], "unknown edition 'draft'"),
    ("pretrain-readout-choice", PRETRAIN + ["--dataset", "ocean", "--readout", "median"], "--readout: invalid choice"),
    ("pretrain-edition-readout", PRETRAIN + ["--dataset", "ocean", "--edition", "hodge", "--readout", "mean"], "--edition hodge.*--readout mean"),
    ("pretrain-edition-readout-sum", PRETRAIN + ["--dataset", "ocean", "--edition", "hodge_readout", "--readout", "sum"], "--edition hodge.*--readout sum"),
    ("pretrain-tuned-for-with-dataset", PRETRAIN + ["--dataset", "ocean", "--tuned-for", "trajectory"], "--tuned-for applies to --data-file only"),
    ("pretrain-tuned-for-abbrev", PRETRAIN + ["--dataset", "ocean", "--tuned", "ocean"], "--tuned-for applies to --data-file only"),
    ("pretrain-tuned-for-choice", PRETRAIN + ["--data-file", "{data}", "--tuned-for", "mars"], "--tuned-for: invalid choice"),
    ("pretrain-data-file-ocean-raw", PRETRAIN + ["--data-file", "{data}", "--ocean-raw", "{text}"], "--ocean-raw.*--data-file"),
    ("pretrain-data-file-points", PRETRAIN + ["--data-file", "{data}", "--trajectory-points", "50"], "--trajectory-points.*--data-file"),
    ("pretrain-data-file-split", PRETRAIN + ["--data-file", "{data}", "--trajectory-split", "10", "5", "5"], "--trajectory-split.*--data-file"),
    ("pretrain-ocean-points", PRETRAIN + ["--dataset", "ocean", "--trajectory-points", "50"], "--trajectory-points applies to the trajectory task"),
    ("pretrain-trajectory-ocean-raw", PRETRAIN + ["--dataset", "trajectory", "--ocean-raw", "{text}"], "--ocean-raw applies to the ocean task"),
    ("pretrain-points-0", PRETRAIN + ["--dataset", "trajectory", "--trajectory-points", "0"], "--trajectory-points: expected a positive integer"),
    ("pretrain-split-two-values", PRETRAIN + ["--dataset", "trajectory", "--trajectory-split", "10", "5"], "--trajectory-split: expected 3 arguments"),
    ("pretrain-set-name", PRETRAIN + ["--dataset", "ocean", "--set", "name=SCL_v2"], ("--set name=SCL_v2", "not a hyper-parameter", "can change: K, K_down")),
    ("pretrain-set-method", PRETRAIN + ["--dataset", "ocean", "--set", "method=supervised"], ("'method' is not a hyper-parameter", "lr")),
    ("pretrain-set-loss", PRETRAIN + ["--dataset", "ocean", "--set", "loss=hodge_debiased"], "'loss' is not a hyper-parameter"),
    ("pretrain-set-mask", PRETRAIN + ["--dataset", "ocean", "--set", "mask=spectral"], "'mask' is not a hyper-parameter"),
    ("pretrain-set-notes", PRETRAIN + ["--dataset", "ocean", "--set", "notes=mine"], "'notes' is not a hyper-parameter"),
    ("pretrain-set-unknown", PRETRAIN + ["--dataset", "ocean", "--set", "colour=red"], ("unknown configuration field 'colour' in --set", "choose among K")),
    ("pretrain-set-no-equals", PRETRAIN + ["--dataset", "ocean", "--set", "lr"], "--set entries look like FIELD=VALUE"),
    ("pretrain-set-two-values", PRETRAIN + ["--dataset", "ocean", "--set", "lr=0.1,0.2"], "--set lr takes one value"),
    ("pretrain-set-twice", PRETRAIN + ["--dataset", "ocean", "--set", "lr=0.1", "lr=0.2"], "--set field 'lr' is given twice"),
    ("pretrain-set-bad-int", PRETRAIN + ["--dataset", "ocean", "--set", "K_up=two"], ("K_up", "expected an integer")),
    ("pretrain-set-bad-bool", PRETRAIN + ["--dataset", "ocean", "--set", "normalize=maybe"], ("normalize", "expected a bool")),
    ("pretrain-set-bad-tuple", PRETRAIN + ["--dataset", "ocean", "--set", "gamma=(1,1)"], ("gamma", "tuple of 3")),
    ("pretrain-set-out-of-range", PRETRAIN + ["--dataset", "ocean", "--set", "drop_prob=2"], "`drop_prob` = 2.0 is out of range"),
    ("pretrain-set-K-and-K-up", PRETRAIN + ["--dataset", "ocean", "--set", "K=2", "K_up=1"], "K sets both K_down and K_up"),
    ("pretrain-hidden-and-set", PRETRAIN + ["--dataset", "ocean", "--hidden-channels", "8", "--set", "hidden_channels=4"], "--hidden-channels and --set hidden_channels"),
    ("pretrain-epochs-and-set", PRETRAIN + ["--dataset", "ocean", "--epochs", "2", "--set", "epochs=3"], "--epochs and --set epochs"),
    ("pretrain-readout-and-set", PRETRAIN + ["--dataset", "ocean", "--readout", "sum", "--set", "readout=max"], "--readout and --set readout"),
    ("pretrain-missing-data-file", PRETRAIN + ["--data-file", "{root}/none.npz"], "data file .* does not exist"),
    ("pretrain-data-file-folder", PRETRAIN + ["--data-file", "{folder}"], "is a folder, expected a file"),
    ("pretrain-data-file-text", PRETRAIN + ["--data-file", "{text}"], "not a readable .npz file"),
    ("pretrain-device-unknown", PRETRAIN + ["--data-file", "{data}", "--device", "gpu9"], "unknown device 'gpu9'"),
    ("pretrain-device-meta", PRETRAIN + ["--data-file", "{data}", "--device", "meta"], "device 'meta'.*cpu|cpu.*cuda"),
    ("pretrain-out-is-file", ["pretrain", "--config", "SCL", "--data-file", "{data}", "--out", "{text}", "--data-root", "{root}"], "--out .* is a file, expected a folder"),
    ("pretrain-data-root-is-file", PRETRAIN + ["--data-file", "{data}", "--data-root", "{text}"], r"`data_root` \(--data-root\) '.*text.txt' is a file, expected a folder"),
    ("pretrain-data-root-under-file", PRETRAIN + ["--dataset", "trajectory", "--data-root", "{text}/d"], r"--data-root\) '.*text.txt/d' lies under the file '.*text.txt', expected a folder"),
    ("pretrain-out-not-empty", ["pretrain", "--config", "SCL", "--data-file", "{data}", "--out", "{root}", "--data-root", "{root}"], "--out .* is not empty"),
    ("pretrain-out-inside-file", ["pretrain", "--config", "SCL", "--data-file", "{data}", "--out", "{text}/o", "--data-root", "{root}"], "--out .* cannot be written .* is not a folder"),
    ("embed-out-inside-file", ["embed", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--out", "{text}/o/p", "--data-root", "{root}"], "--out .* cannot be written .* is not a folder"),
    ("pretrain-unknown-option", PRETRAIN + ["--dataset", "ocean", "--lr", "0.1"], "unrecognized arguments: --lr"),
    # ---- evaluate
    ("evaluate-no-checkpoint", ["evaluate", "--dataset", "ocean"], "the following arguments are required: --checkpoint"),
    ("evaluate-missing-checkpoint", ["evaluate", "--checkpoint", "{root}/none.pt", "--data-file", "{data}", "--data-root", "{root}"], "checkpoint .* does not exist"),
    ("evaluate-checkpoint-folder", ["evaluate", "--checkpoint", "{folder}", "--data-file", "{data}", "--data-root", "{root}"], "checkpoint .* is a folder"),
    ("evaluate-checkpoint-text", ["evaluate", "--checkpoint", "{text}", "--data-file", "{data}", "--data-root", "{root}"], "cannot be read with weights_only"),
    ("evaluate-checkpoint-data-file", ["evaluate", "--checkpoint", "{data}", "--data-file", "{data}", "--data-root", "{root}"], "checkpoint|weights_only|format"),
    ("evaluate-seeds-0", EVALUATE + ["--data-file", "{data}", "--seeds", "0"], "--seeds: expected a positive integer"),
    ("evaluate-unknown-probe", EVALUATE + ["--data-file", "{data}", "--probe", "lasso"], "--probe: invalid choice: 'lasso' \\(choose from '?ridge'?, '?svm'?\\)"),
    ("evaluate-seed-negative", EVALUATE + ["--data-file", "{data}", "--seed", "-2"], "--seed: expected an integer >= 0"),
    ("evaluate-unknown-config", EVALUATE + ["--data-file", "{data}", "--config", "nope"], "unknown configuration 'nope'"),
    ("evaluate-edition-without-config", EVALUATE + ["--data-file", "{data}", "--edition", "hodge"], "--edition hodge selects the edition of --config"),
    ("evaluate-overwrite-without-out", EVALUATE + ["--data-file", "{data}", "--overwrite"], "--overwrite applies to --out"),
    ("evaluate-tuned-for-with-dataset", EVALUATE + ["--dataset", "ocean", "--tuned-for", "ocean"], "--tuned-for applies to --data-file only"),
    ("evaluate-data-file-points", EVALUATE + ["--data-file", "{data}", "--trajectory-points", "30"], "--trajectory-points.*--data-file"),
    ("evaluate-no-labels", EVALUATE + ["--data-file", "{unlabelled}"], "label"),
    ("evaluate-expected-width", EVALUATE + ["--data-file", "{data}", "--hidden-channels", "64"], "hidden_channels: checkpoint 4 vs expected 64"),
    ("evaluate-config-architecture", EVALUATE + ["--data-file", "{data}", "--config", "SCL"], "another architecture than expected"),
    ("evaluate-out-exists", EVALUATE + ["--data-file", "{data}", "--out", "{text}"], "--out .* already exists"),
    ("evaluate-out-in-file", EVALUATE + ["--data-file", "{data}", "--out", "{text}/eval.json"], "cannot be written"),
    ("evaluate-unknown-dataset", EVALUATE + ["--dataset", "venus"], "unknown dataset 'venus'"),
    ("evaluate-hidden-negative", EVALUATE + ["--data-file", "{data}", "--hidden-channels", "-4"], "--hidden-channels: expected a positive integer"),
    # ---- embed
    ("embed-no-out", ["embed", "--checkpoint", "{checkpoint}", "--data-file", "{data}"], "the following arguments are required: --out"),
    ("embed-batch-0", EMBED + ["--data-file", "{data}", "--batch-size", "0"], "--batch-size: expected a positive integer"),
    ("embed-batch-text", EMBED + ["--data-file", "{data}", "--batch-size", "all"], "--batch-size: expected a positive integer, got 'all'"),
    ("embed-tuned-for", EMBED + ["--data-file", "{data}", "--tuned-for", "ocean"], "unrecognized arguments: --tuned-for"),
    ("embed-missing-checkpoint", ["embed", "--checkpoint", "{root}/none.pt", "--data-file", "{data}", "--out", "{out}"], "checkpoint .* does not exist"),
    ("embed-checkpoint-folder", ["embed", "--checkpoint", "{folder}", "--data-file", "{data}", "--out", "{out}"], "checkpoint .* is a folder"),
    ("embed-missing-data-file", EMBED + ["--data-file", "{root}/none.npz"], "data file .* does not exist"),
    ("embed-data-file-folder", EMBED + ["--data-file", "{folder}"], "data file .* is a folder"),
    ("embed-data-file-ocean-raw", EMBED + ["--data-file", "{data}", "--ocean-raw", "{text}"], "--ocean-raw.*--data-file"),
    ("embed-out-not-empty", ["embed", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--out", "{root}"], "--out .* is not empty"),
    ("embed-out-is-file", ["embed", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--out", "{text}"], "--out .* is a file, expected a folder"),
    ("embed-unknown-dataset", EMBED + ["--dataset", "pluto"], "unknown dataset 'pluto'"),
    ("embed-ocean-points", EMBED + ["--dataset", "ocean", "--trajectory-points", "40"], "--trajectory-points applies to the trajectory task"),
    # ---- predict-next
    ("predict-next-no-checkpoint", ["predict-next", "--data-file", "{data}"], "the following arguments are required: --checkpoint"),
    ("predict-next-epochs-0", ["predict-next", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--epochs", "0"], "--epochs: expected a positive integer"),
    ("predict-next-seeds-0", ["predict-next", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--seeds", "0"], "--seeds: expected a positive integer"),
    ("predict-next-checkpoint-folder", ["predict-next", "--checkpoint", "{folder}", "--data-file", "{data}", "--data-root", "{root}"], "checkpoint .* is a folder"),
    ("predict-next-missing-data-file", ["predict-next", "--checkpoint", "{checkpoint}", "--data-file", "{root}/none.npz"], "data file .* does not exist"),
    ("predict-next-out-exists", ["predict-next", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--out", "{text}", "--data-root", "{root}"], "already exists"),
    ("predict-next-unknown-dataset", ["predict-next", "--checkpoint", "{checkpoint}", "--dataset", "pluto"], "unknown dataset 'pluto'"),
    ("predict-next-checkpoint-dev-null", ["predict-next", "--checkpoint", "/dev/null", "--data-file", "{data}", "--data-root", "{root}"], "checkpoint '/dev/null' is not a regular file \\(a device, pipe or socket\\), expected a file"),
    ("predict-next-data-file-dev-null", ["predict-next", "--checkpoint", "{checkpoint}", "--data-file", "/dev/null", "--data-root", "{root}"], "data file '/dev/null' is not a regular file"),
    ("pretrain-data-file-dev-null", PRETRAIN + ["--data-file", "/dev/null"], "data file '/dev/null' is not a regular file \\(a device, pipe or socket\\), expected a file"),
    ("evaluate-checkpoint-dev-null", ["evaluate", "--checkpoint", "/dev/null", "--data-file", "{data}", "--data-root", "{root}"], "checkpoint '/dev/null' is not a regular file"),
    ("embed-data-file-dev-null", EMBED + ["--data-file", "/dev/null"], "data file '/dev/null' is not a regular file"),
    # ---- reproduce
    ("reproduce-seeds-0", REPRODUCE + ["--seeds", "0"], "--seeds: expected a positive integer"),
    ("reproduce-pretrain-seeds-0", REPRODUCE + ["--pretrain-seeds", "0"], "--pretrain-seeds: expected a positive integer"),
    ("reproduce-epochs-0", REPRODUCE + ["--epochs", "0"], "--epochs: expected a positive integer"),
    ("reproduce-unknown-dataset", REPRODUCE + ["--datasets", "mars"], "unknown dataset 'mars'"),
    ("reproduce-unknown-config", REPRODUCE + ["--configs", "SCL", "Fancy"], "unknown configuration 'Fancy'"),
    ("reproduce-unknown-edition", REPRODUCE + ["--editions", "draft"], "unknown edition|draft"),
    ("reproduce-resume-and-overwrite", REPRODUCE + ["--resume", "--overwrite"], "--resume keeps the finished runs.*--overwrite"),
    ("reproduce-figure2-not-run", REPRODUCE + ["--datasets", "trajectory", "--figure2-dataset", "ocean"], "--figure2-dataset ocean is not among --datasets trajectory"),
    ("reproduce-ocean-raw-without-ocean", REPRODUCE + ["--datasets", "trajectory", "--ocean-raw", "{text}"], "--ocean-raw applies to the ocean task"),
    ("reproduce-points-without-trajectory", REPRODUCE + ["--datasets", "ocean", "--trajectory-points", "50"], "--trajectory-points applies to the trajectory task"),
    ("reproduce-tuned-for", REPRODUCE + ["--tuned-for", "ocean"], "unrecognized arguments: --tuned-for"),
    ("reproduce-data-file", REPRODUCE + ["--data-file", "{data}"], "unrecognized arguments: --data-file"),
    ("reproduce-out-not-empty", ["reproduce", "--out", "{root}", "--datasets", "trajectory"], "--out .* is not empty.*--resume"),
    ("reproduce-resume-pretrain-folder", ["reproduce", "--resume", "--out", "{pretrain_folder}", "--datasets", "trajectory"], ("cannot resume in", "encoder.pt", "not written by `reproduce`")),
    ("reproduce-resume-foreign-runs", ["reproduce", "--resume", "--out", "{foreign_runs}", "--datasets", "trajectory"], ("cannot resume from", "not written by `reproduce`")),
    ("reproduce-resume-broken-runs", ["reproduce", "--resume", "--out", "{broken_runs}", "--datasets", "trajectory"], ("cannot resume from", "not readable JSON")),
    ("reproduce-resume-other-preset", ["reproduce", "--resume", "--out", "{other_preset}", "--datasets", "trajectory"], ("cannot resume from", "other settings", "they differ in preset.")),
    ("reproduce-unknown-figure2", REPRODUCE + ["--figure2-dataset", "mars"], "unknown dataset 'mars'"),
    # ---- search
    ("search-out-is-folder", ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1", "--out", "{folder}"], "--out .* is a folder, expected a file; choose another --out"),
    ("search-out-is-folder-overwrite", ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1", "--out", "{folder}", "--overwrite"], "--out .* is a folder, expected a file; choose another --out"),
    ("search-no-grid", ["search", "--dataset", "ocean", "--config", "SCL", "--out", "{out}.csv"], "the following arguments are required: --grid"),
    ("search-data-file", SEARCH + ["--grid", "lr=0.1", "--data-file", "{data}"], "unrecognized arguments: --data-file"),
    ("search-grid-name", SEARCH + ["--grid", "name=x,y"], ("--grid name=x,y", "not a hyper-parameter")),
    ("search-grid-loss", SEARCH + ["--grid", "loss=infonce,hodge_debiased"], "'loss' is not a hyper-parameter"),
    ("search-grid-mask", SEARCH + ["--grid", "mask=uniform,spectral"], "'mask' is not a hyper-parameter"),
    ("search-grid-method", SEARCH + ["--grid", "method=supervised"], "'method' is not a hyper-parameter"),
    ("search-grid-unknown", SEARCH + ["--grid", "speed=1,2"], ("unknown configuration field 'speed' in --grid", "choose among K")),
    ("search-grid-no-equals", SEARCH + ["--grid", "lr"], "--grid entries look like FIELD=V1,V2"),
    ("search-grid-bad-float", SEARCH + ["--grid", "lr=fast"], ("lr", "expected a real number")),
    ("search-grid-out-of-range", SEARCH + ["--grid", "lr=0.1,-1"], ("--grid lr=-1", "out of range")),
    ("search-grid-brackets", SEARCH + ["--grid", "gamma=(1,1,1"], "unbalanced brackets"),
    ("search-grid-twice", SEARCH + ["--grid", "lr=0.1", "lr=0.2"], "given twice"),
    ("search-eval-epochs-supervised", ["search", "--dataset", "trajectory", "--config", "SCNN", "--grid", "lr=0.1", "--eval-epochs", "2", "--out", "{out}.csv"], "--eval-epochs .* SCNN is the supervised baseline"),
    ("search-eval-epochs-and-epochs", SEARCH + ["--grid", "lr=0.1", "--eval-epochs", "2", "--epochs", "4"], "--epochs 4 is unused with --eval-epochs"),
    ("search-eval-epochs-0", SEARCH + ["--grid", "lr=0.1", "--eval-epochs", "0"], "--eval-epochs: expected a positive integer"),
    ("search-splits-0", SEARCH + ["--grid", "lr=0.1", "--splits-per-seed", "0"], "--splits-per-seed: expected a positive integer"),
    ("search-seeds-0", SEARCH + ["--grid", "lr=0.1", "--seeds", "0"], "--seeds: expected a positive integer"),
    ("search-edition-readout", SEARCH + ["--grid", "lr=0.1", "--edition", "hodge", "--readout", "max"], "--edition hodge.*--readout max"),
    ("search-ocean-raw-trajectory", SEARCH + ["--grid", "lr=0.1", "--ocean-raw", "{text}"], "--ocean-raw applies to the ocean task"),
    ("search-out-exists", ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1", "--out", "{text}"], "--out .* already exists"),
    ("search-unknown-config", ["search", "--dataset", "trajectory", "--config", "XYZ", "--grid", "lr=0.1", "--out", "{out}.csv"], "unknown configuration 'XYZ'"),
    # ---- the program
    ("no-command", [], "required: COMMAND|the following arguments are required"),
    ("unknown-command", ["train"], "invalid choice: 'train'"),
]


@pytest.fixture(scope="module")
def folders(files, tmp_path_factory):
    """Folders ``reproduce --resume`` must refuse: a pretrain folder, a foreign runs.json,
    a broken one, and a quick-preset run resumed with the full preset."""
    import json

    root = tmp_path_factory.mktemp("resume")
    pre = root / "pretrain_folder"
    pre.mkdir()
    (pre / "encoder.pt").write_bytes(files["checkpoint"].read_bytes())
    (pre / "pretrain.json").write_text('{"complete": true}\n')
    (pre / "COMPLETE").write_text("done\n")
    foreign = root / "foreign_runs"
    foreign.mkdir()
    (foreign / "runs.json").write_text(json.dumps({"records": []}))
    broken = root / "broken_runs"
    broken.mkdir()
    (broken / "runs.json").write_text("{not json")
    other = root / "other_preset"
    other.mkdir()
    from experiments.presets import PRESETS
    from experiments.reproduce import _settings
    from experiments.run_folder import RunFolder

    RunFolder(other, "reproduce", _settings(PRESETS["quick"], 0), key="unit").start()
    return {"pretrain_folder": pre, "foreign_runs": foreign, "broken_runs": broken, "other_preset": other}


@pytest.mark.parametrize(("words", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wrong_flags_are_refused_before_any_work(files, folders, tmp_path, words, expected):
    import re

    out = tmp_path / "out"
    fill = {**{k: str(v) for k, v in files.items()}, **{k: str(v) for k, v in folders.items()}, "out": str(out)}
    before = {p: sorted(x.name for x in p.iterdir()) for p in folders.values()}
    status, err = run_cli([w.format(**fill) for w in words])
    assert status == 2, err
    for word in (expected,) if isinstance(expected, str) else expected:
        assert re.search(word, err), f"{word!r} not in {err!r}"
    assert not out.exists() and not (tmp_path / "out.csv").exists()  # no work was done
    assert before == {p: sorted(x.name for x in p.iterdir()) for p in folders.values()}


def test_case_ids_are_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))
