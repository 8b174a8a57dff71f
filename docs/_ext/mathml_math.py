"""Maths rendered when the site is built: LaTeX to MathML (``latex2mathml``), no script.

Sphinx's default renderer (MathJax) loads a script from a CDN, so a page read offline shows
raw LaTeX. This renderer converts every ``:math:`` role and ``.. math::`` block to MathML
while the site is built; browsers draw MathML themselves (MathML Core), so the pages need
nothing from outside the site. A formula the converter cannot render (a command it does not
know comes back as the command's text) is a build warning, hence an error under ``-W``.

Display maths follows Sphinx's rules: paragraphs separated by a blank line are separate
equations; a paragraph whose lines end in ``\\\\`` (outside an environment such as
``cases``) is drawn one line per block, its alignment marks ``&`` dropped.
"""

from __future__ import annotations

import re
from typing import Any

import latex2mathml.converter
from docutils import nodes
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

logger = logging.getLogger(__name__)

#: a LaTeX command left in the output: the converter did not know it
_UNKNOWN = re.compile(r"<m(?:i|o|text)[^>]*>\s*(\\[A-Za-z]+)")
_ENVIRONMENT = re.compile(r"\\begin\{(\w+\*?)\}.*?\\end\{\1\}", flags=re.S)


def to_mathml(latex: str, display: bool, node: nodes.Node | None = None) -> str:
    """The MathML of one formula; warns (an error under ``-W``) where it is not rendered."""
    try:
        out = latex2mathml.converter.convert(latex, display="block" if display else "inline")
    except Exception as err:  # the converter raises many types on bad input
        logger.warning("formula not rendered (%s): %s", err, latex, location=node)
        return f'<code class="math-error">{latex}</code>'
    unknown = _UNKNOWN.search(out)
    if unknown:
        logger.warning(
            "formula not rendered: unknown command %s in %s", unknown.group(1), latex,
            location=node,
        )  # fmt: skip
    return out


def _lines(part: str) -> list[str]:
    """A display paragraph as the lines it draws: split at ``\\\\`` outside environments."""
    hidden: list[str] = []

    def keep(m: re.Match) -> str:
        hidden.append(m.group(0))
        return f"\x00{len(hidden) - 1}\x00"

    masked = _ENVIRONMENT.sub(keep, part)
    lines = [ln for ln in masked.split("\\\\") if ln.strip()] if "\\\\" in masked else [masked]
    out = []
    for ln in lines:
        if len(lines) > 1:
            ln = ln.replace("&", "")
        out.append(re.sub(r"\x00(\d+)\x00", lambda m: hidden[int(m.group(1))], ln))
    return out


def html_visit_math(self: Any, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(to_mathml(node.astext(), display=False, node=node) + "</span>")
    raise nodes.SkipNode


def html_visit_displaymath(self: Any, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    text = node.astext()
    if node.get("no-wrap", node.get("nowrap", False)):
        parts = [text]
    else:
        parts = [p for p in text.split("\n\n") if p.strip()]
    for part in parts:
        for line in _lines(part):
            self.body.append(to_mathml(line, display=True, node=node))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app: Any) -> dict[str, Any]:
    app.add_html_math_renderer(
        "mathml", (html_visit_math, None), (html_visit_displaymath, None)
    )
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
