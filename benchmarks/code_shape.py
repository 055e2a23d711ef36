"""Code-shape figures of engine/ and ui/+pages/ in the form of ../shared/STYLE.md, plus import structure.

    .venv/bin/python benchmarks/code_shape.py

Prints files/lines, function length (median / p90 / max lines), public functions with a docstring, annotated
arguments, assigned names of 1-2 characters, function-level imports of engine modules (inside engine/, and
outside engine/cli/), and import cycles between engine modules (strongly connected components, engine/cli
excluded), read as tests/test_import_shape.py reads them: that test is the gate, this prints the figures.
"""

from __future__ import annotations

import ast
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_import_shape import cycles, import_shape  # noqa: E402  (after the path is set)


def _files(*dirs: str) -> list[pathlib.Path]:
    out = []
    for d in dirs:
        path = ROOT / d
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


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


def main() -> None:
    engine = _files("engine")
    for label, files in (("engine/", engine), ("ui+pages", _files("ui", "pages", "app.py"))):
        print(f"{label}:")
        for key, value in shape(files).items():
            print(f"  {key}: {value}")
    graph, inside = import_shape()  # the gate's own reading of the imports (TYPE_CHECKING blocks left out)
    found = cycles(graph)
    outside_cli = sum(not module.startswith("engine.cli") for module, *_ in inside)
    print(f"function-level engine imports inside engine/: {len(inside)} ({outside_cli} outside engine/cli)")
    print(f"import cycles between engine modules (engine/cli excluded): {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))


if __name__ == "__main__":
    main()
