"""The interface between :class:`~topo_contrastive.HodgeDecomposition` and its backends.

A backend is built once for one complex, one rank :math:`k` and one tolerance, and then
answers in numpy, on signals of :math:`N_k` entries; the decomposition validates inputs,
converts tensors and restores layouts, dtypes and devices.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from topo_contrastive.complex import ComplexOperators

__all__ = ["HodgeBackend"]


class HodgeBackend(ABC):
    """A way to compute the Hodge decomposition of signals of one rank on one complex.

    Args:
        complex: the complex's operators.
        rank: rank :math:`k` of the signals (``0``, ``1`` or ``2``; validated by the caller).
        tol: the backend's tolerance (eigenvalue threshold, CG tolerance).
    """

    #: The name users pass as ``backend=`` (``"exact"``, ``"iterative"``).
    name: ClassVar[str]

    def __init__(self, complex: ComplexOperators, rank: int, tol: float) -> None:
        self.complex = complex
        self.rank = rank
        self.tol = tol

    @property
    def num_simplices(self) -> int:
        """:math:`N_k`, the length of the signals."""
        return self.complex.num_simplices(self.rank)

    @property
    @abstractmethod
    def dims(self) -> dict[str, int]:
        """Dimensions of the gradient, curl and harmonic subspaces."""

    @abstractmethod
    def basis(self, index: int) -> np.ndarray | None:
        """Orthonormal basis ``float64 [N_k, dim]`` of component number ``index`` (of
        :data:`~topo_contrastive.hodge.COMPONENTS`), ``None`` where the backend has none
        (not to be modified: callers copy)."""

    @abstractmethod
    def decompose(self, x: np.ndarray) -> list[np.ndarray]:
        """Gradient, curl and harmonic parts ``[B, N_k]`` of signals ``x [B, N_k]``
        (``float32`` or ``float64``; each part in ``float64`` or ``x``'s dtype)."""

    @abstractmethod
    def projector_blocks(self, sets: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        """``{"gradient": [...], "curl": [...], "harmonic": [...]}``: the blocks
        ``P[S, S]`` ``float64 [|S|, |S|]`` of each validated index set ``S`` of ``sets``."""
