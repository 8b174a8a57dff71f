"""The commands of the paper's reproduction and of the studies: ``python -m experiments``.

Subcommands:

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

Each subcommand is one module here (``add_parser`` and ``run``), dispatched by
:func:`topo_contrastive.cli.main` with the library's own option groups, checks and output
guarantees. Nothing here imports torch or numpy at import time.
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
