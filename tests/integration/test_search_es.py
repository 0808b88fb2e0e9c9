"""Soft cosine search through a real Elasticsearch (or OpenSearch): ingestion, expansion, every
search method.

The reference is brute-force exact SCM computed locally (``brute_force_search``).
"""

from __future__ import annotations

import numpy as np
import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import (
    IndexNotFoundError,
    ModelMismatchError,
    NotProvenError,
    SCMIndex,
    Searcher,
    cluster_version,
)
from es_scm.fusion import LinearFusion
from es_scm.index.schema import index_mapping, settings_for_version, stored_vector
from es_scm.model import BruteForceSearch

K = 10


@pytest.fixture(scope="session")
def cranfield_reference(cranfield, cranfield_model):
    return BruteForceSearch(
        cranfield_model, list(cranfield.documents), cranfield.documents.values()
    )


def cranfield_documents(cranfield):
    return ({"id": doc_id, "text": text} for doc_id, text in cranfield.documents.items())


def test_exact_equals_brute_force_on_every_cranfield_query(
    cranfield, cranfield_model, cranfield_reference, cranfield_index
):
    recalls = []
    for query in cranfield.queries.values():
        expected = cranfield_reference.search(query, K)
        exact = cranfield_index.searcher.search(query, K)
        assert exact.exact_guarantee, exact.notes
        assert exact.ids() == [doc_id for doc_id, _ in expected], query
        got_scores = [hit.score for hit in exact]
        np.testing.assert_allclose(got_scores, [s for _, s in expected], atol=1e-6, rtol=0)
        native = cranfield_index.searcher.native(query, K)
        recalls.append(len(set(native.ids()) & set(exact.ids())) / len(expected))
    assert len(recalls) == 225
    assert np.mean(recalls) >= 0.99


def test_exact_scores_are_the_brute_forces_bit_for_bit(
    cranfield, cranfield_reference, cranfield_index
):
    # one score path (es_scm.similarity.scm): no rounding reconciles two arithmetics
    position = {doc_id: n for n, doc_id in enumerate(cranfield_reference.ids.tolist())}
    for query in cranfield.queries.values():
        scores = cranfield_reference.scores(query)
        np.testing.assert_array_equal(
            cranfield_reference.scores(query, every_document=True), scores
        )
        exact = cranfield_index.searcher.search(query, K)
        assert [hit.score for hit in exact] == [scores[position[hit.id]] for hit in exact]
    rescored = cranfield_index.searcher.rescore(query, ids=list(position)[:50])
    assert [hit.score for hit in rescored] == [scores[position[hit.id]] for hit in rescored]


def test_native_score_is_elasticsearchs_scm_in_every_mode(cranfield, cranfield_index):
    query = cranfield.queries["7"]
    native = {h.id: h for h in cranfield_index.searcher.native(query, 20)}
    exact = cranfield_index.searcher.search(query, 10)
    assert all(hit.native_score == hit.score for hit in native.values())
    for hit in exact:  # the same estimate of the same SCM, next to the exact score
        assert hit.native_score == pytest.approx(native[hit.id].native_score, rel=1e-12)
    assert all(
        hit.native_score is None for hit in cranfield_index.searcher.rescore(query, ids=["1"])
    )


def test_native_scores_approximate_the_scm_from_below(cranfield, cranfield_index):
    query = cranfield.queries["1"]
    exact = {h.id: h.score for h in cranfield_index.searcher.search(query, 50)}
    for hit in cranfield_index.searcher.native(query, 20):
        assert hit.id in exact
        assert exact[hit.id] * (1 - 2**-8) - 1e-6 <= hit.score <= exact[hit.id] + 1e-6


def test_paging_matches_brute_force(
    cranfield, cranfield_model, cranfield_reference, cranfield_index
):
    query = cranfield.queries["2"]
    expected = cranfield_reference.search(query, 30)
    page = cranfield_index.searcher.search(query, 10, from_=20)
    assert page.ids() == [doc_id for doc_id, _ in expected[20:30]]


