"""``python -m experiments reuse``: pre-train on the trips of some road networks, probe on one it
never saw (leave-one-network-out; :func:`~experiments.studies.reuse.reuse_study`),
resumable per held-out network and seed."""

from __future__ import annotations

import argparse

from experiments.cli import _options

#: The defaults of the training options.
DEFAULTS = {"fractions": [0.01, 0.05, 0.1, 1.0], "draws": 5, "seeds": 2, "epochs": 5,
            "hidden": 32}  # fmt: skip


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``reuse`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "reuse",
        help="leave-one-network-out: an encoder pre-trained on other road networks, probed on "
        "one it never saw, beside in-domain, untrained, supervised and reference rows "
        "(resumable)",
    )
    _options.add_network_options(p, trips=400)
    p.add_argument(
        "--held-out", nargs="+", default=None, metavar="NAME",
        help="the networks held out in turn, by name (a data file's name is its stem; "
        "default: each network in turn); each needs labels",
    )  # fmt: skip
    _options.add_training_options(p, DEFAULTS)
    _options.add_out_options(p, seed="base seed of the trips, splits and trainings",
                             resume="cells (held-out network x seed)")
    _options.add_run_options(p, device=False)
    _options.add_data_options(p, paper=False)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the study as ``args`` say and print the Markdown report; returns the exit status.

    Raises:
        ValueError: no network given; fewer than two networks; a network given twice (by name
            or by its complex); a held-out name not among them or without labelled trips;
            a fraction too small for a label per class; a non-empty ``--out`` without
            ``--overwrite`` or ``--resume`` (all before ``--out`` is touched).
        FileNotFoundError: a ``--data-file`` does not exist.
    """
    from experiments.studies.reuse import OUTPUTS, check_study, reuse_study, write_reuse

    _options.fill_defaults(args, DEFAULTS)
    settings = _options.settings(args)
    if not args.networks and not args.data_file:
        raise ValueError("give the networks: --networks NAME ... and/or --data-file PATH ...")
    networks = _options.networks(args, settings, "reuse", figure="the reuse figure")
    check_study(networks, settings, args.held_out)

    def work(folder):
        summary = reuse_study(networks, settings.replace(out=folder), args.held_out)
        return write_reuse(summary, folder), summary["computed"], summary["resumed"]

    return _options.run_in_out(args, OUTPUTS, work)
