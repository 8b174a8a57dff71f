r"""Hodge-aware drop probabilities by projected gradient descent (paper §4.1,
docs/design.md §2.2-2.3).

An augmented flow drops edge :math:`i` with probability :math:`p_i`:
:math:`\mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d})`,
:math:`d_i \sim \mathrm{Ber}(p_i)` (docs/design.md §2.1). With :math:`\mathbf{P}_k =
\mathbf{U}_k \mathbf{U}_k^\top` the orthogonal projector onto the Hodge subspace
:math:`k \in \{G, C, H\}`, the expected squared distance between the anchor's and the
augmented flow's embedding :math:`\mathbf{U}_k^\top \mathbf{x}` has the closed form
(docs/design.md §2.2)

.. math::
    \mathcal{L}_k(\mathbf{p}) = \mathbb{E}\,\|\mathbf{U}_k^\top(\mathbf{x} - \mathbf{x}')\|_2^2
    = (\mathbf{x} \circ \mathbf{p})^\top \mathbf{P}_k (\mathbf{x} \circ \mathbf{p})
    + \sum_i (\mathbf{P}_k)_{ii}\, x_i^2\, p_i (1 - p_i),

which involves only the block :math:`\mathbf{P}_k[S, S]` on the support
:math:`S = \operatorname{supp}(\mathbf{x})`. The drop probabilities minimise
(paper eq. 9 with the weights of its footnote 2, docs/design.md §2.3)

.. math::
    f(\mathbf{p}) = \sum_k s_k\, \alpha_k\, \frac{\mathcal{L}_k(\mathbf{p})}
    {\|\mathbf{P}_k \mathbf{x}\|_2^2}, \qquad s_k = \begin{cases} -1 & k \text{ perturbed}
    \\ +1 & k \text{ preserved} \end{cases}

over :math:`\{\mathbf{p} \in [0, 1]^{N_1} : p_i = 0 \text{ off } S,\ \sum_i p_i \le
\varepsilon\,|S|\}`, so the **budget** :math:`\varepsilon \in [0, 1]` is the largest
expected *fraction* of the flow's support that is dropped (uniform masking with
probability :math:`\varepsilon` on the support spends exactly this budget).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topo_contrastive.hodge import COMPONENTS, HodgeDecomposition

__all__ = [
    "expected_hodge_distortion",
    "expected_hodge_distortion_grad",
    "hodge_mask_objective",
    "optimize_drop_probabilities",
    "project_capped_simplex",
]

#: Largest padded support size whose Lipschitz constant is computed exactly (eigvalsh).
_EXACT_LIPSCHITZ_MAX = 256
#: Growth of a sample's step after an accepted step (backtracking halves it on rejection).
_STEP_GROWTH = 1.5
#: Support sizes within a chunk differ by at most this factor (+8): limits padding waste.
_CHUNK_GROWTH = 1.5
#: Largest step, in units of 1 / L (keeps ``p - step * grad`` well inside float64's range).
_MAX_STEP_RATIO = 1024.0


# ---------------------------------------------------------------------------- validation
def check_budget(budget: Any, name: str = "budget") -> float:
    """Return ``budget`` as a float in ``[0, 1]`` or raise a clear error."""
    if isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating)):
        raise TypeError(f"`{name}` must be a float in [0, 1], got {type(budget).__name__}")
    budget = float(budget)
    if not 0.0 <= budget <= 1.0:  # also rejects NaN
        raise ValueError(f"`{name}` must lie in [0, 1], got {budget}")
    return budget


def check_components(components: Any, name: str) -> tuple[str, ...]:
    """Return ``components`` as a tuple of distinct Hodge component names."""
    if isinstance(components, str):
        components = (components,)
    if not isinstance(components, Sequence):
        raise TypeError(
            f"`{name}` must be a sequence of component names {COMPONENTS}, "
            f"got {type(components).__name__}"
        )
    out = tuple(components)
    for c in out:
        if c not in COMPONENTS:
            raise ValueError(f"`{name}` must hold names from {COMPONENTS}, got {c!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"`{name}` repeats a component: {out}")
    return out


def check_objective(
    perturb: Any, preserve: Any, alpha: Any
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, float]]:
    """Validate the objective's components and weights; ``alpha`` defaults to 1 for each."""
    perturb = check_components(perturb, "perturb")
    preserve = check_components(preserve, "preserve")
    both = set(perturb) & set(preserve)
    if both:
        raise ValueError(
            f"a component cannot be both perturbed and preserved, got {sorted(both)} in "
            "`perturb` and `preserve`"
        )
    weights = dict.fromkeys(COMPONENTS, 1.0)
    if alpha is not None:
        if not isinstance(alpha, Mapping):
            raise TypeError(
                f"`alpha` must be a mapping from component name to weight, got "
                f"{type(alpha).__name__}"
            )
        for key, value in alpha.items():
            if key not in COMPONENTS:
                raise ValueError(f"`alpha` keys must be names from {COMPONENTS}, got {key!r}")
            if isinstance(value, bool) or not isinstance(
                value, (int, float, np.integer, np.floating)
            ):
                raise TypeError(f"`alpha[{key!r}]` must be a float, got {type(value).__name__}")
            if not (math.isfinite(float(value)) and float(value) >= 0.0):
                raise ValueError(f"`alpha[{key!r}]` must be finite and >= 0, got {value}")
            weights[key] = float(value)
    return perturb, preserve, weights


