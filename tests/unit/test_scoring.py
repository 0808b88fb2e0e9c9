"""One score path (es_scm.similarity.scm): the query's value is computed once, and every SCM
es-scm reports — exact rescoring, the brute force, the model's similarity — is the same function,
so the same document gets the same bits everywhere. And one BM25 query (elastic.query)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import es_scm
from es_scm.model import BruteForceSearch, SoftCosineModel
from es_scm.model.text import Tokenizer
from es_scm.search.query import bm25_query, expand_query
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings, scm
from es_scm.similarity.scm import stored_rows

WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    rng = np.random.default_rng(23)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 12))) for _ in range(60)]


@pytest.fixture(scope="module")
def model(corpus: list[str]) -> SoftCosineModel:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(WORDS), 6)) + 1.5  # mostly positive cosines: a dense S
    embeddings = WordEmbeddings.from_array(WORDS, vectors)
    return SoftCosineModel.build(corpus, embeddings, threshold=0.2, nonzero_limit=8)


def queries(corpus: list[str]) -> list[str]:
    return [*corpus[:20], "w1 w2 w3", "w5 w5 w5 w39", "nothing known", ""]


def test_the_squared_soft_norm_is_the_expansions_dot_product_with_x(model):
    matrix = model.similarity_matrix
    dense = matrix.matrix.toarray().astype(np.float64)
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = sp.random(1, len(matrix.terms), density=0.2, rng=rng, format="csr") * 3.0
        value = matrix.query_vector(x)
        squared = float(value.expansion.toarray().ravel() @ x.toarray().ravel())
        assert value.norm**2 == pytest.approx(squared, rel=1e-12)
        dense_x = x.toarray().ravel()
        assert value.norm**2 == pytest.approx(dense_x @ dense @ dense_x, rel=1e-12)
        # the checked kernel of documents agrees, and soft_norm of one vector is this very value
        assert value.norm == pytest.approx(float(scm.soft_norm(dense, x.toarray())[0]), rel=1e-12)
        assert value.norm == matrix.soft_norm(x)


def test_a_query_reads_s_once(model, monkeypatch):
    calls = []
    product = scm._vector_left_product  # xᵀS of one row: what expand and soft_norm both ran

    def counted(x, S):
        calls.append(x.shape)
        return product(x, S)

    monkeypatch.setattr(scm, "_vector_left_product", counted)
    value = model.query_vector("w1 w2 w3 w3")
    assert value.norm > 0
    assert calls == [(1, len(model.terms))]


def test_exact_rescoring_and_the_brute_force_agree_bit_for_bit(model, corpus):
    ids = [f"d{i}" for i in range(len(corpus))]
    brute = BruteForceSearch(model, ids, corpus)
    matrix = model.similarity_matrix
    # y' as ingestion stores it: normalized in batches (of 7 here), then read back by term id
    stored = []
    for start in range(0, len(corpus), 7):
        rows = matrix.normalize(model.vectorize_many(corpus[start : start + 7], role="document"))
        for begin, end in zip(rows.indptr[:-1], rows.indptr[1:], strict=True):
            # any order of the terms: a stored vector is a JSON object
            stored.append((rows.indices[begin:end][::-1], rows.data[begin:end][::-1]))
    for query in queries(corpus):
        expected = brute.scores(query)
        np.testing.assert_array_equal(brute.scores(query, every_document=True), expected)
        expanded = expand_query(model, query, max_clauses=10_000)
        np.testing.assert_array_equal(expanded.exact_scores(stored), expected)
        window = [stored[i] for i in (5, 0, 42)]
        assert expanded.exact_scores(window) == [expected[i] for i in (5, 0, 42)]
        similarity = [model.similarity(query, text) for text in corpus[:10]]
        assert similarity == expected[:10].tolist()


def test_stored_rows_sorts_each_vector_by_term():
    rows = stored_rows([(np.array([4, 1]), np.array([0.5, 0.25])), (np.array([], int), [])], 6)
    assert rows.shape == (2, 6)
    np.testing.assert_array_equal(rows.indices, [1, 4])
    np.testing.assert_array_equal(rows.data, [0.25, 0.5])
    np.testing.assert_array_equal(rows.indptr, [0, 2, 2])


def test_inner_product_runs_through_the_expansion_and_the_same_dot(model, corpus):
    matrix = model.similarity_matrix
    documents = model.vectorize_many(corpus, role="document")
    x = model.vectorize(corpus[3], role="query")
    value = matrix.query_vector(x)
    direct = matrix.inner_product(x, documents, normalized=(False, False))
    np.testing.assert_array_equal(direct, scm.dot(matrix.expand(x), documents)[0])
    scms = matrix.inner_product(x, documents, normalized=(True, True))
    np.testing.assert_allclose(scms, value.scores(matrix.normalize(documents)), rtol=1e-13)


def test_an_empty_side_scores_zero(model):
    matrix = model.similarity_matrix
    empty = matrix.query_vector(sp.csr_matrix((1, len(model.terms))))
    assert empty.norm == 0.0
    np.testing.assert_array_equal(empty.scores(sp.csr_array((3, len(model.terms)))), [0.0] * 3)


def test_a_non_zero_query_without_a_soft_norm_has_no_scm():
    # s(a, b) = −1: xᵀSx = 1 + 1 − 2 = 0 for x = a + b, so neither search nor similarity answers
    built = SoftCosineModel.build(["a b", "a c"], tokenizer=Tokenizer(stop_words=None))
    S = sp.csc_matrix(np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    terms = built.terms
    negative = SoftCosineModel(
        built.tokenizer,
        built.vocabulary,
        TermSimilarityMatrix(S, terms),
        document_weighting="raw-none",
        query_weighting="raw-none",
    )
    assert terms[:2] == ["a", "b"]
    with pytest.raises(ValueError, match="not positive"):
        negative.similarity("a b", "a c")
    with pytest.raises(ValueError, match="not positive semi-definite"):
        expand_query(negative, "a b", max_clauses=10)
    assert negative.similarity("a", "a c") == pytest.approx(1 / np.sqrt(2))


def test_bm25_is_one_query():
    assert bm25_query("wing") == {"match": {"text": "wing"}}
    restricted = bm25_query("wing", [{"term": {"g": 1}}], ids=["a", "b"])
    assert restricted == {
        "bool": {
            "must": [{"match": {"text": "wing"}}],
            "filter": [{"term": {"g": 1}}, {"ids": {"values": ["a", "b"]}}],
        }
    }
    # and no other module of the package writes a match query of its own
    package = Path(es_scm.__file__).parent
    writers = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if '{"match"' in path.read_text(encoding="utf-8")
    }
    assert writers == {"search/query.py"}