def test_three_shards_and_an_alias_give_the_same_top_k(
    es_client, cranfield, cranfield_model, cranfield_index, index_name
):
    sharded = SCMIndex(es_client, index_name, cranfield_model)
    sharded.create(shards=3)
    assert sharded.index_documents(cranfield_documents(cranfield)).ok
    es_client.indices.put_alias(index=index_name, name=f"{index_name}-alias")
    alias = SCMIndex(es_client, f"{index_name}-alias", cranfield_model)
    for query_id in ("1", "50", "100", "225"):
        query = cranfield.queries[query_id]
        single = cranfield_index.searcher.search(query, K)
        assert sharded.searcher.search(query, K).ids() == single.ids()
        assert alias.searcher.search(query, K).ids() == single.ids()


def test_rescore_by_ids_and_by_an_es_query(cranfield, cranfield_index):
    query = cranfield.queries["3"]
    exact = cranfield_index.searcher.search(query, K)
    shuffled = [*list(reversed(exact.ids())), "no-such-document"]
    rescored = cranfield_index.searcher.rescore(query, ids=shuffled)
    assert rescored.ids() == exact.ids()
    assert any("not found" in note for note in rescored.notes)
    bm25 = cranfield_index.searcher.rescore(query, es_query={"match": {"text": query}}, size=50)
    assert len(bm25) == 50
    scores = [hit.score for hit in bm25]
    assert scores == sorted(scores, reverse=True)


def test_a_mismatched_model_is_refused(es_client, cranfield_index, glove):
    other = SoftCosineModel.build(["a different corpus about cats", "and dogs"], glove)
    mismatched = SCMIndex(es_client, cranfield_index.name, other)
    with pytest.raises(ModelMismatchError, match="built with model"):
        mismatched.searcher.search("cats")
    with pytest.raises(ModelMismatchError):
        mismatched.index_documents([{"id": "x", "text": "cats"}])
    with pytest.raises(IndexNotFoundError):
        Searcher(es_client, "es-scm-test-missing", other).search("cats")


@pytest.mark.parametrize("query", ["", "   ", "the of and to", "zzzqqq xxyyzz"])
def test_queries_without_vocabulary_terms_return_nothing(cranfield_index, query):
    result = cranfield_index.searcher.search(query)
    assert result.hits == []
    assert result.exact_guarantee
    assert "no vocabulary terms" in result.notes[0]


def test_a_ten_thousand_term_query(
    cranfield, cranfield_model, cranfield_reference, cranfield_index
):
    words = " ".join(cranfield.documents.values()).split()
    query = " ".join(words[:10_000])
    expected = cranfield_reference.search(query, K)
    client, name = cranfield_index.client, cranfield_index.name
    long = SCMIndex(client, name, cranfield_model, max_query_words=10_000)  # default: 1,000
    result = long.searcher.search(query, K)
    assert result.ids() == [doc_id for doc_id, _ in expected]
    pruned = SCMIndex(client, name, cranfield_model, max_clauses=200, max_query_words=10_000)
    try:
        pruned_result, unproven = pruned.searcher.search(query, K), ""
    except NotProvenError as error:  # what was left out may hold a better document
        pruned_result, unproven = error.result, str(error)
    if unproven:
        assert "clause limit" in unproven
        assert not pruned_result.exact_guarantee
    else:
        assert pruned_result.exact_guarantee
        assert pruned_result.ids() == result.ids()
    assert pruned_result.pruned_terms == pruned_result.expansion_terms - 200
    assert any("left out" in note for note in pruned_result.notes)


def test_edge_documents(es_client, index_name, cranfield_model):
    index = SCMIndex(es_client, index_name, cranfield_model)
    big = ("the boundary layer flow over a flat plate is laminar " * 20_000)[:1_000_000]
    documents = [
        {
            "id": "réseau/aile/1",
            "text": "boundary layer on a swept wing",
            "source": "unicode/slash",
        },
        {"id": "日本/2", "text": "supersonic flow past a cone"},
        {"id": "big", "text": big},
        {"id": "stop", "text": "the of and"},
        {"id": "unknown", "text": "qqqzzz xxxyyy"},
    ]
    report = index.index_documents(documents)
    assert report.ok
    assert report.indexed == 5
    assert sorted(report.empty_ids) == ["stop", "unknown"]
    assert index.count() == 5
    result = index.searcher.search("swept wing boundary layer", k=5)
    assert "réseau/aile/1" in result.ids()
    assert "big" in result.ids()
    assert result.hits[result.ids().index("réseau/aile/1")].source["metadata"] == {
        "source": "unicode/slash"
    }
    rescored = index.searcher.rescore("supersonic cone", ids=["日本/2", "stop"])
    assert rescored.ids()[0] == "日本/2"
    assert rescored.hits[1].score == 0.0


