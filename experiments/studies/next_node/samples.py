r"""Next-node prediction samples from node paths (trajectory prediction, SCoNe's task).

Roddenberry, Glaze & Segarra, "Principled Simplicial Neural Networks for Trajectory
Prediction", ICML 2021 (SCoNe); its repository ``nglaze00/SCoNe_GCN``,
``trajectory_analysis/synthetic_data_gen.py`` (``split_paths``, ``path_dataset``). Each path
gives one sample:

1. **Truncation** (``truncate=True``, SCoNe's default): the path is cut to its first
   :math:`4 + t` nodes, :math:`t` drawn uniformly from :math:`\{2, \dots, n - 5\}` for a path of
   :math:`n` nodes (SCoNe draws with NumPy's global generator; here a seeded
   ``numpy.random.Generator``). A path of fewer than 7 nodes has no such cut and is kept
   whole (SCoNe's draw would fail there).
2. **Split**: the prefix is the cut path without its last two nodes (SCoNe's suffix of size 2,
   whose first node is the one-step target): ``prefix = p[:-2]``, ``target = p[-2]``; a
   path needs at least 4 nodes, so that the prefix takes a step (its flow is not zero).
3. **Prefix flow** :math:`\mathbf{x} \in \mathbb{R}^{N_1}`: every step of the prefix adds its
   sign to its edge (:meth:`~topo_contrastive.ComplexOperators.path_to_flow`).
4. **Candidates**: the neighbours of the prefix's last node in the complex's graph (both
   edge orientations), in increasing node order (SCoNe's ``neighborhood``: ``sorted(G[v])``).

``reverse=True`` reverses every whole path before the cut (SCoNe's reversed-path
generalisation test: ``rev_paths = [path[::-1] for path in paths]``, then the same steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from experiments._helpers import check_bool, check_seed
from topo_contrastive.complex import ComplexOperators


@dataclass(frozen=True)
class NextNodeSamples:
    """One next-node sample per path (:func:`next_node_samples`).

    Attributes:
        flows: ``float32 [M, N1]`` prefix flows.
        last_nodes: ``int64 [M]`` the prefix's last node.
        targets: ``int64 [M]`` the next node (a candidate of its sample).
        candidates: ``bool [M, N0]`` the neighbours of the last node.
        prefixes: the prefixes as ``int64`` node arrays (for the Markov baseline).
    """

    flows: torch.Tensor
    last_nodes: torch.Tensor
    targets: torch.Tensor
    candidates: torch.Tensor
    prefixes: list[np.ndarray]

    def __len__(self) -> int:
        return int(self.targets.numel())

    def subset(self, idx: Sequence[int] | np.ndarray) -> NextNodeSamples:
        """The samples ``idx`` (in that order)."""
        i = torch.as_tensor(np.asarray(idx, dtype=np.int64))
        kept = [self.prefixes[k] for k in i.tolist()]
        return NextNodeSamples(
            self.flows[i], self.last_nodes[i], self.targets[i], self.candidates[i], kept
        )


def _neighbours(ops: ComplexOperators) -> list[np.ndarray]:
    """Sorted neighbours of every node (both edge orientations)."""
    n0 = int(ops.num_nodes)
    edges = np.asarray(ops.edges, dtype=np.int64)  # [N1, 2]
    both = np.concatenate([edges, edges[:, ::-1]])
    order = np.lexsort((both[:, 1], both[:, 0]))
    both = both[order]
    ptr = np.searchsorted(both[:, 0], np.arange(n0 + 1))
    return [both[ptr[v] : ptr[v + 1], 1] for v in range(n0)]


def _walk(ops: ComplexOperators, k: int, raw: Any) -> np.ndarray:
    """Path ``k`` as ``int64`` node ids, checked: 1-D integer ids of the complex, at least 4
    nodes, every step an edge."""
    n0 = int(ops.num_nodes)
    p = np.asarray(raw.detach().cpu().numpy() if isinstance(raw, torch.Tensor) else raw)
    if p.ndim != 1:
        raise ValueError(f"path {k} must be a 1-D sequence of node ids, got shape {tuple(p.shape)}")
    if p.dtype == bool or (p.size and p.dtype.kind not in "iuf"):
        raise TypeError(f"path {k} must hold integer node ids, got dtype {p.dtype}")
    if p.dtype.kind == "f":
        bad = ~np.isfinite(p) | (np.nan_to_num(p) % 1 != 0)
        if bad.any():
            raise TypeError(f"path {k} must hold integer node ids, got {p[bad][0].item()!r} "
                            f"(position {int(np.flatnonzero(bad)[0])})")  # fmt: skip
        if np.abs(p).max() >= 2.0**62:
            raise ValueError(f"path {k} has node ids outside [0, {n0})")
    p = p.astype(np.int64)
    if p.size < 4:
        raise ValueError(
            f"path {k} has {p.size} node(s); a next-node sample needs at least 4: the "
            "prefix (all but the last two nodes) must take at least one step, so that "
            "its flow is not zero, and the next node follows it"
        )
    if p.min() < 0 or p.max() >= n0:
        raise ValueError(f"path {k} has node ids outside [0, {n0}): {p.min()}..{p.max()}")
    try:  # the whole path must be a walk (says which step is not an edge)
        ops.path_to_flow(p)
    except ValueError as err:
        raise ValueError(f"path {k} is not a walk on the complex: {err}") from err
    return p


def next_node_samples(
    ops: ComplexOperators,
    paths: Sequence[Sequence[int] | np.ndarray | torch.Tensor],
    *,
    truncate: bool = True,
    reverse: bool = False,
    seed: int = 0,
) -> NextNodeSamples:
    """Turn node paths into next-node samples (see the module docstring for the procedure).

    Args:
        ops: the complex the paths walk on.
        paths: node paths, each a walk of at least 4 nodes (consecutive nodes joined by an
            edge): the prefix ``p[:-2]`` then takes at least one step.
        truncate: cut each path at a random length first, as SCoNe does (default ``True``).
        reverse: reverse every path first (default ``False``).
        seed: seed of the truncation draws (default 0); the same seed gives the same cuts
            for the paths and their reversals.

    Returns:
        :class:`NextNodeSamples` with ``M = len(paths)`` samples.

    Raises:
        TypeError: ``ops`` is not a :class:`~topo_contrastive.ComplexOperators`; a path
            of booleans or fractional node ids; a flag that is not a bool, a seed that is not
            an int.
        ValueError: no paths; a path that is not 1-D; a seed outside ``[0, 2**31 - 1]``; a
            path of fewer than 4 nodes (its prefix would be one node, of zero flow: says
            which path and its length); a step that is not an edge of the complex (says which
            path and step); node ids outside the complex.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [2, 3], [1, 3]], [])
        >>> s = next_node_samples(ops, [[0, 1, 2, 3]], truncate=False)
        >>> s.last_nodes.tolist(), s.targets.tolist(), s.candidates[0].nonzero().ravel().tolist()
        ([1], [2], [0, 2, 3])
    """
    if not isinstance(ops, ComplexOperators):
        raise TypeError(f"`ops` must be a ComplexOperators, got {type(ops).__name__}")
    truncate, reverse = check_bool(truncate, "truncate"), check_bool(reverse, "reverse")
    seed = check_seed(seed)
    if isinstance(paths, (str, bytes)) or not hasattr(paths, "__len__"):
        raise TypeError(f"`paths` must be a sequence of node paths, got {type(paths).__name__}")
    if len(paths) == 0:
        raise ValueError("`paths` is empty: next-node samples need at least one path")
    n0 = int(ops.num_nodes)
    nbrs = _neighbours(ops)
    rng = np.random.default_rng(seed)
    flows, last, target, cands, prefixes = [], [], [], [], []
    for k, raw in enumerate(paths):
        p = _walk(ops, k, raw)
        if reverse:  # as SCoNe: the whole path reversed, then cut
            p = p[::-1].copy()
        if truncate and p.size >= 7:
            p = p[: 4 + int(rng.choice(np.arange(2, p.size - 4)))]
        prefix = p[:-2]
        flows.append(ops.path_to_flow(prefix))
        mask = torch.zeros(n0, dtype=torch.bool)
        mask[torch.from_numpy(nbrs[prefix[-1]])] = True
        last.append(int(prefix[-1]))
        target.append(int(p[-2]))
        cands.append(mask)
        prefixes.append(prefix)
    return NextNodeSamples(
        flows=torch.stack(flows).float(),  # [M, N1]
        last_nodes=torch.tensor(last, dtype=torch.int64),
        targets=torch.tensor(target, dtype=torch.int64),
        candidates=torch.stack(cands),  # [M, N0]
        prefixes=prefixes,
    )
