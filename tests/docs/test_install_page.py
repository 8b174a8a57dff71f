"""docs/install.md: one way to install TopoModelX, the one CI runs, named the same everywhere;
the docs extra holds what the site's build needs."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "install.md"
COMMAND = "pip install --no-deps topomodelx==0.0.1"
#: every file that tells a user how to get TopoModelX
MENTIONS = (
    "README.md",
    "docs/install.md",
    "examples/topomodelx_encoder.py",
    "examples/tutorials/03_topomodelx_encoder.py",
    "experiments/studies/next_node/scone.py",
    "experiments/cli/predict_next.py",
)


def test_one_topomodelx_install_command_and_the_readme_test_command_runs_it_before_pytest():
    """The README's test command (which CI runs) installs TopoModelX as the install page says,
    before the suite, so that the equality tests with TopoModelX's layers run in it."""
    text = PAGE.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if "topomodelx" in ln and "pip install" in ln]
    assert lines and all(ln.strip().endswith(COMMAND) for ln in lines), lines
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_command = next(ln for ln in ci if ln.startswith("python3 -m venv") and "pytest" in ln)
    steps = test_command.split(" && ")
    install = steps.index(f".venv/bin/{COMMAND.replace('pip install', 'pip install -q')}")
    assert install < steps.index(".venv/bin/python -m pytest")


def test_every_mention_names_the_same_command_and_no_extra_pulls_pyg_nightly():
    for name in MENTIONS:
        text = " ".join((ROOT / name).read_text(encoding="utf-8").split())
        assert COMMAND in text, name
        assert "[topomodelx]" not in text and ".venv-tmx" not in text, name
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    extras = cfg["options.extras_require"]
    assert "topomodelx" not in extras  # `.[topomodelx]` would pull pyg-nightly and gudhi
    docs = {re.split(r"[<>=]", d.strip())[0] for d in extras["docs"].split("\n") if d.strip()}
    assert {"sphinx", "myst-parser", "furo", "sphinx-gallery", "sphinx-copybutton",
            "latex2mathml"} <= docs  # fmt: skip
