"""The README's code examples run and do what their comments say."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2, "README.md lost its python examples"
    return blocks


def test_readme_quickstart_is_the_pyg_pipeline_and_trains(tmp_path, monkeypatch):
    """Dataset with transform=ContrastiveViews, a DataLoader with workers, SCNN and the
    debiased loss: a training step runs, in under 25 lines. (The example's epoch is cut to
    its first batch here: the other three only repeat it, at a few seconds each.)"""
    import itertools

    import torch_geometric.loader

    class FirstBatchOnly(torch_geometric.loader.DataLoader):
        def __iter__(self):
            return itertools.islice(super().__iter__(), 1)

    code = _blocks()[0]
    assert len(code.strip().splitlines()) < 25
    monkeypatch.chdir(tmp_path)  # the example builds data/trajectories
    monkeypatch.setattr(torch_geometric.loader, "DataLoader", FirstBatchOnly)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    batch, loss = namespace["batch"], namespace["loss"]
    n1 = namespace["ds"].complex.num_edges
    assert batch.x_1_view1.shape == batch.x_1.shape == (batch.num_graphs * n1, 1)
    assert batch.hodge_parts.shape == (batch.num_graphs * n1, 3)
    assert torch.equal(batch.batch_1, torch.arange(batch.num_graphs).repeat_interleave(n1))
    assert torch.isfinite(loss)
    grads = [p.grad for p in namespace["encoder"].parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_readme_own_complex_example(capsys):
    namespace: dict = {}
    exec(compile(_blocks()[1], "README.md", "exec"), namespace)
    assert "{'gradient': 3, 'curl': 1, 'harmonic': 1}" in capsys.readouterr().out
    parts, x_1 = namespace["parts"], namespace["x_1"]
    assert parts.harmonic.shape == x_1.shape == (5, 1)
    torch.testing.assert_close(parts.gradient + parts.curl + parts.harmonic, x_1)


def test_readme_test_command_is_the_one_ci_runs():
    ci = (README.parent / ".ci" / "run").read_text()
    cmd = re.search(r"^(python3 -m venv .venv && .*pytest)$", README.read_text(), flags=re.M)
    assert cmd is not None, "README.md has no test command"
    assert cmd.group(1) in ci.splitlines()


def test_readme_main_job_is_the_one_ci_runs_in_a_fresh_clone():
    """CI reads the main-job command from the README (it cannot drift) and runs it in a clone
    with nothing beside it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "readme_command", README.parent / ".ci" / "readme_command.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    main_job = mod.command("main job")
    assert main_job.startswith("python3 -m venv .venv && ")
    assert main_job.endswith("topo-contrastive reproduce --quick --out results/quick")
    assert mod.command("test suite") in (README.parent / ".ci" / "run").read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'python3 .ci/readme_command.py "main job"' in ci
    assert "git clone" in ci and "unset TOPO_CONTRASTIVE_OCEAN_FILE" in ci


def test_citation_and_licence_files_match_the_package():
    import configparser

    root = README.parent
    meta = configparser.ConfigParser()
    meta.read(root / "setup.cfg")
    version = meta["metadata"]["version"]
    cff = (root / "CITATION.cff").read_text()
    assert cff.startswith("cff-version: 1.2.0\n")
    assert f"\nversion: {version}\n" in cff and "\nlicense: MIT\n" in cff
    assert "preferred-citation:" in cff and 'title: "Hodge-Aware Contrastive Learning"' in cff
    assert meta["metadata"]["license"] == "MIT"
    assert (root / "LICENSE").read_text().startswith("MIT License\n")
    citing = README.read_text().split("## Citing", 1)[1]
    assert "CITATION.cff" in citing and f"version = {{{version}}}" in citing
    assert "moellers2024hodge" in citing


def _block(marker: str) -> str:
    found = [b for b in _blocks() if marker in b]
    assert len(found) == 1, f"README.md has {len(found)} python blocks with {marker!r}"
    return found[0]


def test_readme_many_complexes_example_trains(tmp_path, monkeypatch):
    """The many-complexes snippet: a dataset of different complexes through the PyG
    pipeline with no glue code; the loss is finite and the encoder gets gradients."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(_block("RandomComplexTrajectories"), "README.md", "exec"), namespace)
    assert torch.isfinite(namespace["loss"])
    batch = namespace["batch"]
    assert batch.laplacians()[0].shape[0] == int(batch.num_cells(1).sum())
    assert all(p.grad is not None for p in namespace["encoder"].parameters())


def test_readme_cell_complex_example(capsys):
    exec(compile(_block("CellComplex"), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "[[0, 1, 2, 3], [1, 4, 5, 6, 2]]" in out
    assert "{'gradient': 8, 'curl': 2, 'harmonic': 1}" in out