def test_bad_documents_fail_alone_and_are_named(es_client, index_name, cranfield_model):
    index = SCMIndex(es_client, index_name, cranfield_model)
    report = index.index_documents(
        [
            {"text": "no id"},
            {"id": "1"},
            {"id": True, "text": "a bool id"},
            {"id": "L" * 600, "text": "an id over 512 bytes"},
            {"id": "set", "text": "metadata that is not JSON", "tags": {"a", "b"}},
            {"id": "ok", "text": "boundary layer"},
        ],
        batch_size=10,
    )
    reasons = dict(report.failures)
    assert report.indexed == 1
    assert report.failed == 5
    assert "needs an 'id'" in reasons["#0"]
    assert "needs a 'text'" in reasons["1"]
    assert "got True" in reasons["#2"]
    assert "512" in reasons["L" * 600]
    assert "set" in reasons
    assert index.count() == 1


@pytest.mark.engine("elasticsearch")  # OpenSearch has one form (rank_feature clauses)
def test_the_bool_query_form_ranks_alike(es_client, cranfield, cranfield_model, cranfield_index):
    other = SCMIndex(es_client, cranfield_index.name, cranfield_model, query_type="bool")
    for query_id in ("4", "5", "6"):
        query = cranfield.queries[query_id]
        exact = cranfield_index.searcher.search(query, K)
        assert other.searcher.search(query, K).ids() == exact.ids()
        native = cranfield_index.searcher.native(query, K)
        other_native = other.searcher.native(query, K)
        np.testing.assert_allclose(
            [h.score for h in other_native], [h.score for h in native], rtol=1e-6
        )


def test_the_index_keeps_the_exact_vectors_in_source(
    es_client, engine, cranfield, cranfield_model, cranfield_index
):
    settings = es_client.indices.get_settings(index=cranfield_index.name, flat_settings=True)
    excluded = settings[cranfield_index.name]["settings"].get(
        "index.mapping.exclude_source_vectors"
    )
    # the setting exists since Elasticsearch 9.2 (and defaults to true there); before, and on
    # OpenSearch, _source kept vectors
    asked = settings_for_version(cluster_version(es_client), engine=engine)
    kept = asked.get("index.mapping.exclude_source_vectors")
    assert excluded == (None if kept is None else str(kept).lower())
    doc_id, text = next(iter(cranfield.documents.items()))
    source = es_client.get(index=cranfield_index.name, id=doc_id)["_source"]
    weights = cranfield_model.vectorize(text, role="document")
    normalized = cranfield_model.similarity_matrix.normalize(weights)  # Theorem 4.2's y'
    ids, values = stored_vector(source)
    np.testing.assert_array_equal(ids, normalized.indices)
    np.testing.assert_array_equal(values, normalized.data)  # bit for bit, not 9 bits


def test_an_index_of_another_schema_version_is_refused(
    es_client, engine, index_name, cranfield_model
):
    mapping = index_mapping(cranfield_model, engine=engine)
    mapping["_meta"]["es_scm"]["schema_version"] = 1
    es_client.indices.create(index=index_name, mappings=mapping)
    index = SCMIndex(es_client, index_name, cranfield_model)
    with pytest.raises(ModelMismatchError, match="schema version 1"):
        index.searcher.search("boundary layer")


