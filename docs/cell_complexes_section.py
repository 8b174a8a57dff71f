"""The road networks as cell complexes, for docs/cell_complexes.md.

For each network of ``examples/road_networks.py`` (anaheim and chicago-sketch, from
``pytspl``) and each choice of 2-cells (the 3-cliques; the bounded faces of the road map,
with overpasses open or filled and under length or area limits; the chordless cycles up to
a length), computes the sizes :math:`(N_0, N_1, N_2)`, :math:`\\beta_1`, the crossings and
the faces left open, and the distribution of the 2-cells' lengths, and writes

- ``docs/_data/cell_complexes/road_networks.json``: every number;
- ``docs/_data/cell_complexes/road_networks.md``: the tables;

and replaces the text between ``<!-- cell-complexes:betti -->`` and
``<!-- /cell-complexes:betti -->`` in docs/cell_complexes.md by the tables.

With ``NAME=FOLDER`` arguments (``python -m experiments label-efficiency`` runs on the variants'
data files), it also collects each run as ``docs/label_efficiency_section.py`` does
(``docs/_data/label_efficiency/NAME.json`` / ``.md``, ``docs/_static/label_efficiency_NAME.png``),
puts its table between ``<!-- label-efficiency:NAME -->`` markers of docs/cell_complexes.md,
and writes the side-by-side table of the variants (``docs/_data/cell_complexes/
label_efficiency.md``, between ``<!-- cell-complexes:label-efficiency -->`` markers) from
every variant's collected table that exists (the triangles' are those of
docs/results/label_efficiency.md).

    python docs/cell_complexes_section.py
    python docs/cell_complexes_section.py anaheim_faces=runs/le_anaheim_faces ...

Needs ``pip install --no-deps pytspl==0.1.5`` (its data files only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from topo_contrastive._utils.files import write_json, write_text
from topo_contrastive.training.formatting import format_mean_std

DOCS = Path(__file__).resolve().parent
PAGE = DOCS / "cell_complexes.md"
sys.path.insert(0, str(DOCS))
sys.path.insert(0, str(DOCS.parent / "examples"))

#: The choices of 2-cells in the tables (keyword arguments of ``fill_cells``).
VARIANTS: tuple[dict[str, Any], ...] = (
    {"cells": "triangles"},
    {"cells": "faces"},
    {"cells": "faces", "max_face_length": 8},
    {"cells": "faces", "max_face_area": 4.0},
    {"cells": "faces", "max_face_area": 16.0},
    {"cells": "faces", "overpasses": "fill"},
    {"cells": "faces", "max_face_length": 8, "overpasses": "fill"},
    {"cells": "faces", "max_face_area": 16.0, "overpasses": "fill"},
    {"cells": "faces", "overpasses": "fill", "open_landmark": True},
    {"cells": "cycles", "max_face_length": 4},
    {"cells": "cycles", "max_face_length": 6},
    {"cells": "cycles", "max_face_length": 8},
)
#: Trips of the data files (``examples/road_networks.py``'s default; the landmark and its
#: cells depend on them).
TRIPS = 1000
#: The label-efficiency runs compared side by side: network -> (variant, collected name).
LABEL_EFFICIENCY: dict[str, tuple[tuple[str, str], ...]] = {
    "anaheim": (
        ("triangles", "anaheim"),
        ("faces, overpasses open", "anaheim_faces"),
        ("faces, overpasses filled", "anaheim_faces_overpasses"),
        ("faces, overpasses filled, landmark open", "anaheim_faces_openlandmark"),
    ),
    "chicago-sketch": (
        ("triangles", "chicago"),
        ("faces, overpasses open", "chicago_faces"),
        ("faces, overpasses filled", "chicago_faces_overpasses"),
        ("faces, overpasses filled, landmark open", "chicago_faces_openlandmark"),
    ),
}
#: The rows of the side-by-side table, by record ``row`` key.
COMPARED_ROWS: tuple[str, ...] = (
    "probe:SSCL_Spec:hodge",
    "probe:SCL:hodge",
    "finetune:SSCL_Spec:hodge",
    "untrained:hodge",
    "supervised:hodge",
    "raw",
    "harmonic",
)


def network_rows(name: str) -> list[dict[str, Any]]:
    """Every variant's numbers for network ``name``."""
    import road_networks as rn

    cx = rn.build_complex(rn.load_tntp(rn.find_network(name), name))
    out = []
    for choice in VARIANTS:
        if choice.get("open_landmark"):  # the landmark comes with the trips (seed 0)
            stats = rn.build(name, TRIPS, 0, choice)["stats"]["complex"]
            num_cells = sum(stats["cell_lengths"].values())
        else:
            filled = rn.fill_cells(cx, **choice)
            stats, num_cells = filled["stats"], len(filled["cells"])
        out.append(
            {
                "network": name,
                "choice": choice,
                "variant": rn.describe_cells(stats),
                "sizes": [int(cx["pos"].shape[0]), int(cx["edges"].shape[0]), num_cells],
                "harmonic_features": harmonic_features(stats["beta_1"]),
                **stats,
            }
        )
    return out


