r"""Labelled subsets of a training split for label-efficiency curves.

Of the training split, a fraction ``f`` keeps :math:`n = \max(1, \mathrm{round}(f N))`
labels, stratified, with at least one label per class (a fraction that cannot give every
class a label is refused). Each draw ``d`` orders the training samples once: one randomly
chosen sample per class first (in random class order), then the others of every class
spread evenly (the sample of rank :math:`r` of class :math:`c` at position
:math:`(r + 1/2) / m_c`, with :math:`m_c` its count); a fraction takes the first :math:`n`.
So the subsets are **nested** within a draw (the 1 % subset is inside the 2 % subset of the
same draw), stratified, and the **same for every row** of
:func:`~experiments.studies.label_efficiency.label_efficiency`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from experiments import _names
from experiments._helpers import check_indices, check_int, check_seed, label_values

#: Default labelled fractions of the training split.
DEFAULT_FRACTIONS: tuple[float, ...] = _names.DEFAULT_FRACTIONS
#: Default draws per fraction.
DEFAULT_DRAWS = _names.DEFAULT_DRAWS
#: The most draws per fraction accepted (each draw runs every row once per fraction).
MAX_DRAWS = _names.MAX_DRAWS


def subset_sizes(num_train: int, num_classes: int, fractions: Sequence[float]) -> list[int]:
    """Labels per draw for each fraction: ``max(1, round(f * num_train))``.

    Raises:
        TypeError: a fraction that is not a number.
        ValueError: no fractions; a fraction outside ``(0, 1]``, one whose size is below
            ``num_classes`` (some class would get no label), or two fractions that give the
            same number of labels (``0.5`` twice, or ``0.5`` and ``0.5000001``: the same
            cells twice).
    """
    if isinstance(fractions, (str, bytes)) or not hasattr(fractions, "__iter__"):
        raise TypeError(
            f"`fractions` must be a sequence of numbers, got {type(fractions).__name__}"
        )
    sizes: list[int] = []
    for f in fractions:
        if isinstance(f, (bool, np.bool_)) or not isinstance(
            f, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"a labelled fraction must be a number in (0, 1], got {f!r}")
        if not (0 < float(f) <= 1):
            raise ValueError(f"a labelled fraction must be in (0, 1], got {f}")
        n = max(1, int(round(float(f) * num_train)))
        if n < num_classes:
            raise ValueError(
                f"the labelled fraction {f:g} of the {num_train} training samples gives {n} "
                f"label(s), fewer than the {num_classes} classes: some class would have no "
                f"label; use a fraction >= {num_classes / num_train:.3g}"
            )
        if n in sizes:
            g = list(fractions)[sizes.index(n)]
            raise ValueError(
                f"the labelled fractions {g!r} and {f!r} both give {n} of the {num_train} "
                "training samples: the same cells twice; give each fraction once"
            )
        sizes.append(n)
    if not sizes:
        raise ValueError("`fractions` is empty: give at least one labelled fraction")
    return sizes


def labelled_subsets(
    labels: np.ndarray,
    train_idx: np.ndarray,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> dict[tuple[float, int], np.ndarray]:
    """The labelled subsets of ``train_idx``: stratified, at least one label per class,
    nested within a draw (see the module docstring).

    Args:
        labels: ``[S]`` integer labels of all samples (every class of the task must occur in
            ``train_idx``).
        train_idx: ``[N]`` indices of the training split.
        fractions: labelled fractions, each in ``(0, 1]`` (default
            :data:`DEFAULT_FRACTIONS`).
        draws: draws per fraction (default 10).
        seed: seed of the draws (default 0); draw ``d`` uses ``(seed, d)``.

    Returns:
        ``{(fraction, draw): sorted int64 indices}``.

    Raises:
        ValueError: a fraction outside ``(0, 1]``, too small for one label per class or
            giving as many labels as another, a class of ``labels`` without a sample in
            ``train_idx``, ``draws`` outside ``[1, MAX_DRAWS]`` or above the number of
            distinct subsets of a fraction below 1, a seed outside ``[0, 2**31
            - 1]``, indices out of range or repeated.
        TypeError: labels that are not class ids, ``draws`` or ``seed`` not an int, indices
            given as a boolean mask.
    """
    y = label_values(labels, "labels")
    train_idx = check_indices(train_idx, "train_idx", y.size)
    draws = check_int(draws, "draws", 1, MAX_DRAWS)
    seed = check_seed(seed)
    classes = np.unique(y)
    missing = np.setdiff1d(classes, y[train_idx])
    if missing.size:
        raise ValueError(
            f"class(es) {missing.tolist()} have no sample in the training split: they cannot "
            "get a label"
        )
    sizes = subset_sizes(train_idx.size, classes.size, fractions)
    for f, n in zip(fractions, sizes, strict=True):
        # fewer distinct subsets than draws: some draws would repeat others (the whole
        # split, n = N, is one subset; its draws differ in the rows' seeds only)
        if n < train_idx.size and math.comb(train_idx.size, n) < draws:
            raise ValueError(
                f"`draws` = {draws} is more than the {math.comb(train_idx.size, n)} distinct "
                f"subsets of {n} of the {train_idx.size} training samples (fraction {f:g}): "
                "some draws would repeat others; use fewer draws"
            )
    out = {}
    for d in range(int(draws)):
        rng = np.random.default_rng([int(seed), d])
        first, rest, keys = [], [], []
        for c in rng.permutation(classes):
            members = rng.permutation(train_idx[y[train_idx] == c])
            first.append(members[0])
            r = np.arange(1, members.size)
            rest.extend(members[1:].tolist())
            keys.extend(((r + 0.5) / members.size + 1e-9 * rng.random(r.size)).tolist())
        order = np.concatenate([first, np.asarray(rest, dtype=np.int64)[np.argsort(keys,
                                kind="stable")]]).astype(np.int64)  # fmt: skip
        for f, n in zip(fractions, sizes, strict=True):
            out[(float(f), d)] = np.sort(order[:n])
    return out


def study_subsets(
    labels: np.ndarray, train: np.ndarray, fractions: Sequence[float], draws: int, seed: int
) -> dict[tuple[float, int], np.ndarray]:
    """The labelled subsets of the many-complex studies: :func:`labelled_subsets` of the
    fractions below 1 and, at 1, the whole training split as one draw."""
    below = [f for f in fractions if f < 1]
    subsets = labelled_subsets(labels, train, below, draws, seed) if below else {}
    if 1.0 in fractions:
        subsets[(1.0, 0)] = np.asarray(train)  # every label: one draw
    return subsets
