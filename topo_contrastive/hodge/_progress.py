"""A progress display for long set-up work of the library (not the commands' own):
tqdm's bar on a terminal or in a notebook, nothing where output is not interactive."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["progress_bar"]

T = TypeVar("T")


def progress_bar(items: Iterable[T], desc: str, unit: str = "it", minimum: int = 2) -> Iterator[T]:
    """``items`` with a tqdm bar when there are at least ``minimum`` of them and the output is
    a terminal or a notebook (``tqdm.auto``, ``disable=None``); the bar is removed when done.

    Args:
        items: a sized iterable (its ``len`` is the bar's total).
        desc: the bar's label.
        unit: the name of one item (default ``"it"``).
        minimum: fewer items than this show no bar (default 2).
    """
    seq: Any = items
    if len(seq) < minimum:
        yield from seq
        return
    from tqdm.auto import tqdm

    yield from tqdm(seq, desc=desc, unit=unit, disable=None, leave=False)