def check_flows(x: Any, num_edges: int, name: str = "x", rank: int = 1) -> Tensor:
    """Check ``x`` is a finite floating tensor ``[N_k]`` or ``[S, N_k]`` (``N1`` edges for
    the default ``rank=1``, ``num_edges`` = :math:`N_k` otherwise)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    what = "edge flows" if rank == 1 else f"rank-{rank} signals"
    if not x.is_floating_point():
        raise TypeError(f"`{name}` must be a floating tensor ({what}), got dtype {x.dtype}")
    if x.dim() not in (1, 2) or x.shape[-1] != num_edges:
        simplices = ("nodes", "edges", "triangles", "tetrahedra")[rank]
        raise ValueError(
            f"`{name}` must have shape [N{rank}] or [S, N{rank}] with N{rank} = {num_edges} "
            f"(the complex's number of {simplices}), got {tuple(x.shape)}"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` contains NaN or inf values")
    return x


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}, got {value}")
    return int(value)


def _check_positive(value: Any, name: str, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"`{name}` must be a positive float, got {type(value).__name__}")
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(f"`{name}` must be a finite positive float, got {value}")
    return float(value)


#: Keyword options of :func:`optimize_drop_probabilities` that the transforms pass on.
OPTIMIZER_OPTIONS = ("num_steps", "lr", "tol", "max_block_elements")


def check_optimizer_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Validate the optimiser's keyword options (names of :data:`OPTIMIZER_OPTIONS`)."""
    unknown = sorted(set(options) - set(OPTIMIZER_OPTIONS))
    if unknown:
        raise TypeError(
            f"unknown optimiser option(s) {unknown}; expected some of {list(OPTIMIZER_OPTIONS)}"
        )
    out = dict(options)
    if "num_steps" in out:
        out["num_steps"] = _check_int(out["num_steps"], "num_steps", 1)
    if "lr" in out:
        out["lr"] = _check_positive(out["lr"], "lr", allow_none=True)
    if "tol" in out:
        out["tol"] = _check_positive(out["tol"], "tol")
    if "max_block_elements" in out:
        out["max_block_elements"] = _check_int(out["max_block_elements"], "max_block_elements", 1)
    return out


