"""docs/check_site.py: each kind of problem of a built site is found, on a hand-made site."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_site", ROOT / "docs" / "check_site.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

MATHML = '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi>x</mi></math>'
GOOD = {
    "index.html": (
        '<html><head><link rel="stylesheet" href="_static/site.css">'
        '<link rel="canonical" href="https://example.org/">'  # a relation that loads nothing
        '<script src="_static/a.js"></script></head><body id="top">'
        f'<p>Inline <span class="math">{MATHML}</span> and a '
        '<a href="https://pypi.org/">link out</a>, <a href="api/nn.html#pkg.nn.SCNN">SCNN</a>, '
        '<a href="#top">top</a>.</p><pre>\\mathbf{x} in code is fine</pre>'
        '<img src="data:image/png;base64,AAAA"></body></html>'
    ),
    "api/nn.html": (
        f'<html><body><dl><dt id="pkg.nn.SCNN">SCNN</dt></dl><div class="math">{MATHML}'
        '</div><a href="../index.html">home</a></body></html>'
    ),
    "tutorials/01_x.html": '<html><body><pre class="sphx-glr-script-out">1</pre></body></html>',
    "_static/site.css": "div.math { overflow: auto; background: url(img.png); }",
    "_static/a.js": "",
}
API = {"pkg.nn.SCNN": "SCNN"}


def _site(tmp_path: Path, changes: dict[str, str] | None = None) -> Path:
    for name, text in {**GOOD, **(changes or {})}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_good_site_passes(tmp_path):
    assert check.check_site(_site(tmp_path), api=API) == []


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"index.html": GOOD["index.html"].replace(
            '"_static/a.js"', '"https://cdn.example.org/mathjax.js"')},
         "index.html: loads https://cdn.example.org/mathjax.js from outside the site (script)"),
        ({"api/nn.html": GOOD["api/nn.html"] + '<img src="//cdn.example.org/x.png">'},
         "api/nn.html: loads //cdn.example.org/x.png from outside the site (img)"),
        ({"_static/site.css": "@import 'https://fonts.example.org/a.css';"},
         "_static/site.css: loads https://fonts.example.org/a.css from outside the site"),
        ({"api/nn.html": GOOD["api/nn.html"].replace(MATHML, "\\mathbf{L}_1")},
         "api/nn.html: 1 formula(s) without MathML"),
        ({"api/nn.html": GOOD["api/nn.html"].replace("<mi>x</mi>", "<mi>\\foo</mi>")},
         "api/nn.html: a LaTeX command left in MathML: \\foo"),
        ({"api/nn.html": GOOD["api/nn.html"] + "<p>the Laplacian \\(L_1\\)</p>"},
         "api/nn.html: unrendered LaTeX in the text"),
        ({"index.html": GOOD["index.html"].replace("api/nn.html#", "api/gone.html#")},
         "index.html: broken link api/gone.html#pkg.nn.SCNN (no api/gone.html)"),
        ({"index.html": GOOD["index.html"].replace("#pkg.nn.SCNN", "#pkg.nn.Gone")},
         "index.html: broken link api/nn.html#pkg.nn.Gone (no #pkg.nn.Gone on api/nn.html)"),
        ({"index.html": GOOD["index.html"].replace('href="#top"', 'href="#nowhere"')},
         "index.html: broken link #nowhere (no #nowhere on index.html)"),
        ({"api/nn.html": GOOD["api/nn.html"].replace('id="pkg.nn.SCNN"', 'id="other"')},
         "API: pkg.nn.SCNN (SCNN) has no entry on the site"),
        ({"tutorials/01_x.html": "<html><body><p>no output</p></body></html>"},
         "tutorials/01_x.html: a tutorial page without output (did it run?)"),
    ],
)  # fmt: skip
def test_each_problem_is_found(tmp_path, changes, expected):
    problems = check.check_site(_site(tmp_path, changes), api=API)
    assert any(p.startswith(expected) for p in problems), problems


def test_the_api_ids_are_the_documented_paths():
    ids = check.expected_api_ids()
    assert ids["topo_contrastive.ComplexOperators"] == "ComplexOperators"
    assert ids["topo_contrastive.nn.SCNN"] == "SCNN"  # not the top-level shortcut
    assert "topo_contrastive.SCNN" not in ids
    assert ids["topo_contrastive.io.load_encoder"] == "load_encoder"


def test_main_exit_codes(tmp_path, capsys):
    assert check.main([str(tmp_path / "none")]) == 2
    site = _site(tmp_path / "s", {"index.html": GOOD["index.html"] + '<a href="gone.html">x</a>'})
    assert check.main([str(site)]) == 1
    assert "broken link gone.html" in capsys.readouterr().err
