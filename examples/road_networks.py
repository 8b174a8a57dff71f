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
   loops, so :math:`\\beta_1` is large: 404 on chicago-sketch).
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
:math:`(N_0, N_1, N_2)`, :math:`\\beta_1`, the path lengths, the class balance, how many pairs
occur with both labels, and the accuracy of a linear SVM (the paper's probe, 4 random
60/20/20 splits) on the endpoints alone (one-hot origin and destination junctions) beside
the raw flows: the gap shows how much of the label only the route carries.

Needs ``pip install --no-deps pytspl==0.1.5`` (its data files only).

    python examples/road_networks.py --out data/road_networks
    topo-contrastive label-efficiency --data-file data/road_networks/anaheim.npz \\
        --out runs/le_anaheim
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
from tqdm.auto import tqdm

from topo_contrastive._files import atomic_write, write_json, write_text

#: The networks this script builds, by their folder name in pytspl.
NETWORKS: tuple[str, ...] = ("chicago-sketch", "anaheim")
#: Spread of the per-trip log-normal perturbation of the link costs.
SIGMA = 0.5
#: Candidate radii, as multiples of the median road-segment length.
RADIUS_FACTORS: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def find_network(name: str) -> Path:
    """The folder of network ``name`` inside the installed `pytspl` package (not imported).

    Raises:
        ModuleNotFoundError: `pytspl` is not installed.
        FileNotFoundError: the installed version lacks the network.
    """
    spec = importlib.util.find_spec("pytspl")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("pytspl is not installed: pip install --no-deps pytspl==0.1.5")
    folder = Path(spec.origin).parent / "data" / "transportation_networks" / name
    if not (folder / f"{name}_net.tntp").is_file():
        raise FileNotFoundError(f"'{folder}' lacks {name}_net.tntp (pytspl 0.1.5 has it)")
    return folder


def _rows(text: str) -> list[list[str]]:
    """The data rows of a TNTP table (lines starting with a number), split on whitespace."""
    return [ln.replace(";", " ").split() for ln in text.splitlines() if ln.strip()[:1].isdigit()]


def load_tntp(folder: Path, name: str) -> dict[str, Any]:
    """Read a TNTP network: links, node coordinates and the trip table.

    Returns:
        ``{"num_zones": Z, "tail", "head": int [L] (1-based TNTP node ids), "time": float [L]
        free-flow minutes, "xy": float [num_nodes + 1, 2] (row = TNTP id; x scaled by
        cos(latitude) for longitude/latitude files), "demand": float [Z, Z]}``.
    """
    net_text = (folder / f"{name}_net.tntp").read_text()
    zones = int(re.search(r"<NUMBER OF ZONES>\s*(\d+)", net_text).group(1))
    links = np.array([[float(v) for v in r[:5]] for r in _rows(net_text)])
    nodes = np.array(
        [[float(v) for v in r[:3]] for r in _rows((folder / f"{name}_node.tntp").read_text())]
    )
    xy = np.zeros((int(nodes[:, 0].max()) + 1, 2))
    xy[nodes[:, 0].astype(int)] = nodes[:, 1:3]
    if np.abs(nodes[:, 1:3]).max() <= 180:  # longitude / latitude: a local planar frame
        xy[:, 0] *= np.cos(np.deg2rad(np.median(nodes[:, 2])))
    demand = np.zeros((zones, zones))
    text = (folder / f"{name}_trips.tntp").read_text()
    for origin, block in re.findall(r"Origin\s+(\d+)(.*?)(?=Origin|\Z)", text, flags=re.S):
        for dest, value in re.findall(r"(\d+)\s*:\s*([0-9.eE+-]+)\s*;", block):
            demand[int(origin) - 1, int(dest) - 1] = float(value)
    return {
        "num_zones": zones,
        "tail": links[:, 0].astype(int),
        "head": links[:, 1].astype(int),
        "time": links[:, 4],
        "xy": xy,
        "demand": demand,
    }


