"""The README's code example runs and does what its comments say."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(capsys):
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README.md has no python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert "{'gradient': 3, 'curl': 1, 'harmonic': 1}" in capsys.readouterr().out
    loss = namespace["loss"]
    assert torch.isfinite(loss)
    grads = [p.grad for p in namespace["encoder"].parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_readme_test_command_is_the_one_ci_runs():
    ci = (README.parent / ".ci" / "run").read_text()
    cmd = re.search(r"^(python3 -m venv .venv && .*pytest)$", README.read_text(), flags=re.M)
    assert cmd is not None, "README.md has no test command"
    assert cmd.group(1) in ci.splitlines()
