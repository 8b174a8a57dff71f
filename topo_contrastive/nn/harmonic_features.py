r"""Harmonic features at any size: the canonical orthonormal basis :math:`\mathbf{U}_H` of
the harmonic space where building it fits a memory budget, else a seeded sketch
:math:`\mathbf{S} = \mathbf{P}_H\mathbf{G}` ``[N1, k]`` (a Gaussian random projection of the
harmonic part, within :func:`sketch_distortion_bound` of it). What the sketch keeps, the
byte counts of the choice and the measurements: docs/design.md §7.2."""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from topo_contrastive._utils.checks import check_int, check_seed
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition

#: Bytes building a harmonic feature matrix may take by default: 256 MiB, the size up to
#: which the ``"iterative"`` backend keeps a harmonic basis.
DEFAULT_HARMONIC_BUDGET = 256 * 2**20
#: Directions of a sketch when the budget allows them.
DEFAULT_SKETCH_DIM = 256
# projections computed together while a sketch is built
_SKETCH_CHUNK = 32
# float64 entries per edge held at the peak of building the features (measured with
# tracemalloc on every backend; tests/nn/test_harmonic_features.py checks the bound): the
# basis about 5 [N1, beta_1] arrays; the sketch its result twice (cached and returned),
# about 5 [N1, chunk] arrays and 12 [N1]
_EXACT_COPIES, _CHUNK_COPIES, _SKETCH_FIXED = 6, 5, 13
# relative tolerance under which two residual norms count as tied in the pivot choice
_TIE_RTOL = 1e-6

_BUDGET: list[int] = [DEFAULT_HARMONIC_BUDGET]
#: bases and sketches computed so far, by decomposition (dropped with it)
_BASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SKETCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def harmonic_budget() -> int:
    """The memory budget in bytes of building a harmonic feature matrix (default
    :data:`DEFAULT_HARMONIC_BUDGET`; :func:`use_harmonic_budget` changes it)."""
    return _BUDGET[-1]


@contextlib.contextmanager
def use_harmonic_budget(budget: int) -> Iterator[int]:
    """Use ``budget`` bytes as the default of :func:`plan_harmonic_features` inside the block
    (the command line's ``--harmonic-budget``).

    Raises:
        TypeError: ``budget`` is not an int.
        ValueError: ``budget`` is not positive.
    """
    _BUDGET.append(_check_budget(budget))
    try:
        yield _BUDGET[-1]
    finally:
        _BUDGET.pop()


def _check_budget(budget: object) -> int:
    budget = check_int(budget, "budget")
    if budget <= 0:
        raise ValueError(f"`budget` must be a positive number of bytes, got {budget}")
    return budget


def _exact_bytes(num_simplices: int, beta: int) -> int:
    return 8 * num_simplices * beta * _EXACT_COPIES


def _sketch_bytes(num_simplices: int, k: int) -> int:
    return 8 * num_simplices * (2 * k + _CHUNK_COPIES * min(k, _SKETCH_CHUNK) + _SKETCH_FIXED)


def _mib(nbytes: float) -> str:
    value = nbytes / 2**20
    return f"{value:.0f} MiB" if value >= 10 else f"{value:.3g} MiB"


@dataclass(frozen=True)
class HarmonicPlan:
    """What harmonic features a complex gets (:func:`plan_harmonic_features`).

    Attributes:
        kind: ``"exact"`` (the canonical basis, ``dim = beta``), ``"sketch"`` (``dim = k``
            directions of :func:`harmonic_sketch`) or ``"none"`` (``beta = 0``).
        dim: columns of the feature matrix.
        beta: the Betti number :math:`\\beta_1` (:math:`\\beta_k` at rank k).
        num_simplices: :math:`N_1` (rows of the matrix).
        budget: the memory budget in bytes it was chosen under.
        reason: why, in words (empty for ``"exact"`` and ``"none"``).
    """

    kind: str
    dim: int
    beta: int
    num_simplices: int
    budget: int
    reason: str = ""

    def line(self) -> str:
        """The choice in one line, e.g. ``harmonic features: exact basis (beta_1 = 12)``."""
        if self.kind == "exact":
            return f"harmonic features: exact basis (beta_1 = {self.beta})"
        if self.kind == "none":
            return "harmonic features: none (beta_1 = 0)"
        return f"harmonic features: sketch of k = {self.dim} directions ({self.reason})"


