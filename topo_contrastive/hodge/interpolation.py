r"""Edge flows with unobserved entries filled in by flow conservation (Jia et al., KDD 2019)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
import torch
from torch import Tensor

from topo_contrastive._utils.checks import check_real
from topo_contrastive.complex import ComplexOperators


def interpolate_flows(
    complex: ComplexOperators,
    x: Tensor,
    observed: Tensor,
    smoothing: float = 0.01,
) -> Tensor:
    r"""Fill the unobserved entries of edge flows with the flow that is closest to
    conserved: the divergence-minimising interpolation of Jia, Schaub, Segarra and Benson.

    For every flow, with :math:`O` its observed and :math:`U` its unobserved edges,

    .. math::
        \mathbf{x}_U = \operatorname*{arg\,min}_{\mathbf{z}}
        \lVert \mathbf{B}_1 \mathbf{x}_O + \mathbf{B}_{1,U}\,\mathbf{z} \rVert_2^2
        + \lambda \lVert \mathbf{z} \rVert_2^2,

    i.e. :math:`(\mathbf{B}_{1,U}^\top \mathbf{B}_{1,U} + \lambda\mathbf{I})\,\mathbf{z} =
    -\mathbf{B}_{1,U}^\top \mathbf{B}_{1,O}\,\mathbf{x}_O`. With ``smoothing = 0`` (or below
    :math:`10^{-10}` times the block's mean diagonal) the limit :math:`\lambda \to 0^+` is
    taken: the minimum-norm solution where unobserved edges close a cycle. Flows that share a
    pattern of unobserved edges share one sparse factorisation; the observed entries are kept
    as given. The default is the authors' :math:`\lambda_{\text{Jia}}^2` with
    :math:`\lambda_{\text{Jia}} = 0.1` (their FlowSSL code); on road networks it correlates
    with the true flows about twice as well as the minimum-norm limit (docs/design.md §7.1).

    Source: Jia, Schaub, Segarra, Benson, "Graph-based semi-supervised & active learning for
    edge flows", KDD 2019, §3 (eq. 3, with the ridge term of their eq. 4).

    Args:
        complex: the flows' complex.
        x: edge flows ``[N1]`` or ``[B, N1]``, floating (unobserved entries: any value,
            NaN included, ignored).
        observed: ``bool`` mask of ``x``'s shape, or ``[N1]`` shared by every flow (1-D or
            2-D).
        smoothing: the ridge weight :math:`\lambda \ge 0` (default ``0.01``, the
            :math:`\lambda_{\text{Jia}} = 0.1` of Jia et al.; ``0``: the minimum-norm limit).

    Returns:
        The interpolated flows, shaped like ``x``, on its device and dtype.

    Raises:
        TypeError: ``x`` not floating, ``observed`` not boolean, ``complex`` of another type.
        ValueError: shapes that do not match the complex's :math:`N_1`, NaN/inf at an
            entry that ``observed`` marks as observed, a negative or non-finite
            ``smoothing`` (a Python or numpy number).
    """
    if not isinstance(complex, ComplexOperators):
        raise TypeError(f"`complex` must be a ComplexOperators, got {type(complex).__name__}")
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"`x` must be a floating tensor, got {type(x).__name__}")
    if not isinstance(observed, Tensor) or observed.dtype != torch.bool:
        got = getattr(observed, "dtype", type(observed).__name__)
        raise TypeError(f"`observed` must be a bool tensor, got {got}")
    n1 = complex.num_edges
    single = x.dim() == 1
    xs = x.unsqueeze(0) if single else x
    if xs.dim() != 2 or xs.shape[1] != n1:
        raise ValueError(f"`x` must be [N1] or [B, N1] with N1 = {n1}, got {tuple(x.shape)}")
    mask = observed.unsqueeze(0) if observed.dim() == 1 else observed
    if mask.dim() != 2 or mask.shape[1] != n1 or mask.shape[0] not in (1, xs.shape[0]):
        raise ValueError(
            f"`observed` must be [N1] or of x's shape {tuple(x.shape)}, got "
            f"{tuple(observed.shape)}"
        )
    smoothing = check_real(smoothing, "smoothing", minimum=0.0)
    bad = ~torch.isfinite(xs) & mask.to(xs.device)  # NaN/inf where unobserved: ignored
    if bool(bad.any()):
        flow, edge = (int(v) for v in bad.nonzero()[0])
        raise ValueError(
            f"`x` contains NaN or inf at {int(bad.sum())} entries that `observed` marks as "
            f"observed (e.g. flow {flow}, edge {edge}): mark a missing entry False in "
            "`observed` (its value is then ignored), or give a finite value"
        )
    mask = mask.expand(xs.shape[0], n1).cpu().numpy()
    values = torch.nan_to_num(xs.detach(), nan=0.0, posinf=0.0, neginf=0.0)
    values = values.cpu().double().numpy()
    b1 = complex.B1.tocsc()
    out = values.copy()
    patterns, group = np.unique(mask, axis=0, return_inverse=True)
    for g, pattern in enumerate(patterns):  # one factorisation per pattern of unobserved edges
        unobs, obs = np.flatnonzero(~pattern), np.flatnonzero(pattern)
        if unobs.size == 0:
            continue
        rows = np.flatnonzero(group.reshape(-1) == g)
        bu = b1[:, unobs]  # [N0, |U|]
        rhs = -(bu.T @ (b1[:, obs] @ values[np.ix_(rows, obs)].T))  # [|U|, flows]
        a = (bu.T @ bu).tocsc()
        lam = max(smoothing, 1e-10 * max(float(a.diagonal().mean()), 1.0))  # the 0+ limit
        solve = sla.factorized((a + lam * sp.eye(unobs.size, format="csc")).tocsc())
        out[np.ix_(rows, unobs)] = np.column_stack([solve(c) for c in rhs.T]).T
    result = torch.from_numpy(out).to(dtype=x.dtype, device=x.device)
    return result[0] if single else result
