"""Options of ``topo-contrastive`` that contradict each other, refused before any work.

argparse checks each option alone (types, choices, required ones); what it cannot see is an
option that another makes meaningless, which would otherwise be ignored without a word:
``--tuned-for`` without ``--data-file``, ``--readout mean`` with ``--edition hodge`` (whose
readout is ``hodge``), ``--trajectory-points`` with a data file or the ocean task, a flag
given twice (``--hidden-channels`` and ``--set hidden_channels=...``), ``--resume`` with
``--overwrite``. :func:`given_options` tells which options the command line named (not
their defaults); :func:`check_conflicts` raises ``ValueError`` naming both options.

Imports neither torch nor numpy.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

# options that build one of the paper's datasets, by the dataset they apply to
_DATASET_OPTIONS = {
    "ocean_raw": ("--ocean-raw", "ocean"),
    "trajectory_points": ("--trajectory-points", "trajectory"),
    "trajectory_split": ("--trajectory-split", "trajectory"),
}
# pretrain: dedicated flags and the --set field each one sets
_SET_TWICE = {
    "hidden_channels": "--hidden-channels",
    "epochs": "--epochs",
    "readout": "--readout",
}


def _suppress_defaults(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _suppress_defaults(sub)
        elif action.dest != "help":
            action.default = argparse.SUPPRESS


def given_options(words: Sequence[str], parser: argparse.ArgumentParser) -> set[str]:
    """The ``dest`` names of the options that ``words`` (a valid command line of ``parser``)
    gives explicitly, abbreviations included (``--tuned ocean`` gives ``tuned_for``).
    ``parser`` is changed (its defaults removed): pass a fresh one."""
    _suppress_defaults(parser)
    return set(vars(parser.parse_args(list(words))))


def _dataset(name: str | None) -> str | None:
    """The resolved paper dataset, or ``None`` for an unknown name (refused later with the
    usual message)."""
    from topo_contrastive.training.configs import resolve_dataset_name

    if name is None:
        return None
    try:
        return resolve_dataset_name(name)
    except (TypeError, ValueError):
        return None


def _check_dataset_options(args: argparse.Namespace, given: set[str]) -> None:
    """Options that build a paper dataset: not with ``--data-file``, nor for another task."""
    named = [d for d in _DATASET_OPTIONS if d in given]
    if not named:
        return
    if getattr(args, "data_file", None) is not None:
        flag = _DATASET_OPTIONS[named[0]][0]
        raise ValueError(
            f"{flag} builds one of the paper's datasets and does nothing with --data-file "
            f"'{args.data_file}': drop {flag}, or use --dataset"
        )
    if hasattr(args, "datasets"):  # reproduce
        chosen = {_dataset(d) for d in args.datasets}
        shown = f"--datasets {' '.join(args.datasets)}"
    else:
        chosen = {_dataset(getattr(args, "dataset", None))}
        shown = f"--dataset {getattr(args, 'dataset', None)}"
    if None in chosen:
        return  # an unknown dataset name: refused with the list of names later
    for dest in named:
        flag, task = _DATASET_OPTIONS[dest]
        if task not in chosen:
            raise ValueError(
                f"{flag} applies to the {task} task, which {shown} does not run: drop {flag}"
            )


def _check_edition_readout(args: argparse.Namespace, given: set[str]) -> None:
    if "readout" not in given or not hasattr(args, "edition"):
        return
    from topo_contrastive.training.configs import resolve_edition

    try:
        edition = resolve_edition(args.edition)
    except (TypeError, ValueError):
        return  # refused with the list of editions later
    if edition == "hodge" and args.readout != "hodge":
        raise ValueError(
            f"--edition hodge is the HodgeReadout edition (its readout is hodge), but --readout "
            f"{args.readout} asks for another: use --edition paper --readout {args.readout}, or "
            "drop --readout"
        )


def _set_fields(items: Sequence[str]) -> set[str]:
    return {item.split("=", 1)[0].strip() for item in items if "=" in item}


def check_conflicts(args: argparse.Namespace, given: set[str]) -> None:
    """Refuse options that contradict each other or that another option makes meaningless.

    Args:
        args: the parsed command line.
        given: :func:`given_options` of it.

    Raises:
        ValueError: naming the two options (or the option and what makes it meaningless).
    """
    if "tuned_for" in given and getattr(args, "data_file", None) is None:
        raise ValueError(
            f"--tuned-for applies to --data-file only: with --dataset {args.dataset} the "
            f"configuration is the one tuned for {args.dataset}; drop --tuned-for "
            f"{args.tuned_for}"
        )
    _check_dataset_options(args, given)
    _check_edition_readout(args, given)
    command = args.command
    if command == "pretrain" and "set" in given:
        for field in sorted(_set_fields(args.set) & set(_SET_TWICE)):
            flag = _SET_TWICE[field]
            if field in given:
                raise ValueError(
                    f"{flag} and --set {field}=... both set {field}: give one of them"
                )
    if command == "evaluate":
        if "edition" in given and not args.config:
            raise ValueError(
                f"--edition {args.edition} selects the edition of --config, which is not "
                "given: add --config NAME, or drop --edition"
            )
        if "overwrite" in given and args.out is None:
            raise ValueError(
                "--overwrite applies to --out, which is not given: add --out FILE, or drop "
                "--overwrite"
            )
    if command in ("reproduce", "label-efficiency") and args.resume and args.overwrite:
        raise ValueError(
            "--resume keeps the finished runs in --out and --overwrite starts over: give "
            "one of them"
        )
    if command == "reproduce":
        fig2 = args.figure2_dataset
        if fig2 is not None and fig2.strip().lower() != "none":
            chosen = {_dataset(d) for d in args.datasets}
            if None not in chosen and _dataset(fig2) is not None and _dataset(fig2) not in chosen:
                raise ValueError(
                    f"--figure2-dataset {fig2} is not among --datasets "
                    f"{' '.join(args.datasets)}, so Figure 2 would be skipped: add it to "
                    "--datasets, or pass --figure2-dataset none"
                )
    if command == "search" and args.eval_epochs:
        if "epochs" in given:
            raise ValueError(
                f"--epochs {args.epochs} is unused with --eval-epochs (each run lasts "
                f"max(--eval-epochs) = {max(args.eval_epochs)} epochs): give one of them"
            )
