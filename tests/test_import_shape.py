"""The engine's import shape: no import cycle between engine modules, and no engine import hidden in a function.

An import inside a function hides a dependency from the reader and from this check, and usually hides a cycle.
engine/cli/ may import lazily (`--help` must stay fast: tests/test_cli_imports.py); anywhere else a
function-level import of an engine module needs an entry in ALLOWED with its reason. Imports under
`if TYPE_CHECKING:` never run and are left out of the graph, and so are the allowed imports: each is a
dependency its reason accepts.

Run as a script (`python tests/test_import_shape.py`) to print the counts and the cycles.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"

#: (importing module, imported module) -> why that import stays inside a function
ALLOWED: dict[tuple[str, str], str] = {
    ("engine.executors", "engine.executors.ray_executor"):
        "Ray is an optional heavy dependency: the local executor never imports it",
    ("engine.store", "engine.store.overlay"):
        "Store.overlay() builds a SessionOverlay, a subclass of Store: the one cycle kept, and kept lazy",
}


def _module_name(path: pathlib.Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(nodes, in_function: bool = False):
    """(import node, inside a function?) for every import among `nodes` and below that runs: the body of an
    `if TYPE_CHECKING:` is left out (its else branch is kept)."""
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from _imports(node.orelse, in_function)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _imports(ast.iter_child_nodes(node), inner)


def engine_modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(ENGINE.rglob("*.py"))}


def _targets(node: ast.Import | ast.ImportFrom, modules: dict) -> set[str]:
    """The engine modules an import statement loads (the deepest module each name resolves to)."""
    if isinstance(node, ast.ImportFrom):
        if node.level or not node.module:
            return set()
        # `from package import submodule` loads the submodule; `from module import name`, the module
        names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                 for alias in node.names]
    else:
        names = [alias.name for alias in node.names]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name.startswith("engine.") or name == "engine":
            found.add(name)
    return found


def import_shape() -> tuple[dict[str, set[str]], list[tuple[str, int, str, str]]]:
    """(module -> the engine modules it imports, ALLOWED imports left out; [(module, line, imported module,
    statement)] of the imports inside functions)."""
    modules = engine_modules()
    graph: dict[str, set[str]] = collections.defaultdict(set)
    in_functions = []
    for module, path in modules.items():
        for node, in_function in _imports([ast.parse(path.read_text(), str(path))]):
            for target in _targets(node, modules) - {module}:
                if in_function:
                    in_functions.append((module, node.lineno, target, ast.unparse(node)))
                if not (in_function and (module, target) in ALLOWED):
                    graph[module].add(target)
    return graph, in_functions


def _is_cli(module: str) -> bool:
    return module == "engine.cli" or module.startswith("engine.cli.")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), engine.cli left out."""
    nodes = sorted({m for m in graph if not _is_cli(m)} | {t for ts in graph.values() for t in ts if not _is_cli(t)})
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if _is_cli(target) or _is_cli(node):
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(found)


def hidden_imports() -> list[tuple[str, int, str, str]]:
    """Function-level engine imports outside engine/cli and the allow-list."""
    _, in_functions = import_shape()
    return [entry for entry in in_functions if not _is_cli(entry[0]) and (entry[0], entry[2]) not in ALLOWED]


def test_no_import_cycle_between_engine_modules():
    graph, _ = import_shape()
    assert cycles(graph) == []


def test_no_engine_import_inside_a_function_outside_the_cli():
    found = hidden_imports()
    assert not found, "move these imports to the top of their module (or add them to ALLOWED with a reason):\n" + \
        "\n".join(f"  {module}:{line}: {statement}" for module, line, _, statement in found)


def test_every_allowed_import_is_still_there():
    _, in_functions = import_shape()
    present = {(module, target) for module, _, target, _ in in_functions}
    assert set(ALLOWED) <= present, f"stale ALLOWED entries: {sorted(set(ALLOWED) - present)}"


if __name__ == "__main__":
    shape, inside = import_shape()
    outside_cli = [entry for entry in inside if not _is_cli(entry[0])]
    print(f"function-level engine imports: {len(inside)} ({len(outside_cli)} outside engine/cli, "
          f"{len(hidden_imports())} of them not allowed)")
    for entry in hidden_imports():
        print(f"  {entry[0]}:{entry[1]}: {entry[3]}")
    found_cycles = cycles(shape)
    print(f"import cycles between engine modules (engine/cli left out): {len(found_cycles)}")
    for component in found_cycles:
        print("  " + " <-> ".join(component))