def build_complex(tntp: dict[str, Any]) -> dict[str, Any]:
    """The junction complex of a TNTP network (step 1 of the module docstring).

    Returns:
        ``{"junctions": int [N0] TNTP ids, "edges": int [N1, 2] (lower, higher junction
        index), "triangles": int [N2, 3], "pos": float [N0, 2], "road": csr [N0, N0] free-flow
        minutes of the directed road links, "origins" / "dests": list per zone of the junction
        indices its connector links reach / come from}``.
    """
    Z, tail, head, time = tntp["num_zones"], tntp["tail"], tntp["head"], tntp["time"]
    road = (tail > Z) & (head > Z)
    junctions = np.unique(np.concatenate([tail[road], head[road]]))
    index = np.full(tntp["xy"].shape[0], -1)
    index[junctions] = np.arange(junctions.size)
    t, h = index[tail[road]], index[head[road]]
    n0 = junctions.size
    directed = sp.csr_matrix((np.maximum(time[road], 1e-3), (t, h)), shape=(n0, n0))
    und = ((directed + directed.T) > 0).astype(np.int64).tocsr()
    und.setdiag(0)
    und.eliminate_zeros()
    upper = sp.triu(und, k=1).tocoo()
    edges = np.stack([upper.row, upper.col], axis=1)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges = edges[order]
    nbrs = [set(und.indices[und.indptr[i] : und.indptr[i + 1]].tolist()) for i in range(n0)]
    triangles = sorted((a, b, c) for a, b in edges.tolist() for c in nbrs[a] & nbrs[b] if c > b)
    origins: list[list[int]] = [[] for _ in range(Z)]
    dests: list[list[int]] = [[] for _ in range(Z)]
    for a, b in zip(tail.tolist(), head.tolist(), strict=True):
        if a <= Z < b and index[b] >= 0:
            origins[a - 1].append(int(index[b]))
        if b <= Z < a and index[a] >= 0:
            dests[b - 1].append(int(index[a]))
    return {
        "junctions": junctions,
        "edges": edges,
        "triangles": np.array(triangles, dtype=np.int64).reshape(-1, 3),
        "pos": tntp["xy"][junctions],
        "road": directed,
        "origins": origins,
        "dests": dests,
    }


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of point ``p`` [2] to the segments ``a -> b`` ([..., 2] each)."""
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-12), 0.0, 1.0)
    return np.linalg.norm(a + t[..., None] * ab - p, axis=-1)


def route_side(pos: np.ndarray, path: list[int], c: np.ndarray) -> int:
    """1 when the landmark ``c`` lies to the left of the route ``path`` (junction indices),
    else 0 (step 3 of the module docstring).

    The closed curve "route, then straight back to the origin" winds ``w`` times around
    ``c``; the route passes ``c`` on the same side as the straight segment when ``w = 0``.
    """
    pts = pos[path] - c  # [m, 2]
    loop = np.vstack([pts, pts[:1]])
    ang = np.arctan2(loop[:, 1], loop[:, 0])
    turn = np.diff(ang)
    turn = (turn + np.pi) % (2 * np.pi) - np.pi
    winding = int(round(turn.sum() / (2 * np.pi)))
    o, d = pts[0], pts[-1]
    straight_left = (d[0] - o[0]) * (-o[1]) - (d[1] - o[1]) * (-o[0]) > 0  # c left of o -> d
    return int(straight_left != (winding != 0))


def _candidate_pairs(
    cx: dict[str, Any], demand: np.ndarray, c: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """The zone pairs (flat indices, demand weights) whose straight segment between their
    connector junctions' centroids passes within ``radius`` of ``c``, with both ends farther."""
    Z = demand.shape[0]
    pos = cx["pos"]
    ok = [bool(cx["origins"][z]) and bool(cx["dests"][z]) for z in range(Z)]
    o_xy = np.array([pos[cx["origins"][z]].mean(0) if ok[z] else [np.nan] * 2 for z in range(Z)])
    d_xy = np.array([pos[cx["dests"][z]].mean(0) if ok[z] else [np.nan] * 2 for z in range(Z)])
    a = np.broadcast_to(o_xy[:, None, :], (Z, Z, 2))
    b = np.broadcast_to(d_xy[None, :, :], (Z, Z, 2))
    with np.errstate(invalid="ignore"):
        near = _segment_distance(c, a, b) < radius
        far = (np.linalg.norm(a - c, axis=-1) > radius) & (np.linalg.norm(b - c, axis=-1) > radius)
    w = np.where(near & far & np.isfinite(a[..., 0]) & np.isfinite(b[..., 0]), demand, 0.0)
    np.fill_diagonal(w, 0.0)
    flat = np.flatnonzero(w.ravel() > 0)
    return flat, w.ravel()[flat]


