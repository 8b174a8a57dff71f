"""``python -m experiments reproduce``: Table 1 on both datasets and Figures 1-2
(:func:`~experiments.reproduce`, with the preset of
:func:`~experiments.presets.adjust_preset`)."""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from experiments import PROG
from topo_contrastive.cli import common, inputs


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``reproduce`` subcommand and its options to ``sub``."""
    from topo_contrastive.training.configs import CONFIG_NAMES, DATASET_NAMES, EDITIONS

    p = sub.add_parser(
        "reproduce", help="Table 1 (both editions, reference rows) on both datasets, Figures 1-2"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="reduced settings (a few minutes on 2 CPU cores; NOT the paper's protocol)",
    )
    p.add_argument(
        "--out",
        default=None,
        type=common.out_path,
        help="output folder (default: results/full, or results/quick with --quick)",
    )
    common.add_seed(p)
    p.add_argument(
        "--seeds",
        type=common.splits_int,
        default=None,
        help=f"evaluation splits per row, at most {common.MAX_SPLITS:,} (default: 16; 4 with "
        "--quick)",
    )
    common.add_pretrain_seeds(p, "contrastive row", None, "2 per dataset; 1 with --quick")
    common.add_epochs(
        p, "epochs of every contrastive run and maximum epochs of the supervised SCNN",
        shown="the configurations'; fewer with --quick",
    )  # fmt: skip
    p.add_argument(
        "--datasets", nargs="+", default=list(DATASET_NAMES), help="datasets (default: both)"
    )
    p.add_argument("--configs", nargs="+", default=list(CONFIG_NAMES), help="rows (default: all)")
    p.add_argument(
        "--figure2-dataset",
        default=None,
        help="dataset of Figure 2's sweep (default: ocean; 'none' to skip it)",
    )
    p.add_argument("--no-figure1", action="store_true", help="skip Figure 1 (embedding distances)")
    p.add_argument(
        "--editions",
        nargs="+",
        default=None,
        help=f"editions of Table 1: {', '.join(EDITIONS)} (default: both; 'hodge' is the "
        "HodgeReadout edition)",
    )
    common.add_resume(p, "runs")
    common.add_overwrite(p, "is a non-empty folder")
    common.add_run_options(p)
    common.add_data_options(p)
    return p


def pins_numerics(args: argparse.Namespace) -> bool:
    """Whether the run's numbers are pinned (``--quick``: one torch thread, the AVX2 code
    paths of :mod:`topo_contrastive.utils.numerics`), so that it runs in the pinned environment."""
    return bool(args.quick)


def run(args: argparse.Namespace) -> int:
    """Reproduce as ``args`` say and print Table 1; returns the exit status.

    Raises:
        ValueError: an unknown or repeated configuration, dataset or edition, a non-empty
            ``--out`` without ``--overwrite`` or ``--resume`` or an unwritable one (before any
            work), or ``--resume`` into a run of other settings or onto edited records.
    """
    from pathlib import Path

    from experiments.presets import adjust_preset
    from experiments.reproduce import OUTPUTS, PRESETS, _selection, draws_figures, reproduce
    from topo_contrastive.training.configs import resolve_dataset_name
    from topo_contrastive.utils.files import check_output_possible
    from topo_contrastive.utils.outputs import output_run

    name = "quick" if args.quick else "full"  # unknown and repeated names refused at once
    _, datasets, configs, editions = _selection(name, args.datasets, args.configs, args.editions)
    if args.out is None:
        args.out = "results/quick" if args.quick else "results/full"
    if not args.resume:  # --resume continues the earlier run in --out (checked by reproduce)
        common.check_out(args.out, args.overwrite, resume_hint=True)
    figure2 = args.figure2_dataset
    skip_figure2 = figure2 is not None and figure2.lower() == "none"
    preset = adjust_preset(
        PRESETS[name],
        configs,
        datasets,
        epochs=args.epochs,
        num_splits=args.seeds,
        pretrain_seeds=args.pretrain_seeds,
        figure2_dataset=None if figure2 is None or skip_figure2 else resolve_dataset_name(figure2),
        figure2=not skip_figure2,
        figure1=not args.no_figure1,
    )
    common.check_seed_range(args.seed, max(preset.num_splits, *preset.pretrain_seeds.values()))
    check_output_possible(args.out)  # before any work, after every name was checked
    if draws_figures(preset, datasets):
        from topo_contrastive.utils.extras import require_extra

        require_extra("matplotlib", "Figures 1-2 (--no-figure1 --figure2-dataset none skip them)")
    if preset.reduced:
        from experiments.table import reduced_note

        common.say(f"NOTE: reduced settings ({preset.describe(editions)}).")
        for line in reduced_note(f"preset {preset.name!r}"):
            common.say("NOTE: " + line.replace("**", ""))
    words = sys.argv[1:] if args._argv is None else args._argv
    start = time.perf_counter()
    show_bar = common.progress_enabled(args)
    with output_run(args.out, overwrite=args.overwrite, resume=args.resume, owns=OUTPUTS,
                    resume_hint=True, reads=common.read_files(args)) as work:  # fmt: skip
        reproduce(
            lambda name: inputs.load(args, name),
            work,
            preset=preset,
            dataset_names=datasets,
            config_names=configs,
            seed=args.seed,
            device=args.device,
            progress=show_bar,
            command=" ".join([PROG, *map(shlex.quote, words)]),
            log=None if show_bar else common.say,
            editions=args.editions,
            resume=args.resume,
        )
    out = Path(args.out).expanduser().absolute()
    print((out / "table1.md").read_text(encoding="utf-8"))
    common.say(f"done in {time.perf_counter() - start:.0f} s; outputs in {out}")
    return 0
