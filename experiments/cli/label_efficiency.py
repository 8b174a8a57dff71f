"""``python -m experiments label-efficiency``: test accuracy against the labelled fraction of the
training split for pre-trained encoders (probed and fine-tuned), the fine-tune control, the
supervised SCNN and the reference rows; resumable
(:func:`~experiments.studies.label_efficiency.label_efficiency`)."""

from __future__ import annotations

import argparse

from experiments.cli import _options


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``label-efficiency`` subcommand and its options to ``sub``."""
    from experiments import _helpers as h
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
    h.add_data_choice(p)
    p.add_argument(
        "--fractions", type=_options.fraction(), nargs="+", default=list(DEFAULT_FRACTIONS),
        help="labelled fractions of the training split, in (0, 1], each giving another number "
        f"of labels (default: {' '.join(f'{f:g}' for f in DEFAULT_FRACTIONS)})",
    )  # fmt: skip
    p.add_argument(
        "--draws", type=h.int_between(1, MAX_DRAWS), default=DEFAULT_DRAWS,
        help=f"stratified draws per fraction, at most {MAX_DRAWS:,} and at most the distinct "
        f"subsets of every fraction below 1 (default: {DEFAULT_DRAWS})",
    )  # fmt: skip
    p.add_argument("--split", type=h.seed_int, default=0, help="the standard split (default: 0)")
    h.add_pretrain_seeds(p, "method and edition", 1, "1")
    p.add_argument(
        "--rows", nargs="+", default=None,
        help=f"rows: kinds ({', '.join(ROW_KINDS)}) or keys such as finetune:SCL:paper "
        "(default: all)",
    )  # fmt: skip
    p.add_argument("--editions", nargs="+", default=list(EDITIONS),
                   help=f"editions of the encoder rows: {', '.join(EDITIONS)} (default: both)")
    h.add_epochs(p, "pre-training epochs", shown="the configurations'")
    p.add_argument(
        "--max-epochs", type=h.epochs_int, default=None,
        help="largest epoch count of fine-tuning and the supervised SCNN (default: 40 and the "
        "configuration's 200)",
    )  # fmt: skip
    h.add_hidden_channels(p, "encoder width of every row", "the configurations'")
    p.add_argument(
        "--classifier", choices=CLASSIFIERS, default="ridge",
        help="the low-label probe's classifier: ridge (default: a ridge classifier, the scaling "
        "and its penalty chosen by 3-fold CV with one SVD per fold and scaling for the whole "
        "penalty path), logistic (logistic regression, C by the same CV, a fit per grid point) "
        "or svm (LinearSVC, likewise)",
    )  # fmt: skip
    _options.add_out_options(p)
    _options.add_run_options(p)
    _options.add_data_options(p)
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
    from experiments import _helpers as h
    from experiments.studies.label_efficiency.curves import (
        OUTPUTS,
        label_efficiency,
        resolve_rows,
    )
    from experiments.studies.label_efficiency.subsets import labelled_subsets

    h.require_extra("matplotlib", "the label-efficiency figure")  # before any work
    task = h.config_task(args)
    resolve_rows(args.rows, args.editions)
    h.check_seed_range(args.seed, args.draws + args.pretrain_seeds)
    _options.check_out(args)
    data = h.load_data(args)
    labels = data.require_labels("label-efficiency")
    # the fractions and draws against the data (too few labels, repeated sizes, more draws
    # than distinct subsets), before --out is touched
    labelled_subsets(labels.numpy(), data.split(args.split)["train"], args.fractions,
                     args.draws, args.seed)  # fmt: skip
    settings = _options.settings(args, seeds=args.pretrain_seeds, label_epochs=args.max_epochs,
                                 hidden=args.hidden_channels)  # fmt: skip

    def work(folder):
        result = label_efficiency(data, settings.replace(out=folder), task, args.classifier,
                                  args.split)  # fmt: skip
        markdown = (folder / "label_efficiency.md").read_text(encoding="utf-8")
        return markdown, result.computed_cells, result.resumed_cells

    return _options.run_in_out(args, OUTPUTS, work)
