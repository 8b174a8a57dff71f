"""The commands' runs called from Python (:mod:`topo_contrastive.cli._runs`)."""

from __future__ import annotations

import json

import pytest
import torch

from topo_contrastive import io
from topo_contrastive.cli._runs import (
    embed_to_folder,
    evaluate_saved,
    pretrain_to_folder,
    process_group,
    require_contrastive,
)
from topo_contrastive.training import get_config


def test_pretrain_evaluate_embed_from_python(tiny_data, tmp_path):
    config = get_config("SCL", "trajectory", hidden_channels=8)
    with process_group("cpu") as group:  # a single process: nothing to set up
        assert (group.rank, group.world_size, group.distributed) == (0, 1, False)
        seen = []
        result = pretrain_to_folder(
            tiny_data, config, tmp_path, seed=1, epochs=2, group=group,
            record={"note": "from python"}, progress=lambda e, loss: seen.append(e),
        )  # fmt: skip
    assert len(seen) == 2 and len(result.losses) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["COMPLETE", "encoder.pt", "pretrain.json"]
    log = json.loads((tmp_path / "pretrain.json").read_text())
    assert log["complete"] is True and log["note"] == "from python" and log["seed"] == 1
    # the epochs that ran, recorded once: the configuration's field says 2, not its preset 20
    assert config.epochs != 2 and log["config"]["epochs"] == log["epochs"] == 2
    saved = torch.load(tmp_path / "encoder.pt", weights_only=True)["metadata"]
    assert saved["epochs"] == 2
    encoder, meta = io.load_encoder(tmp_path / "encoder.pt", complex=tiny_data.hodge)
    out = tmp_path / "eval.json"
    summary = evaluate_saved(encoder, tiny_data, [0, 1], checkpoint="x.pt", metadata=meta, out=out)
    assert json.loads(out.read_text())["mean_accuracy"] == pytest.approx(summary["mean_accuracy"])
    assert len(summary["splits"]) == 2 and summary["checkpoint"] == "x.pt"
    done = embed_to_folder(tmp_path / "encoder.pt", tiny_data, tmp_path / "emb", batch_size=7)
    assert done.shape[0] == tiny_data.num_samples and done.encoder["config"] == "SCL"
    assert sorted(done.paths) == ["csv", "json", "npz"] and done.paths["npz"].is_file()


def test_require_contrastive_refuses_the_supervised_row(tiny_data, tmp_path):
    with pytest.raises(ValueError, match="supervised baseline"):
        require_contrastive(get_config("SCNN", "trajectory"))
    with pytest.raises(ValueError, match="supervised baseline"):
        pretrain_to_folder(tiny_data, get_config("SCNN", "trajectory"), tmp_path)
    assert not any(tmp_path.iterdir())  # refused before any write


def test_evaluate_saved_reports_reference_rows_and_writes_markdown(tiny_data, tmp_path):
    from topo_contrastive.cli._runs import markdown_path
    from topo_contrastive.evaluation.probe import probe_splits, reference_features

    config = get_config("SCL", "trajectory", hidden_channels=8)
    pretrain_to_folder(tiny_data, config, tmp_path, seed=2, epochs=1)
    encoder, meta = io.load_encoder(tmp_path / "encoder.pt", complex=tiny_data.hodge)
    out = tmp_path / "eval.json"
    seen = []
    summary = evaluate_saved(
        encoder, tiny_data, [0, 1], metadata=meta, out=out,
        reference_progress=lambda row, r: seen.append((row, r["split_seed"])),
    )  # fmt: skip
    refs = summary["references"]
    rows = {r["row"]: r for r in refs["rows"]}
    assert list(rows) == ["encoder", "untrained", "raw", "abs", "harmonic"]
    assert rows["encoder"]["mean_accuracy"] == summary["mean_accuracy"]
    assert rows["encoder"]["splits"] == summary["splits"]
    assert "seed 2" in rows["untrained"]["label"]  # the checkpoint's pre-training seed
    raw = probe_splits(reference_features(tiny_data, "raw"), tiny_data, [0, 1], probe="ridge")
    assert rows["raw"]["splits"] == raw  # same splits, same probe
    assert seen == [(row, s) for row in ("untrained", "raw", "abs", "harmonic") for s in (0, 1)]
    written = json.loads(out.read_text())
    assert written["references"]["below"] == refs["below"]
    assert written["references"]["rows"][2]["mean_accuracy"] == pytest.approx(
        rows["raw"]["mean_accuracy"]
    )
    md = markdown_path(out)
    assert md == tmp_path / "eval.md" and md.is_file()
    text = md.read_text()
    assert "| raw flows |" in text and "leave-one-out" in text and refs["line"][1:] in text
    assert markdown_path(tmp_path / "x.md") == tmp_path / "x.md.md"
    # references=False: the summary of before, and no Markdown
    plain = evaluate_saved(encoder, tiny_data, [0], out=tmp_path / "plain.json", references=False)
    assert "references" not in plain and not (tmp_path / "plain.md").exists()


def test_evaluate_saved_needs_labels(tiny_data, tmp_path):
    import dataclasses


    encoder = tiny_data.encoder(get_config("SCL", "trajectory", hidden_channels=8))
    unlabelled = dataclasses.replace(tiny_data, labels=None)
    with pytest.raises(ValueError, match="needs labels"):
        evaluate_saved(encoder, unlabelled, [0], out=tmp_path / "e.json")
    assert not any(tmp_path.iterdir())


def test_embed_to_folder_default_batch_follows_the_complex_size(tiny_data, tmp_path, monkeypatch):
    # the default holds at most EMBED_ROWS edge rows per forward (a 1M-edge network needs
    # one sample at a time), and the batch size changes the memory, not the numbers
    import numpy as np

    import topo_contrastive.training.loop as loop

    config = get_config("SCL", "trajectory", hidden_channels=8)
    for sub in ("run", "a", "b"):
        (tmp_path / sub).mkdir()
    with process_group("cpu") as group:
        pretrain_to_folder(tiny_data, config, tmp_path / "run", seed=0, epochs=1, group=group)
    ckpt = tmp_path / "run" / "encoder.pt"
    fixed = embed_to_folder(ckpt, tiny_data, tmp_path / "a", batch_size=7)
    seen = []
    original = type(tiny_data).batch

    def spy(self, idx, *args, **kwargs):
        seen.append(len(idx))
        return original(self, idx, *args, **kwargs)

    monkeypatch.setattr(loop, "EMBED_ROWS", 3 * tiny_data.sizes[1])
    monkeypatch.setattr(type(tiny_data), "batch", spy)
    auto = embed_to_folder(ckpt, tiny_data, tmp_path / "b")
    assert max(seen) == 3 and sum(seen) == tiny_data.num_samples
    a = np.load(fixed.paths["npz"])["embeddings"]
    b = np.load(auto.paths["npz"])["embeddings"]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
