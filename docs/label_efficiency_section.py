"""Collect finished or partial ``label-efficiency`` runs for docs/results/label_efficiency.md.

For every ``NAME=FOLDER[,FOLDER...]`` given, reads ``FOLDER/label_efficiency.json``
(finished cells only, also of a run still going or interrupted; several folders of one
dataset, e.g. the reference rows run apart with ``--rows``, are joined after checking that
they drew the same labelled subsets), and writes

- ``docs/_data/label_efficiency/NAME.json``: the settings and every cell record;
- ``docs/_data/label_efficiency/NAME.md``: the table (rows x fractions, mean ± std over the
  draws done) and the best-row lines, with the number of cells done;
- ``docs/_static/label_efficiency_NAME.png``: the curves;

and replaces the text between ``<!-- label-efficiency:NAME -->`` and
``<!-- /label-efficiency:NAME -->`` in docs/results/label_efficiency.md by the table (without
its title).

    python docs/label_efficiency_section.py trajectory=runs/le_trajectory ocean=runs/le_ocean
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/ beside the package
from experiments.studies.label_efficiency.report import (  # noqa: E402
    label_efficiency_markdown,
    plot_curves,
    summarize,
)
from topo_contrastive._utils.files import write_json, write_text  # noqa: E402

DOCS = Path(__file__).resolve().parent


def _read(folders: list[Path]) -> dict:
    """The records of the runs in ``folders`` joined (settings and completeness of the
    first; complete only if every run is).

    Raises:
        ValueError: two runs drew different labelled subsets for the same fraction and draw.
    """
    objs = [json.loads((f / "label_efficiency.json").read_text(encoding="utf-8")) for f in folders]
    subsets: dict = {}
    for obj in objs:
        for r in obj["records"]:
            key = (float(r["fraction"]), int(r["draw"]))
            if subsets.setdefault(key, r["subset"]) != r["subset"]:
                raise ValueError(f"the runs {folders} drew other labelled subsets at {key}")
    return {
        "settings": objs[0]["settings"],
        "complete": all(o.get("complete") for o in objs),
        "records": [r for o in objs for r in o["records"]],
    }


def collect(name: str, folders: list[Path]) -> str:
    """Write the three outputs of one dataset (see the module docstring); returns the table."""
    obj = _read(folders)
    records = obj["records"]
    settings = obj["settings"]
    fractions = sorted({float(r["fraction"]) for r in records})
    summary = summarize(records)
    done = len(records)
    notes = [
        f"{done} cells done ({'complete' if obj.get('complete') else 'partial run'}); "
        f"draws per fraction: up to {settings.get('draws')}; split {settings.get('split')}."
    ]
    text = label_efficiency_markdown(summary, fractions, f"Label efficiency: {name}", notes)
    out = DOCS / "_data" / "label_efficiency"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"{name}.json", {"settings": settings, "complete": obj.get("complete"),
                                      "records": records})  # fmt: skip
    write_text(out / f"{name}.md", text)
    plot_curves(summary, DOCS / "_static" / f"label_efficiency_{name}.png",
                f"{name}: test accuracy vs labelled fraction")  # fmt: skip
    return text


def update_results(
    name: str, table: str, page: Path = DOCS / "results" / "label_efficiency.md"
) -> None:
    """Put ``table`` (without its ``# title`` line) between the markers of ``name`` in
    ``page``.

    Raises:
        ValueError: the page lacks the markers.
    """
    text = page.read_text(encoding="utf-8")
    start, end = f"<!-- label-efficiency:{name} -->", f"<!-- /label-efficiency:{name} -->"
    if start not in text or end not in text:
        raise ValueError(f"{page} has no markers {start} ... {end}")
    body = "\n".join(table.splitlines()[1:]).strip()
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    write_text(page, f"{head}{start}\n{body}\n{end}{tail}")


def main(runs: list[str]) -> None:
    """Collect every ``NAME=FOLDER`` of ``runs``, update docs/results/label_efficiency.md,
    print the tables."""
    for item in runs:
        name, _, folder = item.partition("=")
        if not folder:
            raise ValueError(f"expected NAME=FOLDER, got {item!r}")
        table = collect(name, [Path(f) for f in folder.split(",")])
        update_results(name, table)
        print(table)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="NAME=FOLDER[,FOLDER...] of label-efficiency runs")
    main(p.parse_args().runs)