def harmonic_features(beta_1: int) -> int:
    """The size of the HodgeReadout's harmonic block of a data file's default encoder
    (``max_harmonic_features`` over :math:`\\beta_1`, at most every channel)."""
    from topo_contrastive.training.configs import get_config

    cfg = get_config("SSCL_Spec", "ocean", edition="hodge")
    if beta_1 == 0:
        return 0
    kept = max(1, cfg.max_harmonic_features // beta_1)
    return beta_1 * min(kept, cfg.hidden_channels + (1 if cfg.input_skip else 0))


def _lengths(hist: dict[Any, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted((int(k), v) for k, v in hist.items()))


def betti_markdown(rows: list[dict[str, Any]]) -> str:
    """The tables of :func:`network_rows` (several networks)."""
    lines = [
        "| network | 2-cells | N0 / N1 / N2 | beta_1 | HodgeReadout harmonic features | "
        "roads set aside (crossing pairs) | overpasses filled | faces left open: over the "
        "length / over the area / touching themselves |",
        "|---|---|---|---:|---:|---|---|---|",
    ]
    for r in rows:
        faces = r["cells"] == "faces"
        lines.append(
            f"| {r['network']} | {r['variant']} | {' / '.join(map(str, r['sizes']))} | "
            f"{r['beta_1']} | {r['harmonic_features']:,} | "
            + (f"{r['set_aside']} ({r['crossings']})" if faces else "-")
            + " | "
            + (f"{r.get('overpass_cells', 0)} of {r['set_aside']}" if faces else "-")
            + " | "
            + (f"{r['faces_too_long']} / {r['faces_too_large']} / {r['pinched_faces']}"
               if faces else "-")  # fmt: skip
            + " |"
        )
    lines += [
        "",
        "Lengths of the 2-cells (roads per cell: count):",
        "",
        "| network | 2-cells | lengths |",
        "|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['network']} | {r['variant']} | {_lengths(r['cell_lengths'])} |")
    return "\n".join(lines) + "\n"


def replace_between(name: str, body: str, page: Path = PAGE) -> None:
    """Put ``body`` between the markers ``<!-- NAME -->`` and ``<!-- /NAME -->`` of ``page``.

    Raises:
        ValueError: the page lacks the markers.
    """
    text = page.read_text(encoding="utf-8")
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    if start not in text or end not in text:
        raise ValueError(f"{page} has no markers {start} ... {end}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    write_text(page, f"{head}{start}\n{body.strip()}\n{end}{tail}")


def comparison_markdown(folder: Path = DOCS / "_data" / "label_efficiency") -> str:
    """The side-by-side table of the label-efficiency runs of every variant collected so
    far (``<folder>/<name>.json`` of :data:`LABEL_EFFICIENCY`)."""
    from experiments.studies.label_efficiency.report import summarize

    lines = []
    for network, variants in LABEL_EFFICIENCY.items():
        tables = []
        for variant, name in variants:
            path = Path(folder) / f"{name}.json"
            if path.is_file():
                obj = json.loads(path.read_text(encoding="utf-8"))
                tables.append((variant, obj))
        if not tables:
            continue
        fractions = sorted({float(r["fraction"]) for _, o in tables for r in o["records"]})
        lines += [
            f"**{network}** (mean ± std over the draws; draws per cell in brackets where "
            "fewer than the run's):",
            "",
            "| row | 2-cells | beta_1 | "
            + " | ".join(f"{100 * f:g} %" for f in fractions)
            + " |",
            "|---|---|---:|" + "---:|" * len(fractions),
        ]
        summaries = {v: {s["row"]: s for s in summarize(o["records"])} for v, o in tables}
        for row in COMPARED_ROWS:
            for variant, obj in tables:
                s = summaries[variant].get(row)
                if s is None:
                    continue
                draws = obj["settings"].get("draws")
                cells = []
                for f in fractions:
                    p = next((q for q in s["points"] if q["fraction"] == f), None)
                    if p is None:
                        cells.append("-")
                        continue
                    more = f" ({p['draws']})" if draws and p["draws"] < draws else ""
                    cells.append(f"{format_mean_std(p['mean'], p['std'])}{more}")
                label = s["label"].split(" (beta_1")[0]
                beta = _beta_of(obj)
                lines.append(f"| {label} | {variant} | {beta} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _beta_of(obj: dict[str, Any]) -> str:
    """beta_1 of a collected run, read off its harmonic reference row's label."""
    for r in obj["records"]:
        if r["row"] == "harmonic" and "beta_1 = " in r["label"]:
            return r["label"].split("beta_1 = ")[1].split(";")[0].split(")")[0]
    return "-"


def main(runs: list[str], networks: tuple[str, ...] = ("anaheim", "chicago-sketch")) -> None:
    """Write the beta_1 tables; collect ``runs`` (``NAME=FOLDER[,FOLDER...]``) and the
    side-by-side table; update docs/cell_complexes.md."""
    from label_efficiency_section import collect, update_results

    rows = [r for name in networks for r in network_rows(name)]
    out = DOCS / "_data" / "cell_complexes"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "road_networks.json", {"rows": rows})
    table = betti_markdown(rows)
    write_text(out / "road_networks.md", table)
    replace_between("cell-complexes:betti", table)
    for item in runs:
        name, _, folder = item.partition("=")
        if not folder:
            raise ValueError(f"expected NAME=FOLDER, got {item!r}")
        update_results(name, collect(name, [Path(f) for f in folder.split(",")]), PAGE)
    side = comparison_markdown()
    write_text(out / "label_efficiency.md", side)
    replace_between("cell-complexes:label-efficiency", side)
    print(table)
    print(side)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", help="NAME=FOLDER[,FOLDER...] of label-efficiency runs")
    main(p.parse_args().runs)
