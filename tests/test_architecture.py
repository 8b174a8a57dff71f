"""The layout of the library and of the experiments beside it (docs/architecture.md),
checked on their source with ``ast``.

- the module import graph of ``topo_contrastive/`` and ``experiments/`` has no cycle (every
  ``import`` counts: module level, inside functions and under ``TYPE_CHECKING``);
- imports between rooms (``complex``, ``hodge``, ..., ``training``, ``evaluation``, ``cli``
  of the library; ``experiments``, ``experiments.studies.*``, ``experiments.cli`` beside it)
  go downwards only, by the ranks of :data:`RANKS`; in particular the library imports nothing
  from ``experiments/``, the core nothing from the training, evaluation or commands, and one
  study nothing from another (but reuse, which builds on label efficiency's subsets and
  probe, many_complexes, which builds on both, and missing measurements, which routes its
  road networks' trips with reuse's);
- no source file cites an issue number;
- functions stay under :data:`MAX_FUNCTION_LINES` lines of code and modules under
  :data:`MAX_MODULE_LINES` lines, but for the listed exceptions (a list that may only
  shrink: an exception that no longer exceeds the limit must leave the list).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "topo_contrastive"
#: the folder beside the package: the paper's reproduction and the studies
HARNESS = "experiments"

#: rank of every room: an import from one room into another must go to a lower rank
#: (``helpers``: the top-level modules ``_layout``, ``_lazy``, ``_names`` and the package
#: ``_utils`` (checks, files, outputs, numerics, ...); ``root``:
#: ``topo_contrastive/__init__.py``, whose lazy shortcuts point into the core)
RANKS = {
    "helpers": 0,
    "complex": 1,
    "data": 2,
    "hodge": 2,
    "losses": 3,
    "nn": 3,
    "transforms": 3,
    "datasets": 4,
    "io": 5,
    "root": 6,
    "training": 7,
    "evaluation": 8,
    "cli": 9,
    # beside the package: the paper's reproduction, the studies and their commands
    "experiments": 10,
    "experiments.studies": 11,
    "experiments.studies.label_efficiency": 11,
    "experiments.studies.next_node": 11,
    # builds on label efficiency's labelled subsets and low-label probe
    "experiments.studies.reuse": 11.5,
    # builds on reuse's encoders and networks, label efficiency's subsets and probe
    "experiments.studies.many_complexes": 11.75,
    # routes its road networks' trips with reuse's road_trips
    "experiments.studies.missing_measurements": 11.75,
    "experiments.cli": 12,
}
#: the rooms of the library (what the wheel ships)
LIBRARY = ("helpers", "complex", "data", "hodge", "losses", "nn", "transforms", "datasets",
           "io", "root", "training", "evaluation", "cli")  # fmt: skip
#: what a core install and ``import topo_contrastive.<room>`` may load
CORE = ("helpers", "complex", "data", "hodge", "losses", "nn", "transforms", "datasets", "io")
#: import cycles allowed, each with its reason (none today)
ALLOWED_CYCLES: dict[frozenset[str], str] = {}

#: lines of code of a function: its body after the signature and the docstring, without
#: blank lines and comment-only lines
MAX_FUNCTION_LINES = 60
#: the same limit for the experiments beside the library
MAX_EXPERIMENT_FUNCTION_LINES = 60
#: lines of a module file, all counted
MAX_MODULE_LINES = 600
#: functions over the limit, with the reason they are not split yet
LONG_FUNCTIONS: dict[str, str] = {}
#: modules over the limit, with the reason they are not split yet
LONG_MODULES: dict[str, str] = {}

_ISSUE = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package ``__init__``)."""
    found = {}
    for path in sorted([*(ROOT / PACKAGE).rglob("*.py"), *(ROOT / HARNESS).rglob("*.py")]):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _imported(name: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules that ``node`` (in module ``name``) imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:  # relative: from . import x, from ..y import z
            base = name.split(".")[: None if is_package else -1]
            base = base[: len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        # ``from pkg import sub`` imports the submodule ``pkg.sub`` where there is one
        targets = [
            f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module
            for a in node.names
        ]
    found = []
    for target in targets:
        while target not in MODULES and "." in target:  # ``import pkg.mod.attr`` style
            target = target.rsplit(".", 1)[0]
        if target in MODULES and target != name:
            found.append(target)
    return found


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in _imported(name, is_package, node)
        }
    return graph


GRAPH = _graph()


def _room(name: str) -> str:
    parts = name.split(".")
    if parts[0] == HARNESS:
        if len(parts) > 2 and parts[1] == "studies":
            return f"experiments.studies.{parts[2]}"
        if len(parts) > 1 and parts[1] in ("studies", "cli"):
            return f"experiments.{parts[1]}"
        if len(parts) > 1 and parts[1] == "__main__":  # ``python -m experiments``
            return "experiments.cli"
        return "experiments"
    if len(parts) == 1:
        return "root"
    if parts[1].startswith("_"):
        return "helpers"
    return parts[1]


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _code_lines(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    has_docstring = (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                     and isinstance(body[0].value.value, str))  # fmt: skip
    if has_docstring and len(body) == 1:
        return 0
    start = body[1 if has_docstring else 0].lineno
    return sum(
        1
        for line in lines[start - 1 : node.end_lineno]
        if line.strip() and not line.strip().startswith("#")
    )


def test_the_graph_sees_function_level_and_relative_imports():
    # a function-level import (cli commands import their work lazily)
    assert "experiments.studies.label_efficiency.curves" in GRAPH[
        "experiments.cli.label_efficiency"
    ]
    # ``from pkg import module``
    assert "topo_contrastive.training.loop" not in GRAPH["topo_contrastive.io"]
    assert GRAPH["topo_contrastive.training"] >= {"topo_contrastive.training.loop"}
    # a cycle is found where there is one
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        frozenset({"a", "b", "c"})
    ]


def test_no_import_cycle():
    cycles = {c: sorted(c) for c in _cycles(GRAPH) if c not in ALLOWED_CYCLES}
    assert not cycles, f"import cycles: {list(cycles.values())}"
    stale = [sorted(c) for c in ALLOWED_CYCLES if c not in _cycles(GRAPH)]
    assert not stale, f"allowed cycles that no longer exist (remove them): {stale}"


def test_every_module_is_in_a_room_of_known_rank():
    unknown = sorted({_room(m) for m in MODULES} - set(RANKS))
    assert not unknown, f"rooms without a rank in RANKS (and docs/architecture.md): {unknown}"


def test_imports_go_downwards_only():
    upward = sorted(
        f"{src} -> {dst}"
        for src, targets in GRAPH.items()
        for dst in targets
        if _room(src) != _room(dst) and RANKS[_room(src)] <= RANKS[_room(dst)]
    )
    assert not upward, "imports that do not go down (docs/architecture.md):\n" + "\n".join(upward)


def test_the_core_imports_no_experiment_study_or_command():
    leaks = sorted(
        f"{src} -> {dst}"
        for src, targets in GRAPH.items()
        if _room(src) in CORE
        for dst in targets
        if _room(dst) not in CORE
    )
    assert not leaks, "the core imports:\n" + "\n".join(leaks)


def test_the_library_imports_nothing_from_beside_it():
    leaks = sorted(
        f"{src} -> {dst}"
        for src, targets in GRAPH.items()
        if _room(src) in LIBRARY
        for dst in targets
        if _room(dst) not in LIBRARY
    )
    assert not leaks, "the library imports from experiments/:\n" + "\n".join(leaks)


def _private_imports(node: ast.Import | ast.ImportFrom) -> list[str]:
    """What ``node`` takes of the library that is private: a module with a ``_`` part, or a
    ``_`` name imported from it."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith(PACKAGE) and "._" in a.name]
    module = node.module or ""
    if node.level or not module.startswith(PACKAGE):
        return []
    if any(part.startswith("_") for part in module.split(".")):
        return [module]
    return [f"{module}.{a.name}" for a in node.names if a.name.startswith("_")]


#: the one module of experiments/ that may take the commands' private plumbing (atomic
#: writes, locked output folders, the shared options): the seam, so that every study and
#: command of experiments/ is built on the public API and the library keeps that plumbing
#: private
SEAM = "experiments._helpers"
#: what the seam may take: the library's private file and option helpers, nothing else
SEAM_TAKES = ("topo_contrastive._utils", "topo_contrastive.cli._")


def test_the_experiments_use_the_public_api_only():
    # the paper's reproduction and the studies are built on what a user can import; the
    # seam takes the command plumbing only
    private = sorted(
        f"{name}: {target}"
        for name, (path, _) in MODULES.items()
        if _room(name) not in LIBRARY
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for target in _private_imports(node)
        if not (name == SEAM and target.startswith(SEAM_TAKES))
    )
    assert not private, "experiments/ imports private library names:\n" + "\n".join(private)


def test_no_source_file_cites_an_issue_number():
    citing = []
    for path, _ in MODULES.values():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _ISSUE.search(line):
                citing.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not citing, "\n".join(citing)


def test_functions_are_short_but_for_the_listed_ones():
    long = {}
    for path, _ in MODULES.values():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        beside = path.relative_to(ROOT).parts[0] == HARNESS
        limit = MAX_EXPERIMENT_FUNCTION_LINES if beside else MAX_FUNCTION_LINES
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(lines, node)
                if n > limit:
                    long[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = n
    new = {k: v for k, v in long.items() if k not in LONG_FUNCTIONS}
    assert not new, (f"functions over {MAX_FUNCTION_LINES} lines of code "
                     f"({MAX_EXPERIMENT_FUNCTION_LINES} in {HARNESS}/): {new}")  # fmt: skip
    done = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not done, f"no longer over the limit, remove from LONG_FUNCTIONS: {done}"


def test_modules_are_short_but_for_the_listed_ones():
    long = {
        path.relative_to(ROOT).as_posix(): n
        for path, _ in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    new = {k: v for k, v in long.items() if k not in LONG_MODULES}
    assert not new, f"modules over {MAX_MODULE_LINES} lines: {new}"
    done = sorted(set(LONG_MODULES) - set(long))
    assert not done, f"no longer over the limit, remove from LONG_MODULES: {done}"
