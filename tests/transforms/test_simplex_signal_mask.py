"""SimplexSignalMask (uniform masks of signals on any rank) and HodgeSpectralMask at rank 2."""

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from tests._rank_complexes import torus
from topo_contrastive import HodgeDecomposition
from topo_contrastive.transforms import (
    EdgeFlowMask,
    HodgeSpectralMask,
    SimplexSignalMask,
    optimize_drop_probabilities,
)

from ._reference import expected_hodge_distortion


@pytest.mark.parametrize("rank", [0, 2])
def test_uniform_mask_on_any_rank(rank):
    n = 50_000
    x = torch.randn(n, 2, generator=torch.Generator().manual_seed(rank)) + 5.0  # non-zero
    data = Data(**{f"x_{rank}": x})
    mask = SimplexSignalMask(0.3, rank=rank, generator=0)
    assert mask.attr == f"x_{rank}"
    out = mask(data)
    dropped = out[f"x_{rank}"] == 0
    assert torch.equal(dropped[:, 0], dropped[:, 1])  # channels share the draw
    assert abs(dropped[:, 0].double().mean().item() - 0.3) < 4 * math.sqrt(0.21 / n)
    assert torch.equal(data[f"x_{rank}"], x)  # input untouched
    assert torch.equal(out[f"x_{rank}"][~dropped], x[~dropped])
    assert repr(mask) == f"SimplexSignalMask(p=0.3, rank={rank}, attr='x_{rank}')"


def test_edge_flow_mask_is_rank_one_and_draws_the_same():
    x = torch.randn(1000, 1)
    a = EdgeFlowMask(0.4, generator=7)(Data(x_1=x)).x_1
    b = SimplexSignalMask(0.4, rank=1, generator=7)(Data(x_1=x)).x_1
    assert torch.equal(a, b)
    assert isinstance(EdgeFlowMask(0.1), SimplexSignalMask)
    assert repr(EdgeFlowMask(0.1)) == "EdgeFlowMask(p=0.1, attr='x_1')"


def test_uniform_mask_bad_settings():
    with pytest.raises(ValueError, match="`rank` must lie in 0..3, got 4"):
        SimplexSignalMask(0.1, rank=4)
    with pytest.raises(TypeError, match="`rank` must be an int"):
        SimplexSignalMask(0.1, rank=1.0)
    with pytest.raises(ValueError, match=r"`p` must lie in \[0, 1\]"):
        SimplexSignalMask(1.5, rank=2)
    with pytest.raises(ValueError, match="no edge-flow attribute 'x_2'"):
        SimplexSignalMask(0.1, rank=2)(Data(x_1=torch.ones(3, 1)))


def test_spectral_mask_rank_two_matches_closed_form_in_monte_carlo():
    """Masks of triangle signals perturbing the harmonic part (the torus' cavity): the
    transform's empirical E||P_H (x - x')||^2 equals the closed form of its probabilities."""
    ops = torus()
    hodge = HodgeDecomposition(ops, rank=2)
    n2 = ops.num_triangles
    x = torch.randn(n2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mask = HodgeSpectralMask(
        0.3, hodge=hodge, perturb=("harmonic",), preserve=("gradient",), generator=1
    )
    assert mask.attr == "x_2"
    fit = HodgeSpectralMask(
        0.3, hodge=hodge, perturb=("harmonic",), preserve=("gradient",), fit_only=True
    )
    p = fit(Data(x_2=x.view(-1, 1))).drop_prob  # [N2, 1]
    assert float(p.sum()) <= 0.3 * n2 + 1e-9 and float(p.min()) >= 0.0
    reps = 4000
    data = Data(
        x_2=x.repeat(reps).view(-1, 1),
        drop_prob=p.repeat(reps, 1),
        batch=torch.arange(reps).repeat_interleave(n2),
    )
    views = mask(data).x_2.view(reps, n2)
    diff_h = hodge.project(x - views, "harmonic")  # [reps, N2]
    empirical = diff_h.pow(2).sum(1)
    block = hodge.projector_block(np.arange(n2), "harmonic")
    closed = float(expected_hodge_distortion(x, p.view(-1), block))
    assert abs(float(empirical.mean()) - closed) < 4 * float(empirical.std()) / math.sqrt(reps)
    # iterative backend: the same probabilities
    it = HodgeDecomposition(ops, backend="iterative", rank=2)
    p_it = HodgeSpectralMask(
        0.3, hodge=it, perturb=("harmonic",), preserve=("gradient",), fit_only=True
    )(Data(x_2=x.view(-1, 1))).drop_prob
    torch.testing.assert_close(p_it, p, atol=1e-6, rtol=0)


def test_spectral_mask_rank_two_bad_input_and_repr():
    ops = torus()  # N2 = 24
    hodge = HodgeDecomposition(ops, rank=2)
    mask = HodgeSpectralMask(0.3, hodge=hodge, generator=0)
    with pytest.raises(ValueError, match="has 36 rows, but a single Data holds one rank-2 "
                       "signal of N2 = 24 rows"):
        mask(Data(x_2=torch.ones(36, 1)))
    batch = Batch.from_data_list([Data(x_2=torch.ones(24, 1)), Data(x_2=torch.ones(23, 1))])
    with pytest.raises(ValueError, match=r"expected num_graphs \* N2 = 2 \* 24 = 48"):
        mask(batch)
    pre = HodgeSpectralMask(0.3, hodge=hodge, fit_only=True)
    with pytest.raises(ValueError, match="has 30 rows, but a single Data holds one rank-2"):
        pre(Data(x_2=torch.ones(30, 1)))
    assert repr(pre) == (
        "HodgeSpectralMask(budget=0.3, perturb=('gradient',), preserve=('curl', 'harmonic'), "
        "attr='x_2', prob_attr='drop_prob', fit_only=True)"
    )
    with pytest.raises(ValueError, match=r"\[N2\] or \[S, N2\] with N2 = 24 \(the complex's "
                       r"number of triangles\)"):
        optimize_drop_probabilities(torch.ones(3, 36), hodge, 0.3)


def test_contrastive_views_of_triangle_signals():
    """ContrastiveViews with a rank-2 spectral mask: views of x_2 through a DataLoader, the
    rank-2 Hodge parts of the originals, attr taken from the mask."""
    from torch_geometric.loader import DataLoader

    from topo_contrastive.transforms import ContrastiveViews

    ops = torus()
    hodge = HodgeDecomposition(ops, rank=2)
    n2 = ops.num_triangles
    signals = torch.randn(6, n2, generator=torch.Generator().manual_seed(3))
    views = ContrastiveViews(HodgeSpectralMask(0.3, hodge=hodge, generator=0))
    assert views.attr == "x_2"
    data = views.fit([Data(x_2=s.view(-1, 1)) for s in signals])
    batch = next(iter(DataLoader([views(d) for d in data], batch_size=6)))
    assert batch.x_2_view1.shape == (6 * n2, 1) and batch.hodge_parts.shape == (6 * n2, 3)
    parts = hodge(signals)
    torch.testing.assert_close(batch.hodge_parts[:, 2].view(6, n2), parts.harmonic)
    dropped = batch.x_2_view1 == 0
    assert torch.equal(batch.x_2_view1[~dropped], batch.x_2[~dropped])
    with pytest.raises(
        ValueError, match=r"`data.x_2` has 30 rows, but a single Data holds one rank-2 signal"
    ):
        views(Data(x_2=torch.ones(30, 1)))
