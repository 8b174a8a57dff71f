"""Writing result files atomically, checking an output folder before any work, and marking
finished outputs complete (private).

**Completeness.** A run whose outputs are rewritten as it goes (``search``, ``pretrain``,
``reproduce``) first removes a stale completeness marker (and its own previous outputs), writes
its progress with ``"complete": false``, and writes the marker last (:func:`begin_outputs`,
:func:`mark_complete`): an interrupted or killed run never looks complete.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topo_contrastive.datasets._base import atomic_write, remove_stale_temporaries

__all__ = [
    "COMPLETE_MARKER",
    "begin_outputs",
    "check_output_dir",
    "mark_complete",
    "marker_beside",
    "write_csv",
    "write_json",
    "write_text",
]

#: Name of the marker file written last into a finished output folder.
COMPLETE_MARKER = "COMPLETE"


def check_output_dir(path: str | os.PathLike, what: str = "--out") -> Path:
    """Create ``path`` if needed and check that files can be written there.

    Temporaries left there by a killed process (``.<name>.<pid>.<tag>.tmp`` of a dead
    ``pid``, see :func:`~topo_contrastive.datasets._base.remove_stale_temporaries`) are
    removed.

    Returns:
        The folder as an absolute :class:`~pathlib.Path`.

    Raises:
        ValueError: the folder cannot be created (e.g. a parent is a regular file) or written.
    """
    folder = Path(path).expanduser().absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}-{uuid.uuid4().hex}"
        with open(probe, "xb"):
            pass
        probe.unlink()
    except OSError as err:
        raise ValueError(
            f"the output folder {what} '{folder}' cannot be written ({type(err).__name__}: "
            f"{err.strerror or err}); choose a writable folder"
        ) from err
    remove_stale_temporaries(folder)
    return folder


def marker_beside(path: str | os.PathLike) -> Path:
    """The completeness marker of a single output file: ``<path>.COMPLETE`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.name}.{COMPLETE_MARKER}")


def begin_outputs(marker: str | os.PathLike, stale: Sequence[str | os.PathLike] = ()) -> None:
    """Before a run's work: remove a stale completeness ``marker``, then the files ``stale``
    (the run's outputs from an earlier run, which it will rewrite), so that the folder never
    mixes an old result with a new, unfinished one."""
    Path(marker).unlink(missing_ok=True)
    for path in stale:
        Path(path).unlink(missing_ok=True)


def mark_complete(marker: str | os.PathLike, message: str) -> None:
    """Write the completeness ``marker`` (one line, ``message``): the last write of a run."""
    write_text(marker, message.rstrip("\n") + "\n")


def _clean(obj: Any) -> Any:
    """JSON-ready copy: NaN/inf become ``None``, tuples become lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy / torch scalars
        return _clean(obj.item())
    return obj


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) atomically."""

    def _write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    atomic_write(path, _write)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically (NaN written as ``null``)."""
    write_text(path, json.dumps(_clean(obj), indent=2) + "\n")


def write_csv(path: str | os.PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` (dicts; the union of their keys is the header, in first-seen order)."""
    fields: list[str] = []
    for row in rows:
        for key in row:
            if key not in fields:
                fields.append(key)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                k: (
                    ""
                    if v is None
                    else (" ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
                )
                for k, v in row.items()
            }
        )
    write_text(path, buf.getvalue())
