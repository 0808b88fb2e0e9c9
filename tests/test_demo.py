"""``es-scm demo`` end to end: SCM finds the paraphrase that BM25 cannot."""

from __future__ import annotations

import json

import pytest

from es_scm.corpus import read_corpus
from es_scm.demo import DEMO_QUERIES, demo_corpus_path


def test_demo_corpus() -> None:
    documents = list(read_corpus(demo_corpus_path()))
    assert len(documents) >= 200
    assert len({d.id for d in documents}) == len(documents)
    texts = {d.id: d.text for d in documents}
    assert texts["politics-001"] == "The president greets the press in Chicago"
    for query in DEMO_QUERIES:  # a paraphrase shares no word with its query
        words = set(query.text.lower().split())
        assert not words & set(texts[query.paraphrase_id].lower().split()) - {"the", "in", "a"}
    for line in demo_corpus_path().read_text(encoding="utf-8").splitlines():
        assert set(json.loads(line)) == {"id", "text", "topic"}


@pytest.mark.integration
@pytest.mark.slow
def test_demo_finds_the_president_for_the_obama_query(
    capsys: pytest.CaptureFixture[str], es_url: str, index_name: str
) -> None:
    from es_scm.cli import main

    assert main(["demo", "--es-url", es_url, "--index", index_name, "--k", "5"]) == 0
    out = capsys.readouterr().out
    assert 'query: "Obama speaks to the media in Illinois"' in out
    assert "politics-001 shares no word with the query: SCM rank" in out
    assert "BM25: not in the top 5" in out
    assert "Go further:" in out


@pytest.mark.integration
@pytest.mark.slow
def test_demo_result(es_client, index_name: str) -> None:
    from es_scm.demo import run_demo

    lines: list[str] = []
    result = run_demo(es_client, index=index_name, k=5, out=lines.append)
    obama = next(c for c in result.comparisons if c.query.text.startswith("Obama"))
    president = "The president greets the press in Chicago"
    assert president in [text for _, _, text in obama.scm]
    assert president not in [text for _, _, text in obama.bm25]
    assert obama.rank("scm") is not None
    assert obama.rank("bm25") is None
    for comparison in result.comparisons:  # every paraphrase: SCM yes, BM25 no
        assert comparison.rank("scm") is not None, comparison.query
        assert comparison.rank("bm25") is None, comparison.query
    assert not es_client.indices.exists(index=index_name)  # deleted without keep_index
    assert set(result.timings) >= {"queries"}
