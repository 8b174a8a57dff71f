"""Two real road networks as edge-flow data files, with labels that depend on the route taken.

`pytspl` (MIT, on PyPI) ships road networks of the Transportation Networks for Research
collection in the TNTP format (a link table, junction coordinates, an origin-destination trip
table). This script turns two of them, **chicago-sketch** (Chicago Area Transportation Study)
and **anaheim** (1992, J. Ban and R. Jayakrishnan), into ``--data-file`` inputs of the
command line, as a user with their own network would:

1. **The complex.** The junctions (TNTP nodes that are not zone centroids) are the nodes; every
   pair of junctions joined by a road link in either direction is one edge, oriented from the
   lower to the higher junction number; every 3-clique of that graph is a filled triangle
   (the usual choice for road networks; the unfilled cycles are the city blocks and larger
   loops, so :math:`\\beta_1` is large: 431 on chicago-sketch). With ``--cells faces``
   the 2-cells are instead the bounded faces of the network drawn with straight roads
   between its junctions (:func:`~topo_contrastive.complex.planar_faces`: the city blocks,
   up to ``--max-face-length`` roads and ``--max-face-area`` times the squared median
   road-segment length, so that larger faces -- rivers, parks, the outer face -- stay
   holes). Roads that cross others in the drawing (overpasses, or coarse coordinates) are
   set aside before the faces are traced; each then closes a cycle that no face fills,
   unless ``--overpasses fill`` gives it the 2-cell "over the overpass, back along the
   shortest ground route" (under the same limits). With ``--cells cycles`` (no
   coordinates needed) the 2-cells are the chordless cycles of at most
   ``--max-face-length`` roads (:func:`~topo_contrastive.complex.short_cycles`).
   ``--open-landmark`` leaves open the 2-cells around the landmark of step 3 (a park
   there): the label is then the winding of the route around a hole, a harmonic flow.
2. **Trips.** ``num_trips`` origin-destination zone pairs are drawn in proportion to their
   demand, among the pairs whose straight origin-destination segment passes within
   ``radius`` of a landmark point ``c`` (below) while both ends lie farther than ``radius``
   from it. Each trip leaves its origin zone at one of the zone's connector junctions (drawn
   uniformly), and is routed on the shortest path for **its own perturbed link costs**: the
   free-flow times times :math:`\\exp(\\sigma z)`, :math:`z \\sim N(0, 1)` per link and trip
   (``sigma`` = 0.5: drivers' perceptions differ), one-way links respected. The same pair
   therefore takes different routes on different trips.
3. **Label: which side of the landmark the route passes.** ``y = 1`` when ``c`` lies to the
   left of the route (the route passes it on its right), ``y = 0`` otherwise; computed from
   the winding number of the closed curve "route, then the straight segment back to the
   origin" around ``c`` and the side of ``c`` relative to that segment. The label is a
   property of the route, not of its endpoints: the same pair gets both labels on different
   trips. The landmark is the junction-centroid of the network moved to the most balanced of
   a few nearby candidate points (listed in the report), so that both classes are well
   represented; ``radius`` is the smallest of a few multiples of the median road-segment
   length that leaves ``num_trips`` qualifying pairs of positive demand.

The report (``<out>/road_networks.json`` / ``.md``) gives, per network, the sizes
:math:`(N_0, N_1, N_2)`, :math:`\\beta_1`, the 2-cells (their lengths; with faces, the
crossing roads set aside and the faces left open, by reason), the path lengths, the class
balance, how many pairs occur with both labels, and the accuracy of a linear SVM (the
paper's probe, 4 random 60/20/20 splits) on the endpoints alone (one-hot origin and
destination junctions) beside the raw flows: the gap shows how much of the label only the
route carries.

Needs ``pip install --no-deps pytspl==0.1.5`` (its data files only).

    python examples/road_networks.py --out data/road_networks
    python -m experiments label-efficiency --data-file data/road_networks/anaheim.npz \\
        --out runs/le_anaheim
    # the same trips on the faces of the road map: <out>/anaheim_faces.npz, ...
    python examples/road_networks.py --out data/road_networks --cells faces
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/ beside the package
from experiments.studies.reuse.road_trips import (  # noqa: E402, F401 (the script's names)
    RADIUS_FACTORS,
    SIGMA,
    build_complex,
    find_network,
    load_tntp,
    network_trips,
    route_side,
    sample_trips,
    trip_arrays,
    winding_number,
)
from topo_contrastive._utils.files import atomic_write, write_json, write_text  # noqa: E402

#: The networks this script builds, by their folder name in pytspl.
NETWORKS: tuple[str, ...] = ("chicago-sketch", "anaheim")
#: The kinds of 2-cells the script can fill (module docstring, step 1).
CELLS: tuple[str, ...] = ("triangles", "faces", "cycles")


def median_segment(cx: dict[str, Any]) -> float:
    """The median length of a road segment (an edge), in the units of ``cx["pos"]``."""
    pos, edges = cx["pos"], cx["edges"]
    return float(np.median(np.linalg.norm(pos[edges[:, 0]] - pos[edges[:, 1]], axis=1)))


def _polygon_area(xy: np.ndarray) -> float:
    """Absolute shoelace area of the closed polygon ``xy`` [k, 2]."""
    return 0.5 * abs(float(np.dot(xy[:, 0], np.roll(xy[:, 1], -1))
                           - np.dot(xy[:, 1], np.roll(xy[:, 0], -1))))  # fmt: skip


def overpass_cells(
    cx: dict[str, Any],
    set_aside: np.ndarray,
    max_length: int | None = None,
    max_area: float | None = None,
) -> tuple[list[list[int]], int]:
    """One 2-cell per crossing road set aside by ``planar_faces`` (``set_aside`` ``[K, 2]``
    junction pairs): over the road from ``a`` to ``b``, then back along the shortest
    ground route from ``b`` to ``a`` (by length, on the roads not set aside), when such a
    route exists and the cycle is within the limits (``max_area`` in squared units of
    ``cx["pos"]``; the area of the cycle's polygon).

    Returns:
        ``(cells, left_open)``: the cells as junction cycles, and how many overpasses
        stay holes (no ground route, or over a limit).
    """
    pos, edges = cx["pos"], cx["edges"]
    aside = {tuple(sorted(e)) for e in np.asarray(set_aside).tolist()}
    ground = np.array([e for e in edges.tolist() if tuple(e) not in aside]).reshape(-1, 2)
    length = np.linalg.norm(pos[ground[:, 0]] - pos[ground[:, 1]], axis=1)
    n0 = pos.shape[0]
    graph = sp.csr_matrix((np.maximum(length, 1e-12), (ground[:, 0], ground[:, 1])),
                          shape=(n0, n0))  # fmt: skip
    cells, left_open = [], 0
    for a, b in sorted(aside):
        _, pred = csgraph.dijkstra(graph, directed=False, indices=b, return_predecessors=True)
        if pred[a] < 0:
            left_open += 1
            continue
        back = [a]  # a <- ... <- b, read from b's shortest-path tree
        while back[-1] != b:
            back.append(int(pred[back[-1]]))
        cycle = [a, *back[::-1][:-1]]  # a -> b (the overpass), then b -> ... -> a
        too_long = max_length is not None and len(cycle) > max_length
        if too_long or (max_area is not None and _polygon_area(pos[cycle]) > max_area):
            left_open += 1
            continue
        cells.append(cycle)
    return cells, left_open


def check_cells(
    cells: str = "triangles",
    max_face_length: int | None = None,
    max_face_area: float | None = None,
    overpasses: str = "hole",
) -> None:
    """Check a choice of 2-cells (:func:`fill_cells`' arguments).

    Raises:
        ValueError: an unknown ``cells`` or ``overpasses``; ``"cycles"`` without
            ``max_face_length``; a limit or ``overpasses="fill"`` for cells that take none;
            ``max_face_length`` below 3 or ``max_face_area`` not positive.
    """
    if cells not in CELLS:
        raise ValueError(f"`cells` must be one of {CELLS}, got {cells!r}")
    if overpasses not in ("hole", "fill"):
        raise ValueError(f"`overpasses` must be 'hole' or 'fill', got {overpasses!r}")
    if cells == "triangles" and (max_face_length is not None or max_face_area is not None):
        raise ValueError("--max-face-length / --max-face-area need --cells faces or cycles")
    if cells == "cycles" and max_face_length is None:
        raise ValueError("--cells cycles needs --max-face-length (the longest cycle filled)")
    if cells != "faces" and (max_face_area is not None or overpasses != "hole"):
        raise ValueError("--max-face-area and --overpasses fill need --cells faces")
    if max_face_length is not None and max_face_length < 3:
        raise ValueError(f"--max-face-length must be >= 3, got {max_face_length}")
    if max_face_area is not None and not max_face_area > 0:
        raise ValueError(f"--max-face-area must be positive, got {max_face_area}")


def fill_cells(
    cx: dict[str, Any],
    cells: str = "triangles",
    max_face_length: int | None = None,
    max_face_area: float | None = None,
    overpasses: str = "hole",
) -> dict[str, Any]:
    """The 2-cells of the junction complex (module docstring, step 1).

    Args:
        cx: :func:`build_complex`'s output.
        cells: ``"triangles"`` (the 3-cliques), ``"faces"`` (the bounded faces of the road
            map) or ``"cycles"`` (the chordless cycles of at most ``max_face_length`` roads).
        max_face_length: the longest face or cycle filled, in roads (required for
            ``"cycles"``; ``None``: no limit for faces).
        max_face_area: the largest face filled, in multiples of the squared median
            road-segment length (``"faces"`` only; ``None``: no limit).
        overpasses: ``"hole"`` (crossing roads set aside stay holes) or ``"fill"``
            (:func:`overpass_cells`); ``"faces"`` only.

    Returns:
        ``{"cells": list of junction cycles, "stats": {...}}`` with the cell lengths
        and, for faces, the crossings, the roads set aside and the faces left open.

    Raises:
        ValueError: see :func:`check_cells`.
    """
    from topo_contrastive.complex import planar_faces, short_cycles

    check_cells(cells, max_face_length, max_face_area, overpasses)
    stats: dict[str, Any] = {"cells": cells}
    if cells == "triangles":
        out = [list(t) for t in cx["triangles"].tolist()]
    elif cells == "cycles":
        out = short_cycles(cx["edges"], max_face_length)
        stats["max_face_length"] = max_face_length
    else:
        unit = median_segment(cx) ** 2
        area = None if max_face_area is None else max_face_area * unit
        out, skipped = planar_faces(cx["edges"], cx["pos"], max_face_length, area,
                                    return_skipped=True)  # fmt: skip
        stats.update(
            max_face_length=max_face_length,
            max_face_area=max_face_area,
            area_unit=unit,
            overpasses=overpasses,
            crossings=skipped["crossings"],
            crossing_roads=int(np.unique(edge_crossing_rows(cx)).size),
            set_aside=int(skipped["set_aside"].shape[0]),
            outer_faces=skipped["outer"],
            pinched_faces=len(skipped["pinched"]),
            faces_too_long=len(skipped["too_long"]),
            faces_too_large=len(skipped["too_large"]),
            faces=len(out),
        )
        if overpasses == "fill":
            extra, left = overpass_cells(cx, skipped["set_aside"], max_face_length, area)
            out = out + extra
            stats.update(overpass_cells=len(extra), overpasses_open=left)
    lengths = np.bincount([len(c) for c in out]) if out else np.zeros(0, dtype=np.int64)
    stats["cell_lengths"] = {int(k): int(v) for k, v in enumerate(lengths) if v}
    stats["beta_1"] = betti_1(cx, out)
    return {"cells": out, "stats": stats}


def betti_1(cx: dict[str, Any], cells: list[list[int]]) -> int:
    """:math:`\\beta_1 = N_1 - \\operatorname{rank} B_1 - \\operatorname{rank} B_2` of the
    junction graph with ``cells`` filled (the dimension of its harmonic space; ``rank B_1``
    is :math:`N_0` minus the connected components, ``rank B_2`` from a dense SVD, which is
    fine at these sizes)."""
    from topo_contrastive import ComplexOperators

    n0 = cx["pos"].shape[0]
    ops = ComplexOperators.from_cells(cx["edges"], cells or None, n0)
    n1 = cx["edges"].shape[0]
    graph = sp.csr_matrix((np.ones(n1), (cx["edges"][:, 0], cx["edges"][:, 1])), shape=(n0, n0))
    rank_b1 = n0 - csgraph.connected_components(graph, directed=False)[0]
    with threadpool_limits(1):  # a small SVD: more BLAS threads only contend
        rank_b2 = int(np.linalg.matrix_rank(ops.B2.toarray())) if cells else 0
    return int(n1 - rank_b1 - rank_b2)


def edge_crossing_rows(cx: dict[str, Any]) -> np.ndarray:
    """The rows of ``cx["edges"]`` in the crossing pairs of the road map, ``int [K, 2]``."""
    from topo_contrastive.complex import edge_crossings

    return edge_crossings(cx["edges"], cx["pos"])


def cell_arrays(cells: list[list[int]], kind: str) -> dict[str, np.ndarray]:
    """The data-file keys of the 2-cells: ``triangles`` ``[N2, 3]``, or node cycles
    ``cell_nodes`` / ``cell_ptr``."""
    if kind == "triangles":
        return {"triangles": np.array(cells, dtype=np.int64).reshape(-1, 3)}
    return {
        "cell_nodes": np.array([v for c in cells for v in c], dtype=np.int64),
        "cell_ptr": np.concatenate([[0], np.cumsum([len(c) for c in cells])]).astype(np.int64),
    }


def variant_suffix(
    cells: str = "triangles",
    max_face_length: int | None = None,
    max_face_area: float | None = None,
    overpasses: str = "hole",
    open_landmark: bool = False,
) -> str:
    """``[_faces|_cycles][_len<L>][_area<A>][_overpasses][_openlandmark]``: the file-name
    suffix of a
    choice of 2-cells (empty for the triangles), so that every variant lies beside the
    others: ``<network><suffix>.npz`` and ``road_networks<suffix>.json``."""
    out = "" if cells == "triangles" else f"_{cells}"
    if max_face_length is not None:
        out += f"_len{max_face_length}"
    if max_face_area is not None:
        out += f"_area{max_face_area:g}"
    out += "_overpasses" if overpasses == "fill" else ""
    return out + ("_openlandmark" if open_landmark else "")


def describe_cells(stats: dict[str, Any]) -> str:
    """A short description of a variant's 2-cells for the report's table."""
    if stats["cells"] == "triangles":
        return "triangles"
    limits = []
    if stats.get("max_face_length") is not None:
        limits.append(f"<= {stats['max_face_length']} roads")
    if stats.get("max_face_area") is not None:
        limits.append(f"area <= {stats['max_face_area']:g} seg^2")
    text = ("chordless cycles" if stats["cells"] == "cycles" else "faces") + (
        f" ({', '.join(limits)})" if limits else ""
    )
    if stats["cells"] == "faces":
        text += f", overpasses {'filled' if stats['overpasses'] == 'fill' else 'open'}"
    if "landmark_cells_opened" in stats:
        text += f", the landmark's {stats['landmark_cells_opened']} open"
    return text


def endpoint_features(paths: list[list[int]], n0: int) -> np.ndarray:
    """One-hot origin and destination junctions, ``float [S, 2 N0]``: what the endpoints
    alone tell a linear classifier."""
    X = np.zeros((len(paths), 2 * n0))
    for i, p in enumerate(paths):
        X[i, p[0]] = 1.0
        X[i, n0 + p[-1]] = 1.0
    return X


def build(
    name: str, num_trips: int, seed: int, cells: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Build network ``name``'s complex and trips; returns the arrays of the data file and
    the statistics of the report. ``cells``: keyword arguments of :func:`fill_cells`
    (default: the triangles), and ``open_landmark`` (default ``False``): leave open every
    2-cell around the landmark, a hole there (a park); the trips do not depend on them."""
    trips = network_trips(name, num_trips, seed)  # the trips do not depend on the cells
    cx, c, radius, tried = (
        trips["cx"],
        trips["landmark"],
        trips["radius"],
        trips["landmark_candidates"],
    )
    choice = dict(cells or {})
    open_landmark = bool(choice.pop("open_landmark", False))
    filled = fill_cells(cx, **choice)
    if open_landmark:
        around = [winding_number(cx["pos"][cell], c) != 0 for cell in filled["cells"]]
        filled["cells"] = [cell for cell, a in zip(filled["cells"], around, strict=True) if not a]
        lengths = np.bincount([len(cell) for cell in filled["cells"]])
        filled["stats"].update(
            landmark_cells_opened=int(sum(around)),
            beta_1=betti_1(cx, filled["cells"]),
            cell_lengths={int(k): int(v) for k, v in enumerate(lengths) if v},
        )
    paths, labels, ids = trips["paths"], trips["labels"], trips["ids"]
    lengths = np.array([len(p) - 1 for p in paths])
    pairs: dict[str, set[int]] = {}
    for i, y in zip(ids, labels.tolist(), strict=True):
        pairs.setdefault(i.split(":")[1], set()).add(y)
    arrays = trip_arrays(trips, cell_arrays(filled["cells"], filled["stats"]["cells"]))
    stats = {
        "network": name,
        "sizes": [
            int(cx["pos"].shape[0]),
            int(cx["edges"].shape[0]),
            len(filled["cells"]),
        ],
        "complex": filled["stats"],
        "trips": num_trips,
        "sigma": SIGMA,
        "landmark": c.tolist(),
        "radius": radius,
        "landmark_candidates": tried,
        "path_edges": {
            "min": int(lengths.min()),
            "mean": float(lengths.mean()),
            "max": int(lengths.max()),
        },  # fmt: skip
        "class_1_share": float(labels.mean()),
        "pairs": len(pairs),
        "pairs_with_both_labels": sum(len(v) == 2 for v in pairs.values()),
        "trips_of_pairs_with_both_labels": int(
            sum(1 for i in ids if len(pairs[i.split(":")[1]]) == 2)
        ),
    }
    return {"arrays": arrays, "stats": stats, "paths": paths, "labels": labels}


def probe_report(built: dict[str, Any], path: Path, seeds: int = 4) -> dict[str, float]:
    """Linear-SVM test accuracy (mean over ``seeds`` random 60/20/20 splits of the data
    file's dataset) on the endpoints alone and on the raw flows."""
    from topo_contrastive.evaluation import linear_probe
    from topo_contrastive.training import ExperimentData
    from topo_contrastive.training.data import load_data_file

    ds = load_data_file(path, data_root=str(path.parent / "processed"))
    data = ExperimentData.from_dataset(ds, path.stem)
    labels = built["labels"]
    feats = {
        "endpoints": endpoint_features(built["paths"], int(built["arrays"]["num_nodes"])),
        "raw flows": data.flows.double().numpy(),
    }
    out = {"beta_1": int(data.hodge.dims["harmonic"])}
    for key, X in feats.items():
        accs = []
        for s in range(seeds):
            idx = data.split(s)
            accs.append(linear_probe(X, labels, idx["train"], idx["test"], seed=s).test_accuracy)
        out[key] = 100 * float(np.mean(accs))
    return out


def write_network(
    name: str, target: Path, num_trips: int, seed: int, cells: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Build network ``name`` (:func:`build`) and write its data file ``target`` atomically;
    returns what :func:`build` returns."""
    built = build(name, num_trips, seed, cells)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **built["arrays"])

    atomic_write(target, write)
    return built


def main(
    out: str = "data/road_networks",
    networks: tuple[str, ...] = NETWORKS,
    num_trips: int = 1000,
    seed: int = 0,
    probe: bool = True,
    cells: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``<out>/<network><suffix>.npz`` for each network and the report
    ``<out>/road_networks<suffix>.json`` / ``.md`` (:func:`variant_suffix` of ``cells``,
    the keyword arguments of :func:`fill_cells`; default: the triangles, no suffix);
    returns the report."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = variant_suffix(**(cells or {}))
    report: dict[str, Any] = {"seed": seed, "cells": dict(cells or {}), "networks": {}}
    for name in tqdm(networks, desc="road networks", unit="network"):
        target = folder / f"{name.replace('-', '_')}{suffix}.npz"
        built = write_network(name, target, num_trips, seed, cells)
        stats = built["stats"]
        if probe:
            stats["probe"] = probe_report(built, target)
        report["networks"][name] = stats
    write_json(folder / f"road_networks{suffix}.json", report)
    write_text(folder / f"road_networks{suffix}.md", report_markdown(report))
    return report


def report_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables: the trips and, with faces, what was left open."""
    lines = [
        "| network | 2-cells | N0 / N1 / N2 | beta_1 | trips | path edges (mean) | class 1 | "
        "pairs with both labels (their trips) | SVM: endpoints | SVM: raw flows |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    faces = []
    for name, s in report["networks"].items():
        p = s.get("probe", {})
        lines.append(
            f"| {name} | {describe_cells(s['complex'])} | {' / '.join(map(str, s['sizes']))} | "
            f"{s['complex']['beta_1']} | "
            f"{s['trips']} | {s['path_edges']['min']}-{s['path_edges']['max']} "
            f"({s['path_edges']['mean']:.1f}) | {100 * s['class_1_share']:.1f} % | "
            f"{s['pairs_with_both_labels']} of {s['pairs']} "
            f"({s['trips_of_pairs_with_both_labels']}) | "
            f"{p.get('endpoints', float('nan')):.1f} % | {p.get('raw flows', float('nan')):.1f} % |"
        )
        c = s["complex"]
        if c["cells"] == "faces":
            faces.append(
                f"| {name} | {c['crossings']} ({c['crossing_roads']} roads) | {c['set_aside']} | "
                f"{c.get('overpass_cells', 0)} | {c['outer_faces']} | {c['pinched_faces']} | "
                f"{c['faces_too_long']} | {c['faces_too_large']} |"
            )
    if faces:
        lines += [
            "",
            "| network | crossing pairs | roads set aside | overpasses filled | outer faces | "
            "faces touching themselves | faces over the length | faces over the area |",
            "|---|---|---|---|---|---|---|---|",
            *faces,
        ]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--out", default="data/road_networks", help="output folder (default: data/road_networks)"
    )
    p.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS,
                   help="networks to build (default: both)")  # fmt: skip
    p.add_argument("--trips", type=int, default=1000, help="trips per network (default: 1000)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of trips and perturbations (default: 0)"
    )
    p.add_argument(
        "--no-probe", action="store_true", help="skip the endpoint / raw-flow SVM report"
    )
    p.add_argument(
        "--quick", action="store_true", help="a small version (CI): anaheim, 100 trips, no SVM"
    )
    p.add_argument("--cells", default="triangles", choices=CELLS,
                   help="2-cells: the 3-cliques, the bounded faces of the road map (needs the "
                        "junction coordinates), or the chordless cycles up to "
                        "--max-face-length roads (default: triangles)")  # fmt: skip
    p.add_argument("--max-face-length", type=int, default=None,
                   help="fill only faces / cycles of at most this many roads (required with "
                        "--cells cycles; default: no limit)")  # fmt: skip
    p.add_argument("--max-face-area", type=float, default=None,
                   help="fill only faces of at most this area, in squared median road-segment "
                        "lengths (--cells faces; default: no limit)")  # fmt: skip
    p.add_argument("--overpasses", default="hole", choices=("hole", "fill"),
                   help="roads crossing others: leave the cycle each closes open, or fill it "
                        "with the 2-cell back along the shortest ground route (--cells faces; "
                        "default: hole)")  # fmt: skip
    p.add_argument("--open-landmark", action="store_true",
                   help="leave open the 2-cells around the landmark: a hole there, whose "
                        "harmonic flow is the label's winding (default: off)")  # fmt: skip
    return p


if __name__ == "__main__":
    parser = build_parser()
    a = parser.parse_args()
    if a.quick:
        a.networks, a.trips, a.no_probe = ["anaheim"], 100, True
    choice = {"cells": a.cells, "max_face_length": a.max_face_length,
              "max_face_area": a.max_face_area, "overpasses": a.overpasses}  # fmt: skip
    try:
        check_cells(**choice)
    except ValueError as err:
        parser.error(str(err))
    choice["open_landmark"] = a.open_landmark
    rep = main(a.out, tuple(a.networks), a.trips, a.seed, not a.no_probe, choice)
    print(report_markdown(rep))
