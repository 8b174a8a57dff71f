"""``drop_rows`` on many rows draws a chunk at a time on the CPU: the same masks and the same
generator state as one draw of every row, for one probability or one per row."""

from __future__ import annotations

import pytest
import torch

from topo_contrastive.transforms import _common


@pytest.mark.parametrize("per_row", [False, True])
def test_chunked_draws_are_the_draws_of_one_call(monkeypatch, per_row):
    rows = 1000
    x = torch.randn(rows, 2)
    p = torch.rand(rows, 1, generator=torch.Generator().manual_seed(1)) if per_row else 0.3
    whole_gen = torch.Generator().manual_seed(7)
    whole = _common.drop_rows(x, p, whole_gen)
    monkeypatch.setattr(_common, "DRAW_ROWS", 64)  # 16 chunks, the last of 40 rows
    chunk_gen = torch.Generator().manual_seed(7)
    chunked = _common.drop_rows(x, p, chunk_gen)
    assert torch.equal(chunked, whole)
    assert torch.equal(chunk_gen.get_state(), whole_gen.get_state())
    # a real mask: rows dropped whole (both channels), the others untouched
    dropped = (chunked == 0).all(dim=1)
    assert 0 < int(dropped.sum()) < rows
    assert torch.equal(chunked[~dropped], x[~dropped])
    assert x.data_ptr() != chunked.data_ptr()  # the input is not modified
