# ruff: noqa: E501  (the case table keeps one case per line)
"""The command line on a data file of many complexes: ``pretrain``, ``embed`` and ``evaluate``
end to end, the other commands refusing it by name."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from tests._commands import main
from tests._many_complexes import many_complexes
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.evaluation.probe import probe_splits
from topo_contrastive.io import load_encoder
from topo_contrastive.training import ExperimentData, embed, load_data_file
from topo_contrastive.training.embeddings import read_embeddings


def _data(path):
    return ExperimentData.from_dataset(load_data_file(path, path.parent / "data"), "networks")

FLAGS = ["--threads", "1", "--no-progress"]


def _run(words):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = main([str(w) for w in words])
        except SystemExit as stop:
            status = stop.code
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """12 labelled samples, each on its own complex, in one file; pre-trained once."""
    root = tmp_path_factory.mktemp("cli_many")
    path = root / "networks.npz"
    EdgeFlows.write_npz(path, many_complexes(12, seed=3, cells=True),
                        sample_ids=[f"net-{i}" for i in range(12)])  # fmt: skip
    status, _, err = _run(["pretrain", "--data-file", path, "--config", "SSCL_Spec",
                           "--epochs", "1", "--hidden-channels", "8", "--out", root / "pre",
                           "--data-root", root / "data", *FLAGS])  # fmt: skip
    assert status == 0, err
    return {"root": root, "path": path, "checkpoint": root / "pre" / "encoder.pt", "err": err}


def test_pretrain_reads_many_complexes_with_the_basis_free_readout(run):
    assert "basis-free HodgeReadout" in run["err"]
    assert "on networks (1 epoch" in run["err"]
    record = json.loads((run["root"] / "pre" / "pretrain.json").read_text())
    assert record["complete"] and record["data_layout"] == "many complexes"
    assert record["samples"] == 12 and len(record["losses"]) == 1
    encoder, meta = load_encoder(run["checkpoint"])
    assert meta["architecture"]["readout_options"]["basis_free"] is True
    assert encoder.out_channels == 3 * 8  # the mean and the two energies of every channel


def test_embed_gives_each_sample_its_own_complexs_embedding(run, tmp_path):
    status, _, err = _run(["embed", "--data-file", run["path"], "--checkpoint",
                           run["checkpoint"], "--out", tmp_path, "--batch-size", "5", *FLAGS])  # fmt: skip
    assert status == 0, err
    got = read_embeddings(tmp_path)
    assert got["embeddings"].shape == (12, 24)
    assert got["sample_ids"].tolist() == [f"net-{i}" for i in range(12)]
    assert got["labels"].tolist() == [i % 2 for i in range(12)]
    # each sample alone on its complex: the batched (block-diagonal) run gives the same rows
    encoder, _ = load_encoder(run["checkpoint"])
    data = _data(run["path"])
    with torch.no_grad():
        for i in range(12):
            one = Batch.from_data_list([data.dataset[i]])
            h = encoder(one.x_1, one.laplacians(), one.batch_1)[0].numpy()
            np.testing.assert_allclose(got["embeddings"][i], h, rtol=1e-5, atol=1e-6)


def test_evaluate_probes_the_encoder_and_the_references(run, tmp_path):
    out = tmp_path / "eval.json"
    status, printed, err = _run(["evaluate", "--data-file", run["path"], "--checkpoint",
                                 run["checkpoint"], "--seeds", "2", "--out", out, *FLAGS])  # fmt: skip
    assert status == 0, err
    summary = json.loads(out.read_text())
    assert summary["metadata"]["data_layout"] == "many complexes"
    assert [r["row"] for r in summary["references"]["rows"]] == [
        "encoder", "untrained", "energy fractions", "length, total flow", "fractions + length",
        "fractions + length, products",
    ]  # fmt: skip
    # the encoder's row is the probe of its embeddings on the same splits
    encoder, _ = load_encoder(run["checkpoint"])
    data = _data(run["path"])
    want = probe_splits(embed(encoder, data), data, [0, 1], probe="ridge")
    assert [r["test_accuracy"] for r in summary["splits"]] == [r["test_accuracy"] for r in want]
    assert "energy fractions" in printed and "energy fractions" in (tmp_path / "eval.md").read_text()


def test_fine_tune_and_the_supervised_row_run_on_many_complexes(run, tmp_path):
    status, printed, err = _run(["evaluate", "--data-file", run["path"], "--checkpoint",
                                 run["checkpoint"], "--seeds", "1", "--fine-tune",
                                 "--supervised", "--no-references", *FLAGS])  # fmt: skip
    assert status == 0, err
    assert "fine-tuned encoder" in printed and "supervised SCNN" in printed


@pytest.mark.parametrize(
    "words, message",
    [
        (["predict-next", "--checkpoint", "{ckpt}"], "`predict-next` reads one complex per --data-file"),
        (["label-efficiency", "--out", "{tmp}/le"], "`label-efficiency` reads one complex per --data-file"),
        (["many-complexes", "--out", "{tmp}/le"], "`many-complexes` reads one complex per --data-file"),
    ],
    ids=["predict-next", "label-efficiency", "many-complexes"],
)  # fmt: skip
def test_what_needs_one_complex_is_refused_by_name(run, tmp_path, words, message):
    fill = {"{ckpt}": str(run["checkpoint"]), "{tmp}/le": str(tmp_path / "le")}
    argv = [fill.get(w, w) for w in words] + ["--data-file", run["path"], *FLAGS]
    status, _, err = _run(argv)
    assert status == 2 and message in err, err
    assert "many complexes" in err or "one complex" in err


def test_a_checkpoint_tied_to_one_complex_is_refused(run, tmp_path):
    from topo_contrastive import ComplexOperators, HodgeDecomposition
    from topo_contrastive.io import save_encoder
    from topo_contrastive.nn import SCNN, HodgeReadout

    ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
    tied = SCNN(hidden_channels=4, readout=HodgeReadout(HodgeDecomposition(ops)))
    save_encoder(tied, tmp_path / "tied.pt", complex=ops)
    status, _, err = _run(["embed", "--data-file", run["path"], "--checkpoint",
                           tmp_path / "tied.pt", "--out", tmp_path / "emb", *FLAGS])  # fmt: skip
    assert status == 2 and "tied to the one complex it was pre-trained on" in err, err
    assert not (tmp_path / "emb").exists()
