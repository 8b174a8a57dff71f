"""One entry for the tests of every command: the library's (``topo-contrastive``) and those of
the ``experiments/`` folder (``python -m experiments``), chosen by the subcommand's name."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``argv`` (a subcommand and its words) in this process; the exit status. Without
    ``argv``, as a program: ``sys.argv`` (its first word after the program's names the
    subcommand)."""
    import sys

    from experiments.cli import COMMANDS
    from experiments.cli import main as experiments_main
    from topo_contrastive.cli import main as library_main

    words = sys.argv[1:] if argv is None else list(argv)
    if words and words[0] in COMMANDS:
        return experiments_main(argv if argv is None else words)
    return library_main(argv if argv is None else words)


def build_parser() -> argparse.ArgumentParser:
    """One parser with the subcommands of both programs (to read their options)."""
    from experiments.cli import COMMANDS
    from topo_contrastive.cli import COMMANDS as LIBRARY
    from topo_contrastive.cli import build_parser as parser

    return parser({**LIBRARY, **COMMANDS})
