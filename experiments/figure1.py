r"""Figure 1 of the paper: embedding distances of uniform and Hodge-aware masks.

For every flow :math:`\mathbf{x}` and many masked copies :math:`\mathbf{x}'`, the
distances :math:`\|\mathbf{U}_k^\top \mathbf{x} - \mathbf{U}_k^\top \mathbf{x}'\|_2` of the
gradient, curl and harmonic embeddings (paper §4.1), for masks drawn with optimised
probabilities (:func:`~topo_contrastive.transforms.optimize_drop_probabilities`) and with
uniform probabilities that drop the same expected number of edges of each flow:
:math:`p^{\text{unif}}_i = \sum_j p^{\text{opt}}_j / |\operatorname{supp}\mathbf{x}|` on
the support. The paper's figure shows that the optimised masks keep the harmonic
embedding closer to the anchor's.

Public names: :func:`figure1` (compute), :func:`plot_figure1` (draw),
:func:`summarize_figure1` (table rows), :func:`embedding_distances` (the distances for
given probabilities), :class:`Figure1Result`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from experiments._helpers import atomic_write, check_int, require_extra
from topo_contrastive.hodge import COMPONENTS, HodgeDecomposition
from topo_contrastive.transforms.hodge_spectral_mask import (
    check_budget,
    check_flows,
    optimize_drop_probabilities,
)

#: The two masking methods compared, in plotting order (blue, orange as in the paper).
METHODS = ("uniform", "spectral")
_COLORS = {"uniform": "tab:blue", "spectral": "tab:orange"}
_LABELS = {"uniform": "uniform edge drop", "spectral": "spectral edge drop (optimised)"}


@dataclass
class Figure1Result:
    """Distances of :func:`figure1`.

    Attributes:
        distances: ``distances[method][component]``, float64 ``[S, num_draws]``, for
            ``method`` in :data:`METHODS` and ``component`` in gradient / curl / harmonic.
        drop_prob: the optimised drop probabilities ``[S, N1]`` (float64).
        uniform_prob: the matched uniform probabilities ``[S, N1]`` (float64).
        budget: the budget :math:`\\varepsilon` used.
    """

    distances: dict[str, dict[str, np.ndarray]]
    drop_prob: Tensor
    uniform_prob: Tensor
    budget: float


def embedding_distances(
    flows: Tensor,
    hodge: HodgeDecomposition,
    drop_prob: Tensor,
    num_draws: int,
    generator: torch.Generator | None = None,
    draws_per_chunk: int = 8,
    progress: bool = False,
    desc: str = "draws",
) -> dict[str, np.ndarray]:
    r"""Distances :math:`\|\mathbf{U}_k^\top(\mathbf{x} - \mathbf{x}')\|_2` for masks
    :math:`\mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d})`,
    :math:`d_i \sim \mathrm{Ber}(p_i)`.

    Since the embedding is linear, the distance is :math:`\|\mathbf{U}_k^\top
    (\mathbf{x} \circ \mathbf{d})\|_2`; it is computed with
    :meth:`HodgeDecomposition.coordinates` (exact backend) for ``draws_per_chunk`` draws of
    all flows at a time.

    Args:
        flows (Tensor): edge flows ``[S, N1]``.
        hodge (HodgeDecomposition): exact-backend decomposition of the complex.
        drop_prob (Tensor): drop probabilities ``[S, N1]`` in :math:`[0, 1]`.
        num_draws (int): masks per flow.
        generator (torch.Generator, optional): CPU generator. (default: ``None``)
        draws_per_chunk (int, optional): draws per vectorised chunk. (default: ``8``)
        progress (bool, optional): show a tqdm bar. (default: ``False``)
        desc (str, optional): the bar's label. (default: ``"draws"``)

    Returns:
        ``{component: float64 [S, num_draws]}`` for gradient, curl and harmonic.

    Raises:
        ValueError: bad shapes, probabilities outside :math:`[0, 1]`, ``num_draws < 1``,
            or a hodge of the iterative backend.
    """
    if not isinstance(hodge, HodgeDecomposition):
        raise TypeError(f"`hodge` must be a HodgeDecomposition, got {type(hodge).__name__}")
    if hodge.backend != "exact":
        raise ValueError("embedding distances need the 'exact' backend (the eigenbases U_k)")
    flows = check_flows(flows, hodge.complex.num_edges, "flows")
    if flows.dim() != 2:
        raise ValueError(f"`flows` must have shape [S, N1], got {tuple(flows.shape)}")
    if not isinstance(drop_prob, Tensor) or drop_prob.shape != flows.shape:
        raise ValueError(f"`drop_prob` must be a tensor of shape {tuple(flows.shape)}")
    if not bool(((drop_prob >= 0) & (drop_prob <= 1)).all()):
        raise ValueError("`drop_prob` must lie in [0, 1]")
    num_draws = check_int(num_draws, "num_draws", 1)
    draws_per_chunk = check_int(draws_per_chunk, "draws_per_chunk", 1)
    x = flows.detach().cpu().double()  # [S, N1]
    p = drop_prob.detach().cpu().double()
    num_samples, n1 = x.shape
    out = {k: np.zeros((num_samples, num_draws)) for k in COMPONENTS}
    bases = {k: hodge.basis(k) for k in COMPONENTS}  # float64 [N1, dim_k]
    with tqdm(total=num_draws, desc=desc, disable=not progress, leave=False) as bar:
        for start in range(0, num_draws, draws_per_chunk):
            count = min(draws_per_chunk, num_draws - start)
            u = torch.rand(num_samples, count, n1, dtype=torch.float64, generator=generator)
            diff = (x.unsqueeze(1) * (u < p.unsqueeze(1))).reshape(-1, n1)  # x - x', [S*c, N1]
            for k in COMPONENTS:
                dist = (diff @ bases[k]).norm(dim=-1).view(num_samples, count)
                out[k][:, start : start + count] = dist.numpy()
            bar.update(count)
    return out


def figure1(
    flows: Tensor,
    hodge: HodgeDecomposition,
    budget: float = 0.3,
    num_draws: int = 20,
    seed: int = 0,
    perturb: Sequence[str] = ("gradient",),
    preserve: Sequence[str] = ("curl", "harmonic"),
    alpha: Mapping[str, float] | None = None,
    progress: bool = True,
) -> Figure1Result:
    r"""Embedding distances of uniform and optimised masks (the data of the paper's Fig. 1).

    Optimises each flow's drop probabilities (budget :math:`\varepsilon`, trajectory
    objective by default: perturb the gradient, preserve curl and harmonic embeddings),
    sets the matched uniform probabilities :math:`p^{\text{unif}}_i = \sum_j p_j /
    |\operatorname{supp}\mathbf{x}|` on each flow's support (same expected number of
    dropped edges per flow), draws ``num_draws`` masks per flow and method and returns
    the distances of :func:`embedding_distances`.

    Args:
        flows (Tensor): edge flows ``[S, N1]`` (e.g. all samples of
            :class:`~topo_contrastive.datasets.SyntheticTrajectories`).
        hodge (HodgeDecomposition): exact-backend decomposition of the complex.
        budget (float, optional): :math:`\varepsilon \in [0, 1]`. (default: ``0.3``)
        num_draws (int, optional): masks per flow and method. (default: ``20``)
        seed (int, optional): seed of the mask draws. (default: ``0``)
        perturb, preserve, alpha: the objective of
            :func:`~topo_contrastive.transforms.optimize_drop_probabilities`.
        progress (bool, optional): tqdm bars. (default: ``True``)

    Returns:
        :class:`Figure1Result`.

    Raises:
        ValueError / TypeError: as :func:`embedding_distances` and
            :func:`~topo_contrastive.transforms.optimize_drop_probabilities`.
    """
    budget = check_budget(budget)
    seed = check_int(seed, "seed", 0)
    flows = check_flows(flows, hodge.complex.num_edges, "flows").detach().cpu().double()
    if flows.dim() != 2:
        raise ValueError(f"`flows` must have shape [S, N1], got {tuple(flows.shape)}")
    p_opt = optimize_drop_probabilities(
        flows, hodge, budget, perturb=perturb, preserve=preserve, alpha=alpha
    )
    support = flows != 0
    size = support.sum(-1, keepdim=True).clamp_min(1).double()
    p_unif = support * (p_opt.sum(-1, keepdim=True) / size)  # [S, N1]
    gen = torch.Generator().manual_seed(seed)
    distances = {}
    for method, p in zip(METHODS, (p_unif, p_opt), strict=True):
        distances[method] = embedding_distances(
            flows, hodge, p, num_draws, generator=gen, progress=progress, desc=method
        )
    return Figure1Result(distances, p_opt, p_unif, budget)


def summarize_figure1(result: Figure1Result | Mapping[str, Mapping[str, np.ndarray]]) -> list[dict]:
    """Summary rows ``{method, component, mean, median, std, q10, q90}`` of the distances."""
    distances = result.distances if isinstance(result, Figure1Result) else result
    rows = []
    for component in COMPONENTS:
        for method in METHODS:
            d = np.asarray(distances[method][component], dtype=np.float64).ravel()
            rows.append(
                {
                    "method": method,
                    "component": component,
                    "mean": float(d.mean()),
                    "median": float(np.median(d)),
                    "std": float(d.std()),
                    "q10": float(np.quantile(d, 0.1)),
                    "q90": float(np.quantile(d, 0.9)),
                }
            )
    return rows


def plot_figure1(
    result: Figure1Result | Mapping[str, Mapping[str, np.ndarray]],
    path: str | os.PathLike | None = None,
    bins: int = 40,
    dpi: int = 150,
) -> Any:
    """Draw the paper's Figure 1: one histogram panel per Hodge embedding (gradient, curl,
    harmonic), uniform masks in blue and optimised masks in orange.

    Args:
        result: a :class:`Figure1Result` or its ``distances`` mapping.
        path (str, optional): write the figure there as PNG, atomically. (default: ``None``)
        bins (int, optional): histogram bins per panel (shared by both methods).
            (default: ``40``)
        dpi (int, optional): resolution of the PNG. (default: ``150``)

    Returns:
        The ``matplotlib.figure.Figure`` (made without pyplot: no window, no backend
        change).
    """
    require_extra("matplotlib", "plot_figure1")
    from matplotlib.figure import Figure

    bins = check_int(bins, "bins", 1)
    distances = result.distances if isinstance(result, Figure1Result) else result
    fig = Figure(figsize=(11, 3.2))
    axes = fig.subplots(1, 3)
    for ax, component in zip(axes, COMPONENTS, strict=True):
        values = [np.asarray(distances[m][component]).ravel() for m in METHODS]
        hi = max(float(v.max()) for v in values)
        edges = np.linspace(0.0, hi if hi > 0 else 1.0, bins + 1)
        for method, v in zip(METHODS, values, strict=True):
            ax.hist(
                v,
                bins=edges,
                density=True,
                alpha=0.55,
                color=_COLORS[method],
                label=_LABELS[method],
            )
        ax.set_title(f"{component} embedding")
        ax.set_xlabel(r"$\|\mathbf{U}_k^\top\mathbf{x} - \mathbf{U}_k^\top\mathbf{x}'\|_2$")
    axes[0].set_ylabel("density")
    axes[-1].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    if path is not None:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))
    return fig
