"""``python -m experiments missing-measurements``: probes trained on complete edge flows, tested
with a fraction of the edges unobserved (at random or a region), the unobserved entries set to
zero or interpolated
(:func:`~experiments.studies.missing_measurements.missing_measurements_study`),
resumable per dataset and split."""

from __future__ import annotations

import argparse

from experiments.cli import _options

#: ``--quick``: the settings it takes where the option is not given
QUICK = {"fractions": [0.3], "splits": 1, "epochs": 1}
#: the defaults without ``--quick``
FULL = {"fractions": [0.1, 0.3, 0.5], "splits": 3, "epochs": None}


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``missing-measurements`` subcommand and its options to ``sub``."""
    from experiments._helpers import add_epochs, splits_int
    from experiments._names import MISSING_MODES as MODES
    from topo_contrastive.training.configs import DATASET_NAMES

    p = sub.add_parser(
        "missing-measurements",
        help="edge flows with unobserved edges at test time: the pre-trained encoder and the "
        "reference rows, the missing entries as zeros or interpolated (resumable)",
    )
    p.add_argument(
        "--datasets", nargs="*", default=["trajectory", "ocean"], metavar="NAME",
        help=f"the paper's datasets ({', '.join(DATASET_NAMES)}; default: trajectory ocean; "
        "give the option without a name for none)",
    )  # fmt: skip
    _options.add_network_options(p, trips=1000)
    p.add_argument(
        "--fractions", type=_options.fraction(one=False), nargs="+", default=None,
        metavar="F", help="unobserved fractions of the edges of every test flow, each in "
        "(0, 1) (default: 0.1 0.3 0.5; 0.3 with --quick)",
    )  # fmt: skip
    p.add_argument(
        "--modes", nargs="+", choices=MODES, default=list(MODES),
        help="how the unobserved edges are chosen: random (uniformly) and/or region (the edges "
        "nearest a random node, in hops) (default: both)",
    )  # fmt: skip
    p.add_argument("--splits", type=splits_int, default=None,
                   help="random splits of every dataset (default: 3; 1 with --quick)")
    add_epochs(p, "pre-training epochs of the encoder", shown="the configuration's; 1 with --quick")
    p.add_argument(
        "--quick", action="store_true",
        help="a smoke test: 1 split, 1 pre-training epoch, 30 %% of the edges unobserved "
        "(options given explicitly win)",
    )  # fmt: skip
    _options.add_out_options(p, seed="seed of the trips, the pre-training and the masks",
                             resume="cells (dataset x split)")
    _options.add_run_options(p)
    _options.add_data_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the study as ``args`` say and print the Markdown report; returns the exit status.

    Raises:
        ValueError: no dataset given; an unknown dataset; two datasets of the same name; a
            data file without labels; a fraction given twice; ``--resume`` with
            ``--overwrite``; a non-empty ``--out`` without ``--overwrite`` or ``--resume``;
            ``--resume`` into a run of other settings (all before ``--out`` is touched);
            ``--networks`` without pytspl installed.
        FileNotFoundError: a ``--data-file`` does not exist; a network pytspl lacks.
    """
    from experiments._helpers import refuse_many_file, require_extra, require_file
    from experiments.studies.missing_measurements import (
        OUTPUTS,
        check_study,
        load_study_data,
        missing_measurements_study,
        write_missing,
    )
    from topo_contrastive.training.configs import resolve_dataset_name

    require_extra("matplotlib", "the missing-measurements figure")  # before any work
    if not (args.datasets or args.networks or args.data_file):
        raise ValueError("give the data: --datasets NAME ..., --networks NAME ... and/or "
                         "--data-file PATH ...")  # fmt: skip
    for name in args.datasets:
        resolve_dataset_name(name)
    for path in args.data_file:
        require_file(path, "data file")
        refuse_many_file(args, path)
    _options.fill_defaults(args, FULL, QUICK)
    settings = _options.settings(args)
    _options.check_out(args)
    try:
        items = load_study_data(settings.data, args.seed)
    except ModuleNotFoundError as err:  # pytspl
        raise ValueError(f"--networks {' '.join(args.networks)}: {err}") from err
    check_study(items, settings, args.modes)

    def work(folder):
        summary = missing_measurements_study(items, settings.replace(out=folder), args.modes)
        return write_missing(summary, folder), summary["computed"], summary["resumed"]

    return _options.run_in_out(args, OUTPUTS, work)
