"""The parts of a decomposed signal: :class:`HodgeParts`, in the order of :data:`COMPONENTS`."""

from __future__ import annotations

from typing import NamedTuple

import torch

#: Names of the three Hodge components, in the order used everywhere in the library.
COMPONENTS = ("gradient", "curl", "harmonic")


class HodgeParts(NamedTuple):
    r"""Gradient, curl and harmonic parts of a batch of signals (paper eq. 1).

    At rank :math:`k` (edge flows: :math:`k = 1`) the parts lie in
    :math:`\operatorname{im}\mathbf{B}_k^\top` (gradient, the *lower* part),
    :math:`\operatorname{im}\mathbf{B}_{k+1}` (curl, the *upper* part) and
    :math:`\ker\mathbf{L}_k` (harmonic, of dimension the Betti number :math:`\beta_k`).
    Each field has the layout, dtype and device of the decomposed signals (``[N1]``,
    ``[N1, 1]``, ``[B, N1]``, ``[B, N1, 1]`` or a PyG batch's ``[B * N1, 1]``); the three
    fields sum to the input and are mutually orthogonal (per sample).
    """

    gradient: torch.Tensor
    curl: torch.Tensor
    harmonic: torch.Tensor