def plan_harmonic_features(
    hodge: HodgeDecomposition,
    budget: int | None = None,
    sketch_dim: int | None = None,
    kind: str = "auto",
) -> HarmonicPlan:
    """Choose the exact basis or a sketch for ``hodge``'s complex, by size: the basis where
    the backend holds one and building it (``6 x 8 N1 beta_1`` bytes) fits the budget, else
    the most directions ``k <= 256`` whose building (``8 N1 (2k + 5 min(k, 32) + 13)``
    bytes) fits it.

    Args:
        hodge: the complex's decomposition.
        budget: bytes building the ``float64 [N1, d]`` matrix may take at its peak
            (default :func:`harmonic_budget`).
        sketch_dim: directions of a sketch (default: by the budget; a given value is kept,
            as a checkpoint's).
        kind: ``"auto"``, ``"exact"`` or ``"sketch"`` (kept, as a checkpoint's).

    Raises:
        TypeError: ``hodge`` is not a ``HodgeDecomposition``; ``budget`` or ``sketch_dim``
            not an int.
        ValueError: an unknown ``kind``; a non-positive ``budget`` or ``sketch_dim``; a
            budget that holds not one sketch direction; ``kind="exact"`` where the backend
            holds no basis.
    """
    if not isinstance(hodge, HodgeDecomposition):
        raise TypeError(f"`hodge` must be a HodgeDecomposition, got {type(hodge).__name__}")
    if kind not in ("auto", "exact", "sketch"):
        raise ValueError(f"`kind` must be 'auto', 'exact' or 'sketch', got {kind!r}")
    budget = harmonic_budget() if budget is None else _check_budget(budget)
    if sketch_dim is not None:
        sketch_dim = check_int(sketch_dim, "sketch_dim", 1)
    beta, n = int(hodge.dims["harmonic"]), int(hodge.num_simplices)
    if beta == 0:
        return HarmonicPlan("none", 0, 0, n, budget)
    has_basis = _has_basis(hodge)
    if kind == "exact" and not has_basis:
        hodge.basis("harmonic")  # raises, saying why
    fits = _exact_bytes(n, beta) <= budget
    if kind == "exact" or kind == "auto" and fits and has_basis:
        return HarmonicPlan("exact", beta, beta, n, budget)
    k = DEFAULT_SKETCH_DIM if sketch_dim is None else sketch_dim
    while sketch_dim is None and k and _sketch_bytes(n, k) > budget:
        k -= 1  # the most directions whose building the budget holds
    if k == 0:
        raise ValueError(
            f"the harmonic feature budget of {_mib(budget)} holds not one direction of "
            f"N1 = {n} entries ({_mib(_sketch_bytes(n, 1))} to build): raise it "
            "(--harmonic-budget MIB on the command line; `budget=` or use_harmonic_budget() "
            "in Python), or use --readout mean (no harmonic features)"
        )
    if kind == "sketch":
        why = f"asked for; beta_1 = {beta}"
    elif not fits:
        why = f"beta_1 = {beta} too large for a basis within the {_mib(budget)} budget"
    else:
        why = f"beta_1 = {beta}; the {hodge.backend!r} backend keeps no basis"
    return HarmonicPlan("sketch", k, beta, n, budget, why)


def _has_basis(hodge: HodgeDecomposition) -> bool:
    """Whether the backend holds a dense harmonic basis (without building anything)."""
    from topo_contrastive.hodge.parts import COMPONENTS

    return hodge._backend.basis(COMPONENTS.index("harmonic")) is not None


def sketch_distortion_bound(k: int, num_flows: int, delta: float = 0.01) -> float:
    r"""The :math:`\varepsilon` of a sketch of ``k`` directions: with probability at least
    ``1 - delta`` over the seed, every pair of ``num_flows`` flows chosen independently of
    it has :math:`|\langle\mathbf{S}^\top\mathbf{x}_i, \mathbf{S}^\top\mathbf{x}_j\rangle -
    \langle\mathbf{P}_H\mathbf{x}_i, \mathbf{P}_H\mathbf{x}_j\rangle| \le \varepsilon
    \lVert\mathbf{P}_H\mathbf{x}_i\rVert\lVert\mathbf{P}_H\mathbf{x}_j\rVert`.

    .. math::
        \frac{\varepsilon^2}{4} - \frac{\varepsilon^3}{6} = \frac{\ln(2 n^2/\delta)}{k}

    the root in ``(0, 1)``, ``inf`` where there is none (Johnson-Lindenstrauss with the
    norm bounds of Dasgupta & Gupta, 2003).

    Example:
        >>> round(sketch_distortion_bound(256, 64), 2)
        0.59

    Raises:
        ValueError: ``k`` or ``num_flows`` below 1, ``delta`` outside ``(0, 1)``.
    """
    if k < 1 or num_flows < 1:
        raise ValueError(f"`k` and `num_flows` must be >= 1, got {k} and {num_flows}")
    if not 0 < delta < 1:
        raise ValueError(f"`delta` must be in (0, 1), got {delta}")
    target = math.log(2.0 * num_flows**2 / delta) / k
    if target > 1.0 / 12.0:  # f(eps) = eps^2/4 - eps^3/6 rises to 1/12 on (0, 1)
        return math.inf
    lo, hi = 0.0, 1.0
    for _ in range(60):  # bisection: f is increasing on (0, 1)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mid * mid / 4 - mid**3 / 6 < target else (lo, mid)
    return hi


