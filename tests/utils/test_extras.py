"""The extras (``topo_contrastive/_utils/extras.py``): a core install needs neither matplotlib nor
h5py, and what needs one refuses before any work with the line that installs it."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests._commands import main
from tests._tiny import TINY_FLAGS
from topo_contrastive._utils.extras import EXTRAS, MissingExtraError, require_extra

ROOT = Path(__file__).resolve().parents[2]
CORE = ("complex", "data", "hodge", "nn", "transforms", "losses", "datasets", "io")


def _extras() -> dict[str, set[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    parse = lambda text: {line.split(">")[0].split("=")[0].strip()  # noqa: E731
                          for line in text.splitlines() if line.strip()}  # fmt: skip
    found = {name: parse(value) for name, value in cfg["options.extras_require"].items()}
    found["install_requires"] = parse(cfg["options"]["install_requires"])
    return found


def test_setup_cfg_keeps_matplotlib_and_h5py_in_extras():
    extras = _extras()
    assert not {"matplotlib", "h5py"} & extras["install_requires"]
    for module, extra in EXTRAS.items():
        assert module in extras[extra]
        assert extras[extra] <= extras["test"]  # the test command installs every extra
    assert "matplotlib" in extras["docs"]


def test_the_core_imports_neither_matplotlib_nor_h5py():
    code = (
        "import sys, topo_contrastive; "
        + "; ".join(f"import topo_contrastive.{room}" for room in CORE)
        + "; print(sorted({'matplotlib', 'h5py', 'sklearn', 'pandapower', 'wntr'}"
        + " & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert out.strip() == "[]"


@pytest.fixture
def no_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # ``import matplotlib`` now fails


def test_require_extra_names_the_extra(no_matplotlib, monkeypatch):
    with pytest.raises(MissingExtraError, match=r"pip install 'topo-contrastive\[plot\]'"):
        require_extra("matplotlib", "plot_complex")
    assert issubclass(MissingExtraError, ImportError)
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r"the original .* pip install 'topo-contrastive\["
                                          r"ocean-raw\]'"):  # fmt: skip
        from topo_contrastive.datasets._ocean_source import read_raw

        read_raw(ROOT / "no-such-file.jld2")
    with pytest.raises(ValueError, match="`module` must be one of matplotlib, h5py, pandapower"):
        require_extra("numpy", "x")


def test_plot_complex_without_matplotlib(no_matplotlib):
    from topo_contrastive import ComplexOperators
    from topo_contrastive.datasets import plot_complex

    ops = ComplexOperators.from_simplices([(0, 1), (1, 2), (0, 2)], [(0, 1, 2)])
    with pytest.raises(MissingExtraError, match=r"plot_complex needs matplotlib"):
        plot_complex(ops, pos=np.zeros((3, 2)))


def test_commands_that_draw_refuse_before_touching_out(no_matplotlib, tmp_path, capsys):
    out = tmp_path / "le"
    argv = ["label-efficiency", "--dataset", "trajectory", "--out", str(out), "--data-root",
            str(tmp_path / "data"), *TINY_FLAGS, "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    assert "pip install 'topo-contrastive[plot]'" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "data").exists()
    out = tmp_path / "quick"
    assert main(["reproduce", "--quick", "--out", str(out), "--no-progress"]) == 2
    assert "Figures 1-2" in capsys.readouterr().err and not out.exists()


def test_reproduce_draws_figures_only_where_the_preset_says():
    from experiments.presets import PRESETS, adjust_preset
    from experiments.reproduce import draws_figures

    quick = PRESETS["quick"]
    assert draws_figures(quick, ["trajectory", "ocean"])
    none = adjust_preset(quick, ["SCL"], ["trajectory"], figure1=False, figure2=False)
    assert not draws_figures(none, ["trajectory"])
    fig2_only = adjust_preset(quick, ["SCL"], ["trajectory"], figure1=False)
    fig2 = fig2_only.figure2_dataset
    assert draws_figures(fig2_only, [fig2]) and not draws_figures(
        fig2_only, [d for d in ("trajectory", "ocean") if d != fig2]
    )