def sample_trips(
    cx: dict[str, Any],
    demand: np.ndarray,
    c: np.ndarray,
    radius: float,
    num_trips: int,
    rng: np.random.Generator,
) -> tuple[list[list[int]], np.ndarray, list[str]]:
    """Draw and route ``num_trips`` trips (step 2) and label them (step 3).

    Returns:
        ``(paths, labels, ids)``: junction paths (at least 2 road segments, no repeated
        junction), labels ``int64 [S]``, ids ``"<trip>:<o>-><d>"`` (1-based zones).

    Raises:
        ValueError: no pair qualifies, or too few routable trips were found.
    """
    flat, weight = _candidate_pairs(cx, demand, c, radius)
    if flat.size == 0:
        raise ValueError(f"no zone pair passes within {radius:.4g} of the landmark {c.tolist()}")
    Z = demand.shape[0]
    road = cx["road"].tocoo()
    paths, labels, ids = [], [], []
    attempts = 0
    while len(paths) < num_trips and attempts < 4 * num_trips:
        attempts += 1
        pair = int(rng.choice(flat, p=weight / weight.sum()))
        o, d = divmod(pair, Z)
        s = int(rng.choice(cx["origins"][o]))
        t = int(rng.choice(cx["dests"][d]))
        cost = road.data * np.exp(SIGMA * rng.standard_normal(road.data.size))
        graph = sp.csr_matrix((cost, (road.row, road.col)), shape=road.shape)
        _, pred = csgraph.dijkstra(graph, indices=s, return_predecessors=True)
        if s == t or pred[t] < 0:
            continue
        path = [t]
        while path[-1] != s:
            path.append(int(pred[path[-1]]))
        path = path[::-1]
        if len(path) < 3:
            continue
        paths.append(path)
        labels.append(route_side(cx["pos"], path, c))
        ids.append(f"{len(paths) - 1}:{o + 1}->{d + 1}")
    if len(paths) < num_trips:
        raise ValueError(f"only {len(paths)} of {num_trips} trips could be routed")
    return paths, np.asarray(labels, dtype=np.int64), ids


def _choose_landmark(
    cx: dict[str, Any], demand: np.ndarray, num_trips: int, rng: np.random.Generator
) -> tuple[np.ndarray, float, list[dict[str, Any]]]:
    """The landmark and radius (module docstring, step 3): for each candidate point near the
    junction centroid, the smallest radius leaving ``num_trips`` qualifying pairs, and the
    class balance of 200 trial trips; the most balanced candidate wins."""
    pos = cx["pos"]
    seg = np.median(np.linalg.norm(pos[cx["edges"][:, 0]] - pos[cx["edges"][:, 1]], axis=1))
    centre = pos.mean(0)
    spread = pos.std(0)
    tried = []
    for dx, dy in ((0, 0), (0.25, 0), (-0.25, 0), (0, 0.25), (0, -0.25)):
        c = centre + np.array([dx, dy]) * spread + 0.1234 * seg  # off any road
        for f in RADIUS_FACTORS:
            flat, _ = _candidate_pairs(cx, demand, c, f * seg)
            if flat.size >= min(num_trips, 30):
                break
        trial_rng = np.random.default_rng(rng.integers(2**31))
        _, y, _ = sample_trips(cx, demand, c, f * seg, 200, trial_rng)
        tried.append({"landmark": c.tolist(), "radius": float(f * seg), "pairs": int(flat.size),
                      "balance": float(y.mean())})  # fmt: skip
    best = min(tried, key=lambda t: abs(t["balance"] - 0.5))
    return np.asarray(best["landmark"]), best["radius"], tried


