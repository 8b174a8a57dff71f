r"""Harmonic features that scale: the exact canonical basis where it fits a memory budget, a
seeded sketch of the harmonic space otherwise.

The harmonic coordinates :math:`\mathbf{U}_H^\top \mathbf{x}` (of the
:class:`~topo_contrastive.nn.HodgeReadout` and of ``evaluate``'s harmonic reference row) need
an orthonormal basis :math:`\mathbf{U}_H \in \mathbb{R}^{N_1 \times \beta_1}`: on a road
network of :math:`N_1 = 18{,}830` edges with :math:`\beta_1 = 6{,}835` holes that is 1 GB in
float64, and the ``"iterative"`` backend keeps none beyond :math:`N_1 \beta_1 = 2^{25}`.

The **sketch** replaces the basis by

.. math::
    \mathbf{S} = \mathbf{P}_H \mathbf{G} \in \mathbb{R}^{N_1 \times k}, \qquad
    \mathbf{G}_{ej} = s_e\, g_{ej} / \sqrt{k}, \quad g_{ej} \sim \mathcal{N}(0, 1)
    \text{ seeded},

computed by :math:`k` projections (:meth:`~topo_contrastive.HodgeDecomposition.project`:
solves, no stored basis), :math:`s_e = \pm 1` the reference sign of edge :math:`e` (+1 when it
points from its lower to its higher node id), so that the features turn with the edges. The
features of a flow are :math:`\mathbf{S}^\top \mathbf{x} = \mathbf{G}^\top (\mathbf{P}_H
\mathbf{x})`: a Gaussian random projection of its harmonic part alone (gradient and curl
parts are annihilated exactly). Memory :math:`O(N_1 k)`, :math:`k` fixed.

**What it preserves** (Johnson-Lindenstrauss): for flows :math:`\mathbf{x}, \mathbf{y}` with
harmonic parts :math:`\mathbf{u} = \mathbf{P}_H\mathbf{x}`, :math:`\mathbf{v} =
\mathbf{P}_H\mathbf{y}`, :math:`\mathbb{E}\langle \mathbf{S}^\top\mathbf{x},
\mathbf{S}^\top\mathbf{y}\rangle = \langle \mathbf{u}, \mathbf{v}\rangle` and the error has
standard deviation :math:`\sqrt{(\lVert\mathbf{u}\rVert^2\lVert\mathbf{v}\rVert^2 +
\langle\mathbf{u},\mathbf{v}\rangle^2)/k} \le \sqrt{2/k}\,\lVert\mathbf{u}\rVert
\lVert\mathbf{v}\rVert`. Over a set of :math:`n` flows, with probability at least
:math:`1 - \delta`,

.. math::
    \big|\langle \mathbf{S}^\top\mathbf{x}_i, \mathbf{S}^\top\mathbf{x}_j\rangle -
    \langle \mathbf{P}_H\mathbf{x}_i, \mathbf{P}_H\mathbf{x}_j\rangle\big| \le
    \varepsilon\, \lVert\mathbf{P}_H\mathbf{x}_i\rVert \lVert\mathbf{P}_H\mathbf{x}_j\rVert
    \quad \text{for all } i, j, \qquad
    \frac{\varepsilon^2}{4} - \frac{\varepsilon^3}{6} = \frac{\ln(2 n^2 / \delta)}{k}

(:func:`sketch_distortion_bound`, :math:`0 < \varepsilon < 1`; e.g. :math:`\varepsilon =
0.59` for :math:`k = 256`, :math:`n = 64`, :math:`\delta = 0.01`, where the typical error
is :math:`\sqrt{2/k} = 0.09`): the norm bounds of Dasgupta & Gupta (2003),
:math:`\Pr[\lVert\mathbf{G}^\top\mathbf{w}\rVert^2 \ge 1 + \varepsilon] \le
e^{-k(\varepsilon^2/2 - \varepsilon^3/3)/2}` and :math:`\Pr[\lVert\mathbf{G}^\top
\mathbf{w}\rVert^2 \le 1 - \varepsilon] \le e^{-k\varepsilon^2/4}`, on the :math:`n^2` unit
vectors :math:`\mathbf{w} \propto \hat{\mathbf{u}}_i \pm \hat{\mathbf{u}}_j` and
:math:`\hat{\mathbf{u}}_i` (:math:`\hat{\mathbf{u}} = \mathbf{u} / \lVert\mathbf{u}\rVert`),
a union bound, and polarisation, :math:`4\langle\mathbf{a}, \mathbf{b}\rangle =
\lVert\mathbf{a} + \mathbf{b}\rVert^2 - \lVert\mathbf{a} - \mathbf{b}\rVert^2`. The flows
must not depend on the seed. Distances, norms and angles of harmonic parts, hence what a linear
probe or a kernel of them sees, are kept up to that factor; the coordinates themselves are
not :math:`\mathbf{U}_H^\top\mathbf{x}` (they are a random linear image of them,
:math:`\mathbf{S}^\top\mathbf{x} = (\mathbf{U}_H^\top\mathbf{G})^\top\mathbf{U}_H^\top
\mathbf{x}`).

**The choice** (:func:`plan_harmonic_features`): the exact basis where the backend can give
it and building it fits the budget (``6 x 8 N1 beta_1`` bytes at the peak, float64); else a
sketch of the most directions ``k <= 256`` whose building fits it (``8 N1 (2k + 5 min(k,
32) + 13)`` bytes: the matrix, its cached copy, the chunks of projections). The budget bounds
the memory before anything is allocated (default 256 MiB, the size up to which the
``"iterative"`` backend keeps a basis) and is :func:`harmonic_budget`, set for a block of
code with :func:`use_harmonic_budget` (the command line's ``--harmonic-budget``).
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.nn._harmonic_basis import (
    canonical_harmonic_basis,
    metric_weights,
    reference_signs,
)
from topo_contrastive.utils.checks import check_int, check_seed

__all__ = [
    "DEFAULT_HARMONIC_BUDGET",
    "DEFAULT_SKETCH_DIM",
    "HarmonicPlan",
    "harmonic_budget",
    "harmonic_matrix",
    "harmonic_sketch",
    "plan_harmonic_features",
    "sketch_distortion_bound",
    "use_harmonic_budget",
]

#: Bytes a harmonic feature matrix ``[N1, d]`` (float64) may take by default: 256 MiB, the
#: size up to which the ``"iterative"`` backend keeps a harmonic basis.
DEFAULT_HARMONIC_BUDGET = 256 * 2**20
#: Directions of a sketch when the budget allows them.
DEFAULT_SKETCH_DIM = 256
# projections computed together while a sketch is built
_SKETCH_CHUNK = 32
# float64 entries per edge held at the peak of building the features, beyond the
# decomposition (measured with tracemalloc on every backend, 5.1 and 2k + 4.6 min(k, 32)
# + 12.8 at most; tests/nn/test_harmonic_features.py checks the bound): the canonical basis
# about 5 [N1, beta_1] arrays; the sketch its result twice (cached and returned), about 5
# [N1, chunk] arrays (the chunk of G and the projection's) and 12 [N1] (reference signs)
_EXACT_COPIES = 6
_CHUNK_COPIES = 5
_SKETCH_FIXED = 13

_BUDGET: list[int] = [DEFAULT_HARMONIC_BUDGET]


def harmonic_budget() -> int:
    """The memory budget in bytes of a harmonic feature matrix (default
    :data:`DEFAULT_HARMONIC_BUDGET`; :func:`use_harmonic_budget` changes it)."""
    return _BUDGET[-1]


@contextlib.contextmanager
def use_harmonic_budget(budget: int) -> Iterator[int]:
    """Use ``budget`` bytes as the default of :func:`plan_harmonic_features` inside the block.

    Raises:
        TypeError: ``budget`` is not an int.
        ValueError: ``budget`` is not positive.
    """
    budget = _check_budget(budget)
    _BUDGET.append(budget)
    try:
        yield budget
    finally:
        _BUDGET.pop()


def _check_budget(budget: object) -> int:
    budget = check_int(budget, "budget")
    if budget <= 0:
        raise ValueError(f"`budget` must be a positive number of bytes, got {budget}")
    return budget


def _exact_bytes(num_simplices: int, beta: int) -> int:
    """Peak bytes of building the canonical harmonic basis ``[N1, beta_1]`` (float64)."""
    return 8 * num_simplices * beta * _EXACT_COPIES


def _sketch_bytes(num_simplices: int, k: int) -> int:
    """Peak bytes of building a sketch of ``k`` directions on ``N1`` edges (float64)."""
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
    """Choose the exact basis or a sketch for ``hodge``'s complex, by size.

    Args:
        hodge: the complex's decomposition.
        budget: bytes that building the ``float64 [N1, d]`` feature matrix may take at its
            peak, the matrix and the working memory (default :func:`harmonic_budget`).
        sketch_dim: directions of a sketch (default: :data:`DEFAULT_SKETCH_DIM`, fewer where
            the budget holds fewer; a given value is kept, as a checkpoint's).
        kind: ``"auto"`` (exact where the backend holds a basis and building it fits the
            budget, else a sketch), ``"exact"`` or ``"sketch"`` (kept, as a checkpoint's).

    Returns:
        The :class:`HarmonicPlan`.

    Raises:
        TypeError: ``hodge`` is not a ``HodgeDecomposition``; ``budget`` or ``sketch_dim``
            not an int.
        ValueError: an unknown ``kind``; a non-positive ``budget`` or ``sketch_dim``; a
            budget that holds not one sketch direction of :math:`N_1` entries (no
            ``sketch_dim`` given); ``kind="exact"`` where the backend holds no basis (see
            :meth:`~topo_contrastive.HodgeDecomposition.basis`).
    """
    if not isinstance(hodge, HodgeDecomposition):
        raise TypeError(f"`hodge` must be a HodgeDecomposition, got {type(hodge).__name__}")
    if kind not in ("auto", "exact", "sketch"):
        raise ValueError(f"`kind` must be 'auto', 'exact' or 'sketch', got {kind!r}")
    budget = harmonic_budget() if budget is None else _check_budget(budget)
    if sketch_dim is not None:
        sketch_dim = check_int(sketch_dim, "sketch_dim", 1)
    beta = int(hodge.dims["harmonic"])
    n = int(hodge.num_simplices)
    if beta == 0:
        return HarmonicPlan("none", 0, 0, n, budget)
    if kind == "exact":
        if not _has_basis(hodge):
            hodge.basis("harmonic")  # raises, saying why
        return HarmonicPlan("exact", beta, beta, n, budget)
    fits = _exact_bytes(n, beta) <= budget
    if kind == "auto" and fits and _has_basis(hodge):
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
    r"""The :math:`\varepsilon` of the module's bound for a sketch of ``k`` directions.

    With probability at least ``1 - delta`` over the seed, every pair of ``num_flows`` flows
    has :math:`|\langle\mathbf{S}^\top\mathbf{x}_i, \mathbf{S}^\top\mathbf{x}_j\rangle -
    \langle\mathbf{P}_H\mathbf{x}_i, \mathbf{P}_H\mathbf{x}_j\rangle| \le \varepsilon
    \lVert\mathbf{P}_H\mathbf{x}_i\rVert\lVert\mathbf{P}_H\mathbf{x}_j\rVert` (norms:
    ``i = j``) for flows chosen independently of the seed: the root in ``(0, 1)`` of
    :math:`\varepsilon^2/4 - \varepsilon^3/6 = \ln(2n^2/\delta)/k`; ``inf`` where there is
    none (``k`` too small for ``n`` and ``delta``: :math:`\ln(2n^2/\delta)/k > 1/12`).

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
    """The harmonic features of flows ``x [S, N1]`` as ``x @ M``: ``M`` the canonical basis
    (:func:`~topo_contrastive.nn.canonical_harmonic_basis`) or the sketch
    (:func:`harmonic_sketch`, seed 0), as :func:`plan_harmonic_features` chooses under the
    current budget. On a weighted complex the features are those of the metric,
    :math:`\\mathbf{U}_H^\\top \\mathbf{W}_1 \\mathbf{x}` (``M`` = :math:`\\mathbf{W}_1
    \\mathbf{U}_H`, the basis :math:`\\mathbf{W}_1`-orthonormal) or :math:`\\mathbf{G}^\\top
    \\mathbf{W}_1^{1/2} \\mathbf{P}_H \\mathbf{x}` (docs/weights.md).

    Returns:
        ``(M, plan)``: ``float64 [N1, plan.dim]`` and the :class:`HarmonicPlan`.

    Raises:
        ValueError: as :func:`plan_harmonic_features`.
    """

    plan = plan_harmonic_features(hodge)
    m = harmonic_sketch(hodge, plan.dim) if plan.kind == "sketch" else None
    m = canonical_harmonic_basis(hodge)[0] if m is None else m
    w = metric_weights(hodge)  # in a metric: U_H^T W x, and G^T W^1/2 P_H x
    return (m if w is None else w[:, None] * m), plan


#: sketches computed so far, by decomposition, then (k, seed) (dropped with it)
_SKETCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def harmonic_sketch(hodge: HodgeDecomposition, k: int, seed: int = 0) -> np.ndarray:
    r"""The sketch :math:`\mathbf{S} = \mathbf{P}_H\mathbf{G}`, ``float64 [N1, k]``.

    :math:`\mathbf{G}` is drawn from ``numpy.random.default_rng(seed)`` (``[N1, k]``
    standard normal, scaled by :math:`1/\sqrt{k}`, rows signed by the reference orientation
    of their edge) and projected onto the harmonic space ``32`` columns at a time, so the
    working memory beyond the result is about :math:`3 \cdot 32 N_1` floats. The same
    decomposition, ``k`` and ``seed`` give the same matrix (cached while the decomposition
    lives; each call gets a copy). See the module for what it preserves.

    Args:
        hodge: the complex's decomposition (any backend, a simplicial or a cell complex).
        k: directions (columns), an int >= 1.
        seed: the seed of :math:`\mathbf{G}`, an int in ``[0, 2**31 - 1]`` (default: 0).

    Raises:
        TypeError: ``hodge`` not a ``HodgeDecomposition``; ``k`` or ``seed`` not an int
            (``2.5``, ``"8"``, ``None``).
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
    signs = reference_signs(hodge.complex, hodge.rank) / math.sqrt(k)
    w = metric_weights(hodge)
    out = np.empty((n, k))
    for lo in range(0, k, _SKETCH_CHUNK):  # G's rows (directions) drawn chunk by chunk:
        hi = min(k, lo + _SKETCH_CHUNK)  # the numbers of one [k, N1] draw
        g = rng.standard_normal((hi - lo, n)) * signs
        if w is not None:
            g = g / np.sqrt(w)  # P_H W^-1/2 G: times W, the features G^T W^1/2 P_H x
        out[:, lo:hi] = hodge.project(torch.from_numpy(g), "harmonic").numpy().T  # [c, N1]
    return out
