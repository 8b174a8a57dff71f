"""Packages a core install leaves out (the ``plot``, ``ocean-raw``, ``power`` and ``water``
extras of setup.cfg).

``import topo_contrastive`` and its core subpackages never import them; the functions that
need one call :func:`require_extra` first, so that a missing package is reported before any
work with the ``pip install`` line that adds it (docs/architecture.md, "What the wheel
ships").
"""

from __future__ import annotations

import importlib

#: module -> the extra of setup.cfg that installs it
EXTRAS = {"matplotlib": "plot", "h5py": "ocean-raw", "pandapower": "power", "wntr": "water"}


class MissingExtraError(ImportError):
    """A package of an extra (:data:`EXTRAS`) is not installed; the message names the extra."""


def require_extra(module: str, purpose: str) -> None:
    """Raise :class:`MissingExtraError` unless ``module`` (a key of :data:`EXTRAS`) imports.

    Args:
        module: a key of :data:`EXTRAS` (``"matplotlib"``, ``"h5py"``, ``"pandapower"``,
            ``"wntr"``).
        purpose: what needs it, for the message (e.g. ``"plot_complex"``).

    Raises:
        MissingExtraError: ``module`` cannot be imported; the message says which extra
            installs it (``pip install 'topo-contrastive[plot]'``).
        ValueError: ``module`` is not one of :data:`EXTRAS`.
    """
    if module not in EXTRAS:
        raise ValueError(f"`module` must be one of {', '.join(EXTRAS)}, got {module!r}")
    try:
        importlib.import_module(module)
    except ImportError as err:
        extra = EXTRAS[module]
        raise MissingExtraError(
            f"{purpose} needs {module}, which a core install leaves out: "
            f"pip install 'topo-contrastive[{extra}]' (or pip install {module})"
        ) from err
