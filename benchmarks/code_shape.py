"""Code-shape figures of engine/ and ui/+pages/ in the form of ../shared/STYLE.md, plus import structure.

    .venv/bin/python benchmarks/code_shape.py

Prints files/lines, function length (median / p90 / max lines), public functions with a docstring, annotated
arguments, assigned names of 1-2 characters, function-level imports of engine modules (inside engine/, and
outside engine/cli/), and import cycles between engine modules (strongly connected components, engine/cli
excluded). A figure, not a gate: tests/test_import_shape.py is the gate on imports.
"""

from __future__ import annotations

import ast
import pathlib
import statistics
import sys
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _files(*dirs: str) -> list[pathlib.Path]:
    out = []
    for d in dirs:
        path = ROOT / d
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def _module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def shape(files: list[pathlib.Path]) -> dict[str, str]:
    lines = lengths = 0
    lengths = []
    public = documented = args = annotated = names = short = 0
    for path in files:
        text = path.read_text()
        lines += text.count("\n")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths.append(node.end_lineno - node.lineno + 1)
                if not node.name.startswith("_"):
                    public += 1
                    documented += ast.get_docstring(node) is not None
                for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
                    if arg.arg in ("self", "cls"):
                        continue
                    args += 1
                    annotated += arg.annotation is not None
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id != "_":
                names += 1
                short += len(node.id) <= 2
    lengths.sort()
    p90 = lengths[int(0.9 * (len(lengths) - 1))] if lengths else 0
    return {"files / lines": f"{len(files)} / {lines:,}",
            "function length median / p90 / max": f"{statistics.median(lengths):.0f} / {p90} / {max(lengths)}",
            "public functions with a docstring": f"{documented / max(public, 1):.0%}",
            "annotated arguments": f"{annotated / max(args, 1):.0%}",
            "assigned names of 1-2 characters": f"{short / max(names, 1):.0%}"}


def imports(files: list[pathlib.Path]) -> tuple[int, int, dict[str, set[str]]]:
    """Function-level engine imports (all, outside engine/cli) and the module-level import graph."""
    modules = {_module(p): p for p in files}
    inner = outside_cli = 0
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        nested = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nested |= {id(sub) for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom):
                targets = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                targets = [a.name for a in node.names]
            targets = [t for t in targets if t.startswith("engine")]
            if not targets:
                continue
            if id(node) in nested:
                inner += 1
                outside_cli += not name.startswith("engine.cli")
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return inner, outside_cli, graph


def cycles(graph: dict[str, set[str]], skip: str = "engine.cli") -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), modules under `skip` left out."""
    graph = {a: {b for b in bs if not b.startswith(skip)} for a, bs in graph.items() if not a.startswith(skip)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
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

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def main() -> None:
    engine = _files("engine")
    for label, files in (("engine/", engine), ("ui+pages", _files("ui", "pages", "app.py"))):
        print(f"{label}:")
        for key, value in shape(files).items():
            print(f"  {key}: {value}")
    inner, outside_cli, graph = imports(engine)
    found = cycles(graph)
    print(f"function-level engine imports inside engine/: {inner} ({outside_cli} outside engine/cli)")
    print(f"import cycles between engine modules (engine/cli excluded): {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))


if __name__ == "__main__":
    main()
