"""Datasets of many small complexes for the tests: one random complex per sample (Delaunay
complexes with a random subset of the triangles filled, or random planar cell complexes),
each with a random path flow on it."""

from __future__ import annotations

import numpy as np
import torch
from scipy.spatial import Delaunay

from topo_contrastive import ComplexOperators
from topo_contrastive.data import ComplexData

from ._cell_complexes import random_planar_cell_complex


def delaunay_complex(rng: np.random.Generator, n: int, fill: float = 0.8) -> ComplexOperators:
    pts = rng.random((n, 2))
    tri = np.sort(Delaunay(pts).simplices, axis=1)
    edges = np.unique(np.concatenate([tri[:, [0, 1]], tri[:, [0, 2]], tri[:, [1, 2]]]), axis=0)
    filled = tri[rng.random(len(tri)) < fill]
    return ComplexOperators.from_simplices(edges, filled if len(filled) else None, n)


def walk_flow(ops: ComplexOperators, rng: np.random.Generator, steps: int = 6) -> torch.Tensor:
    """The edge flow ``[N1, 1]`` of a random walk of at most ``steps`` steps."""
    nbrs: dict[int, list[int]] = {}
    for u, v in ops.edges.tolist():
        nbrs.setdefault(u, []).append(v)
        nbrs.setdefault(v, []).append(u)
    node = int(rng.choice(list(nbrs)))
    path = [node]
    for _ in range(steps):
        options = [v for v in nbrs[node] if v not in path]
        if not options:
            break
        node = int(rng.choice(options))
        path.append(node)
    if len(path) < 2:
        path.append(nbrs[path[0]][0])
    return ops.path_to_flow(path).view(-1, 1)


def many_complexes(
    num: int, seed: int = 0, cells: bool = False, sizes: tuple[int, int] = (7, 18)
) -> list[ComplexData]:
    """``num`` samples, each a walk flow on its own random complex, label = parity of i."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(num):
        n = int(rng.integers(*sizes))
        use_cells = cells and i % 2 == 0
        ops = random_planar_cell_complex(rng, n, 0.8) if use_cells else delaunay_complex(rng, n)
        out.append(ComplexData.from_complex(ops, x_1=walk_flow(ops, rng), y=torch.tensor([i % 2])))
    return out
