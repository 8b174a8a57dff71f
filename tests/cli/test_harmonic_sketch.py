"""pretrain / evaluate / embed on a complex forced onto the sketch of the harmonic space by
``--harmonic-budget``: they run, say their choice in one line, and keep the harmonic row."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests._commands import main
from topo_contrastive import ComplexOperators
from topo_contrastive.datasets import EdgeFlows

SIDE = 9  # nodes per side of the grid; every other square filled: beta_1 = 32


def _grid() -> ComplexOperators:
    idx = np.arange(SIDE * SIDE).reshape(SIDE, SIDE)
    edges = [(idx[i, j], idx[i, j + 1]) for i in range(SIDE) for j in range(SIDE - 1)]
    edges += [(idx[i, j], idx[i + 1, j]) for i in range(SIDE - 1) for j in range(SIDE)]
    tris = []
    for i in range(SIDE - 1):
        for j in range(SIDE - 1):
            if (i + j) % 2 == 0:  # a diagonal and its two triangles
                a, b, c, d = idx[i, j], idx[i, j + 1], idx[i + 1, j], idx[i + 1, j + 1]
                edges.append((a, d))
                tris += [(a, b, d), (a, c, d)]
    return ComplexOperators.from_simplices(edges, tris, SIDE * SIDE)


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("sketch_cli")
    ops = _grid()
    rng = np.random.default_rng(0)
    flows = rng.standard_normal((60, ops.num_edges)).astype(np.float32)
    labels = np.arange(60) % 2
    flows[labels == 1, :20] += 1.0  # something to tell apart
    path = root / "grid.npz"
    EdgeFlows.write_npz(path, ops, flows, labels=labels)
    return root, path, ops


def _common(root):
    return ["--data-root", str(root / "data"), "--no-progress", "--threads", "1"]


def _budget(ops, k: int) -> str:
    """``--harmonic-budget`` in MiB that holds building ``k`` directions of N1 entries, not
    k + 1 (the matrix, its cached copy, the chunk of projections and 13 [N1] arrays)."""
    return repr((8 * ops.num_edges * (2 * k + 5 * min(k, 32) + 13) + 4) / 2**20)


def test_commands_on_the_sketch_path(grid_file, tmp_path, capsys):
    root, path, ops = grid_file
    from topo_contrastive import HodgeDecomposition

    assert HodgeDecomposition(ops).dims["harmonic"] == 32
    budget = ["--harmonic-budget", _budget(ops, 12)]
    run = tmp_path / "run"
    argv = ["pretrain", "--data-file", str(path), "--config", "SSCL_Spec", "--epochs", "1",
            "--hidden-channels", "8", "--out", str(run), *budget, *_common(root)]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    line = "harmonic features: sketch of k = 12 directions (beta_1 = 32 too large for a basis"
    assert sum(line in x for x in err.splitlines()) == 1
    meta = torch.load(run / "encoder.pt", weights_only=True)["metadata"]
    opts = meta["architecture"]["readout_options"]
    assert (opts["harmonic"], opts["sketch_dim"]) == ("sketch", 12)

    out = tmp_path / "eval.json"
    argv = ["evaluate", "--checkpoint", str(run / "encoder.pt"), "--data-file", str(path),
            "--seeds", "2", "--out", str(out), *budget, *_common(root)]  # fmt: skip
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert sum(line in x for x in cap.err.splitlines()) == 1
    assert "harmonic sketch G^T P_H x (k = 12 of beta_1 = 32)" in cap.out
    assert "omitted" not in cap.out
    refs = json.loads(out.read_text())["references"]
    harmonic = [r for r in refs["rows"] if r["row"] == "harmonic"]
    assert len(harmonic) == 1 and harmonic[0]["features"] == 12 and not refs["omitted"]

    emb = tmp_path / "emb"
    argv = ["embed", "--checkpoint", str(run / "encoder.pt"), "--data-file", str(path),
            "--out", str(emb), *_common(root)]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert (
        "harmonic features: sketch of k = 12 directions (beta_1 = 32), as recorded in the "
        "checkpoint\n" in err
    )
    assert np.load(emb / "embeddings.npz")["embeddings"].shape == (60, 8 + 12 * 8)


def test_default_budget_keeps_the_exact_basis(grid_file, tmp_path, capsys):
    root, path, _ = grid_file
    run = tmp_path / "run"
    argv = ["pretrain", "--data-file", str(path), "--config", "SCL", "--epochs", "1",
            "--hidden-channels", "4", "--out", str(run), *_common(root)]  # fmt: skip
    assert main(argv) == 0
    assert "harmonic features: exact basis (beta_1 = 32)\n" in capsys.readouterr().err
    argv = ["evaluate", "--checkpoint", str(run / "encoder.pt"), "--data-file", str(path),
            "--seeds", "1", *_common(root)]  # fmt: skip
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "harmonic features: exact basis (beta_1 = 32)\n" in cap.err
    assert "harmonic coordinates U_H^T x (beta_1 = 32)" in cap.out


def test_a_budget_without_room_names_the_option(grid_file, tmp_path, capsys):
    root, path, ops = grid_file
    argv = ["pretrain", "--data-file", str(path), "--config", "SCL", "--epochs", "1",
            "--out", str(tmp_path / "run"), "--harmonic-budget", _budget(ops, 0),
            *_common(root)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "topo-contrastive: error: the harmonic feature budget of" in err
    assert "--harmonic-budget MIB" in err and "--readout mean" in err
    assert not (tmp_path / "run" / "encoder.pt").exists()
    with pytest.raises(SystemExit):
        main(["pretrain", "--data-file", str(path), "--config", "SCL", "--out", "x",
              "--harmonic-budget", "0"])  # fmt: skip
    assert "expected a size in MiB" in capsys.readouterr().err
