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

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.transforms._capped_simplex import project_capped_simplex, project_sort
from topo_contrastive.transforms._mask_objective import (
    expected_hodge_distortion,
    expected_hodge_distortion_grad,
    hodge_mask_objective,
    objective_weights,
)
from topo_contrastive.transforms._mask_options import (
    check_budget,
    check_flows,
    check_objective,
    check_positive,
)
from topo_contrastive.utils.checks import check_bool, check_int

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
    coef = objective_weights(xs, blocks, perturb, preserve, alpha)
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
        new = project_sort(p - step[:, None] * grad, cap, upper)
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

    Projected gradient descent from :math:`p_i = \varepsilon` on :math:`S`, with the
    capped-simplex projection :func:`project_capped_simplex` and (``lr=None``) an adaptive
    per-sample step that never increases the objective; it stops after ``num_steps`` or
    at a stationary point (a local minimum in general: the problem is not convex). All
    samples run in batched chunks; a converged sample is frozen, so its result does not
    depend on the others. Arithmetic in float64. Algorithm notes: docs/design.md §7.7.

    Args:
        x (Tensor): edge flows, floating.
        hodge (HodgeDecomposition): the decomposition of the flows' complex.
        budget (float): :math:`\varepsilon \in [0, 1]`, the expected fraction of the
            support that may be dropped.
        perturb (Sequence[str], optional): components to perturb.
            (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components to preserve.
            (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weights by component name
            (missing ones are 1; keys of components in neither list are ignored).
            (default: ``None``)
        num_steps (int, optional): maximum number of steps. (default: ``500``)
        lr (float, optional): a fixed step instead of the adaptive one (no monotonicity
            guarantee above :math:`1/L`). (default: ``None``)
        tol (float, optional): stop once no :math:`1/L` step moves an entry by more.
            (default: ``1e-6``)
        max_block_elements (int, optional): memory cap, in entries, of a chunk's padded
            blocks ``[B, n, n]``. (default: ``2**24``, 128 MiB in float64)
        return_history (bool, optional): also return the objective after every step.
            (default: ``False``)

    Returns:
        The drop probabilities, zero off each flow's support; with ``return_history=True``
        a pair ``(p, history)``, ``history`` float64 ``[T + 1, S]``, the objective of every
        sample at the start and after each step (repeated once a chunk stopped).

    Shapes:
        - **x**, **output**: ``[N1]`` or ``[S, N1]``, the output on ``x``'s device and dtype.

    Raises:
        TypeError: ``x`` not a floating tensor, ``hodge`` not a
            :class:`~topo_contrastive.hodge.HodgeDecomposition`, wrong argument types.
        ValueError: ``x`` of the wrong length or with NaN/inf, ``budget`` outside
            ``[0, 1]``, unknown/repeated/conflicting component names, negative weights,
            non-positive ``lr``/``tol``, ``num_steps < 1``.

    Example:
        >>> ops = ComplexOperators.from_simplices(
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
    num_steps = check_int(num_steps, "num_steps", 1)
    lr = check_positive(lr, "lr", allow_none=True)
    tol = check_positive(tol, "tol")
    max_block_elements = check_int(max_block_elements, "max_block_elements", 1)
    return_history = check_bool(return_history, "return_history")

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
