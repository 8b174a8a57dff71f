r"""Trajectories on many complexes: every sample on a new random complex with its holes at
random places (the many-complexes task)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from topo_contrastive._utils.checks import check_int
from topo_contrastive.data import ComplexData
from topo_contrastive.datasets._file import content_of
from topo_contrastive.datasets.edge_flows import EdgeFlows
from topo_contrastive.datasets.synthetic_trajectories import (
    generate_trajectories,
    generate_trajectory_complex,
)

#: Centre ranges ``(lo, hi)`` of the large hole (lower left) and the small hole (upper right).
_CENTRES = ((0.28, 0.42), (0.58, 0.72))
#: Side ranges of the large and the small hole.
_SIDES = ((0.18, 0.26), (0.06, 0.12))


def _random_holes(rng: np.random.Generator) -> tuple[tuple[float, float, float, float], ...]:
    """Two square holes at random places: a large one (side 0.18-0.26) centred in
    :math:`[0.28, 0.42]^2` and a small one (side 0.06-0.12) centred in
    :math:`[0.58, 0.72]^2`, as boxes ``(x_min, x_max, y_min, y_max)``."""
    out = []
    for (lo, hi), (s0, s1) in zip(_CENTRES, _SIDES, strict=True):
        cx, cy = rng.uniform(lo, hi, size=2)
        half = rng.uniform(s0, s1) / 2
        out.append((cx - half, cx + half, cy - half, cy + half))
    return tuple(out)


class RandomComplexTrajectories(EdgeFlows):
    r"""Trajectory classification across complexes: every sample is a trajectory on a
    complex of its own (a :class:`~topo_contrastive.data.ComplexData`).

    Each sample draws ``num_points`` points (uniform in ``points``) in
    :math:`[-0.05, 1.05]^2`, triangulates them (Delaunay), cuts two square holes at random
    places (a large one, side 0.18-0.26, centred in :math:`[0.28, 0.42]^2`, and a small one,
    side 0.06-0.12, centred in :math:`[0.58, 0.72]^2`) and walks one trajectory of the
    paper's task on it
    (:func:`~topo_contrastive.datasets.generate_trajectory_complex`,
    :func:`~topo_contrastive.datasets.generate_trajectories`): from the top-left corner to
    the bottom-right one through the bottom-left (label 0) or the top-right corner (label 1).
    Nodes are numbered in the points' drawing order, so edge orientations carry no
    direction: the label depends on where the path runs relative to the holes, not on any
    numbering or orientation. Because the holes differ in size, the two classes are not
    mirror images of each other (with equal holes, a reflection across the anti-diagonal
    would map one class onto the other, and no numbering-free feature could separate them).

    An :class:`EdgeFlows` of many complexes: every sample holds ``x_1`` ``float32 [N1, 1]``
    (the path's edge flow), ``y`` ``int64 [1]``, the node coordinates ``pos`` ``float64
    [N0, 2]`` and its complex (incidences as index/value pairs). Classes are balanced
    (``n // 2`` of class 0), in random order. The first ``num_train`` samples are the
    standard training split (``train_mask``), the next ``num_val`` validation, the rest test;
    :meth:`split` draws stratified re-splits of the same per-class sizes.

    Args:
        root (str): folder of the processed file.
        num_samples (int): number of samples (default ``1000``).
        points (tuple[int, int]): range of the number of points per complex, both ends
            included (default ``(80, 160)``: about 200-450 edges).
        num_train (int): size of the training split (default ``600``); ``num_val``
            (default ``200``) the validation split.
        seed (int): seed of ``numpy.random.default_rng`` (default ``0``).
        transform, pre_transform, pre_filter: as PyG's ``InMemoryDataset`` (the
            ``pre_transform`` recorded as :class:`EdgeFlows` records it).
        log (bool): print PyG's processing messages (default ``True``).

    Raises:
        TypeError / ValueError: non-integer or out-of-range sizes, ``points`` not an
            increasing pair of at least 20, splits larger than ``num_samples``; sizes whose
            memory (about ``num_samples * points[1] * 2 kB``) exceeds
            :data:`MAX_BYTES` (16 GiB), checked before anything is generated.

    Example:
        >>> ds = RandomComplexTrajectories("data/rct", num_samples=8, num_train=4, num_val=2,
        ...                                log=False)  # doctest: +SKIP
        >>> ds[0].complex() is not None, ds[0].x_1.shape[0] == ds[0].num_cells(1).item()
        ...  # doctest: +SKIP
        (True, True)
    """

    def __init__(self, root: str, num_samples: int = 1000, points: tuple[int, int] = (80, 160),
                 num_train: int = 600, num_val: int = 200, seed: int = 0,
                 transform: Callable[..., Any] | None = None,
                 pre_transform: Callable[..., Any] | None = None,
                 pre_filter: Callable[..., Any] | None = None,
                 log: bool = True) -> None:  # fmt: skip
        self.num_samples = check_int(num_samples, "num_samples", 2)
        if not (isinstance(points, (tuple, list)) and len(points) == 2):
            raise TypeError(f"`points` must be a pair (min, max), got {points!r}")
        lo, hi = (check_int(p, "points", 20) for p in points)
        if hi < lo:
            raise ValueError(f"`points` must be increasing, got {tuple(points)}")
        self.points = (lo, hi)
        self.num_train = check_int(num_train, "num_train", 1)
        self.num_val = check_int(num_val, "num_val", 0)
        if self.num_train + self.num_val >= self.num_samples:
            raise ValueError(
                f"`num_train` + `num_val` = {self.num_train + self.num_val} leaves no test "
                f"sample of num_samples = {self.num_samples}"
            )
        self.seed = check_int(seed, "seed", 0)
        need = self.num_samples * hi * BYTES_PER_POINT
        if need > MAX_BYTES:
            raise ValueError(
                f"`num_samples` = {self.num_samples} complexes of up to `points` = {hi} points "
                f"need about {need / 2**30:.1f} GiB ({BYTES_PER_POINT} bytes a point), above "
                f"the limit of {MAX_BYTES / 2**30:.0f} GiB: ask for fewer or smaller complexes"
            )
        self.pre_filter = pre_filter
        self._open(root, transform, pre_transform, False, log)

    @property
    def processed_file_names(self) -> list[str]:
        lo, hi = self.points
        return [f"rct_n{self.num_samples}_p{lo}-{hi}_s{self.seed}.pt"]

    def process(self) -> None:
        rng = np.random.default_rng(self.seed)
        n = self.num_samples
        labels = rng.permutation(np.repeat(np.array([0, 1]), [n // 2, n - n // 2]))
        samples = [_sample(rng, self.points, int(label)) for label in labels.tolist()]
        if self.pre_filter is not None:
            samples = [d for d in samples if self.pre_filter(d)]
        bounds = [self.num_train, self.num_train + self.num_val]  # the splits one after another
        split = np.searchsorted(bounds, np.arange(len(samples)), side="right")
        masks = {name: split == k for k, name in enumerate(("train", "val", "test"))}
        self._save(content_of(samples, None, "samples", masks=masks))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self)}, points={self.points}, seed={self.seed})"
        )


#: Memory of one point of a generated complex while the dataset is built: its share of
#: the incidences (about 3 edges and 2 triangles a point), signals, positions and the
#: operators cached on the samples (an upper estimate).
BYTES_PER_POINT = 2048
#: The most memory a dataset may ask for (``num_samples * points[1] * BYTES_PER_POINT``),
#: checked before anything is generated.
MAX_BYTES = 16 * 2**30


def _sample(rng: np.random.Generator, points: tuple[int, int], label: int) -> ComplexData:
    """One trajectory of class ``label`` on a new random complex (a new complex is drawn
    when a region of the task holds no vertex)."""
    for _ in range(1000):
        n = int(rng.integers(points[0], points[1] + 1))
        ops, pos = generate_trajectory_complex(n, rng, holes=_random_holes(rng))
        try:
            (path,) = generate_trajectories(ops, pos, np.array([label]), rng)
        except ValueError:  # a corner region without vertices: draw another complex
            continue
        flow = ops.path_to_flow(path).view(-1, 1)
        return ComplexData.from_complex(
            ops,
            x_1=flow,
            y=torch.tensor([label]),
            pos=torch.from_numpy(pos).float(),
        )
    raise RuntimeError("no complex with all regions of the task in 1000 draws")  # pragma: no cover
