"""Check (or update) the quick-preset tables of docs/results/quick.md against a fresh run.

The page's numbers must come from the code: CI runs ``python -m experiments reproduce --quick
--out results/quick`` (deterministic on a given machine) and then this script, which compares
the Markdown tables in the section "The quick preset" of ``docs/results/quick.md`` (up to the next
heading of the same level; sub-headings may separate the tables) with the tables of
``results/quick/table1.md`` (one per edition), in order: the page's first table with the
run's first, and so on. Within a pair, rows are matched by model name and columns by dataset
name (parenthesised notes such as "(supervised)", "(reference)", "(quick)" or "(measured)"
are ignored, the paper's columns are skipped), so the order of rows and columns and the
wording of the headers may differ. A cell (``80.5 ± 4.2``) matches when its mean differs from
the run's by at most the table's tolerance (:data:`TOLERANCE`, in accuracy points; ``--tolerance
0`` demands equal text). By default the page must show every table, row and dataset of the run;
with ``--subset`` it may leave some out (every cell it shows must still match).

**Why a tolerance, and how large.** The quick preset pins its numerics (one torch thread, the
AVX2 code paths of PyTorch, MKL, oneDNN and OpenBLAS: ``topo_contrastive/_utils/numerics.py``), so
that a machine of this kind repeats it; what pinning cannot rule out (another CPU family, a
library build) moves a one-epoch training run by a last-bit difference that training amplifies.
The tolerances are derived from the spread measured over runs with other thread counts and
other code paths (docs/results/quick.md, "The quick preset"; the runs' tables are kept in
``tests/docs/data/``): against the pinned 1-thread run, the unpinned 2-thread run moved 7 of
the 18 paper-encoder cells by up to 5.9 points and none of the HodgeReadout cells; a run on
other code paths (PyTorch's default kernels instead of AVX2, MKL's SSE4.2 branch, OpenBLAS's
Sandybridge kernels: what another CPU would choose) moved 9 paper-encoder cells by up to 9.2
points and one HodgeReadout cell by 0.4. Hence 10 points for the paper encoder's table (its one-
or three-epoch runs are chaotic) and 1 point for the HodgeReadout's (one flipped test
prediction on the ocean drifters moves a mean over 3 splits of 40 by 0.83). The check still
fails on a real change: dropping the harmonic coordinates from the HodgeReadout moves its cells
by far more (``tests/docs/test_check_quick_table.py``).

Usage::

    python docs/check_quick_table.py results/quick/table1.md          # exit 1 with a diff
    python docs/check_quick_table.py results/quick/table1.md --write  # copy the run's cells

``--write`` replaces the cells of the page's tables in place (same rows, columns and labels)
and is how the page is regenerated after a change of the configurations; rows the page does
not have yet must be added by hand first (the check lists them).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "Table",
    "compare",
    "compare_tables",
    "main",
    "parse_table",
    "parse_tables",
    "update_cells",
]

DOCS = Path(__file__).resolve().parent / "results" / "quick.md"
SECTION = "The quick preset"
#: Largest allowed difference of a cell's mean (accuracy points) by table: the heading's start
#: (lower case) -> tolerance; see the module docstring for how they were derived.
TOLERANCE = {"paper encoder": 10.0, "hodgereadout": 1.0}
#: dataset keys by normalised column name (``table1.md`` and the page use these names)
DATASET_KEYS = {
    "trajectory": "trajectory",
    "trajectories": "trajectory",
    "ocean": "ocean",
    "ocean drifters": "ocean",
}


class TableError(ValueError):
    """A file without the expected Markdown table."""


class Table:
    """A Markdown table: its line span in the file, header cells and row cells."""

    def __init__(
        self, start: int, header: list[str], rows: list[list[str]], heading: str = ""
    ) -> None:
        self.start = start  # index of the header line
        self.header = header
        self.rows = rows
        self.heading = heading  # the nearest heading above the table

    def columns(self) -> dict[int, str]:
        """``{column index: dataset}`` of the measured dataset columns (not the paper's)."""
        out = {}
        for j, name in enumerate(self.header[1:], start=1):
            key = _dataset_key(name)
            if key is not None and "paper" not in name.lower():
                out[j] = key
        return out

    def cells(self) -> dict[tuple[str, str], str]:
        """``{(model, dataset): cell}`` of the measured dataset columns."""
        out = {}
        for row in self.rows:
            model = _label(row[0])
            for j, key in self.columns().items():
                out[(model, key)] = _cell(row[j]) if j < len(row) else ""
        return out


def _label(text: str) -> str:
    """``"SCNN (supervised)"`` -> ``"SCNN"``; strips Markdown emphasis."""
    return re.sub(r"\s*\(.*?\)", "", text).strip().strip("*_` ")


def _dataset_key(header: str) -> str | None:
    return DATASET_KEYS.get(_label(header).lower())


def _cell(text: str) -> str:
    return " ".join(text.replace("**", "").split())


def _split_row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _level(line: str) -> int:
    """Markdown heading level of ``line`` (0: not a heading)."""
    m = re.match(r"(#{1,6})\s", line)
    return len(m.group(1)) if m else 0


def parse_tables(text: str, section: str | None = None) -> list[Table]:
    """The Markdown tables of ``text``, or of its section whose heading contains ``section``
    (up to the next heading of the same or a higher level).

    Raises:
        TableError: no such heading, or no table in it.
    """
    lines = text.splitlines()
    start, stop = 0, len(lines)
    if section is not None:
        heads = [i for i, ln in enumerate(lines) if _level(ln) and section in ln]
        if not heads:
            raise TableError(f"no heading containing {section!r}")
        level = _level(lines[heads[0]])
        start = heads[0] + 1
        for i in range(start, len(lines)):
            if 0 < _level(lines[i]) <= level:
                stop = i
                break
    tables, heading, i = [], "", start
    while i < stop:
        if _level(lines[i]):
            heading = lines[i].lstrip("#").strip()
        is_head = lines[i].lstrip().startswith("|") and i + 1 < stop
        if is_head and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]) and "-" in lines[i + 1]:
            rows = []
            j = i + 2
            while j < stop and lines[j].lstrip().startswith("|"):
                rows.append(_split_row(lines[j]))
                j += 1
            tables.append(Table(i, _split_row(lines[i]), rows, heading))
            i = j
            continue
        i += 1
    if not tables:
        where = f"under the heading {section!r}" if section else "in the file"
        raise TableError(f"no Markdown table {where}")
    return tables


