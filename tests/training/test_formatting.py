"""format_mean_std: the one ``mean ± std`` formatter."""

from __future__ import annotations

import numpy as np
import pytest

from topo_contrastive.training import format_mean_std


def test_given_mean_and_std():
    assert format_mean_std(80.456, 4.21) == "80.5 ± 4.2"
    assert format_mean_std(5.0, 0.25, widths=(5, 4)) == "  5.0 ±  0.2"
    assert format_mean_std(0.9, 0.05, scale=100, digits=0) == "90 ± 5"


def test_values_give_numpys_mean_and_population_std():
    rng = np.random.default_rng(0)
    for _ in range(50):
        acc = list(rng.uniform(0, 1, size=rng.integers(1, 9)))
        want = f"{100 * np.mean(acc):.1f} ± {100 * np.std(acc):.1f}"
        assert format_mean_std(acc, scale=100) == want
    assert format_mean_std(np.array([[1.0, 3.0]])) == "2.0 ± 1.0"


def test_bad_input():
    with pytest.raises(ValueError, match="`mean` holds no values"):
        format_mean_std([])
    with pytest.raises(ValueError, match="`digits` must be >= 0, got -1"):
        format_mean_std(1.0, 0.1, digits=-1)
    with pytest.raises(TypeError, match="`digits` must be an int, got float"):
        format_mean_std(1.0, 0.1, digits=1.0)


def test_counted_nouns_are_singular_for_exactly_one():
    from topo_contrastive._utils.words import count

    assert count(1, "epoch") == "1 epoch"
    assert [count(n, "torch thread") for n in (0, 2)] == ["0 torch threads", "2 torch threads"]
    assert count(1.0, "split") == "1.0 split" and count(3, "matrix", "matrices") == "3 matrices"
