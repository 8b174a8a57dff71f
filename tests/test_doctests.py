"""Every docstring example of the package runs and prints what it shows (doctest).

Each module's examples run in a fresh temporary working folder (examples that build a
dataset write ``data/...`` there) with the module's globals plus the names a user has at
hand: ``torch``, ``np``, PyG's ``Data``/``Batch``/``DataLoader`` and the package's
top-level exports (``ComplexOperators``, ``SCNN``, ``SyntheticTrajectories``, ...).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

import topo_contrastive

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(topo_contrastive.__path__, "topo_contrastive.")
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _examples(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    extra = {"torch": torch, "np": np, "Data": Data, "Batch": Batch, "DataLoader": DataLoader}
    extra.update({k: getattr(topo_contrastive, k) for k in topo_contrastive.__all__})
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name, extraglobs=extra)
    return [t for t in tests if t.examples]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in _examples(name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_the_package_has_runnable_examples():
    """The examples above are found (a finder that found nothing would pass silently)."""
    found = {name: _examples(name) for name in MODULES}
    runnable = sum(
        1
        for tests in found.values()
        for t in tests
        for ex in t.examples
        if not ex.options.get(doctest.SKIP)
    )
    assert runnable >= 40
    for name in ("topo_contrastive.hodge.decomposition",
                 "topo_contrastive.transforms.contrastive_views",
                 "topo_contrastive.io", "topo_contrastive.nn.scnn"):
        assert found[name], f"{name} has no docstring example"
