"""The README's and docs/GUIDE.md's Python examples run as written, against the real node.

Each ```python block of README.md, then of docs/GUIDE.md (the manual the README's API sections
moved to), runs in order in one fresh process a block (in one temporary
folder, so a block may load what an earlier one saved), with ``$ES_URL`` pointing at the test
server. A line ``print(EXPR.ids())  # ['2', '1']`` becomes an assertion that ``EXPR.ids()`` is
that list: the ids the README promises are the ids es-scm returns.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "GUIDE.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_PROMISED_IDS = re.compile(r"^(\s*)print\((.+\.ids\(\))\)\s*#\s*(\[[^\]]*\])")
# indices the README's examples create and may leave behind when a block fails midway
_README_INDICES = (
    "readme-tour",
    "news",
    "readme-search",
    "readme-flexible",
    "readme-typed",
    "readme-lifecycle",
)


def readme_blocks() -> list[str]:
    """The python blocks of README.md, then those of docs/GUIDE.md, in order."""
    return [
        match.group(1)
        for page in (README, GUIDE)
        for match in _BLOCK.finditer(page.read_text(encoding="utf-8"))
    ]


def with_assertions(block: str) -> str:
    """``block`` with each documented ``.ids()`` output turned into an assertion."""
    lines = []
    for line in block.splitlines():
        match = _PROMISED_IDS.match(line)
        if match:
            indent, expression, promised = match.groups()
            expected = ast.literal_eval(promised)
            line = (
                f"{indent}assert {expression} == {expected!r}, "
                f"({expression!r}, {expression}, {expected!r})"
            )
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_the_readme_has_python_examples_with_promised_ids():
    blocks = readme_blocks()
    assert len(blocks) >= 5
    promised = sum(bool(_PROMISED_IDS.match(line)) for b in blocks for line in b.splitlines())
    assert promised >= 5


def test_the_readme_python_examples_run_and_print_what_they_say(es_url, es_client, tmp_path):
    for name in _README_INDICES:
        es_client.options(ignore_status=404).indices.delete(index=name)
    env = {"ES_URL": es_url, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    for key in ("ES_SCM_CACHE", "HOME", "PYTHONPATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    try:
        for number, block in enumerate(readme_blocks(), 1):
            script = tmp_path / f"block_{number}.py"
            script.write_text(with_assertions(block), encoding="utf-8")
            done = subprocess.run(
                [sys.executable, str(script)],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0:
                pytest.fail(
                    f"README python block {number} failed:\n{block}\n--- stderr:\n{done.stderr}"
                )
    finally:
        for name in _README_INDICES:
            es_client.options(ignore_status=404).indices.delete(index=name)
