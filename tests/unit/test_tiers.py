"""The test suite's own floor plan: two tiers, the tier as the marker, fixtures not copied.

``tests/unit`` needs no server; ``tests/integration`` needs one, and its conftest.py marks every
test there ``integration``. scripts/run-tests runs the tiers in phases and names the files of its
Elasticsearch 8 phase.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.support import REPO_ROOT

TESTS = REPO_ROOT / "tests"
SERVER_FIXTURES = {"es_url", "es_client", "index_name", "cranfield_index"}


def tier_files(tier: str) -> list[Path]:
    return sorted((TESTS / tier).rglob("test_*.py"))


def parameters(path: Path) -> set[str]:
    """The parameter names of the functions (tests and fixtures) defined in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    return {arg.arg for function in functions for arg in function.args.args}


def fixtures(path: Path) -> dict[str, str]:
    """The fixtures that ``path`` defines: their names and the source of their bodies."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: "\n".join(ast.unparse(statement) for statement in node.body)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)
    }


def test_every_test_file_is_in_a_tier() -> None:
    assert not list(TESTS.glob("test_*.py")), (
        "a test file belongs in tests/unit or tests/integration"
    )
    assert tier_files("unit")
    assert tier_files("integration")


def test_unit_tests_ask_for_no_server() -> None:
    asking = [path.name for path in tier_files("unit") if parameters(path) & SERVER_FIXTURES]
    assert asking == [], "tests that need a server belong in tests/integration"


def integration_marks(path: Path) -> list[ast.Attribute]:
    """The ``pytest.mark.integration`` expressions in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "integration"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    ]


def test_the_tier_is_the_marker() -> None:
    marking = [
        path.relative_to(TESTS).as_posix()
        for path in tier_files("unit") + tier_files("integration")
        if integration_marks(path)
    ]
    assert marking == [], "tests/integration/conftest.py marks the tier; a test file does not"


def test_fixtures_are_not_copied_from_file_to_file() -> None:
    """A fixture that two test files would define alike belongs in a conftest.py."""
    files = defaultdict(list)
    for path in tier_files("unit") + tier_files("integration"):
        for name, body in fixtures(path).items():
            files[name, body].append(path.name)
    copied = {name: where for (name, _), where in files.items() if len(where) > 1}
    assert copied == {}


def test_the_es8_phase_names_files_that_exist() -> None:
    script = (REPO_ROOT / "scripts" / "run-tests").read_text(encoding="utf-8")
    listed = re.search(r"ES8_TESTS=\(\n(.*?)\n\)", script, flags=re.S)
    assert listed is not None
    paths = listed.group(1).split()
    assert paths
    assert all((REPO_ROOT / path).is_file() for path in paths), paths


def test_pytest_collects_the_two_tiers() -> None:
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'testpaths = ["tests/unit", "tests/integration"]' in pyproject
