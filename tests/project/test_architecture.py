"""The architecture rules of issue 11 as tests: layers, no cycles, no framework in the core, module hygiene.

The import graph comes from grimp (the engine behind import-linter), which counts imports under
``TYPE_CHECKING`` and inside functions; ``test_grimp_sees_every_import`` checks that against an ``ast`` pass.
``[tool.importlinter]`` in pyproject.toml states the same layers for ``lint-imports``; these tests are the gate.
docs/architecture.md explains the layers.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import io
import itertools
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "chaoskit"
INTEGRATIONS_DIR = ROOT / "integrations"
INTEGRATIONS = tuple(sorted(p.parent.name for p in INTEGRATIONS_DIR.glob("*/__init__.py")))

#: the layers, top first; the packages or modules in one row are siblings and never import each other
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "testing"),
    ("report",),
    ("runner",),
    ("suggest",),
    ("scenarios",),
    ("replay",),
    ("judge",),
    ("metrics",),
    ("grading",),
    ("traces",),
    ("adapters",),
    ("engine",),
    ("telemetry", "plan"),
    ("semconv", "_errors", "_refs", "_version"),
)
#: the public facades sit above every layer, and no module inside the package imports them
FACADES = frozenset({PACKAGE, f"{PACKAGE}.checks", f"{PACKAGE}.faults", f"{PACKAGE}.__main__"})
LEVEL = {unit: len(LAYERS) - i for i, row in enumerate(LAYERS) for unit in row}

#: top-level names the core must never import (the frameworks and chaoskit's own integrations)
FORBIDDEN_IN_CORE = re.compile(
    r"^(langchain\w*|langgraph\w*|mcp|chaoskit_langchain|chaoskit_langgraph|chaoskit_mcp|chaoskit_http|httpcore|httptools|uvicorn|uvloop)$"
)

#: a module holds one concept and may run to about 1,000 lines; a function stays under about 80 (issue 26)
MAX_LINES = 1000
MAX_FUNCTION_LINES = 80
MAX_TYPE_IGNORES = 5  # fewer than this many in chaoskit/ + integrations/


@functools.cache
def graph() -> grimp.ImportGraph:
    """The import graph of chaoskit and its integrations, external packages squashed to their top-level name."""
    return grimp.build_graph(PACKAGE, *INTEGRATIONS, include_external_packages=True, cache_dir=None)


def internal_modules() -> set[str]:
    """Every module of the chaoskit package, the root included."""
    return {PACKAGE} | graph().find_descendants(PACKAGE)


def where(importer: str, imported: str) -> str:
    """``line N: `statement``` for each place ``importer`` imports ``imported``, for failure messages."""
    details = graph().get_import_details(importer=importer, imported=imported)
    return "; ".join(f"line {d['line_number']}: `{d['line_contents']}`" for d in details) or "(no details)"


def unit_of(module: str) -> str:
    """The layer unit a chaoskit module belongs to: its first name under ``chaoskit`` (``engine``, ``semconv``)."""
    return module.split(".")[1]


def source_files() -> list[Path]:
    """Every ``.py`` file under chaoskit/ and integrations/."""
    return sorted([*(ROOT / PACKAGE).rglob("*.py"), *INTEGRATIONS_DIR.rglob("*.py")])


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def module_name(path: Path) -> str:
    """``chaoskit/engine/_attempt.py`` -> ``chaoskit.engine._attempt``; integrations drop the folder."""
    parts = list(path.relative_to(INTEGRATIONS_DIR if path.is_relative_to(INTEGRATIONS_DIR) else ROOT).parts)
    parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_public(module: str) -> bool:
    """A module no part of whose dotted name starts with ``_`` (``chaoskit.grading.checks``, not ``chaoskit._errors``)."""
    return not any(part.startswith("_") for part in module.split("."))


# --- layers, facades, cycles ---------------------------------------------------------------------------------


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted(m for m in internal_modules() if m not in FACADES and unit_of(m) not in LEVEL)
    assert not unplaced, (
        f"modules in no layer: {unplaced}; put each in a layer package, or add it to LAYERS here, to "
        "[tool.importlinter] in pyproject.toml and to docs/architecture.md"
    )


def test_layers_are_imported_one_way_only() -> None:
    broken = []
    for importer in sorted(internal_modules() - FACADES):
        here = unit_of(importer)
        if here not in LEVEL:
            continue  # reported by test_every_module_belongs_to_a_layer
        for imported in sorted(graph().find_modules_directly_imported_by(importer)):
            if not imported.startswith(f"{PACKAGE}.") or imported in FACADES:
                continue  # facades: test_nothing_inside_the_package_imports_a_facade
            there = unit_of(imported)
            if there == here or there not in LEVEL or LEVEL[here] > LEVEL[there]:
                continue
            how = "a sibling in its row" if LEVEL[here] == LEVEL[there] else "a higher layer"
            broken.append(f"{importer} ({here}) imports {imported} ({there}, {how}): {where(importer, imported)}")
    rows = " > ".join(" | ".join(row) for row in LAYERS)
    assert not broken, f"layers are {rows}; imports must point down:\n" + "\n".join(broken)


def test_nothing_inside_the_package_imports_a_facade() -> None:
    broken = [
        f"{importer} imports {imported}: {where(importer, imported)}"
        for importer in sorted(internal_modules() - FACADES)
        for imported in sorted(graph().find_modules_directly_imported_by(importer) & FACADES)
    ]
    assert not broken, (
        f"inside the package, import from the module that defines a name, never from {sorted(FACADES)}:\n"
        + "\n".join(broken)
    )


def strongly_connected(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (the graph may be deeper than the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(nodes):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
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
                components.append(sorted(component))
    return components


def shortest_loop(start: str, edges: dict[str, set[str]]) -> list[str]:
    """The shortest path ``start -> ... -> start`` (breadth first); ``[start]`` when there is none."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node]):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return [start]


