"""Delaunay complexes of a requested size, shared by the benchmark scripts.

:func:`delaunay_complex` triangulates uniform random points in the unit square
(optionally with square holes, so that the first Betti number is the number of
holes) and returns a :class:`~topo_contrastive.complex.ComplexOperators` with at
least the requested number of edges.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial import Delaunay

from topo_contrastive.complex import ComplexOperators

__all__ = ["TRAJECTORY_HOLES", "delaunay_complex", "delaunay_simplices"]

#: The two square holes of the synthetic trajectory complex (docs/design.md §3): ``beta_1 = 2``.
TRAJECTORY_HOLES: tuple[tuple[float, float], ...] = ((0.2, 0.4), (0.6, 0.8))


def delaunay_simplices(
    num_points: int,
    holes: Sequence[tuple[float, float]] = (),
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Edges, triangles and node count of a Delaunay triangulation with square holes.

    Every triangle with a vertex strictly inside a hole ``[lo, hi]^2`` is removed,
    and vertices left without a triangle are dropped (node ids are re-numbered
    ``0 .. N0-1`` in the order of the points).

    Args:
        num_points: number of uniform random points in ``[0, 1]^2``.
        holes: ``(lo, hi)`` corners of square holes (default none).
        seed: seed of the point generator (default ``0``).

    Returns:
        ``(edges [N1, 2], triangles [N2, 3], N0)`` as ``int64`` arrays and an int.

    Raises:
        ValueError: ``num_points < 3``.
    """
    if num_points < 3:
        raise ValueError(f"`num_points` must be at least 3, got {num_points}")
    pts = np.random.default_rng(seed).random((int(num_points), 2))
    tri = Delaunay(pts).simplices.astype(np.int64)
    if holes:
        inside = np.zeros(len(pts), dtype=bool)
        for lo, hi in holes:
            inside |= ((pts > lo) & (pts < hi)).all(1)
        tri = tri[~inside[tri].any(1)]
    used = np.zeros(len(pts), dtype=bool)
    used[tri.ravel()] = True
    new_id = np.cumsum(used) - 1  # compact ids of the kept vertices
    tri = np.sort(new_id[tri], axis=1)  # [N2, 3], a < b < c
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(pairs, axis=0)  # [N1, 2], lexicographic
    return edges, tri, int(used.sum())


def delaunay_complex(
    num_edges: int,
    holes: Sequence[tuple[float, float]] = TRAJECTORY_HOLES,
    seed: int = 0,
) -> ComplexOperators:
    """Delaunay complex with at least ``num_edges`` edges (a few more: 1,000,026 for 10^6).

    A planar Delaunay triangulation of ``n`` points has about ``3 n`` edges; the
    point count is estimated from that, and raised once if the holes removed more
    edges than expected.

    Args:
        num_edges: minimum number of edges :math:`N_1` (``>= 3``).
        holes: square holes (default :data:`TRAJECTORY_HOLES`, ``beta_1 = 2``);
            ``()`` gives a filled square (``beta_1 = 0``).
        seed: seed of the point generator (default ``0``).

    Returns:
        The :class:`~topo_contrastive.complex.ComplexOperators` of the complex.

    Raises:
        ValueError: ``num_edges < 3``.
    """
    if num_edges < 3:
        raise ValueError(f"`num_edges` must be at least 3, got {num_edges}")
    kept = 1.0 - sum((hi - lo) ** 2 for lo, hi in holes)
    n = int(np.ceil(num_edges / (3.0 * kept))) + 3
    for _ in range(8):
        edges, tri, n0 = delaunay_simplices(n, holes, seed)
        if len(edges) >= num_edges:
            break
        # each extra point adds about 3 / kept edges; overshoot slightly
        n += int(np.ceil((num_edges - len(edges)) / (3.0 * kept) * 1.02)) + 2
    return ComplexOperators.from_simplices(edges, tri, n0)


def random_node_paths(
    ops: ComplexOperators,
    num_paths: int,
    min_edges: int = 10,
    max_edges: int = 20,
    seed: int = 0,
) -> list[list[int]]:
    """Node sequences of random simple paths (self-avoiding random walks).

    Each walk starts at a uniform random node and steps to a uniform random
    unvisited neighbour until it has a length drawn uniformly from
    ``[min_edges, max_edges]`` or gets stuck.

    Args:
        ops: the complex.
        num_paths: number of paths.
        min_edges: shortest requested length in edges (default ``10``).
        max_edges: longest requested length in edges (default ``20``).
        seed: seed of the walk generator (default ``0``).

    Returns:
        ``num_paths`` lists of node ids, each of at least two nodes where the start has a
        neighbour.

    Raises:
        ValueError: ``min_edges > max_edges`` or ``min_edges < 1``.
    """
    if not 1 <= min_edges <= max_edges:
        raise ValueError(
            f"need 1 <= min_edges <= max_edges, got min_edges={min_edges}, max_edges={max_edges}"
        )
    rng = np.random.default_rng(seed)
    adj = ops.L0.tocsr()  # off-diagonal pattern = adjacency
    out = []
    for _ in range(num_paths):
        length = int(rng.integers(min_edges, max_edges + 1))
        node = int(rng.integers(ops.num_nodes))
        visited = [node]
        while len(visited) <= length:
            nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
            nbrs = [v for v in nbrs.tolist() if v not in visited]
            if not nbrs:
                break
            node = nbrs[int(rng.integers(len(nbrs)))]
            visited.append(node)
        out.append(visited)
    return out


def random_path_supports(
    ops: ComplexOperators,
    num_paths: int,
    min_edges: int = 10,
    max_edges: int = 20,
    seed: int = 0,
) -> list[np.ndarray]:
    """Edge supports of :func:`random_node_paths`' walks (same arguments): ``num_paths``
    arrays ``int64 [length]`` of edge columns of ``ops``.

    Raises:
        ValueError: as :func:`random_node_paths`.
    """
    out = []
    for visited in random_node_paths(ops, num_paths, min_edges, max_edges, seed):
        cols, _ = ops.edge_lookup(np.array(visited[:-1]), np.array(visited[1:]))
        out.append(np.asarray(cols, dtype=np.int64))
    return out
