"""``python -m experiments label-efficiency``: test accuracy against the labelled fraction of the
training split for pre-trained encoders (probed and fine-tuned), the fine-tune control, the
supervised SCNN and the reference rows; resumable
(:func:`~experiments.studies.label_efficiency.label_efficiency`)."""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from experiments import PROG
from topo_contrastive.cli import common, inputs


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}") from err
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {value:g}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``label-efficiency`` subcommand and its options to ``sub``."""
    from experiments._names import (
        CLASSIFIERS,
        DEFAULT_DRAWS,
        DEFAULT_FRACTIONS,
        MAX_DRAWS,
        ROW_KINDS,
    )
    from topo_contrastive.training.configs import EDITIONS

    p = sub.add_parser(
        "label-efficiency",
        help="accuracy against the labelled fraction: pre-trained, fine-tuned, control, "
        "supervised and reference rows (resumable)",
    )
    common.add_data_choice(p)
    p.add_argument("--out", required=True, type=common.out_path, help="output folder")
    p.add_argument(
        "--fractions",
        type=_fraction,
        nargs="+",
        default=list(DEFAULT_FRACTIONS),
        help="labelled fractions of the training split, in (0, 1], each giving another number "
        f"of labels (default: {' '.join(f'{f:g}' for f in DEFAULT_FRACTIONS)})",
    )
    p.add_argument(
        "--draws",
        type=common.int_between(1, MAX_DRAWS),
        default=DEFAULT_DRAWS,
        help=f"stratified draws per fraction, at most {MAX_DRAWS:,} and at most the distinct "
        f"subsets of every fraction below 1 (default: {DEFAULT_DRAWS})",
    )
    p.add_argument(
        "--split", type=common.seed_int, default=0, help="the standard split (default: 0)"
    )
    common.add_seed(p)
    common.add_pretrain_seeds(p, "method and edition", 1, "1")
    p.add_argument(
        "--rows",
        nargs="+",
        default=None,
        help=f"rows: kinds ({', '.join(ROW_KINDS)}) or keys such as finetune:SCL:paper "
        "(default: all)",
    )
    p.add_argument(
        "--editions",
        nargs="+",
        default=list(EDITIONS),
        help=f"editions of the encoder rows: {', '.join(EDITIONS)} (default: both)",
    )
    common.add_epochs(p, "pre-training epochs", shown="the configurations'")
    p.add_argument(
        "--max-epochs",
        type=common.epochs_int,
        default=None,
        help="largest epoch count of fine-tuning and the supervised SCNN (default: 40 and the "
        "configuration's 200)",
    )
    common.add_hidden_channels(p, "encoder width of every row", "the configurations'")
    p.add_argument(
        "--classifier",
        choices=CLASSIFIERS,
        default="ridge",
        help="the low-label probe's classifier: ridge (default: a ridge classifier, the scaling "
        "and its penalty chosen by 3-fold CV with one SVD per fold and scaling for the whole "
        "penalty path), logistic (logistic regression, C by the same CV, a fit per grid point) "
        "or svm (LinearSVC, likewise)",
    )
    common.add_resume(p, "cells")
    common.add_overwrite(p, "is a non-empty folder")
    common.add_run_options(p)
    common.add_data_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the curves as ``args`` say and print the Markdown table; returns the exit status.

    Raises:
        ValueError: an unknown dataset, row or edition; a non-empty ``--out`` without
            ``--overwrite`` or ``--resume``; ``--resume`` into another command's folder or a
            run of other settings; data without labels; a fraction too small for a label
            per class, two fractions of the same number of labels, more draws than distinct
            subsets; ``--out`` held by another run (all before ``--out`` is touched).
        FileNotFoundError: the ``--data-file`` does not exist.
    """
    from pathlib import Path

    from experiments.studies.label_efficiency.curves import (
        OUTPUTS,
        label_efficiency,
        resolve_rows,
    )
    from experiments.studies.label_efficiency.subsets import labelled_subsets
    from topo_contrastive.utils.extras import require_extra
    from topo_contrastive.utils.files import check_output_possible
    from topo_contrastive.utils.outputs import output_run

    require_extra("matplotlib", "the label-efficiency figure")  # before any work
    task = inputs.config_task(args)
    resolve_rows(args.rows, args.editions)
    common.check_seed_range(args.seed, args.draws + args.pretrain_seeds)
    if not args.resume:
        common.check_out(args.out, args.overwrite, resume_hint=True)
    check_output_possible(args.out)
    data = inputs.load_data(args)
    labels = data.require_labels("label-efficiency")
    # the fractions and draws against the data (too few labels, repeated sizes, more draws
    # than distinct subsets), before --out is touched
    labelled_subsets(labels.numpy(), data.split(args.split)["train"], args.fractions,
                     args.draws, args.seed)  # fmt: skip
    words = sys.argv[1:] if args._argv is None else args._argv
    overrides = {"hidden_channels": args.hidden_channels} if args.hidden_channels else {}
    start = time.perf_counter()
    with output_run(args.out, overwrite=args.overwrite, resume=args.resume, owns=OUTPUTS,
                    resume_hint=True, reads=common.read_files(args)) as work:  # fmt: skip
        result = label_efficiency(
            data, work, task, fractions=args.fractions, draws=args.draws, split=args.split,
            seed=args.seed, pretrain_seeds=args.pretrain_seeds, rows=args.rows,
            editions=args.editions, pretrain_epochs=args.epochs, max_epochs=args.max_epochs,
            classifier=args.classifier, overrides=overrides, device=args.device,
            resume=args.resume, log=None if args.no_progress else common.say,
            progress=lambda n: common.progress(args, n, f"label-efficiency {data.name}", "cell"),
            command=" ".join([PROG, *map(shlex.quote, words)]),
        )  # fmt: skip
    out = Path(args.out).expanduser().absolute()
    print((out / "label_efficiency.md").read_text(encoding="utf-8"))
    common.say_done(args.out, start, result.computed_cells, result.resumed_cells)
    return 0
