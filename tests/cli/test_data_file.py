"""The command line on an edge-flow file of one's own: ``--data-file`` and ``embed``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests._commands import main
from tests._tiny import TINY_FLAGS, tiny_dataset
from topo_contrastive import io
from topo_contrastive.datasets import EdgeFlows
from topo_contrastive.training.configs import CONFIG_NAMES

#: how the two programs begin an error message
ERROR_PREFIXES = ("topo-contrastive: error:", "python -m experiments: error:")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The tiny trajectory task as a data file (labelled, with its split) and unlabelled."""
    root = tmp_path_factory.mktemp("cli_files")
    traj = tiny_dataset(root / "data" / "trajectories")
    ops = traj.complex
    paths = [p.tolist() for p in traj.paths()]
    masks = {"train": traj.train_mask, "val": traj.val_mask, "test": traj.test_mask}
    labelled = root / "traj.npz"
    EdgeFlows.write_npz(labelled, ops, paths=paths, labels=traj._data.y, pos=traj.pos, masks=masks)
    unlabelled = root / "walks.npz"
    ids = [f"walk-{i:03d}" for i in range(len(paths))]
    EdgeFlows.write_npz(unlabelled, ops, paths=paths, sample_ids=ids)
    return {"root": root, "labelled": labelled, "unlabelled": unlabelled, "ids": ids}


def _flags(root):
    # one torch thread: the default follows the idle cores, and a different thread count
    # changes the float reduction order (bit-for-bit comparisons below)
    return ["--data-root", str(root / "data"), "--no-progress", "--threads", "1"]


def _pretrain(files, out, *extra, config="SCL", data_file="unlabelled"):
    argv = [
        "pretrain",
        "--data-file",
        str(files[data_file]),
        "--config",
        config,
        "--epochs",
        "1",
        "--hidden-channels",
        "8",
        "--out",
        str(out),
        *extra,
        *_flags(files["root"]),
    ]
    return main(argv)


@pytest.mark.parametrize("config", [c for c in CONFIG_NAMES if c != "SCNN"])
def test_pretrain_on_a_data_file_with_every_row(files, tmp_path, config):
    assert _pretrain(files, tmp_path, config=config) == 0
    log = json.loads((tmp_path / "pretrain.json").read_text())
    assert log["dataset"] == "walks" and log["tuned_for"] == "ocean"
    assert log["config"]["name"] == config and np.isfinite(log["final_loss"])
    obj = torch.load(tmp_path / "encoder.pt", weights_only=True)
    assert obj["metadata"]["dataset"] == "walks"


def test_set_fields_and_hodge_readout(files, tmp_path):
    rc = _pretrain(
        files,
        tmp_path,
        "--set",
        "readout=hodge",
        "temperature=0.3",
        "K=1",
        config="SSCL_Spec",
        data_file="labelled",
    )
    assert rc == 0
    cfg = json.loads((tmp_path / "pretrain.json").read_text())["config"]
    assert (cfg["readout"], cfg["temperature"], cfg["K_down"], cfg["K_up"]) == ("hodge", 0.3, 1, 1)
    out = tmp_path / "emb"
    rc = main(
        [
            "embed",
            "--checkpoint",
            str(tmp_path / "encoder.pt"),
            "--data-file",
            str(files["labelled"]),
            "--out",
            str(out),
            *_flags(files["root"]),
        ]
    )
    assert rc == 0
    emb = np.load(out / "embeddings.npz")["embeddings"]
    assert emb.shape[0] == 40 and emb.shape[1] > 8  # the Hodge readout adds coordinates


