r"""The maths of the Hodge-aware drop probabilities (private; docs/design.md §2.2-2.3, §7.7):
the weights of the closed-form objective, the exact projection onto the capped simplex and
the batched projected gradient descent behind
:func:`~topo_contrastive.transforms.optimize_drop_probabilities` (no argument checks here)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import torch
from torch import Tensor

from topo_contrastive.hodge import HodgeDecomposition

#: Largest padded support size whose Lipschitz constant is computed exactly (eigvalsh).
_EXACT_LIPSCHITZ_MAX = 256
#: Growth of a sample's step after an accepted step (backtracking halves it on rejection).
_STEP_GROWTH = 1.5
#: Support sizes within a chunk differ by at most this factor (+8): limits padding waste.
_CHUNK_GROWTH = 1.5
#: Supports of more entries than this are optimised matrix free (a block would be 128 MiB).
_MATRIX_FREE_MIN = 4096
#: Arrays ``[B, N]`` the matrix-free loop holds at once (its chunks' memory budget).
_FREE_ARRAYS = 16
#: Power iterations of the matrix-free path's first step.
_POWER_ITERATIONS = 10
#: Largest step, in units of 1 / L (keeps ``p - step * grad`` well inside float64's range).
_MAX_STEP_RATIO = 1024.0


# ---------------------------------------------------------------------------- objective
def objective_weights(
    x: Tensor,
    blocks: Mapping[str, Tensor],
    perturb: tuple[str, ...],
    preserve: tuple[str, ...],
    alpha: Mapping[str, float],
) -> dict[str, Tensor]:
    """``c_k = s_k alpha_k / ||P_k x||^2`` (zero where ``||P_k x|| = 0``), shape ``[...]``."""
    comps = (*perturb, *preserve)  # ||P_k x||^2 = x^T P_k x, [...]
    energies = {k: torch.einsum("...i,...ij,...j->...", x, blocks[k], x) for k in comps}
    return _weights(x, energies, perturb, alpha)


def _weights(
    x: Tensor, energies: Mapping[str, Tensor], perturb: tuple[str, ...], alpha: Mapping[str, float]
) -> dict[str, Tensor]:
    """The weights ``c_k`` of :func:`objective_weights` from the energies ``||P_k x||^2``."""
    weights = {}
    for comp, energy in energies.items():
        sign = -1.0 if comp in perturb else 1.0
        # round-off can leave a tiny or negative energy for a flow with none in component
        # k: components below a relative threshold of ||x||^2 contribute nothing (§2.3)
        total = x.square().sum(-1)
        present = energy > 1e-12 * total
        safe = torch.where(present, energy, torch.ones_like(energy))
        weights[comp] = torch.where(present, sign * alpha[comp] / safe, torch.zeros_like(energy))
    return weights


def project_sort(v: Tensor, b: Tensor, upper: Tensor) -> Tensor:
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
    """Spectral norm of the Hessians ``[B, n, n]`` (exact for small ``n``, else a bound)."""
    if hess.shape[-1] <= _EXACT_LIPSCHITZ_MAX:
        lip = torch.linalg.eigvalsh(hess).abs().amax(-1)
        lip = lip * (1 + 1e-9) + 1e-15 * bound  # round-off of eigvalsh
    else:
        fro = torch.linalg.matrix_norm(hess, ord="fro")
        rows = hess.abs().sum(-1).amax(-1)  # ||H||_inf >= ||H||_2 for symmetric H
        lip = torch.minimum(fro, rows)
    return _floored(lip, bound)


def _floored(lip: Tensor, bound: Tensor) -> Tensor:
    """A Lipschitz constant kept above ``1e-6 * bound`` (``1`` where ``bound = 0``)."""
    # A larger constant is always safe (smaller step); the floor keeps the step finite on
    # objectives that are linear in p (e.g. a one-edge support) or identically zero.
    floor = torch.where(bound > 0, 1e-6 * bound, torch.ones_like(bound))
    return torch.maximum(lip, floor)


def _optimize_chunk(
    xs: Tensor,
    valid: Tensor,
    blocks: Mapping[str, Tensor],
    budget: float,
    objective: tuple[tuple[str, ...], tuple[str, ...], Mapping[str, float]],
    steps: tuple[int, float | None, float],
    history: list[Tensor] | None,
) -> Tensor:
    """PGD on one chunk: ``xs [B, n]`` (float64, zero-padded), ``valid [B, n]``, blocks
    ``[B, n, n]``; ``steps = (num_steps, lr, tol)``. Returns ``p [B, n]``; appends ``f(p)
    [B]`` per step to ``history``."""
    coef = objective_weights(xs, blocks, *objective)
    count, n = xs.shape
    mat = torch.zeros(count, n, n, dtype=xs.dtype, device=xs.device)  # M = sum_k c_k P_k
    bound = torch.zeros(count, dtype=xs.dtype, device=xs.device)
    for comp, c in coef.items():
        mat = mat + c[:, None, None] * blocks[comp]
        bound = bound + c.abs()
    diag = torch.diagonal(mat, dim1=-2, dim2=-1)  # [B, n]
    lin = diag * xs.square()  # coefficient of p_i (1 - p_i)
    # Hessian of f: 2 diag(x) (M - Diag(M)) diag(x)
    hess = 2 * xs.unsqueeze(-1) * (mat - torch.diag_embed(diag)) * xs.unsqueeze(-2)
    # ||H||_2 <= 2 max x^2 (||M||_2 + max|M_ii|) <= 4 max x^2 sum_k |c_k|
    bound = 4 * xs.square().amax(-1) * bound
    min_step = 1.0 / _lipschitz(hess, bound)  # [B], 1 / L
    del hess

    def f(p: Tensor) -> Tensor:
        q = xs * p
        return torch.einsum("bi,bij,bj->b", q, mat, q) + (lin * p * (1 - p)).sum(-1)

    def gradient(p: Tensor) -> Tensor:
        return 2 * xs * torch.einsum("bij,bj->bi", mat, xs * p) + lin * (1 - 2 * p)

    return _descend(f, gradient, valid, budget, (min_step, min_step), steps, history)


def _matrix_free_chunk(
    xs: Tensor,
    project: Callable[[Tensor], dict[str, Tensor]],
    diagonals: Mapping[str, Tensor],
    budget: float,
    objective: tuple[tuple[str, ...], tuple[str, ...], Mapping[str, float]],
    steps: tuple[int, float | None, float],
    history: list[Tensor] | None,
) -> Tensor:
    """PGD on flows ``xs [B, N]`` (float64, zero off their supports) without blocks: ``M q``
    from the parts ``project(q)`` (``{k: P_k q}``), ``M_ii`` from the projectors'
    ``diagonals`` ``{k: [N]}`` (docs/design.md §7.7); the rest as :func:`_optimize_chunk`."""
    coef = _weights(xs, {k: (xs * v).sum(-1) for k, v in project(xs).items()}, *objective[::2])
    lin = sum(c[:, None] * diagonals[k] for k, c in coef.items()) * xs.square()  # M_ii x_i^2

    def matvec(q: Tensor) -> Tensor:
        return sum(coef[k][:, None] * v for k, v in project(q).items())

    def f(p: Tensor) -> Tensor:
        q = xs * p
        return (q * matvec(q)).sum(-1) + (lin * p * (1 - p)).sum(-1)

    def gradient(p: Tensor) -> Tensor:
        return 2 * xs * matvec(xs * p) + lin * (1 - 2 * p)

    c, top = torch.stack(list(coef.values()), -1), xs.square().amax(-1)
    min_step = 1.0 / _floored(_spectral_bound(c, top, lin), 4 * top * c.abs().sum(-1))
    # that bound is loose: the first step is 1 / (2 ||H v||) after a few power iterations
    # (||H v|| <= ||H||_2), halved by the backtracking where it is too long
    v = (xs != 0).to(xs.dtype)
    for _ in range(_POWER_ITERATIONS):
        v = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-300)
        v = 2 * xs * matvec(xs * v) - 2 * lin * v  # H v
    start = torch.clamp(0.5 / v.norm(dim=-1), min_step, _MAX_STEP_RATIO * min_step)
    return _descend(f, gradient, xs != 0, budget, (min_step, start), steps, history)


def _spectral_bound(c: Tensor, top: Tensor, lin: Tensor) -> Tensor:
    """``||H||_2 <= L`` ``[B]`` from the weights ``c [B, K]``, ``max x^2`` ``[B]`` and
    ``M_ii x_i^2`` ``[B, N]`` alone: the eigenvalues of ``M`` are the ``c_k`` and 0, so those
    of ``H / 2 = D M D - D Diag(M) D`` lie in ``[min(c, 0) max x^2 - max M_ii x_i^2,
    max(c, 0) max x^2 - min M_ii x_i^2]``."""
    high = c.amax(-1).clamp_min(0) * top - lin.amin(-1)
    low = c.amin(-1).clamp_max(0) * top - lin.amax(-1)
    return 2 * torch.maximum(high.abs(), low.abs())


def _descend(
    f: Callable[[Tensor], Tensor],
    gradient: Callable[[Tensor], Tensor],
    valid: Tensor,
    budget: float,
    step_bounds: tuple[Tensor, Tensor],
    steps: tuple[int, float | None, float],
    history: list[Tensor] | None,
) -> Tensor:
    """Projected gradient descent of ``f`` from the uniform budget on ``valid [B, n]``, with
    adaptive steps from ``start`` and of at least ``min_step = 1 / L`` (``step_bounds =
    (min_step, start)``, ``[B]`` each; docs/design.md §7.7)."""
    num_steps, lr, tol = steps
    min_step, start = step_bounds
    adaptive = lr is None
    step = start.clone() if adaptive else torch.full_like(min_step, lr)
    cap = budget * valid.sum(-1).to(min_step.dtype)  # [B]
    upper = valid.to(min_step.dtype)
    p = budget * upper  # feasible start: uniform budget on the support
    value = f(p)
    if history is not None:
        history.append(value)
    active = torch.ones_like(value, dtype=torch.bool)  # samples still being optimised
    for it in range(num_steps):
        grad = gradient(p)
        new = project_sort(p - step[:, None] * grad, cap, upper)
        delta = new - p  # [B, n]
        new_value = f(new)
        ok = active
        if adaptive:
            # sufficient decrease: f(new) <= f(p) + <g, d> + ||d||^2 / (2 step), which holds
            # for every step <= 1 / L; longer steps are tried and halved when it fails
            model = value + (grad * delta).sum(-1) + delta.square().sum(-1) / (2 * step)
            ok = ((new_value <= torch.minimum(model, value)) | (step <= min_step)) & active
            step = torch.where(
                ok,
                torch.minimum(step * _STEP_GROWTH, _MAX_STEP_RATIO * min_step),
                torch.where(active, torch.maximum(0.5 * step, min_step), step),
            )
        p = torch.where(ok[:, None], new, p)
        value = torch.where(ok, new_value, value)
        if history is not None:
            history.append(value)
        if (it + 1) % 10 == 0:
            # a sample is done once the fixed 1/L step would move no entry by more than
            # tol; done samples are frozen, so a sample's result does not depend on the
            # other samples of the batch (up to round-off between equally good solutions)
            fixed = project_sort(p - min_step[:, None] * gradient(p), cap, upper)
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


def _padded(
    flows: Tensor, cols: Tensor, sizes: np.ndarray, ptr: np.ndarray, chunk: np.ndarray
) -> tuple[Tensor, Tensor, Tensor]:
    """A chunk's support entries padded to ``[B, n]``: the flows (float64), the validity
    mask and the edge of every entry."""
    device, n = flows.device, int(sizes[chunk].max())
    lengths = torch.as_tensor(sizes[chunk], device=device)
    valid = torch.arange(n, device=device) < lengths[:, None]  # [B, n]
    # flat positions of the chunk's support entries, in the row-major order of `cols`
    pos = torch.as_tensor(ptr[chunk], device=device)[:, None] + torch.arange(n, device=device)
    idx = cols[torch.where(valid, pos, torch.zeros_like(pos))]  # meaningless where not valid
    rows = torch.as_tensor(chunk, device=device)[:, None]
    zero = torch.zeros((), dtype=torch.float64, device=device)
    return torch.where(valid, flows[rows, idx].to(torch.float64), zero), valid, idx


def _block_chunks(
    flows: Tensor,
    hodge: HodgeDecomposition,
    chunks: list[np.ndarray],
    comps: tuple[str, ...],
    support: tuple[Tensor, np.ndarray, np.ndarray],
    pgd: tuple,
) -> Iterator[tuple[np.ndarray, Tensor, tuple[Tensor, Tensor] | None, list[Tensor] | None]]:
    """``(chunk, p [B, n], (idx, valid) [B, n], history)`` of each chunk of the padded-block
    path (``support = (cols, sizes, ptr)`` of the flows' support entries; ``pgd = (budget,
    objective, steps, history)`` of :func:`_optimize_chunk`)."""
    cols, sizes, ptr = support
    device = flows.device
    if comps and chunks:
        # one call for every sample: the iterative backend factorises L0 once per group
        # of touched nodes (Schur complement), so fewer, larger calls are much cheaper
        cols_cpu = cols.cpu()
        nonzero = [s for c in chunks for s in c.tolist()]
        supports = [cols_cpu[ptr[s] : ptr[s + 1]] for s in nonzero]
        got = hodge.projector_blocks(supports, dtype=torch.float64, device=device)
        where = {s: i for i, s in enumerate(nonzero)}
    for chunk in chunks:
        xs, valid, idx = _padded(flows, cols, sizes, ptr, chunk)
        n = xs.shape[1]
        blocks = {}
        valid2 = valid[:, :, None] & valid[:, None, :]  # [B, n, n]
        for comp in comps:
            pad = torch.zeros(chunk.size, n, n, dtype=torch.float64, device=device)
            # boolean-mask assignment fills row-major, as the blocks are flattened
            pad[valid2] = torch.cat([got[comp][where[int(s)]].reshape(-1) for s in chunk])
            blocks[comp] = pad
        hist: list[Tensor] | None = [] if pgd[-1] else None
        yield chunk, _optimize_chunk(xs, valid, blocks, *pgd[:-1], hist), (idx, valid), hist


def _free_chunks(
    flows: Tensor,
    hodge: HodgeDecomposition,
    root: Tensor | None,
    samples: np.ndarray,
    comps: tuple[str, ...],
    max_elements: int,
    pgd: tuple,
) -> Iterator[tuple[np.ndarray, Tensor, None, list[Tensor] | None]]:
    """``(chunk, p [B, N], None, history)`` of the matrix-free path on the rows ``samples`` of
    ``flows`` (in the metric: times ``root``), ``B * N * _FREE_ARRAYS <= max_elements``
    (``pgd`` as :func:`_block_chunks`)."""
    if not (comps and samples.size):
        return
    n = flows.shape[1]
    # the diagonals of the projectors on the edges of any support: 1 x 1 blocks
    edges = torch.nonzero((flows[torch.as_tensor(samples)] != 0).any(0)).view(-1).cpu()
    got = hodge.projector_blocks(edges.view(-1, 1), dtype=torch.float64)
    diagonals = {}
    for comp in comps:
        diagonals[comp] = torch.zeros(n, dtype=torch.float64, device=flows.device)
        diagonals[comp][edges] = torch.cat(got[comp]).view(-1).to(flows.device)

    def project(q: Tensor) -> dict[str, Tensor]:  # P~_k q = W^1/2 P_k W^-1/2 q
        parts = hodge.decompose(q if root is None else q / root)
        return {k: getattr(parts, k) * (1.0 if root is None else root) for k in comps}

    size = max(1, max_elements // (n * _FREE_ARRAYS))
    for start in range(0, samples.size, size):
        chunk = samples[start : start + size]
        xs = flows[torch.as_tensor(chunk, device=flows.device)].to(torch.float64)
        hist: list[Tensor] | None = [] if pgd[-1] else None
        yield chunk, _matrix_free_chunk(xs, project, diagonals, *pgd[:-1], hist), None, hist


def optimize(
    flows: Tensor,
    hodge: HodgeDecomposition,
    budget: float,
    objective: tuple[tuple[str, ...], tuple[str, ...], Mapping[str, float]],
    num_steps: int = 500,
    lr: float | None = None,
    tol: float = 1e-6,
    max_block_elements: int = 2**24,
    history: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The drop probabilities of checked flows ``[S, N]`` (``objective = (perturb, preserve,
    alpha)``), and with ``history`` the objective ``float64 [T + 1, S]`` after every step."""
    flows = flows.detach()
    num_samples, device = flows.shape[0], flows.device
    out = torch.zeros_like(flows)
    root = None
    if hodge.complex.metric != "unweighted":
        # in the metric: ||P_k x||_W = ||P~_k W^1/2 x|| with the symmetric projector blocks
        # P~_k of projector_blocks (docs/weights.md); the support and p are the same
        root = torch.from_numpy(np.sqrt(hodge.complex.hodge_star(hodge.rank))).to(device)
        flows = flows.to(torch.float64) * root
    hist = None
    if history:
        hist = torch.zeros(num_steps + 1, num_samples, dtype=torch.float64, device=device)
    rows, cols = torch.nonzero(flows, as_tuple=True)  # support entries, row-major
    sizes = torch.bincount(rows, minlength=num_samples).cpu().numpy()
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    comps = (*objective[0], *objective[1])
    steps_run = 0
    # supports above _MATRIX_FREE_MIN entries: no [n, n] blocks (docs/design.md §7.7)
    free = sizes > _MATRIX_FREE_MIN if budget > 0 else np.zeros(num_samples, dtype=bool)
    chunks = _chunks(np.where(free, 0, sizes), max_block_elements, _CHUNK_GROWTH)
    chunks = chunks if budget > 0 else []
    pgd = (budget, objective, (num_steps, lr, tol), history)
    parts = itertools.chain(
        _block_chunks(flows, hodge, chunks, comps, (cols, sizes, ptr), pgd),
        _free_chunks(flows, hodge, root, np.flatnonzero(free), comps, max_block_elements, pgd),
    )
    for chunk, p, where, chunk_hist in parts:
        chunk_t = torch.as_tensor(chunk, device=device)
        if where is None:  # matrix free: p [B, N], zero off the supports
            out[chunk_t] = p.to(out.dtype)
        else:
            idx, valid = where
            out[chunk_t[:, None].expand_as(idx)[valid], idx[valid]] = p[valid].to(out.dtype)
        if hist is not None and chunk_hist is not None:
            h = torch.stack(chunk_hist)  # [T_chunk + 1, B]
            hist[: h.shape[0], chunk_t] = h
            hist[h.shape[0] :, chunk_t] = h[-1]
            steps_run = max(steps_run, h.shape[0] - 1)
    return out, (None if hist is None else hist[: steps_run + 1])