def harmonic_matrix(hodge: HodgeDecomposition) -> tuple[np.ndarray, HarmonicPlan]:
    """The harmonic features of flows ``x [S, N1]`` as ``x @ M``: ``M`` ``float64 [N1, d]``
    the canonical basis or the sketch (seed 0), as :func:`plan_harmonic_features` chooses
    under the current budget; returns ``(M, plan)``. On a weighted complex the features are
    the metric's: :math:`\\mathbf{U}_H^\\top \\mathbf{W}_1 \\mathbf{x}` (``M`` =
    :math:`\\mathbf{W}_1 \\mathbf{U}_H`, the basis :math:`\\mathbf{W}_1`-orthonormal) or
    :math:`\\mathbf{G}^\\top \\mathbf{W}_1^{1/2} \\mathbf{P}_H \\mathbf{x}` (docs/weights.md).

    Raises:
        ValueError: as :func:`plan_harmonic_features`.
    """
    plan = plan_harmonic_features(hodge)
    m = harmonic_sketch(hodge, plan.dim) if plan.kind == "sketch" else None
    m = canonical_harmonic_basis(hodge)[0] if m is None else m
    w = _metric_weights(hodge)  # in a metric: U_H^T W x, and G^T W^1/2 P_H x
    return (m if w is None else w[:, None] * m), plan


def _metric_weights(hodge: HodgeDecomposition) -> np.ndarray | None:
    """The Hodge star ``W_k`` ``[N_k]`` of a weighted complex, ``None`` where unweighted."""
    ops = hodge.complex
    return None if ops.metric == "unweighted" else ops.hodge_star(hodge.rank)


def harmonic_sketch(hodge: HodgeDecomposition, k: int, seed: int = 0) -> np.ndarray:
    r"""The sketch :math:`\mathbf{S} = \mathbf{P}_H\mathbf{G}`, ``float64 [N1, k]``:
    :math:`\mathbf{G}` ``[N1, k]`` standard normal from ``numpy.random.default_rng(seed)``,
    scaled by :math:`1/\sqrt{k}`, its rows signed by the reference orientation of their edge
    (so that the features turn with the edges), projected ``32`` columns at a time by
    :meth:`~topo_contrastive.HodgeDecomposition.project`. The same decomposition, ``k`` and
    ``seed`` give the same matrix (cached while the decomposition lives; a copy per call).

    Raises:
        TypeError: ``hodge`` not a ``HodgeDecomposition``; ``k`` or ``seed`` not an int.
        ValueError: ``k`` below 1, ``seed`` outside ``[0, 2**31 - 1]``.
    """
    if not isinstance(hodge, HodgeDecomposition):
        raise TypeError(f"`hodge` must be a HodgeDecomposition, got {type(hodge).__name__}")
    key = (check_int(k, "k", 1), check_seed(seed))
    cache = _SKETCHES.setdefault(hodge, {})
    if key not in cache:
        cache[key] = _sketch(hodge, *key)
    return cache[key].copy()


def _sketch(hodge: HodgeDecomposition, k: int, seed: int) -> np.ndarray:
    n = int(hodge.num_simplices)
    rng = np.random.default_rng(seed)
    signs = _reference_signs(hodge.complex, hodge.rank) / math.sqrt(k)
    w = _metric_weights(hodge)
    out = np.empty((n, k))
    for lo in range(0, k, _SKETCH_CHUNK):  # G's rows (directions) drawn chunk by chunk:
        hi = min(k, lo + _SKETCH_CHUNK)  # the numbers of one [k, N1] draw
        g = rng.standard_normal((hi - lo, n)) * signs
        if w is not None:
            g = g / np.sqrt(w)  # P_H W^-1/2 G: times W, the features G^T W^1/2 P_H x
        out[:, lo:hi] = hodge.project(torch.from_numpy(g), "harmonic").numpy().T  # [c, N1]
    return out


