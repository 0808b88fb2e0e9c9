"""Your schema: metadata that is never guessed into a rejection (or, mapped explicitly, rejected
document by document), the text field's analyzer, and indices of the previous mapping still
readable — on a real node (the mappings without a server: tests/unit/test_schema.py)."""

from __future__ import annotations

import json

import pytest

from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import SCMIndex, cluster_version
from es_scm.engines import version_tuple
from es_scm.index.schema import (
    METADATA_IGNORE_ABOVE,
    index_mapping,
    mapping_options,
    settings_for_version,
)
from tests.support import AERO_TEXTS

TEXTS = AERO_TEXTS


def ids(index: SCMIndex, query: str, filter: dict) -> list[str]:
    return sorted(index.searcher.search(query, k=10, filter=filter).ids())


def test_a_conflicting_metadata_type_is_stored_safely(es_client, engine, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    # one document per run, as they would arrive: the first would make a dynamic mapping a date
    for doc_id, published in [("a", "2020-01-01"), ("b", "not a date"), ("c", {"nested": 1})]:
        report = index.index_documents([{"id": doc_id, "text": TEXTS[0], "published": published}])
        assert report.ok, report.failures
    assert index.count() == 3
    query = "boundary layer"
    assert ids(index, query, {"term": {"metadata.published": "2020-01-01"}}) == ["a"]
    assert ids(index, query, {"term": {"metadata.published": "not a date"}}) == ["b"]
    assert ids(index, query, {"term": {"metadata.published.nested": "1"}}) == ["c"]
    assert ids(index, query, {"prefix": {"metadata.published": "not"}}) == ["b"]
    assert ids(index, query, {"range": {"metadata.published": {"gte": "2020", "lt": "2021"}}}) == [
        "a"
    ]
    # flattened: a leaf at that path; OpenSearch 2.x's flat_object: the object under it (c) too
    # (3.x's: a leaf, as flattened)
    older = version_tuple(cluster_version(es_client)) < (3,)
    under = ["c"] if engine.metadata_type == "flat_object" and older else []
    assert ids(index, query, {"exists": {"field": "metadata.published"}}) == ["a", "b", *under]
    hits = {hit.id: hit for hit in index.searcher.search(query, k=3)}
    assert hits["c"].source["metadata"] == {"published": {"nested": 1}}  # _source as sent


def test_numbers_booleans_and_long_strings_never_fail_either(es_client, engine, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    documents = [
        {"id": "n", "text": TEXTS[1], "year": 1999, "score": 0.5, "ok": True, "tags": ["x", 2]},
        {"id": "s", "text": TEXTS[1], "year": "ninety-nine", "score": None, "ok": "maybe"},
        {"id": "l", "text": TEXTS[1], "year": "y" * (METADATA_IGNORE_ABOVE + 1)},
    ]
    report = index.index_documents(documents)
    assert report.ok, report.failures
    query = "supersonic flow"
    assert ids(index, query, {"term": {"metadata.year": "1999"}}) == ["n"]
    assert ids(index, query, {"terms": {"metadata.tags": ["2"]}}) == ["n"]
    assert ids(index, query, {"term": {"metadata.ok": "true"}}) == ["n"]
    # l: too long for flattened's ignore_above; OpenSearch's flat_object has none (it indexes
    # leaves up to Lucene's term limit, test_opensearch_es.py)
    long = ["l"] if engine.metadata_type == "flat_object" else []
    assert ids(index, query, {"exists": {"field": "metadata.year"}}) == [*long, "n", "s"]


def test_an_explicit_mapping_reports_each_conflicting_document(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.create(metadata_mapping={"published": {"type": "date"}, "topic": {"type": "keyword"}})
    documents = [
        {"id": "a", "text": TEXTS[0], "published": "2020-01-01", "topic": "flow"},
        {"id": "b", "text": TEXTS[0], "published": "not a date"},
        {"id": "c", "text": TEXTS[0], "published": {"nested": 1}},
        {"id": "d", "text": TEXTS[0], "unmapped": {"deep": [1, "x"]}},
    ]
    report = index.index_documents(documents)
    reasons = dict(report.failures)
    assert (report.indexed, report.failed) == (2, 2)
    assert sorted(reasons) == ["b", "c"]
    assert all("published" in reason for reason in reasons.values())
    assert report.index_count == 2  # nothing lost silently: 2 indexed + 2 reported
    query = "boundary layer"
    assert ids(index, query, {"range": {"metadata.published": {"gte": "2019-06-01"}}}) == ["a"]
    assert ids(index, query, {"term": {"metadata.topic": "flow"}}) == ["a"]
    hits = {hit.id: hit for hit in index.searcher.search(query, k=5)}
    assert hits["d"].source["metadata"] == {"unmapped": {"deep": [1, "x"]}}  # stored, unindexed
    mapping = es_client.indices.get_mapping(index=index_name)[index_name]["mappings"]
    assert "unmapped" not in mapping["properties"]["metadata"]["properties"]


def test_the_text_analyzer_is_the_one_asked_for(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.create(text_analyzer="whitespace")
    index.index_documents([{"id": "1", "text": "Boundary-Layer theory"}])
    mapping = es_client.indices.get_mapping(index=index_name)[index_name]["mappings"]
    assert mapping["properties"]["text"] == {"type": "text", "analyzer": "whitespace"}

    def bm25(text: str) -> int:
        response = es_client.search(index=index_name, query={"match": {"text": text}})
        return len(response["hits"]["hits"])

    # whitespace keeps "Boundary-Layer" whole and in its case; standard would split and lower it
    assert bm25("boundary") == 0
    assert bm25("Boundary-Layer") == 1


def test_an_unknown_analyzer_is_one_line_that_names_it(
    cli, es_client, es_url, index_name, model, tmp_path
):
    with pytest.raises(ValueError, match=r"^unknown text analyzer 'no_such_analyzer': ") as refused:
        SCMIndex(es_client, index_name, model).create(text_analyzer="no_such_analyzer")
    assert "\n" not in str(refused.value)
    assert "--text-analyzer standard" in str(refused.value)  # the way out, english being default
    assert not es_client.indices.exists(index=index_name)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "1", "text": TEXTS[0]}) + "\n", encoding="utf-8")
    code, _, err = cli(
        "index", "--model", model.save(tmp_path / "model"), "--index", index_name,
        "--corpus", corpus, "--text-analyzer", "no_such_analyzer", "--es-url", es_url,
        "--no-progress",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("es-scm: error: unknown text analyzer 'no_such_analyzer'")


def test_the_command_line_takes_a_metadata_mapping_file(
    cli, es_client, engine, es_url, index_name, model, tmp_path
):
    corpus = tmp_path / "c.jsonl"
    rows = [{"id": "1", "text": TEXTS[0], "published": "2020-01-01"},
            {"id": "2", "text": TEXTS[1], "published": "soon"}]  # fmt: skip
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    fields = tmp_path / "fields.json"
    fields.write_text(json.dumps({"properties": {"published": {"type": "date"}}}), "utf-8")
    model_dir = model.save(tmp_path / "model")
    code, out, err = cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--metadata-mapping", fields, "--text-analyzer", "simple", "--es-url", es_url,
        "--no-progress",
    )  # fmt: skip
    assert code == 3  # one document failed, and says why
    assert "indexed 1 " in out
    # the engine's own words: Elasticsearch's document_parsing_exception, OpenSearch's
    # mapper_parsing_exception
    refusal = "mapper" if engine.name == "opensearch" else "document"
    assert f"2: HTTP 400: {refusal}_parsing_exception" in err
    mapping = es_client.indices.get_mapping(index=index_name)[index_name]["mappings"]
    assert mapping_options(mapping) == {
        "text_analyzer": "simple",
        "metadata_mapping": {"published": {"type": "date"}},
        "expansion": "query",
        "dense": None,
    }
    # rerunning into the existing index: the options cannot change its mapping, and it says so
    code, _, err = cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--text-analyzer", "whitespace", "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert "apply to new indices only" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"published": "date"}', encoding="utf-8")
    code, _, err = cli(
        "index", "--model", model_dir, "--index", index_name + "-x", "--corpus", corpus,
        "--metadata-mapping", bad, "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert "bad.json: metadata_mapping must be" in err
    assert not es_client.indices.exists(index=index_name + "-x")


def test_an_index_of_the_previous_mapping_still_works(es_client, engine, index_name, model):
    """Schema 2 before this change: dynamic object metadata, default analyzer. Same version."""
    previous = index_mapping(model, engine=engine)
    previous["properties"]["metadata"] = {"type": "object", "dynamic": True}
    es_client.indices.create(
        index=index_name,
        settings=settings_for_version(cluster_version(es_client), engine=engine),
        mappings=previous,
    )
    index = SCMIndex(es_client, index_name, model)
    report = index.index_documents(
        [{"id": str(i), "text": text, "year": 2000 + i} for i, text in enumerate(TEXTS)]
    )
    assert report.ok
    assert index.searcher.check()["schema_version"] == 2
    result = index.searcher.search(
        "supersonic flow", k=2, filter={"range": {"metadata.year": {"gte": 2003}}}
    )
    assert result.ids() == ["3"]
    assert result.exact_guarantee
