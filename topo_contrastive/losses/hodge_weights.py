"""Hodge-aware weights of the negatives (paper eqs. 7-8, docs/design.md §2.4, §6.3, §7.6)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from topo_contrastive._utils import checks
from topo_contrastive._utils.checks import check_int, check_real
from topo_contrastive.losses._nt_xent import check_finite, eager

_COMPONENTS = ("gradient", "curl", "harmonic")
#: Bytes of the Hodge parts of one chunk of flows in :func:`hodge_cosines` (512 MiB).
COSINE_CHUNK_BYTES = 2**29


def check_gamma(gamma: Sequence[float]) -> tuple[float, float, float]:
    """``gamma = (gamma_G, gamma_C, gamma_H)``: three finite numbers ``>= 0`` (paper eq. 7)."""
    if isinstance(gamma, Tensor):
        gamma = gamma.detach().cpu().reshape(-1).tolist()
    if isinstance(gamma, (str, bytes)) or not isinstance(gamma, Sequence):
        raise TypeError(
            "`gamma` must be a sequence of three numbers (gradient, curl, harmonic), "
            f"got {type(gamma).__name__}"
        )
    if len(gamma) != 3:
        raise ValueError(f"`gamma` must have three entries, got {len(gamma)}: {tuple(gamma)!r}")
    g, c, h = (check_real(v, f"gamma` entry for `{k}", 0.0)
               for k, v in zip(_COMPONENTS, gamma, strict=True))  # fmt: skip
    return g, c, h


def check_eps(eps: float) -> float:
    if not 0.0 <= (eps := check_real(eps, "eps")) < 1.0:
        raise ValueError(f"`eps` must be in [0, 1), got {eps}")
    return eps


def _stack_parts(parts: Sequence[Tensor] | Tensor, name: str) -> Tensor:
    """Hodge parts, three ``[B, N1]`` tensors or one ``[3, B, N1]``, checked: ``[3, B, N1]``."""
    if not isinstance(parts, Tensor):
        if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or not all(
            isinstance(p, Tensor) for p in parts
        ):
            raise TypeError(
                f"`{name}` must be a sequence of three tensors (gradient, curl, harmonic) or a "
                f"[3, B, N1] tensor, got {type(parts).__name__}"
            )
        shapes = [(tuple(p.shape), str(p.device)) for p in parts]
        if len(parts) != 3 or len(shapes[0][0]) != 2 or len(set(shapes)) != 1:
            raise ValueError(
                f"`{name}` must hold three tensors (gradient, curl, harmonic) that share one "
                f"shape [B, N1] and device, got {shapes}"
            )
        dtype = torch.promote_types(torch.promote_types(parts[0].dtype, parts[1].dtype),
                                    parts[2].dtype)  # fmt: skip
        parts = torch.stack([p.to(dtype) for p in parts])  # [3, B, N1]
    if parts.dim() != 3 or parts.shape[0] != 3:
        raise ValueError(
            f"`{name}` given as a tensor must have shape [3, B, N1] (gradient, curl, harmonic), "
            f"got shape {tuple(parts.shape)}"
        )
    if not parts.is_floating_point():
        raise TypeError(f"`{name}` must be floating point, got dtype {parts.dtype}")
    check_finite(parts, name)
    return parts


def _normalise(dissim: Tensor, gamma: Sequence[float], eps: float, offset: int | None) -> Tensor:
    """Dissimilarities ``[B, M]`` to weights of mean one over each row's negatives (uniform
    where they are all about zero); 0 in the anchor's own column ``offset + i``."""
    B, M = dissim.shape
    if offset is not None:
        offset = check_int(offset, "anchor_offset")
        if offset < 0 or offset + B > M:
            raise ValueError(
                f"`anchor_offset` must satisfy 0 <= anchor_offset and anchor_offset + B <= M "
                f"(B = {B}, M = {M}), got {offset}"
            )
    n_neg = M - (0 if offset is None else 1)
    if B == 0 or n_neg < 1:
        raise ValueError(
            "the weights need anchors, got no anchors (B = 0)" if B == 0 else
            f"each anchor needs at least one negative, but the pool has M = {M} sample(s) "
            "including the anchor itself; use a batch of at least 2 samples"
        )  # fmt: skip
    is_neg = torch.ones(B, M, dtype=torch.bool, device=dissim.device)
    if offset is not None:
        rows = torch.arange(B, device=dissim.device)
        is_neg[rows, rows + offset] = False
    dissim = dissim.masked_fill(~is_neg, 0.0)
    row_sum = dissim.sum(dim=1, keepdim=True)  # [B, 1]
    degenerate = row_sum <= eps * n_neg * sum(gamma)  # [B, 1]
    safe_sum = torch.where(degenerate, torch.ones_like(row_sum), row_sum)
    weights = torch.where(degenerate, torch.ones_like(dissim), dissim * (n_neg / safe_sum))
    return weights.masked_fill(~is_neg, 0.0)