def _reference_signs(ops: ComplexOperators, rank: int) -> np.ndarray:
    """``float64 [N_k]``: +1 where a simplex is stored in the orientation of its sorted
    nodes, else -1 (read from the first face of each column of ``B_k``); a polygon 2-cell
    +1 where its cycle runs from its smallest node to that node's smaller neighbour."""
    n = ops.num_simplices(rank)
    if rank == 0 or n == 0:
        return np.ones(n)
    if rank == 2 and not ops.is_simplicial:  # polygons: the smallest node's smaller neighbour
        nodes, ptr = ops.face_nodes, ops.face_ptr  # next (a triangle's a -> b -> c), else -1
        return np.where(nodes[ptr[:-1] + 1] < nodes[ptr[1:] - 1], 1.0, -1.0)
    face_signs = _reference_signs(ops, rank - 1)
    b = ops.incidence(rank).tocsc()
    b.sort_indices()
    first, value = b.indices[b.indptr[:-1]], b.data[b.indptr[:-1]]  # the first face
    simplex_nodes = np.sort(ops.simplices(rank), axis=1)
    face_nodes = np.sort(ops.simplices(rank - 1)[first], axis=1)  # [N_k, k]
    # position of the missing node: the first place where the sorted lists differ
    differs = np.concatenate(
        [simplex_nodes[:, :-1] != face_nodes, np.ones((n, 1), dtype=bool)], axis=1
    )
    missing = np.argmax(differs, axis=1)
    return value * np.where(missing % 2 == 0, 1.0, -1.0) * face_signs[first]


def canonical_harmonic_basis(hodge: HodgeDecomposition) -> tuple[np.ndarray, np.ndarray]:
    r"""A deterministic orthonormal basis of the harmonic space :math:`\ker \mathbf{L}_1`
    that depends only on the projector :math:`\mathbf{P}_H` and the edges' node ids (the
    same for both backends of :class:`~topo_contrastive.HodgeDecomposition`), and turns
    with the edges: re-orienting them by :math:`\mathbf{S} = \mathrm{diag}(\pm 1)` gives
    :math:`\mathbf{S}\mathbf{U}_H`, so the coordinates :math:`\mathbf{U}_H^\top\mathbf{x}`
    of re-oriented flows are unchanged.

    1. **Pivot edges** :math:`p_1, \dots, p_{\beta_1}` by greedy column pivoting on
       :math:`\mathbf{P}_H` (ties within a relative :math:`10^{-6}` to the lowest index).
    2. **Columns** by Gram-Schmidt on :math:`\mathbf{P}_H[:, p_j]` (QR, positive diagonal).
    3. **Sign**: column :math:`j` flows along :math:`p_j` from its lower to its higher node
       id (at rank :math:`k`: positive on :math:`p_j` in its sorted nodes' orientation).

    Args:
        hodge: the decomposition of the complex (either backend, any rank :math:`k`).

    On a weighted complex the construction runs on :math:`\\mathbf{W}_1^{1/2}\\mathbf{U}_H`
    and the basis returned is :math:`\\mathbf{W}_1`-orthonormal (docs/weights.md).

    Returns:
        ``(basis, pivots)``: ``float64 [N_k, beta_k]`` and ``int64 [beta_k]`` (computed once
        per decomposition while it lives; copies per call).

    Raises:
        ValueError: the backend cannot provide a harmonic basis (see
            :meth:`~topo_contrastive.HodgeDecomposition.basis`).
    """
    if hodge not in _BASES:  # the same decomposition: the same basis
        _BASES[hodge] = _canonical_harmonic_basis(hodge)
    basis, pivots = _BASES[hodge]
    return basis.copy(), pivots.copy()


def _canonical_harmonic_basis(hodge: HodgeDecomposition) -> tuple[np.ndarray, np.ndarray]:
    u = hodge.basis("harmonic").numpy()  # [N1, beta1], orthonormal (in the metric W)
    w = _metric_weights(hodge)
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
        p = int(np.flatnonzero(norms >= norms.max() * (1.0 - _TIE_RTOL))[0])
        q = residual[p] / np.sqrt(norms[p])
        residual -= np.outer(residual @ q, q)
        pivots.append(p)
    piv = np.asarray(pivots, dtype=np.int64)
    q, r = np.linalg.qr(u @ u[piv].T)  # P_H[:, pivots], [N1, beta1]
    q = q * np.sign(np.diag(r))  # q[p_j, j] = r_jj > 0
    if root is not None:
        q = q / root[:, None]
    if hodge.rank != 1:
        return q * _reference_signs(hodge.complex, hodge.rank)[piv], piv
    edges = hodge.complex.edges  # [N1, 2] tail, head
    return q * np.where(edges[piv, 0] < edges[piv, 1], 1.0, -1.0), piv
