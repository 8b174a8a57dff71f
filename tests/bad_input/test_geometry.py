# ruff: noqa: E501  (the case tables keep one case per line)
"""Bad coordinates for face finding (``planar_faces``, ``edge_crossings``): every case
raises ``ValueError`` or ``TypeError`` naming ``pos``, the nodes or rows at fault and what
was expected."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bad_input.conftest import expect
from topo_contrastive.complex import edge_crossings, planar_faces

SQUARE = [[0, 1], [1, 2], [2, 3], [0, 3]]
POS = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)


def _with(row, value):
    out = POS.copy()
    out[row] = value
    return out


GEOMETRY_CASES = [
    # (id, call, exception, words in the message)
    ("pos-nan", lambda f: f(SQUARE, _with(2, [np.nan, 1])), ValueError, (r"`pos` contains NaN or inf", r"node 2\b")),
    ("pos-inf", lambda f: f(SQUARE, _with(1, [np.inf, 0])), ValueError, (r"`pos` contains NaN or inf", r"node 1\b")),
    ("pos-strings", lambda f: f(SQUARE, [["a", "b"]] * 4), TypeError, r"`pos` must be a real array \[N0, 2\]"),
    ("pos-3-columns", lambda f: f(SQUARE, np.ones((4, 3))), ValueError, r"`pos` must be a finite float array \[N0, 2\], got shape \(4, 3\)"),
    ("pos-two-nodes-at-one-point", lambda f: f(SQUARE, _with(3, [1, 1])), ValueError, (r"`pos` puts nodes 2 and 3 at one point \(1\.0, 1\.0\)", "a position of its own", r"2 nodes in all")),
    ("pos-all-at-one-point", lambda f: f(SQUARE, np.full((4, 2), 7.0)), ValueError, r"`pos` puts all 4 nodes at one point \(7\.0, 7\.0\): the drawing has no extent"),
    ("pos-isolated-node-on-another", lambda f: f(SQUARE, np.vstack([POS, [[0, 0], [1, 1]]])), ValueError, (r"nodes 0 and 4 at one point \(0\.0, 0\.0\)", r"4 nodes in all")),
    # a unit square times 2e-324, below half the smallest subnormal: every node at 0
    ("pos-subnormal-lost", lambda f: f(SQUARE, POS * 2e-324), ValueError, r"all 4 nodes at one point \(0\.0, 0\.0\)"),
    # nodes 1 and 2 apart by 1, but not at 1e300 from node 0: float64 cannot tell them apart
    ("pos-resolution-lost", lambda f: f([[0, 1], [1, 2]], [[-1e300, 0], [1, 0], [2, 0]]), ValueError, (r"nodes 1 and 2 at one point \(1\.0, 0\.0\)", r"differ by 1,", "resolution of float64")),
]


@pytest.mark.parametrize("find", [planar_faces, edge_crossings], ids=["planar_faces", "edge_crossings"])
@pytest.mark.parametrize("case", GEOMETRY_CASES, ids=[c[0] for c in GEOMETRY_CASES])
def test_bad_coordinates(case, find):
    _, call, exc, words = case
    expect(lambda: call(find), exc, words)