def test_strongly_connected_finds_cycles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert sorted(strongly_connected(set(edges), edges)) == [["a", "b", "c"], ["d"], ["e"]]
    assert shortest_loop("a", edges) == ["a", "b", "c", "a"]
    assert shortest_loop("d", edges) == ["d"]


def test_no_import_cycles() -> None:
    # the integrations are in the graph so that a cycle through them (core -> integration -> core) shows
    tops = (PACKAGE, *INTEGRATIONS)
    nodes = {m for top in tops for m in graph().find_descendants(top) | {top}}
    edges = {m: graph().find_modules_directly_imported_by(m) & nodes for m in nodes}
    cycles = [c for c in strongly_connected(nodes, edges) if len(c) > 1]
    lines = []
    for cycle in cycles:
        members = set(cycle)
        loop = shortest_loop(cycle[0], {m: edges[m] & members for m in cycle})
        lines.append(f"cycle of {len(cycle)} modules: {', '.join(cycle)}; for example:")
        lines += [f"    {a} -> {b}: {where(a, b)}" for a, b in itertools.pairwise(loop)]
    assert not cycles, "import cycles (each module must reach no module that reaches it back):\n" + "\n".join(lines)


def test_the_core_imports_no_framework() -> None:
    broken = [
        f"{importer} imports {imported}: {where(importer, imported)}"
        for importer in sorted(internal_modules())
        for imported in sorted(graph().find_modules_directly_imported_by(importer))
        if FORBIDDEN_IN_CORE.match(imported.split(".")[0])
    ]
    # grimp cannot see an import spelt as a string; a literal one is as much an import
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and _callee(node) in {"import_module", "__import__", "find_spec"}
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and FORBIDDEN_IN_CORE.match(node.args[0].value.split(".")[0])
            ):
                broken.append(f"{module_name(path)} imports {node.args[0].value!r} by name: line {node.lineno}")
    assert not broken, (
        "no langchain*, langgraph, mcp or chaoskit_langchain/chaoskit_langgraph import under chaoskit/ "
        "(an integration plugs in through chaoskit.engine / chaoskit.adapters instead):\n" + "\n".join(broken)
    )


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


# --- what grimp sees -----------------------------------------------------------------------------------------


def _resolve(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    """The modules an import statement imports, named as grimp names them (external ones by top-level name)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in graph().modules else base for alias in node.names]
    known = graph().modules
    out = set()
    for name in names:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        out.add(name)
    return out


def _imports_in(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it sits: ``module``, ``function`` or ``TYPE_CHECKING``."""

    def walk(node: ast.AST, context: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, context
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, "function")
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), "TYPE_CHECKING")
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), context)
            else:
                yield from walk(child, context)

    yield from walk(tree, "module")


