r"""2-cells for a network: the faces of its planar drawing, or its short cycles (filling only
a road network's triangles leaves every block a hole; filling its faces up to a length or an
area leaves only the large ones, rivers, parks, the sea, to carry the harmonic flows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from topo_contrastive._utils.checks import check_finite, check_int, check_real


def _edge_array(edges: Any) -> np.ndarray:
    """``edges`` as ``int64 [N1, 2]``, checked."""
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
    """A positive limit, or ``None``."""
    return None if value is None else check_real(value, name, 0.0, open_low=True)


def _check_pos(pos: Any, e: np.ndarray) -> tuple[np.ndarray, int]:
    """``pos`` float64 ``[N0, 2]`` checked, as :func:`_normalise`'s drawing and exponent."""
    raw = pos.detach().cpu() if hasattr(pos, "detach") else pos
    try:
        p = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"`pos` must be a real array [N0, 2] of node coordinates, got {type(pos).__name__}"
        ) from None
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"`pos` must be a finite float array [N0, 2], got shape {p.shape}")
    check_finite(p, "pos", unit="node")
    if e.size and (e.min() < 0 or e.max() >= p.shape[0]):
        raise ValueError(
            f"`edges` has node ids in [{int(e.min())}, {int(e.max())}] but `pos` has "
            f"{p.shape[0]} rows"
        )
    return _normalise(p)


def _normalise(p: np.ndarray) -> tuple[np.ndarray, int]:
    """``(q, k)``: the drawing ``p [N0, 2]`` moved to the origin and scaled into ``[0, 1]^2``
    by powers of two (``p`` is ``q * 2**k`` shifted); two nodes at one point are refused."""
    if p.shape[0] == 0:
        return p.copy(), 0
    # first into [-1, 1] (the shift below then cannot overflow), then shifted and scaled
    top = float(np.abs(p).max())
    k = int(np.frexp(top)[1]) if top > 0 else 0
    q = np.ldexp(p, -k)
    q = q - q.min(axis=0)
    extent = float(q.max())
    if extent > 0:
        k2 = int(np.frexp(extent)[1])
        q, k = np.ldexp(q, -k2), k + k2
    elif p.shape[0] > 1:
        raise ValueError(
            f"`pos` puts all {p.shape[0]} nodes at one point "
            f"({', '.join(repr(float(v)) for v in p[0])}): the drawing has no extent"
        )
    if p.shape[0] > 1:
        order = np.lexsort((q[:, 1], q[:, 0]))
        same = np.flatnonzero((np.diff(q[order], axis=0) == 0).all(axis=1))
        if same.size:
            i, j = sorted((int(order[same[0]]), int(order[same[0] + 1])))
            shared = np.unique(np.concatenate([order[same], order[same + 1]])).size
            at = ", ".join(repr(float(v)) for v in p[i])
            lost = "" if (p[i] == p[j]).all() else (
                f" (they differ by {np.abs(p[i] - p[j]).max():.3g}, below the resolution "
                f"of float64 at the drawing's extent)"
            )  # fmt: skip
            raise ValueError(
                f"`pos` puts nodes {i} and {j} at one point ({at}){lost}: every node of the "
                f"drawing needs a position of its own ({shared} nodes in all share theirs)"
            )
    return q, k


