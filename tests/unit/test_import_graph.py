"""No import cycle in service/ or sandbox/: the graph is read from the source with ast, every import
statement counted wherever it stands (module level, inside a function, under TYPE_CHECKING), so a
lazy import that only hides a cycle from the interpreter is still a cycle here."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("service", "sandbox")

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The deepest known module `name` denotes (`a.b.C` -> `a.b` when C is a class), or None."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importer's package, `level - 1` packages up
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            names = [f"{stem}.{alias.name}" for alias in node.names]
            if not f"{module}.".startswith(f"{stem}."):  # an ancestor package is set up before its modules run
                names.append(stem)
        for name in names:
            target = _resolve(name, known)
            if target is None and "." not in name and f"{package}.{name}" in known:
                # a flat import of a sibling: the harness imports `wire` from its job folder
                target = f"{package}.{name}"
            if target is not None and target != module:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    known = _sources()
    return {module: _imports(module, path, known) for module, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path that comes back to its start) per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(start: str) -> None:  # Tarjan, iterative (the graph has hundreds of modules)
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return [_path_within(graph, component) for component in components]


def _path_within(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module, staying inside the component."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node] & component):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if succ not in parents:
                    parents[succ] = node
                    following.append(succ)
        frontier = following
    return sorted(component)


def test_the_graph_is_read_from_the_source() -> None:
    graph = import_graph()
    # a module-level import, a function-level one, and the harness's flat import of its sibling
    assert "service.grading.pipeline" in graph["service.bootstrap"]
    assert "service.db.memo" in graph["service.bootstrap"]  # imported inside build_grader
    assert "sandbox.wire" in graph["sandbox.harness"]


def test_a_cycle_is_found_and_printed() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_service_and_sandbox_have_no_import_cycle() -> None:
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
