"""Smoke test of the Elasticsearch (or OpenSearch) features es-scm relies on, against a real
server.

- the engine's field of y' (``sparse_vector``; OpenSearch's ``rank_features``) whose feature
  keys contain dots, Unicode and digits;
- the engine's weighted query on it (a bool of boosted ``term`` queries; OpenSearch's
  ``rank_feature`` clauses) scores Σ boost·value, where Lucene keeps only the 9 most
  significant bits of each stored value (relative error below 2⁻⁸, always rounding down);
- BM25 on a ``text`` field (Elasticsearch's scores: on OpenSearch 3.x with es-scm's settings);
- 1 and 3 shards give the same scores.

OpenSearch's ``rank_feature`` query splits its field at the last dot, so a key with a dot is
stored but cannot be queried there (docs/OPENSEARCH-NOTES.md): es-scm's keys are term ids.
"""

from __future__ import annotations

import math
import struct

import pytest

from es_scm.elastic import cluster_version

DOCUMENTS = {
    "d1": {"text": "the cat sat on the mat", "v": {"a.b": 0.5, "café": 1.25, "42": 2.0}},
    "d2": {"text": "the dog sat", "v": {"a.b": 3.1415926, "x.y.z": 0.001, "日本": 7.77}},
    "d3": {"text": "cats and dogs and cats", "v": {"42": 0.333333, "café": 0.1, "ünï.cödé": 9.5}},
    "d4": {"text": "a mat for the cat", "v": {"7": 123.456, "a.b": 1e-3}},
}
QUERY = {"a.b": 2.0, "café": 0.75, "42": 1.5, "日本": 0.2, "ünï.cödé": 0.01, "7": 0.003}


def keep_nine_significant_bits(value: float) -> float:
    """A positive float32 with all but the 9 most significant bits of its significand cleared."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.unpack("<f", struct.pack("<I", (bits >> 15) << 15))[0]


def create_index(client, engine, name: str, shards: int) -> None:
    version = cluster_version(client)
    client.indices.create(
        index=name,
        settings=engine.index_settings(version, shards=shards, replicas=0),
        mappings={"properties": {"v": engine.vector_field(version), "text": {"type": "text"}}},
    )
    for doc_id, body in DOCUMENTS.items():
        client.index(index=name, id=doc_id, document=body)
    client.indices.refresh(index=name)


def reachable(engine, key: str) -> bool:
    """Whether the engine's weighted query can name the feature ``key`` (module docstring)."""
    return engine.query_type != "rank_feature" or "." not in key


def boosted_terms_query(engine, query_vector: dict[str, float]) -> dict:
    """The weighted query, in the form es-scm sends on the engine beside ``sparse_vector``."""
    if engine.query_type == "rank_feature":
        clauses = [
            {"rank_feature": {"field": f"v.{key}", "linear": {}, "boost": w}}
            for key, w in query_vector.items()
        ]
    else:
        clauses = [{"term": {"v": {"value": key, "boost": w}}} for key, w in query_vector.items()]
    return {"bool": {"should": clauses}}


def scores(client, index: str, query: dict, **kwargs) -> dict[str, float]:
    response = client.search(index=index, query=query, size=100, **kwargs)
    return {hit["_id"]: hit["_score"] for hit in response["hits"]["hits"]}


@pytest.fixture
def one_and_three_shards(es_client, engine, index_name):
    create_index(es_client, engine, f"{index_name}-1", shards=1)
    create_index(es_client, engine, f"{index_name}-3", shards=3)
    return f"{index_name}-1", f"{index_name}-3"


def test_boosted_term_queries_score_the_quantized_sparse_dot_product(
    es_client, engine, one_and_three_shards
):
    index, _ = one_and_three_shards
    query = {key: w for key, w in QUERY.items() if reachable(engine, key)}
    got = scores(es_client, index, boosted_terms_query(engine, query))
    for doc_id, body in DOCUMENTS.items():
        exact = sum(w * body["v"].get(key, 0.0) for key, w in query.items())
        quantized = sum(
            w * keep_nine_significant_bits(body["v"].get(key, 0.0)) for key, w in query.items()
        )
        if exact == 0:
            assert doc_id not in got
            continue
        # Within the 9-significant-bit precision of the stored values, and never above the exact dot
        # product (Lucene truncates); the emulated truncation matches to float32 rounding.
        assert exact * (1 - 2**-8) - 1e-6 <= got[doc_id] <= exact * (1 + 1e-6)
        assert got[doc_id] == pytest.approx(quantized, rel=1e-6)


@pytest.mark.engine("elasticsearch")  # OpenSearch has no sparse_vector query
def test_sparse_vector_query_matches_boosted_terms(es_client, engine, one_and_three_shards):
    index, _ = one_and_three_shards
    native = {"sparse_vector": {"field": "v", "query_vector": QUERY, "prune": False}}
    assert scores(es_client, index, native) == pytest.approx(
        scores(es_client, index, boosted_terms_query(engine, QUERY)), rel=1e-6
    )


def test_feature_keys_with_dots_unicode_and_digits_are_stored_as_given(
    es_client, engine, one_and_three_shards
):
    index, _ = one_and_three_shards
    for key in ("a.b", "x.y.z", "café", "日本", "ünï.cödé", "42", "7"):
        expected = {d for d, body in DOCUMENTS.items() if key in body["v"]}
        stored = {hit["_id"] for hit in all_hits(es_client, index) if key in hit["_source"]["v"]}
        assert stored == expected, key  # the keys come back as given
        if reachable(engine, key):
            hits = scores(es_client, index, boosted_terms_query(engine, {key: 1.0}))
            assert set(hits) == expected, key


def all_hits(client, index: str) -> list[dict]:
    return client.search(index=index, query={"match_all": {}}, size=100)["hits"]["hits"]


def test_bm25_on_the_text_field(es_client, one_and_three_shards):
    index, _ = one_and_three_shards
    got = scores(es_client, index, {"match": {"text": "cat"}})
    # Lucene's BM25 with k1 = 1.2, b = 0.75: idf = ln(1 + (N − n + 0.5)/(n + 0.5)) and the length
    # norm uses the field length (standard analyzer, no stop words) against the average length.
    lengths = {d: len(body["text"].split()) for d, body in DOCUMENTS.items()}
    avgdl = sum(lengths.values()) / len(lengths)
    containing = [d for d, body in DOCUMENTS.items() if "cat" in body["text"].split()]
    idf = math.log(1 + (len(DOCUMENTS) - len(containing) + 0.5) / (len(containing) + 0.5))
    assert set(got) == set(containing)
    for doc_id in containing:
        tf = DOCUMENTS[doc_id]["text"].split().count("cat")
        norm = 1.2 * (1 - 0.75 + 0.75 * lengths[doc_id] / avgdl)
        # Lucene stores field lengths lossily (one byte), hence the loose tolerance.
        assert got[doc_id] == pytest.approx(idf * tf * 2.2 / (tf + norm), rel=0.05)


def test_one_and_three_shards_score_the_same(es_client, engine, one_and_three_shards):
    single, sharded = one_and_three_shards
    query = boosted_terms_query(engine, QUERY)
    assert scores(es_client, sharded, query) == pytest.approx(
        scores(es_client, single, query), rel=1e-6
    )
    bm25 = {"match": {"text": "cat dog mat"}}
    dfs = {"search_type": "dfs_query_then_fetch"}
    assert scores(es_client, sharded, bm25, **dfs) == pytest.approx(
        scores(es_client, single, bm25, **dfs), rel=1e-6
    )
