"""The canonical harmonic basis and the simplices' reference orientation (shared by
:class:`~topo_contrastive.nn.HodgeReadout` and :mod:`topo_contrastive.nn.harmonic_features`)."""

from __future__ import annotations

import weakref

import numpy as np

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition

__all__ = ["canonical_harmonic_basis", "reference_signs"]

# relative tolerance under which two residual norms count as tied in the pivot choice
_TIE_RTOL = 1e-6


def reference_signs(ops: ComplexOperators, rank: int) -> np.ndarray:
    r"""``float64 [N_k]``: +1 where a simplex's stored orientation is that of its sorted
    nodes (edges low -> high, triangles ``a -> b -> c`` with ``a < b < c``, ...), else -1.
    A polygon 2-cell of a cell complex: +1 where its cycle runs from its smallest node to
    the smaller of that node's two neighbours on the cycle (a triangle's rule).

    Read from the first face of each column of :math:`\mathbf{B}_k`: the face without
    node :math:`i` of the sorted simplex has the coefficient :math:`(-1)^i` times the
    face's own reference sign. Nodes (rank 0) are all +1.
    """
    n = ops.num_simplices(rank)
    if rank == 0 or n == 0:
        return np.ones(n)
    if rank == 2 and not ops.is_simplicial:  # polygons: the smallest node's smaller neighbour
        nodes, ptr = ops.face_nodes, ops.face_ptr  # next (a triangle's a -> b -> c), else -1
        return np.where(nodes[ptr[:-1] + 1] < nodes[ptr[1:] - 1], 1.0, -1.0)
    face_signs = reference_signs(ops, rank - 1)
    b = ops.incidence(rank).tocsc()
    b.sort_indices()
    first = b.indices[b.indptr[:-1]]  # [N_k] first face of each simplex
    value = b.data[b.indptr[:-1]]
    nodes = ops.simplices(rank)  # [N_k, k + 1]
    simplex_nodes = np.sort(nodes, axis=1)
    face_nodes = np.sort(ops.simplices(rank - 1)[first], axis=1)  # [N_k, k]
    # position of the missing node: the first place where the sorted lists differ
    differs = np.concatenate(
        [simplex_nodes[:, :-1] != face_nodes, np.ones((n, 1), dtype=bool)], axis=1
    )
    missing = np.argmax(differs, axis=1)
    return value * np.where(missing % 2 == 0, 1.0, -1.0) * face_signs[first]