def _from_cosines(cos: Tensor, gamma: Sequence[float], eps: float, offset: int | None) -> Tensor:
    g = torch.tensor(gamma, dtype=cos.dtype, device=cos.device)
    return _normalise((g.view(3, 1, 1) * (1.0 - cos)).sum(dim=0), gamma, eps, offset)


def _unit_components(parts: Tensor, eps: float) -> Tensor:
    """Each component at unit norm; 0 where ``||P_k x|| <= eps ||x||`` (it counts as zero)."""
    norms = parts.norm(dim=-1)  # [3, B]
    zero = norms <= eps * norms.square().sum(dim=0).sqrt()  # also an all-zero flow
    unit = parts / torch.where(zero, torch.ones_like(norms), norms).unsqueeze(-1)
    return unit.masked_fill(zero.unsqueeze(-1), 0.0)


def part_weights(
    parts: Tensor, candidates: Tensor | None, gamma: Sequence[float], eps: float, offset: int | None
) -> Tensor:
    """:func:`hodge_negative_weights` of checked parts ``[3, B, N1]`` (pool ``[3, M, N1]``)."""
    unit_a = _unit_components(parts, eps)
    unit_c = unit_a if candidates is None else _unit_components(candidates, eps)
    cos = torch.bmm(unit_a, unit_c.transpose(1, 2)).clamp(-1.0, 1.0)  # [3, B, M]
    return _from_cosines(cos, gamma, eps, offset)