def test_optimize_merges_into_one_segment_and_keeps_the_results(
    es_client, index_name, cranfield, cranfield_model
):
    index = SCMIndex(es_client, index_name, cranfield_model)
    documents = [{"id": i, "text": t} for i, t in list(cranfield.documents.items())[:300]]
    for start in range(0, 300, 100):  # three refreshes: at least three segments
        index.index_documents(documents[start : start + 100], concurrency=3)
    query = cranfield.queries["1"]
    before = index.searcher.search(query, K)
    index.optimize()
    segments = es_client.cat.segments(index=index_name, format="json")
    assert len(segments) == 1
    after = index.searcher.search(query, K)
    assert after.ids() == before.ids()
    assert [h.score for h in after] == [h.score for h in before]
    with pytest.raises(ValueError, match="max_num_segments"):
        index.optimize(0)


# -- filters and hybrid search --------------------------------------------------------------------


def group_of(doc_id: str) -> str:
    """A synthetic metadata field: three large groups and one of three documents."""
    number = int(doc_id)
    return "tiny" if number in (5, 500, 1000) else f"g{number % 3}"


@pytest.fixture(scope="module")
def grouped_index(es_client, cranfield, cranfield_model):
    index = SCMIndex(es_client, "es-scm-test-cranfield-grouped", cranfield_model)
    index.delete()
    documents = (
        {"id": doc_id, "text": text, "group": group_of(doc_id), "n": int(doc_id)}
        for doc_id, text in cranfield.documents.items()
    )
    assert index.index_documents(documents).ok
    yield index
    index.delete()