def endpoint_features(paths: list[list[int]], n0: int) -> np.ndarray:
    """One-hot origin and destination junctions, ``float [S, 2 N0]``: what the endpoints
    alone tell a linear classifier."""
    X = np.zeros((len(paths), 2 * n0))
    for i, p in enumerate(paths):
        X[i, p[0]] = 1.0
        X[i, n0 + p[-1]] = 1.0
    return X


def build(name: str, num_trips: int, seed: int) -> dict[str, Any]:
    """Build network ``name``'s complex and trips; returns the arrays of the data file and
    the statistics of the report."""
    rng = np.random.default_rng(seed)
    tntp = load_tntp(find_network(name), name)
    cx = build_complex(tntp)
    c, radius, tried = _choose_landmark(cx, tntp["demand"], num_trips, rng)
    paths, labels, ids = sample_trips(cx, tntp["demand"], c, radius, num_trips, rng)
    lengths = np.array([len(p) - 1 for p in paths])
    pairs: dict[str, set[int]] = {}
    for i, y in zip(ids, labels.tolist(), strict=True):
        pairs.setdefault(i.split(":")[1], set()).add(y)
    arrays = {
        "edge_index": cx["edges"].T.copy(),
        "triangles": cx["triangles"],
        "num_nodes": np.int64(cx["pos"].shape[0]),
        "path_nodes": np.concatenate([np.asarray(p, dtype=np.int64) for p in paths]),
        "path_ptr": np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64),
        "labels": labels,
        "pos": cx["pos"],
        "sample_ids": np.asarray(ids),
    }
    stats = {
        "network": name,
        "sizes": [
            int(cx["pos"].shape[0]),
            int(cx["edges"].shape[0]),
            int(cx["triangles"].shape[0]),
        ],
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
    from topo_contrastive.experiments import ExperimentData, linear_probe
    from topo_contrastive.experiments.data import load_data_file

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


def main(
    out: str = "data/road_networks",
    networks: tuple[str, ...] = NETWORKS,
    num_trips: int = 1000,
    seed: int = 0,
    probe: bool = True,
) -> dict[str, Any]:
    """Write ``<out>/<network>.npz`` for each network and the report
    ``<out>/road_networks.json`` / ``.md``; returns the report."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"seed": seed, "networks": {}}
    for name in tqdm(networks, desc="road networks", unit="network"):
        built = build(name, num_trips, seed)
        target = folder / f"{name.replace('-', '_')}.npz"

        def write(tmp: str, arrays: dict[str, Any] = built["arrays"]) -> None:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)

        atomic_write(target, write)
        stats = built["stats"]
        if probe:
            stats["probe"] = probe_report(built, target)
        report["networks"][name] = stats
    write_json(folder / "road_networks.json", report)
    write_text(folder / "road_networks.md", report_markdown(report))
    return report


def report_markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [
        "| network | N0 / N1 / N2 | beta_1 | trips | path edges (mean) | class 1 | pairs with both "
        "labels (their trips) | SVM: endpoints | SVM: raw flows |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in report["networks"].items():
        p = s.get("probe", {})
        lines.append(
            f"| {name} | {' / '.join(map(str, s['sizes']))} | {p.get('beta_1', '-')} | "
            f"{s['trips']} | {s['path_edges']['min']}-{s['path_edges']['max']} "
            f"({s['path_edges']['mean']:.1f}) | {100 * s['class_1_share']:.1f} % | "
            f"{s['pairs_with_both_labels']} of {s['pairs']} "
            f"({s['trips_of_pairs_with_both_labels']}) | "
            f"{p.get('endpoints', float('nan')):.1f} % | {p.get('raw flows', float('nan')):.1f} % |"
        )
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
    return p


if __name__ == "__main__":
    a = build_parser().parse_args()
    if a.quick:
        a.networks, a.trips, a.no_probe = ["anaheim"], 100, True
    rep = main(a.out, tuple(a.networks), a.trips, a.seed, not a.no_probe)
    print(report_markdown(rep))
