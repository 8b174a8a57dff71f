"""``python -m experiments reproduce``: Table 1 on both datasets and Figures 1-2
(:func:`~experiments.reproduce`, with the preset of
:func:`~experiments.presets.adjust_preset`)."""

from __future__ import annotations

import argparse

from experiments import _helpers as h
from experiments.cli import _options


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
    p.add_argument("--out", default=None, type=h.out_path,
                   help="output folder (default: results/full, or results/quick with --quick)")
    p.add_argument(
        "--seeds", type=h.splits_int, default=None,
        help=f"evaluation splits per row, at most {h.MAX_SPLITS:,} (default: 16; 4 with --quick)",
    )  # fmt: skip
    h.add_pretrain_seeds(p, "contrastive row", None, "2 per dataset; 1 with --quick")
    h.add_epochs(
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
    _options.add_out_options(p, out=None, resume="runs")
    _options.add_run_options(p)
    _options.add_data_options(p)
    return p


def pins_numerics(args: argparse.Namespace) -> bool:
    """Whether the run's numbers are pinned (``--quick``: one torch thread, the AVX2 code
    paths of :mod:`topo_contrastive._utils.numerics`), so that it runs in the pinned environment."""
    return bool(args.quick)


def run(args: argparse.Namespace) -> int:
    """Reproduce as ``args`` say and print Table 1; returns the exit status.

    Raises:
        ValueError: an unknown or repeated configuration, dataset or edition, a non-empty
            ``--out`` without ``--overwrite`` or ``--resume`` or an unwritable one (before any
            work), or ``--resume`` into a run of other settings or onto edited records.
    """
    from experiments.presets import adjust_preset
    from experiments.reproduce import OUTPUTS, PRESETS, _selection, draws_figures, reproduce
    from topo_contrastive.training.configs import resolve_dataset_name

    name = "quick" if args.quick else "full"  # unknown and repeated names refused at once
    _, datasets, configs, editions = _selection(name, args.datasets, args.configs, args.editions)
    if args.out is None:
        args.out = "results/quick" if args.quick else "results/full"
    if not args.resume:  # --resume continues the earlier run in --out (checked by reproduce)
        h.check_out(args.out, args.overwrite, resume_hint=True)
    figure2 = args.figure2_dataset
    skip_figure2 = figure2 is not None and figure2.lower() == "none"
    preset = adjust_preset(
        PRESETS[name], configs, datasets, epochs=args.epochs, num_splits=args.seeds,
        pretrain_seeds=args.pretrain_seeds,
        figure2_dataset=None if figure2 is None or skip_figure2 else resolve_dataset_name(figure2),
        figure2=not skip_figure2, figure1=not args.no_figure1,
    )  # fmt: skip
    h.check_seed_range(args.seed, max(preset.num_splits, *preset.pretrain_seeds.values()))
    h.check_output_possible(args.out)  # before any work, after every name was checked
    if draws_figures(preset, datasets):
        h.require_extra("matplotlib", "Figures 1-2 (--no-figure1 --figure2-dataset none skip them)")
    if preset.reduced:
        from experiments.table import reduced_note

        h.say(f"NOTE: reduced settings ({preset.describe(editions)}).")
        for line in reduced_note(f"preset {preset.name!r}"):
            h.say("NOTE: " + line.replace("**", ""))
    args.datasets = datasets  # resolved
    settings = _options.settings(args, rows=configs, splits=preset.num_splits,
                                 seeds=max(preset.pretrain_seeds.values()),
                                 progress=h.progress_enabled(args))  # fmt: skip

    def work(folder):
        reproduce(settings.data.load, settings.replace(out=folder), preset=preset,
                  log=None if settings.progress else h.say)
        return (folder / "table1.md").read_text(encoding="utf-8"), None, None

    return _options.run_in_out(args, OUTPUTS, work)
