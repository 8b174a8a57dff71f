"""``python -m experiments many-complexes``: the label-efficiency protocol on many complexes,
every sample on a complex of its own
(:func:`~experiments.studies.many_complexes.many_complexes_study`), resumable per seed
and row."""

from __future__ import annotations

import argparse

from experiments.cli import _options

#: What ``--quick`` sets where the option is not given.
QUICK = {"samples": 40, "seeds": 1, "epochs": 1, "hidden": 8, "draws": 2,
         "fractions": [0.25, 1.0]}  # fmt: skip
#: The defaults otherwise.
DEFAULTS = {"samples": 1000, "seeds": 3, "epochs": 20, "hidden": 32, "draws": 5,
            "fractions": [0.01, 0.05, 0.1, 1.0]}  # fmt: skip


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``many-complexes`` subcommand and its options to ``sub``."""
    from experiments._helpers import MAX_TRAJECTORY, int_at_least

    p = sub.add_parser(
        "many-complexes",
        help="label efficiency when every sample lives on a complex of its own: encoders "
        "pre-trained without labels, probed and fine-tuned, beside untrained, supervised and "
        "complex-agnostic reference rows (resumable)",
    )
    g = p.add_argument_group("data (default: the library's RandomComplexTrajectories)")
    g.add_argument(
        "--samples", type=int_at_least(10, "an integer >= 10", MAX_TRAJECTORY), default=None,
        help="samples of the default task, each on a new random complex (default: "
        f"{DEFAULTS['samples']}; --quick: {QUICK['samples']}); not with --data-file/--networks",
    )  # fmt: skip
    _options.add_network_options(g, trips=400)
    _options.add_data_options(g, paper=False)
    p.add_argument(
        "--rows", nargs="+", default=None, metavar="ROW",
        help="the rows to run, by name, e.g. SSCL_Spec 'supervised SCNN' 'energy fractions' "
        "(quote names with spaces; default: every row that needs no extra, i.e. all but the "
        "TopoModelX rows; an unknown name is refused with the list of rows, which "
        "docs/command_line.md also gives)",
    )  # fmt: skip
    _options.add_training_options(p, DEFAULTS, QUICK)
    _options.add_out_options(p, seed="base seed of the default task, the splits and the "
                             "trainings", resume="cells (seed x row)")
    _options.add_run_options(p, device=False)
    p.add_argument(
        "--quick", action="store_true",
        help="a smoke test: 40 samples, 1 seed, 1 epoch, width 8, 2 draws, fractions 0.25 1, "
        "one torch thread (options given explicitly win)",
    )  # fmt: skip
    return p


def _check_names(args: argparse.Namespace) -> None:
    """Rows and data names: known, and each given once (before anything is loaded)."""
    from pathlib import Path

    from experiments.studies.many_complexes.rows import ROWS
    from experiments.study import check_names

    if args.rows is not None:
        unknown = [r for r in args.rows if r not in ROWS]
        if unknown:
            raise ValueError(f"--rows: unknown row(s) {', '.join(map(repr, unknown))}; the rows "
                             f"are {'; '.join(ROWS)}")  # fmt: skip
        if len(set(args.rows)) != len(args.rows):
            raise ValueError(f"--rows names a row twice: {args.rows}")
    if (args.data_file or args.networks) and args.samples is not None:
        raise ValueError(f"--samples {args.samples} sizes the default task and does nothing "
                         "with --data-file/--networks: drop --samples")  # fmt: skip
    check_names([(n, f"--networks {n}") for n in args.networks]
                + [(Path(f).stem, f"--data-file {f}") for f in args.data_file], "network")


def run(args: argparse.Namespace) -> int:
    """Run the study as ``args`` say and print the Markdown report; returns the exit status.

    Raises:
        ValueError: an unknown or repeated row; a network named twice; ``--samples`` with
            pooled data; ``--resume`` with ``--overwrite``; a data file without labels, a
            network without labelled trips, a single class; a fraction too small for a
            label per class; a non-empty ``--out`` without ``--overwrite`` or ``--resume``
            (all before ``--out`` is touched).
        FileNotFoundError: a ``--data-file`` does not exist.
    """
    from experiments._helpers import check_seed_range
    from experiments.studies.many_complexes import (
        OUTPUTS,
        check_study,
        many_complexes_study,
        pool_networks,
        trajectory_samples,
        write_many_complexes,
    )

    _check_names(args)
    pooled = bool(args.data_file or args.networks)
    _options.fill_defaults(args, DEFAULTS, QUICK)
    settings = _options.settings(args)
    check_seed_range(args.seed, 1000 + args.seeds)
    if pooled:
        networks = _options.networks(args, settings, "reuse", "the many-complexes figure")
        dataset = pool_networks(networks)
        data = {"networks": {n.name: {"samples": len(n.dataset), "complex": n.fingerprint}
                             for n in networks}}  # fmt: skip
    else:
        _options.check_out(args, "the many-complexes figure")
        dataset = trajectory_samples(settings.data.root / "many_complexes", args.samples,
                                     args.seed)  # fmt: skip
        data = {"dataset": "RandomComplexTrajectories"}
    check_study(dataset, settings)

    def work(folder):
        summary = many_complexes_study(dataset, settings.replace(out=folder), data)
        return write_many_complexes(summary, folder), summary["computed"], summary["resumed"]

    return _options.run_in_out(args, OUTPUTS, work)
