"""Document-side expansion (``expansion="documents"``) through a real Elasticsearch.

The index stores Sy' next to y' and the query sends only its own weighted terms; the references
are brute-force exact SCM and a query-side index of the same documents.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from es_scm.elastic import (
    ModelMismatchError,
    NotProvenError,
    SCMIndex,
    Searcher,
    reindex_into_alias,
)
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env
from es_scm.index.schema import EXPANDED_FIELD, VECTOR_FIELD, stored_vector
from es_scm.model import BruteForceSearch

K = 10


@pytest.fixture(scope="module")
def reference(cranfield, cranfield_default_model):
    return BruteForceSearch(
        cranfield_default_model, list(cranfield.documents), cranfield.documents.values()
    )


def documents(cranfield):
    return [{"id": doc_id, "text": text} for doc_id, text in cranfield.documents.items()]


@pytest.fixture(scope="module")
def indices(es_client, cranfield, cranfield_default_model):
    """A document-side and a query-side index of Cranfield."""
    made = {}
    for expansion in ("documents", "query"):
        index = SCMIndex(es_client, f"es-scm-test-expansion-{expansion}", cranfield_default_model)
        index.delete()
        index.create(expansion=expansion)
        report = index.index_documents(documents(cranfield))
        assert report.ok, report.summary()
        assert report.indexed == len(cranfield.documents)
        made[expansion] = index
    yield made
    for index in made.values():
        index.delete()


def test_exact_equals_brute_force_on_every_cranfield_query(cranfield, reference, indices):
    index = indices["documents"]
    for query in cranfield.queries.values():
        expected = reference.search(query, K)
        exact = index.searcher.search(query, K)
        assert exact.exact_guarantee, exact.notes
        assert exact.ids() == [doc_id for doc_id, _ in expected], query
        np.testing.assert_allclose(
            [hit.score for hit in exact], [s for _, s in expected], atol=1e-6, rtol=0
        )


def test_the_query_sends_its_own_terms_to_the_expanded_field(
    cranfield, cranfield_default_model, indices
):
    query = cranfield.queries["1"]
    document_side = indices["documents"].searcher.expand(query)
    query_side = indices["query"].searcher.expand(query)
    weights = cranfield_default_model.vectorize(query, role="query")
    assert document_side.field == EXPANDED_FIELD
    assert query_side.field == VECTOR_FIELD
    assert sorted(document_side.clause_terms.tolist()) == sorted(weights.indices.tolist())
    assert len(query_side.clause_terms) > 3 * len(document_side.clause_terms)
    np.testing.assert_array_equal(document_side.dense_expansion, query_side.dense_expansion)


def test_native_scores_match_the_query_side_index(cranfield, indices):
    for query_id in ("1", "7", "100"):
        query = cranfield.queries[query_id]
        exact = {h.id: h.score for h in indices["query"].searcher.search(query, 50)}
        for hit in indices["documents"].searcher.native(query, 20):
            assert hit.id in exact
            # both estimate the same SCM from below, within the 9-bit storage (and float32 sums)
            assert exact[hit.id] * (1 - 2**-7) - 1e-6 <= hit.score <= exact[hit.id] + 1e-6


def test_hybrid_search_is_the_query_side_indexs_in_one_round_trip(
    es_client, engine, cranfield, indices
):
    """The same fused hits and components on both sides, and on both BM25's scores of the
    SCM's candidates reported beside its search: one ``_msearch`` a query (where the engine's
    ``_msearch`` reports named scores; else they are asked apart, on both sides)."""
    from tests.integration.test_requests_es import Requests

    for index in indices.values():  # the model checked and the clause limit read, once
        index.searcher.hybrid(cranfield.queries["1"], K)
    requests = Requests(es_client)
    owed = {"documents": 0, "query": 0}
    for query_id in ("1", "2", "7", "23", "100"):
        query = cranfield.queries[query_id]
        results = {}
        for side, index in indices.items():
            sent = requests.during(lambda i=index, q=query: i.searcher.hybrid(q, K))
            results[side] = requests.result
            assert sent[0] == ("POST", "/_msearch"), sent
            owed[side] += sum(path == f"/{index.name}/_search" for _, path in sent[1:])
        documents, queries = results["documents"], results["query"]
        assert documents.ids() == queries.ids(), query_id
        for mine, theirs in zip(documents, queries, strict=True):
            assert mine.components["bm25"] == theirs.components["bm25"]
            assert mine.components["scm"] == pytest.approx(theirs.components["scm"], abs=1e-9)
    if engine.named_scores_in_msearch:
        assert owed == {"documents": 0, "query": 0}
    else:
        assert owed["documents"] >= 4
        assert owed["query"] >= 4


def test_source_keeps_y_prime_and_leaves_out_sy_prime(
    es_client, engine, cranfield, cranfield_default_model, indices
):
    name = indices["documents"].name
    mapping = es_client.indices.get_mapping(index=name)[name]["mappings"]
    assert mapping["_meta"]["es_scm"]["expansion"] == "documents"
    assert mapping["_source"] == {"excludes": [EXPANDED_FIELD]}
    doc_id, text = next(iter(cranfield.documents.items()))
    source = es_client.get(index=name, id=doc_id)["_source"]
    assert "expanded" not in source["scm"]
    normalized = cranfield_default_model.similarity_matrix.normalize(
        cranfield_default_model.vectorize(text, role="document")
    )
    ids, values = stored_vector(source)
    np.testing.assert_array_equal(ids, normalized.indices)
    np.testing.assert_array_equal(values, normalized.data)
    # the stored Sy' is searchable: a one-term query finds the document's expansion terms
    expansion = cranfield_default_model.similarity_matrix.expand_documents(normalized)
    only_related = [t for t in expansion.indices.tolist() if t not in set(ids.tolist())]
    assert only_related, "the document has no related terms beyond its own"
    term = str(only_related[0])
    feature = (  # one feature of the field: OpenSearch has no term query on rank_features
        {"rank_feature": {"field": f"{EXPANDED_FIELD}.{term}", "linear": {}}}
        if engine.query_type == "rank_feature"
        else {"term": {EXPANDED_FIELD: term}}
    )
    both = [{"ids": {"values": [doc_id]}}, feature]
    hits = es_client.search(index=name, query={"bool": {"filter": both}})["hits"]["hits"]
    assert [h["_id"] for h in hits] == [doc_id]


def test_few_clauses_are_proven_or_refused_never_wrong(
    es_client, cranfield, cranfield_default_model, reference, indices
):
    """Query terms left out are bounded through ‖S‖₂: a proof may fail, but never lie."""
    searcher = Searcher(
        es_client, indices["documents"].name, cranfield_default_model, max_clauses=8
    )
    proven = refused = 0
    for query in list(cranfield.queries.values())[:40]:
        try:
            result = searcher.search(query, K)
        except NotProvenError:
            refused += 1
            continue
        assert result.exact_guarantee
        assert result.ids() == [doc_id for doc_id, _ in reference.search(query, K)]
        proven += 1
    assert proven > 0  # on Cranfield both outcomes occur
    assert refused > 0


def test_a_pattern_mixing_the_two_sides_is_refused(es_client, cranfield_default_model, indices):
    searcher = Searcher(es_client, "es-scm-test-expansion-*", cranfield_default_model)
    with pytest.raises(ModelMismatchError, match="mix query-side and document-side"):
        searcher.search("flow")


def test_an_alias_swap_keeps_the_expansion(
    es_client, cranfield, cranfield_default_model, index_name
):
    some = documents(cranfield)[:200]
    first = reindex_into_alias(
        es_client, index_name, cranfield_default_model, some, expansion="documents"
    )
    assert (
        Searcher(es_client, first.index, cranfield_default_model).check()["expansion"]
        == "documents"
    )
    second = reindex_into_alias(
        es_client, index_name, cranfield_default_model, some, grace=0
    )  # inherits it
    assert second.index != first.index
    assert (
        Searcher(es_client, second.index, cranfield_default_model).check()["expansion"]
        == "documents"
    )
    result = Searcher(es_client, index_name, cranfield_default_model).search(
        cranfield.queries["1"], K
    )
    assert result.exact_guarantee
    with pytest.raises(ValueError, match="expansion"):
        SCMIndex(es_client, f"{index_name}-x", cranfield_default_model).create(expansion="both")


def test_the_async_api_builds_and_searches_the_same_index(
    es_url, es_client, cranfield, cranfield_default_model, indices, index_name
):
    async def build_and_search() -> list[list[str]]:
        client = async_client_from_env(es_url)
        try:
            index = AsyncSCMIndex(client, index_name, cranfield_default_model)
            await index.create(expansion="documents")
            report = await index.index_documents(documents(cranfield))
            assert report.ok
            return [
                (await index.searcher.search(cranfield.queries[q], K)).ids()
                for q in ("1", "50", "225")
            ]
        finally:
            await client.close()

    got = asyncio.run(build_and_search())
    expected = [
        indices["documents"].searcher.search(cranfield.queries[q], K).ids()
        for q in ("1", "50", "225")
    ]
    assert got == expected
    mapping = es_client.indices.get_mapping(index=index_name)[index_name]["mappings"]
    assert mapping["_meta"]["es_scm"]["expansion"] == "documents"