def parse_table(text: str, section: str | None = None) -> Table:
    """The first table of :func:`parse_tables`."""
    return parse_tables(text, section)[0]


def _mean(cell: str) -> float | None:
    """The mean of ``"80.5 ± 4.2"`` (``None`` for a cell without a number, e.g. ``—``)."""
    m = re.match(r"\s*(-?[0-9]+(?:\.[0-9]+)?)", cell)
    return float(m.group(1)) if m else None


def tolerance_for(heading: str, tolerance: float | None = None) -> float:
    """The tolerance of a table by its heading (:data:`TOLERANCE`); ``tolerance`` overrides.

    A heading of no known edition gets the smallest tolerance."""
    if tolerance is not None:
        return tolerance
    for start, value in TOLERANCE.items():
        if heading.lower().startswith(start):
            return value
    return min(TOLERANCE.values())


def _matches(page: str, run: str, tolerance: float) -> bool:
    if page == run:
        return True
    a, b = _mean(page), _mean(run)
    return tolerance > 0 and a is not None and b is not None and abs(a - b) <= tolerance + 1e-9


def compare(
    docs: dict[tuple[str, str], str],
    run: dict[tuple[str, str], str],
    subset: bool = False,
    tolerance: float = 0.0,
) -> list[str]:
    """Lines describing every difference (empty when the tables agree). With ``subset``,
    cells of the run that the page does not show are not differences; a cell whose mean is
    within ``tolerance`` points of the run's agrees."""
    out = []
    for key in sorted(set(docs) | set(run)):
        model, dataset = key
        if key not in run:
            out.append(f"{model} / {dataset}: on the page ({docs[key]}) but not in the run")
        elif key not in docs:
            if not subset:
                out.append(f"{model} / {dataset}: in the run ({run[key]}) but not on the page")
        elif not _matches(docs[key], run[key], tolerance):
            out.append(
                f"{model} / {dataset}: page {docs[key]}, fresh run {run[key]} "
                f"(tolerance {tolerance:g} points)"
            )
    return out


