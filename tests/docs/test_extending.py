"""The "Extending the library" page (docs/extending.md): its code runs as written, the mask
draws with its stated probabilities and leaves the input alone, the layer is its formula,
and each example stays under 60 lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


@pytest.fixture(scope="module")
def namespace(tmp_path_factory):
    import os

    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 4
    assert all(len(b.strip().splitlines()) < 60 for b in (blocks[0], blocks[2]))
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("extending"))
    try:
        ns: dict = {"__name__": "extending"}
        for i, block in enumerate(blocks):
            exec(compile(block, f"extending.md[python {i}]", "exec"), ns)
    finally:
        os.chdir(here)
    return ns


def test_the_page_is_in_the_toctree():
    index = (PAGE.parent / "index.rst").read_text(encoding="utf-8")
    assert re.search(r"^\s+extending$", index, flags=re.M)


def test_the_mask_draws_its_probabilities_and_keeps_the_input(namespace):
    from torch_geometric.data import Data

    x = torch.tensor([[0.0], [1.0], [2.0], [4.0]])
    mask = namespace["MagnitudeMask"](budget=0.4, generator=3)
    p = mask.probabilities(x)  # mean |x| = 1.75
    torch.testing.assert_close(p, torch.tensor([[0.0], [0.4], [0.8], [1.6]]) / 1.75)
    assert float(mask.probabilities(10 * torch.eye(4)[:, :1]).max()) == 1.0  # clamped
    data = Data(x_1=x)
    kept = torch.stack([(mask(data.clone()).x_1 != 0).float() for _ in range(4000)]).mean(0)
    torch.testing.assert_close(kept[1:], 1 - p[1:], atol=0.03, rtol=0)  # Monte Carlo
    assert torch.equal(data.x_1, x)


def test_the_layer_is_its_formula_and_the_encoder_trains(namespace):
    from topo_contrastive import ComplexOperators

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]], [[0, 1, 2]])
    L = ops.laplacians(dtype=torch.float64)
    conv = namespace["HodgeConv"](2, 3).double()
    x = torch.randn(4, 2, dtype=torch.float64)
    lins = conv.lins
    want = lins[0](x) + L.down.to_dense() @ x @ lins[1].weight.T + (
        L.up.to_dense() @ x @ lins[2].weight.T)
    torch.testing.assert_close(conv(x, L), want)
    assert torch.isfinite(namespace["loss"])
