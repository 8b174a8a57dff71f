"""A synthetic road network with routed trips as a ``--data-file`` (``.npz``), of a requested
number of edges: the user's network of the evaluation benchmark (``bench_evaluate.py``).

The recipe of ``examples/road_networks.py`` on a synthetic map instead of a TNTP network:
junctions are uniform random points in the unit square, roads the edges of their Delaunay
triangulation (the longest ones dropped until ``num_edges`` remain), a tenth of the
triangles filled (the rest are city blocks, so :math:`\\beta_1` is large, as on a real road
network). A trip joins two junctions whose straight segment passes within ``radius`` of a
landmark at the centre while both lie farther from it, and is routed on the shortest path
for its own perturbed road lengths (length times :math:`\\exp(0.5 z)`, :math:`z \\sim N(0, 1)`
per road and trip); its label is the side of the landmark the route passes
(``examples/road_networks.py``'s ``route_side``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
from scipy.spatial import Delaunay

from topo_contrastive._utils.files import atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from road_networks import SIGMA, route_side  # noqa: E402

__all__ = ["synthetic_road_network"]


def synthetic_road_network(
    path: str | Path, num_edges: int = 1595, num_trips: int = 1000, seed: int = 0,
    filled: float = 0.1, radius: float = 0.15,
) -> dict[str, int | float]:  # fmt: skip
    """Write the network and its labelled trips to ``path`` (``.npz``, atomically).

    Args:
        path: the data file.
        num_edges: roads (edges) of the network (default 1,595).
        num_trips: trips (samples) (default 1,000).
        seed: seed of the map, the trips and their perturbations (default 0).
        filled: share of the Delaunay triangles (of kept edges) that are filled (default 0.1).
        radius: distance of the landmark within which a trip's straight segment passes
            (default 0.15, in units of the map's side).

    Returns:
        ``{"N0", "N1", "N2", "trips", "class_1_share"}``.

    Raises:
        ValueError: ``num_edges < 10``, or too few trips could be routed.
    """
    if num_edges < 10:
        raise ValueError(f"`num_edges` must be at least 10, got {num_edges}")
    rng = np.random.default_rng(seed)
    pts = rng.random((int(num_edges / 2.95) + 2, 2))
    tri = np.sort(Delaunay(pts).simplices.astype(np.int64), axis=1)
    edges = np.unique(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), axis=0)
    length = np.linalg.norm(pts[edges[:, 0]] - pts[edges[:, 1]], axis=1)
    keep = np.sort(np.argsort(length, kind="stable")[:num_edges])
    edges, length = edges[keep], length[keep]
    n0 = pts.shape[0]
    known = {tuple(e) for e in edges.tolist()}
    closed = [t for t in tri.tolist()
              if {(t[0], t[1]), (t[1], t[2]), (t[0], t[2])} <= known]  # fmt: skip
    chosen = rng.random(len(closed)) < filled
    triangles = np.array([t for t, c in zip(closed, chosen, strict=True) if c],
                         dtype=np.int64).reshape(-1, 3)  # fmt: skip
    c = np.array([0.5, 0.5]) + 0.01234
    far = np.flatnonzero(np.linalg.norm(pts - c, axis=1) > radius)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    base = np.concatenate([length, length])
    paths: list[list[int]] = []
    attempts = 0
    while len(paths) < num_trips and attempts < 50 * num_trips:
        attempts += 1
        s, t = (int(v) for v in rng.choice(far, size=2, replace=False))
        a, b = pts[s], pts[t]
        ab = b - a
        u = np.clip(((c - a) @ ab) / max(ab @ ab, 1e-12), 0.0, 1.0)
        if np.linalg.norm(a + u * ab - c) >= radius:
            continue
        cost = base * np.exp(SIGMA * rng.standard_normal(base.size))
        graph = sp.csr_matrix((cost, (rows, cols)), shape=(n0, n0))
        _, pred = csgraph.dijkstra(graph, indices=s, return_predecessors=True)
        if pred[t] < 0:
            continue
        route = [t]
        while route[-1] != s:
            route.append(int(pred[route[-1]]))
        if len(route) >= 3:
            paths.append(route[::-1])
    if len(paths) < num_trips:
        raise ValueError(f"only {len(paths)} of {num_trips} trips could be routed")
    labels = np.array([route_side(pts, p, c) for p in paths], dtype=np.int64)
    arrays = {
        "edge_index": edges.T.copy(),
        "triangles": triangles,
        "num_nodes": np.int64(n0),
        "path_nodes": np.concatenate([np.asarray(p, dtype=np.int64) for p in paths]),
        "path_ptr": np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64),
        "labels": labels,
        "pos": pts,
    }

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    atomic_write(Path(path), write)
    return {"N0": int(n0), "N1": int(edges.shape[0]), "N2": int(triangles.shape[0]),
            "trips": len(paths), "class_1_share": float(labels.mean())}  # fmt: skip
