"""The "Your own data" page (docs/user_data.md): every code block runs, in order, as written.

Python blocks run in one namespace in an empty folder; a ``print(...)  # text`` line must
print ``text``. Command blocks (``bash``) run through :func:`topo_contrastive.cli.main`. The
``sh`` block of the road-network example needs `pytspl` and minutes of work; the example is
tested in tests/examples/test_road_networks_example.py.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np

from tests._commands import main

PAGE = Path(__file__).resolve().parents[1] / "docs" / "user_data.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_page_is_in_the_toctree():
    index = (PAGE.parent / "index.rst").read_text(encoding="utf-8")
    assert re.search(r"^\s+user_data$", index, flags=re.M)


def test_code_blocks_run_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    python, commands = _blocks("python"), _blocks("bash")
    assert len(python) >= 4 and len(commands) == 1
    namespace: dict = {"__name__": "user_data"}
    for i, block in enumerate(python):
        exec(compile(block, f"user_data.md[python {i}]", "exec"), namespace)
        printed = capsys.readouterr().out.splitlines()
        expected = re.findall(r"^print\(.*\)  # (.*)$", block, flags=re.M)
        assert printed == expected, f"python block {i}"
    for line in commands[0].strip().splitlines():
        argv = shlex.split(line)
        assert argv[0] == "topo-contrastive"
        assert main([*argv[1:], "--no-progress"]) == 0, line
    capsys.readouterr()
    from topo_contrastive import HodgeDecomposition

    # a data file takes the HodgeReadout edition: 64 pooled features and 64 harmonic
    # coordinates per hole of the mesh
    beta1 = HodgeDecomposition(namespace["ops"]).dims["harmonic"]
    assert beta1 >= 1
    with np.load(tmp_path / "runs" / "sscl" / "embeddings" / "embeddings.npz") as f:
        assert f["embeddings"].shape == (60, 64 * (1 + beta1)) and f["labels"].shape == (60,)
    assert (tmp_path / "runs" / "sscl" / "embeddings" / "embeddings.csv").is_file()
    # the page's Python path builds what its command line builds: the same configuration
    import json

    log = json.loads((tmp_path / "runs" / "sscl" / "pretrain.json").read_text())
    assert log["config"] == json.loads(json.dumps(namespace["config"].to_dict()))
    assert log["edition"] == "hodge" and namespace["h"].shape == (60, 64 * (1 + beta1))
