"""Lazy exports of a subpackage: its public names imported from their modules on first use
(so that ``--help`` and ``import topo_contrastive.<sub>`` load neither torch nor
scikit-learn until a name is used)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: the package's ``__name__``.
        table: public name -> the package's module that holds it.

    Returns:
        ``(__getattr__, __dir__)``: the first imports ``package.<module>`` on first access of
        a name of ``table`` and binds the name in the package (later look-ups skip it); the
        second lists ``__all__`` and the dunders, not the package's own imports.
    """

    def __getattr__(name: str) -> Any:
        if name in table:
            value = getattr(importlib.import_module(f"{package}.{table[name]}"), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        dunders = {n for n in namespace if n.startswith("__") and n.endswith("__")}
        return sorted(set(namespace.get("__all__", ())) | dunders)

    return __getattr__, __dir__
