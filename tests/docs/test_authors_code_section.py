"""docs/authors_code_section.py: the reimplemented formulas of the authors' code against drawn
masks and hand-computed values, and the page's tables against the committed data file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "authors_code_section", ROOT / "docs" / "authors_code_section.py"
)
section = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(section)


def _problem(n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(3, n, n, generator=g, dtype=torch.float64)
    P = (a @ a.transpose(1, 2))[None]  # [1, 3, n, n], symmetric
    x = torch.randn(1, n, generator=g, dtype=torch.float64)
    p = torch.rand(1, n, generator=g, dtype=torch.float64)
    return x, p, P, g


def test_the_closed_forms_against_drawn_masks_and_each_other():
    x, p, P, g = _problem()
    d = torch.bernoulli(p.expand(100_000, -1), generator=g)
    r = x * d  # x - x'
    mc = torch.einsum("ti,kij,tj->k", r, P[0], r) / d.shape[0]
    lib = section.closed_form(x, p, P)[0]
    theirs = section.their_form(x, p, P, torch.ones_like(p, dtype=torch.bool))[0]
    assert torch.allclose(lib, mc, rtol=2e-2)
    assert not torch.allclose(theirs, mc, rtol=2e-2)
    # theirs differs by the diagonal only: sum_i P_ii x_i^2 ((1 - p)^2 / p - (1 - p))
    diag = P[0].diagonal(dim1=1, dim2=2) @ (x[0] ** 2 * ((1 - p[0]) ** 2 / p[0] - (1 - p[0])))
    torch.testing.assert_close(theirs - lib, diag)
    # a frozen entry counts as dropped (expected flow 0): the library's form at p_i = 1
    alive = torch.tensor([[True, False, True, True]])
    frozen = section.their_form(x, p, P, alive)
    at_one = section.their_form(x, torch.where(alive, p, 1.0), P, alive)
    torch.testing.assert_close(frozen, at_one)


def test_their_projection_meets_the_budget():
    v = torch.tensor([[0.9, 0.8, 0.7, -0.2, 0.0], [0.1, 0.2, 0.0, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    p = section.project(v, torch.tensor([1.0, 1.0], dtype=torch.float64), mask)
    assert abs(float(p[0].sum()) - 1.0) < 1e-3 and float(p[0, 3]) == 0.0 == float(p[0, 4])
    assert torch.equal(p[1], torch.tensor([0.1, 0.2, 0.0, 0.0, 0.0], dtype=torch.float64))


def test_the_page_shows_the_committed_numbers():
    data = ROOT / "docs" / "_data" / "authors_code"
    results = json.loads((data / "authors_code.json").read_text(encoding="utf-8"))
    text = section.table(results)
    assert (data / "authors_code.md").read_text(encoding="utf-8") == text
    page = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert "<!-- authors-code -->\n" + text + "<!-- /authors-code -->" in page
