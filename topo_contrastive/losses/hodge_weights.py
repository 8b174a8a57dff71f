"""Hodge-aware weights of negative samples (paper eqs. 7-8, docs/design.md §2.4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from topo_contrastive.utils.checks import check_finite, check_int, check_real

__all__ = [
    "energy_fractions",
    "hodge_cosines",
    "hodge_energy_weights",
    "hodge_negative_weights",
    "weights_from_cosines",
]

_COMPONENTS = ("gradient", "curl", "harmonic")


def _check_gamma(gamma: Sequence[float]) -> tuple[float, float, float]:
    """Validate ``gamma = (gamma_G, gamma_C, gamma_H)``: three finite non-negative numbers."""
    if isinstance(gamma, Tensor):
        gamma = gamma.detach().cpu().reshape(-1).tolist()
    if isinstance(gamma, (str, bytes)) or not isinstance(gamma, Sequence):
        raise TypeError(
            "`gamma` must be a sequence of three numbers (gradient, curl, harmonic), "
            f"got {type(gamma).__name__}"
        )
    if len(gamma) != 3:
        raise ValueError(
            "`gamma` must have three entries (gradient, curl, harmonic), "
            f"got {len(gamma)}: {tuple(gamma)!r}"
        )
    out = []
    for name, g in zip(_COMPONENTS, gamma, strict=True):
        g = check_real(g, f"gamma` entry for `{name}")
        if g < 0:
            raise ValueError(
                f"`gamma` entries must be finite and >= 0 (paper eq. 7), got {g} for {name}"
            )
        out.append(g)
    return out[0], out[1], out[2]


def _check_eps(eps: float) -> float:
    eps = check_real(eps, "eps")
    if not (0.0 <= eps < 1.0):
        raise ValueError(f"`eps` must be in [0, 1), got {eps}")
    return eps


def _stack_parts(parts: Sequence[Tensor] | Tensor, name: str) -> Tensor:
    """Validate Hodge parts and stack them to ``[3, B, N1]``."""
    if isinstance(parts, Tensor):
        if parts.dim() != 3 or parts.shape[0] != 3:
            raise ValueError(
                f"`{name}` given as a tensor must have shape [3, B, N1] (gradient, curl, "
                f"harmonic), got shape {tuple(parts.shape)}"
            )
        stacked = parts
    else:
        if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence):
            raise TypeError(
                f"`{name}` must be a sequence of three tensors (gradient, curl, harmonic) or a "
                f"[3, B, N1] tensor, got {type(parts).__name__}"
            )
        if len(parts) != 3:
            raise ValueError(
                f"`{name}` must hold three tensors (gradient, curl, harmonic), got {len(parts)}"
            )
        for comp, p in zip(_COMPONENTS, parts, strict=True):
            if not isinstance(p, Tensor):
                raise TypeError(f"`{name}` {comp} part must be a tensor, got {type(p).__name__}")
            if p.dim() != 2:
                raise ValueError(
                    f"`{name}` {comp} part must have shape [B, N1], got shape {tuple(p.shape)}"
                )
        shapes = [tuple(p.shape) for p in parts]
        if len(set(shapes)) != 1:
            raise ValueError(f"`{name}` parts must share one shape [B, N1], got shapes {shapes}")
        devices = {p.device for p in parts}
        if len(devices) != 1:
            got = sorted(map(str, devices))
            raise ValueError(f"`{name}` parts must be on one device, got {got}")
        dtype = parts[0].dtype
        for p in parts:
            dtype = torch.promote_types(dtype, p.dtype)
        stacked = torch.stack([p.to(dtype) for p in parts])  # [3, B, N1]
    if not stacked.is_floating_point():
        raise TypeError(f"`{name}` must be floating point, got dtype {stacked.dtype}")
    if stacked.shape[1] == 0:
        raise ValueError(f"`{name}` holds no samples (B = 0)")
    if not stacked.is_meta and not bool(torch.isfinite(stacked).all()):
        raise ValueError(f"`{name}` must be finite, got NaN or inf entries")
    return stacked


def _negatives(anchor_offset: int | None, B: int, M: int) -> tuple[int | None, int]:
    """Check ``anchor_offset`` against ``B`` anchors and a pool of ``M`` samples and return
    it with the number of negatives per anchor (``M``, less the anchor's own column)."""
    if anchor_offset is not None:
        anchor_offset = check_int(anchor_offset, "anchor_offset")
        if anchor_offset < 0 or anchor_offset + B > M:
            raise ValueError(
                f"`anchor_offset` must satisfy 0 <= anchor_offset and anchor_offset + B <= M "
                f"(B = {B}, M = {M}), got {anchor_offset}"
            )
    n_neg = M - (0 if anchor_offset is None else 1)
    if n_neg < 1:
        raise ValueError(
            f"each anchor needs at least one negative, but the pool has M = {M} sample(s) "
            "including the anchor itself; use a batch of at least 2 samples"
        )
    return anchor_offset, n_neg


def _unit_components(parts: Tensor, eps: float) -> Tensor:
    """Normalise each component to unit norm; components that count as zero become 0.

    A component counts as zero when ``||P_k x|| <= eps * ||x||`` with
    ``||x||^2 = sum_k ||P_k x||^2`` (relative to the flow, so independent of its scale).
    """
    norms = parts.norm(dim=-1)  # [3, B]
    total = norms.square().sum(dim=0).sqrt()  # [B]
    zero = norms <= eps * total  # [3, B]; also true for an all-zero flow
    safe = torch.where(zero, torch.ones_like(norms), norms)
    unit = parts / safe.unsqueeze(-1)  # [3, B, N1]
    return unit.masked_fill(zero.unsqueeze(-1), 0.0)


def hodge_negative_weights(
    parts: Sequence[Tensor] | Tensor,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    eps: float = 1e-6,
    *,
    candidates: Sequence[Tensor] | Tensor | None = None,
    anchor_offset: int | None = 0,
) -> Tensor:
    r"""Hodge-aware weights of the negative samples of each anchor (paper eqs. 7-8).

    For anchor :math:`\mathbf{x}_i` and candidate negative :math:`\mathbf{x}_m` (original,
    un-augmented edge flows) the spectral dissimilarity is

    .. math::
        \mathcal{S}(\mathbf{x}_i, \mathbf{x}_m) = \sum_{k \in \{G, C, H\}} \gamma_k\,
        \mathrm{CD}(\mathbf{P}_k \mathbf{x}_i, \mathbf{P}_k \mathbf{x}_m), \qquad
        \mathrm{CD}(\mathbf{a}, \mathbf{b}) = 1 - \frac{\mathbf{a}^\top \mathbf{b}}
        {\|\mathbf{a}\|_2 \|\mathbf{b}\|_2},

    with :math:`\mathbf{P}_k` the orthogonal projector onto the gradient, curl or harmonic space
    (cosines of :math:`\mathbf{P}_k \mathbf{x}` equal those of :math:`\mathbf{U}_k^\top
    \mathbf{x}`, so no eigenbasis is needed). The weights are normalised over each anchor's
    :math:`n` negatives to **mean one** (docs/design.md §2.4; the paper's eq. 8 normalises to sum
    one, which differs by the constant factor :math:`n`):

    .. math::
        w(\mathbf{x}_i, \mathbf{x}_m) = n\,\frac{\mathcal{S}(\mathbf{x}_i, \mathbf{x}_m)}
        {\sum_{m' \ne i} \mathcal{S}(\mathbf{x}_i, \mathbf{x}_{m'})}.

    Where the paper is silent (docs/design.md §7.6): a component with
    :math:`\|\mathbf{P}_k\mathbf{x}\| \le \text{eps}\cdot\|\mathbf{x}\|` counts as zero
    (:math:`\mathrm{CD} = 1`); an anchor whose dissimilarities are all about zero gets
    uniform weights 1; the anchor's own column is 0. Never NaN, never negative.

    Args:
        parts (Sequence[Tensor] or Tensor): Hodge parts ``(gradient, curl, harmonic)`` of the
            anchors' original flows, :math:`\mathbf{P}_k\mathbf{x}` (e.g. a ``HodgeParts``
            named tuple), each ``[B, N1]``; or one ``[3, B, N1]`` tensor (``[B, N_k]`` for
            signals of rank k).
        gamma (Sequence[float], optional): :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0`.
            All zero gives uniform weights. (default: ``(1.0, 1.0, 1.0)``)
        eps (float, optional): relative threshold in ``[0, 1)`` below which a component counts
            as zero and below which an anchor's dissimilarities count as all zero.
            (default: ``1e-6``)
        candidates (Sequence[Tensor] or Tensor, optional): Hodge parts of the pool of ``M``
            candidate negatives, same layout as ``parts`` with the same ``N1`` (e.g. the parts
            gathered from all ranks). ``None`` uses ``parts`` itself (``M = B``).
            (default: ``None``)
        anchor_offset (int, optional): column of anchor 0's own sample in the pool; anchor
            ``i``'s own column is ``anchor_offset + i``. ``None`` when the anchors are not in
            the pool (then all ``M`` candidates are negatives). Must be 0 when ``candidates``
            is ``None``. (default: ``0``)

    Returns:
        Tensor: weights, zero on self entries, mean one over each row's negatives.

    Shapes:
        - **parts:** three ``[B, N1]`` tensors or ``[3, B, N1]``
        - **candidates:** three ``[M, N1]`` tensors or ``[3, M, N1]``
        - **output:** ``[B, M]`` (``[B, B]`` without ``candidates``), dtype and device of
          ``parts``

    Raises:
        TypeError: if ``parts``/``candidates`` are not tensors of floating dtype, or ``gamma``
            / ``eps`` are not numbers.
        ValueError: if ``parts``/``candidates`` hold NaN or inf entries, the shapes are wrong,
            ``gamma`` is not three finite non-negative
            numbers, ``eps`` is outside ``[0, 1)``, ``anchor_offset`` does not fit the pool,
            or an anchor has no negative (e.g. a batch of one sample).
    """
    gamma_t = _check_gamma(gamma)
    eps = _check_eps(eps)
    anchors = _stack_parts(parts, "parts")  # [3, B, N1]
    B, N1 = anchors.shape[1], anchors.shape[2]
    if candidates is None:
        if anchor_offset != 0:
            raise ValueError(
                f"`anchor_offset` must be 0 when `candidates` is None, got {anchor_offset!r}"
            )
        pool = anchors
    else:
        pool = _stack_parts(candidates, "candidates")
        if pool.shape[2] != N1:
            raise ValueError(
                f"`candidates` must have N1 = {N1} edges like `parts`, got {pool.shape[2]}"
            )
        pool = pool.to(device=anchors.device, dtype=anchors.dtype)
    anchor_offset, n_neg = _negatives(anchor_offset, B, pool.shape[1])

    unit_a = _unit_components(anchors, eps)  # [3, B, N1]
    unit_c = unit_a if candidates is None else _unit_components(pool, eps)  # [3, M, N1]
    cos = torch.bmm(unit_a, unit_c.transpose(1, 2)).clamp(-1.0, 1.0)  # [3, B, M]
    return _weights(cos, gamma_t, eps, anchor_offset, n_neg)


def _weights(
    cos: Tensor, gamma_t: Sequence[float], eps: float, anchor_offset: int | None, n_neg: int
) -> Tensor:
    """Eqs. 7-8 from the cosines ``[3, B, M]`` of the components (checked by the callers)."""
    B, M = cos.shape[1], cos.shape[2]
    g = torch.tensor(gamma_t, dtype=cos.dtype, device=cos.device)
    dissim = (g.view(3, 1, 1) * (1.0 - cos)).sum(dim=0)  # S, [B, M]

    is_neg = torch.ones(B, M, dtype=torch.bool, device=cos.device)
    if anchor_offset is not None:
        rows = torch.arange(B, device=cos.device)
        is_neg[rows, rows + anchor_offset] = False
    return _normalise(dissim, is_neg, n_neg, eps, gamma_t)


def weights_from_cosines(
    cosines: Tensor,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    eps: float = 1e-6,
    *,
    anchor_offset: int | None = 0,
) -> Tensor:
    r"""The weights of :func:`hodge_negative_weights` (paper eqs. 7-8) from the cosines of
    the samples' Hodge components, e.g. a batch's rows and columns of the
    :func:`hodge_cosines` of a whole dataset (computed once, no parts per batch):

    .. math::
        w_{im} = n\,\frac{\sum_k \gamma_k (1 - c^{(k)}_{im})}
        {\sum_{m' \ne i} \sum_k \gamma_k (1 - c^{(k)}_{im'})}.

    Args:
        cosines (Tensor): :math:`c^{(k)}_{im}` of the gradient, curl and harmonic
            components, in ``[-1, 1]`` (0 where a component counts as zero, as
            :func:`hodge_cosines` gives them).
        gamma (Sequence[float], optional): :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0`.
            (default: ``(1.0, 1.0, 1.0)``)
        eps (float, optional): the threshold in ``[0, 1)`` below which an anchor's
            dissimilarities count as all zero (uniform weights). (default: ``1e-6``)
        anchor_offset (int, optional): column of anchor 0's own sample; ``None`` when the
            anchors are not among the columns. (default: ``0``)

    Returns:
        Tensor: ``[B, M]`` weights in the dtype and on the device of ``cosines``, zero on
        self entries, mean one over each row's negatives.

    Shapes:
        - **cosines:** ``[3, B, M]``
        - **output:** ``[B, M]``

    Raises:
        TypeError: ``cosines`` not a floating tensor.
        ValueError: another shape, NaN or entries outside ``[-1, 1]``, no anchor
            (``B = 0``), no negative per anchor, an ``anchor_offset`` that does not fit;
            ``gamma`` / ``eps`` as :func:`hodge_negative_weights`.
    """
    gamma_t = _check_gamma(gamma)
    eps = _check_eps(eps)
    if not isinstance(cosines, Tensor) or not cosines.is_floating_point():
        got = cosines.dtype if isinstance(cosines, Tensor) else type(cosines).__name__
        raise TypeError(f"`cosines` must be a floating tensor [3, B, M], got {got}")
    if cosines.dim() != 3 or cosines.shape[0] != 3:
        raise ValueError(f"`cosines` must have shape [3, B, M], got {tuple(cosines.shape)}")
    if not bool(((cosines >= -1.0) & (cosines <= 1.0)).all()):  # also NaN
        raise ValueError("`cosines` must lie in [-1, 1] (and not be NaN)")
    B, M = int(cosines.shape[1]), int(cosines.shape[2])
    if B == 0:
        raise ValueError("`cosines` hold no anchors (B = 0)")
    anchor_offset, n_neg = _negatives(anchor_offset, B, M)
    return _weights(cosines, gamma_t, eps, anchor_offset, n_neg)


#: Bytes of the Hodge parts of one chunk of flows in :func:`hodge_cosines` (512 MiB).
COSINE_CHUNK_BYTES = 2**29


def hodge_cosines(
    hodge: Callable[[Tensor], Sequence[Tensor]],
    flows: Tensor,
    eps: float = 1e-6,
    chunk_size: int | None = None,
) -> Tensor:
    r"""Cosines of the gradient, curl and harmonic parts of every pair of ``S`` flows on one
    complex, without holding the parts of more than ``chunk_size`` flows at a time.

    The projectors :math:`\mathbf{P}_k` onto the three spaces are orthogonal and symmetric,
    so :math:`(\mathbf{P}_k\mathbf{x}_i)^\top \mathbf{P}_k\mathbf{x}_j =
    \mathbf{x}_i^\top \mathbf{P}_k\mathbf{x}_j`: the Gram matrices of the parts are the
    flows against the parts of a chunk of flows, accumulated chunk by chunk (float64,
    symmetrised), and

    .. math::
        c^{(k)}_{ij} = \frac{\mathbf{x}_i^\top \mathbf{P}_k\mathbf{x}_j}
        {\lVert\mathbf{P}_k\mathbf{x}_i\rVert\,\lVert\mathbf{P}_k\mathbf{x}_j\rVert},

    0 where a component counts as zero (:math:`\lVert\mathbf{P}_k\mathbf{x}\rVert \le
    \text{eps}\cdot\lVert\mathbf{x}\rVert`), the conventions of
    :func:`hodge_negative_weights`: :func:`weights_from_cosines` of a batch's rows and
    columns gives its weights (equal up to rounding; with an iterative backend the parts
    are the solver's, so the identity holds to its tolerance). Memory: ``[3, S, S]`` and
    one chunk's parts, never ``[S, N1, 3]``.

    Args:
        hodge (callable): the decomposition of the complex, ``hodge(x) -> (gradient, curl,
            harmonic)`` for ``x`` ``[c, N1]`` (a
            :class:`~topo_contrastive.hodge.HodgeDecomposition`).
        flows (Tensor): the flows (signals of the decomposition's rank).
        eps (float, optional): the relative zero threshold in ``[0, 1)``.
            (default: ``1e-6``)
        chunk_size (int, optional): flows whose parts are held at once (default ``None``:
            as many as fit :data:`COSINE_CHUNK_BYTES`).

    Returns:
        Tensor: the cosines, float64, on the device of ``flows``.

    Shapes:
        - **flows:** ``[S, N1]``
        - **output:** ``[3, S, S]``

    Raises:
        TypeError: ``flows`` not a floating tensor; ``chunk_size`` not an int.
        ValueError: ``flows`` not two-dimensional or with NaN/inf; ``chunk_size < 1``;
            ``eps`` outside ``[0, 1)``.
    """
    eps = _check_eps(eps)
    if not isinstance(flows, Tensor) or not flows.is_floating_point():
        got = flows.dtype if isinstance(flows, Tensor) else type(flows).__name__
        raise TypeError(f"`flows` must be a floating tensor [S, N1], got {got}")
    if flows.dim() != 2:
        raise ValueError(f"`flows` must have shape [S, N1], got {tuple(flows.shape)}")
    check_finite(flows, "flows")
    S, n1 = int(flows.shape[0]), int(flows.shape[1])
    if chunk_size is None:
        chunk_size = max(1, COSINE_CHUNK_BYTES // max(1, 24 * n1))
    chunk_size = check_int(chunk_size, "chunk_size", 1)
    rows = max(1, COSINE_CHUNK_BYTES // max(1, 32 * n1))  # flows read as float64 at once
    gram = torch.zeros(3, S, S, dtype=torch.float64, device=flows.device)
    for lo in range(0, S, chunk_size):
        hi = min(lo + chunk_size, S)
        parts = torch.stack(list(hodge(flows[lo:hi].double())))  # [3, c, N1]
        for r0 in range(0, S, rows):
            r1 = min(r0 + rows, S)
            x = flows[r0:r1].double()  # [r, N1]
            gram[:, r0:r1, lo:hi] = torch.matmul(x, parts.transpose(1, 2))  # [3, r, c]
        del parts
    gram = (gram + gram.transpose(1, 2)) / 2
    energy = gram.diagonal(dim1=1, dim2=2).clamp_min(0.0)  # [3, S]: ||P_k x_i||^2
    norms = energy.sqrt()
    zero = norms <= eps * energy.sum(dim=0).sqrt()  # [3, S]; also an all-zero flow
    safe = torch.where(zero, torch.ones_like(norms), norms)
    cos = gram / (safe.unsqueeze(2) * safe.unsqueeze(1))
    cos = cos.masked_fill(zero.unsqueeze(2) | zero.unsqueeze(1), 0.0)
    return cos.clamp_(-1.0, 1.0)


def _normalise(
    dissim: Tensor, is_neg: Tensor, n_neg: int, eps: float, gamma_t: Sequence[float]
) -> Tensor:
    """Weights of mean one over each row's negatives (uniform where all are ~zero)."""
    dissim = dissim.masked_fill(~is_neg, 0.0)
    row_sum = dissim.sum(dim=1, keepdim=True)  # [B, 1]
    degenerate = row_sum <= eps * n_neg * sum(gamma_t)  # [B, 1]
    safe_sum = torch.where(degenerate, torch.ones_like(row_sum), row_sum)
    weights = torch.where(degenerate, torch.ones_like(dissim), dissim * (n_neg / safe_sum))
    return weights.masked_fill(~is_neg, 0.0)


def energy_fractions(parts: Tensor, batch: Tensor, num_graphs: int | None = None) -> Tensor:
    r"""Fractions of each sample's energy in its gradient, curl and harmonic parts,
    :math:`f_k = \lVert\mathbf{P}_k\mathbf{x}\rVert^2 / \lVert\mathbf{x}\rVert^2`
    (zero for an all-zero flow): basis-free, so comparable across complexes.

    Args:
        parts: the Hodge parts of the flows, ``[sum N1, 3]`` (columns gradient, curl,
            harmonic: the ``hodge_parts`` of a batch of
            :class:`~topo_contrastive.data.ComplexData`).
        batch: the sample of every row, ``int64 [sum N1]`` (``data.batch_1``).
        num_graphs: the number of samples (default ``batch.max() + 1``).

    Returns:
        ``[B, 3]`` in ``parts``' dtype; each row sums to one (or is zero).

    Raises:
        ValueError: ``parts`` not ``[rows, 3]``, ``batch`` not ``[rows]``, or NaN/inf.
    """
    if not isinstance(parts, Tensor) or parts.dim() != 2 or parts.shape[1] != 3:
        raise ValueError(
            "`hodge_parts` with a batch vector must be [sum N1, 3] (gradient, curl, "
            f"harmonic columns), got {tuple(parts.shape) if isinstance(parts, Tensor) else parts}"
        )
    if not isinstance(batch, Tensor) or batch.dim() != 1 or batch.shape[0] != parts.shape[0]:
        raise ValueError(
            f"`batch` must be a vector [{parts.shape[0]}] (the sample of every row of "
            f"`hodge_parts`), got {tuple(batch.shape) if isinstance(batch, Tensor) else batch}"
        )
    if not bool(torch.isfinite(parts).all()):
        raise ValueError("`hodge_parts` must be finite, got NaN or inf entries")
    num = int(batch.max()) + 1 if num_graphs is None else int(num_graphs)
    energy = parts.new_zeros(num, 3).index_add_(0, batch.long(), parts.square())  # [B, 3]
    total = energy.sum(dim=1, keepdim=True)
    return torch.where(total > 0, energy / total.clamp_min(torch.finfo(parts.dtype).tiny), 0.0)


def hodge_energy_weights(
    fractions: Tensor,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    eps: float = 1e-6,
    *,
    candidates: Tensor | None = None,
    anchor_offset: int | None = 0,
) -> Tensor:
    r"""Hodge-aware weights of the negatives that compare samples on different complexes:
    the paper's eqs. 7-8 with the cosine distance of the parts replaced by the distance of
    their energy fractions :math:`f_k` (:func:`energy_fractions`),

    .. math::
        \mathcal{S}_E(\mathbf{x}_i, \mathbf{x}_m) = \sum_{k \in \{G, C, H\}} \gamma_k\,
        \lvert f_k(\mathbf{x}_i) - f_k(\mathbf{x}_m) \rvert,

    normalised over each anchor's negatives to mean one, with the conventions of
    :func:`hodge_negative_weights` (uniform weights where an anchor's dissimilarities are
    all about zero; the self entry is 0). The cosines of :math:`\mathbf{P}_k\mathbf{x}`
    need both flows on one complex (they compare edge by edge); the energy fractions do
    not depend on a basis, an edge order or an orientation, so they compare flows on any
    complexes. On one shared complex :class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE`
    keeps the paper's weights (its ``similarity="auto"``).

    Args:
        fractions: ``[B, 3]`` energy fractions of the anchors.
        gamma: :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0` (default ``(1, 1, 1)``).
        eps: zero threshold in ``[0, 1)`` of the uniform fallback (default ``1e-6``).
        candidates: ``[M, 3]`` fractions of the pool of negatives (default: ``fractions``).
        anchor_offset: column of anchor 0's own sample in the pool (``None``: not in it).

    Returns:
        ``[B, M]`` weights, zero on self entries, mean one over each row's negatives.

    Raises:
        ValueError: shapes other than ``[B, 3]`` / ``[M, 3]``, no negative, a bad
            ``anchor_offset``; ``gamma`` / ``eps`` as :func:`hodge_negative_weights`.
    """
    gamma_t = _check_gamma(gamma)
    eps = _check_eps(eps)
    if not isinstance(fractions, Tensor) or fractions.dim() != 2 or fractions.shape[1] != 3:
        got = getattr(fractions, "shape", fractions)
        raise ValueError(f"`fractions` must be [B, 3], got {got}")
    pool = fractions if candidates is None else candidates.to(fractions)
    if pool.dim() != 2 or pool.shape[1] != 3:
        raise ValueError(f"`candidates` must be [M, 3], got {tuple(pool.shape)}")
    B, M = fractions.shape[0], pool.shape[0]
    anchor_offset, n_neg = _negatives(anchor_offset, B, M)
    g = torch.tensor(gamma_t, dtype=fractions.dtype, device=fractions.device)
    dissim = ((fractions[:, None, :] - pool[None, :, :]).abs() * g).sum(-1)  # [B, M]
    is_neg = torch.ones(B, M, dtype=torch.bool, device=fractions.device)
    if anchor_offset is not None:
        rows = torch.arange(B, device=fractions.device)
        is_neg[rows, rows + anchor_offset] = False
    return _normalise(dissim, is_neg, n_neg, eps, gamma_t)
