"""The ``es-scm demo`` corpus: every query's paraphrase shares no word with it (the demo end to
end: tests/integration/test_demo_es.py)."""

from __future__ import annotations

import json

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
