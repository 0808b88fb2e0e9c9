"""Which filter clauses an untrusted filter may use (``filter_policy="safe"``), in one line each.

The clauses are those an application lets its users send; what an untrusted filter could do
otherwise is in :mod:`es_scm.elastic.filters` (and checked against a real node in
``tests/integration/test_search_reliability.py``).
"""

from __future__ import annotations

import pytest

from es_scm.elastic.filters import SAFE_QUERIES, UnsafeFilterError, filter_clauses

SAFE = [
    {"term": {"metadata.topic": "sports"}},
    {"terms": {"metadata.topic": ["sports", "news"]}},
    {"range": {"metadata.year": {"gte": 2000, "lt": 2010}}},
    {"match": {"text": "wing"}},
    {"match_phrase": {"text": "swept wing"}},
    {"exists": {"field": "metadata.year"}},
    {"ids": {"values": ["1", "2"]}},
    {"prefix": {"metadata.topic": "sp"}},
    {"match_all": {}},
    {
        "bool": {
            "must": {"term": {"metadata.topic": "sports"}},
            "should": [{"range": {"metadata.year": {"gte": 2000}}}],
            "must_not": [{"ids": {"values": ["3"]}}],
            "filter": [{"constant_score": {"filter": {"exists": {"field": "text"}}}}],
            "minimum_should_match": 0,
        }
    },
    {"dis_max": {"queries": [{"match": {"text": "a"}}, {"match": {"text": "b"}}]}},
    {"nested": {"path": "metadata.parts", "query": {"term": {"metadata.parts.k": "v"}}}},
]
UNSAFE = [
    ({"terms": {"_id": {"index": "secrets", "id": "1", "path": "ids"}}}, "terms"),
    ({"wrapper": {"query": "eyJtYXRjaF9hbGwiOnt9fQ=="}}, "wrapper"),
    ({"script": {"script": "doc['n'].value > 1"}}, "script"),
    ({"script_score": {"query": {"match_all": {}}, "script": "1"}}, "script_score"),
    ({"function_score": {"query": {"match_all": {}}}}, "function_score"),
    ({"more_like_this": {"like": [{"_index": "secrets", "_id": "1"}]}}, "more_like_this"),
    ({"percolate": {"field": "q", "index": "secrets", "id": "1"}}, "percolate"),
    ({"geo_shape": {"location": {"indexed_shape": {"index": "shapes", "id": "1"}}}}, "geo_shape"),
    ({"query_string": {"query": "/.*/"}}, "query_string"),
    ({"regexp": {"text": ".*"}}, "regexp"),
    ({"bool": {"filter": [{"term": {"a": 1}}, {"wrapper": {"query": "e30="}}]}}, "wrapper"),
    ({"bool": {"should": {"bool": {"must_not": {"script": {"script": "1"}}}}}}, "script"),
    ({"constant_score": {"filter": {"terms": {"x": {"index": "i", "id": "1"}}}}}, "terms"),
]


@pytest.mark.parametrize("clause", SAFE, ids=lambda clause: next(iter(clause)))
def test_safe_clauses_pass_unchanged(clause):
    assert filter_clauses(clause, "safe") == (clause,)
    assert filter_clauses([clause, clause], "safe") == (clause, clause)


@pytest.mark.parametrize(("clause", "name"), UNSAFE, ids=[name for _, name in UNSAFE])
def test_anything_else_is_refused_in_one_line_that_names_it(clause, name):
    with pytest.raises(UnsafeFilterError) as refused:
        filter_clauses([{"term": {"a": 1}}, clause], "safe")
    message = str(refused.value)
    assert refused.value.clause == name
    assert f"filter clause {name!r} is not allowed" in message
    assert "filter_policy='any'" in message  # the way to send a trusted filter
    assert "\n" not in message
    assert filter_clauses(clause, "any") == (clause,)  # the API's default sends it as it is


def test_a_clause_of_two_query_types_is_refused():
    with pytest.raises(UnsafeFilterError, match="one query type"):
        filter_clauses({"term": {"a": 1}, "wrapper": {"query": "e30="}}, "safe")


def test_the_safe_set_reads_only_the_searched_documents():
    assert {"term", "terms", "range", "match", "bool", "exists", "ids", "prefix"} <= set(
        SAFE_QUERIES
    )
    for dangerous in ("wrapper", "script", "script_score", "more_like_this", "percolate"):
        assert dangerous not in SAFE_QUERIES


def test_a_filter_that_is_not_a_clause_is_refused_whatever_the_policy():
    for policy in ("any", "safe"):
        with pytest.raises(ValueError, match="filter must be an Elasticsearch query clause"):
            filter_clauses(["metadata.topic=sports"], policy)
