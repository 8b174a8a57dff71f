"""Shared machinery of the physical-flow datasets (private): the network as a complex, its
regions, the observed flows, the parallel sample loop and the processed file's extra keys.

:class:`~topo_contrastive.datasets.PowerGridFlows` and
:class:`~topo_contrastive.datasets.WaterNetworkFlows` build on :class:`PhysicalFlowDataset`.
Their processed file is :class:`~topo_contrastive.datasets.EdgeFlows`' (the measured flows, the
labels, the complex and its ``pos``) with one more key, ``physical``: a dict of tensors and
strings (the 2-cells as node cycles, the edge weights, the true flows, the node injections, the
losses, the observed edges, the regions, per-sample draws, the failed solves and the settings
as JSON), so that it still loads with ``weights_only=True``.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from topo_contrastive._utils.checks import check_int, check_real
from topo_contrastive.complex import ComplexOperators, short_cycles
from topo_contrastive.datasets._checks import stratified_masks
from topo_contrastive.datasets._file import content_of
from topo_contrastive.datasets.edge_flows import EdgeFlows

LIFTINGS = ("triangles", "cycles")
SPLIT_RATIO = (0.6, 0.2, 0.2)
#: redraws of one sample whose solve failed before the dataset gives up
MAX_ATTEMPTS = 20


# ---------------------------------------------------------------------------- checks
def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices`` (strings), else a ``ValueError`` naming it."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"`{name}` must be one of {', '.join(choices)}, got {value!r}")
    return value


def check_pair(value: Any, name: str, minimum: float) -> tuple[float, float]:
    """``(low, high)`` with ``minimum <= low <= high``, finite."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"`{name}` must be a pair (low, high), got {value!r}")
    low, high = (check_real(v, name, minimum) for v in value)
    if low > high:
        raise ValueError(f"`{name}` must have low <= high, got {tuple(value)}")
    return low, high


def check_common(obj: Any, num_samples: Any, seed: Any, lifting: Any, max_cycle_length: Any,
                 num_regions: Any, observed: Any, noise: Any, n_jobs: Any) -> None:  # fmt: skip
    """Check and set the options both datasets share."""
    obj.num_samples = check_int(num_samples, "num_samples", 5)
    obj.seed = check_int(seed, "seed", 0, 2**31 - 1)
    obj.lifting = check_choice(lifting, "lifting", LIFTINGS)
    obj.max_cycle_length = check_int(max_cycle_length, "max_cycle_length", 3, 64)
    obj.num_regions = check_int(num_regions, "num_regions", 2, 64)
    obj.observed = check_real(observed, "observed", 0.0, 1.0, open_low=True)
    obj.noise = check_real(noise, "noise", 0.0)
    obj.n_jobs = check_int(n_jobs, "n_jobs", -1)
    if obj.n_jobs == 0:
        raise ValueError("`n_jobs` must be a positive number of processes or -1 (all cores), got 0")


def common_name(obj: Any) -> str:
    """The part of a processed file's name that the shared options make."""
    cells = "tri" if obj.lifting == "triangles" else f"cyc{obj.max_cycle_length}"
    return (
        f"n{obj.num_samples}_seed{obj.seed}_{cells}_k{obj.num_regions}_obs{obj.observed:g}"
        f"_noise{obj.noise:g}"
    )


