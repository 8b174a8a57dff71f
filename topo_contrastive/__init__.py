"""topo_contrastive: Hodge-aware contrastive learning on simplicial complexes.

Implements "Hodge-Aware Contrastive Learning" (Moellers, Immer, Fortuin, Isufi,
ICASSP 2024) for the PyTorch Geometric / TopoModelX ecosystem.

The main classes are importable from here (``from topo_contrastive import SCNN,
ContrastiveViews, HodgeDebiasedInfoNCE``); each is documented under the subpackage that
holds it (``topo_contrastive.nn.SCNN``, ...). The subpackages are imported on first use,
so that ``import topo_contrastive`` (and the command line's ``--help``) loads neither PyTorch
nor NumPy until they are needed.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:  # the lazy exports below, for type checkers and IDEs
    from topo_contrastive.complex import ComplexOperators
    from topo_contrastive.data import ComplexData
    from topo_contrastive.datasets import OceanDrifters, SyntheticTrajectories
    from topo_contrastive.hodge import HodgeDecomposition, HodgeParts
    from topo_contrastive.io import load_encoder, save_encoder
    from topo_contrastive.losses import HodgeDebiasedInfoNCE, InfoNCE
    from topo_contrastive.nn import SCNN, HodgeReadout, ProjectionHead, SCNNConv
    from topo_contrastive.transforms import (
        ContrastiveViews,
        EdgeFlowMask,
        HodgeSpectralMask,
        SimplexSignalMask,
    )

__version__ = "0.1.0"

#: name -> subpackage or module that holds it (imported on first access)
_LAZY = {
    "ComplexOperators": "complex",
    "ComplexData": "data",
    "HodgeDecomposition": "hodge",
    "HodgeParts": "hodge",
    "SCNN": "nn",
    "SCNNConv": "nn",
    "HodgeReadout": "nn",
    "ProjectionHead": "nn",
    "EdgeFlowMask": "transforms",
    "SimplexSignalMask": "transforms",
    "HodgeSpectralMask": "transforms",
    "ContrastiveViews": "transforms",
    "InfoNCE": "losses",
    "HodgeDebiasedInfoNCE": "losses",
    "SyntheticTrajectories": "datasets",
    "OceanDrifters": "datasets",
    "save_encoder": "io",
    "load_encoder": "io",
}

__all__ = [
    "ComplexOperators",
    "ComplexData",
    "HodgeDecomposition",
    "HodgeParts",
    "SCNN",
    "SCNNConv",
    "HodgeReadout",
    "ProjectionHead",
    "EdgeFlowMask",
    "SimplexSignalMask",
    "HodgeSpectralMask",
    "ContrastiveViews",
    "InfoNCE",
    "HodgeDebiasedInfoNCE",
    "SyntheticTrajectories",
    "OceanDrifters",
    "save_encoder",
    "load_encoder",
    "__version__",
]


#: the public subpackages and modules (imported on first use, as ``topo_contrastive.nn``)
_SUBPACKAGES = (
    "cli", "complex", "data", "datasets", "evaluation", "hodge", "io", "losses", "nn",
    "training", "transforms",
)  # fmt: skip


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBPACKAGES:  # ``topo_contrastive.nn`` without ``import topo_contrastive.nn``
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names: ``__all__`` and the subpackages (not the module's own imports)."""
    dunders = {n for n in globals() if n.startswith("__") and n.endswith("__")}
    return sorted(set(__all__) | set(_SUBPACKAGES) | dunders)
