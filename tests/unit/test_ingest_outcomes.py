"""Ids are checked alike by the corpus reader and the API, before anything is sent (what ingestion
stores and reports on a real node: tests/integration/test_ingest_outcomes.py)."""

from __future__ import annotations

import json

import pytest

from es_scm.corpus import CorpusError, read_corpus
from es_scm.documents import Document


@pytest.mark.parametrize(
    ("value", "shown"),
    [(True, "True (bool)"), (4.5, "4.5 (float)"), ([1], "[1] (list)"), ("", "'' (str)")],
)
def test_ids_are_checked_alike_by_the_corpus_and_the_api(tmp_path, value, shown):
    corpus = tmp_path / "one.jsonl"
    corpus.write_text(json.dumps({"id": value, "text": "wing"}) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError) as from_corpus:
        list(read_corpus(corpus))
    with pytest.raises(ValueError, match="the id must be") as from_api:
        Document.from_mapping({"id": value, "text": "wing"})
    for error in (from_corpus.value, from_api.value):
        assert f"the id must be a non-empty string or an integer, got {shown}" in str(error)
    assert str(from_corpus.value).startswith(f"{corpus}, line 1: ")


def test_a_missing_id_is_called_missing(tmp_path):
    corpus = tmp_path / "one.jsonl"
    corpus.write_text('{"text": "wing"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="line 1: missing id field 'id'"):
        list(read_corpus(corpus))


def test_integer_ids_are_kept_in_decimal(tmp_path):
    corpus = tmp_path / "ints.jsonl"
    corpus.write_text('{"id": 7, "text": "wing"}\n', encoding="utf-8")
    assert [d.id for d in read_corpus(corpus)] == ["7"]
    assert Document.from_mapping({"id": 7, "text": "wing"}).id == "7"
