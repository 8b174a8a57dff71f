# ruff: noqa: E501  (the case tables keep one case per line)
"""Counts, seeds and paths of the command line with documented limits, and settings that
would write the same cells twice: each refused with status 2 and a message naming the option,
before ``--out`` is made (so that no typo runs for hours and nothing is half-written)."""

from __future__ import annotations

import pytest

from tests.bad_input.conftest import run_cli

LE = ["label-efficiency", "--data-file", "{data}", "--out", "{out}", "--rows", "raw", "--data-root", "{root}"]
PN = ["predict-next", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--data-root", "{root}"]
PRE = ["pretrain", "--data-file", "{data}", "--config", "SCL", "--out", "{out}", "--data-root", "{root}"]
EV = ["evaluate", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--data-root", "{root}"]

CASES = [
    ("pretrain-seed-overflow", PRE + ["--seed", str(2**70)], "--seed: expected an integer >= 0, got 1180591620717411303424, above the limit 2,147,483,647"),
    ("pretrain-epochs-huge", PRE + ["--epochs", "1000000000"], "--epochs: expected a positive integer, got 1000000000, above the limit 100,000"),
    ("pretrain-hidden-huge", PRE + ["--hidden-channels", "1000000"], "--hidden-channels: .*above the limit 4,096"),
    ("pretrain-dist-timeout-huge", PRE + ["--dist-timeout", "100000000"], "--dist-timeout: .*above the limit 86,400"),
    ("pretrain-harmonic-budget-zero", PRE + ["--harmonic-budget", "0"], "--harmonic-budget: expected a size in MiB from 1 byte"),
    ("evaluate-harmonic-budget-nan", EV + ["--harmonic-budget", "nan"], "--harmonic-budget: expected a size in MiB from 1 byte .* got 'nan'"),
    ("pretrain-harmonic-budget-no-room", PRE + ["--harmonic-budget", "0.000001"], r"holds not one direction of N1 = 6 entries .*--harmonic-budget MIB"),
    ("pretrain-out-empty", ["pretrain", "--data-file", "{data}", "--config", "SCL", "--out", ""], "--out: expected a path, got ''"),
    ("pretrain-trajectory-points-huge", ["pretrain", "--dataset", "trajectory", "--config", "SCL", "--out", "{out}", "--trajectory-points", "10000000"], "--trajectory-points: .*above the limit 100,000"),
    ("evaluate-seeds-huge", EV + ["--seeds", "1000000000"], "--seeds: expected a positive integer, got 1000000000, above the limit 1,000"),
    ("evaluate-seed-range", EV + ["--seed", str(2**31 - 1), "--seeds", "3"], r"--seed 2147483647 with 3 seeds runs up to seed 2147483649, above the largest seed"),
    ("evaluate-out-blank", EV + ["--out", "  "], "--out: expected a path"),
    ("embed-batch-huge", ["embed", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--out", "{out}", "--batch-size", "1000000000"], "--batch-size: .*above the limit 1,000,000"),
    ("le-draws-huge", LE + ["--draws", "1000000000"], "--draws: expected a positive integer, got 1000000000, above the limit 1,000"),
    ("le-more-draws-than-subsets", LE + ["--fractions", "0.1", "--draws", "500"], r"`draws` = 500 is more than the \d+ distinct subsets"),
    ("le-fraction-twice", LE + ["--fractions", "0.5", "0.5"], "fractions 0.5 and 0.5 both give"),
    ("le-fractions-same-size", LE + ["--fractions", "0.5", "0.5000001"], "fractions 0.5 and 0.5000001 both give"),
    ("le-edition-twice", LE + ["--editions", "paper", "paper"], "the edition 'paper' is given twice"),
    ("le-resume-overwrite", LE + ["--resume", "--overwrite"], "--resume keeps the finished runs in --out and --overwrite starts over"),
    ("le-pretrain-seeds-huge", LE + ["--pretrain-seeds", "100000"], "--pretrain-seeds: .*above the limit 100"),
    ("le-max-epochs-huge", LE + ["--max-epochs", "1000000000"], "--max-epochs: .*above the limit 100,000"),
    ("le-seed-range", LE + ["--seed", str(2**31 - 2), "--draws", "5"], "above the largest seed"),
    ("pn-out-empty", PN + ["--out", ""], "--out: expected a path, got ''"),
    ("pn-fraction-nan", PN + ["--fraction", "nan"], r"--fraction must be in \(0, 1\], got nan"),
    ("pn-epochs-huge", PN + ["--epochs", "1000000000"], "--epochs: .*above the limit 100,000"),
    ("search-seeds-huge", ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1", "--seeds", "1000000000", "--out", "{out}.csv"], "--seeds: .*above the limit 1,000"),
    ("search-eval-epochs-huge", ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1", "--eval-epochs", "1000000000", "--out", "{out}.csv"], "--eval-epochs: .*above the limit 100,000"),
    ("reproduce-seeds-huge", ["reproduce", "--out", "{out}", "--seeds", "1000000000"], "--seeds: .*above the limit 1,000"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused_before_out_is_made(files, tmp_path, case):
    _, words, expected = case
    out = tmp_path / "out"
    fill = {k: str(v) for k, v in files.items()} | {"out": str(out), "root": str(tmp_path / "dr")}
    status, err = run_cli([w.format(**fill) for w in words])
    assert status == 2, err
    import re

    assert re.search(expected, err), f"{expected!r} not in {err!r}"
    assert not out.exists() and not (tmp_path / "out.csv").exists()


THREADS = [
    PRE,
    EV,
    ["embed", "--checkpoint", "{checkpoint}", "--data-file", "{data}", "--out", "{out}"],
    ["reproduce", "--out", "{out}"],
    ["search", "--dataset", "trajectory", "--config", "SCL", "--grid", "lr=0.1", "--out", "{out}.csv"],
    LE,
    PN + ["--out", "{out}.json"],
    ["reuse", "--out", "{out}"],
    ["many-complexes", "--out", "{out}"],
    ["missing-measurements", "--out", "{out}"],
]


@pytest.mark.parametrize("words", THREADS, ids=[w[0] for w in THREADS])
def test_threads_above_the_usable_cores_are_refused(files, tmp_path, words):
    """Every command with ``--threads``: more threads than this process's cores is refused
    (status 2, the option and the valid range named) before ``--out`` is made."""
    from topo_contrastive._utils.numerics import usable_cores

    out = tmp_path / "out"
    fill = {k: str(v) for k, v in files.items()} | {"out": str(out), "root": str(tmp_path / "dr")}
    threads = usable_cores() + 1
    status, err = run_cli([w.format(**fill) for w in words] + ["--threads", str(threads)])
    assert status == 2, err
    assert (f"--threads {threads} is more than the {usable_cores()} usable core" in err
            and f"expected 1 to {usable_cores()}" in err), err  # fmt: skip
    assert not out.exists() and not (tmp_path / "out.csv").exists()
    assert not (tmp_path / "out.json").exists()
