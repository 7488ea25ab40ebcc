"""The package's import graph, read from its source (every import, lazy ones in functions included, but not those
under ``if TYPE_CHECKING``): no cycle between modules, where a package's ``__init__.py`` is a module like any
other (``fedtopic`` itself included); the layer rules of docs/architecture.md hold."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import fedtopic

ROOT = Path(fedtopic.__file__).resolve().parent


@cache
def module_files() -> dict[str, Path]:
    """Dotted module name → file, ``pkg/__init__.py`` named ``pkg``."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports (``from a import b`` counts ``a.b`` when that is a module, else ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_checker_sees_a_cycle_through_a_package_init():
    edges = {"p": {"p.api"}, "p.api": {"p.sim"}, "p.sim": {"p"}, "p.other": set()}
    assert cycles(edges) == [["p", "p.api", "p.sim"]]


def test_no_import_cycle_package_roots_included():
    edges = graph()
    assert "fedtopic" in edges and "fedtopic.api" in edges["fedtopic"]  # the root's lazy import is seen
    assert cycles(edges) == []


def test_nothing_inside_imports_the_package_root():
    edges = graph()
    assert [m for m, targets in edges.items() if "fedtopic" in targets] == []


def test_layer_rules():
    edges = graph()
    for module, targets in edges.items():
        layer = module.split(".")[1] if "." in module else ""
        if layer == "algorithms":
            assert not {t for t in targets if t.split(".")[1:2] in (["ledger"], ["network"], ["node"])}, module
        if layer in ("network", "protections", "crypto"):  # the aggregator checks data, never an algorithm
            assert not {t for t in targets if t.startswith("fedtopic.algorithms")}, module
        if layer == "node":  # a party's runtime only: no algorithm's own modules (algorithms/<name>/)
            assert not {t for t in targets if t.startswith("fedtopic.algorithms.") and t.count(".") > 2}, module
        if layer == "engines":  # where parties run knows nothing of what they compute or how they talk
            assert not {t for t in targets if t.split(".")[1:2] not in (["engines"], ["errors"], ["plugins"])}, module
        if layer in ("protections", "crypto", "algorithms", "network"):  # only launchers choose an engine
            assert not {t for t in targets if t.startswith("fedtopic.engines")}, module
        if layer != "links":  # a link is reached by its name through the registry, never by its module
            assert not {t for t in targets if t.startswith("fedtopic.links.") and t not in (
                "fedtopic.links.base", "fedtopic.links.registry")}, module
        if layer in ("protections", "crypto"):  # protections sit below every transport
            assert not {t for t in targets if t.split(".")[1:2] in (["network"], ["node"], ["ledger"],
                                                                   ["simulation"])}, module
        if layer in ("models", "corpus", "crypto", "privacy", "runs"):
            assert not {t for t in targets if t.split(".")[1:2] in (["node"], ["simulation"], ["experiments"])}, module
        if layer not in ("cli", "experiments"):
            assert not {t for t in targets if t.startswith("fedtopic.experiments")}, module
        if layer not in ("cli", "dashboard"):  # the dashboard only reads what the runtimes write
            assert not {t for t in targets if t.startswith("fedtopic.dashboard")}, module
        if layer != "testing":  # the conformance kit checks the package from outside; nothing inside leans on it
            assert not {t for t in targets if t.startswith("fedtopic.testing")}, module
        if "torch" in {a.split(".")[0] for a in _external_imports(module)}:
            assert layer == "neural", f"{module} imports torch outside fedtopic/neural"


def _external_imports(module: str) -> set[str]:
    path = module_files()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out
