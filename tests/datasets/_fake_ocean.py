"""A small ``dataBuoys.jld2`` written by the tests, in the layout of the original file.

JLD2 is HDF5 with a 512-byte user block; the fields read by the library are ``elist`` /
``tlist`` (1-based, ``[2, N1]`` / ``[3, N2]``), ``HexcentersXY`` (compound ``('1', '2')``) and
``TrajectoriesNodes``: object references, each to an array of references to scalar node ids
(1-based). The complex is a 6 x 6 triangulated grid with two unfilled cells (two holes); the
200 kept paths (plus short ones the procedure drops, back-and-forth steps and closed walks)
are random walks of a seeded generator.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

NUM_KEPT = 200


def _grid(side: int = 6):
    node = {(i, j): i * side + j for i in range(side) for j in range(side)}
    pos = np.array([(0.7 + 0.02 * j, -0.5 + 0.02 * i) for i in range(side) for j in range(side)])
    edges, triangles = set(), []
    for i in range(side - 1):
        for j in range(side - 1):
            a, b, c, d = node[i, j], node[i, j + 1], node[i + 1, j], node[i + 1, j + 1]
            edges |= {(a, b), (a, c), (b, d), (c, d), (a, d)}
            if (i, j) not in {(1, 1), (3, 3)}:  # two unfilled cells: two holes
                triangles += [(a, b, d), (a, c, d)]
            else:
                triangles += [(a, b, d)]
    return sorted(edges), triangles, pos


def _walks(edges, num_nodes: int, rng: np.random.Generator) -> list[list[int]]:
    nbrs: list[list[int]] = [[] for _ in range(num_nodes)]
    for u, v in edges:
        nbrs[u].append(v)
        nbrs[v].append(u)

    def kept(walk):  # the published procedure's filter, as a plain loop
        out = []
        for n in walk:
            if len(out) >= 2 and out[-2] == n:
                out.pop()
            else:
                out.append(n)
        return len(out) >= 5

    walks: list[list[int]] = [[0, 1], [5, 4, 5, 4], [7, 8, 7, 13, 7]]  # dropped
    walks.append([0, 1, 7, 13, 12, 6, 0])  # kept, closed: its last node is dropped
    count = 1
    while count < NUM_KEPT:
        walk = [int(rng.integers(num_nodes))]
        for _ in range(int(rng.integers(1, 14))):
            walk.append(int(rng.choice(nbrs[walk[-1]])))
        walks.append(walk)
        count += kept(walk)
    return walks


def write_fake_ocean(path: str | Path, seed: int = 0) -> dict:
    """Write the file; return its content (0-based) for plain-loop references."""
    rng = np.random.default_rng(seed)
    edges, triangles, pos = _grid()
    walks = _walks(edges, len(pos), rng)
    with h5py.File(path, "w", userblock_size=512) as f:
        f["elist"] = np.array(edges, dtype=np.int64).T + 1
        f["tlist"] = np.array(triangles, dtype=np.int64).T + 1
        centres = np.zeros(len(pos), dtype=[("1", "<f8"), ("2", "<f8")])
        centres["1"], centres["2"] = pos[:, 0], pos[:, 1]
        f["HexcentersXY"] = centres
        store = f.create_group("_refs")
        outer = []
        for w, walk in enumerate(walks):
            inner = []
            for k, n in enumerate(walk):
                store[f"n{w}_{k}"] = np.int64(n + 1)
                inner.append(store[f"n{w}_{k}"].ref)
            store.create_dataset(f"t{w}", data=np.array(inner, dtype=h5py.ref_dtype))
            outer.append(store[f"t{w}"].ref)
        f.create_dataset("TrajectoriesNodes", data=np.array(outer, dtype=h5py.ref_dtype))
    return {"edges": edges, "triangles": triangles, "pos": pos, "walks": walks}
