"""The commands of the paper's reproduction and of the studies: ``python -m experiments``.

``reproduce`` (Table 1 and Figures 1-2), ``search`` (the hyper-parameter search) and the
studies ``label-efficiency``, ``predict-next``, ``reuse``, ``many-complexes`` and
``missing-measurements``. Each is one module here (``add_parser`` and ``run``), dispatched
by :func:`topo_contrastive.cli.main`; the options they share are the groups of
:mod:`experiments.cli._options`. Nothing here imports torch or numpy at import time.
"""

from __future__ import annotations

from experiments import PROG
from experiments.cli import (
    label_efficiency,
    many_complexes,
    missing_measurements,
    predict_next,
    reproduce,
    reuse,
    search,
)

__all__ = ["COMMANDS", "main"]

#: the subcommands in the order of ``--help``: name -> module with ``add_parser`` and ``run``
COMMANDS = {
    "reproduce": reproduce,
    "search": search,
    "label-efficiency": label_efficiency,
    "predict-next": predict_next,
    "reuse": reuse,
    "many-complexes": many_complexes,
    "missing-measurements": missing_measurements,
}

_DESCRIPTION = (
    "The paper's reproduction (Table 1, Figures 1-2, the search) and the studies of "
    "topo_contrastive, run from a clone."
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m experiments``; returns the exit status (as
    :func:`topo_contrastive.cli.main`: 2 on bad input, 1 on a failed write).

    Args:
        argv: the words after the program's name (default ``None``: ``sys.argv[1:]``).
    """
    from topo_contrastive.cli import main as run

    return run(argv, commands=COMMANDS, prog=PROG, description=_DESCRIPTION)
