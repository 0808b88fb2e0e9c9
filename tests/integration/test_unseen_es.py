"""Query words outside the vocabulary, and a model's own fusion, through a real Elasticsearch."""

from __future__ import annotations

import numpy as np
import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import SCMIndex
from es_scm.model import BruteForceSearch
from es_scm.search.hybrid.config import hybrid_options
from es_scm.similarity import WordEmbeddings

TEXTS = {
    "1": "a red car on the road",
    "2": "an old car in the garage",
    "3": "a fast train to the city",
    "4": "the garage door is open",
}
VECTORS = {
    "car": (1.0, 0.0),
    "automobile": (0.96, 0.28),
    "train": (0.0, 1.0),
    "road": (0.6, 0.8),
    "garage": (0.8, 0.6),
}


@pytest.fixture(scope="module")
def model():
    embeddings = WordEmbeddings(list(VECTORS), np.array(list(VECTORS.values())))
    return SoftCosineModel.build(TEXTS.values(), embeddings, threshold=0.5, exponent=2.0)


@pytest.fixture(scope="module", params=["query", "documents"])
def index(request, es_client, model):
    made = SCMIndex(es_client, f"es-scm-test-unseen-{request.param}", model)
    made.delete()
    made.create(expansion=request.param)
    report = made.index_documents([{"id": i, "text": t} for i, t in TEXTS.items()])
    assert report.ok, report.summary()
    yield made
    made.delete()


@pytest.mark.parametrize("query", ["automobile", "automobile garage", "old automobile door"])
def test_exact_search_with_unseen_words_equals_the_brute_force(index, model, query):
    brute = BruteForceSearch(model, list(TEXTS), TEXTS.values()).search(query, k=4)
    result = index.searcher.search(query, k=4)
    assert result.exact_guarantee
    assert [(h.id, round(h.score, 12)) for h in result] == [(d, round(s, 12)) for d, s in brute]
    assert result.query_terms == len(query.split())  # every word counts, known or not


def test_automobile_finds_the_car_documents_and_says_why(index):
    result = index.searcher.search("automobile", k=4, explain=True)
    assert set(result.ids()[:2]) == {"1", "2"}
    pair = result.hits[0].explanation.pairs[0]
    assert (pair.query_term, pair.document_term) == ("automobile", "car")
    assert sum(p.contribution for p in result.hits[0].explanation) == pytest.approx(
        result.hits[0].score
    )


def test_hybrid_search_uses_the_models_own_fusion_unless_told_otherwise(es_client, model):
    tuned = SoftCosineModel(
        model.tokenizer,
        model.vocabulary,
        model.similarity_matrix,
        model.document_weighting,
        model.query_weighting,
        hybrid={"fusion": "rrf", "rrf_k": 0},
        unseen=model.unseen,
    )
    index = SCMIndex(es_client, "es-scm-test-unseen-hybrid", tuned)
    index.delete()
    try:
        assert index.index_documents([{"id": i, "text": t} for i, t in TEXTS.items()]).ok
        fused = index.searcher.hybrid("car garage", k=3)
        # RRF with k = 0: the document first in both lists scores 1/1 + 1/1
        assert fused.hits[0].score == pytest.approx(2.0)
        told = index.searcher.hybrid("car garage", k=3, fusion="max")
        assert told.hits[0].score <= 1.0
        with pytest.raises(ValueError, match="alpha does not apply to fusion='rrf'"):
            hybrid_options(tuned.hybrid, alpha=0.5)  # what --alpha 0.5 gives
        with pytest.raises(TypeError, match="fusion"):
            index.searcher.search("car garage", fusion="max")
    finally:
        index.delete()
