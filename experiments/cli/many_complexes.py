"""``python -m experiments many-complexes``: the label-efficiency protocol on many complexes,
every sample on a complex of its own
(:func:`~experiments.studies.many_complexes.many_complexes_study`), resumable per seed
and row."""

from __future__ import annotations

import argparse
import time

from experiments.cli.label_efficiency import _fraction
from topo_contrastive.cli import common, inputs

#: What ``--quick`` sets where the option is not given.
QUICK = {"samples": 40, "seeds": 1, "epochs": 1, "hidden": 8, "draws": 2,
         "fractions": [0.25, 1.0]}  # fmt: skip
#: The defaults otherwise.
DEFAULTS = {"samples": 1000, "seeds": 3, "epochs": 20, "hidden": 32, "draws": 5,
            "fractions": [0.01, 0.05, 0.1, 1.0]}  # fmt: skip


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``many-complexes`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "many-complexes",
        help="label efficiency when every sample lives on a complex of its own: encoders "
        "pre-trained without labels, probed and fine-tuned, beside untrained, supervised and "
        "complex-agnostic reference rows (resumable)",
    )
    p.add_argument("--out", required=True, type=common.out_path, help="output folder")
    _add_data_options(p)
    p.add_argument(
        "--rows", nargs="+", default=None, metavar="ROW",
        help="the rows to run, by name, e.g. SSCL_Spec 'supervised SCNN' 'energy fractions' "
        "(quote names with spaces; default: every row that needs no extra, i.e. all but the "
        "TopoModelX rows; an unknown name is refused with the list of rows, which "
        "docs/command_line.md also gives)",
    )  # fmt: skip
    p.add_argument(
        "--fractions", type=_fraction, nargs="+", default=None,
        help="labelled fractions of the training split, each in (0, 1] (default: "
        f"{' '.join(f'{f:g}' for f in DEFAULTS['fractions'])}; --quick: 0.25 1)",
    )  # fmt: skip
    p.add_argument("--draws", type=common.int_between(1, 1000), default=None,
                   help="stratified labelled subsets per fraction below 1 (default: "
                   f"{DEFAULTS['draws']}; --quick: {QUICK['draws']})")  # fmt: skip
    p.add_argument("--seeds", type=common.int_between(1, common.MAX_PRETRAIN_SEEDS),
                   default=None, help="pre-training seeds, each with its own split "
                   f"(default: {DEFAULTS['seeds']}; --quick: {QUICK['seeds']})")  # fmt: skip
    common.add_epochs(p, "pre-training epochs",
                      shown=f"{DEFAULTS['epochs']}; --quick: {QUICK['epochs']}")  # fmt: skip
    p.add_argument("--label-epochs", type=common.epochs_int, default=None,
                   help="epochs of fine-tuning and of the supervised SCNN (default: "
                   "max(--epochs, 5))")  # fmt: skip
    p.add_argument("--hidden", type=common.int_between(1, common.MAX_CHANNELS), default=None,
                   help=f"encoder width (default: {DEFAULTS['hidden']}; --quick: "
                   f"{QUICK['hidden']})")  # fmt: skip
    p.add_argument("--layers", type=common.int_between(1, 16), default=2,
                   help="encoder layers (default: 2)")
    p.add_argument("--batch-size", type=common.int_between(1, 100_000), default=64,
                   help="samples (complexes) per batch (default: 64)")
    p.add_argument("--budget", type=_budget, default=0.3,
                   help="the masks' budget, in (0, 1) (default: 0.3)")
    p.add_argument("--temperature", type=_positive_float, default=0.5,
                   help="the contrastive loss's temperature, > 0 (default: 0.5)")
    common.add_seed(p, "base seed of the default task, the splits and the trainings")
    p.add_argument(
        "--resume", action="store_true",
        help="continue a run in --out: its finished cells (seed x row) are read back, the "
        "rest computed; a folder of other settings (other rows included) is refused, naming "
        "them",
    )  # fmt: skip
    common.add_overwrite(p, "is a non-empty folder")
    p.add_argument(
        "--quick", action="store_true",
        help="a smoke test: 40 samples, 1 seed, 1 epoch, width 8, 2 draws, fractions 0.25 1, "
        "one torch thread (options given explicitly win)",
    )  # fmt: skip
    p.add_argument("--threads", type=common.positive_int, default=None,
                   help="torch CPU threads (default: the cores idle at the start, at least 1; "
                   "--quick: 1)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress output (a bar on a terminal, else a line every 30 s)")
    return p


def _add_data_options(p: argparse.ArgumentParser) -> None:
    """The ``data`` group: the default task's size, or networks of one's own."""
    g = p.add_argument_group("data (default: the library's RandomComplexTrajectories)")
    g.add_argument(
        "--samples", type=common.int_at_least(10, "an integer >= 10", common.MAX_TRAJECTORY),
        default=None,
        help="samples of the default task, each on a new random complex (default: "
        f"{DEFAULTS['samples']}; --quick: {QUICK['samples']}); not with --data-file/--networks",
    )  # fmt: skip
    g.add_argument(
        "--data-file", action="append", default=[], metavar="PATH",
        help="a network of your own with labels: an edge-flow file (.npz, the format of the "
        "'Your own data' docs); repeatable: the samples of every file (and of --networks) are "
        "pooled as one dataset, each on its own file's complex; only read",
    )  # fmt: skip
    g.add_argument(
        "--networks", nargs="+", default=[], metavar="NAME",
        help="TNTP road networks shipped by pytspl (needs pip install --no-deps pytspl==0.1.5), "
        "e.g. anaheim chicago-sketch; their labelled trips are built once into --data-root "
        "and pooled with the data files",
    )  # fmt: skip
    g.add_argument("--trips", type=common.int_between(10, 100_000), default=400,
                   help="trips per pytspl network (default: 400)")
    g.add_argument("--data-root", default="data",
                   help="folder of the generated and processed datasets (default: ./data)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from err
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {value:g}")
    return value


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a budget in (0, 1), got {text!r}") from err
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a budget in (0, 1), got {value:g}")
    return value


def _check_names(args: argparse.Namespace) -> None:
    """Rows and data names: known, and each given once (before anything is loaded)."""
    from pathlib import Path

    from experiments.studies.many_complexes.rows import ROWS
    from topo_contrastive.utils.files import require_file

    if args.rows is not None:
        unknown = [r for r in args.rows if r not in ROWS]
        if unknown:
            raise ValueError(
                f"--rows: unknown row(s) {', '.join(map(repr, unknown))}; the rows are "
                f"{'; '.join(ROWS)}"
            )
        if len(set(args.rows)) != len(args.rows):
            raise ValueError(f"--rows names a row twice: {args.rows}")
    pooled = bool(args.data_file or args.networks)
    if pooled and args.samples is not None:
        raise ValueError(
            f"--samples {args.samples} sizes the default task and does nothing with "
            "--data-file/--networks: drop --samples"
        )
    if args.resume and args.overwrite:
        raise ValueError(
            "--resume keeps the finished cells in --out and --overwrite starts over: give one "
            "of them"
        )
    seen: dict[str, str] = {}
    given = [(n, f"--networks {n}") for n in args.networks]
    given += [(Path(f).stem, f"--data-file {f}") for f in args.data_file]
    for name, source in given:
        if name in seen:
            raise ValueError(
                f"{source} has the same name as {seen[name]} ({name!r}): give each network "
                "once (a data file is named by its stem; rename a copy)"
            )
        seen[name] = source
    for path in args.data_file:
        require_file(path, "data file")
        inputs.refuse_many_file(args, path)


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
    from pathlib import Path

    from experiments.studies.many_complexes import (
        check_study,
        many_complexes_study,
        pool_networks,
        trajectory_samples,
        write_many_complexes,
    )
    from experiments.studies.many_complexes.report import OUTPUTS
    from topo_contrastive.utils.extras import require_extra
    from topo_contrastive.utils.files import check_output_possible
    from topo_contrastive.utils.outputs import output_run

    require_extra("matplotlib", "the many-complexes figure")  # before any work
    _check_names(args)
    values = {k: getattr(args, k) for k in DEFAULTS}
    for k, v in values.items():
        if v is None:
            values[k] = (QUICK if args.quick else DEFAULTS)[k]
    common.check_seed_range(args.seed, 1000 + values["seeds"])
    if not args.resume:
        common.check_out(args.out, args.overwrite, resume_hint=True)
    check_output_possible(args.out)
    root = Path(args.data_root).expanduser()
    if args.data_file or args.networks:
        from experiments.studies.reuse import load_networks

        networks = load_networks(args.networks, args.data_file, root / "reuse", args.trips,
                                 args.seed)  # fmt: skip
        dataset = pool_networks(networks)
        data = {"networks": {n.name: {"samples": len(n.dataset), "complex": n.fingerprint}
                             for n in networks}}  # fmt: skip
    else:
        dataset = trajectory_samples(root / "many_complexes", values["samples"], args.seed)
        data = {"dataset": "RandomComplexTrajectories"}
    check_study(dataset, args.rows, values["fractions"], values["draws"], values["seeds"],
                values["epochs"], args.seed)  # fmt: skip
    start = time.perf_counter()
    with output_run(args.out, overwrite=args.overwrite, resume=args.resume, owns=OUTPUTS,
                    resume_hint=True, reads=common.read_files(args)) as work:  # fmt: skip
        summary = many_complexes_study(
            dataset, work, rows=args.rows, fractions=values["fractions"],
            draws=values["draws"], seeds=values["seeds"], epochs=values["epochs"],
            label_epochs=args.label_epochs, hidden=values["hidden"], layers=args.layers,
            batch_size=args.batch_size, budget=args.budget, temperature=args.temperature,
            seed=args.seed, data=data,
            progress=lambda n: common.progress(args, n, "many-complexes", "cell"),
        )  # fmt: skip
        md = write_many_complexes(summary, work)
    print(md)
    common.say_done(args.out, start, summary["computed"], summary["resumed"])
    return 0
