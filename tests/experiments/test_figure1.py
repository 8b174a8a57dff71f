import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from experiments.figure1 import (
    METHODS,
    Figure1Result,
    embedding_distances,
    figure1,
    plot_figure1,
    summarize_figure1,
)
from topo_contrastive import HodgeDecomposition
from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.hodge import COMPONENTS

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "figure1_embedding_distance.py"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("traj")
    ds = SyntheticTrajectories(
        str(root), num_points=150, num_train=10, num_val=5, num_test=5, seed=1, log=False
    )
    flows = ds._data.x_1.view(len(ds), -1).double()
    return flows, HodgeDecomposition(ds.complex, backend="exact")


def test_embedding_distances_match_direct_computation(small):
    flows, hodge = small
    p = torch.full_like(flows, 0.5) * (flows != 0)
    gen = torch.Generator().manual_seed(0)
    got = embedding_distances(flows, hodge, p, 3, generator=gen, draws_per_chunk=2)
    # the same draws made naively, chunk by chunk (2 + 1 draws)
    gen = torch.Generator().manual_seed(0)
    for start, chunk in ((0, 2), (2, 1)):
        u = torch.rand(flows.shape[0], chunk, flows.shape[1], dtype=torch.float64, generator=gen)
        for j in range(chunk):
            diff = flows * (u[:, j] < p)  # x - x'
            for k in COMPONENTS:
                want = (diff @ hodge.basis(k)).norm(dim=-1).numpy()
                np.testing.assert_allclose(got[k][:, start + j], want, atol=1e-12)
    assert set(got) == set(COMPONENTS)
    assert got["harmonic"].shape == (flows.shape[0], 3)
    # p = 0 gives zero distance; p = 1 on the support gives the embedding norms
    zero = embedding_distances(flows, hodge, torch.zeros_like(flows), 2)
    assert all(np.all(v == 0) for v in zero.values())
    ones = embedding_distances(flows, hodge, (flows != 0).double(), 1)
    for k in COMPONENTS:
        want = hodge.coordinates(flows, k).norm(dim=-1).numpy()
        np.testing.assert_allclose(ones[k][:, 0], want, atol=1e-10)


def test_figure1_matches_expected_drops_and_shows_the_effect(small, tmp_path):
    flows, hodge = small
    result = figure1(flows, hodge, budget=0.3, num_draws=10, seed=0, progress=False)
    assert isinstance(result, Figure1Result)
    torch.testing.assert_close(result.uniform_prob.sum(-1), result.drop_prob.sum(-1))
    support = flows != 0
    assert bool((result.uniform_prob[~support] == 0).all())
    d = result.distances
    assert d["spectral"]["harmonic"].mean() < d["uniform"]["harmonic"].mean()
    rows = summarize_figure1(result)
    assert len(rows) == 6 and {r["method"] for r in rows} == set(METHODS)
    fig = plot_figure1(result, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 1000
    assert len(fig.axes) == 3


def test_figure1_bad_input(small):
    flows, hodge = small
    with pytest.raises(ValueError, match="budget"):
        figure1(flows, hodge, budget=1.5, progress=False)
    with pytest.raises(ValueError, match="num_draws"):
        embedding_distances(flows, hodge, torch.zeros_like(flows), 0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        embedding_distances(flows, hodge, torch.full_like(flows, 2.0), 1)
    with pytest.raises(ValueError, match="exact"):
        embedding_distances(
            flows, HodgeDecomposition(hodge.complex, backend="iterative"), flows * 0, 1
        )


def test_example_script_help_and_main(tmp_path):
    spec = importlib.util.spec_from_file_location("figure1_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parser = module._parser()
    for action in parser._actions:
        assert action.help, f"flag {action.option_strings} has no help text"
    text = parser.format_help()
    for flag in ("--root", "--seed", "--budget", "--num-draws", "--out-dir", "--quick"):
        assert flag in text
    out = tmp_path / "out"
    summary = module.main(
        str(tmp_path / "data"), 0, 0.3, 2, str(out), num_samples=20, num_points=150
    )
    assert summary["num_samples"] == 20
    for name in ("figure1.png", "figure1_summary.json", "figure1_summary.csv", "figure1.md"):
        assert (out / name).is_file()
    assert json.loads((out / "figure1_summary.json").read_text())["budget"] == 0.3
    assert not list(out.glob("*.tmp"))
