"""The README's code examples (the same as the quickstart page's) run and do what their
comments say; the README's commands are the ones CI runs."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[1] / "README.md"


PAGE = README.parent / "docs" / "quickstart.md"


def _blocks(path: Path = README) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 2, f"{path.name} lost its python examples"
    return blocks


def _block(path: Path, containing: str) -> str:
    found = [b for b in _blocks(path) if containing in b]
    assert len(found) == 1, f"{path.name}: {len(found)} python blocks with {containing!r}"
    return found[0]


def _run_quickstart(code: str, monkeypatch, capsys) -> dict:
    """Run the quickstart with each epoch cut to its first batch and two epochs (the
    others only repeat them, at seconds each); returns its namespace."""
    import itertools

    import torch_geometric.loader

    class FirstBatchOnly(torch_geometric.loader.DataLoader):
        def __iter__(self):
            return itertools.islice(super().__iter__(), 1)

    assert "for epoch in range(5):" in code
    monkeypatch.setattr(torch_geometric.loader, "DataLoader", FirstBatchOnly)
    namespace: dict = {}
    exec(compile(code.replace("range(5)", "range(2)"), "quickstart", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert [ln.split(":")[0] for ln in printed] == ["epoch 0", "epoch 1"], printed
    assert all(float(ln.rsplit(" ", 1)[1]) > 0 for ln in printed)
    return namespace


def test_readme_quickstart_is_the_pyg_pipeline_and_trains(tmp_path, monkeypatch, capsys):
    """Dataset with transform=ContrastiveViews, a DataLoader with workers, SCNN and the
    debiased loss: training runs, printing the loss of every epoch, in under 30 lines; the
    same code as the site's quickstart page."""
    code = _block(README, "HodgeDebiasedInfoNCE")
    assert len(code.strip().splitlines()) < 30
    assert code == _block(PAGE, "HodgeDebiasedInfoNCE")
    monkeypatch.chdir(tmp_path)  # the example builds data/trajectories
    namespace = _run_quickstart(code, monkeypatch, capsys)
    batch, loss = namespace["batch"], namespace["loss"]
    n1 = namespace["ds"].complex.num_edges
    assert batch.x_1_view1.shape == batch.x_1.shape == (batch.num_graphs * n1, 1)
    assert batch.hodge_parts.shape == (batch.num_graphs * n1, 3)
    assert torch.equal(batch.batch_1, torch.arange(batch.num_graphs).repeat_interleave(n1))
    assert torch.isfinite(loss)
    grads = [p.grad for p in namespace["encoder"].parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)

    # saving and loading: load_encoder returns (encoder, metadata), as the README uses it
    trained = namespace["encoder"]
    code = _block(README, "load_encoder")
    assert code == _block(PAGE, "load_encoder")
    exec(compile(code, "README.md", "exec"), namespace)
    from topo_contrastive.nn import SCNN

    encoder, metadata = namespace["encoder"], namespace["metadata"]
    assert isinstance(encoder, SCNN) and encoder is not trained
    assert metadata["epochs"] == 5 and metadata["architecture"]["hidden_channels"] == 64
    assert namespace["h"].shape == (1, 64)
    L = namespace["laplacians"]
    x = namespace["ds"][0].x_1
    torch.testing.assert_close(namespace["h"], trained.eval()(x, L))


def test_readme_many_complexes_example_trains(tmp_path, monkeypatch, capsys):
    """The many-complexes snippet, after the quickstart (its encoder, head and loss): a
    dataset of different complexes through the PyG pipeline with no glue code."""
    monkeypatch.chdir(tmp_path)
    namespace = _run_quickstart(_block(README, "HodgeDebiasedInfoNCE"), monkeypatch, capsys)
    exec(compile(_block(README, "RandomComplexTrajectories"), "README.md", "exec"), namespace)
    batch, loss = namespace["batch"], namespace["loss"]
    assert torch.isfinite(loss) and loss.requires_grad
    assert batch.laplacians()[0].shape[0] == int(batch.num_cells(1).sum()) == batch.x_1.shape[0]
    assert not batch.is_shared and batch.num_graphs == 32


def test_readme_cell_complex_example(capsys):
    exec(compile(_block(README, "CellComplex"), "README.md", "exec"), {})
    assert "{'gradient': 8, 'curl': 2, 'harmonic': 1}" in capsys.readouterr().out


def test_quickstart_page_own_complex_example(capsys):
    namespace: dict = {}
    exec(compile(_block(PAGE, "ComplexOperators"), "quickstart.md", "exec"), namespace)
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
    assert main_job.endswith("python -m experiments reproduce --quick --out results/quick")
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


def test_readme_links_resolve_and_the_front_page_stays_short():
    """Every relative link of the README names a file or folder of the repository (and a
    heading of a docs page for a #fragment); the front page stays at most 8 kB."""
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 8192
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) >= 6
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, fragment = link.partition("#")
        target = README.parent / path
        assert target.exists(), link
        if fragment:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert fragment in slugs, link
    for stale in ("tests in", " s on 2 cores", "issue "):
        assert stale not in text, stale  # no test counts, per-run timings or issue numbers
