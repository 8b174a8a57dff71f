"""The public API: top-level shortcuts, py.typed, and one documented path per name."""

from __future__ import annotations

import configparser
import importlib
import importlib.util
import re
from pathlib import Path

import topo_contrastive

ROOT = Path(__file__).resolve().parents[1]
API_DIR = ROOT / "docs" / "api"
# the public packages and where each public name is documented live in one place, the site
# check (docs/check_site.py), which the built site is held to as well
_spec = importlib.util.spec_from_file_location("check_site", ROOT / "docs" / "check_site.py")
check_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_site)
#: top-level names that are shortcuts to a subpackage's (documented there)
SHORTCUTS = set(topo_contrastive._LAZY)


def _documented() -> list[str]:
    pattern = r"^\.\. (?:auto(?:class|function|data|exception)|py:data)::\s+(\S+)"
    found = []
    for page in sorted(API_DIR.glob("*.rst")):
        found += re.findall(pattern, page.read_text(encoding="utf-8"), flags=re.M)
    return found


def _resolve(path: str):
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def test_top_level_shortcuts_are_the_subpackages_objects():
    from topo_contrastive import (  # noqa: F401 - the import is the test
        SCNN,
        ComplexOperators,
        ContrastiveViews,
        EdgeFlowMask,
        HodgeDebiasedInfoNCE,
        HodgeDecomposition,
        HodgeReadout,
        HodgeSpectralMask,
        InfoNCE,
        OceanDrifters,
        ProjectionHead,
        SCNNConv,
        SyntheticTrajectories,
        load_encoder,
        save_encoder,
    )

    for name, sub in topo_contrastive._LAZY.items():
        module = importlib.import_module(f"topo_contrastive.{sub}")
        assert getattr(topo_contrastive, name) is getattr(module, name)
        assert name in module.__all__
    assert set(topo_contrastive.__all__) <= set(dir(topo_contrastive))
    core = {"ComplexOperators", "HodgeDecomposition", "HodgeParts", "__version__"}
    assert set(topo_contrastive.__all__) == core | SHORTCUTS


def test_the_top_level_namespace_lists_only_public_names():
    """``dir(topo_contrastive)``: ``__all__``, the subpackages and dunders; not the module's
    own imports (``Any``, ``importlib``, ``annotations``, ``TYPE_CHECKING``)."""
    names = dir(topo_contrastive)
    for own in ("Any", "importlib", "annotations", "TYPE_CHECKING", "_typing", "_importlib"):
        assert own not in names
    public = [n for n in names if not n.startswith("__")]
    assert set(public) == set(topo_contrastive.__all__) - {"__version__"} | set(
        topo_contrastive._SUBPACKAGES
    )
    for name in public:  # every listed name resolves (subpackages on first use)
        assert getattr(topo_contrastive, name) is not None
    assert topo_contrastive.nn is importlib.import_module("topo_contrastive.nn")


def test_py_typed_ships_with_the_package():
    assert (ROOT / "topo_contrastive" / "py.typed").is_file()
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "py.typed" in cfg["options.package_data"]["topo_contrastive"].split()


def test_every_public_name_is_documented_once_at_its_shortest_path():
    documented = _documented()
    assert len(documented) == len(set(documented)), "a name is documented twice"
    # where each public name is expected: the first public package (shortest path) whose
    # __all__ holds it; the top-level shortcuts are documented in their subpackage
    expected = {id(_resolve(path)): path for path in check_site.expected_api_ids()}
    by_object: dict[int, str] = {}
    for path in documented:
        obj = _resolve(path)
        assert id(obj) not in by_object, f"{path} and {by_object[id(obj)]} are the same object"
        by_object[id(obj)] = path
        if id(obj) in expected:
            assert path == expected[id(obj)], f"{path} should be documented as {expected[id(obj)]}"
    missing = sorted(p for i, p in expected.items() if i not in by_object)
    assert not missing, f"public names not in docs/api/: {missing}"


def test_every_api_page_summarises_what_it_documents():
    """Each module's page opens with an autosummary table of exactly the classes and functions
    it documents (so the table cannot drift from the page)."""
    pattern = r"^\.\. (?:auto(?:class|function|data|exception)|py:data)::\s+(\S+)"
    pages = sorted(API_DIR.glob("*.rst"))
    assert len(pages) >= 8
    index = (API_DIR / "index.rst").read_text(encoding="utf-8")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.name == "index.rst":
            continue
        assert re.search(rf"^   {page.stem}$", index, flags=re.M), f"{page.name} not in the toctree"
        block = re.search(
            r"^\.\. autosummary::\n   :nosignatures:\n\n((?:   ~\S+\n)+)", text, flags=re.M
        )
        assert block is not None, f"{page.name} has no summary table"
        summary = re.findall(r"~(\S+)", block.group(1))
        documented = re.findall(pattern, text, flags=re.M)
        for m in re.finditer(r"^\.\. automodule:: (\S+)\n((?:   .*\n)+)", text, flags=re.M):
            members = re.search(r":members: (.*(?:\n      .*)*)", m.group(2))
            if members:
                documented += [
                    f"{m.group(1)}.{n}" for n in re.split(r"[,\s]+", members.group(1)) if n
                ]
        # constants are documented on the page but left out of the table (autosummary would
        # show their type's docstring)
        assert sorted(summary) == sorted(d for d in documented if callable(_resolve(d))), page.name


#: Longest public docstring, in lines: PyG's length (its ChebConv has about 60 with the
#: shapes); implementation notes go to comments or docs/design.md.
MAX_DOC_LINES = 75


def test_public_docstrings_are_at_pyg_length():
    import inspect

    long = {}
    for path in check_site.expected_api_ids():
        obj = _resolve(path)
        members = [(path, obj)]
        if inspect.isclass(obj):
            members += [
                (f"{path}.{k}", v)
                for k, v in vars(obj).items()
                if callable(v) and (not k.startswith("_") or k in ("__init__", "forward"))
            ]
        for name, member in members:
            lines = len((inspect.getdoc(member) or "").splitlines())
            if lines > MAX_DOC_LINES:
                long[name] = lines
    assert not long, f"docstrings over {MAX_DOC_LINES} lines: {long}"