def _orient(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Sign of the turn p -> q -> r (+1 left, -1 right, 0 collinear), rows at a time."""
    return np.sign((q[:, 0] - p[:, 0]) * (r[:, 1] - p[:, 1])
                   - (q[:, 1] - p[:, 1]) * (r[:, 0] - p[:, 0]))  # fmt: skip


#: kinds of meeting of two segments: a proper crossing (one point inside both), an end
#: node inside the other segment, a common stretch of two collinear segments
_PROPER, _TOUCH, _OVERLAP = 0, 1, 2


def _crossing_pairs(
    pairs: np.ndarray, p: np.ndarray, chunk: int = 1 << 22
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(i, j)``, ``i < j``, of the segments ``pairs [M, 2]`` that meet away from a
    shared end node, and how (``int8 [K]`` of ``_PROPER``, ``_TOUCH``, ``_OVERLAP``), by a
    sweep over x; a row ``(v, v)`` is node ``v`` alone (it touches the segments it lies on)."""
    m = pairs.shape[0]
    if m < 2:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int8)
    a, b = p[pairs[:, 0]], p[pairs[:, 1]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    single = pairs[:, 0] == pairs[:, 1]
    order = np.argsort(lo[:, 0], kind="stable")
    xmin = lo[order, 0]
    # in x order, segment k is compared with k+1 .. end[k]-1 (those starting before it ends)
    end = np.searchsorted(xmin, hi[order, 0], side="right")
    count = end - np.arange(m) - 1
    out, kinds = [], []
    k = 0
    while k < m:  # chunks of at most `chunk` candidate pairs (one long segment may exceed it)
        stop = k + max(1, int(np.searchsorted(np.cumsum(count[k:]), chunk, side="right")))
        rows = np.repeat(np.arange(k, stop), count[k:stop])
        first = np.repeat(np.cumsum(count[k:stop]) - count[k:stop], count[k:stop])
        cols = rows + 1 + (np.arange(rows.size) - first)
        i, j = order[rows], order[cols]
        keep = (lo[i, 1] <= hi[j, 1]) & (lo[j, 1] <= hi[i, 1]) & ~(single[i] & single[j])
        i, j = i[keep], j[keep]
        e00, e01 = pairs[i, 0] == pairs[j, 0], pairs[i, 0] == pairs[j, 1]
        e10, e11 = pairs[i, 1] == pairs[j, 0], pairs[i, 1] == pairs[j, 1]
        shared = e00 | e01 | e10 | e11
        o1, o2 = _orient(a[i], b[i], a[j]), _orient(a[i], b[i], b[j])
        o3, o4 = _orient(a[j], b[j], a[i]), _orient(a[j], b[j], b[i])
        # collinear segments (all four turns 0) meet too: their boxes overlap in x (the
        # sweep) and in y (above)
        meet = ~shared & (o1 * o2 <= 0) & (o3 * o4 <= 0)
        kind = np.where((o1 * o2 < 0) & (o3 * o4 < 0), _PROPER, _TOUCH)
        collinear = (o1 == 0) & (o2 == 0) & (o3 == 0) & (o4 == 0) & ~single[i] & ~single[j]
        kind[collinear] = _OVERLAP
        # two edges with one end node s in common meet elsewhere only along a common
        # stretch: collinear, both leaving s the same way (a node alone never counts here)
        at_a = e00 | e01
        s = np.where(at_a[:, None], a[i], b[i])
        u = np.where(at_a[:, None], b[i], a[i]) - s
        w = np.where((e00 | e10)[:, None], b[j], a[j]) - s
        along = (u[:, 0] * w[:, 1] == u[:, 1] * w[:, 0]) & ((u * w).sum(axis=1) > 0)
        along &= shared & ~single[i] & ~single[j]
        kind[along] = _OVERLAP
        meet |= along
        out.append(np.sort(np.stack([i[meet], j[meet]], axis=1), axis=1))
        kinds.append(kind[meet].astype(np.int8))
        k = stop
    found = np.concatenate(out)
    kind = np.concatenate(kinds)
    by = np.lexsort((found[:, 1], found[:, 0]))
    return found[by].astype(np.int64), kind[by]


def edge_crossings(edges: Any, pos: Any) -> np.ndarray:
    r"""The pairs of edges of a straight-line drawing that cross: bridges, overpasses and
    tunnels of a road network, or errors in its coordinates.

    Two edges cross when their segments meet at a point that is not a node they share:
    a proper crossing, an edge running through a node that is not its end, or two
    collinear edges that overlap along a common stretch (whether or not they share an end
    node). Any finite scale (``1e-320`` to ``1e300``) and offset of the coordinates gives
    the same answer; a sweep over x finds the crossings in about
    :math:`O(N_1 \log N_1 + K)` for :math:`K` compared pairs.

    Source: the orientation test of computational geometry (de Berg, Cheong, van Kreveld,
    Overmars, *Computational Geometry*, 3rd ed., 2008, §2.1).

    Args:
        edges: ``int [N1, 2]`` node pairs (a pair given twice counts once).
        pos: ``float [N0, 2]`` node coordinates.

    Returns:
        ``int64 [K, 2]``: rows ``(i, j)``, ``i < j``, indices into ``edges`` (the first
        row of a repeated pair), sorted.

    Raises:
        ValueError: ``edges`` not ``[N1, 2]`` integers or with a self-loop; ``pos`` not
            ``[N0, 2]``, not finite, without a row for every node, or with two nodes at
            one point (after the scaling, at float64 resolution).
        TypeError: ``pos`` not numbers.
    """
    e = _edge_array(edges)
    q = _check_pos(pos, e)[0]
    pairs, first = np.unique(np.sort(e, axis=1), axis=0, return_index=True)
    found = _crossing_pairs(pairs, q)[0]
    rows = np.sort(first[found], axis=1) if found.size else found
    return rows[np.lexsort((rows[:, 1], rows[:, 0]))] if rows.size else rows


def _meetings(pairs: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The crossings of the edges ``pairs`` in the drawing ``q`` and their kinds (as
    :func:`_crossing_pairs`), and the rows ``(node, row into pairs)`` of the nodes inside
    edges that do not end there, by node."""
    n, m = q.shape[0], pairs.shape[0]
    nodes = np.arange(n, dtype=np.int64)
    found, kind = _crossing_pairs(np.concatenate([pairs, np.stack([nodes, nodes], 1)]), q)
    alone = found[:, 1] >= m  # a node alone (rows m..) inside an edge (the lower row)
    inside = np.stack([found[alone, 1] - m, found[alone, 0]], axis=1)
    inside = inside[np.lexsort((inside[:, 1], inside[:, 0]))]
    return found[~alone], kind[~alone], inside


def _set_aside(pairs: np.ndarray, crossings: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Rows of ``pairs`` to leave out so that no two of the rest cross: greedily the edge in
    most remaining crossings, the longer on a tie, then the lower row."""
    if crossings.size == 0:
        return np.zeros(0, dtype=np.int64)
    length = np.linalg.norm(p[pairs[:, 1]] - p[pairs[:, 0]], axis=1)
    left = crossings
    out = []
    while left.size:
        count = np.bincount(left.ravel(), minlength=pairs.shape[0])
        most = np.flatnonzero(count == count.max())
        pick = int(most[np.argmax(length[most])])  # argmax: the first (lowest row) on ties
        out.append(pick)
        left = left[(left[:, 0] != pick) & (left[:, 1] != pick)]
    return np.sort(np.asarray(out, dtype=np.int64))


def _reduce_walk(walk: list[int]) -> list[int]:
    """A closed walk without its back-and-forth steps ``u -> v -> u``, cyclically."""
    st: list[int] = []
    for v in walk:
        if len(st) >= 2 and st[-2] == v:
            st.pop()
        else:
            st.append(v)
    while len(st) >= 3:  # a dead end across the walk's start: ... u -> v -> u ...
        if st[1] == st[-1]:  # its tip st[0]
            st = st[1:-1]
        elif st[-2] == st[0]:  # its tip st[-1]
            st = st[:-2]
        else:
            break
    return st if len(st) >= 3 else []


def _walks(pairs: np.ndarray, q: np.ndarray) -> list[tuple[list[int], float]]:
    """The closed walks of the drawing ``q`` of the edges ``pairs`` (leaving each node along
    the edge next clockwise after the one it arrived by) and their signed areas."""
    n = q.shape[0]
    # half-edges u -> v, both directions, sorted by tail and angle
    tail = np.concatenate([pairs[:, 0], pairs[:, 1]])
    head = np.concatenate([pairs[:, 1], pairs[:, 0]])
    d = q[head] - q[tail]
    order = np.lexsort((np.arctan2(d[:, 1], d[:, 0]), tail))  # by tail, then angle
    tail, head = tail[order], head[order]
    m = tail.size
    start = np.searchsorted(tail, np.arange(n))
    count = np.bincount(tail, minlength=n)
    rank = np.arange(m) - start[tail]  # position of each half-edge around its tail
    # the twin v -> u of every half-edge u -> v
    key = tail * n + head
    by_key = np.argsort(key)
    twin = by_key[np.searchsorted(key[by_key], head * n + tail)]
    # arriving at v along u -> v, leave along the edge clockwise next after v -> u
    nxt = start[tail[twin]] + (rank[twin] - 1) % np.maximum(count[tail[twin]], 1)
    seen = np.zeros(m, dtype=bool)
    out = []
    for h0 in range(m):
        if seen[h0]:
            continue
        walk = []
        h = h0
        while not seen[h]:
            seen[h] = True
            walk.append(int(tail[h]))
            h = int(nxt[h])
        xy = q[walk]
        area = 0.5 * float(np.dot(xy[:, 0], np.roll(xy[:, 1], -1)) -
                           np.dot(xy[:, 1], np.roll(xy[:, 0], -1)))  # fmt: skip
        out.append((walk, area))
    return out


def planar_faces(
    edges: Any, pos: Any, max_length: int | None = None, max_area: float | None = None,
    return_skipped: bool = False,
) -> list[list[int]] | tuple[list[list[int]], dict[str, Any]]:  # fmt: skip
    r"""The bounded faces of a network drawn in the plane with straight edges, as node
    cycles (counter-clockwise), for :meth:`ComplexOperators.from_cells
    <topo_contrastive.ComplexOperators.from_cells>`.

    The faces are traced by the rotation system of the drawing (every node orders its edges
    by angle); the walks of positive signed area whose boundary, without back-and-forth
    steps, is a simple cycle of at least three nodes are the bounded faces. On a planar
    drawing, filling every bounded face gives :math:`\beta_1 = 0`, unless a face's boundary
    touches itself at a node (it is then not filled). Where edges cross or overlap
    (bridges, overpasses, tunnels: :func:`edge_crossings`), the edge in most crossings (the
    longer on a tie) is set aside until no two edges cross; each then closes a cycle that
    no face fills, which :math:`\beta_1` counts. Any finite scale (``1e-320`` to ``1e300``)
    and offset of the coordinates gives the same faces; docs/design.md §6.6 has the details.

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
        return_skipped: also return what was not filled (default ``False``).

    Returns:
        The faces as lists of node ids, ordered by their first node, then length. With
        ``return_skipped=True``, ``(faces, skipped)`` where ``skipped`` holds
        ``"set_aside"`` (``int64 [K, 2]`` sorted node pairs of the crossing edges set
        aside), ``"crossings"`` (the number of crossing pairs), ``"overlaps"`` (how many
        of them are collinear edges along a common stretch), ``"nodes_on_edges"``
        (``int64 [L, 2]`` rows ``(node, row of edges)``: a node inside an edge that does
        not end there, by node), ``"outer"`` (the number of outer faces), ``"pinched"``
        (bounded faces whose boundary is no simple cycle, as node walks), ``"too_long"``
        and ``"too_large"`` (bounded faces over ``max_length``, else over ``max_area``, as
        node cycles).

    Raises:
        ValueError: ``edges`` not ``[N1, 2]`` integers or with a self-loop; ``pos`` not
            ``[N0, 2]``, not finite, without a row for every node, or with two nodes at
            one point (after the scaling, at float64 resolution); non-positive limits.
        TypeError: limits or ``pos`` that are not numbers.

    Example:
        >>> pos = [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]]
        >>> planar_faces([[0, 1], [1, 2], [0, 3], [1, 4], [2, 5], [3, 4], [4, 5]], pos)
        [[0, 1, 4, 3], [1, 2, 5, 4]]
    """
    e = _edge_array(edges)
    q, scale = _check_pos(pos, e)
    max_len = _check_limit(max_length, "max_length")
    max_a = _check_limit(max_area, "max_area")
    if max_a is not None:  # in the units of the normalised drawing q (0: every face over)
        max_a = float(np.ldexp(max_a, -2 * scale))
    pairs, first = np.unique(np.sort(e, axis=1), axis=0, return_index=True)
    crossings, kind, inside = _meetings(pairs, q)
    aside = _set_aside(pairs, crossings, q)
    skipped: dict[str, Any] = {
        "set_aside": pairs[aside],
        "crossings": int(crossings.shape[0]),
        "overlaps": int((kind == _OVERLAP).sum()),
        "nodes_on_edges": np.stack([inside[:, 0], first[inside[:, 1]]], axis=1),
        "outer": 0,
        "pinched": [],
        "too_long": [],
        "too_large": [],
    }
    faces = []
    for walk, area in _walks(np.delete(pairs, aside, axis=0), q):
        cycle = _reduce_walk(walk)
        if area <= 0 or not cycle:  # an outer face (clockwise), or a tree's walk
            skipped["outer"] += 1
            continue
        k = int(np.argmin(cycle))
        cycle = cycle[k:] + cycle[:k]
        if len(set(cycle)) != len(cycle):
            skipped["pinched"].append(cycle)
        elif max_len is not None and len(cycle) > max_len:
            skipped["too_long"].append(cycle)
        elif max_a is not None and area > max_a:
            skipped["too_large"].append(cycle)
        else:
            faces.append(cycle)
    faces.sort(key=lambda c: (c[0], len(c), c))
    return (faces, skipped) if return_skipped else faces


def short_cycles(edges: Any, max_length: int, max_steps: int = 10**7) -> list[list[int]]:
    """The chordless cycles of a network of at most ``max_length`` edges, as node cycles:
    the 2-cells of a network without coordinates (triangles for ``max_length=3``; with
    ``4``, also the squares without a diagonal, and so on).

    Every cycle is found once, from its smallest node ``s``, by a depth-first search of the
    induced paths through nodes above ``s``, pruned where the breadth-first distance back
    to ``s`` leaves no room to close within ``max_length`` edges (the cycles of
    ``networkx.chordless_cycles``; Dias, Castonguay, Longo, Jradi, "Efficient enumeration
    of chordless cycles", 2014). Their number grows exponentially with the length (a 30 x
    30 grid has 9,696 of at most 12 edges, 138,998 of at most 16): the search stops with a
    ``ValueError`` after ``max_steps`` steps instead of running for hours.

    Args:
        edges: ``int [N1, 2]`` node pairs (undirected).
        max_length: the longest cycle to fill, ``>= 3``.
        max_steps: induced paths tried and nodes visited before giving up (default
            ``10**7``: about 20 s at 2 us a step).

    Returns:
        The cycles as lists of node ids, each starting at its smallest node, then the
        smaller of that node's two neighbours on the cycle; sorted by length, then ids.

    Raises:
        ValueError: ``edges`` not ``[N1, 2]`` integers or with a self-loop; ``max_length``
            below 3; ``max_steps`` below 1, or a search that needs more steps.
        TypeError: ``max_length`` or ``max_steps`` not an int.
    """
    e = _edge_array(edges)
    max_length = check_int(max_length, "max_length", 3)
    max_steps = check_int(max_steps, "max_steps", 1)
    near: list[set[int]] = [set() for _ in range(int(e.max()) + 1 if e.size else 0)]
    for u, v in e.tolist():
        near[u].add(v)
        near[v].add(u)
    out = _chordless_cycles(near, max_length, max_steps)
    out.sort(key=lambda c: (len(c), c))
    return out


def _chordless_cycles(near: list[set[int]], max_length: int, max_steps: int) -> list[list[int]]:
    """The search of :func:`short_cycles` on the neighbour sets ``near``."""
    adj = [sorted(x) for x in near]
    blocked = [0] * len(adj)  # per node: interior path nodes (not s, not the tail) next to it
    on_path, out, steps = [False] * len(adj), [], 0
    for s in range(len(adj)):
        dist, frontier = {s: 0}, [s]  # back to s through nodes above s, up to max_length / 2
        for d in range(1, max_length // 2 + 1):
            if not frontier:
                break
            ring = dict.fromkeys(x for u in frontier for x in adj[u] if x > s and x not in dist)
            frontier = list(ring)  # the nodes at distance d, each once
            dist.update(dict.fromkeys(frontier, d))
            steps += len(frontier)
        path, cursor = [s], [0]
        while path:
            tail, i = path[-1], cursor[-1]
            if i == len(adj[tail]):  # every extension of the path tried: back one node
                path.pop(), cursor.pop()
                on_path[tail] = False
                for x in adj[path[-1]] if len(path) > 1 else ():
                    blocked[x] -= 1
                continue
            cursor[-1], w = i + 1, adj[tail][i]
            far = len(path) + dist.get(w, max_length) > max_length  # no room to close
            if w <= s or on_path[w] or blocked[w] or far:
                continue  # not above s, on the path, a chord, or too far
            steps += 1
            if steps > max_steps:
                raise ValueError(
                    f"the chordless cycles of at most max_length = {max_length} edges take more "
                    f"than max_steps = {max_steps} steps to enumerate (their number grows "
                    "exponentially with the length): lower max_length, give node positions "
                    "to planar_faces, or raise max_steps (about 2 us a step)"
                )
            if w in near[s] and len(path) > 1:  # closes a cycle; each once: path[1] < w
                if path[1] < w:
                    out.append(path + [w])
            elif len(path) + 1 < max_length:  # the tail becomes interior
                for x in adj[tail] if len(path) > 1 else ():
                    blocked[x] += 1
                path.append(w), cursor.append(0)
                on_path[w] = True
    return out
