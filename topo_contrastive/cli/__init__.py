"""The ``topo-contrastive`` command line: pre-train, evaluate, reproduce Table 1.

Subcommands:

``pretrain``
    contrastive pre-training of one configuration on one dataset; writes ``encoder.pt``
    (weights only, atomically), ``pretrain.json`` (``"complete": false`` from the start of
    training, ``true`` at the end) and, last, the marker ``COMPLETE``. Runs under ``torchrun``
    with DistributedDataParallel (rank 0 alone writes).
``evaluate``
    linear-SVM evaluation of a saved encoder over several random splits.
``embed``
    the embeddings ``[S, D]`` of every sample by a saved encoder (``.npz`` and ``.csv``).
``reproduce``
    the whole of Table 1 on both datasets and Figures 1-2 (``--quick`` for a reduced run).
``search``
    the small hyper-parameter search (validation split / training-split cross-validation);
    writes the CSV after every grid point, its status ``<out>.json`` and, last, the marker
    ``<out>.COMPLETE``.
``label-efficiency``
    test accuracy against the labelled fraction of the training split (pre-trained encoders
    probed and fine-tuned, the fine-tune control, the supervised SCNN, reference rows);
    resumable, every finished cell written at once.
``predict-next``
    next-node trajectory prediction with a saved encoder, frozen and fine-tuned, beside the
    same SCNN from scratch, a Markov chain and a uniform choice (a second downstream task).
``reuse``
    leave-one-network-out on road networks: an encoder pre-trained on the trips of some
    networks, probed and fine-tuned on one it never saw, beside the encoder pre-trained on
    that network's own trips, untrained and supervised rows and its reference rows;
    resumable per held-out network and seed.
``many-complexes``
    label efficiency when every sample lives on a complex of its own: encoders pre-trained
    without labels, probed and fine-tuned, beside untrained, supervised and complex-agnostic
    reference rows (rows from a registry); resumable per seed and row.
``missing-measurements``
    probes trained on complete edge flows, tested with a fraction of the edges unobserved (at
    random or a region), the missing entries as zeros or interpolated; resumable per dataset
    and split.

``pretrain``, ``evaluate`` and ``embed`` take one of the paper's datasets (``--dataset``) or an
edge-flow file of one's own (``--data-file flows.npz``, the format of
:class:`~topo_contrastive.datasets.EdgeFlows`; labels are needed by ``evaluate`` only).

Every command checks its arguments and inputs before it touches ``--out``, holds a lock on
``--out`` while it writes (a second run into it is refused, naming the holder) and, with
``--overwrite`` over an earlier result, writes the new one beside it and swaps it in only
once complete (``topo_contrastive/_outputs.py``; docs/guarantees.md).

Run ``topo-contrastive <subcommand> --help`` for the options. Also runs as
``python -m topo_contrastive.cli``.

The package only parses and dispatches: each subcommand is one module here (its options in
``add_parser``, and ``run``, which turns them into calls of :mod:`topo_contrastive.experiments`,
chiefly :mod:`topo_contrastive.experiments.runs`, or of a study in
:mod:`topo_contrastive.studies`); the options they share are groups in ``_common``.
Nothing here imports torch or numpy at import time: ``--help`` answers at once, and
``reproduce --quick``, whose numbers are pinned, re-executes its process in the pinned
environment (:func:`topo_contrastive._numerics.restart_pinned`) before loading them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from topo_contrastive._extras import MissingExtraError
from topo_contrastive.cli import _common as common
from topo_contrastive.cli import (
    embed,
    evaluate,
    label_efficiency,
    many_complexes,
    missing_measurements,
    predict_next,
    pretrain,
    reproduce,
    reuse,
    search,
)
from topo_contrastive.cli._conflicts import check_conflicts, given_options

__all__ = ["build_parser", "main"]

#: the subcommands in the order of ``--help``: name -> module with ``add_parser`` and ``run``
_COMMANDS = {
    "pretrain": pretrain,
    "evaluate": evaluate,
    "embed": embed,
    "reproduce": reproduce,
    "search": search,
    "label-efficiency": label_efficiency,
    "predict-next": predict_next,
    "reuse": reuse,
    "many-complexes": many_complexes,
    "missing-measurements": missing_measurements,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``topo-contrastive``: the subcommands ``pretrain``,
    ``evaluate``, ``embed``, ``reproduce``, ``search``, ``label-efficiency``,
    ``predict-next``, ``reuse``, ``many-complexes`` and ``missing-measurements``."""
    from topo_contrastive import __version__

    parser = argparse.ArgumentParser(
        prog=common.PROG,
        description="Hodge-aware contrastive learning (Moellers et al., ICASSP 2024): "
        "pre-train, evaluate, reproduce Table 1.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in _COMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``topo-contrastive``; returns the exit status.

    Bad input (an unknown configuration or dataset, options that contradict each other, a
    mismatching checkpoint, an unwritable output folder, a missing ocean file, an ``--out``
    held by another run) prints ``topo-contrastive: error: ...`` to stderr and returns 2,
    without writing a result file. A write that fails during the run (``OSError``: a full
    disk) prints the error and returns 1; an earlier result in ``--out`` is left as it was.
    Words argparse refuses (an unknown option, ``--epochs 0``) print its usage and message
    and raise ``SystemExit(2)``.

    A command whose numbers are pinned (``reproduce --quick``: one torch thread and the AVX2
    code paths, :mod:`topo_contrastive._numerics`) needs the pinned environment from the
    start of its process: run as a program (``argv`` is ``None``), it re-executes the process
    in that environment once, before anything else
    (:func:`~topo_contrastive._numerics.restart_pinned`); called with ``argv`` it runs in
    the caller's process as it is, and its first line says whether the code paths are pinned.

    Args:
        argv: the words after the program's name (default ``None``: this process's command
            line, ``sys.argv[1:]``).
    """
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(words)
    args._argv = None if argv is None else list(argv)
    pinned = None
    if getattr(_COMMANDS[args.command], "pins_numerics", lambda _args: False)(args):
        from topo_contrastive import _numerics

        if argv is None:  # the program: restarted pinned (returns once it runs pinned)
            _numerics.restart_pinned()
        pinned = _numerics.pinned_line()
    try:
        check_conflicts(args, given_options(words, build_parser()))  # before any work
        common.setup(args, pinned)
        return _COMMANDS[args.command].run(args)
    except (ValueError, TypeError, FileNotFoundError, MissingExtraError) as err:
        common.PENDING.clear()
        print(f"{common.PROG}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk, a folder made read-only meanwhile, ...
        from topo_contrastive._files import describe_os_error

        common.PENDING.clear()
        print(
            f"{common.PROG}: error: {describe_os_error(err)}; an earlier result in --out is as "
            "it was (a new one replaces it only once complete)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(f"{common.PROG}: interrupted", file=sys.stderr)
        return 130