def hodge_negative_weights(
    parts: Sequence[Tensor] | Tensor,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    eps: float = 1e-6,
    *,
    candidates: Sequence[Tensor] | Tensor | None = None,
    anchor_offset: int | None = 0,
) -> Tensor:
    r"""Hodge-aware weights of the negatives of each anchor (paper eqs. 7-8).

    For the original flows :math:`\mathbf{x}_i` (anchor) and :math:`\mathbf{x}_m`, with
    :math:`\mathbf{P}_k` the projector onto the gradient, curl or harmonic space,

    .. math::
        \mathcal{S}(\mathbf{x}_i, \mathbf{x}_m) = \sum_{k \in \{G, C, H\}} \gamma_k
        \Big(1 - \frac{(\mathbf{P}_k\mathbf{x}_i)^\top \mathbf{P}_k\mathbf{x}_m}
        {\|\mathbf{P}_k\mathbf{x}_i\|_2 \|\mathbf{P}_k\mathbf{x}_m\|_2}\Big), \qquad
        w_{im} = n\,\frac{\mathcal{S}(\mathbf{x}_i, \mathbf{x}_m)}
        {\sum_{m' \ne i} \mathcal{S}(\mathbf{x}_i, \mathbf{x}_{m'})},

    of **mean one** over the anchor's :math:`n` negatives (the paper's sum one times
    :math:`n`, docs/design.md §2.4). A component with :math:`\|\mathbf{P}_k\mathbf{x}\| \le
    \text{eps}\,\|\mathbf{x}\|` has cosine 0; an anchor whose dissimilarities are all about
    zero gets weights 1; the anchor's own column is 0 (docs/design.md §7.6).

    Args:
        parts (Sequence[Tensor] or Tensor): the parts :math:`\mathbf{P}_k\mathbf{x}` of the
            anchors' flows (e.g. a ``HodgeParts``), or one tensor.
        gamma (Sequence[float], optional): :math:`(\gamma_G, \gamma_C, \gamma_H) \ge 0`; all
            zero gives uniform weights. (default: ``(1.0, 1.0, 1.0)``)
        eps (float, optional): relative zero threshold in ``[0, 1)``. (default: ``1e-6``)
        candidates (Sequence[Tensor] or Tensor, optional): the parts of a pool of ``M``
            negatives (e.g. gathered from all ranks); ``None``: ``parts``. (default: ``None``)
        anchor_offset (int, optional): the pool column of anchor 0's own sample (``None``:
            the anchors are not in the pool); 0 without ``candidates``. (default: ``0``)

    Returns:
        Tensor: the weights, in the dtype and on the device of ``parts``.

    Shapes:
        - **parts:** three ``[B, N1]`` or ``[3, B, N1]`` (``N_k`` for rank-k signals)
        - **candidates:** three ``[M, N1]`` or ``[3, M, N1]``
        - **output:** ``[B, M]`` (``[B, B]`` without ``candidates``)

    Raises:
        TypeError: parts that are not floating tensors; non-numeric ``gamma`` / ``eps``.
        ValueError: NaN or inf in the parts, wrong shapes, ``gamma`` not three numbers
            ``>= 0``, ``eps`` outside ``[0, 1)``, an ``anchor_offset`` that does not fit the
            pool, an anchor without negative.
    """
    gamma, eps = check_gamma(gamma), check_eps(eps)
    anchors = _stack_parts(parts, "parts")  # [3, B, N1]
    if candidates is None:
        if anchor_offset != 0:
            raise ValueError(
                f"`anchor_offset` must be 0 when `candidates` is None, got {anchor_offset!r}"
            )
        return part_weights(anchors, None, gamma, eps, 0)
    pool = _stack_parts(candidates, "candidates")
    if pool.shape[2] != anchors.shape[2]:
        raise ValueError(
            f"`candidates` must have N1 = {anchors.shape[2]} like `parts`, got {pool.shape[2]}"
        )
    return part_weights(anchors, pool.to(anchors), gamma, eps, anchor_offset)


def weights_from_cosines(
    cosines: Tensor,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    eps: float = 1e-6,
    *,
    anchor_offset: int | None = 0,
) -> Tensor:
    r"""The weights of :func:`hodge_negative_weights` from the cosines :math:`c^{(k)}_{im}`
    of the components, e.g. a batch's rows and columns of the :func:`hodge_cosines` of a
    whole dataset (computed once, no parts per batch):

    .. math::
        w_{im} = n\,\frac{\sum_k \gamma_k (1 - c^{(k)}_{im})}
        {\sum_{m' \ne i} \sum_k \gamma_k (1 - c^{(k)}_{im'})}.

    Args:
        cosines (Tensor): the cosines in ``[-1, 1]`` (0 where a component counts as zero).
        gamma, eps, anchor_offset: as :func:`hodge_negative_weights` (``anchor_offset`` is
            the column of anchor 0's own sample).

    Returns:
        Tensor: the weights, in the dtype and on the device of ``cosines``.

    Shapes:
        - **cosines:** ``[3, B, M]`` (gradient, curl, harmonic)
        - **output:** ``[B, M]``

    Raises:
        TypeError: ``cosines`` not a floating tensor.
        ValueError: another shape, entries outside ``[-1, 1]`` or NaN, no anchor or
            negative; ``gamma``, ``eps``, ``anchor_offset`` as :func:`hodge_negative_weights`.
    """
    gamma, eps = check_gamma(gamma), check_eps(eps)
    if not isinstance(cosines, Tensor) or not cosines.is_floating_point():
        got = cosines.dtype if isinstance(cosines, Tensor) else type(cosines).__name__
        raise TypeError(f"`cosines` must be a floating tensor [3, B, M], got {got}")
    if cosines.dim() != 3 or cosines.shape[0] != 3:
        raise ValueError(f"`cosines` must have shape [3, B, M], got {tuple(cosines.shape)}")
    if not bool(((cosines >= -1.0) & (cosines <= 1.0)).all()):  # also NaN
        raise ValueError("`cosines` must lie in [-1, 1] (and not be NaN)")
    return _from_cosines(cosines, gamma, eps, anchor_offset)