def compare_tables(
    page: list[Table], run: list[Table], subset: bool = False, tolerance: float | None = None
) -> list[str]:
    """:func:`compare` of the page's tables with the run's, in order, each within its
    :func:`tolerance_for` (``tolerance`` overrides all)."""
    out = []
    if len(page) > len(run) or (len(page) < len(run) and not subset):
        out.append(
            f"the page has {len(page)} table(s) in the section, the run {len(run)} ("
            + ", ".join(repr(t.heading) for t in run)
            + ")"
        )
    for p, r in zip(page, run, strict=False):
        tol = tolerance_for(r.heading, tolerance)
        diff = compare(p.cells(), r.cells(), subset, tol)
        out += [f"[{r.heading or 'table'}] {d}" for d in diff]
    return out


def update_cells(text: str, table: Table, run: dict[tuple[str, str], str]) -> str:
    """``text`` with the cells of ``table`` replaced by the run's (same labels and layout).

    Raises:
        TableError: the page's table has a cell the run does not have.
    """
    lines = text.splitlines(keepends=True)
    for r, row in enumerate(table.rows):
        model = _label(row[0])
        cells = list(row)
        for j, key in table.columns().items():
            if (model, key) not in run:
                raise TableError(f"the run has no cell for {model} / {key}")
            cells[j] = run[(model, key)]
        index = table.start + 2 + r
        ending = "\n" if lines[index].endswith("\n") else ""
        lines[index] = "| " + " | ".join(cells) + " |" + ending
    return "".join(lines)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "table", help="table1.md of a fresh `python -m experiments reproduce --quick` run"
    )
    parser.add_argument(
        "--docs", default=str(DOCS), help=f"the page to check (default: {DOCS.name} here)"
    )
    parser.add_argument(
        "--section",
        default=SECTION,
        help=f"heading above the page's table (default: {SECTION!r})",
    )
    parser.add_argument(
        "--subset",
        action="store_true",
        help="the page may leave out some of the run's tables, rows or datasets",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="largest allowed difference of a cell's mean in accuracy points, for every table "
        "(default: by table, " + ", ".join(f"{k}: {v:g}" for k, v in TOLERANCE.items())
        + "; 0: the cells must be equal as text)",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="copy the run's cells into the page's table instead of checking",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Compare (or update); returns 0 when equal (or written), 1 on a difference, 2 on an
    unusable file."""
    args = build_parser().parse_args(argv)
    docs_path, table_path = Path(args.docs), Path(args.table)
    try:
        docs_text = docs_path.read_text(encoding="utf-8")
        page = parse_tables(docs_text, args.section)
        run = parse_tables(table_path.read_text(encoding="utf-8"))
        if not any(t.cells() for t in run):
            raise TableError(f"'{table_path}' has no measured dataset columns")
        if args.write:
            text = docs_text
            for p, r in zip(page, run, strict=False):
                text = update_cells(text, p, r.cells())
            _write_atomic(docs_path, text)
            print(f"updated the tables under {args.section!r} in {docs_path} from {table_path}")
            return 0
    except (OSError, TableError) as err:
        print(f"check_quick_table: error: {err}", file=sys.stderr)
        return 2
    diff = compare_tables(page, run, args.subset, args.tolerance)
    if diff:
        print(
            f"{docs_path} (tables under {args.section!r}) differ from {table_path}:",
            *(f"  {d}" for d in diff),
            f"regenerate it with: python {_shown(Path(__file__))} {table_path} --write",
            sep="\n",
            file=sys.stderr,
        )
        return 1
    print(f"{docs_path}: the quick-preset tables equal {table_path} within the tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