def canonical_harmonic_basis(hodge: HodgeDecomposition) -> tuple[np.ndarray, np.ndarray]:
    r"""A deterministic orthonormal basis of the harmonic space :math:`\ker \mathbf{L}_1`.

    Any orthonormal basis :math:`\mathbf{U}_H` spans the same space, but the harmonic
    coordinates :math:`\mathbf{U}_H^\top \mathbf{x}` change with the basis. This one
    depends only on the projector :math:`\mathbf{P}_H = \mathbf{U}_H\mathbf{U}_H^\top`
    and on which node of every edge has the lower id, so that it is the same for both
    backends of :class:`~topo_contrastive.HodgeDecomposition` and turns with the edges:

    1. **Pivot edges** :math:`p_1, \dots, p_{\beta_1}` by greedy column pivoting on
       :math:`\mathbf{P}_H`: :math:`p_j` maximises the harmonic norm of the edge's
       indicator left after removing the directions of :math:`p_1 .. p_{j-1}`
       (ties within a relative :math:`10^{-6}` go to the lowest edge index).
    2. **Columns** by Gram-Schmidt on :math:`\mathbf{P}_H[:, p_1], \dots,
       \mathbf{P}_H[:, p_{\beta_1}]` (QR with a positive diagonal), so column
       :math:`j` is the harmonic flow through edge :math:`p_j` orthogonal to the
       earlier ones.
    3. **Sign**: column :math:`j` is signed so that it flows along edge :math:`p_j`
       from its lower to its higher node id (at another rank: so that it is positive
       on :math:`p_j` in the orientation of its sorted nodes).

    Re-orienting edges (:math:`\mathbf{B}_1 \mathbf{S}`, :math:`\mathbf{S}\mathbf{B}_2`,
    :math:`\mathbf{S} = \mathrm{diag}(\pm 1)`) gives :math:`\mathbf{S}\mathbf{U}_H`:
    the coordinates :math:`\mathbf{U}_H^\top \mathbf{x}` of re-oriented flows
    :math:`\mathbf{S}\mathbf{x}` are unchanged.

    Args:
        hodge: the decomposition of the complex (either backend).

    At rank :math:`k` (``HodgeDecomposition(ops, rank=k)``) the same construction gives a
    basis ``[N_k, beta_k]`` of :math:`\ker \mathbf{L}_k` with pivot simplices of rank k.

    On a weighted complex the construction runs on :math:`\\mathbf{W}_1^{1/2}\\mathbf{U}_H`
    and the basis returned is :math:`\\mathbf{W}_1`-orthonormal (docs/weights.md).

    Returns:
        ``(basis, pivots)``: ``float64 [N1, beta_1]`` and the pivot edges ``int64 [beta_1]``
        (computed once per decomposition object while it lives; each call gets copies).

    Raises:
        ValueError: the backend cannot provide a harmonic basis (see
            :meth:`~topo_contrastive.HodgeDecomposition.basis`).
    """
    cached = _BASES.get(hodge)  # the same decomposition: the same basis (a loaded encoder, an
    if cached is not None:  # untrained one and U_H^T x of `evaluate` share it)
        return cached[0].copy(), cached[1].copy()
    basis, piv = _canonical_harmonic_basis(hodge)
    _BASES[hodge] = (basis, piv)
    return basis.copy(), piv.copy()


#: The bases computed so far, by decomposition (dropped with it).
_BASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def metric_weights(hodge: HodgeDecomposition) -> np.ndarray | None:
    """The Hodge star ``W_k`` ``[N_k]`` of a weighted complex, ``None`` where unweighted."""
    ops = hodge.complex
    return None if ops.metric == "unweighted" else ops.hodge_star(hodge.rank)


def _canonical_harmonic_basis(hodge: HodgeDecomposition) -> tuple[np.ndarray, np.ndarray]:
    u = hodge.basis("harmonic").numpy()  # [N1, beta1], orthonormal (in the metric W)
    w = metric_weights(hodge)
    root = None if w is None else np.sqrt(w)
    if root is not None:  # built on W^1/2 U (Euclidean orthonormal), returned W-orthonormal
        u = u * root[:, None]
    n1, beta1 = u.shape
    if beta1 == 0:
        return np.zeros((n1, 0)), np.zeros(0, dtype=np.int64)
    residual = u.copy()  # row e: coordinates of P_H e_e left after earlier pivots
    pivots = []
    for _ in range(beta1):
        norms = np.einsum("ij,ij->i", residual, residual)
        top = norms.max()
        p = int(np.flatnonzero(norms >= top * (1.0 - _TIE_RTOL))[0])
        q = residual[p] / np.sqrt(norms[p])
        residual -= np.outer(residual @ q, q)
        pivots.append(p)
    piv = np.asarray(pivots, dtype=np.int64)
    cols = u @ u[piv].T  # P_H[:, pivots], [N1, beta1]
    q, r = np.linalg.qr(cols)
    q = q * np.sign(np.diag(r))  # q[p_j, j] = r_jj > 0
    if root is not None:
        q = q / root[:, None]
    if hodge.rank != 1:
        return q * reference_signs(hodge.complex, hodge.rank)[piv], piv
    edges = hodge.complex.edges  # [N1, 2] tail, head
    low_to_high = np.where(edges[piv, 0] < edges[piv, 1], 1.0, -1.0)
    return q * low_to_high, piv
