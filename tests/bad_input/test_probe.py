# ruff: noqa: E501  (the case tables keep one case per line)
"""Bad input to the default probe (``ridge_probe``): splits that overlap or are not sets of
sample indices, labels that are not class ids. Each raises ``ValueError`` or ``TypeError``
naming the argument, before any fit."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bad_input.conftest import expect
from topo_contrastive.evaluation.ridge_probe import ridge_probe

X = np.random.default_rng(0).normal(size=(20, 3))
Y = np.arange(20) % 2
TR, TE = np.arange(12), np.arange(12, 20)
NAN_LABELS = Y.astype(float)
NAN_LABELS[3] = np.nan

CASES = [
    ("test-equals-train", lambda: ridge_probe(X, Y, TR, TR), ValueError, ("`train_idx` and `test_idx` share 12 sample", "disjoint")),
    ("test-overlaps-train", lambda: ridge_probe(X, Y, TR, np.arange(10, 20)), ValueError, "`train_idx` and `test_idx` share 2 sample"),
    ("val-overlaps-test", lambda: ridge_probe(X, Y, TR, TE, val_idx=TE[:2]), ValueError, "`test_idx` and `val_idx` share 2"),
    ("negative-index", lambda: ridge_probe(X, Y, np.r_[TR, -1], TE), ValueError, r"`train_idx` must hold indices in \[0, 20\).*got -1"),
    ("index-too-large", lambda: ridge_probe(X, Y, TR, np.r_[TE, 20]), ValueError, r"`test_idx` must hold indices in \[0, 20\)"),
    ("fractional-index", lambda: ridge_probe(X, Y, TR + 0.5, TE), TypeError, "`train_idx` must hold integer sample indices, got 0.5"),
    ("repeated-index", lambda: ridge_probe(X, Y, np.r_[TR, 0], TE), ValueError, "`train_idx` holds the sample 0 2 times"),
    ("boolean-mask", lambda: ridge_probe(X, Y, np.arange(20) < 12, TE), TypeError, "`train_idx` must hold sample indices, got a boolean mask"),
    ("empty-test", lambda: ridge_probe(X, Y, TR, []), ValueError, "`test_idx` must hold at least one sample index"),
    ("nan-label", lambda: ridge_probe(X, NAN_LABELS, TR, TE), TypeError, r"`labels` must hold integer class ids, got the value nan \(sample 3\)"),
    ("fractional-label", lambda: ridge_probe(X, Y + 0.5, TR, TE), TypeError, "`labels` must hold integer class ids"),
    ("inf-feature", lambda: ridge_probe(np.where(X > 1, np.inf, X), Y, TR, TE), ValueError, "`embeddings` contains NaN or inf"),
]


@pytest.mark.parametrize(("call", "exc", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused(call, exc, words):
    expect(call, exc, words)


def test_integral_float_labels_and_indices_are_accepted():
    want = ridge_probe(X, Y, TR, TE)
    got = ridge_probe(X, Y.astype(float), TR.astype(float), TE.astype(float))
    assert (got.test_accuracy, got.alpha) == (want.test_accuracy, want.alpha)