def test_embed_writes_npz_and_csv_with_ids(files, tmp_path, capsys):
    from topo_contrastive.training import ExperimentData, load_data_file
    from topo_contrastive.training.loop import embed

    # the paper edition: 8 features (a data file's default edition adds 8 per hole)
    assert _pretrain(files, tmp_path / "run", "--edition", "paper", config="SSCL") == 0
    out = tmp_path / "emb"
    rc = main(
        [
            "embed",
            "--checkpoint",
            str(tmp_path / "run" / "encoder.pt"),
            "--data-file",
            str(files["unlabelled"]),
            "--out",
            str(out),
            "--batch-size",
            "7",
            *_flags(files["root"]),
        ]
    )
    assert rc == 0
    with np.load(out / "embeddings.npz", allow_pickle=False) as f:
        emb, ids = f["embeddings"], f["sample_ids"]
        assert "labels" not in f.files
    assert emb.shape == (40, 8) and emb.dtype == np.float32 and ids.tolist() == files["ids"]
    data = ExperimentData.from_dataset(load_data_file(files["unlabelled"], files["root"] / "data"))
    encoder, _ = io.load_encoder(tmp_path / "run" / "encoder.pt", complex=data.hodge)
    np.testing.assert_array_equal(emb, embed(encoder, data).astype(np.float32))
    # issue 26 case 9: a second embed into the same folder is refused (as pretrain and
    # reproduce refuse), and the earlier output is kept; --overwrite replaces it
    before = (out / "embeddings.npz").read_bytes()
    argv = ["embed", "--checkpoint", str(tmp_path / "run" / "encoder.pt"), "--data-file",
            str(files["unlabelled"]), "--out", str(out), *_flags(files["root"])]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--out '{out}' is not empty" in err and "pass --overwrite" in err
    assert (out / "embeddings.npz").read_bytes() == before
    assert main([*argv, "--overwrite"]) == 0
    lines = (out / "embeddings.csv").read_text().splitlines()
    assert lines[0] == "sample_id," + ",".join(f"h_{j}" for j in range(8))
    assert len(lines) == 41 and lines[1].startswith("walk-000,")
    np.testing.assert_array_equal(
        np.array([[float(v) for v in line.split(",")[1:]] for line in lines[1:]], np.float32), emb
    )
    meta = json.loads((out / "embeddings.json").read_text())
    assert meta["num_samples"] == 40 and meta["dim"] == 8 and not meta["labelled"]


def test_data_file_gives_the_same_encoder_as_the_builtin_dataset(files, tmp_path):
    """Same seed, same configuration: --data-file of the trajectory task == --dataset trajectory."""
    common = ["--config", "SSCL_Spec", "--epochs", "2", "--hidden-channels", "8", "--seed", "4"]
    flags = _flags(files["root"])
    assert (
        main(
            [
                "pretrain",
                "--dataset",
                "trajectory",
                *common,
                "--out",
                str(tmp_path / "a"),
                *flags,
                *TINY_FLAGS,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "pretrain",
                "--data-file",
                str(files["labelled"]),
                "--tuned-for",
                "trajectory",
                "--edition",
                "paper",  # --dataset's default edition (a data file's is hodge)
                *common,
                "--out",
                str(tmp_path / "b"),
                *flags,
            ]
        )
        == 0
    )
    a = torch.load(tmp_path / "a" / "encoder.pt", weights_only=True)
    b = torch.load(tmp_path / "b" / "encoder.pt", weights_only=True)
    for k, v in a["state_dict"].items():
        assert torch.equal(v, b["state_dict"][k]), k
    for name in ("a", "b"):
        data = (
            ["--dataset", "trajectory", *TINY_FLAGS]
            if name == "a"
            else ["--data-file", str(files["labelled"])]
        )
        assert (
            main(
                [
                    "embed",
                    "--checkpoint",
                    str(tmp_path / name / "encoder.pt"),
                    *data,
                    "--out",
                    str(tmp_path / f"emb_{name}"),
                    *flags,
                ]
            )
            == 0
        )
    ea = np.load(tmp_path / "emb_a" / "embeddings.npz")
    eb = np.load(tmp_path / "emb_b" / "embeddings.npz")
    np.testing.assert_array_equal(ea["embeddings"], eb["embeddings"])
    np.testing.assert_array_equal(ea["labels"], eb["labels"])
    # evaluate on the file: the same splits, hence the same accuracies
    res = []
    for name, data in (
        ("a", ["--dataset", "trajectory", *TINY_FLAGS]),
        ("b", ["--data-file", str(files["labelled"])]),
    ):
        out = tmp_path / f"eval_{name}.json"
        assert (
            main(
                [
                    "evaluate",
                    "--checkpoint",
                    str(tmp_path / name / "encoder.pt"),
                    *data,
                    "--seeds",
                    "2",
                    "--out",
                    str(out),
                    *flags,
                ]
            )
            == 0
        )
        res.append(json.loads(out.read_text())["splits"])
    assert res[0] == res[1]