FILTERS = {
    "g1": ({"term": {"metadata.group": "g1"}}, lambda i: group_of(i) == "g1"),
    "g0 or g2": (
        {"terms": {"metadata.group": ["g0", "g2"]}},
        lambda i: group_of(i) in ("g0", "g2"),
    ),
    "tiny": ([{"term": {"metadata.group": "tiny"}}], lambda i: group_of(i) == "tiny"),
    "ids": ({"ids": {"values": ["1", "2", "3", "184"]}}, lambda i: i in ("1", "2", "3", "184")),
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_filtered_exact_equals_filtered_brute_force_on_every_query(
    cranfield, cranfield_reference, grouped_index, name
):
    clause, keeps = FILTERS[name]
    allowed = [doc_id for doc_id in cranfield.documents if keeps(doc_id)]
    for query in cranfield.queries.values():
        expected = cranfield_reference.search(query, K, among=allowed)
        result = grouped_index.searcher.search(query, K, filter=clause)
        assert result.exact_guarantee
        assert result.ids() == [doc_id for doc_id, _ in expected], (name, query)
        np.testing.assert_allclose(
            [hit.score for hit in result], [score for _, score in expected], atol=1e-9, rtol=0
        )


@pytest.mark.parametrize("name", list(FILTERS))
def test_native_search_honours_filters(cranfield, grouped_index, name):
    clause, keeps = FILTERS[name]
    for query in list(cranfield.queries.values())[:10]:
        native = grouped_index.searcher.native(query, K, filter=clause)
        assert all(keeps(hit.id) for hit in native)


def test_a_filter_must_be_a_query_clause(grouped_index):
    with pytest.raises(ValueError, match="filter must be an Elasticsearch query clause"):
        grouped_index.searcher.search("wing", filter=["metadata.group=g1"])


def bm25_scores(es_client, index, query):
    response = es_client.search(
        index=index, query={"match": {"text": query}}, size=2000, source=False
    )
    return {h["_id"]: h["_score"] for h in response["hits"]["hits"]}


@pytest.mark.parametrize("query_id", ["1", "29", "100", "225"])
def test_hybrid_rrf_is_the_documented_fusion(
    es_client, cranfield, cranfield_reference, cranfield_index, query_id
):
    query, depth = cranfield.queries[query_id], 30
    bm25 = bm25_scores(es_client, cranfield_index.name, query)
    bm25_top = sorted(bm25, key=lambda i: (-bm25[i], i))[:depth]
    scm_top = [doc_id for doc_id, _ in cranfield_reference.search(query, depth)]
    fused = {}
    for ranking in (bm25_top, scm_top):
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1 / (60 + rank)
    expected = sorted(fused, key=lambda i: (-round(fused[i], 12), i))[:K]
    result = cranfield_index.searcher.hybrid(query, K, fusion="rrf", depth=depth)
    assert result.ids() == expected
    assert result.exact_guarantee
    np.testing.assert_allclose([h.score for h in result], [fused[i] for i in expected], rtol=1e-12)
    for hit in result:
        assert hit.components["bm25"] == (bm25[hit.id] if hit.id in bm25_top else None)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_hybrid_linear_is_the_documented_fusion(
    es_client, cranfield, cranfield_reference, cranfield_index, alpha
):
    query, depth = cranfield.queries["7"], 40
    bm25 = bm25_scores(es_client, cranfield_index.name, query)
    bm25_top = sorted(bm25, key=lambda i: (-bm25[i], i))[:depth]
    scm_all = dict(
        zip(cranfield_reference.ids.tolist(), cranfield_reference.scores(query), strict=True)
    )
    scm_top = [doc_id for doc_id, _ in cranfield_reference.search(query, depth)]
    candidates = list(dict.fromkeys(bm25_top + scm_top))
    b = [bm25.get(c, 0.0) for c in candidates]
    s = [scm_all[c] for c in candidates]
    fused = {
        c: alpha * (b[n] - min(b)) / (max(b) - min(b))
        + (1 - alpha) * (s[n] - min(s)) / (max(s) - min(s))
        for n, c in enumerate(candidates)
    }
    expected = sorted(fused, key=lambda i: (-round(fused[i], 12), i))[:K]
    result = cranfield_index.searcher.hybrid(query, K, fusion=LinearFusion(alpha), depth=depth)
    assert result.ids() == expected
    np.testing.assert_allclose([h.score for h in result], [fused[i] for i in expected], atol=1e-9)
    for hit in result:
        assert hit.components["bm25"] == pytest.approx(bm25.get(hit.id, 0.0))
        assert hit.components["scm"] == pytest.approx(scm_all[hit.id], abs=1e-12)


def test_hybrid_respects_filters_and_paging(cranfield, grouped_index):
    query = cranfield.queries["2"]
    clause, keeps = FILTERS["g1"]
    first = grouped_index.searcher.hybrid(query, 20, filter=clause)
    assert all(keeps(hit.id) for hit in first)
    page = grouped_index.searcher.hybrid(query, 10, filter=clause, from_=10)
    assert page.ids() == first.ids()[10:]
    with pytest.raises(ValueError, match="fusion must be one of"):
        grouped_index.searcher.hybrid(query, fusion="mean")


def test_an_adaptive_fusion_weighs_each_query_from_its_signals_and_says_why(
    cranfield_index, cranfield
):
    """Issue 36: hybrid search with an adaptive fusion computes the query's signals from what
    its one round trip returned (the lists, the query's vector, the SCM's best documents), fuses
    with that query's weights — the fused top k of the lists as the fusion computes it over
    them — reports the weights, and with ``explain`` says why; a query whose SCM's best stands
    out gets another weight than one whose does not."""
    import math

    from es_scm.fusion import AdaptiveFusion, fusion_from
    from es_scm.fusion.weights import WeightModel

    model = WeightModel(  # BM25's weight falls as the SCM's best score rises
        legs=("bm25", "scm"),
        signals=("scm.top",),
        center=(0.3,),
        scale=(0.1,),
        intercepts=(math.log(0.6), math.log(0.4)),
        coefficients=((-1.0,), (0.0,)),
    )
    fusion = AdaptiveFusion(alpha=0.6, model=model)
    searcher = cranfield_index.searcher
    weights = set()
    for query in list(cranfield.queries.values())[:20]:
        result = searcher.hybrid(query, 10, fusion=fusion, explain=True)
        assert result.fusion_weights is not None
        assert sum(result.fusion_weights.values()) == pytest.approx(1.0)
        weights.add(round(result.fusion_weights["bm25"], 6))
        assert any(note.startswith("fusion: BM25 weight") for note in result.notes), result.notes
    assert len(weights) > 5  # the weights read each query
    # the fixed fusion: its own weights, said to be fixed
    query = next(iter(cranfield.queries.values()))
    fixed = searcher.hybrid(query, 10, fusion=fusion_from("max", alpha=0.6), explain=True)
    assert fixed.fusion_weights == {"bm25": 0.6, "scm": pytest.approx(0.4)}
    assert any("fixed weights" in note for note in fixed.notes), fixed.notes