def test_grimp_sees_every_import() -> None:
    """Imports under TYPE_CHECKING and inside functions count: check that the graph above has each of them."""
    missing = []
    seen = {"module": 0, "function": 0, "TYPE_CHECKING": 0}
    for path in source_files():
        module = module_name(path)
        for node, context in _imports_in(ast.parse(path.read_text(encoding="utf-8"))):
            for imported in _resolve(node, module, path.name == "__init__.py"):
                if imported == module or imported in {"__future__"}:
                    continue
                seen[context] += 1
                if imported not in graph().find_modules_directly_imported_by(module):
                    missing.append(f"{rel(path)}:{node.lineno} ({context}) {ast.unparse(node)} -> {imported}")
    assert not missing, "imports the graph misses:\n" + "\n".join(missing)
    assert seen["function"] and seen["TYPE_CHECKING"], seen  # the check above really covered both kinds


# --- the integrations use the public interface only ----------------------------------------------------------


def _private(name: str) -> bool:
    return name.startswith("_") and name != "__version__"


def test_integrations_import_only_public_chaoskit_names() -> None:
    broken = []
    for path in sorted(INTEGRATIONS_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: set[str] = set()  # local names bound to a chaoskit module, for attribute access below
        for node, _ in _imports_in(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE:
                        bad = [p for p in alias.name.split(".") if _private(p)]
                        if bad:
                            broken.append(f"{rel(path)}:{node.lineno} `{ast.unparse(node)}` names {bad}")
                        bound.add(alias.asname or PACKAGE)
            elif node.level == 0 and node.module and node.module.split(".")[0] == PACKAGE:
                bad = [p for p in node.module.split(".") if _private(p)]
                bad += [alias.name for alias in node.names if _private(alias.name)]
                if bad:
                    broken.append(f"{rel(path)}:{node.lineno} `{ast.unparse(node)}` names {bad}")
                bound |= {
                    alias.asname or alias.name
                    for alias in node.names
                    if f"{node.module}.{alias.name}" in graph().modules
                }
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base: ast.expr = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in bound:
                    broken.append(f"{rel(path)}:{node.lineno} `{ast.unparse(node)}` reaches a private name")
    assert not broken, (
        "integrations use only public chaoskit names (chaoskit, chaoskit.engine, chaoskit.adapters, ...), "
        "never a module or name starting with '_':\n" + "\n".join(broken)
    )


# --- module hygiene ------------------------------------------------------------------------------------------


def test_functions_are_at_most_80_lines() -> None:
    sizes: dict[str, int] = {}
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    sizes[f"{rel(path)}:{node.name}"] = max(n, sizes.get(f"{rel(path)}:{node.name}", 0))
    over = [f"{name}: {n} lines" for name, n in sorted(sizes.items()) if n > MAX_FUNCTION_LINES]
    assert not over, f"every function has at most {MAX_FUNCTION_LINES} lines, with no exceptions:\n" + ("\n".join(over))


def test_modules_are_at_most_1000_lines() -> None:
    sizes = {rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in source_files()}
    over = [f"{name}: {n} lines" for name, n in sorted(sizes.items()) if n > MAX_LINES]
    assert not over, f"every module under chaoskit/ and integrations/ has at most {MAX_LINES} lines:\n" + "\n".join(
        over
    )


ONE_SENTENCE = re.compile(r"^[^\s].*[.!?]$")
# a sentence end followed by another sentence; abbreviations (e.g., i.e., etc., vs.) do not end one
SENTENCE_BREAK = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?][\"')\]]*\s+[A-Z`]")


def test_every_module_starts_with_a_one_sentence_docstring() -> None:
    broken = []
    for path in source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree, clean=True)
        if not doc:
            broken.append(f"{rel(path)}: no module docstring as its first statement")
            continue
        first = doc.splitlines()[0].strip()
        if not ONE_SENTENCE.match(first) or SENTENCE_BREAK.search(first):
            broken.append(f"{rel(path)}: first line is not one whole sentence: {first!r}")
    assert not broken, "each module starts with a docstring whose first line says its job in one sentence:\n" + (
        "\n".join(broken)
    )