# ---------------------------------------------------------------------------- the complex
def merge_branches(
    tails: np.ndarray, heads: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Branches (possibly parallel, any direction) as edges oriented low -> high.

    Returns:
        ``(edges int64 [N1, 2] sorted, edge_of int64 [K], sign float64 [K])``: branch ``k``
        lies on edge ``edge_of[k]``, ``+1`` where it runs low -> high.
    """
    lo, hi = np.minimum(tails, heads), np.maximum(tails, heads)
    edges, edge_of = np.unique(np.stack([lo, hi], 1).astype(np.int64), axis=0, return_inverse=True)
    return edges, edge_of.ravel(), np.where(tails < heads, 1.0, -1.0)


def incidence(edges: np.ndarray, num_nodes: int) -> sp.csr_matrix:
    """``B1`` ``[N0, N1]`` of edges oriented ``edges[:, 0] -> edges[:, 1]``."""
    n1 = edges.shape[0]
    return sp.csr_matrix(
        (np.tile([-1.0, 1.0], n1), (edges.ravel(), np.repeat(np.arange(n1), 2))),
        shape=(num_nodes, n1),
    )


def _triangles(edges: np.ndarray, num_nodes: int) -> list[list[int]]:
    nbrs: list[set[int]] = [set() for _ in range(num_nodes)]
    for u, v in edges.tolist():
        nbrs[u].add(v)
        nbrs[v].add(u)
    return sorted([u, v, w] for u, v in edges.tolist() for w in nbrs[u] & nbrs[v] if w > v)


def _cycle_basis(edges: np.ndarray, max_length: int) -> list[list[int]]:
    """The cycles of at most ``max_length`` edges of a minimum cycle basis: the chordless
    cycles up to that length, shortest first, kept when independent of those kept before
    over GF(2) (the greedy of Horton's algorithm; independent over GF(2), so over the
    reals: ``B2`` has full column rank)."""
    column = {(int(u), int(v)): i for i, (u, v) in enumerate(edges.tolist())}
    pivots: dict[int, int] = {}
    kept = []
    for cycle in short_cycles(edges, max_length):  # sorted by length
        vec = 0
        for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):
            vec |= 1 << column[(min(a, b), max(a, b))]
        while vec:
            top = vec.bit_length() - 1
            if top not in pivots:
                pivots[top] = vec
                kept.append(cycle)
                break
            vec ^= pivots[top]
    return kept


def lift(edges: np.ndarray, num_nodes: int, lifting: str, max_length: int) -> list[list[int]]:
    """The 2-cells of a network as node cycles: its triangles (3-cliques, sorted nodes), or
    the cycles of a minimum cycle basis of at most ``max_length`` edges."""
    if lifting == "triangles":
        return _triangles(edges, num_nodes)
    return _cycle_basis(edges, max_length)


def regions(edges: np.ndarray, num_nodes: int, k: int, seed: int) -> np.ndarray:
    """A partition of the nodes into ``k`` regions: spectral clustering of the network's
    unweighted adjacency (scikit-learn, ``assign_labels="cluster_qr"``, ``random_state=seed``),
    regions numbered by their smallest node id. ``int64 [N0]``."""
    from sklearn.cluster import SpectralClustering

    if k > num_nodes:
        raise ValueError(f"`num_regions` must be at most the {num_nodes} nodes, got {k}")
    adj = abs(incidence(edges, num_nodes)) @ abs(incidence(edges, num_nodes)).T
    adj = sp.csr_matrix(adj - sp.diags(adj.diagonal()))
    with warnings.catch_warnings():  # a disconnected network: still a partition
        warnings.simplefilter("ignore", UserWarning)
        raw = SpectralClustering(
            k, affinity="precomputed", assign_labels="cluster_qr", random_state=seed
        ).fit_predict(adj)
    _, first = np.unique(raw, return_index=True)
    order = np.argsort(np.argsort(first))  # raw label -> rank of its first node
    return order[raw].astype(np.int64)


# ---------------------------------------------------------------------------- samples
def run_chunks(worker: Callable[..., dict], num_samples: int, n_jobs: int, **kwargs: Any) -> dict:
    """``worker(indices, **kwargs)`` over contiguous chunks of ``range(num_samples)``, one per
    process (joblib; ``n_jobs=-1``: every core), results concatenated along the first axis.
    Each sample draws from its own generator, so the result does not depend on ``n_jobs``."""
    from joblib import Parallel, delayed

    jobs = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
    chunks = np.array_split(np.arange(num_samples), max(1, min(jobs, num_samples)))
    if len(chunks) == 1:
        outs = [worker(chunks[0], **kwargs)]
    else:
        outs = Parallel(n_jobs=len(chunks))(delayed(worker)(c, **kwargs) for c in chunks)
    return {key: np.concatenate([o[key] for o in outs]) for key in outs[0]}


def finish_chunk(out: dict[str, list], started: float) -> dict[str, np.ndarray]:
    """A chunk's per-sample lists as arrays, with ``total_s``: the chunk's seconds since
    ``started`` shared evenly by its samples."""
    arrays = {k: np.asarray(v) for k, v in out.items()}
    n = len(out["failed"])
    arrays["total_s"] = np.full(n, (time.perf_counter() - started) / max(1, n))
    return arrays


def sample_rng(seed: int, index: int, attempt: int) -> np.random.Generator:
    """The generator of one draw of one sample (independent of the process that makes it)."""
    return np.random.default_rng([seed, index, attempt])


def observe(flows: np.ndarray, observed: float, noise: float, seed: int) -> tuple:
    """The measured flows: a fixed set of ``round(observed * N1)`` metered edges (at least
    one) drawn once with ``seed``, each reading the true flow plus Gaussian noise of
    ``noise`` times that edge's root-mean-square flow over the samples; the other entries 0.

    Returns:
        ``(measured float64 [S, N1], mask bool [N1])``.
    """
    rng = np.random.default_rng([seed, 1])  # a stream apart from the samples'
    n1 = flows.shape[1]
    mask = np.zeros(n1, dtype=bool)
    mask[rng.permutation(n1)[: max(1, int(round(observed * n1)))]] = True
    scale = np.sqrt(np.mean(flows**2, axis=0))  # [N1]
    measured = flows + noise * scale * rng.standard_normal(flows.shape)
    return np.where(mask, measured, 0.0), mask


def level_classes(levels: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """Operating-state labels: 0 (low), 1 (normal), 2 (high), the thirds of ``bounds``."""
    low, high = bounds
    edges = np.linspace(low, high, 4)[1:3]
    return np.searchsorted(edges, levels, side="right").astype(np.int64)


def report_failures(name: str, failed: int, num_samples: int) -> None:
    """Say how many solves failed (each redrawn), as a ``UserWarning``."""
    if failed:
        warnings.warn(
            f"{name}: {failed} of {failed + num_samples} solves failed to converge; each was "
            "redrawn with a new seeded draw (counted in `num_failed`, none kept or dropped)",
            UserWarning,
            stacklevel=3,
        )


# ---------------------------------------------------------------------------- the dataset
class PhysicalFlowDataset(EdgeFlows):
    """Base of the physical-flow datasets (private): one network, samples from a solver.

    Subclasses set their options, call ``_open`` and implement ``process()`` (calling
    :meth:`_save_physical`) and ``processed_file_names``.
    """

    def _save_physical(self, name: str, edges: np.ndarray, num_nodes: int, pos: np.ndarray,
                       out: dict[str, np.ndarray], labels: np.ndarray, extra: dict[str, Any],
                       started: float) -> None:  # fmt: skip
        """Lift the network to its 2-cells and write the processed file: samples ``x_1`` = the
        measured flows (:func:`observe`) of :func:`run_chunks`' ``out``, ``y`` = ``labels``;
        ``extra`` holds ``edge_weights``, ``losses`` (or ``None``), ``regions``,
        ``sample_info`` (dict of ``[S]`` arrays) and ``settings`` (a JSON-able dict, to which
        the failed solves and the seconds since ``started`` are added)."""
        failed = int(out["failed"].sum())
        report_failures(name, failed, self.num_samples)
        cells = lift(edges, num_nodes, self.lifting, self.max_cycle_length)
        extra["settings"].update(num_failed=failed, seconds={
            "solve": float(out["solve_s"].sum()), "total": float(out["total_s"].sum()),
            "wall": time.perf_counter() - started})  # the making, saving aside  # fmt: skip
        true_flows = out["flows"]
        ops = ComplexOperators.from_cells(edges, cells or None, num_nodes)
        measured, mask = observe(true_flows, self.observed, self.noise, self.seed)
        masks = stratified_masks(labels, labels.size, SPLIT_RATIO, self.seed)
        lengths = np.array([len(c) for c in cells], dtype=np.int64)
        t = lambda a: None if a is None else torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
        self._save(content_of(ops, measured, labels=labels, pos=pos, masks=masks), physical={
            "cell_nodes": t(np.array([v for c in cells for v in c], dtype=np.int64)),
            "cell_ptr": t(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)),
            "flows": t(true_flows.astype(np.float64)),
            "observed_mask": t(mask),
            "edge_weights": t(np.asarray(extra["edge_weights"], dtype=np.float64)),
            "injections": t(np.asarray(out["injections"], dtype=np.float64)),
            "losses": t(extra["losses"]),
            "regions": t(np.asarray(extra["regions"], dtype=np.int64)),
            "sample_info": {k: t(np.asarray(v)) for k, v in extra["sample_info"].items()},
            "num_failed": failed,
            "settings": json.dumps(extra["settings"], sort_keys=True),
        })  # fmt: skip

    @property
    def _physical(self) -> dict[str, Any]:
        return self._stored["physical"]

    @property
    def cells(self) -> list[list[int]]:
        """The 2-cells as node cycles (triangles: sorted node triples), in ``B2``'s order."""
        nodes, ptr = self._physical["cell_nodes"].tolist(), self._physical["cell_ptr"].tolist()
        return [nodes[a:b] for a, b in zip(ptr[:-1], ptr[1:], strict=True)]

    @property
    def complex(self) -> ComplexOperators:
        r"""The network's complex (:class:`ComplexOperators`) in its physical metric: edges
        oriented low -> high in the order of ``x_1``, 2-cells :attr:`cells` (a cell complex
        where the lifting gives cycles longer than three), and the Hodge star
        :math:`\mathbf{W}_1 = \operatorname{diag}(` :attr:`edge_weights` :math:`)`,
        :math:`\mathbf{W}_0 = \mathbf{I}` (``with_weights("resistance", edge=edge_weights)``,
        as the file of :meth:`to_npz` gives it): its Hodge decomposition, Laplacians and the
        method's Hodge quantities are in that metric (docs/weights.md);
        ``complex.with_weights("unweighted")`` is the unit metric."""
        if self._complex is None:  # EdgeFlows' complex, as stored, in the physical metric
            ops = super().complex
            self._complex = ops.with_weights("resistance", edge=self.edge_weights.numpy())
        return self._complex

    # ------------------------------------------------------------------ physics
    def _rows(self, t: torch.Tensor) -> torch.Tensor:
        return t[torch.as_tensor(list(self.indices()), dtype=torch.long)]

    @property
    def edge_weights(self) -> torch.Tensor:
        """Per-edge weights of the physical metric, ``float64 [N1]`` (the diagonal of
        :math:`\\mathbf{W}_1`; see the subclass)."""
        return self._physical["edge_weights"]

    @property
    def flows(self) -> torch.Tensor:
        """The true (solver's) flows of this dataset's samples, ``float64 [S, N1]``, before
        the observation; ``x_1`` holds the measured ones."""
        return self._rows(self._physical["flows"])

    @property
    def injections(self) -> torch.Tensor:
        """Net injection into the network at every node, ``float64 [S, N0]``."""
        return self._rows(self._physical["injections"])

    @property
    def losses(self) -> torch.Tensor | None:
        """Losses on every edge, ``float64 [S, N1]``, or ``None`` for a lossless solver."""
        losses = self._physical["losses"]
        return None if losses is None else self._rows(losses)

    @property
    def observed_mask(self) -> torch.Tensor:
        """The metered edges, ``bool [N1]`` (the same for every sample)."""
        return self._physical["observed_mask"]

    @property
    def regions(self) -> torch.Tensor:
        """The region of every node, ``int64 [N0]``."""
        return self._physical["regions"]

    @property
    def sample_info(self) -> dict[str, torch.Tensor]:
        """Per-sample draws (``[S]`` each) of this dataset's samples."""
        return {k: self._rows(v) for k, v in self._physical["sample_info"].items()}

    @property
    def num_failed(self) -> int:
        """How many solves failed and were redrawn while the samples were made."""
        return int(self._physical["num_failed"])

    @property
    def settings(self) -> dict[str, Any]:
        """Provenance, solver settings and the sample distribution, as recorded."""
        return json.loads(self._physical["settings"])

    # ------------------------------------------------------------------ export
    def to_npz(self, path: str | os.PathLike) -> None:
        """Write this dataset (or view) as an edge-flow file (the format of
        :class:`~topo_contrastive.datasets.EdgeFlows`), atomically: the complex, the measured
        flows ``x_1``, the labels, node coordinates, the standard split and the optional key
        ``edge_weights``; it is what ``topo-contrastive pretrain --data-file`` reads.

        Raises:
            TypeError: ``path`` is not a path.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"`path` must be a file path (str), got {type(path).__name__}")
        x = self._rows(self._data.x_1.view(-1, self.complex.num_edges)).numpy()
        masks = {k: v.numpy() for k, v in self.split().items()}
        unit = self.complex.with_weights("unweighted")  # the metric as the key edge_weights
        EdgeFlows.write_npz(path, unit, x, labels=self.labels.numpy(),
                            pos=self.pos.numpy(), masks=masks,
                            edge_weights=self.edge_weights.numpy())  # fmt: skip
