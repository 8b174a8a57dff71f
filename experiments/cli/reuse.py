"""``python -m experiments reuse``: pre-train on the trips of some road networks, probe on one it
never saw (leave-one-network-out; :func:`~experiments.studies.reuse.reuse_study`),
resumable per held-out network and seed."""

from __future__ import annotations

import argparse
import time

from experiments.cli.label_efficiency import _fraction
from topo_contrastive.cli import common, inputs


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``reuse`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "reuse",
        help="leave-one-network-out: an encoder pre-trained on other road networks, probed on "
        "one it never saw, beside in-domain, untrained, supervised and reference rows "
        "(resumable)",
    )
    p.add_argument(
        "--networks", nargs="+", default=[], metavar="NAME",
        help="TNTP road networks shipped by pytspl (needs pip install --no-deps pytspl==0.1.5), "
        "e.g. anaheim chicago-sketch goldcoast; their trips are built once into --data-root",
    )  # fmt: skip
    p.add_argument(
        "--data-file", action="append", default=[], metavar="PATH",
        help="a network of your own: an edge-flow file (.npz, the format of the 'Your own data' "
        "docs, e.g. written by examples/road_networks.py); repeatable; only read",
    )  # fmt: skip
    p.add_argument(
        "--held-out", nargs="+", default=None, metavar="NAME",
        help="the networks held out in turn, by name (a data file's name is its stem; "
        "default: each network in turn); each needs labels",
    )  # fmt: skip
    p.add_argument("--out", required=True, type=common.out_path, help="output folder")
    p.add_argument(
        "--fractions", type=_fraction, nargs="+", default=[0.01, 0.05, 0.1, 1.0],
        help="labelled fractions of the held-out network's training split, in (0, 1] "
        "(default: 0.01 0.05 0.1 1)",
    )  # fmt: skip
    p.add_argument("--draws", type=common.int_between(1, 1000), default=5,
                   help="stratified labelled subsets per fraction below 1 (default: 5)")
    p.add_argument("--seeds", type=common.int_between(1, common.MAX_PRETRAIN_SEEDS), default=2,
                   help="pre-training seeds, each with its own split of the held-out "
                   "network (default: 2)")  # fmt: skip
    common.add_epochs(p, "pre-training epochs", default=5)
    p.add_argument("--label-epochs", type=common.epochs_int, default=None,
                   help="epochs of fine-tuning and of the supervised SCNN (default: "
                   "max(--epochs, 5))")  # fmt: skip
    p.add_argument("--trips", type=common.int_between(10, 100_000), default=400,
                   help="trips per pytspl network (default: 400)")
    p.add_argument("--hidden-channels", type=common.int_between(1, common.MAX_CHANNELS),
                   default=32, help="encoder width (default: 32)")  # fmt: skip
    common.add_seed(p, "base seed of the trips, splits and trainings")
    p.add_argument(
        "--resume", action="store_true",
        help="continue a run in --out: its finished cells (held-out network x seed) are read "
        "back, the rest computed; a folder of other settings is refused, naming them",
    )  # fmt: skip
    common.add_overwrite(p, "is a non-empty folder")
    p.add_argument("--threads", type=common.positive_int, default=None,
                   help="torch CPU threads (default: the cores idle at the start, at least 1)")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress output (a bar on a terminal, else a line every 30 s)")
    p.add_argument("--data-root", default="data",
                   help="folder of the networks' trips and processed datasets (default: ./data)")
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
    from pathlib import Path

    from experiments.studies.reuse import (
        check_study,
        load_networks,
        reuse_study,
        write_reuse,
    )
    from experiments.studies.reuse.report import OUTPUTS
    from topo_contrastive.utils.extras import require_extra
    from topo_contrastive.utils.files import check_output_possible, require_file
    from topo_contrastive.utils.outputs import output_run

    require_extra("matplotlib", "the reuse figure")  # before any work
    if not args.networks and not args.data_file:
        raise ValueError("give the networks: --networks NAME ... and/or --data-file PATH ...")
    for path in args.data_file:
        require_file(path, "data file")
        inputs.refuse_many_file(args, path)
    if not args.resume:
        common.check_out(args.out, args.overwrite, resume_hint=True)
    check_output_possible(args.out)
    networks = load_networks(args.networks, args.data_file, Path(args.data_root) / "reuse",
                             args.trips, args.seed)  # fmt: skip
    check_study(networks, args.held_out, args.fractions, args.draws, args.seeds, args.epochs,
                args.seed)  # fmt: skip
    start = time.perf_counter()
    with output_run(args.out, overwrite=args.overwrite, resume=args.resume, owns=OUTPUTS,
                    resume_hint=True, reads=common.read_files(args)) as work:  # fmt: skip
        summary = reuse_study(
            networks, work, held_out=args.held_out, fractions=args.fractions,
            draws=args.draws, seeds=args.seeds, epochs=args.epochs,
            label_epochs=args.label_epochs, hidden=args.hidden_channels, seed=args.seed,
            progress=lambda n: common.progress(args, n, "reuse", "cell"),
        )  # fmt: skip
        md = write_reuse(summary, work)
    print(md)
    common.say_done(args.out, start, summary["computed"], summary["resumed"])
    return 0