def hodge_cosines(
    hodge: Callable[[Tensor], Sequence[Tensor]],
    flows: Tensor,
    eps: float = 1e-6,
    chunk_size: int | None = None,
) -> Tensor:
    r"""The cosines :math:`c^{(k)}_{ij}` of the gradient, curl and harmonic parts of every
    pair of ``S`` flows on one complex, for :func:`weights_from_cosines` (on a weighted
    complex in its metric: :math:`\mathbf{W}_1` between the parts, docs/weights.md). The
    projectors are orthogonal, so :math:`(\mathbf{P}_k\mathbf{x}_i)^\top\mathbf{P}_k\mathbf{x}_j =
    \mathbf{x}_i^\top\mathbf{P}_k\mathbf{x}_j`: the Gram matrices are accumulated from the
    parts of ``chunk_size`` flows at a time (float64, symmetrised; memory ``[3, S, S]``),

    .. math::
        c^{(k)}_{ij} = \frac{\mathbf{x}_i^\top \mathbf{P}_k\mathbf{x}_j}
        {\lVert\mathbf{P}_k\mathbf{x}_i\rVert\,\lVert\mathbf{P}_k\mathbf{x}_j\rVert},

    0 where a component counts as zero, so that a batch's rows and columns give the weights
    of :func:`hodge_negative_weights` up to rounding (to an iterative backend's tolerance).

    Args:
        hodge (callable): the decomposition, ``hodge(x) -> (gradient, curl, harmonic)`` for
            ``x`` ``[c, N1]`` (a :class:`~topo_contrastive.hodge.HodgeDecomposition`).
        flows (Tensor): the flows (signals of the decomposition's rank).
        eps (float, optional): relative zero threshold in ``[0, 1)``. (default: ``1e-6``)
        chunk_size (int, optional): flows whose parts are held at once (default ``None``:
            as many as fit :data:`COSINE_CHUNK_BYTES`).

    Returns:
        Tensor: the cosines, float64, on the device of ``flows``.

    Shapes:
        - **flows:** ``[S, N1]``; **output:** ``[3, S, S]``

    Raises:
        TypeError: ``flows`` not a floating tensor; ``chunk_size`` not an int.
        ValueError: ``flows`` not 2-D or with NaN/inf; ``chunk_size < 1``; a bad ``eps``.
    """
    eps = check_eps(eps)
    if not isinstance(flows, Tensor) or not flows.is_floating_point():
        got = flows.dtype if isinstance(flows, Tensor) else type(flows).__name__
        raise TypeError(f"`flows` must be a floating tensor [S, N1], got {got}")
    if flows.dim() != 2:
        raise ValueError(f"`flows` must have shape [S, N1], got {tuple(flows.shape)}")
    checks.check_finite(flows, "flows")
    S, n1 = int(flows.shape[0]), int(flows.shape[1])
    if chunk_size is None:
        chunk_size = max(1, COSINE_CHUNK_BYTES // max(1, 24 * n1))
    chunk_size = check_int(chunk_size, "chunk_size", 1)
    rows = max(1, COSINE_CHUNK_BYTES // max(1, 32 * n1))  # flows read as float64 at once
    gram = torch.zeros(3, S, S, dtype=torch.float64, device=flows.device)
    ops = getattr(hodge, "complex", None)
    star = None  # W_k of a weighted complex: (P_k x_i)^T W P_k x_j = (W x_i)^T P_k x_j
    if ops is not None and getattr(ops, "metric", "unweighted") != "unweighted":
        star = torch.from_numpy(ops.hodge_star(hodge.rank)).to(flows.device)
    for lo in range(0, S, chunk_size):
        hi = min(lo + chunk_size, S)
        parts = torch.stack(list(hodge(flows[lo:hi].double())))  # [3, c, N1]
        for r0 in range(0, S, rows):
            r1 = min(r0 + rows, S)
            rows_x = flows[r0:r1].double() if star is None else flows[r0:r1].double() * star
            gram[:, r0:r1, lo:hi] = torch.matmul(rows_x, parts.transpose(1, 2))
        del parts
    gram = (gram + gram.transpose(1, 2)) / 2
    energy = gram.diagonal(dim1=1, dim2=2).clamp_min(0.0)  # [3, S]: ||P_k x_i||^2
    norms = energy.sqrt()
    zero = norms <= eps * energy.sum(dim=0).sqrt()  # [3, S]; also an all-zero flow
    safe = torch.where(zero, torch.ones_like(norms), norms)
    cos = gram / (safe.unsqueeze(2) * safe.unsqueeze(1))
    cos = cos.masked_fill(zero.unsqueeze(2) | zero.unsqueeze(1), 0.0)
    return cos.clamp_(-1.0, 1.0)


_LAYOUT = (
    "`hodge_parts` must be one tensor [sum N1, 3] (columns gradient, curl, harmonic: a "
    "PyG batch's `batch.hodge_parts` from ContrastiveViews)"
)


def check_parts(parts: object) -> Tensor:
    """``hodge_parts`` in the one layout ``[sum N1, 3]``; others get the conversion."""
    if isinstance(parts, Sequence) and not isinstance(parts, (str, bytes)):
        shapes = [tuple(p.shape) if isinstance(p, Tensor) else type(p).__name__ for p in parts]
        raise TypeError(
            f"{_LAYOUT}, got a sequence of {len(parts)} parts of shapes {shapes}; convert three "
            "[B * N1, 1] parts (a HodgeParts of a PyG batch's flows) with "
            "`torch.cat(tuple(parts), dim=1)`, three [B, N1] parts with "
            "`torch.stack(tuple(parts), dim=-1).reshape(-1, 3)`"
        )
    if not isinstance(parts, Tensor):
        raise TypeError(f"{_LAYOUT}, got {type(parts).__name__}")
    if parts.dim() != 2 or parts.shape[1] != 3:
        hint = ""
        if parts.dim() == 3 and parts.shape[0] == 3:
            hint = "; convert [3, B, N1] with `parts.permute(1, 2, 0).reshape(-1, 3)`"
        elif parts.dim() == 3 and parts.shape[2] == 3:
            hint = "; convert [B, N1, 3] with `parts.reshape(-1, 3)`"
        raise ValueError(f"{_LAYOUT}, got shape {tuple(parts.shape)}{hint}")
    if not parts.is_floating_point():
        raise TypeError(f"`hodge_parts` must be floating point, got dtype {parts.dtype}")
    check_finite(parts, "hodge_parts")
    return parts


def check_batch(batch: object, rows: int, num: int | None = None) -> Tensor:
    """The batch vector ``[rows]``: integer and, given the number of samples ``num``, every
    sample in ``[0, num)`` owning rows (those value checks are skipped under compile)."""
    if not isinstance(batch, Tensor) or batch.dtype == torch.bool or batch.is_floating_point() \
            or batch.is_complex():  # fmt: skip
        got = f"dtype {batch.dtype}" if isinstance(batch, Tensor) else type(batch).__name__
        raise TypeError(
            "`batch` must be an integer tensor [sum N1] (the sample of every row of "
            f"`hodge_parts`, data.batch_1), got {got}"
        )
    if batch.dim() != 1 or int(batch.shape[0]) != rows:
        raise ValueError(
            f"`batch` must be a vector [{rows}] (the sample of every row of `hodge_parts`), "
            f"got shape {tuple(batch.shape)}"
        )
    if num is None or rows == 0 or batch.is_meta or not eager():
        return batch
    low, high = int(batch.min()), int(batch.max())
    if low < 0 or high >= num:
        raise ValueError(
            f"`batch` must number the B = {num} samples of `z1`/`z2` (values in "
            f"[0, {num - 1}]), got values in [{low}, {high}]"
        )
    empty = (torch.bincount(batch.long(), minlength=num) == 0).nonzero().view(-1)
    if empty.numel():
        raise ValueError(
            f"`batch` gives no rows of `hodge_parts` to the sample(s) {empty[:5].tolist()}"
            f"{' ...' if empty.numel() > 5 else ''} of the B = {num} samples of `z1`/`z2` "
            f"(it names {num - empty.numel()} samples): every embedding needs its flow's rows"
        )
    return batch


def fractions(parts: Tensor, batch: Tensor, num: int) -> Tensor:
    """:func:`energy_fractions` of checked inputs."""
    energy = parts.new_zeros(num, 3).index_add_(0, batch.long(), parts.square())  # [B, 3]
    total = energy.sum(dim=1, keepdim=True)
    return torch.where(total > 0, energy / total.clamp_min(torch.finfo(parts.dtype).tiny), 0.0)


def energy_fractions(parts: Tensor, batch: Tensor, num_graphs: int | None = None) -> Tensor:
    r"""Fractions of each sample's energy in its gradient, curl and harmonic parts,
    :math:`f_k = \lVert\mathbf{P}_k\mathbf{x}\rVert^2 / \lVert\mathbf{x}\rVert^2` (zero for
    an all-zero flow): basis-free, so comparable across complexes (docs/design.md §6.3).

    Args:
        parts (Tensor): the Hodge parts of the flows, columns gradient, curl, harmonic (the
            ``hodge_parts`` of a batch of :class:`~topo_contrastive.data.ComplexData`).
        batch (Tensor): the sample of every row, integer (``data.batch_1``).
        num_graphs (int, optional): the number of samples. (default: ``batch.max() + 1``)

    Returns:
        Tensor: the fractions in ``parts``' dtype, rows summing to one (or zero).

    Shapes:
        - **parts:** ``[sum N1, 3]``; **batch:** ``[sum N1]``; **output:** ``[B, 3]``

    Raises:
        TypeError: ``parts`` not a floating tensor, ``batch`` not an integer tensor.
        ValueError: ``parts`` not ``[rows, 3]`` or with NaN/inf, ``batch`` not ``[rows]``.
    """
    batch = check_batch(batch, int((parts := check_parts(parts)).shape[0]))
    return fractions(parts, batch, int(batch.max()) + 1 if num_graphs is None else num_graphs)


def energy_weights(
    fractions: Tensor,
    gamma: Sequence[float] = (1.0, 1.0, 1.0),
    eps: float = 1e-6,
    candidates: Tensor | None = None,
    offset: int | None = 0,
) -> Tensor:
    """Weights ``[B, M]`` of eqs. 7-8 with the cosine distances replaced by the distances
    ``sum_k gamma_k |f_k(x_i) - f_k(x_m)|`` of the energy fractions ``[B, 3]`` (of the pool
    ``candidates`` ``[M, 3]``, default ``fractions``): samples on different complexes."""
    pool = fractions if candidates is None else candidates
    g = torch.tensor(gamma, dtype=fractions.dtype, device=fractions.device)
    dissim = ((fractions[:, None, :] - pool[None, :, :]).abs() * g).sum(-1)  # [B, M]
    return _normalise(dissim, gamma, eps, offset)
