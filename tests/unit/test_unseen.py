"""Query words the corpus never used (es_scm.similarity.unseen): S's columns for them, exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from es_scm.model import BruteForceSearch, SoftCosineModel
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings
from es_scm.similarity.unseen import UnseenTerms, UnseenWord

TEXTS = ["a red car on the road", "an old car in the garage", "a fast train to the city"]
# 2-d vectors: automobile is close to car (cos 0.96), far from the others
VECTORS = {
    "car": (1.0, 0.0),
    "automobile": (0.96, 0.28),
    "train": (0.0, 1.0),
    "road": (0.6, 0.8),
    "garage": (0.8, 0.6),
}


def embeddings() -> WordEmbeddings:
    return WordEmbeddings(list(VECTORS), np.array(list(VECTORS.values())))


def model(**options) -> SoftCosineModel:
    options = {"threshold": 0.5, "exponent": 2.0, "nonzero_limit": 10, **options}
    return SoftCosineModel.build(TEXTS, embeddings(), **options)


def test_a_word_outside_the_corpus_gets_the_column_of_s_rule():
    built = model()
    assert "automobile" not in built.terms
    assert "automobile" in built.unseen
    ids, values = built.unseen.column("automobile")
    found = {built.terms[i]: v for i, v in zip(ids, values, strict=True)}
    cosines = {
        t: float(np.dot(VECTORS["automobile"], VECTORS[t])) for t in ("car", "road", "garage")
    }
    # cos > 0.5, squared (float16 vectors: three decimals)
    assert set(found) == {t for t, c in cosines.items() if c > 0.5}
    for term, value in found.items():
        assert value == pytest.approx(cosines[term] ** 2, abs=2e-3)


def test_the_query_vector_is_s_extended_by_the_words_column():
    built = model()
    query = built.query_vector("automobile garage")
    (word,) = query.unseen
    assert word.word == "automobile"
    n = len(built.terms)
    # S' = [[S, e], [eᵀ, 1]] over the terms and the word, as a dense matrix
    s_prime = np.eye(n + 1)
    s_prime[:n, :n] = built.similarity_matrix.matrix.toarray()
    column = np.zeros(n)
    column[word.terms] = word.similarities
    s_prime[:n, n] = s_prime[n, :n] = column
    x = np.concatenate([query.weights.toarray().ravel(), [word.weight]])
    assert query.norm == pytest.approx(math.sqrt(x @ s_prime @ x))
    assert np.allclose(query.expansion.toarray().ravel(), (s_prime @ x)[:n])
    # the word weighs as a term in one document: (1 + ln 1) · ln(1 + N/1)
    assert word.weight == pytest.approx(math.log(1 + len(TEXTS)))


def test_automobile_finds_car_in_a_corpus_that_only_says_car():
    built = model()
    brute = BruteForceSearch(built, ["1", "2", "3"], TEXTS)
    ranked = [doc for doc, _ in brute.search("automobile", k=3)]
    assert ranked[:2] == ["1", "2"] or ranked[:2] == ["2", "1"]
    assert "3" not in ranked  # train: cos 0.28, below the threshold
    without = SoftCosineModel.build(TEXTS, embeddings(), threshold=0.5, unseen_limit=0)
    assert BruteForceSearch(without, ["1", "2", "3"], TEXTS).search("automobile") == []


def test_similarity_and_explanation_count_the_words_pairs():
    built = model()
    score = built.similarity("automobile", TEXTS[1])
    assert score > 0
    explanation = built.explain("automobile", TEXTS[1])
    assert explanation.score == pytest.approx(score)
    assert {pair.query_term for pair in explanation} == {"automobile"}
    assert sum(pair.contribution for pair in explanation) == pytest.approx(score)


def test_unseen_words_are_saved_and_hashed_into_the_model_id(tmp_path):
    built = model()
    loaded = SoftCosineModel.load(built.save(tmp_path / "m"))
    assert loaded.model_id == built.model_id
    assert loaded.similarity("automobile", TEXTS[0]) == built.similarity("automobile", TEXTS[0])
    plain = SoftCosineModel.build(TEXTS, embeddings(), threshold=0.5, exponent=2.0,
                                  nonzero_limit=10, unseen_limit=0)  # fmt: skip
    assert plain.unseen is None
    assert plain.model_id != built.model_id
    assert not (plain.save(tmp_path / "p") / "unseen.npz").exists()


def test_limit_keeps_the_first_words_of_the_embeddings():
    built = model(unseen_limit=2)  # car, automobile: only automobile is outside the terms
    assert len(built.unseen) == 1
    assert "automobile" in built.unseen


def test_combined_sources_weigh_their_columns():
    terms = ["car", "road"]
    one = UnseenTerms.from_embeddings(
        terms, embeddings(), limit=10, threshold=0.0, exponent=1.0, nonzero_limit=5
    )
    both = UnseenTerms.combine([(0.3, one), (0.7, one)])
    ids, values = one.column("automobile")
    ids2, values2 = both.column("automobile")
    assert list(ids) == list(ids2)
    assert np.allclose(values2, values)  # 0.3 + 0.7 of the same source
    assert both.column("nothing") is None


def test_query_vector_without_unseen_words_is_the_plain_expansion():
    matrix = TermSimilarityMatrix.from_pairs(["a", "b"], [("a", "b", 0.5)])
    x = sp.csr_matrix(np.array([[1.0, 2.0]]))
    vector = matrix.query_vector(x)
    assert vector.unseen == ()
    assert vector.unseen_expansion is None
    assert vector.norm == pytest.approx(float(matrix.soft_norm(x)))
    word = UnseenWord("c", 1.0, np.array([0]), np.array([0.5]))
    extended = matrix.query_vector(x, [word])
    assert extended.unseen_expansion.toarray().ravel() == pytest.approx([0.5, 0.0])
    # ‖x‖² = xᵀSx + 2·1·(0.5·1) + 1
    assert extended.norm**2 == pytest.approx(vector.norm**2 + 1.0 + 1.0)
