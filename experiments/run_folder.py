"""A resumable run's output folder (:class:`RunFolder`): its settings' fingerprint, the
finished cells, the completion marker and the result tables. The lock on the folder and
``--overwrite``'s write-beside-then-swap are the caller's (``output_run``); every file is
written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments._helpers import (
    COMPLETE_MARKER,
    check_output_dir,
    mark_complete,
    write_csv,
    write_json,
    write_text,
)


def fingerprint(settings: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the sha256 of ``settings`` as JSON (keys sorted; values
    JSON cannot hold are written as their ``str``)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _as_json(obj: Any) -> Any:
    """``obj`` as it reads back from the records file (tuples become lists, ...)."""
    return json.loads(json.dumps(obj, default=str))


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the settings that differ, with both values where they are short."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            if k in old and k in new:
                out += _differences(old[k], new[k], f"{prefix}{k}.")
            elif old.get(k) != new.get(k):
                out.append(f"{prefix}{k} ({'only now' if k in new else 'only then'})")
        return out
    if old == new:
        return []
    shown = f"{old!r} then, {new!r} now"
    return [prefix.rstrip(".") + (f" ({shown})" if len(shown) <= 60 else "")]


class RunFolder:
    r"""An output folder whose run is a list of *cells* (named pieces of work), each written
    as soon as it is done, so that an interrupted run resumes where it stopped.

    The records file (``records``), rewritten atomically after every cell, is::

        {"command": "<command>", "complete": false,
         "settings": {"fingerprint": "<16 hex>", "fingerprint_parts": {<settings>}, <info>},
         <results>, "records": [{"<key>": "<cell>", ...}, ...]}

    with ``csv=True`` the records also as CSV beside it; once the run is finished, the marker
    ``COMPLETE`` is written last (a stale one is removed first): an interrupted or killed run
    never looks complete.

    Args:
        out: the folder (created if needed; must be writable).
        command: what writes the folder (a resume refuses another's records file).
        settings: every setting the cells' results depend on (JSON-able), fingerprinted: a
            resume with other settings is refused, naming them.
        records: the records file's name (default ``"runs.json"``).
        key: the field of a record that names its cell (default ``"cell"``).
        resume: keep the finished cells of an earlier run (default ``False``: start over).
        csv: also write the records as ``<records' stem>.csv`` (default ``True``).
        restart: how a refusal says to start over.

    Raises:
        ValueError: ``out`` cannot be written; with ``resume``: ``out`` holds other files
            but no records file, or a records file that is not readable JSON, written by
            another ``command``, of other settings, or edited or damaged (records that are
            not objects naming their cell). Nothing is written or removed then.

    Example::

        run = RunFolder("out", "my-study", {"epochs": 10}, resume=True)
        done = run.cells({f"seed {s}": partial(train, s) for s in range(3)})  # plan -> cells
        accs = [r["accuracy"] for (r,) in done.values()]
        run.write_tables("summary", rows=run.records, markdown=f"mean {sum(accs) / 3:.3f}\n")
        run.finish("done", mean_accuracy=sum(accs) / 3)  # "complete": true, then COMPLETE
    """

    def __init__(
        self,
        out: str | os.PathLike,
        command: str,
        settings: Mapping[str, Any],
        *,
        records: str = "runs.json",
        key: str = "cell",
        resume: bool = False,
        csv: bool = True,
        restart: str = "choose another --out, or run without --resume to start over",
    ) -> None:
        self.folder: Path = check_output_dir(out)
        self.command, self.key, self.csv, self.restart = command, key, csv, restart
        self.settings: dict[str, Any] = dict(settings)
        self.fingerprint: str = fingerprint(self.settings)
        self.path: Path = self.folder / records
        self.marker: Path = self.folder / COMPLETE_MARKER
        #: the earlier run's records file (resumed), else ``None``
        self.previous: dict[str, Any] | None = self._read() if resume else None
        if not resume:  # starting over: the folder stops looking complete at once
            self.marker.unlink(missing_ok=True)
        #: every record, the earlier run's first
        self.records: list[dict[str, Any]] = list((self.previous or {}).get("records", []))
        self.info: dict[str, Any] = {}
        self.results: dict[str, Any] = {}
        self._complete = False
        self._started = False
        #: cells computed and read back by :meth:`cells`
        self.computed, self.resumed = 0, 0

    # ------------------------------------------------------------------ resuming
    def _read(self) -> dict[str, Any] | None:
        """The earlier records file, checked (``None`` for an empty folder)."""
        if not self.path.is_file():
            others = sorted(p.name for p in self.folder.iterdir() if not p.name.startswith("."))
            if others:
                shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
                raise ValueError(
                    f"cannot resume in '{self.folder}': it holds no {self.path.name} but "
                    f"{shown}, so it was not written by `{self.command}`. Nothing was "
                    "overwritten; choose another --out, or an empty one"
                )
            return None
        try:
            payload = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(
                f"cannot resume from '{self.path}': it is not readable JSON ({err})"
            ) from err
        if not isinstance(payload, dict) or payload.get("command") != self.command:
            raise ValueError(
                f"cannot resume from '{self.path}': it was not written by `{self.command}`. "
                "Nothing was overwritten; choose another --out"
            )
        stored = payload.get("settings") if isinstance(payload.get("settings"), dict) else {}
        old = stored.get("fingerprint")
        if old != self.fingerprint:
            before = stored.get("fingerprint_parts")
            differ = _differences(before, _as_json(self.settings)) if before else []
            listed = ", ".join(differ[:6]) + (", ..." if len(differ) > 6 else "")
            raise ValueError(
                f"cannot resume from '{self.folder}': its earlier run used other settings ("
                + (f"they differ in {listed}; " if listed else "")
                + f"fingerprint {old!r}, this run {self.fingerprint!r}). Nothing was "
                f"overwritten; {self.restart}"
            )
        records = payload.get("records", [])
        damaged = f"cannot resume from '{self.path}': the file was edited or damaged ("
        if not isinstance(records, list):
            raise ValueError(
                damaged + f"its 'records' must be a list of records, got a "
                f"{type(records).__name__}). Nothing was overwritten; {self.restart}"
            )
        for i, record in enumerate(records):
            if not isinstance(record, dict) or not isinstance(record.get(self.key), str):
                what = (f"is of type {type(record).__name__}" if not isinstance(record, dict)
                        else f"has no '{self.key}' naming its cell")  # fmt: skip
                raise ValueError(
                    damaged + f"record {i} {what}, expected an object with '{self.key}'). "
                    f"Nothing was overwritten; {self.restart}"
                )
        return payload

    def done(self, key: str) -> bool:
        """Whether the cell ``key`` is finished (by this run or the resumed one)."""
        return any(r.get(self.key) == key for r in self.records)

    def load(self, key: str) -> list[dict[str, Any]]:
        """The records of the finished cell ``key``, in the order they were saved.

        Raises:
            KeyError: the cell is not finished.
        """
        found = [r for r in self.records if r.get(self.key) == key]
        if not found:
            raise KeyError(f"the cell {key!r} is not finished in '{self.folder}'")
        return found

    # ------------------------------------------------------------------ writing
    def start(self, **info: Any) -> None:
        """Begin writing: remove a stale marker, then write the records file with
        ``"complete": false`` and ``info`` (what the run records beside its fingerprinted
        settings: the device, the command line, ...) in its ``settings``."""
        self.info.update(info)
        self.marker.unlink(missing_ok=True)
        self._started = True
        self._write()

    def save(self, key: str, result: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        """Add the finished cell ``key``: one record or several, each stored with its field
        ``key`` set, and rewrite the records file (and CSV) atomically.

        Raises:
            ValueError: the cell is finished already, or ``result`` holds no record.
        """
        if self.done(key):
            raise ValueError(f"the cell {key!r} is finished already in '{self.folder}'")
        items = [result] if isinstance(result, Mapping) else list(result)
        if not items:
            raise ValueError(f"the cell {key!r} has no record to save")
        if not self._started:
            self.start()
        for item in items:
            record = {self.key: key, **item}
            record[self.key] = key
            self.records.append(record)
        self._write()

    def cells(
        self,
        plan: Mapping[str, Callable[[], Mapping[str, Any] | Sequence[Mapping[str, Any]]]],
        progress: Callable[[int], Any] | None = None,
        timer: str = "seconds",
        digits: int = 1,
        after: Callable[[str, list[dict[str, Any]]], None] | None = None,
        finished_at: bool = False,
    ) -> dict[str, list[dict[str, Any]]]:
        """Plan -> cells: the records of every cell of ``plan`` (key -> a function computing
        its record or records), in the plan's order. A finished cell is read back; the others
        are computed, their records stamped with the wall time (``timer``, in seconds
        rounded to ``digits``; with ``finished_at``, the time it finished, as ``time.time()``)
        and saved at once (:meth:`save`), then ``after(key, records)`` is called.
        ``progress(n)`` gives a display of the ``n`` cells to compute (``update``,
        ``close``). Counts :attr:`computed` and :attr:`resumed`."""
        if not self._started:
            self.start()
        todo = {key for key in plan if not self.done(key)}
        bar = progress(len(todo)) if progress is not None else None
        out = {}
        for key, compute in plan.items():
            if key in todo:
                start = time.perf_counter()
                result = compute()
                stamp = {timer: round(time.perf_counter() - start, digits)}
                if finished_at:
                    stamp["finished_at"] = time.time()
                items = [result] if isinstance(result, Mapping) else list(result)
                self.save(key, [{**item, **stamp} for item in items])
                self.computed += 1
                if after is not None:
                    after(key, self.load(key))
                if bar is not None:
                    bar.set_postfix(cell=key)
                    bar.update(1)
            else:
                self.resumed += 1
            out[key] = self.load(key)
        if bar is not None:
            bar.close()
        return out

    def finish(self, message: str, **results: Any) -> None:
        """End the run: write the records file with ``"complete": true`` and ``results``
        (top-level entries: a summary, the wall time, ...), then the marker ``COMPLETE``
        (one line, ``message``)."""
        self.results.update(results)
        self._complete = True
        self._write()
        mark_complete(self.marker, message)

    def write_tables(
        self,
        name: str,
        *,
        data: Any = None,
        rows: Sequence[Mapping[str, Any]] | None = None,
        markdown: str | None = None,
    ) -> dict[str, Path]:
        """Write result tables into the folder, each atomically: ``<name>.json`` (``data``),
        ``<name>.csv`` (``rows``: dicts, the union of their keys as the header) and
        ``<name>.md`` (``markdown``), those given.

        Returns:
            ``{"json", "csv", "md"}``: the paths written.
        """
        written = {}
        if data is not None:
            written["json"] = self.folder / f"{name}.json"
            write_json(written["json"], data)
        if rows is not None:
            written["csv"] = self.folder / f"{name}.csv"
            write_csv(written["csv"], rows)
        if markdown is not None:
            written["md"] = self.folder / f"{name}.md"
            write_text(written["md"], markdown)
        return written

    def _write(self) -> None:
        settings = {"fingerprint": self.fingerprint, "fingerprint_parts": self.settings,
                    **self.info}  # fmt: skip
        write_json(self.path, {"command": self.command, "complete": self._complete,
                               "settings": settings, **self.results,
                               "records": self.records})  # fmt: skip
        if self.csv:
            write_csv(self.path.with_suffix(".csv"), self.records)

    def __repr__(self) -> str:
        return (f"RunFolder('{self.folder}', {self.command!r}, {len(self.records)} records, "
                f"fingerprint {self.fingerprint!r})")  # fmt: skip
