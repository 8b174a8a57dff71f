"""Synthetic trajectories around two holes (paper §5, trajectory task): the procedure of
Schaub et al. (2020, §5) as published by Bodnar et al. (2021, ``twitter-research/cwn``,
``data/datasets/flow_utils.py``), which the authors of the Hodge-aware paper follow; the
differences, none of which changes the distribution of the data, are listed in
``docs/results/protocol.md`` ("Trajectory generator against the published procedure").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial import Delaunay

from topo_contrastive._utils.checks import check_int
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.datasets._file import content_of
from topo_contrastive.datasets.edge_flows import EdgeFlows

#: The two square holes ``[x_min, x_max] x [y_min, y_max]``.
HOLES = ((0.2, 0.4, 0.2, 0.4), (0.6, 0.8, 0.6, 0.8))
#: Start, checkpoint (class 0 / class 1) and end regions.
START_REGION = (0.0, 0.2, 0.8, 1.0)  # top-left
CHECKPOINT_REGIONS = ((0.0, 0.2, 0.0, 0.2), (0.8, 1.0, 0.8, 1.0))  # bottom-left, top-right
END_REGION = (0.8, 1.0, 0.0, 0.2)  # bottom-right
RANDOM_STEP_PROBABILITY = 0.1
_MAX_ATTEMPTS = 10_000


def _in_box(points: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    x0, x1, y0, y1 = box
    return (points[:, 0] >= x0) & (points[:, 0] <= x1) & (points[:, 1] >= y0) & (points[:, 1] <= y1)


def generate_trajectory_complex(num_points: int = 400, rng: np.random.Generator | int | None = 0,
                                holes: tuple[tuple[float, float, float, float], ...] = HOLES
                                ) -> tuple[ComplexOperators, np.ndarray]:  # fmt: skip
    r"""Random triangulation of the square with two square holes (Schaub et al. 2020, §5).

    ``num_points`` points are drawn uniformly in :math:`[-0.05, 1.05]^2` and
    triangulated by Delaunay. Every triangle with a vertex inside
    :math:`[0.2, 0.4]^2` or :math:`[0.6, 0.8]^2` (closed squares) is removed
    together with those vertices; vertices left in no triangle are dropped and the
    remaining nodes are renumbered ``0 .. N0-1`` in their drawing order. All
    triangles are filled (2-simplices); the edges are those of the kept triangles,
    sorted and oriented from the lower to the higher node id, and every triangle
    is oriented by its ascending vertex order. The Hodge 1-Laplacian then has a
    2-dimensional kernel (one harmonic flow per hole).

    The nodes, their numbering and the triangles are those of Bodnar et al. (2021,
    ``cwn`` ``flow_utils.load_flow_dataset``); its edge order and triangle signs are
    relabellings (module docstring).

    Args:
        num_points: number of points drawn before the holes are cut (default 400).
        rng: a ``numpy.random.Generator`` (consumed: one ``uniform`` call) or a seed
            for ``numpy.random.default_rng`` (default 0).
        holes: the holes as boxes ``(x_min, x_max, y_min, y_max)`` (default: the
            paper's two squares, :data:`HOLES`).

    Returns:
        ``(complex, pos)``: the :class:`ComplexOperators` and the node
        coordinates ``float64 [N0, 2]``.

    Raises:
        ValueError: ``num_points < 3``.
    """
    num_points = check_int(num_points, "num_points", 3)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    points = rng.uniform(-0.05, 1.05, size=(num_points, 2))  # [n, 2]
    simplices = np.asarray(Delaunay(points).simplices, dtype=np.int64)  # [T, 3]
    in_hole = np.zeros(num_points, dtype=bool)
    for box in holes:
        in_hole |= _in_box(points, box)
    simplices = simplices[~in_hole[simplices].any(axis=1)]
    used = np.zeros(num_points, dtype=bool)
    used[simplices.ravel()] = True
    new_id = np.cumsum(used) - 1  # old id -> new id (valid where used)
    triangles = np.sort(new_id[simplices], axis=1)
    edges = np.unique(
        np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [0, 2]]]), axis=0
    )
    ops = ComplexOperators.from_simplices(edges, triangles, int(used.sum()))
    return ops, points[used]


def _walk(neighbours: list[np.ndarray], pos: np.ndarray, start: int, checkpoint: int, end: int,
          rng: np.random.Generator) -> list[int] | None:  # fmt: skip
    """One self-avoiding walk start -> checkpoint -> end; ``None`` when it gets stuck.

    ``neighbours[v]``: neighbour ids of ``v`` in ascending order. The end vertex
    counts only after the checkpoint (see :func:`generate_trajectories`).
    """
    visited = {start}
    path = [start]
    current, target = start, checkpoint
    while True:
        if current == target:
            if target == end:
                return path
            target = end
        candidates = np.array([v for v in neighbours[current] if v not in visited], dtype=np.int64)
        if candidates.size == 0:
            return None
        if rng.random() < RANDOM_STEP_PROBABILITY:
            nxt = int(candidates[rng.integers(candidates.size)])
        else:
            dist = np.sum((pos[candidates] - pos[target]) ** 2, axis=1)
            nxt = int(candidates[np.argmin(dist)])
        visited.add(nxt)
        path.append(nxt)
        current = nxt


def generate_trajectories(ops: ComplexOperators, pos: np.ndarray, labels: np.ndarray,
                          rng: np.random.Generator | int | None = 0
                          ) -> list[list[int]]:  # fmt: skip
    r"""Random trajectories on the two-hole complex, one per label (Schaub et al. 2020, §5).

    The procedure of Bodnar et al. (2021, ``cwn`` ``flow_utils.generate_trajectory``),
    for each label in turn:

    1. Draw uniformly a start vertex among the vertices in the top-left region
       :math:`[0, 0.2] \times [0.8, 1]`, a checkpoint vertex in the bottom-left
       :math:`[0, 0.2]^2` (label 0) or the top-right :math:`[0.8, 1]^2` (label 1),
       and an end vertex in the bottom-right :math:`[0.8, 1] \times [0, 0.2]`
       (closed boxes; in this order).
    2. Walk from the start. The current vertex is marked visited; once the walk
       is at its checkpoint, its target changes from the checkpoint to the end.
       Among the unvisited neighbours it steps, with probability 0.1, to a
       uniformly random one, otherwise to the one nearest its target (Euclidean
       distance; an exact tie goes to the lower node id).
    3. A walk with no unvisited neighbour is stuck: it is discarded and the
       trajectory starts over at step 1 with a new start, checkpoint and end.
    4. The walk is accepted when it steps on the end vertex after its checkpoint.

    Paths are therefore simple (no repeated vertex), start and end in their
    regions and visit a checkpoint vertex of their label.

    One seeded ``numpy.random.Generator`` replaces Python's ``random``, neighbours are
    scanned in ascending node id, and a walk that meets its end vertex before its
    checkpoint is not accepted (module docstring: none changes the distribution).

    Args:
        ops: the complex (e.g. from :func:`generate_trajectory_complex`).
        pos: node coordinates ``[N0, 2]``.
        labels: ``int [S]`` of 0/1, the class of each trajectory.
        rng: ``numpy.random.Generator`` (consumed) or seed (default 0).

    Returns:
        ``S`` node paths (lists of node ids).

    Raises:
        ValueError: a region holds no vertex of the complex, a label is not 0/1,
            ``pos`` does not match the complex, or no walk succeeds after
            10,000 attempts for one trajectory.
    """
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    pos = np.asarray(pos, dtype=np.float64)
    if pos.shape != (ops.num_nodes, 2):
        raise ValueError(f"`pos` must have shape [{ops.num_nodes}, 2], got {pos.shape}")
    labels = np.asarray(labels)
    if labels.size and not np.isin(labels, (0, 1)).all():
        raise ValueError("`labels` must hold only 0 and 1")
    regions = {}
    for name, box in (
        ("start (top-left)", START_REGION),
        ("checkpoint of class 0 (bottom-left)", CHECKPOINT_REGIONS[0]),
        ("checkpoint of class 1 (top-right)", CHECKPOINT_REGIONS[1]),
        ("end (bottom-right)", END_REGION),
    ):
        nodes = np.flatnonzero(_in_box(pos, box))
        if nodes.size == 0:
            raise ValueError(
                f"the {name} region {box} holds no vertex of the complex; use more points or "
                "another seed"
            )
        regions[name] = nodes
    starts, cp0, cp1, ends = regions.values()
    src, dst = ops.edges[:, 0], ops.edges[:, 1]
    nbr_src = np.concatenate([src, dst])
    nbr_dst = np.concatenate([dst, src])
    order = np.lexsort((nbr_dst, nbr_src))
    split_at = np.cumsum(np.bincount(nbr_src, minlength=ops.num_nodes))[:-1]
    neighbours = np.split(nbr_dst[order], split_at)  # sorted neighbour ids of every node
    paths = []
    for label in labels.tolist():
        checkpoints = cp0 if label == 0 else cp1
        for _ in range(_MAX_ATTEMPTS):
            start = int(starts[rng.integers(starts.size)])
            checkpoint = int(checkpoints[rng.integers(checkpoints.size)])
            end = int(ends[rng.integers(ends.size)])
            path = _walk(neighbours, pos, start, checkpoint, end, rng)
            if path is not None:
                paths.append(path)
                break
        else:  # pragma: no cover - never observed on the default complex
            raise ValueError(f"no trajectory of class {label} found in {_MAX_ATTEMPTS} attempts")
    return paths


def _balanced_labels(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n // 2`` zeros and ``n - n // 2`` ones in random order."""
    return rng.permutation(np.repeat(np.array([0, 1]), [n // 2, n - n // 2]))


class SyntheticTrajectories(EdgeFlows):
    r"""Synthetic trajectory classification (paper §5; Schaub et al. 2020, §5).

    Edge flows of random trajectories on a triangulated square with two holes,
    labelled by the side of the holes they pass on: label 0 for trajectories
    through the bottom-left corner, label 1 for those through the top-right one.
    The flows differ mostly in their harmonic component, so the task needs the
    Hodge-aware structure of the complex.

    Generation (see :func:`generate_trajectory_complex` and
    :func:`generate_trajectories`), all from ``numpy.random.default_rng(seed)``:
    the complex (about 375 nodes, 1,080 edges and 700 triangles for the default
    400 points), then the labels, then the walks. The edge flow of a path
    :math:`(v_0, \dots, v_L)` is

    .. math::
        x_e = \sum_{t} \begin{cases} +1 & (v_t, v_{t+1}) = e \text{ (low} \to
        \text{high)} \\ -1 & (v_{t+1}, v_t) = e \end{cases},

    built with :meth:`ComplexOperators.path_to_flow` in the complex's own edge
    order, so :math:`\mathbf{B}_1 \mathbf{x}` is non-zero exactly at the two end
    vertices (:math:`-1` at the start, :math:`+1` at the end).

    Samples ``0 .. num_train-1`` form the standard training split, the next
    ``num_val`` the validation split and the last ``num_test`` the test split; a split of
    ``n`` samples holds ``n // 2`` of class 0 and ``n - n // 2`` of class 1, in random
    order. :meth:`split` draws stratified re-splits with the same per-split class counts.
    The sizes default to the Hodge-aware paper's (400 points, 200 / 100 / 100 samples).

    An :class:`EdgeFlows` on one complex: each sample is a
    :class:`~topo_contrastive.data.ComplexData` on the shared complex (``x_1=float32
    [N1, 1], y=int64 [1]``). The processed file
    (``processed/trajectories_n{num_points}_{train}-{val}-{test}_seed{seed}.pt``) names
    every parameter, so datasets of different seeds share one ``root``.

    Args:
        root: folder of the dataset (``root/processed`` is created).
        num_points: points drawn before cutting the holes (default 400).
        num_train: size of the training split (default 200).
        num_val: size of the validation split (default 100).
        num_test: size of the test split (default 100).
        seed: seed of the generator (default 0).
        transform: PyG transform applied on access (default ``None``).
        pre_transform: PyG transform applied once before saving (default ``None``);
            recorded in the processed file (by its ``repr``, a function by its name).
        force_reload: regenerate even if the processed file exists (default ``False``);
            needed to change the ``pre_transform`` of an existing processed file.
        log: print progress to stderr (default ``True``).

    Shapes:
        - **x_1**: ``[N1, 1]`` per sample; ``[B * N1, 1]`` in a DataLoader batch.
        - **y**: ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        TypeError: a size or ``seed`` is not an int.
        ValueError: ``num_points < 50``, a split size below 2 (each split must hold
            both classes) or a negative seed; the processed file was built with another
            ``pre_transform`` (and ``force_reload=False``).

    Example:
        >>> ds = SyntheticTrajectories("data/trajectories", seed=0, log=False)
        >>> ds[0].x_1.shape, ds.complex.num_edges, len(ds)
        (torch.Size([1082, 1]), 1082, 400)
    """

    def __init__(self, root: str, num_points: int = 400, num_train: int = 200,
                 num_val: int = 100, num_test: int = 100, seed: int = 0,
                 transform: Callable | None = None, pre_transform: Callable | None = None,
                 force_reload: bool = False, log: bool = True) -> None:  # fmt: skip
        self.num_points = check_int(num_points, "num_points", 50)
        self.num_train = check_int(num_train, "num_train", 2)
        self.num_val = check_int(num_val, "num_val", 2)
        self.num_test = check_int(num_test, "num_test", 2)
        self.seed = check_int(seed, "seed", 0)
        self._open(root, transform, pre_transform, force_reload, log)

    @property
    def processed_file_names(self) -> list[str]:
        return [
            f"trajectories_n{self.num_points}_{self.num_train}-{self.num_val}-{self.num_test}"
            f"_seed{self.seed}.pt"
        ]

    @property
    def _sizes(self) -> tuple[int, int, int]:
        return (self.num_train, self.num_val, self.num_test)

    def process(self) -> None:
        rng = np.random.default_rng(self.seed)
        ops, pos = generate_trajectory_complex(self.num_points, rng)
        labels = np.concatenate([_balanced_labels(n, rng) for n in self._sizes])
        paths = generate_trajectories(ops, pos, labels, rng)
        split = np.repeat(np.arange(3), self._sizes)  # the splits one after the other
        masks = {name: split == k for k, name in enumerate(("train", "val", "test"))}
        self._save(content_of(ops, None, paths=paths, labels=labels, pos=pos, masks=masks))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self)}, num_points={self.num_points}, "
            f"split={self.num_train}/{self.num_val}/{self.num_test}, seed={self.seed})"
        )

