"""Which filter clauses an untrusted filter may use (``filter_policy="safe"``), in one line each;
how deep a filter may be; which fields a filter names, and which of them an index maps.

The clauses are those an application lets its users send; what an untrusted filter could do
otherwise is in :mod:`es_scm.search.filters` (and checked against a real node in
``tests/integration/test_search_reliability.py``).
"""

from __future__ import annotations

import pytest

from es_scm import SoftCosineModel
from es_scm.index.schema import index_mapping
from es_scm.search.filters import (
    MAX_FILTER_DEPTH,
    SAFE_QUERIES,
    MappedFields,
    UnknownFieldError,
    UnsafeFilterError,
    filter_clauses,
    filter_fields,
)

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


def nested_bools(levels: int) -> dict:
    clause: dict = {"match_all": {}}
    for _ in range(levels):
        clause = {"bool": {"filter": [clause]}}
    return clause


def test_a_filter_nested_too_deeply_is_one_line_at_any_depth():
    filter_clauses(nested_bools(30), "safe")  # thirty bools: three JSON levels each
    for levels in (34, 100_000):  # far past Python's recursion limit too
        for policy in ("any", "safe"):
            with pytest.raises(ValueError, match=f"nested deeper than {MAX_FILTER_DEPTH} levels"):
                filter_clauses(nested_bools(levels), policy)


def test_the_fields_a_filter_names():
    clauses = [
        *SAFE,
        {"multi_match": {"query": "x", "fields": ["text^2", "metadata.title", "metadata.*"]}},
        {"terms": {"metadata.tags": ["a"], "boost": 2.0, "_name": "mine"}},
        {"wildcard": {"metadata.code": "a*"}},
        {"script": {"script": {"source": "doc['metadata.hidden'].size() > 0"}}},
        {"term": {"_id": "1"}},
    ]
    assert filter_fields(clauses) == [
        "metadata.topic",
        "metadata.year",
        "text",
        "metadata.parts",
        "metadata.parts.k",
        "metadata.title",
        "metadata.tags",
        "metadata.code",
    ]
    assert filter_fields([nested_bools(30)]) == []


MODEL = SoftCosineModel.build(["a year of news", "a title"])  # S = identity: instant
FLATTENED = MappedFields([index_mapping(MODEL)])
TYPED = MappedFields([
    index_mapping(MODEL, metadata_mapping={
        "year": {"type": "integer"},
        "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
    })
])  # fmt: skip


def test_an_es_scm_index_maps_its_text_and_its_metadata():
    for field in ("text", "metadata", "metadata.year", "metadata.a.b.c", "scm.vector"):
        assert FLATTENED.known(field), field
    for field in ("year", "title", "metadata_year", "texts"):
        assert not FLATTENED.known(field), field
    for field in ("metadata", "metadata.year", "metadata.title", "metadata.title.raw"):
        assert TYPED.known(field), field
    assert not TYPED.known("metadata.author")


def test_a_field_outside_metadata_is_named_with_the_path_it_probably_meant():
    with pytest.raises(UnknownFieldError) as error:
        FLATTENED.check("news", [{"bool": {"filter": [{"term": {"year": 2020}}]}}])
    assert str(error.value) == (
        "the filter names the field 'year', which 'news' does not have (it would match no "
        "document); es-scm keeps a document's fields other than its text under metadata: "
        "filter on 'metadata.year'"
    )
    assert error.value.field == "year"
    with pytest.raises(UnknownFieldError, match=r"filter on 'metadata\.year'"):
        TYPED.check("news", [{"range": {"year": {"gte": 2020}}}])


def test_a_field_that_typed_metadata_does_not_map_is_named_with_the_fields_it_does():
    with pytest.raises(UnknownFieldError) as error:
        TYPED.check("news", [{"exists": {"field": "metadata.author"}}])
    message = str(error.value)
    assert "the field 'metadata.author', which 'news' does not have" in message
    assert "metadata.title.raw" in message
    assert "metadata.year" in message
    FLATTENED.check("news", [{"exists": {"field": "metadata.author"}}])  # flattened: any path


def test_fields_of_several_indices_are_known_if_one_maps_them():
    both = MappedFields([
        index_mapping(MODEL, metadata_mapping={"year": {"type": "integer"}}),
        {"properties": {"metadata": {"properties": {"month": {"type": "keyword"}}}},
         "runtime": {"decade": {"type": "long"}}},
    ])  # fmt: skip
    assert both.unknown([{"term": {"metadata.month": "may"}}, {"term": {"decade": 1}}]) == []
    assert both.unknown([{"term": {"metadata.day": 1}}]) == ["metadata.day"]


def bool_json(levels: int) -> str:
    """``nested_bools(levels)`` as the command line gets it: text, never parsed by the test."""
    return '{"bool": {"filter": [' * levels + '{"match_all": {}}' + "]}}" * levels


def test_the_command_line_reads_a_filter_of_any_depth_into_one_line():
    from argparse import ArgumentTypeError

    from es_scm.cli.search import filter_clause

    assert filter_clause(bool_json(30)) == nested_bools(30)
    # 40 bools: JSON reads it, the filter's limit refuses it; 5,000: too deep for JSON to read
    for levels, says in ((40, "nested deeper than 100 levels"), (5_000, "nested too deeply")):
        with pytest.raises(ArgumentTypeError, match=says) as refused:
            filter_clause(bool_json(levels))
        assert "\n" not in str(refused.value)
        assert len(str(refused.value)) < 200  # the text is not echoed


def test_a_field_value_filter_is_a_term_on_the_metadata_field():
    from es_scm.cli.search import filter_clause

    assert filter_clause("year=2020") == {"term": {"metadata.year": "2020"}}
    assert filter_clause("metadata.year=2020") == {"term": {"metadata.year": "2020"}}
    assert filter_clause("text=flow") == {"term": {"text": "flow"}}


def test_a_deep_filter_is_a_usage_error_before_anything_is_read(cli, tmp_path):
    from es_scm.cli.errors import EXIT_USAGE

    for levels in (40, 5_000):
        code, out, err = cli(
            "search", "--model", tmp_path / "no-model", "--index", "x",
            "--filter", bool_json(levels), "words",
        )  # fmt: skip
        assert code == EXIT_USAGE
        assert out == ""
        assert "Traceback" not in err
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1, err
        assert "argument --filter: " in errors[0]
