"""The ``topo-contrastive`` command line: pre-train, evaluate and embed on one's own data.

Subcommands:

``pretrain``
    contrastive pre-training of one configuration on one dataset; writes ``encoder.pt``
    (weights only, atomically), ``pretrain.json`` (``"complete": false`` from the start of
    training, ``true`` at the end) and, last, the marker ``COMPLETE``. Runs under ``torchrun``
    with DistributedDataParallel (rank 0 alone writes).
``evaluate``
    linear-SVM (or ridge) evaluation of a saved encoder over several random splits, with the
    reference rows on the same splits.
``embed``
    the embeddings ``[S, D]`` of every sample by a saved encoder (``.npz`` and ``.csv``).

They take one of the paper's datasets (``--dataset``) or an edge-flow file of one's own
(``--data-file flows.npz``, the format of :class:`~topo_contrastive.datasets.EdgeFlows`;
labels are needed by ``evaluate`` only).

Every command checks its arguments and inputs before it touches ``--out``, holds a lock on
``--out`` while it writes (a second run into it is refused, naming the holder) and, with
``--overwrite`` over an earlier result, writes the new one beside it and swaps it in only
once complete (``topo_contrastive/_utils/outputs.py``; docs/guarantees.md).

Run ``topo-contrastive <subcommand> --help`` for the options. Also runs as
``python -m topo_contrastive.cli``. The paper's reproduction and the studies are commands of
the ``experiments/`` folder beside the package (``python -m experiments --help`` from a
clone), built with :func:`main` and the shared option groups.

The package only parses and dispatches: each subcommand is one module here (its options in
``add_parser``, and ``run``, which turns them into calls of :mod:`topo_contrastive.training`
and :mod:`topo_contrastive.evaluation`, chiefly :mod:`topo_contrastive.cli._runs`); the
options they share are groups in :mod:`~topo_contrastive.cli._common`. Nothing here imports
torch or numpy at import time: ``--help`` answers at once, and a command whose numbers are
pinned re-executes its process in the pinned environment
(:func:`topo_contrastive._utils.numerics.restart_pinned`) before loading them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType

from topo_contrastive._utils.extras import MissingExtraError
from topo_contrastive.cli import _common as common
from topo_contrastive.cli import embed, evaluate, pretrain
from topo_contrastive.cli._conflicts import check_conflicts, given_options

__all__ = ["COMMANDS", "build_parser", "main"]

#: the subcommands in the order of ``--help``: name -> module with ``add_parser`` and ``run``
COMMANDS = {"pretrain": pretrain, "evaluate": evaluate, "embed": embed}

_DESCRIPTION = (
    "Hodge-aware contrastive learning (Moellers et al., ICASSP 2024): pre-train, evaluate "
    "and embed on your own edge flows."
)


def build_parser(
    commands: Mapping[str, ModuleType] | None = None,
    prog: str | None = None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """The argument parser of ``topo-contrastive`` (the subcommands ``pretrain``,
    ``evaluate`` and ``embed``), or of another program made of such subcommands.

    Args:
        commands: name -> module with ``add_parser(subparsers)`` and ``run(args)``, in the
            order of ``--help`` (default: :data:`COMMANDS`).
        prog: the program's name in usage lines (default ``"topo-contrastive"``).
        description: the first line of ``--help`` (default: this command line's).
    """
    from topo_contrastive import __version__

    parser = argparse.ArgumentParser(
        prog=prog or common.PROG, description=description or _DESCRIPTION
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in (COMMANDS if commands is None else commands).values():
        module.add_parser(sub)
    return parser


def main(
    argv: Sequence[str] | None = None,
    commands: Mapping[str, ModuleType] | None = None,
    prog: str | None = None,
    description: str | None = None,
) -> int:
    """Entry point of ``topo-contrastive`` (or of another program made of such subcommands:
    ``experiments/`` beside the package); returns the exit status.

    Bad input (an unknown configuration or dataset, options that contradict each other, a
    mismatching checkpoint, an unwritable output folder, a missing ocean file, an ``--out``
    held by another run) prints ``PROG: error: ...`` to stderr (``topo-contrastive: error: ...``)
    and returns 2,
    without writing a result file. A write that fails during the run (``OSError``: a full
    disk) prints the error and returns 1; an earlier result in ``--out`` is left as it was.
    Words argparse refuses (an unknown option, ``--epochs 0``) print its usage and message
    and raise ``SystemExit(2)``.

    A command whose numbers are pinned (``reproduce --quick``: one torch thread and the AVX2
    code paths, :mod:`topo_contrastive._utils.numerics`) needs the pinned environment from the
    start of its process: run as a program (``argv`` is ``None``), it re-executes the process
    in that environment once, before anything else
    (:func:`~topo_contrastive._utils.numerics.restart_pinned`); called with ``argv`` it runs in
    the caller's process as it is, and its first line says whether the code paths are pinned.

    Args:
        argv: the words after the program's name (default ``None``: this process's command
            line, ``sys.argv[1:]``).
        commands, prog, description: as in :func:`build_parser`.
    """
    commands = COMMANDS if commands is None else commands
    words = sys.argv[1:] if argv is None else list(argv)

    def parser_() -> argparse.ArgumentParser:
        return build_parser(commands, prog, description)

    parser = parser_()
    args = parser.parse_args(words)
    args._argv = None if argv is None else list(argv)
    args._prog = parser.prog  # the program's name in its messages
    pinned = None
    if getattr(commands[args.command], "pins_numerics", lambda _args: False)(args):
        from topo_contrastive._utils import numerics as _numerics

        if argv is None:  # the program: restarted pinned (returns once it runs pinned)
            _numerics.restart_pinned()
        pinned = _numerics.pinned_line()
    try:
        check_conflicts(args, given_options(words, parser_()))  # before any work
        common.setup(args, pinned)
        return commands[args.command].run(args)
    except (ValueError, TypeError, FileNotFoundError, MissingExtraError) as err:
        common.PENDING.clear()
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk, a folder made read-only meanwhile, ...
        from topo_contrastive._utils.files import describe_os_error

        common.PENDING.clear()
        print(
            f"{parser.prog}: error: {describe_os_error(err)}; an earlier result in --out is as "
            "it was (a new one replaces it only once complete)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
