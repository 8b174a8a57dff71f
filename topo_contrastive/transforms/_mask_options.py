"""The options of the Hodge-aware drop probabilities, validated (private).

The budget, the components to perturb and to preserve with their weights, the flows and the
optimiser's keyword options of
:func:`~topo_contrastive.transforms.optimize_drop_probabilities`, checked once for the
optimiser, :class:`~topo_contrastive.transforms.HodgeSpectralMask` and
:class:`~topo_contrastive.transforms.ComputeDropProbabilities`, with the same messages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topo_contrastive.hodge import COMPONENTS
from topo_contrastive.utils.checks import check_int, check_real


def check_budget(budget: Any, name: str = "budget") -> float:
    """Return ``budget`` as a float in ``[0, 1]`` or raise a clear error."""
    budget = check_real(budget, name)  # a real number, not NaN or inf
    if not 0.0 <= budget <= 1.0:
        raise ValueError(f"`{name}` must lie in [0, 1], got {budget}")
    return budget


def check_budget_first(budget: Any, owner: str) -> float:
    """:func:`check_budget` for the first argument of the transforms, which took ``hodge``
    first in earlier versions: a complex or decomposition there gets a message that says
    so."""
    if type(budget).__name__ in (
        "HodgeDecomposition",
        "ComplexOperators",
        "SimplicialComplex",
        "CellComplex",
    ):
        raise TypeError(
            f"`budget` must be a float in [0, 1], got {type(budget).__name__}: budget comes "
            f"first: {owner}(budget, hodge=...)"
        )
    return check_budget(budget)


def check_components(components: Any, name: str) -> tuple[str, ...]:
    """Return ``components`` as a tuple of distinct Hodge component names."""
    if isinstance(components, str):
        components = (components,)
    if not isinstance(components, Sequence):
        raise TypeError(
            f"`{name}` must be a sequence of component names {COMPONENTS}, "
            f"got {type(components).__name__}"
        )
    out = tuple(components)
    for c in out:
        if c not in COMPONENTS:
            raise ValueError(f"`{name}` must hold names from {COMPONENTS}, got {c!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"`{name}` repeats a component: {out}")
    return out


def check_objective(
    perturb: Any, preserve: Any, alpha: Any
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, float]]:
    """Validate the objective's components and weights; ``alpha`` defaults to 1 for each."""
    perturb = check_components(perturb, "perturb")
    preserve = check_components(preserve, "preserve")
    both = set(perturb) & set(preserve)
    if both:
        raise ValueError(
            f"a component cannot be both perturbed and preserved, got {sorted(both)} in "
            "`perturb` and `preserve`"
        )
    weights = dict.fromkeys(COMPONENTS, 1.0)
    if alpha is not None:
        if not isinstance(alpha, Mapping):
            raise TypeError(
                f"`alpha` must be a mapping from component name to weight, got "
                f"{type(alpha).__name__}"
            )
        for key, value in alpha.items():
            if key not in COMPONENTS:
                raise ValueError(f"`alpha` keys must be names from {COMPONENTS}, got {key!r}")
            if isinstance(value, bool) or not isinstance(
                value, (int, float, np.integer, np.floating)
            ):
                raise TypeError(f"`alpha[{key!r}]` must be a float, got {type(value).__name__}")
            if not (math.isfinite(float(value)) and float(value) >= 0.0):
                raise ValueError(f"`alpha[{key!r}]` must be finite and >= 0, got {value}")
            weights[key] = float(value)
    return perturb, preserve, weights


def check_flows(x: Any, num_edges: int, name: str = "x", rank: int = 1) -> Tensor:
    """Check ``x`` is a finite floating tensor ``[N_k]`` or ``[S, N_k]`` (``N1`` edges for
    the default ``rank=1``, ``num_edges`` = :math:`N_k` otherwise)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    what = "edge flows" if rank == 1 else f"rank-{rank} signals"
    if not x.is_floating_point():
        raise TypeError(f"`{name}` must be a floating tensor ({what}), got dtype {x.dtype}")
    if x.dim() not in (1, 2) or x.shape[-1] != num_edges:
        simplices = ("nodes", "edges", "triangles", "tetrahedra")[rank]
        raise ValueError(
            f"`{name}` must have shape [N{rank}] or [S, N{rank}] with N{rank} = {num_edges} "
            f"(the complex's number of {simplices}), got {tuple(x.shape)}"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` contains NaN or inf values")
    return x


def check_positive(value: Any, name: str, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    return check_real(value, name, 0.0, open_low=True)


#: Keyword options of :func:`optimize_drop_probabilities` that the transforms pass on.
OPTIMIZER_OPTIONS = ("num_steps", "lr", "tol", "max_block_elements")


def check_optimizer_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Validate the optimiser's keyword options (names of :data:`OPTIMIZER_OPTIONS`)."""
    unknown = sorted(set(options) - set(OPTIMIZER_OPTIONS))
    if unknown:
        raise TypeError(
            f"unknown optimiser option(s) {unknown}; expected some of {list(OPTIMIZER_OPTIONS)}"
        )
    out = dict(options)
    if "num_steps" in out:
        out["num_steps"] = check_int(out["num_steps"], "num_steps", 1)
    if "lr" in out:
        out["lr"] = check_positive(out["lr"], "lr", allow_none=True)
    if "tol" in out:
        out["tol"] = check_positive(out["tol"], "tol")
    if "max_block_elements" in out:
        out["max_block_elements"] = check_int(out["max_block_elements"], "max_block_elements", 1)
    return out
