"""Trips with route-dependent labels on the road networks of the TNTP format.

The recipe of ``examples/road_networks.py`` (its docstring gives the full account), for the
reuse study's networks: the junction complex of a TNTP network (its junctions, every road
between two of them one edge, its 3-cliques filled), ``num_trips`` trips routed on
per-trip perturbed free-flow times between origin-destination zones drawn by demand, and the
label of each trip: which side of a landmark point its route passes (a property of the
route, not of its endpoints).

- :func:`find_network`, :func:`load_tntp`, :func:`build_complex`: the network;
- :func:`network_trips`: the landmark and the labelled trips (:func:`sample_trips`,
  :func:`choose_landmark`, :func:`route_side`, :func:`winding_number`);
- :func:`trip_arrays` and :func:`write_trips_file`: the ``.npz`` data file
  (:class:`~topo_contrastive.datasets.EdgeFlows`' format).

Source: the networks of the Transportation Networks for Research collection (TNTP format),
as shipped by `pytspl` (``pip install --no-deps pytspl==0.1.5``; only its data files are read).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from experiments._helpers import atomic_write

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


def winding_number(xy: np.ndarray, c: np.ndarray) -> int:
    """How many times the closed polygon ``xy`` [m, 2] winds around the point ``c``
    (counter-clockwise positive)."""
    pts = xy - c
    loop = np.vstack([pts, pts[:1]])
    ang = np.arctan2(loop[:, 1], loop[:, 0])
    turn = np.diff(ang)
    turn = (turn + np.pi) % (2 * np.pi) - np.pi
    return int(round(turn.sum() / (2 * np.pi)))


def route_side(pos: np.ndarray, path: list[int], c: np.ndarray) -> int:
    """1 when the landmark ``c`` lies to the left of the route ``path`` (junction indices),
    else 0 (step 3 of the module docstring).

    The closed curve "route, then straight back to the origin" winds ``w`` times around
    ``c``; the route passes ``c`` on the same side as the straight segment when ``w = 0``.
    """
    pts = pos[path] - c  # [m, 2]
    winding = winding_number(pos[path], c)
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


def choose_landmark(
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


def network_trips(name: str, num_trips: int, seed: int) -> dict[str, Any]:
    """Network ``name``'s junction complex, landmark and ``num_trips`` labelled trips.

    Args:
        name: the network's folder name in `pytspl` (``"anaheim"``, ``"chicago-sketch"``,
            ``"goldcoast"``, ...; it needs junction coordinates and a trip table).
        num_trips: trips to draw.
        seed: seed of the landmark's trial trips and of the trips.

    Returns:
        ``{"tntp": load_tntp's dict, "cx": build_complex's dict, "landmark": float [2],
        "radius": float, "landmark_candidates": list, "paths": list of junction paths,
        "labels": int64 [S], "ids": list of str}``.

    Raises:
        ModuleNotFoundError / FileNotFoundError: see :func:`find_network`.
        ValueError: see :func:`sample_trips`.
    """
    rng = np.random.default_rng(seed)
    tntp = load_tntp(find_network(name), name)
    cx = build_complex(tntp)
    c, radius, tried = choose_landmark(cx, tntp["demand"], num_trips, rng)
    paths, labels, ids = sample_trips(cx, tntp["demand"], c, radius, num_trips, rng)
    return {"tntp": tntp, "cx": cx, "landmark": c, "radius": radius,
            "landmark_candidates": tried, "paths": paths, "labels": labels,
            "ids": ids}  # fmt: skip


def trip_arrays(trips: dict[str, Any], cells: dict[str, np.ndarray] | None = None
                ) -> dict[str, np.ndarray]:  # fmt: skip
    """The arrays of the data file of :func:`network_trips`' output: ``edge_index``
    ``[2, N1]``, the 2-cells (``cells``: ``triangles`` ``[N2, 3]`` or ``cell_nodes`` /
    ``cell_ptr``; default: the 3-cliques), ``num_nodes``, the trips as ``path_nodes`` /
    ``path_ptr``, ``labels`` ``[S]``, ``pos`` ``[N0, 2]`` and ``sample_ids`` ``[S]``."""
    cx, paths = trips["cx"], trips["paths"]
    if cells is None:
        cells = {"triangles": np.asarray(cx["triangles"], dtype=np.int64).reshape(-1, 3)}
    return {
        "edge_index": cx["edges"].T.copy(),
        **cells,
        "num_nodes": np.int64(cx["pos"].shape[0]),
        "path_nodes": np.concatenate([np.asarray(p, dtype=np.int64) for p in paths]),
        "path_ptr": np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64),
        "labels": trips["labels"],
        "pos": cx["pos"],
        "sample_ids": np.asarray(trips["ids"]),
    }


def write_trips_file(name: str, target: str | Path, num_trips: int, seed: int
                     ) -> dict[str, Any]:  # fmt: skip
    """Write network ``name``'s trips (:func:`network_trips`, its 3-cliques filled) as the
    data file ``target`` (``.npz``, atomically); returns :func:`network_trips`' output.

    Raises:
        ModuleNotFoundError / FileNotFoundError / ValueError: see :func:`network_trips`.
    """
    trips = network_trips(name, num_trips, seed)
    arrays = trip_arrays(trips)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    atomic_write(target, write)
    return trips
