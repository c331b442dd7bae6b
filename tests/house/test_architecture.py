"""The package's shape, kept true by tests.

1. No import cycle between the package's modules (every import counts,
   function-level ones too; `if TYPE_CHECKING:` imports do not run and are
   left out).
2. The pipeline's direction: base <- front <- ranks <- engine <- rules <-
   report | fmt <- lsp <- cli; nothing imports a later stage, and report and fmt
   (the formatter), side by side, do not import each other.  The log importers sit
   beside the rules: they may use base, front, ranks and engine, and only
   the CLI uses them.  (`lint-imports` checks the
   same layers from pyproject's contracts; this test needs no extra tool.)
3. No function over 80 lines in front/ or engine/.
4. The report imports no rule file (effspec.rules.<family>.<EFFnnn>): what
   the rules and the report both read (the peak readings, the sample count a
   spread needs) lives in the engine, below both.
5. The checkers themselves find a planted cycle, an upward import and a long
   function, so they cannot pass vacuously.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "compiler"

# Lower number = earlier stage.  The root package is the Python API that
# runs the pipeline (load, check_text): above the rules, below the report
# and the CLI, which use it.  The language server (lsp) sits above the report
# and below the CLI, whose `effspec lsp` starts it.  __main__ sits on top.
LAYERS = {
    "diagnostics": 0, "codes": 0, "display": 0, "version": 0, "atomic": 0, "data": 0,
    "api": 5,  # effspec.api: the Python API for the IR as JSON, beside the root package's
    "front": 1, "ranks": 2, "engine": 3, "importers": 3.5, "rules": 4, "report": 6, "fmt": 6, "lsp": 7, "cli": 8,
}
API = 5
TOP = 9
MAX_FUNCTION_LINES = 80


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["effspec", *parts])


@functools.cache
def _parsed() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def modules() -> dict[str, ast.Module]:
    """Every module's tree, parsed once for the file's tests (the planted checks add to a copy)."""
    return dict(_parsed())


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of import nodes inside `if TYPE_CHECKING:` blocks."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def import_graph(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """module -> the package modules it imports (relative imports resolved)."""
    known = set(trees)
    graph: dict[str, set[str]] = {}
    for name, tree in trees.items():
        resolved = (full if full in known else base for full, base in _imports_of(name, tree))
        graph[name] = {t for t in resolved if t in known and t != name}
    return graph


_IMPORTS: dict[str, tuple[ast.Module, list[tuple[str, str]]]] = {}  # module -> (its tree, its imports), per tree


def _imports_of(name: str, tree: ast.Module) -> list[tuple[str, str]]:
    """Each name the module imports, as (module.name, module): the first where it is a module, else the second
    (``from effspec.engine import gap`` names a module, ``from effspec.engine.gap import Budget`` does not)."""
    seen = _IMPORTS.get(name)
    if seen is not None and seen[0] is tree:
        return seen[1]
    skip = _type_checking_only(tree)
    is_package = (PACKAGE / pathlib.Path(*name.split(".")[1:]) / "__init__.py").exists() or name == "effspec"
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found += [(f"{base}.{alias.name}", base) for alias in node.names]
    _IMPORTS[name] = (tree, found)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], TOP) if len(parts) > 1 else API


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{src} -> {dst}" for src, dsts in graph.items() for dst in dsts if layer(dst) > layer(src))


def long_functions(trees: dict[str, ast.Module], packages: tuple[str, ...]) -> list[str]:
    out = []
    for name, tree in trees.items():
        if not any(name == f"effspec.{p}" or name.startswith(f"effspec.{p}.") for p in packages):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{name}.{node.name}: {length} lines")
    return out


# ----------------------------------------------------------------------------


def test_the_package_has_no_import_cycle():
    assert cycles(import_graph(modules())) == []


def test_every_import_points_to_an_earlier_stage():
    assert upward_imports(import_graph(modules())) == []


def test_report_and_fmt_are_independent_siblings():
    graph = import_graph(modules())

    def stage(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    crossing = sorted(f"{src} -> {dst}" for src, dsts in graph.items() for dst in dsts if {stage(src), stage(dst)} == {"report", "fmt"})
    assert not crossing, crossing


def test_every_top_level_part_of_the_package_has_a_layer():
    tops = {name.split(".")[1] for name in modules() if name.count(".") >= 1} - {"__main__"}
    assert tops <= set(LAYERS), f"give {sorted(tops - set(LAYERS))} a layer in LAYERS"


def test_no_function_in_front_or_engine_is_over_80_lines():
    assert long_functions(modules(), ("front", "engine")) == []


RULE_FILE = re.compile(r"^effspec\.rules\.[a-z_]+\.EFF\d{3}$")


def rule_file_imports(graph: dict[str, set[str]], stage: str = "report") -> list[str]:
    """The imports of a rule file (``effspec.rules.<family>.<EFFnnn>``) by a module of ``stage``."""
    return sorted(f"{src} -> {dst}" for src, dsts in graph.items() for dst in dsts
                  if src.split(".")[1:2] == [stage] and RULE_FILE.match(dst))


def test_the_report_imports_no_rule_file():
    assert rule_file_imports(import_graph(modules())) == []


def test_the_rule_file_check_finds_a_planted_import():
    trees = {**modules(), "effspec.report.planted": ast.parse("from effspec.rules.sampling.EFF502 import EFF502\n")}
    assert rule_file_imports(import_graph(trees)) == ["effspec.report.planted -> effspec.rules.sampling.EFF502"]


def test_the_checkers_find_a_planted_cycle_an_upward_import_and_a_long_function():
    trees = modules()
    planted = {**trees,
               "effspec.front.planted": ast.parse("from effspec.engine.results import Metric\n"),
               "effspec.engine.results": ast.parse(ast.unparse(trees["effspec.engine.results"])
                                                   + "\nfrom effspec.front import planted\n")}
    graph = import_graph(planted)
    assert ["effspec.engine.results", "effspec.front.planted"] in cycles(graph)
    assert "effspec.front.planted -> effspec.engine.results" in upward_imports(graph)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    long_tree = {"effspec.engine.planted": ast.parse(f"def f():\n{body}\n")}
    assert long_functions(long_tree, ("engine",)) == [f"effspec.engine.planted.f: {MAX_FUNCTION_LINES + 1} lines"]


def test_relative_imports_resolve_like_absolute_ones():
    trees = {"effspec.rules": ast.parse(""), "effspec.rules.claims": ast.parse(""),
             "effspec.rules.claims.EFF999": ast.parse("from .. import Rule\nfrom ...codes import CODES\n"),
             "effspec.codes": ast.parse("")}
    assert import_graph(trees)["effspec.rules.claims.EFF999"] == {"effspec.rules", "effspec.codes"}
