"""``python -m experiments missing-measurements``: probes trained on complete edge flows, tested
with a fraction of the edges unobserved (at random or a region), the unobserved entries set to
zero or interpolated
(:func:`~experiments.studies.missing_measurements.missing_measurements_study`),
resumable per dataset and split."""

from __future__ import annotations

import argparse
import time

from topo_contrastive.cli import common, inputs

#: ``--quick``: the settings it takes where the option is not given
QUICK = {"fractions": [0.3], "splits": 1, "epochs": 1}
#: the defaults without ``--quick``
FULL = {"fractions": [0.1, 0.3, 0.5], "splits": 3, "epochs": None}


def _unobserved_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1), got {text!r}") from err
    if not 0 < value < 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1), got {value:g}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``missing-measurements`` subcommand and its options to ``sub``."""
    from experiments._names import MISSING_MODES as MODES
    from topo_contrastive.training.configs import DATASET_NAMES

    p = sub.add_parser(
        "missing-measurements",
        help="edge flows with unobserved edges at test time: the pre-trained encoder and the "
        "reference rows, the missing entries as zeros or interpolated (resumable)",
    )
    p.add_argument("--out", required=True, type=common.out_path, help="output folder")
    p.add_argument(
        "--datasets", nargs="*", default=["trajectory", "ocean"], metavar="NAME",
        help=f"the paper's datasets ({', '.join(DATASET_NAMES)}; default: trajectory ocean; "
        "give the option without a name for none)",
    )  # fmt: skip
    p.add_argument(
        "--networks", nargs="+", default=[], metavar="NAME",
        help="TNTP road networks shipped by pytspl (needs pip install --no-deps pytspl==0.1.5), "
        "e.g. anaheim chicago-sketch, with --trips routed trips each labelled by the side of "
        "a landmark they pass; built once into <data-root>/road_networks (default: none)",
    )  # fmt: skip
    p.add_argument(
        "--data-file", action="append", default=[], metavar="PATH",
        help="a labelled edge-flow file of your own (.npz, the format of the 'Your own data' "
        "docs), named by its stem; repeatable; only read",
    )  # fmt: skip
    p.add_argument(
        "--fractions", type=_unobserved_fraction, nargs="+", default=None, metavar="F",
        help="unobserved fractions of the edges of every test flow, each in (0, 1) "
        "(default: 0.1 0.3 0.5; 0.3 with --quick)",
    )  # fmt: skip
    p.add_argument(
        "--modes", nargs="+", choices=MODES, default=list(MODES),
        help="how the unobserved edges are chosen: random (uniformly) and/or region (the edges "
        "nearest a random node, in hops) (default: both)",
    )  # fmt: skip
    p.add_argument("--splits", type=common.splits_int, default=None,
                   help="random splits of every dataset (default: 3; 1 with --quick)")
    common.add_epochs(p, "pre-training epochs of the encoder",
                      shown="the configuration's; 1 with --quick")  # fmt: skip
    p.add_argument("--trips", type=common.int_between(10, 100_000), default=1000,
                   help="trips per pytspl network (default: 1000)")
    common.add_seed(p, "seed of the trips, the pre-training and the masks")
    p.add_argument(
        "--quick", action="store_true",
        help="a smoke test: 1 split, 1 pre-training epoch, 30 %% of the edges unobserved "
        "(options given explicitly win)",
    )  # fmt: skip
    common.add_resume(p, "cells (dataset x split)")
    common.add_overwrite(p, "is a non-empty folder")
    common.add_run_options(p)
    common.add_data_options(p)
    return p


def _preset(args: argparse.Namespace) -> dict:
    """The fractions, splits and epochs: the options given, else the preset's."""
    preset = QUICK if args.quick else FULL
    return {k: preset[k] if getattr(args, k) is None else getattr(args, k) for k in preset}


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

    from experiments.studies.missing_measurements import (
        OUTPUTS,
        check_study,
        load_study_data,
        missing_measurements_study,
        write_missing,
    )
    from topo_contrastive.training.configs import resolve_dataset_name
    from topo_contrastive.utils.extras import require_extra
    from topo_contrastive.utils.files import check_output_possible, require_file
    from topo_contrastive.utils.outputs import output_run

    require_extra("matplotlib", "the missing-measurements figure")  # before any work
    if args.resume and args.overwrite:
        raise ValueError("--resume keeps the finished cells in --out and --overwrite starts "
                         "over: give one of them")  # fmt: skip
    if not (args.datasets or args.networks or args.data_file):
        raise ValueError("give the data: --datasets NAME ..., --networks NAME ... and/or "
                         "--data-file PATH ...")  # fmt: skip
    for name in args.datasets:
        resolve_dataset_name(name)
    for path in args.data_file:
        require_file(path, "data file")
        inputs.refuse_many_file(args, path)
    st = _preset(args)
    if not args.resume:
        common.check_out(args.out, args.overwrite, resume_hint=True)
    check_output_possible(args.out)
    try:
        items = load_study_data(
            args.datasets, args.networks, args.data_file, data_root=args.data_root,
            trips=args.trips, seed=args.seed, ocean_raw=args.ocean_raw,
            trajectory_points=args.trajectory_points, trajectory_split=args.trajectory_split,
        )  # fmt: skip
    except ModuleNotFoundError as err:  # pytspl
        raise ValueError(f"--networks {' '.join(args.networks)}: {err}") from err
    check_study(items, st["fractions"], args.modes, st["splits"], st["epochs"])
    start = time.perf_counter()
    with output_run(args.out, overwrite=args.overwrite, resume=args.resume, owns=OUTPUTS,
                    resume_hint=True, reads=common.read_files(args)) as work:  # fmt: skip
        summary = missing_measurements_study(
            items, work, fractions=st["fractions"], modes=args.modes, splits=st["splits"],
            epochs=st["epochs"], seed=args.seed, device=args.device,
            progress=lambda n: common.progress(args, n, "missing-measurements", "cell"),
        )  # fmt: skip
        md = write_missing(summary, work)
    print(md)
    common.say_done(args.out, start, summary["computed"], summary["resumed"])
    return 0