def public_modules() -> list[str]:
    """Every public chaoskit and integration module (the ones with no ``_``-prefixed part), by name."""
    return sorted({name for name in map(module_name, source_files()) if is_public(name)} - {f"{PACKAGE}.__main__"})


def _own_doc(obj: Any) -> str | None:
    """The docstring an object has itself: not one inherited, not one a dataclass or Enum makes up."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if isinstance(obj, type) and doc:
        if dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
            return None
        if doc in {"An enumeration.", "Create a collection of name/value pairs."}:
            return None
    return doc.strip() if isinstance(doc, str) else None


def _documented_in_source(module: str, name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``name`` in ``module`` has an attribute docstring (a string right after it, or ``#:`` above it).

    Follows ``from x import y as name`` and ``from x import *`` to the module that assigns the name.
    """
    if module in seen:
        return False
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    text = Path(spec.origin).read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    body = tree.body
    stub = Path(spec.origin).with_suffix(".pyi")
    if stub.exists():
        # a lazily importing package names its public names in its stub: follow the stub's imports too
        body = [*body, *(s for s in ast.parse(stub.read_text(encoding="utf-8")).body if isinstance(s, ast.ImportFrom))]
    for i, stmt in enumerate(body):
        targets: list[ast.expr] = (
            stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            after = body[i + 1] if i + 1 < len(body) else None
            if (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                return True
            return stmt.lineno >= 2 and lines[stmt.lineno - 2].lstrip().startswith("#:")
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:
                package = module.split(".") if spec.origin.endswith("__init__.py") else module.split(".")[:-1]
                package = package[: len(package) - stmt.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in stmt.names:
                if alias.name == "*" or (alias.asname or alias.name) == name:
                    original = name if alias.name == "*" else alias.name
                    if _documented_in_source(base, original, seen | {module}):
                        return True
    return False


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for module in public_modules():
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if isinstance(obj, type) or inspect.isroutine(obj) or inspect.ismodule(obj):
                documented = bool(_own_doc(obj))
            else:  # a constant or type alias: its docstring is in the source, after it or as a #: comment above
                documented = _documented_in_source(module, name)
            if not documented:
                missing.append(f"{module}.{name}")
    assert not missing, "public names (in a public module's __all__) without a docstring:\n" + "\n".join(missing)


TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore\b")
WITH_REASON = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?\s*#\s*\S")


def test_few_type_ignores_each_with_a_reason() -> None:
    found = []
    for path in source_files():
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        found += [
            (rel(path), t.start[0], t.string)
            for t in tokens
            if t.type == tokenize.COMMENT and TYPE_IGNORE.search(t.string)
        ]
    listing = "\n".join(f"{name}:{line} {comment}" for name, line, comment in found)
    assert len(found) < MAX_TYPE_IGNORES, (
        f"{len(found)} `type: ignore` (fewer than {MAX_TYPE_IGNORES} allowed):\n{listing}"
    )
    bare = [f"{name}:{line} {comment}" for name, line, comment in found if not WITH_REASON.search(comment)]
    assert not bare, "each `type: ignore` needs a reason on the same line (`# type: ignore[code]  # why`):\n" + (
        "\n".join(bare)
    )


def test_every_semconv_name_is_in_docs_semconv_md() -> None:
    import chaoskit.semconv as semconv

    doc = (ROOT / "docs" / "semconv.md").read_text(encoding="utf-8")
    names = [n for n in vars(semconv) if n.isupper() and isinstance(getattr(semconv, n), str)]
    missing = [f"{n} = {getattr(semconv, n)!r}" for n in names if f"`{n}`" not in doc]
    assert not missing, "constants of chaoskit/semconv.py with no row in docs/semconv.md:\n" + "\n".join(missing)


def test_module_names_are_unique_in_the_package() -> None:
    """A module's name says what is inside, once: no two modules of chaoskit share a file name (issue 26)."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        # a facade at the root (chaoskit/checks.py) is the public name of the module it re-exports
        if path.name != "__init__.py" and module_name(path) not in FACADES:
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    repeated = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not repeated, f"module names used more than once: {repeated}"
