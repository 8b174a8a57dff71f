"""Check (or update) the quick-preset table of docs/results.md against a fresh run.

The page's numbers must come from the code: CI runs ``topo-contrastive reproduce --quick
--out results/quick`` (deterministic on a given machine) and then this script, which compares
the Markdown table under the heading "The quick preset" of ``docs/results.md`` with the
measured columns of ``results/quick/table1.md``. Rows are matched by model name and columns by
dataset name (parenthesised notes such as "(supervised)", "(quick)" or "(measured)" are
ignored, the paper's columns of ``table1.md`` are skipped), so the order of rows and columns
and the wording of the headers may differ; the cells must be equal as text (``80.5 ± 4.2``).

Usage::

    python docs/check_quick_table.py results/quick/table1.md          # exit 1 with a diff
    python docs/check_quick_table.py results/quick/table1.md --write  # copy the run's cells

``--write`` replaces the cells of the page's table in place (same rows, columns and labels)
and is how the page is regenerated after a change of the configurations.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Table", "compare", "main", "parse_table", "update_cells"]

DOCS = Path(__file__).resolve().parent / "results.md"
SECTION = "The quick preset"
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

    def __init__(self, start: int, header: list[str], rows: list[list[str]]) -> None:
        self.start = start  # index of the header line
        self.header = header
        self.rows = rows

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


def parse_table(text: str, section: str | None = None) -> Table:
    """The first Markdown table of ``text`` (after the heading containing ``section``).

    Raises:
        TableError: no such heading, or no table after it.
    """
    lines = text.splitlines()
    start = 0
    if section is not None:
        heads = [i for i, ln in enumerate(lines) if ln.startswith("#") and section in ln]
        if not heads:
            raise TableError(f"no heading containing {section!r}")
        start = heads[0] + 1
    for i in range(start, len(lines)):
        if lines[i].startswith("#") and section is not None and i > start:
            break
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines):
            if re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]) and "-" in lines[i + 1]:
                rows = []
                for ln in lines[i + 2 :]:
                    if not ln.lstrip().startswith("|"):
                        break
                    rows.append(_split_row(ln))
                return Table(i, _split_row(lines[i]), rows)
    where = f"under the heading {section!r}" if section else "in the file"
    raise TableError(f"no Markdown table {where}")


def compare(docs: dict[tuple[str, str], str], run: dict[tuple[str, str], str]) -> list[str]:
    """Lines describing every difference (empty when the tables agree)."""
    out = []
    for key in sorted(set(docs) | set(run)):
        model, dataset = key
        if key not in run:
            out.append(f"{model} / {dataset}: on the page ({docs[key]}) but not in the run")
        elif key not in docs:
            out.append(f"{model} / {dataset}: in the run ({run[key]}) but not on the page")
        elif docs[key] != run[key]:
            out.append(f"{model} / {dataset}: page {docs[key]}, fresh run {run[key]}")
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
        "table", help="table1.md of a fresh `topo-contrastive reproduce --quick` run"
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
        page = parse_table(docs_text, args.section)
        run = parse_table(table_path.read_text(encoding="utf-8")).cells()
        if not run:
            raise TableError(f"'{table_path}' has no measured dataset columns")
        if args.write:
            _write_atomic(docs_path, update_cells(docs_text, page, run))
            print(f"updated the table under {args.section!r} in {docs_path} from {table_path}")
            return 0
    except (OSError, TableError) as err:
        print(f"check_quick_table: error: {err}", file=sys.stderr)
        return 2
    diff = compare(page.cells(), run)
    if diff:
        print(
            f"{docs_path} (table under {args.section!r}) differs from {table_path}:",
            *(f"  {d}" for d in diff),
            f"regenerate it with: python {_shown(Path(__file__))} {table_path} --write",
            sep="\n",
            file=sys.stderr,
        )
        return 1
    print(f"{docs_path}: the quick-preset table equals {table_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
