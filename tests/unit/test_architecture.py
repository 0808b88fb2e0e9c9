"""The package's floor plan: data flows one way, no import cycles, the library does not lean on
the developer tools, and no line is kept from the formatter.

The import graph is read from the source (every ``import``, module-level or not), so a cycle
hidden inside a function is found too. Modules, classes and functions are sized by what they do:
no line count is imposed (a count invites splits made to fit it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "es_scm"

# Each layer may import only itself and the layers after it in this list.
LAYERS = [
    "cli",
    "evaluation",
    "demo",
    "integrations",
    "elastic",
    "search",
    "index",
    "model",
    "fusion",
    "similarity",
    "corpus",
    "documents",
    "tools",
    "encoder",
    "engines",
    "options",
    "extras",
    "processes",
    "progress",
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


def test_every_layer_is_known(graph: dict[str, set[str]]) -> None:
    assert {layer(m) for m in graph} - {"__init__"} <= set(LAYERS)


# The layers a library user runs: what they import must not need the local runner's code (a
# model is saved and loaded the same way on any machine, with or without es_scm.tools).
LIBRARY = (
    "integrations",
    "elastic",
    "search",
    "index",
    "model",
    "fusion",
    "similarity",
    "corpus",
    "documents",
    "engines",
)


def test_the_library_does_not_import_the_developer_tools(graph: dict[str, set[str]]) -> None:
    leaning = sorted(
        (source, target)
        for source, targets in graph.items()
        if layer(source) in LIBRARY
        for target in targets
        if layer(target) == "tools"
    )
    assert leaning == []


def test_no_formatter_escapes() -> None:
    """The formatter lays out every line: no ``fmt: skip``/``fmt: off`` keeps a line short."""
    escapes = [
        f"{path.relative_to(PACKAGE.parent)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert escapes == []
