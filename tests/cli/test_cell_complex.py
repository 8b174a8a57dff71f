"""The command line on a network whose 2-cells are the faces of its drawing: a street grid
with a hole (beta_1 = 1) and the same grid fully filled (beta_1 = 0), as ``.npz`` files
with 2-cells as node cycles, through ``pretrain --data-file`` and ``embed``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests._cell_complexes import street_grid
from tests._commands import main
from topo_contrastive import ComplexOperators, HodgeDecomposition, io
from topo_contrastive.complex import planar_faces

N = 5  # a 5 x 5 grid of junctions; the middle one is removed: a block of 2 x 2 squares


def _grid_with_a_hole() -> tuple[np.ndarray, np.ndarray]:
    edges, pos = street_grid(N)
    mid = N * (N // 2) + N // 2
    edges = [e for e in edges if mid not in e]
    keep = np.array([i for i in range(N * N) if i != mid])
    new = np.full(N * N, -1)
    new[keep] = np.arange(keep.size)
    return new[np.array(edges)], pos[keep]


def _routes(rng: np.random.Generator) -> tuple[list[list[int]], list[int]]:
    """Routes from the left column to the right one, around the hole above (label 1) or
    below it (label 0): up or down to the top or bottom row, along it, then to the target."""
    node = {}
    for y in range(N):
        for x in range(N):
            if (x, y) != (N // 2, N // 2):
                node[x, y] = len(node)
    paths, labels = [], []
    for k in range(40):
        above = k % 2
        y0, y1 = int(rng.integers(N)), int(rng.integers(N))
        row = N - 1 if above else 0
        steps = [(0, y) for y in range(y0, row, 1 if row > y0 else -1)]
        steps += [(x, row) for x in range(N)]
        steps += [(N - 1, y) for y in range(row, y1, 1 if y1 > row else -1)][1:] + [(N - 1, y1)]
        steps = list(dict.fromkeys(steps))  # no junction twice
        paths.append([node[s] for s in steps])
        labels.append(above)
    return paths, labels


@pytest.fixture(scope="module")
def grids(tmp_path_factory):
    root = tmp_path_factory.mktemp("cell_complex_cli")
    edges, pos = _grid_with_a_hole()
    paths, labels = _routes(np.random.default_rng(0))
    out = {"root": root}
    for name, limit in (("holed", 4), ("filled", None)):
        faces = planar_faces(edges, pos, max_length=limit)
        np.savez(
            root / f"{name}.npz",
            edge_index=edges.T,
            cell_nodes=np.concatenate(faces),
            cell_ptr=np.cumsum([0] + [len(f) for f in faces]),
            pos=pos,
            path_nodes=np.concatenate(paths),
            path_ptr=np.cumsum([0] + [len(p) for p in paths]),
            labels=np.array(labels),
        )
        ops = ComplexOperators.from_cells(edges, faces, pos.shape[0])
        out[name] = {"file": root / f"{name}.npz", "ops": ops, "faces": faces}
    return out


def test_the_grids(grids):
    holed, filled = grids["holed"], grids["filled"]
    assert len(holed["faces"]) == 12 and not holed["ops"].is_simplicial
    assert sorted(map(len, filled["faces"])) == [4] * 12 + [8]  # the hole, filled
    assert HodgeDecomposition(holed["ops"]).dims == {"gradient": 23, "curl": 12, "harmonic": 1}
    assert HodgeDecomposition(filled["ops"]).dims["harmonic"] == 0


@pytest.mark.parametrize(("name", "beta_1"), [("holed", 1), ("filled", 0)])
def test_pretrain_and_embed_a_data_file_with_polygon_faces(grids, tmp_path, name, beta_1):
    file, root = grids[name]["file"], grids["root"]
    flags = ["--data-root", str(root / "data"), "--no-progress"]
    argv = ["pretrain", "--data-file", str(file), "--config", "SSCL_Spec", "--epochs", "1",
            "--hidden-channels", "8", "--out", str(tmp_path / "run"), *flags]  # fmt: skip
    assert main(argv) == 0
    log = json.loads((tmp_path / "run" / "pretrain.json").read_text())
    # a data file's default edition: the HodgeReadout, whose harmonic block is beta_1 x 8
    assert (log["edition"], log["config"]["readout"]) == ("hodge", "hodge")
    assert np.isfinite(log["final_loss"])
    argv = ["embed", "--checkpoint", str(tmp_path / "run" / "encoder.pt"), "--data-file",
            str(file), "--out", str(tmp_path / "emb"), *flags]  # fmt: skip
    assert main(argv) == 0
    emb = np.load(tmp_path / "emb" / "embeddings.npz")["embeddings"]
    assert emb.shape == (40, 8 + 8 * beta_1) and np.isfinite(emb).all()
    # the encoder saved by pretrain embeds the flows of the file as the loaded one does
    from topo_contrastive.training import ExperimentData, load_data_file
    from topo_contrastive.training.loop import embed

    data = ExperimentData.from_dataset(load_data_file(file, root / "data"))
    enc, _ = io.load_encoder(tmp_path / "run" / "encoder.pt", complex=data.hodge)
    assert enc.readout.beta1 == beta_1
    assert not data.complex.is_simplicial
    np.testing.assert_array_equal(emb, embed(enc, data).astype(np.float32))
