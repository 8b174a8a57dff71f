"""The site's code blocks: long lines wrap inside the column (docs/_static/site.css), and the
quickstart page, which the build does not execute, shows what its code prints."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _rules(css: str) -> dict[str, str]:
    """``{selector: declarations}`` of a flat style sheet (comments dropped)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        for sel in selectors.split(","):
            out[" ".join(sel.split())] = body
    return out


def test_code_and_output_blocks_wrap_long_lines():
    rules = _rules((ROOT / "docs" / "_static" / "site.css").read_text(encoding="utf-8"))
    for selector in (".highlight pre", "pre.literal-block"):
        body = rules.get(selector, "")
        assert re.search(r"white-space:\s*pre-wrap", body), selector
        assert re.search(r"overflow-wrap:\s*break-word", body), selector
    conf = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    assert 'html_css_files = ["site.css"]' in conf


def test_every_printing_quickstart_block_is_followed_by_its_output():
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S)
    for i, (kind, code) in enumerate(blocks):
        if kind != "python" or "print(" not in code:
            continue
        assert i + 1 < len(blocks) and blocks[i + 1][0] == "text", f"python block {i}"
        printed = blocks[i + 1][1]
        for call in re.findall(r"print\(f?\"([a-z ]+)", code):  # the printed words
            assert call.strip() in printed, (call, printed)
