"""The built site, as a reader offline meets it (docs/check_site.py on every page).

Runs only when asked for (``pytest -m site``), after the site was built: CI builds it with
``sphinx-build -W`` and runs this with ``$TOPO_CONTRASTIVE_SITE`` naming the output folder.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("TOPO_CONTRASTIVE_SITE", ROOT / "docs" / "_build" / "html"))


def _check():
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "docs" / "check_site.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_built_site_passes_every_check():
    assert (SITE / "index.html").is_file(), f"no site in {SITE}: build it first (docs/install.md)"
    problems = _check().check_site(SITE)
    assert not problems, "\n".join(problems)


def test_the_built_site_has_its_pages_and_tutorials():
    names = {p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")}
    for page in ("install.html", "quickstart.html", "command_line.html", "user_data.html",
                 "results/index.html", "api/index.html", "tutorials/index.html"):  # fmt: skip
        assert page in names
    tutorials = sorted(n for n in names if n.startswith("tutorials/0"))
    assert len(tutorials) >= 4, tutorials
    text = (SITE / "tutorials" / "03_topomodelx_encoder.html").read_text(encoding="utf-8")
    assert "largest difference between the two layers" in text  # it ran, TopoModelX and all
    assert len(list((SITE / "api").glob("*.html"))) >= 8  # one page per module
