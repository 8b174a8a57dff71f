r"""The expected Hodge distortion of a drop mask and the objective of the drop
probabilities, in closed form with their gradients (paper §4.1, eq. 9; docs/design.md
§2.2-2.3).

:func:`expected_hodge_distortion` is :math:`\mathcal{L}_k(\mathbf{p})`, its gradient
:func:`expected_hodge_distortion_grad`, and :func:`hodge_mask_objective` the weighted sum
:math:`f(\mathbf{p}) = \sum_k c_k \mathcal{L}_k(\mathbf{p})` with
:math:`c_k = s_k\alpha_k / \|\mathbf{P}_k\mathbf{x}\|_2^2` (:func:`objective_weights`);
the problem they define is stated in :mod:`topo_contrastive.transforms.spectral_mask_optimizer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from topo_contrastive.transforms._mask_options import check_objective


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


def objective_weights(
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
    coef = objective_weights(x, blocks, perturb, preserve, weights)
    out = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for comp, c in coef.items():
        out = out + c * expected_hodge_distortion(x, p, blocks[comp])
    return out