def test_bad_input_is_a_clear_error_and_writes_nothing(files, tmp_path, capsys):
    flags = _flags(files["root"])
    ckpt_dir = tmp_path / "run"
    assert _pretrain(files, ckpt_dir) == 0
    capsys.readouterr()
    ckpt = str(ckpt_dir / "encoder.pt")
    bad = tmp_path / "bad.npz"
    with np.load(files["unlabelled"]) as f:
        arrays = {k: f[k] for k in f.files if k != "incidence_1_value"}
    np.savez(bad, **arrays)
    cases = [
        (
            ["pretrain", "--data-file", str(tmp_path / "none.npz"), "--config", "SCL"],
            "data file '",
            "does not exist",
        ),
        (
            ["pretrain", "--data-file", str(bad), "--config", "SCL"],
            "lacks the key(s) ['incidence_1_value']",
            None,
        ),
        (
            [
                "pretrain",
                "--data-file",
                str(files["unlabelled"]),
                "--config",
                "SCL",
                "--set",
                "colour=red",
            ],
            "unknown configuration field 'colour'",
            None,
        ),
        (
            ["evaluate", "--checkpoint", ckpt, "--data-file", str(files["unlabelled"])],
            "needs labels, but the dataset 'walks' has none",
            None,
        ),
        (
            [
                "embed",
                "--checkpoint",
                ckpt,
                "--dataset",
                "trajectory",
                *TINY_FLAGS,
                "--trajectory-points",
                "160",
            ],
            "trained on another complex",
            None,
        ),
    ]
    for argv, message, more in cases:
        out = tmp_path / "out"
        rc = main([*argv, "--out", str(out / "x.json" if argv[0] == "evaluate" else out), *flags])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith(ERROR_PREFIXES) and message in err, err
        assert more is None or more in err
        assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True
    with pytest.raises(SystemExit):  # argparse: exactly one of --dataset / --data-file
        main(
            [
                "pretrain",
                "--dataset",
                "ocean",
                "--data-file",
                str(bad),
                "--config",
                "SCL",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "edition", "readout", "layers"),
    [
        ((), "hodge", "hodge", 2),  # a user's data file: the HodgeReadout edition
        (("--edition", "paper"), "paper", "mean", 4),
        (("--readout", "mean"), "paper", "mean", 4),  # --readout alone: the paper edition
        (("--edition", "hodge"), "hodge", "hodge", 2),
    ],
)
def test_default_edition_of_a_data_file_and_what_pretrain_json_records(
    files, tmp_path, extra, edition, readout, layers
):
    from topo_contrastive import __version__

    assert _pretrain(files, tmp_path, *extra, config="SSCL_Spec") == 0
    log = json.loads((tmp_path / "pretrain.json").read_text())
    cfg = log["config"]
    assert (log["edition"], cfg["readout"], cfg["num_layers"]) == (edition, readout, layers)
    assert cfg["max_harmonic_features"] == (4096 if edition == "hodge" else 0)
    assert log["version"] == __version__ and log["threads"] >= 1
    assert len(log["data_fingerprint"]) >= 8
    diag = log["diagnostics"]
    assert {"chance_loss", "loss_drop", "relative_spread", "warnings"} <= set(diag)
    # one epoch of batches of 40 with InfoNCE-like weights: chance is log(2 * 40 - 1)
    assert diag["chance_loss"] == pytest.approx(np.log(79), rel=1e-5)


def test_evaluate_refuses_a_split_the_probe_cannot_run_on_before_any_fit(
    files, tmp_path, capsys, monkeypatch
):
    """A class with a single labelled sample: no training split has two of it, so neither
    probe can run; evaluate says so (split, probe, class counts) before loading the encoder
    or fitting anything, and writes nothing."""
    import topo_contrastive.io as checkpoint

    with np.load(files["labelled"]) as f:
        arrays = {k: f[k] for k in f.files}
    labels = np.zeros_like(arrays["y"])
    labels[0] = 1
    rare = tmp_path / "rare.npz"
    np.savez(rare, **{**arrays, "y": labels})
    ckpt = tmp_path / "encoder.pt"
    ckpt.write_bytes(b"not read")

    def no_load(*a, **k):
        raise AssertionError("the encoder was loaded")

    monkeypatch.setattr(checkpoint, "load_encoder", no_load)
    out = tmp_path / "eval.json"
    for probe in ("ridge", "svm"):
        argv = ["evaluate", "--checkpoint", str(ckpt), "--data-file", str(rare), "--probe",
                probe, "--out", str(out), *_flags(files["root"])]  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"the {probe} probe cannot run on split 0" in err and "{0: " in err
    assert not out.exists()
