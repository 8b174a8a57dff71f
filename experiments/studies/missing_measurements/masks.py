"""Which edges of a test flow go unobserved: at random, or a region around a node."""

from __future__ import annotations

import numpy as np

from experiments import _names
from experiments._helpers import check_int
from topo_contrastive.complex import ComplexOperators

#: How the unobserved edges are chosen: ``"random"`` (a uniform sample of the edges) or
#: ``"region"`` (the edges nearest a node, as when the sensors of an area are down).
MODES: tuple[str, ...] = _names.MISSING_MODES


def unobserved_masks(
    complex: ComplexOperators,
    num: int,
    fraction: float,
    mode: str,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""Masks of the unobserved edges of ``num`` edge flows, :math:`k =
    \operatorname{round}(\text{fraction} \cdot N_1)` edges per flow, each flow its own draw.

    - ``"random"``: :math:`k` edges drawn uniformly without replacement.
    - ``"region"``: a node :math:`v` drawn uniformly; the :math:`k` edges nearest to it,
      an edge's distance being the smaller hop distance of its two nodes to :math:`v`
      (:math:`\infty` in another connected component); ties are broken at random. The
      region is a ball around :math:`v`: every unobserved edge is at most as far from
      :math:`v` as every observed one.

    The draws consume ``rng`` in this order, flow by flow: ``"random"`` one
    ``rng.choice(N1, k, replace=False)``; ``"region"`` one ``rng.integers(N0)`` and one
    ``rng.random(N1)`` (the tie-breakers). Nothing is drawn when :math:`k = 0`.

    Args:
        complex: the flows' complex (its ``B1`` and ``edges``).
        num: the number of flows :math:`S \ge 0`.
        fraction: the unobserved fraction of the edges, in :math:`[0, 1]`.
        mode: ``"random"`` or ``"region"`` (:data:`MODES`).
        rng: the generator of the draws.

    Returns:
        ``bool [S, N1]``: ``True`` where an edge is unobserved.

    Raises:
        TypeError: ``complex`` not a :class:`~topo_contrastive.ComplexOperators`, ``rng``
            not a :class:`numpy.random.Generator`, ``num`` not an integer.
        ValueError: ``num < 0``, ``fraction`` outside :math:`[0, 1]` (or NaN), an unknown
            ``mode``.

    Example::

        >>> import numpy as np
        >>> from topo_contrastive import ComplexOperators
        >>> ops = ComplexOperators.from_simplices([(0, 1), (1, 2), (2, 3), (0, 3)])
        >>> unobserved_masks(ops, 2, 0.5, "random", np.random.default_rng(0)).sum(1)
        array([2, 2])
    """
    if not isinstance(complex, ComplexOperators):
        raise TypeError(f"`complex` must be a ComplexOperators, got {type(complex).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` must be a numpy.random.Generator, got {type(rng).__name__}")
    num = check_int(num, "num", 0)
    if not 0 <= fraction <= 1:  # NaN fails too
        raise ValueError(f"`fraction` must lie in [0, 1], got {fraction}")
    if mode not in MODES:
        raise ValueError(f"`mode` must be one of {', '.join(MODES)}, got {mode!r}")
    from scipy.sparse.csgraph import shortest_path

    n1 = complex.num_edges
    k = int(round(fraction * n1))
    masks = np.zeros((int(num), n1), dtype=bool)
    if k == 0:
        return masks
    tail, head = np.asarray(complex.edges[:, 0]), np.asarray(complex.edges[:, 1])  # [N1] each
    adjacency = abs(complex.B1) @ abs(complex.B1).T  # nodes sharing an edge (and the diagonal)
    for i in range(int(num)):
        if mode == "random":
            masks[i, rng.choice(n1, size=k, replace=False)] = True
            continue
        source = int(rng.integers(complex.num_nodes))
        hops = shortest_path(adjacency, unweighted=True, indices=source)  # [N0], inf: unreached
        distance = np.minimum(hops[tail], hops[head])  # [N1]
        order = np.lexsort((rng.random(n1), distance))  # nearest first, ties at random
        masks[i, order[:k]] = True
    return masks
