"""Small street grids with monotone trips labelled by the side of the centre they pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def grid_network(path: Path, width: int, height: int, trips: int = 40, seed: int = 0,
                 labels: bool = True, one_class: bool = False) -> Path:  # fmt: skip
    """Write a ``width x height`` street grid (node ``r * width + c``) with ``trips``
    monotone trips from the top-left to the bottom-right corner as an ``.npz`` data file;
    label 1 when the trip passes above the grid's diagonal at its middle step."""
    rng = np.random.default_rng(seed)
    node = np.arange(width * height).reshape(height, width)
    edges = [(node[r, c], node[r, c + 1]) for r in range(height) for c in range(width - 1)]
    edges += [(node[r, c], node[r + 1, c]) for r in range(height - 1) for c in range(width)]
    nodes, ptr, ys = [], [0], []
    for _ in range(trips):
        steps = rng.permutation([0] * (width - 1) + [1] * (height - 1))  # 0 right, 1 down
        r = c = 0
        walk = [node[0, 0]]
        for s in steps:
            r, c = (r + 1, c) if s else (r, c + 1)
            walk.append(node[r, c])
        half = len(steps) // 2
        down = int(steps[:half].sum())
        ys.append(1 if one_class else int(down * width < (half - down) * height))
        nodes += walk
        ptr.append(len(nodes))
    arrays = {"edge_index": np.array(edges, dtype=np.int64).T, "num_nodes": np.int64(node.size),
              "path_nodes": np.array(nodes, dtype=np.int64),
              "path_ptr": np.array(ptr, dtype=np.int64)}  # fmt: skip
    if labels:
        arrays["labels"] = np.array(ys, dtype=np.int64)
    np.savez(path, **arrays)
    return path
