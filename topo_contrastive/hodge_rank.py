"""Deprecated: the Hodge decomposition of every rank is :mod:`topo_contrastive.hodge`.

``HodgeDecomposition(complex, rank=k)`` decomposes node, edge and triangle signals with
one class; the names this module had still resolve, with a :class:`DeprecationWarning`:
``RankHodgeDecomposition`` is :class:`~topo_contrastive.HodgeDecomposition` and
``SUPPORTED_RANKS`` is :data:`topo_contrastive.hodge.SUPPORTED_RANKS`.
"""

from __future__ import annotations

import warnings
from typing import Any

_MOVED = {"RankHodgeDecomposition": "HodgeDecomposition", "SUPPORTED_RANKS": "SUPPORTED_RANKS"}

__all__ = list(_MOVED)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import topo_contrastive.hodge as hodge

    warnings.warn(
        f"topo_contrastive.hodge_rank is deprecated: use topo_contrastive.hodge.{_MOVED[name]} "
        f"(HodgeDecomposition(complex, rank=k) handles every rank)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(hodge, _MOVED[name])
