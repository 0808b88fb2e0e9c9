"""``es-scm demo`` end to end: SCM finds the paraphrase that BM25 cannot."""

from __future__ import annotations

import pytest


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
    for comparison in result.comparisons:  # no paraphrase shares a word: BM25 finds none
        assert comparison.rank("bm25") is None, comparison.query
    # the defaults find most paraphrases in the top 5 (the demo shows the one they miss too)
    found = [c.query.paraphrase_id for c in result.comparisons if c.rank("scm") is not None]
    assert len(found) >= 3, found
    assert not es_client.indices.exists(index=index_name)  # deleted without keep_index
    assert set(result.timings) >= {"queries"}