def _check_block_shapes(x: Tensor, p: Tensor, block: Tensor) -> None:
    for t, name in ((x, "x"), (p, "p"), (block, "projector_block")):
        if not isinstance(t, Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor, got {type(t).__name__}")
    if x.shape != p.shape:
        raise ValueError(
            f"`x` and `p` must have the same shape, got {tuple(x.shape)} and {tuple(p.shape)}"
        )
    if (
        block.dim() < 2
        or block.shape[-2:] != (x.shape[-1], x.shape[-1])
        or (block.shape[:-2] != x.shape[:-1])
    ):
        n = x.shape[-1]
        raise ValueError(
            f"`projector_block` must have shape {tuple(x.shape[:-1]) + (n, n)} for `x` of shape "
            f"{tuple(x.shape)}, got {tuple(block.shape)}"
        )


# ---------------------------------------------------------------------------- closed form
def expected_hodge_distortion(x: Tensor, p: Tensor, projector_block: Tensor) -> Tensor:
    r"""Closed form of :math:`\mathcal{L}_k(\mathbf{p}) = \mathbb{E}\|\mathbf{U}_k^\top
    (\mathbf{x} - \mathbf{x}')\|_2^2` (paper §4.1 and its footnote 1, docs/design.md §2.2).

    .. math::
        \mathcal{L}_k(\mathbf{p}) = (\mathbf{x} \circ \mathbf{p})^\top \mathbf{P}_k
        (\mathbf{x} \circ \mathbf{p}) + \sum_i (\mathbf{P}_k)_{ii}\, x_i^2\, p_i (1 - p_i)

    for :math:`\mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d})`,
    :math:`d_i \sim \mathrm{Ber}(p_i)` independent. Pass the flow, the probabilities and
    the projector restricted to any edge set containing the flow's support (e.g. the
    support itself, from :meth:`HodgeDecomposition.projector_blocks`); entries with
    :math:`x_i = 0` contribute nothing. Differentiable in all arguments.

    Args:
        x (Tensor): edge flows on the edge set.
        p (Tensor): drop probabilities on the edge set.
        projector_block (Tensor): the symmetric block :math:`\mathbf{P}_k[S, S]`.

    Shapes:
        - **x**, **p**: ``[..., n]`` (any batch shape).
        - **projector_block**: ``[..., n, n]``.
        - **output**: ``[...]``.

    Raises:
        TypeError: an argument is not a tensor.
        ValueError: the shapes do not match.
    """
    _check_block_shapes(x, p, projector_block)
    q = x * p  # [..., n]
    quad = torch.einsum("...i,...ij,...j->...", q, projector_block, q)
    diag = torch.diagonal(projector_block, dim1=-2, dim2=-1)  # [..., n]
    return quad + (diag * x.square() * p * (1 - p)).sum(-1)


def expected_hodge_distortion_grad(x: Tensor, p: Tensor, projector_block: Tensor) -> Tensor:
    r"""Gradient :math:`\nabla_{\mathbf{p}} \mathcal{L}_k(\mathbf{p})` of
    :func:`expected_hodge_distortion`.

    .. math::
        \nabla_{\mathbf{p}} \mathcal{L}_k = 2\, \mathbf{x} \circ \big(\mathbf{P}_k
        (\mathbf{x} \circ \mathbf{p})\big) + \operatorname{diag}(\mathbf{P}_k) \circ
        \mathbf{x}^{2} \circ (\mathbf{1} - 2\mathbf{p})

    (``projector_block`` symmetric). The Hessian is :math:`2\operatorname{diag}(\mathbf{x})
    (\mathbf{P}_k - \operatorname{Diag}(\mathbf{P}_k))\operatorname{diag}(\mathbf{x})`.

    Shapes:
        As :func:`expected_hodge_distortion`; **output** ``[..., n]``.

    Raises:
        TypeError / ValueError: as :func:`expected_hodge_distortion`.
    """
    _check_block_shapes(x, p, projector_block)
    q = x * p
    pq = torch.einsum("...ij,...j->...i", projector_block, q)  # [..., n]
    diag = torch.diagonal(projector_block, dim1=-2, dim2=-1)
    return 2 * x * pq + diag * x.square() * (1 - 2 * p)


def _objective_weights(
    x: Tensor,
    blocks: Mapping[str, Tensor],
    perturb: tuple[str, ...],
    preserve: tuple[str, ...],
    alpha: Mapping[str, float],
) -> dict[str, Tensor]:
    """``c_k = s_k alpha_k / ||P_k x||^2`` (zero where ``||P_k x|| = 0``), shape ``[...]``."""
    weights = {}
    for comp in (*perturb, *preserve):
        sign = -1.0 if comp in perturb else 1.0
        block = blocks[comp]
        energy = torch.einsum("...i,...ij,...j->...", x, block, x)  # ||P_k x||^2, [...]
        # ||P_k x||^2 is a squared norm; round-off can leave a tiny or negative value for a
        # flow with no energy in component k, so components below a relative threshold of
        # ||x||^2 contribute nothing (docs/design.md §2.3).
        total = x.square().sum(-1)
        present = energy > 1e-12 * total
        safe = torch.where(present, energy, torch.ones_like(energy))
        weights[comp] = torch.where(present, sign * alpha[comp] / safe, torch.zeros_like(energy))
    return weights


def hodge_mask_objective(
    x: Tensor,
    p: Tensor,
    blocks: Mapping[str, Tensor],
    perturb: Sequence[str] = ("gradient",),
    preserve: Sequence[str] = ("curl", "harmonic"),
    alpha: Mapping[str, float] | None = None,
) -> Tensor:
    r"""The drop-probability objective of the paper's eq. (9) with normalised terms
    (docs/design.md §2.3).

    .. math::
        f(\mathbf{p}) = \sum_{k \in \text{perturb}} -\alpha_k
        \frac{\mathcal{L}_k(\mathbf{p})}{\|\mathbf{P}_k\mathbf{x}\|_2^2}
        + \sum_{k \in \text{preserve}} \alpha_k
        \frac{\mathcal{L}_k(\mathbf{p})}{\|\mathbf{P}_k\mathbf{x}\|_2^2}

    with :math:`\mathcal{L}_k` of :func:`expected_hodge_distortion`; a component with
    :math:`\|\mathbf{P}_k \mathbf{x}\|_2 = 0` (below :math:`10^{-12}\|\mathbf{x}\|_2^2`)
    contributes nothing. ``x`` must be zero outside the edge set of the blocks (true for
    the blocks on its support).

    Args:
        x (Tensor): edge flows on the edge set.
        p (Tensor): drop probabilities on the edge set.
        blocks (Mapping[str, Tensor]): projector blocks ``P_k[S, S]`` by component name
            (at least those in ``perturb`` and ``preserve``).
        perturb (Sequence[str], optional): components whose embedding the masks should
            change. (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components whose embedding the masks should
            keep. (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weight per component
            (missing ones are 1). (default: ``None``, all 1)

    Shapes:
        - **x**, **p**: ``[..., n]``; each block ``[..., n, n]``; **output** ``[...]``.

    Raises:
        ValueError: unknown or repeated component names, a component both perturbed and
            preserved, a negative or non-finite weight, a missing block or bad shapes.
        TypeError: wrong argument types.
    """
    perturb, preserve, weights = check_objective(perturb, preserve, alpha)
    for comp in (*perturb, *preserve):
        if comp not in blocks:
            raise ValueError(f"`blocks` lacks the {comp!r} projector block")
        _check_block_shapes(x, p, blocks[comp])
    coef = _objective_weights(x, blocks, perturb, preserve, weights)
    out = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for comp, c in coef.items():
        out = out + c * expected_hodge_distortion(x, p, blocks[comp])
    return out


# ---------------------------------------------------------------------------- projection
def project_capped_simplex(
    v: Tensor,
    budget: float | Tensor,
    mask: Tensor | None = None,
    method: str = "sort",
    num_iters: int = 60,
) -> Tensor:
    r"""Euclidean projection onto the capped simplex, row by row.

    .. math::
        \Pi(\mathbf{v}) = \operatorname*{arg\,min}_{\mathbf{p}} \|\mathbf{p} - \mathbf{v}\|_2
        \quad \text{s.t.} \quad \mathbf{p} \in [0, 1]^n,\ \sum_i p_i \le b,\
        p_i = 0 \text{ where the mask is False}.

    By the KKT conditions :math:`\Pi(\mathbf{v}) = \operatorname{clip}(\mathbf{v} - \mu,
    0, 1)` (docs/design.md §2.3) with :math:`\mu = 0` when :math:`g(0) \le b` and otherwise the
    :math:`\mu > 0` with :math:`g(\mu) = b`, where :math:`g(\mu) = \sum_i
    \operatorname{clip}(v_i - \mu, 0, 1)` is continuous, piecewise linear and
    non-increasing. Two ways to find the shift :math:`\mu`, batched over rows:

    * ``"sort"`` (default): exact. :math:`g` has the breakpoints :math:`v_i - 1` and
      :math:`v_i`; sorting them and accumulating the slopes gives :math:`g` at every
      breakpoint, and :math:`\mu` is interpolated on the piece where :math:`g` crosses
      :math:`b`. :math:`O(n \log n)` per row, about 15 tensor operations in all; the
      budget holds up to floating-point round-off.
    * ``"bisection"``: ``num_iters`` halvings of :math:`[0, \max_i v_i]`, keeping the
      upper end, so the budget holds exactly and every entry is within
      :math:`2^{-\text{num\_iters}} \max_i v_i` of the projection (slower: the
      reference implementation).

    Args:
        v (Tensor): points to project (floating).
        budget (float or Tensor): the cap :math:`b \ge 0` on the sum of each row (an
            absolute value, not a fraction): a float or a tensor of shape ``v.shape[:-1]``.
        mask (Tensor, optional): ``bool`` like ``v``; ``False`` entries (e.g. padding
            or edges off a flow's support) are fixed to 0. (default: ``None``, all free)
        method (str, optional): ``"sort"`` or ``"bisection"``. (default: ``"sort"``)
        num_iters (int, optional): bisection steps (``"bisection"`` only).
            (default: ``60``)

    Shapes:
        - **v**, **mask**, **output**: ``[..., n]``.
        - **budget**: scalar or ``[...]``.

    Raises:
        TypeError: ``v`` is not a floating tensor, ``mask`` is not boolean.
        ValueError: a negative or non-finite budget, non-finite ``v``, mismatched shapes,
            an unknown ``method``, ``num_iters < 1``.
    """
    if method not in ("sort", "bisection"):
        raise ValueError(f"`method` must be 'sort' or 'bisection', got {method!r}")
    if not isinstance(v, Tensor) or not v.is_floating_point():
        raise TypeError("`v` must be a floating torch.Tensor")
    if v.dim() == 0:
        raise ValueError("`v` must have at least one dimension")
    if not bool(torch.isfinite(v).all()):
        raise ValueError("`v` contains NaN or inf values")
    num_iters = _check_int(num_iters, "num_iters", 1)
    b = torch.as_tensor(budget, dtype=v.dtype, device=v.device)
    if b.dim() > 0 and b.shape != v.shape[:-1]:
        raise ValueError(
            f"`budget` must be a scalar or have shape {tuple(v.shape[:-1])}, got {tuple(b.shape)}"
        )
    if not bool(torch.isfinite(b).all()) or bool((b < 0).any()):
        raise ValueError("`budget` must be finite and >= 0")
    b = b.expand(v.shape[:-1])
    if mask is None:
        upper = torch.ones_like(v)
    else:
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
            raise TypeError("`mask` must be a bool torch.Tensor")
        if mask.shape != v.shape:
            raise ValueError(
                f"`mask` must have the shape of `v` {tuple(v.shape)}, got {tuple(mask.shape)}"
            )
        upper = mask.to(v.dtype)
    if v.shape[-1] == 0:
        return v.clone()
    if method == "sort":
        return _project_sort(v, b.to(v.dtype), upper)
    return _project_bisection(v, b, upper, num_iters)


def _project_bisection(v: Tensor, b: Tensor, upper: Tensor, num_iters: int) -> Tensor:
    """Bisection on ``mu`` (no checks); ``upper`` is 1 on free entries, 0 on fixed ones."""
    zero = torch.zeros((), dtype=v.dtype, device=v.device)

    def clipped(mu: Tensor) -> Tensor:
        return torch.minimum(torch.maximum(v - mu.unsqueeze(-1), zero), upper)

    lo = torch.zeros_like(b)
    hi = torch.maximum((v * upper).amax(-1), lo)  # at mu = max v every entry is 0
    over = clipped(lo).sum(-1) > b  # rows where mu = 0 breaks the budget
    for _ in range(num_iters):
        mid = 0.5 * (lo + hi)
        above = clipped(mid).sum(-1) > b
        lo = torch.where(above, mid, lo)
        hi = torch.where(above, hi, mid)
    mu = torch.where(over, hi, torch.zeros_like(hi))
    return clipped(mu)


def _project_sort(v: Tensor, b: Tensor, upper: Tensor) -> Tensor:
    r"""Exact root of the piecewise-linear :math:`g(\mu) = \sum_i \operatorname{clip}(v_i -
    \mu, 0, u_i)` by sorting its breakpoints :math:`v_i - 1, v_i` (no checks)."""
    zero = torch.zeros((), dtype=v.dtype, device=v.device)
    free = upper > 0
    g0 = torch.minimum(torch.maximum(v, zero), upper).sum(-1)  # g(0)
    over = g0 > b
    # Breakpoints: entry i starts to fall at mu = v_i - 1 (slope -1) and reaches 0 at v_i.
    # Fixed entries get two coinciding breakpoints at 0 whose slope changes cancel.
    knots = torch.cat([torch.where(free, v - 1, zero), torch.where(free, v, zero)], -1)
    dslope = torch.cat([-upper, upper], -1)  # [..., 2n]
    knots, order = knots.sort(-1)
    slope = dslope.gather(-1, order).cumsum(-1)  # slope of g right of each knot
    gaps = knots[..., 1:] - knots[..., :-1]
    # at the smallest knot every free entry is still 1
    start = upper.sum(-1, keepdim=True)
    g = torch.cat([start, start + (slope[..., :-1] * gaps).cumsum(-1)], -1)  # g(knot_j)
    # first knot with g <= b (g is non-increasing and 0 at the largest knot)
    j = (g > b.unsqueeze(-1)).sum(-1, keepdim=True).clamp(1, knots.shape[-1] - 1)
    t0, t1 = knots.gather(-1, j - 1), knots.gather(-1, j)
    g_0, g_1 = g.gather(-1, j - 1), g.gather(-1, j)
    drop = g_0 - g_1
    frac = torch.where(drop > 0, (g_0 - b.unsqueeze(-1)) / torch.where(drop > 0, drop, 1), 1)
    mu = (t0 + frac.clamp(0, 1) * (t1 - t0)).squeeze(-1)
    mu = torch.where(over, mu.clamp_min(0), torch.zeros_like(mu))
    return torch.minimum(torch.maximum(v - mu.unsqueeze(-1), zero), upper)


# ---------------------------------------------------------------------------- optimiser
def _lipschitz(hess: Tensor, bound: Tensor) -> Tensor:
    r"""Spectral norm of the Hessians ``[B, n, n]`` (exact for small ``n``, else a bound)."""
    n = hess.shape[-1]
    if n <= _EXACT_LIPSCHITZ_MAX:
        lip = torch.linalg.eigvalsh(hess).abs().amax(-1)
        lip = lip * (1 + 1e-9) + 1e-15 * bound  # round-off of eigvalsh
    else:
        fro = torch.linalg.matrix_norm(hess, ord="fro")
        rows = hess.abs().sum(-1).amax(-1)  # ||H||_inf >= ||H||_2 for symmetric H
        lip = torch.minimum(fro, rows)
    # A larger constant is always safe (smaller step); the floor keeps the step finite on
    # objectives that are linear in p (e.g. a one-edge support) or identically zero.
    floor = torch.where(bound > 0, 1e-6 * bound, torch.ones_like(bound))
    return torch.maximum(lip, floor)


def _optimize_chunk(
    xs: Tensor,
    valid: Tensor,
    blocks: Mapping[str, Tensor],
    budget: float,
    perturb: tuple[str, ...],
    preserve: tuple[str, ...],
    alpha: Mapping[str, float],
    num_steps: int,
    lr: float | None,
    tol: float,
    history: list[Tensor] | None,
) -> Tensor:
    """PGD on one chunk: ``xs [B, n]`` (float64, zero-padded), ``valid [B, n]``, blocks
    ``[B, n, n]``. Returns ``p [B, n]``; appends ``f(p) [B]`` per step to ``history``."""
    coef = _objective_weights(xs, blocks, perturb, preserve, alpha)
    count, n = xs.shape
    mat = torch.zeros(count, n, n, dtype=xs.dtype, device=xs.device)  # M = sum_k c_k P_k
    bound = torch.zeros(xs.shape[0], dtype=xs.dtype, device=xs.device)
    for comp, c in coef.items():
        mat = mat + c[:, None, None] * blocks[comp]
        bound = bound + c.abs()
    diag = torch.diagonal(mat, dim1=-2, dim2=-1)  # [B, n]
    lin = diag * xs.square()  # coefficient of p_i (1 - p_i)
    # Hessian of f: 2 diag(x) (M - Diag(M)) diag(x)
    off = mat - torch.diag_embed(diag)
    hess = 2 * xs.unsqueeze(-1) * off * xs.unsqueeze(-2)  # [B, n, n]
    # ||H||_2 <= 2 max x^2 (||M||_2 + max|M_ii|) <= 4 max x^2 sum_k |c_k|
    bound = 4 * xs.square().amax(-1) * bound
    min_step = 1.0 / _lipschitz(hess, bound)  # [B], 1 / L
    del hess, off
    adaptive = lr is None
    step = min_step.clone() if adaptive else torch.full_like(bound, lr)
    cap = budget * valid.sum(-1).to(xs.dtype)  # [B]
    upper = valid.to(xs.dtype)
    p = budget * upper  # feasible start: uniform budget on the support

    def objective(p: Tensor) -> Tensor:
        q = xs * p
        return torch.einsum("bi,bij,bj->b", q, mat, q) + (lin * p * (1 - p)).sum(-1)

    value = objective(p)
    if history is not None:
        history.append(value)
    active = torch.ones_like(value, dtype=torch.bool)  # samples still being optimised

    def gradient(p: Tensor) -> Tensor:
        return 2 * xs * torch.einsum("bij,bj->bi", mat, xs * p) + lin * (1 - 2 * p)

    for it in range(num_steps):
        grad = gradient(p)
        new = _project_sort(p - step[:, None] * grad, cap, upper)
        delta = new - p  # [B, n]
        new_value = objective(new)
        if adaptive:
            # sufficient decrease: f(new) <= f(p) + <g, d> + ||d||^2 / (2 step), which holds
            # for every step <= 1 / L; longer steps are tried and halved when it fails
            model = value + (grad * delta).sum(-1) + delta.square().sum(-1) / (2 * step)
            ok = (new_value <= torch.minimum(model, value)) | (step <= min_step)
            ok = ok & active
            step = torch.where(
                ok,
                torch.minimum(step * _STEP_GROWTH, _MAX_STEP_RATIO * min_step),
                torch.where(active, torch.maximum(0.5 * step, min_step), step),
            )
        else:
            ok = active
        p = torch.where(ok[:, None], new, p)
        value = torch.where(ok, new_value, value)
        if history is not None:
            history.append(value)
        if (it + 1) % 10 == 0:
            # a sample is done once the fixed 1/L step would move no entry by more than
            # tol; done samples are frozen, so a sample's result does not depend on the
            # other samples of the batch (up to round-off, which can break a tie between
            # two equally good solutions differently)
            fixed = _project_sort(p - min_step[:, None] * gradient(p), cap, upper)
            active = active & ((fixed - p).abs().amax(-1) > tol)
            if not bool(active.any()):
                break
    return p


def _chunks(sizes: np.ndarray, max_elements: int, growth: float) -> list[np.ndarray]:
    """Group samples, sorted by support size, so that ``count * max_size^2 <= max_elements``
    and the largest support of a group is at most ``growth`` times its smallest plus 8."""
    order = np.argsort(sizes, kind="stable")
    order = order[sizes[order] > 0]
    chunks, start = [], 0
    for end in range(1, order.size + 1):
        n = int(sizes[order[end - 1]])
        smallest = int(sizes[order[start]])
        if end - start > 1 and ((end - start) * n * n > max_elements or n > growth * smallest + 8):
            chunks.append(order[start : end - 1])
            start = end - 1
    if start < order.size:
        chunks.append(order[start:])
    return chunks


def optimize_drop_probabilities(
    x: Tensor,
    hodge: HodgeDecomposition,
    budget: float,
    perturb: Sequence[str] = ("gradient",),
    preserve: Sequence[str] = ("curl", "harmonic"),
    alpha: Mapping[str, float] | None = None,
    num_steps: int = 500,
    lr: float | None = None,
    tol: float = 1e-6,
    max_block_elements: int = 2**24,
    return_history: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""Per-sample Hodge-aware drop probabilities by projected gradient descent (paper §4.1,
    eq. 9; docs/design.md §2.2-2.3).

    For each flow :math:`\mathbf{x}` with support :math:`S`, solves

    .. math::
        \min_{\mathbf{p}} \sum_k s_k\, \alpha_k\,
        \frac{\mathcal{L}_k(\mathbf{p})}{\|\mathbf{P}_k \mathbf{x}\|_2^2}
        \quad \text{s.t.} \quad \mathbf{p} \in [0, 1]^{N_1},\ p_i = 0 \ (i \notin S),\
        \sum_i p_i \le \varepsilon\, |S|

    (:func:`hodge_mask_objective`, :math:`s_k = -1` for ``perturb``, :math:`+1` for
    ``preserve``) with the projector blocks :math:`\mathbf{P}_k[S, S]` of
    :meth:`HodgeDecomposition.projector_blocks` only, so it scales to large complexes
    with sparse flows. **Budget:** ``budget`` :math:`=\varepsilon` is a fraction of the
    support size, the expected fraction of the flow's non-zero edges that may be dropped.

    **Algorithm.** The samples' blocks are padded to ``[B, n_max, n_max]`` with a validity
    mask and run one batched loop. To limit padding, samples are sorted by support size
    and split into chunks of similar sizes (the largest at most 1.5 times the smallest plus
    8 edges), and a chunk holds at most ``max_block_elements`` block entries to bound
    memory; each chunk is one batched loop.
    From the feasible start :math:`p_i = \varepsilon` on :math:`S`, every step is
    :math:`\mathbf{p} \leftarrow \Pi(\mathbf{p} - \eta \nabla f(\mathbf{p}))` with the
    capped-simplex projection :func:`project_capped_simplex`. The objective is an
    indefinite quadratic (the perturbed terms enter with a minus sign) with Hessian
    :math:`\mathbf{H} = 2 \operatorname{diag}(\mathbf{x}) (\mathbf{M} -
    \operatorname{Diag}\mathbf{M}) \operatorname{diag}(\mathbf{x})`,
    :math:`\mathbf{M} = \sum_k c_k \mathbf{P}_k[S, S]`, so it is :math:`L`-smooth with
    :math:`L = \|\mathbf{H}\|_2` (computed per sample by ``eigvalsh`` in chunks whose largest
    support has at most 256 edges, else bounded by :math:`\min(\|\mathbf{H}\|_F,
    \|\mathbf{H}\|_\infty)`).
    Any step :math:`\eta \le 1/L` decreases the objective by at least
    :math:`\|\Delta\mathbf{p}\|^2 / (2\eta)` (descent lemma for the projected gradient).
    With ``lr=None`` (default) each sample's step is adapted by backtracking that never
    goes below :math:`1/L`: a step is accepted when
    :math:`f(\mathbf{p}^+) \le \min\{f(\mathbf{p}),\ f(\mathbf{p}) + \nabla f^\top
    \Delta\mathbf{p} + \|\Delta\mathbf{p}\|^2/(2\eta)\}` (always at :math:`\eta = 1/L`)
    and then grows by 1.5 (at most :math:`1024/L`), otherwise it is halved (not below
    :math:`1/L`) and retried. So the objective never increases, and on the trajectory
    data the loop converges in tens of steps where the fixed :math:`1/L` step needs
    thousands. A fixed ``lr`` disables the adaptation (no monotonicity guarantee when
    ``lr > 1/L``). The loop stops after ``num_steps`` steps or once no sample's fixed
    :math:`1/L` step would move an entry by more than ``tol`` (checked every 10 steps);
    the result is then a stationary point (a local minimum in general: the problem is
    not convex). A sample that has converged is frozen, so its result does not depend on the
    other samples of the batch (up to round-off, which may break a tie between equally good
    solutions differently). The optimised probabilities are often 0 or 1 on most edges (the
    perturbed terms make the objective concave along many directions), so the masks of
    a flow vary less between draws than uniform ones. All arithmetic is in float64.

    Args:
        x (Tensor): edge flows, floating.
        hodge (HodgeDecomposition): the decomposition of the flows' complex (either
            backend).
        budget (float): :math:`\varepsilon \in [0, 1]`, the expected fraction of the
            support that may be dropped.
        perturb (Sequence[str], optional): components to perturb.
            (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components to preserve.
            (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weights by component name
            (missing ones are 1; keys of components in neither list are ignored).
            (default: ``None``)
        num_steps (int, optional): maximum number of PGD steps. (default: ``500``)
        lr (float, optional): a fixed step size for all samples instead of the adaptive
            per-sample step (no monotonicity guarantee if larger than :math:`1/L`).
            (default: ``None``)
        tol (float, optional): stopping tolerance on the max-norm of the :math:`1/L`
            projected-gradient step (checked every 10 steps). (default: ``1e-6``)
        max_block_elements (int, optional): memory cap, in entries, of a chunk's padded
            blocks ``[B, n, n]``. (default: ``2**24``, 128 MiB in float64)
        return_history (bool, optional): also return the objective after every step.
            (default: ``False``)

    Returns:
        The drop probabilities, shaped like ``x``, on its device and dtype; zero off each
        flow's support (so all-zero flows get all-zero probabilities). With
        ``return_history=True`` a pair ``(p, history)`` where ``history`` is float64
        ``[T + 1, S]``: the objective of every sample at the start and after each of the
        ``T`` steps run (samples of chunks that stopped earlier repeat their last value).

    Shapes:
        - **x**, **output**: ``[N1]`` or ``[S, N1]``.

    Raises:
        TypeError: ``x`` not a floating tensor, ``hodge`` not a
            :class:`~topo_contrastive.hodge.HodgeDecomposition`, wrong argument types.
        ValueError: ``x`` of the wrong length or with NaN/inf, ``budget`` outside
            ``[0, 1]``, unknown/repeated/conflicting component names, negative weights,
            non-positive ``lr``/``tol``, ``num_steps < 1``.

    Example:
        >>> ops = SimplicialOperators.from_simplices(
        ...     [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
        >>> hodge = HodgeDecomposition(ops)
        >>> x = torch.stack([ops.path_to_flow([0, 1, 2, 3]), ops.path_to_flow([3, 0, 2])])
        >>> p = optimize_drop_probabilities(x, hodge, budget=0.3)  # [2, N1]
        >>> p.shape, bool((p[x == 0] == 0).all())  # nothing dropped off the support
        (torch.Size([2, 5]), True)
        >>> bool((p.sum(1) <= 0.3 * (x != 0).sum(1) + 1e-6).all())  # the budget holds
        True
    """
    if not isinstance(hodge, HodgeDecomposition):
        raise TypeError(f"`hodge` must be a HodgeDecomposition, got {type(hodge).__name__}")
    x = check_flows(x, hodge.num_simplices, rank=hodge.rank)
    budget = check_budget(budget)
    perturb, preserve, weights = check_objective(perturb, preserve, alpha)
    num_steps = _check_int(num_steps, "num_steps", 1)
    lr = _check_positive(lr, "lr", allow_none=True)
    tol = _check_positive(tol, "tol")
    max_block_elements = _check_int(max_block_elements, "max_block_elements", 1)
    if not isinstance(return_history, bool):
        raise TypeError(f"`return_history` must be a bool, got {type(return_history).__name__}")

    single = x.dim() == 1
    flows = x.detach().unsqueeze(0) if single else x.detach()  # [S, N1]
    num_samples = flows.shape[0]
    device = flows.device
    out = torch.zeros_like(flows)
    hist = None
    if return_history:
        hist = torch.zeros(num_steps + 1, num_samples, dtype=torch.float64, device=device)
    rows, cols = torch.nonzero(flows, as_tuple=True)  # support entries, row-major
    sizes = torch.bincount(rows, minlength=num_samples).cpu().numpy()
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    comps = (*perturb, *preserve)
    steps_run = 0
    zero = torch.zeros((), dtype=torch.float64, device=device)
    chunks = _chunks(sizes, max_block_elements, _CHUNK_GROWTH) if budget > 0 else []
    if comps and chunks:
        # one call for every sample: the iterative backend factorises L0 once per group
        # of touched nodes (Schur complement), so fewer, larger calls are much cheaper
        cols_cpu = cols.cpu()
        nonzero = [s for c in chunks for s in c.tolist()]
        supports_all = [cols_cpu[ptr[s] : ptr[s + 1]] for s in nonzero]
        got = hodge.projector_blocks(supports_all, dtype=torch.float64, device=device)
        where = {s: i for i, s in enumerate(nonzero)}
    for chunk in chunks:
        n = int(sizes[chunk].max())
        count = chunk.size
        chunk_t = torch.as_tensor(chunk, device=device)
        lengths = torch.as_tensor(sizes[chunk], device=device)
        valid = torch.arange(n, device=device) < lengths[:, None]  # [B, n]
        # flat positions of the chunk's support entries, in the row-major order of `cols`
        starts = torch.as_tensor(ptr[chunk], device=device)
        pos = starts[:, None] + torch.arange(n, device=device)  # [B, n]
        pos = torch.where(valid, pos, torch.zeros_like(pos))
        idx = cols[pos]  # [B, n] edge index (meaningless where not valid)
        xs = torch.where(valid, flows[chunk_t[:, None], idx].to(torch.float64), zero)  # [B, n]
        blocks = {}
        if comps:
            raw = {k: [got[k][where[int(s)]] for s in chunk] for k in comps}
            valid2 = valid[:, :, None] & valid[:, None, :]  # [B, n, n]
            for comp in comps:
                pad = torch.zeros(count, n, n, dtype=torch.float64, device=device)
                # boolean-mask assignment fills row-major, as the blocks are flattened
                pad[valid2] = torch.cat([blk.reshape(-1) for blk in raw[comp]])
                blocks[comp] = pad
            del raw
        chunk_hist: list[Tensor] | None = [] if return_history else None
        p = _optimize_chunk(
            xs, valid, blocks, budget, perturb, preserve, weights, num_steps, lr, tol, chunk_hist
        )
        out[chunk_t[:, None].expand_as(idx)[valid], idx[valid]] = p[valid].to(out.dtype)
        if hist is not None and chunk_hist is not None:
            h = torch.stack(chunk_hist)  # [T_chunk + 1, B]
            hist[: h.shape[0], chunk_t] = h
            hist[h.shape[0] :, chunk_t] = h[-1]
            steps_run = max(steps_run, h.shape[0] - 1)
    if single:
        out = out[0]
    if return_history:
        return out, hist[: steps_run + 1]
    return out
