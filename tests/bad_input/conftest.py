"""Shared objects of the bad-input suite: a small complex, an edge-flow file, a checkpoint.

Built once per session (a few hundred milliseconds), read-only for the cases; a case that
writes uses its own ``tmp_path``.
"""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
import torch

from topo_contrastive import ComplexOperators
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.io import save_encoder
from topo_contrastive.nn import SCNN

#: triangle [0, 1, 2] filled, square [0, 2, 3, 4] open: N0 = 5, N1 = 6, N2 = 1, beta_1 = 1
EDGES = [[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [0, 4]]
TRIANGLES = [[0, 1, 2]]


def small_complex() -> ComplexOperators:
    return ComplexOperators.from_simplices(EDGES, TRIANGLES)


def expect(call, exc, words):
    """``call()`` raises ``exc`` whose message matches every regex of ``words`` (a str or a
    tuple of them, case-insensitive); returns the message."""
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    for word in (words,) if isinstance(words, str) else words:
        assert re.search(word, message, re.IGNORECASE), f"{word!r} not in {message!r}"
    return message


def run_cli(words):
    """``topo_contrastive.cli.main(words)`` in this process: ``(status, stderr)``; argparse's
    refusals (``SystemExit(2)``) give status 2 as well."""
    from tests._commands import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main([str(w) for w in words])
        except SystemExit as stop:
            status = stop.code
    return status, err.getvalue()


@pytest.fixture(scope="session")
def ops() -> ComplexOperators:
    return small_complex()


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """``{"data": labelled edge-flow file, "unlabelled": one without labels, "checkpoint":
    encoder.pt of an SCNN on the complex, "folder": a plain folder, "text": a text file}``."""
    root = tmp_path_factory.mktemp("bad_input")
    ops = small_complex()
    rng = np.random.default_rng(0)
    flows = rng.standard_normal((40, ops.num_edges)).astype(np.float32)
    labels = np.arange(40) % 2
    EdgeFlows.write_npz(root / "data.npz", ops, flows, labels=labels)
    EdgeFlows.write_npz(root / "unlabelled.npz", ops, flows)
    torch.manual_seed(0)
    save_encoder(SCNN(hidden_channels=4, num_layers=1), root / "encoder.pt", complex=ops)
    (root / "folder").mkdir()
    (root / "text.txt").write_text("not a data file\n")
    return {
        "root": root,
        "data": root / "data.npz",
        "unlabelled": root / "unlabelled.npz",
        "checkpoint": root / "encoder.pt",
        "folder": root / "folder",
        "text": root / "text.txt",
    }
