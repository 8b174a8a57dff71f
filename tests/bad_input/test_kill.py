"""Interruption safety: writers killed (SIGKILL) at random moments, 20 times each.

Each writer runs in a child process started by a forkserver that has imported torch and the
library (so a start costs milliseconds, not an import), writes over and over into one
folder, and is killed at a seeded random moment after it is ready. The folder must then be
complete (the file or marker present and fully readable, checksums right) or clearly
incomplete (no marker: readers refuse it), never a readable half file; after a clean run
that removes the stale temporaries, no temporary is left.

Marked ``slow`` (2-5 minutes on 2 shared cores; run with ``pytest -m slow``).
"""

from __future__ import annotations

import multiprocessing
import random
import time
from pathlib import Path

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.slow

KILLS = 20
SEED = 26


def _ops():
    from topo_contrastive import ComplexOperators

    return ComplexOperators.from_simplices(
        [[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [0, 4]], [[0, 1, 2]]
    )


# ---------------------------------------------------------------------------- the writers
def _save_encoder(folder: str, ready) -> None:
    from topo_contrastive.io import save_encoder
    from topo_contrastive.nn import SCNN

    ops = _ops()
    encoder = SCNN(hidden_channels=256, num_layers=4)  # ~5 MB of weights
    ready.set()
    for i in range(10**6):
        with torch.no_grad():
            encoder.convs[0].weight.add_(0.01)
        save_encoder(encoder, Path(folder) / "encoder.pt", complex=ops, step=i)
        time.sleep(0.05)


def _embed(folder: str, ready) -> None:
    from topo_contrastive.training.embeddings import write_embeddings

    emb = np.random.default_rng(0).standard_normal((4000, 32)).astype(np.float32)
    ready.set()
    for i in range(10**6):
        write_embeddings(folder, emb + i, labels=np.arange(4000) % 3, metadata={"step": i})
        time.sleep(0.1)  # a finished folder, for a kill to find too


def _dataset(folder: str, ready) -> None:
    from topo_contrastive.datasets import EdgeFlows

    ops = _ops()
    flows = np.random.default_rng(0).standard_normal((3000, ops.num_edges))
    EdgeFlows.write_npz(Path(folder) / "raw" / "edge_flows.npz", ops, flows)
    ready.set()
    while True:
        EdgeFlows(folder, force_reload=True, log=False)


# ---------------------------------------------------------------------------- the checks
def _check_encoder(folder: Path) -> str:
    from topo_contrastive.io import load_encoder

    path = folder / "encoder.pt"
    if not path.exists():
        return "incomplete"
    load_encoder(path, complex=_ops())  # raises on a half or edited file (digest)
    return "complete"


def _check_embed(folder: Path) -> str:
    from topo_contrastive.training.embeddings import read_embeddings

    if not (folder / "COMPLETE").exists():
        with pytest.raises(ValueError, match="no finished embeddings"):
            read_embeddings(folder)
        return "incomplete"
    done = read_embeddings(folder)
    step = done["metadata"]["step"]
    base = np.random.default_rng(0).standard_normal((4000, 32)).astype(np.float32)
    assert np.array_equal(done["embeddings"], base + step)  # npz and json of the same run
    return "complete"


def _check_dataset(folder: Path) -> str:
    from topo_contrastive.datasets import EdgeFlows

    processed = list((folder / "processed").glob("*.pt")) if (folder / "processed").exists() else []
    ds = EdgeFlows(str(folder), log=False)  # loads a complete file or processes again
    assert len(ds) == 3000
    flows = np.random.default_rng(0).standard_normal((3000, 6)).astype(np.float32)
    assert np.array_equal(ds[2999].x_1.view(-1).numpy(), flows[2999])
    return "complete" if processed else "incomplete"


WRITERS = {
    "save_encoder": (_save_encoder, _check_encoder),
    "embed": (_embed, _check_embed),
    "dataset": (_dataset, _check_dataset),
}


@pytest.fixture(scope="module")
def context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "numpy", "topo_contrastive", __name__])
    return ctx


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.startswith(".") and p.name.endswith(".tmp")]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_killed_writer_leaves_a_complete_or_clearly_incomplete_folder(
    context, tmp_path, monkeypatch, writer
):
    from topo_contrastive._utils import files as _files

    write, check = WRITERS[writer]
    rng = random.Random(f"{SEED}-{writer}")
    outcomes = []
    for kill in range(KILLS):
        ready = context.Event()
        child = context.Process(target=write, args=(str(tmp_path), ready), daemon=True)
        child.start()
        assert ready.wait(60), f"{writer} did not start"
        time.sleep(rng.uniform(0.0, 0.6))
        child.kill()  # SIGKILL
        child.join(10)
        assert child.exitcode == -9, f"{writer} kill {kill}: exit code {child.exitcode}"
        outcomes.append(check(tmp_path))
    # the temporaries of the killed writers go with the next run in the folder
    monkeypatch.setattr(_files, "_STALE_MIN_AGE_S", 0.0)
    for folder in {tmp_path, *(p.parent for p in _temporaries(tmp_path))}:
        _files.remove_stale_temporaries(folder)
    assert _temporaries(tmp_path) == []
    assert len(outcomes) == KILLS
    print(f"{writer}: {outcomes.count('complete')} complete, {outcomes.count('incomplete')} "
          "clearly incomplete")
