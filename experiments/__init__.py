"""The paper's reproduction and the studies, beside the library (as PyG's ``benchmark/``),
built on the public API of :mod:`topo_contrastive` and run from a clone
(``python -m experiments --help``; ``docs/experiments.md``): :func:`reproduce` (Table 1 and
Figures 1-2, :data:`PRESETS`), :func:`figure1`, :func:`grid_search`, :class:`RunFolder` (a
resumable run's folder), :mod:`experiments.studies` and their commands
(:mod:`experiments.cli`).
"""

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

if _typing.TYPE_CHECKING:  # the lazy exports below, for type checkers and IDEs
    from experiments.figure1 import figure1, plot_figure1
    from experiments.presets import PRESETS, Preset
    from experiments.reproduce import ReproduceResult, reproduce
    from experiments.run_folder import RunFolder
    from experiments.search import grid_search

#: how the commands of this folder are started (usage lines, the commands recorded in results)
PROG = "python -m experiments"

#: name -> its module, imported on first access (``--help`` loads neither PyTorch nor sklearn)
_LAZY = {
    "figure1": "figure1",
    "plot_figure1": "figure1",
    "PRESETS": "presets",
    "Preset": "presets",
    "ReproduceResult": "reproduce",
    "reproduce": "reproduce",
    "RunFolder": "run_folder",
    "grid_search": "search",
}

__all__ = [
    "PROG",
    "PRESETS",
    "Preset",
    "ReproduceResult",
    "RunFolder",
    "figure1",
    "grid_search",
    "plot_figure1",
    "reproduce",
]


class _Package(_types.ModuleType):
    """``reproduce`` and ``figure1`` name a function and its module: the function keeps the
    name when the import system binds the submodule to the package."""

    def __setattr__(self, name: str, value: _typing.Any) -> None:
        if name in _LAZY and name == _LAZY[name] and isinstance(value, _types.ModuleType):
            value = getattr(value, name)  # the function, not its module
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    dunders = {n for n in globals() if n.startswith("__") and n.endswith("__")}
    return sorted(set(__all__) | dunders)
