"""``hodge_cosines`` and ``weights_from_cosines``: the weights of ``hodge_negative_weights``
from the cosines of a whole dataset, computed chunk by chunk without every sample's parts."""

from __future__ import annotations

import pytest
import torch

from topo_contrastive import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.losses import hodge_cosines, hodge_negative_weights, weights_from_cosines


def _hodge() -> HodgeDecomposition:
    # a filled square with a diagonal and a hole: gradient, curl and harmonic flows
    return HodgeDecomposition(
        ComplexOperators.from_simplices(
            [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3], [3, 4], [4, 5], [5, 6], [3, 6], [1, 5]],
            triangles=[[0, 1, 2], [0, 2, 3]],
        )
    )


def _flows(hodge: HodgeDecomposition, S: int = 9, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(S, hodge.num_simplices, generator=g, dtype=torch.float64)
    x[2] = 0.0  # an all-zero flow
    x[4] = hodge(x[5:6])[0][0]  # a pure gradient flow: curl and harmonic parts zero
    return x


@pytest.mark.parametrize("chunk", [None, 1, 4])
@pytest.mark.parametrize("gamma", [(1.0, 1.0, 1.0), (0.0, 1.0, 2.0)])
def test_weights_equal_those_of_the_parts(chunk, gamma):
    hodge = _hodge()
    x = _flows(hodge)
    parts = torch.stack(list(hodge(x)))  # [3, S, N1]
    cos = hodge_cosines(hodge, x, chunk_size=chunk)
    assert cos.shape == (3, 9, 9) and cos.dtype == torch.float64
    torch.testing.assert_close(
        weights_from_cosines(cos, gamma), hodge_negative_weights(parts, gamma),
        rtol=0, atol=1e-12,
    )  # fmt: skip
    # a batch: its rows and columns of the dataset's cosines
    idx = torch.tensor([7, 4, 0, 2, 5])
    torch.testing.assert_close(
        weights_from_cosines(cos[:, idx][:, :, idx], gamma),
        hodge_negative_weights(parts[:, idx], gamma), rtol=0, atol=1e-12,
    )  # fmt: skip


def test_cosines_of_hand_built_flows():
    hodge = _hodge()
    x = _flows(hodge)
    cos = hodge_cosines(hodge, x.float())  # float32 flows: float64 cosines
    assert cos.dtype == torch.float64
    torch.testing.assert_close(cos, cos.transpose(1, 2), rtol=0, atol=0)
    # a zero component has cosine 0 with everything, itself included (CD = 1)
    assert torch.equal(cos[:, 2], torch.zeros(3, 9, dtype=torch.float64))
    assert torch.equal(cos[1:, 4], torch.zeros(2, 9, dtype=torch.float64))
    # the gradient part of flow 4 is that of flow 5: cosine 1
    assert float(cos[0, 4, 5]) == pytest.approx(1.0, abs=1e-6)
    diag = cos.diagonal(dim1=1, dim2=2)  # 1 for every non-zero component
    assert torch.allclose(diag[:, [0, 1, 3, 5]], torch.ones(3, 4, dtype=torch.float64))


def test_the_rows_of_one_rank_against_the_whole_batch():
    # a rank's anchors are rows lo..hi of the global batch, its own column at lo + i
    hodge = _hodge()
    cos = hodge_cosines(hodge, _flows(hodge))
    full = weights_from_cosines(cos)
    torch.testing.assert_close(weights_from_cosines(cos[:, 3:6], anchor_offset=3), full[3:6])
    outside = weights_from_cosines(cos[:, :2, 2:], anchor_offset=None)  # all are negatives
    assert outside.shape == (2, 7)
    assert torch.allclose(outside.mean(dim=1), torch.ones(2, dtype=torch.float64))


def test_bad_input_is_refused_by_name():
    hodge = _hodge()
    x = _flows(hodge)
    with pytest.raises(TypeError, match="`flows`"):
        hodge_cosines(hodge, x.long())
    with pytest.raises(ValueError, match=r"`flows` must have shape \[S, N1\]"):
        hodge_cosines(hodge, x[0])
    bad = x.clone()
    bad[1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"`flows` contains NaN or inf values \(sample 1;"):
        hodge_cosines(hodge, bad)
    with pytest.raises(ValueError, match="chunk_size"):
        hodge_cosines(hodge, x, chunk_size=0)
    cos = hodge_cosines(hodge, x)
    with pytest.raises(ValueError, match=r"\[3, B, M\]"):
        weights_from_cosines(cos[:2])
    with pytest.raises(TypeError, match="`cosines`"):
        weights_from_cosines(cos.numpy())
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        weights_from_cosines(cos * 2)
    with pytest.raises(ValueError, match="at least one negative"):
        weights_from_cosines(cos[:, :1, :1])
    with pytest.raises(ValueError, match=r"no anchors \(B = 0\)"):
        weights_from_cosines(cos[:, :0])
    with pytest.raises(ValueError, match="anchor_offset"):
        weights_from_cosines(cos[:, :3], anchor_offset=7)
