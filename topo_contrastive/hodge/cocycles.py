r"""Exact random cocycles :math:`\mathbf{z}` (:math:`\mathbf{B}_2^\top \mathbf{z} = 0`) by a
sweep over a spanning tree of the dual graph, without touching :math:`\mathbf{L}_2`.

The iterative backend takes the harmonic parts :math:`\mathbf{z} - \mathbf{P}_G
\mathbf{z}` of such cocycles as its harmonic basis on surfaces with boundary.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from topo_contrastive.complex import ComplexOperators

__all__ = ["DualForest", "cocycles", "dual_forest"]

#: ``(levels, paired)`` of :func:`dual_forest`.
DualForest = tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]


def dual_forest(ops: ComplexOperators) -> DualForest | None:
    """Collapse of the triangles onto the boundary, for exact cocycles without ``L2``.

    Applies when every edge has at most two triangles and every triangle is
    connected, across edges shared by two triangles, to an edge of only one
    triangle (a boundary edge); then ``ker B2 = 0`` (``beta_2 = 0``). A
    breadth-first search from the boundary pairs each triangle ``t`` with the
    edge ``e_t`` it was reached through; the constraint ``(B2^T z)_t = 0`` then
    fixes ``z[e_t]`` from the other two edges of ``t``, which are free or paired
    with children of ``t``.

    Returns:
        ``None`` if the complex does not qualify, else ``(levels, paired)``:
        per depth, deepest first, ``(triangles, positions)`` with the position
        ``0..2`` of the paired edge in the triangle's ``B2`` column, and the
        paired edge of every triangle ``[N2]``.
    """
    if not ops.is_simplicial:
        return None  # polygon 2-cells: the sweep below pairs triangles (L2 is factorised)
    n2 = ops.num_faces
    b2r = ops.B2.tocsr()  # [N1, N2], sorted indices
    count = np.diff(b2r.indptr)  # triangles per edge
    if count.max(initial=0) > 2:
        return None
    inner = np.flatnonzero(count == 2)
    ta, tb = b2r.indices[b2r.indptr[inner]], b2r.indices[b2r.indptr[inner] + 1]
    bound = np.flatnonzero(count == 1)
    tc, first = np.unique(b2r.indices[b2r.indptr[bound]], return_index=True)
    root = n2  # virtual node behind the boundary
    # dual graph, values = edge id + 1 (two triangles share at most one edge)
    rows = np.concatenate([ta, tb, tc, np.full(tc.size, root)])
    cols = np.concatenate([tb, ta, np.full(tc.size, root), tc])
    vals = np.concatenate([inner, inner, bound[first], bound[first]]) + 1
    dual = sp.csr_matrix((vals.astype(np.float64), (rows, cols)), shape=(n2 + 1, n2 + 1))
    order, pred = csgraph.breadth_first_order(dual, root, directed=False)
    if order.size != n2 + 1:
        return None  # a closed component: L2 may be singular
    tri = np.arange(n2)
    paired = np.asarray(dual[tri, pred[:n2]]).ravel().astype(np.int64) - 1  # [N2]
    # depth by pointer doubling: dist[t] = hops from t to anc[t]
    anc = np.append(pred[:n2], root)
    dist = np.append(np.ones(n2, dtype=np.int64), 0)
    while (anc[:n2] != root).any():
        m = np.flatnonzero(anc != root)
        dist[m] += dist[anc[m]]
        anc[m] = anc[anc[m]]
    depth = dist[:n2]
    tri_edges = ops.B2.tocsc().indices.reshape(n2, 3)  # [N2, 3], sorted per column
    position = np.argmax(tri_edges == paired[:, None], axis=1)  # [N2]
    by_depth = np.argsort(-depth, kind="stable")
    splits = np.flatnonzero(np.diff(depth[by_depth])) + 1
    levels = [(t, position[t]) for t in np.split(by_depth, splits)]
    return levels, paired


def cocycles(
    ops: ComplexOperators, forest: DualForest, k: int, rng: np.random.Generator
) -> np.ndarray:
    """``k`` random cocycles ``z [N1, k]`` with ``B2^T z = 0`` exactly (dual sweep over
    ``forest``, the result of :func:`dual_forest`)."""
    levels, paired = forest
    b2 = ops.B2.tocsc()
    tri_edges = b2.indices.reshape(-1, 3)  # [N2, 3]
    signs = b2.data.reshape(-1, 3)  # [N2, 3], +-1
    # small integers: the sweep's sums are exact in float64
    z = rng.integers(-4, 5, size=(ops.num_edges, k)).astype(np.float64)
    z[paired] = 0.0
    for tris, pos in levels:  # deepest first: children before parents
        e, sg = tri_edges[tris], signs[tris]  # [T, 3]
        sg = sg.copy()
        sg[np.arange(tris.size), pos] = 0.0  # leave out the paired edge
        s_p = signs[tris, pos]  # [T]
        # sum_e B2[e, t] z[e] = 0  =>  z[e_t] = -s_p * sum_{e != e_t} B2[e, t] z[e]
        z[e[np.arange(tris.size), pos]] = -s_p[:, None] * np.einsum(
            "tj,tjk->tk", sg, z[e]
        )
    return z
