"""Check a built documentation site the way a reader offline would meet it.

Every HTML page of the site is parsed (``html.parser``), and the check fails when

- a page loads anything from outside the site: a ``script``, ``link`` (stylesheet, icon,
  preload), ``img``, ``iframe``, ``source``, ``video``, ``audio``, ``embed`` or ``object``
  whose address has a scheme (``https:``, ``data:`` excepted) or starts with ``//``, or a
  stylesheet of the site that imports or ``url()``-loads such an address;
- a formula is left unrendered: an element of class ``math`` without MathML in it, a
  formula the renderer could not convert (``math-error``, a LaTeX command left inside the
  MathML), or LaTeX maths in the text of a page (``\\(``, ``\\[``, ``$$`` or a command such as
  ``\\mathbf`` outside code);
- an API member is missing: a public name (the ``__all__`` of the public packages) with no
  entry (an element whose ``id`` is its documented path) on the site;
- an internal link is broken: a relative ``href`` or ``src`` whose file is not in the site,
  or whose ``#fragment`` names no ``id`` on the target page;
- a tutorial page has no output (sphinx-gallery did not run it).

Usage::

    python docs/check_site.py docs/_build/html      # exit 1 with one line per problem
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Iterable, Sequence
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["Page", "check_site", "expected_api_ids", "main", "parse_page"]

#: packages whose ``__all__`` is the public API (as tests/test_api.py has it)
PUBLIC = (
    "topo_contrastive",
    "topo_contrastive.complex",
    "topo_contrastive.data",
    "topo_contrastive.hodge",
    "topo_contrastive.nn",
    "topo_contrastive.transforms",
    "topo_contrastive.losses",
    "topo_contrastive.datasets",
    "topo_contrastive.io",
    "topo_contrastive.training",
    "topo_contrastive.evaluation",
)
#: top-level names documented at the top level although their subpackage is public (the
#: complex and its decomposition, as tests/test_api.py has it)
CORE = {"ComplexOperators", "HodgeDecomposition", "HodgeParts"}
#: tag -> the attributes by which it loads something into the page
LOADING = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "track": ("src",),
    "input": ("src",),
}
#: ``link`` relations that load a resource (a plain hyperlink relation does not)
LOADING_RELS = {"stylesheet", "icon", "shortcut", "preload", "modulepreload", "manifest",
                "apple-touch-icon", "prefetch", "mask-icon"}  # fmt: skip
#: LaTeX maths left in a page's text (outside code, scripts and MathML)
RAW_LATEX = re.compile(
    r"\\\(|\\\[|\$\$|\\(?:mathbf|mathcal|mathrm|frac|sum|operatorname|left|right|begin\{|"
    r"top\b|alpha|varepsilon|circ\b|qquad|boldsymbol)"
)
_SKIP_TEXT = {"script", "style", "pre", "code", "math", "textarea", "kbd", "samp", "tt"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
         "source", "track", "wbr"}  # fmt: skip


class Page(HTMLParser):
    """What the check needs of one HTML page: ids, links, loads, maths and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []  # href / src addresses
        self.loads: list[tuple[str, str]] = []  # (tag, address) of loaded resources
        self.math_blocks = 0  # elements of class "math"
        self.math_without_mathml = 0
        self.math_errors: list[str] = []
        self.raw_latex: list[str] = []
        self.script_outputs = 0
        self._stack: list[tuple[str, bool]] = []  # (tag, is a math element)
        self._skip = 0
        self._math_open: list[bool] = []  # for each open math element: MathML seen

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        classes = a.get("class", "").split()
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        for attr in LOADING.get(tag, ()):
            for address in _addresses(a.get(attr, ""), attr):
                self.loads.append((tag, address))
                self.links.append(address)
        if tag == "link":
            rels = set(a.get("rel", "").lower().split())
            if rels & LOADING_RELS and a.get("href"):
                self.loads.append(("link", a["href"]))
                self.links.append(a["href"])
        if "style" in a:
            for address in _css_urls(a["style"]):
                self.loads.append((f"{tag} style", address))
        if tag == "math" and self._math_open:
            self._math_open[-1] = True
        if "math-error" in classes:
            self.math_errors.append("a formula the renderer could not convert")
        if "sphx-glr-script-out" in classes:
            self.script_outputs += 1
        is_math = "math" in classes and tag in ("span", "div")
        if is_math:
            self.math_blocks += 1
            self._math_open.append(False)
        if tag in _SKIP_TEXT:
            self._skip += 1
        if tag not in _VOID:
            self._stack.append((tag, is_math))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        # close up to the matching tag (HTML lets some end tags be left out)
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                for name, is_math in reversed(self._stack[i:]):
                    if name in _SKIP_TEXT:
                        self._skip -= 1
                    if is_math and not self._math_open.pop():
                        self.math_without_mathml += 1
                del self._stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if self._skip:
            if self._math_open and re.search(r"\\[A-Za-z]+", data):
                self.math_errors.append(f"a LaTeX command left in MathML: {data.strip()[:60]}")
            return
        m = RAW_LATEX.search(data)
        if m:
            start = max(0, m.start() - 30)
            self.raw_latex.append(" ".join(data[start : m.end() + 40].split()))


