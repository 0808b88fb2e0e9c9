"""The package's floor plan: data flows one way, no import cycles, modules of a readable size,
classes and functions sized by responsibility, and no line kept from the formatter.

The import graph is read from the source (every ``import``, module-level or not), so a cycle
hidden inside a function is found too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "es_scm"
MAX_LINES = 520

# Each layer may import only itself and the layers after it in this list.
LAYERS = [
    "cli",
    "evaluation",
    "demo",
    "elastic",
    "model",
    "similarity",
    "corpus",
    "fusion",
    "documents",
    "tools",
    "defaults",
    "options",
    "extras",
    "validation",
    "files",
    "_version",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The es_scm modules that ``path`` imports (relative imports resolved)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("es_scm")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("es_scm"):
                found.add(target)
                found |= {f"{target}.{alias.name}" for alias in node.names}
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {target for target in imports(path) if target in modules and target != name}
        for name, path in modules.items()
    }


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    visiting, done, cycles = set(), set(), []

    def visit(node: str, path: list[str]) -> None:
        if node in done:
            return
        if node in visiting:
            cycles.append([*path[path.index(node) :], node])
            return
        visiting.add(node)
        for target in sorted(graph[node]):
            if not (node.startswith(target + ".") or target == "es_scm"):  # a package's own init
                visit(target, [*path, target])
        visiting.discard(node)
        done.add(node)

    for node in sorted(graph):
        visit(node, [node])
    assert cycles == []


def test_data_flows_one_way(graph: dict[str, set[str]]) -> None:
    backward = []
    for source, targets in graph.items():
        if layer(source) == "__init__":
            continue
        for target in targets:
            if target == "es_scm" or LAYERS.index(layer(target)) < LAYERS.index(layer(source)):
                backward.append((source, target))
    assert backward == []


def test_modules_have_a_readable_size() -> None:
    sizes = {
        module_name(path): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_every_layer_is_known(graph: dict[str, set[str]]) -> None:
    assert {layer(m) for m in graph} - {"__init__"} <= set(LAYERS)


# -- classes and functions sized by responsibility ------------------------------------------------

MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60


def definitions() -> list[tuple[str, ast.AST, list[str]]]:
    """Every class and function of the package: ``module.name:line``, its node, its file's lines."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((f"{module_name(path)}.{node.name}:{node.lineno}", node, lines))
    return found


def lines_of_code(node: ast.AST, lines: list[str]) -> int:
    """A function's lines of code: its lines less its docstring, blank lines and comments."""
    docstring: set[int] = set()
    if ast.get_docstring(node, clean=False) is not None:
        docstring = set(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    return sum(
        1
        for number in range(start, node.end_lineno + 1)
        if number not in docstring
        and lines[number - 1].strip()
        and not lines[number - 1].strip().startswith("#")
    )


def test_lines_of_code_leave_out_docstrings_blanks_and_comments() -> None:
    source = 'def f(x):\n    """Doc.\n\n    More.\n    """\n\n    # why\n    y = x\n    return y\n'
    node = ast.parse(source).body[0]
    assert lines_of_code(node, source.splitlines()) == 3


def test_classes_are_sized_by_responsibility() -> None:
    sizes = {
        name: node.end_lineno - node.lineno + 1
        for name, node, _ in definitions()
        if isinstance(node, ast.ClassDef)
    }
    assert {name: n for name, n in sizes.items() if n > MAX_CLASS_LINES} == {}


def test_functions_are_sized_by_responsibility() -> None:
    sizes = {
        name: lines_of_code(node, lines)
        for name, node, lines in definitions()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert {name: n for name, n in sizes.items() if n > MAX_FUNCTION_LINES} == {}


def test_no_formatter_escapes() -> None:
    """The formatter lays out every line: no ``fmt: skip``/``fmt: off`` keeps a line short."""
    escapes = [
        f"{path.relative_to(PACKAGE.parent)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert escapes == []
