"""A curated synonym file in S, through a real Elasticsearch: a document found by its synonym."""

from __future__ import annotations

import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import SCMIndex
from es_scm.model import BruteForceSearch
from es_scm.similarity.synonyms import Synonyms

TEXTS = {
    "1": "a red car parked on the road",
    "2": "the automobile dealer opened",
    "3": "a fast train to the city",
    "4": "the garage door is open",
}


@pytest.fixture
def synonym_model(tmp_path):
    rules = tmp_path / "synonyms.txt"
    rules.write_text("# a team's list\ncar, automobile, auto\ngarage => workshop\n", "utf-8")
    return SoftCosineModel.build(TEXTS.values(), synonyms=Synonyms(rules, weight=0.5))


def test_exact_search_finds_a_document_by_its_synonym(es_client, index_name, synonym_model):
    plain = SoftCosineModel.build(TEXTS.values())
    index = SCMIndex(es_client, index_name, synonym_model)
    report = index.index_documents([{"id": i, "text": t} for i, t in TEXTS.items()])
    assert report.ok, report.summary()
    result = index.searcher.search("automobile", k=4, explain=True)
    assert result.exact_guarantee
    assert set(result.ids()) == {"1", "2"}  # "1" says only "car"
    car = next(hit for hit in result.hits if hit.id == "1")
    assert car.score > 0
    (pair,) = car.explanation.pairs
    assert (pair.query_term, pair.document_term) == ("automobile", "car")
    brute = BruteForceSearch(synonym_model, list(TEXTS), TEXTS.values()).search("automobile", k=4)
    assert [(h.id, round(h.score, 12)) for h in result] == [
        (d, round(s, 12)) for d, s in brute if s > 0
    ]
    without = BruteForceSearch(plain, list(TEXTS), TEXTS.values()).search("automobile", k=4)
    assert [d for d, s in without if s > 0] == ["2"]  # without the synonyms, only the word