def _addresses(value: str, attr: str) -> list[str]:
    if not value:
        return []
    if attr == "srcset":
        return [part.strip().split()[0] for part in value.split(",") if part.strip()]
    return [value]


def _css_urls(css: str) -> list[str]:
    found = re.findall(r"url\(\s*['\"]?([^'\")\s]+)", css)
    found += re.findall(r"@import\s+['\"]([^'\"]+)", css)
    return found


def _external(address: str) -> bool:
    """Whether loading ``address`` leaves the site (``data:`` URIs stay in the page)."""
    address = address.strip()
    if address.startswith("//"):
        return True
    scheme = urlsplit(address).scheme.lower()
    return bool(scheme) and scheme != "data"


def parse_page(path: Path) -> Page:
    """Parse one HTML file."""
    page = Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    page.close()
    return page


def expected_api_ids(packages: Sequence[str] = PUBLIC) -> dict[str, str]:
    """``{documented path: public name}`` of every public name, at the path it is documented
    at: the first package (the shortest path) whose ``__all__`` holds it; the top level's
    shortcuts to a public subpackage's names are documented in the subpackage."""
    top = importlib.import_module(packages[0])
    # top-level shortcuts into a public subpackage are documented there, but for the
    # complex and its Hodge decomposition (CORE), documented at the top level
    lazy = getattr(top, "_LAZY", {})
    shortcuts = {
        name for name, sub in lazy.items()
        if f"{packages[0]}.{sub}" in packages and name not in CORE
    }
    seen: dict[int, str] = {}
    out: dict[str, str] = {}
    for package in packages:
        module = importlib.import_module(package)
        for name in module.__all__:
            if name.startswith("__") or (package == packages[0] and name in shortcuts):
                continue
            obj = getattr(module, name)
            if id(obj) not in seen:
                seen[id(obj)] = f"{package}.{name}"
                out[f"{package}.{name}"] = name
    return out


def check_site(site: Path, api: dict[str, str] | None = None) -> list[str]:
    """One line per problem of the built site in ``site`` (empty: the site passes).

    Args:
        site: the HTML output folder (with ``index.html``).
        api: ``{id: name}`` that must be on the site (default: :func:`expected_api_ids`).

    Raises:
        FileNotFoundError: ``site`` has no ``index.html``.
    """
    site = site.resolve()
    if not (site / "index.html").is_file():
        raise FileNotFoundError(f"'{site}' has no index.html: build the site first")
    pages = {p: parse_page(p) for p in sorted(site.rglob("*.html"))}
    problems: list[str] = []
    for path, page in pages.items():
        where = path.relative_to(site)
        for tag, address in page.loads:
            if _external(address):
                problems.append(f"{where}: loads {address} from outside the site ({tag})")
        if page.math_without_mathml:
            problems.append(f"{where}: {page.math_without_mathml} formula(s) without MathML")
        problems += [f"{where}: {e}" for e in page.math_errors]
        problems += [f"{where}: unrendered LaTeX in the text: ...{t}..." for t in page.raw_latex]
        for address in page.links:
            problem = _broken(path, address, site, pages)
            if problem:
                problems.append(f"{where}: {problem}")
        if where.parts[0] == "tutorials" and where.name not in ("index.html",):
            if not page.script_outputs:
                problems.append(f"{where}: a tutorial page without output (did it run?)")
    for css in sorted(site.rglob("*.css")):
        for address in _css_urls(css.read_text(encoding="utf-8", errors="replace")):
            if _external(address):
                problems.append(f"{css.relative_to(site)}: loads {address} from outside the site")
    ids = set().union(*(p.ids for p in pages.values())) if pages else set()
    for target, name in sorted((api if api is not None else expected_api_ids()).items()):
        if target not in ids:
            problems.append(f"API: {target} ({name}) has no entry on the site")
    return problems


def _broken(page: Path, address: str, site: Path, pages: dict[Path, Page]) -> str | None:
    parts = urlsplit(address)
    if parts.scheme or address.startswith("//") or not address.strip():
        return None  # an outside link (a load from outside is reported above)
    if parts.path:
        target = (page.parent / unquote(parts.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if site not in target.parents and target != site:
            return f"link {address} leaves the site folder"
        if not target.exists():
            return f"broken link {address} (no {target.relative_to(site)})"
    else:
        target = page
    if parts.fragment and target.suffix == ".html":
        frag = unquote(parts.fragment)
        parsed = pages.get(target)
        if parsed is None:
            parsed = pages[target] = parse_page(target)
        if frag not in parsed.ids:
            return f"broken link {address} (no #{frag} on {target.relative_to(site)})"
    return None


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("site", help="the built HTML folder, e.g. docs/_build/html")
    return p


def main(argv: Iterable[str] | None = None) -> int:
    """Check the site; 0 when it passes, 1 with one line per problem, 2 without a site."""
    args = build_parser().parse_args(None if argv is None else list(argv))
    try:
        problems = check_site(Path(args.site))
    except FileNotFoundError as err:
        print(f"check_site: error: {err}", file=sys.stderr)
        return 2
    if problems:
        print(f"{args.site}: {len(problems)} problem(s):", *problems, sep="\n  ", file=sys.stderr)
        return 1
    n = len(list(Path(args.site).rglob("*.html")))
    print(f"{args.site}: {n} pages, nothing loaded from outside, every formula rendered, "
          "every API member present, every internal link resolves")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
