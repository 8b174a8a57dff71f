r"""2-cells for a network: the faces of its planar embedding, or its short cycles.

A road, street or grid network is a graph; filling only its triangles (3-cliques) leaves
every street block an unfilled cycle, so :math:`\beta_1` counts city blocks, not real holes.
The faces of the network's embedding in the plane are its natural 2-cells: filling them up
to a length or an area leaves unfilled only the large faces (rivers, parks, the sea, the
outer face), which then carry the harmonic flows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["planar_faces", "short_cycles"]


def _edge_array(edges: Any) -> np.ndarray:
    arr = np.asarray(edges.detach().cpu() if hasattr(edges, "detach") else edges)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"`edges` must be an integer array [N1, 2] of node pairs, got "
            f"{'dtype ' + str(arr.dtype) + ' and ' if arr.size else ''}shape {arr.shape}"
        )
    if (arr[:, 0] == arr[:, 1]).any():
        row = int(np.flatnonzero(arr[:, 0] == arr[:, 1])[0])
        raise ValueError(f"`edges` row {row} is a self-loop")
    return arr.astype(np.int64)


def _check_limit(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"`{name}` must be a positive number or None, got {value!r}")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive number or None, got {value}")
    return float(value)


def planar_faces(
    edges: Any,
    pos: Any,
    max_length: int | None = None,
    max_area: float | None = None,
) -> list[list[int]]:
    r"""The bounded faces of a network drawn in the plane with straight edges, as node
    cycles (counter-clockwise), for :meth:`SimplicialOperators.from_cells
    <topo_contrastive.SimplicialOperators.from_cells>`.

    Every node orders its edges by angle; a face is traced by leaving each node along the
    edge next clockwise after the one it arrived by (the rotation system of the drawing),
    which walks every edge once in each direction. The walks of positive signed area
    (shoelace formula) that are simple cycles of at least three nodes are the bounded faces;
    the outer face (negative area) is left out. On a planar drawing, filling every bounded
    face gives :math:`\beta_1 = 0` per connected component. Where edges cross (bridges,
    overpasses), a walk may revisit a node: such walks are not simple cycles and are not
    filled.

    Source: Edmonds' rotation systems (Mohar & Thomassen, *Graphs on Surfaces*, 2001, §3.2);
    faces of road networks as 2-cells: Roddenberry, Schaub, Hajij, "Signal processing on
    cell complexes", ICASSP 2022.

    Args:
        edges: ``int [N1, 2]`` node pairs (an undirected simple graph: the orientation is
            ignored, a pair given twice counts once).
        pos: ``float [N0, 2]`` node coordinates (any unit).
        max_length: fill only faces of at most this many edges (``None``: no limit).
        max_area: fill only faces of at most this area, in squared units of ``pos``
            (``None``: no limit).

    Returns:
        The faces as lists of node ids, ordered by their first node, then length.

    Raises:
        ValueError: ``edges`` not ``[N1, 2]`` integers or with a self-loop; ``pos`` not
            ``[N0, 2]`` finite with a row for every node; non-positive limits.
        TypeError: limits that are not numbers.
    """
    e = _edge_array(edges)
    p = np.asarray(pos, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or not np.isfinite(p).all():
        raise ValueError(f"`pos` must be a finite float array [N0, 2], got shape {p.shape}")
    if e.size and (e.min() < 0 or e.max() >= p.shape[0]):
        raise ValueError(
            f"`edges` has node ids in [{int(e.min())}, {int(e.max())}] but `pos` has "
            f"{p.shape[0]} rows"
        )
    max_len = _check_limit(max_length, "max_length")
    max_a = _check_limit(max_area, "max_area")
    pairs = np.unique(np.sort(e, axis=1), axis=0)
    # half-edges u -> v, both directions, sorted by tail and angle
    tail = np.concatenate([pairs[:, 0], pairs[:, 1]])
    head = np.concatenate([pairs[:, 1], pairs[:, 0]])
    d = p[head] - p[tail]
    angle = np.arctan2(d[:, 1], d[:, 0])
    order = np.lexsort((angle, tail))  # by tail, then counter-clockwise angle
    tail, head = tail[order], head[order]
    m = tail.size
    start = np.searchsorted(tail, np.arange(p.shape[0]))
    count = np.bincount(tail, minlength=p.shape[0])
    rank = np.arange(m) - start[tail]  # position of each half-edge around its tail
    # the twin v -> u of every half-edge u -> v
    key = tail * p.shape[0] + head
    by_key = np.argsort(key)
    twin = by_key[np.searchsorted(key[by_key], head * p.shape[0] + tail)]
    # arriving at v along u -> v, leave along the edge clockwise next after v -> u
    tw = twin
    nxt = start[tail[tw]] + (rank[tw] - 1) % count[tail[tw]]
    seen = np.zeros(m, dtype=bool)
    faces = []
    for h0 in range(m):
        if seen[h0]:
            continue
        cycle = []
        h = h0
        while not seen[h]:
            seen[h] = True
            cycle.append(int(tail[h]))
            h = int(nxt[h])
        if len(cycle) < 3 or len(set(cycle)) != len(cycle):
            continue
        xy = p[cycle]
        area = 0.5 * float(np.dot(xy[:, 0], np.roll(xy[:, 1], -1)) -
                           np.dot(xy[:, 1], np.roll(xy[:, 0], -1)))  # fmt: skip
        if area <= 0:
            continue  # the outer face (clockwise), or a degenerate walk
        if (max_len is not None and len(cycle) > max_len) or (max_a is not None and area > max_a):
            continue
        k = int(np.argmin(cycle))
        faces.append(cycle[k:] + cycle[:k])
    faces.sort(key=lambda c: (c[0], len(c), c))
    return faces


def short_cycles(edges: Any, max_length: int) -> list[list[int]]:
    """The chordless cycles of a network of at most ``max_length`` edges, as node cycles:
    the 2-cells of a network without coordinates (triangles for ``max_length=3``; with
    ``4``, also the squares without a diagonal, and so on).

    Source: ``networkx.chordless_cycles`` (Dias, Castonguay, Longo, Jradi, "Efficient
    enumeration of chordless cycles", 2014).

    Args:
        edges: ``int [N1, 2]`` node pairs (undirected).
        max_length: the longest cycle to fill, ``>= 3``.

    Returns:
        The cycles as lists of node ids, each starting at its smallest node, sorted.

    Raises:
        ValueError: ``edges`` not ``[N1, 2]`` integers or with a self-loop; ``max_length``
            below 3.
        TypeError: ``max_length`` not an int.
    """
    import networkx as nx

    e = _edge_array(edges)
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise TypeError(f"`max_length` must be an int >= 3, got {max_length!r}")
    if max_length < 3:
        raise ValueError(f"`max_length` must be >= 3, got {max_length}")
    graph = nx.Graph()
    graph.add_edges_from(map(tuple, e.tolist()))
    out = []
    for cycle in nx.chordless_cycles(graph, length_bound=int(max_length)):
        if len(cycle) < 3:
            continue
        k = int(np.argmin(cycle))
        c = cycle[k:] + cycle[:k]
        if c[1] > c[-1]:  # one orientation per cycle: the second node the smaller neighbour
            c = [c[0], *reversed(c[1:])]
        out.append([int(v) for v in c])
    out.sort(key=lambda c: (len(c), c))
    return out
