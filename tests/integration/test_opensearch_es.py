"""What differs on OpenSearch, on a real OpenSearch node: the engine detected (or named), an
opensearch-py client taken as it is, the mapping and the clause limit of OpenSearch, the dense
leg refused in one line, the errors of its client as es-scm reads them, and the command line
against an OpenSearch URL — the README's three commands to a first exact result.

Every test here runs on OpenSearch only (``scripts/run-tests``' OpenSearch phase sets
``ES_SCM_TEST_ENGINE=opensearch``); elsewhere they are deselected, not skipped. The search
methods themselves, exact search's proof included, are the engine-neutral tests
(``test_search_es.py`` and the others of the phase's ``OS_TESTS``).
"""

from __future__ import annotations

import json
import re
import socket

import elastic_transport
import elasticsearch
import pytest

from es_scm import SoftCosineModel
from es_scm.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL
from es_scm.elastic import DenseQuery, SCMIndex, Searcher, client_from_env, cluster_version
from es_scm.elastic.aio import AsyncSCMIndex, AsyncSearcher, async_client_from_env
from es_scm.elastic.connection import client_options, detect_engine, error_reason
from es_scm.engines import (
    OPENSEARCH,
    DenseUnsupportedError,
    EngineMismatchError,
    engine_of,
    version_tuple,
)
from es_scm.model import BruteForceSearch
from tests.support import AERO_TEXTS, assert_one_line_error, one_error_line

pytestmark = pytest.mark.engine("opensearch")

TEXTS = AERO_TEXTS
DOCUMENTS = [{"id": str(n), "text": text, "topic": f"t{n % 2}"} for n, text in enumerate(TEXTS)]


@pytest.fixture
def filled(es_client, index_name, model) -> SCMIndex:
    index = SCMIndex(es_client, index_name, model)
    report = index.index_documents(DOCUMENTS)
    assert report.ok, report.failures
    return index


def brute_force(model, query: str, k: int = 5) -> list[str]:
    reference = BruteForceSearch(
        model, [d["id"] for d in DOCUMENTS], [d["text"] for d in DOCUMENTS]
    )
    return [doc_id for doc_id, _ in reference.search(query, k)]


# -- the engine: detected once, or named ----------------------------------------------------------


def test_the_engine_is_detected_from_the_url(es_url, monkeypatch):
    monkeypatch.delenv("ES_SCM_ENGINE", raising=False)
    assert detect_engine(client_options(es_url)) is OPENSEARCH
    client = client_from_env(es_url)
    try:
        assert engine_of(client) is OPENSEARCH
        assert isinstance(client, elasticsearch.Elasticsearch)  # elasticsearch-py's surface
        assert version_tuple(cluster_version(client)) >= OPENSEARCH.min_version
        assert type(client.opensearch).__module__.startswith("opensearchpy")
    finally:
        client.close()


def test_the_engine_can_be_named_and_a_wrong_name_says_why_in_one_line(es_url, monkeypatch):
    monkeypatch.setenv("ES_SCM_ENGINE", "opensearch")
    client = client_from_env(es_url)
    assert engine_of(client) is OPENSEARCH
    client.close()
    monkeypatch.setenv("ES_SCM_ENGINE", "elasticsearch")  # wrong: elasticsearch-py's client
    wrong = client_from_env(es_url)
    with pytest.raises(EngineMismatchError, match=r"is OpenSearch [\d.]+, not Elasticsearch"):
        wrong.nodes.info(filter_path="nodes.*.version")
    wrong.close()
    # a client of the user's own, without es-scm's transport: elasticsearch-py's product check
    own = elasticsearch.Elasticsearch(es_url)
    with pytest.raises(elasticsearch.ApiError) as refused:
        own.nodes.info(filter_path="nodes.*.version")
    assert "not Elasticsearch (OpenSearch?)" in error_reason(refused.value)
    own.close()
    monkeypatch.setenv("ES_SCM_ENGINE", "solr")
    with pytest.raises(ValueError, match=r"^\$ES_SCM_ENGINE='solr' is not an engine es-scm knows"):
        client_from_env(es_url)


def test_an_opensearch_py_client_is_taken_as_it_is(es_url, index_name, model):
    from opensearchpy import OpenSearch

    client = OpenSearch(es_url)
    index = SCMIndex(client, index_name, model)  # wrapped: elasticsearch-py's surface
    assert index.client.opensearch is client
    assert index.index_documents(DOCUMENTS).ok
    searcher = Searcher(client, index_name, model)
    assert searcher.search("boundary layer", 5).ids() == brute_force(model, "boundary layer")
    assert index.delete()
    client.close()


def test_an_async_opensearch_py_client_is_taken_as_it_is(es_url, index_name, model):
    import asyncio

    from opensearchpy import AsyncOpenSearch

    async def work() -> tuple[list[str], list[str]]:
        client = AsyncOpenSearch(es_url)
        try:
            index = AsyncSCMIndex(client, index_name, model)
            assert (await index.index_documents(DOCUMENTS)).ok
            searcher = AsyncSearcher(client, index_name, model)
            exact = await searcher.search("supersonic flow", 5)
            hybrid = await searcher.hybrid("supersonic flow", 5)
            await index.delete()
            return exact.ids(), hybrid.ids()
        finally:
            await client.close()

    exact, hybrid = asyncio.run(work())
    assert exact == brute_force(model, "supersonic flow")
    assert hybrid


def test_the_async_client_from_the_url_is_opensearchs(es_url, filled, model):
    import asyncio

    async def work():
        client = async_client_from_env(es_url)
        try:
            assert engine_of(client) is OPENSEARCH
            return await AsyncSearcher(client, filled.name, model).search("heat transfer", 5)
        finally:
            await client.close()

    assert asyncio.run(work()).ids() == brute_force(model, "heat transfer")


# -- what OpenSearch stores and reads -------------------------------------------------------------


def test_the_index_is_made_of_opensearchs_types(es_client, filled):
    mapping = es_client.indices.get_mapping(index=filled.name)[filled.name]["mappings"]
    assert mapping["properties"]["scm"]["properties"]["vector"] == {"type": "rank_features"}
    assert mapping["properties"]["metadata"] == {"type": "flat_object"}
    settings = es_client.indices.get_settings(index=filled.name, flat_settings=True)
    similarity = settings[filled.name]["settings"].get("index.similarity.default.type")
    version = cluster_version(es_client)
    # 3.x: Elasticsearch's BM25 scores (LegacyBM25); 2.x has them by default, and no such name
    assert similarity == ("LegacyBM25" if version_tuple(version) >= (3,) else None)
    assert "index.mapping.exclude_source_vectors" not in settings[filled.name]["settings"]
    # flat_object takes the filters flattened does
    result = filled.searcher.search("boundary layer", 10, filter={"term": {"metadata.topic": "t0"}})
    assert result.ids()
    assert all(hit.source["metadata"]["topic"] == "t0" for hit in result)


def test_the_clause_limit_is_the_cluster_setting(es_client, filled, model):
    setting = "indices.query.bool.max_clause_count"
    answer = es_client.cluster.get_settings(include_defaults=True, flat_settings=True)
    current = next(
        int(answer[level][setting])
        for level in ("transient", "persistent", "defaults")
        if setting in answer.get(level, {})
    )
    assert Searcher(es_client, filled.name, model).max_clauses() == current
    es_client.cluster.put_settings(transient={setting: 1500})
    try:
        assert Searcher(es_client, filled.name, model).max_clauses() == 1500
    finally:
        es_client.cluster.put_settings(transient={setting: None})


def test_a_query_over_the_clause_limit_is_cut_and_said(es_client, filled, model):
    """Exact search with fewer clauses than the expansion has: the lowest-weighted terms are
    left out, and the result says so (or cannot be proven), as on Elasticsearch."""
    searcher = Searcher(es_client, filled.name, model, max_clauses=1)
    result = searcher.native("supersonic flow over a swept wing", 5)
    assert result.pruned_terms > 0
    assert any("left out" in note for note in result.notes)


def test_a_metadata_string_over_lucenes_term_limit_fails_its_document_alone(
    es_client, index_name, model
):
    """flat_object has no ignore_above: a leaf over 32,766 bytes fails its document, with
    OpenSearch's reason; the others are indexed (a typed mapping of the field, a keyword with
    ignore_above, keeps the long value in _source unindexed, as flattened does)."""
    index = SCMIndex(es_client, index_name, model)
    documents = [
        {"id": "long", "text": TEXTS[0], "note": "x" * 40_000},
        {"id": "short", "text": TEXTS[1], "note": "fine"},
    ]
    report = index.index_documents(documents)
    assert (report.indexed, report.failed) == (1, 1)
    reasons = dict(report.failures)
    assert "immense term" in reasons["long"] or "bytes can be at most" in reasons["long"]
    typed = SCMIndex(es_client, f"{index_name}-typed", model)
    typed.create(metadata_mapping={"note": {"type": "keyword", "ignore_above": 4096}})
    assert typed.index_documents(documents).ok


def test_a_query_form_opensearch_lacks_is_refused_before_any_request(es_client, filled, model):
    with pytest.raises(ValueError, match="query_type must be one of") as refused:
        Searcher(es_client, filled.name, model, query_type="bool")
    assert "rank_feature" in str(refused.value)


# -- the dense leg: one line ----------------------------------------------------------------------


def test_dense_vectors_are_refused_in_one_line_before_any_request(es_client, filled, index_name):
    vector = DenseQuery("metadata.embedding", [1.0, 0.0, 0.0])
    searcher = filled.searcher
    for call in (
        lambda: searcher.hybrid("boundary layer", 5, dense=vector),
        lambda: searcher.dense("boundary layer", 5, dense=vector),
        lambda: searcher.batch_search(["boundary layer"], 5, method="hybrid", dense=vector),
        lambda: SCMIndex(es_client, f"{index_name}-dense", filled.model).create(dense=True),
    ):
        with pytest.raises(DenseUnsupportedError) as refused:
            call()
        message = str(refused.value)
        assert "\n" not in message
        assert message.startswith("dense vectors are not supported on OpenSearch")
    assert not es_client.indices.exists(index=f"{index_name}-dense")


# -- errors, as es-scm reads them -----------------------------------------------------------------


def test_errors_come_as_elasticsearch_pys_with_the_answer(es_client, index_name):
    with pytest.raises(elasticsearch.NotFoundError) as missing:
        es_client.indices.get(index=index_name)
    assert missing.value.meta.status == 404
    assert missing.value.body["error"]["type"] == "index_not_found_exception"
    assert es_client.options(ignore_status=404).indices.get(index=index_name).meta.status == 404
    assert not es_client.indices.exists(index=index_name)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = client_from_env(f"http://127.0.0.1:{port}", engine="opensearch", max_retries=0)
    with pytest.raises(elastic_transport.ConnectionError):
        closed.count(index=index_name)
    closed.close()


# -- the command line against an OpenSearch URL ---------------------------------------------------


def test_the_readmes_three_commands_reach_an_exact_result(cli, es_url, index_name, model, tmp_path):
    """``es-scm model build``, ``es-scm index``, ``es-scm search`` with ``--es-url`` at an
    OpenSearch cluster, the engine detected: the exact top k is the brute force's."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    model_dir = tmp_path / "docs-model"
    code, _, err = cli(
        "model",
        "build",
        "--corpus",
        corpus,
        "--out",
        model_dir,
        "--no-progress",
        "--embeddings",
        "glove-6b-50d",
    )
    assert code == EXIT_OK, err
    code, out, err = cli(
        "index",
        "--model",
        model_dir,
        "--index",
        index_name,
        "--corpus",
        corpus,
        "--es-url",
        es_url,
        "--no-progress",
    )
    assert code == EXIT_OK, err
    assert f"indexed {len(DOCUMENTS)} " in out
    code, out, err = cli(
        "search",
        "--model",
        model_dir,
        "--index",
        index_name,
        "--es-url",
        es_url,
        "--mode",
        "exact",
        "--json",
        "boundary layer",
    )
    assert code == EXIT_OK, err
    found = [json.loads(line)["id"] for line in out.splitlines() if line.strip()]
    built = SoftCosineModel.load(model_dir)
    assert found == brute_force(built, "boundary layer", len(found))
    code, out, err = cli(
        "search",
        "--model",
        model_dir,
        "--index",
        index_name,
        "--es-url",
        es_url,
        "--engine",
        "opensearch",
        "--mode",
        "hybrid",
        "boundary layer",
    )
    assert code == EXIT_OK, err


def test_the_command_line_says_in_one_line_what_opensearch_cannot(
    cli, es_url, index_name, model, tmp_path
):
    model_dir = model.save(tmp_path / "model")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    code, _, err = cli(
        "index",
        "--model",
        model_dir,
        "--index",
        index_name,
        "--corpus",
        corpus,
        "--es-url",
        es_url,
        "--no-progress",
    )
    assert code in (EXIT_OK, EXIT_PARTIAL), err
    code, _, err = cli(
        "search",
        "--model",
        model_dir,
        "--index",
        index_name,
        "--es-url",
        es_url,
        "--mode",
        "hybrid",
        "--dense",
        "boundary layer",
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "dense vectors are not supported on OpenSearch")
    code, _, err = cli(
        "search",
        "--model",
        model_dir,
        "--index",
        index_name,
        "--es-url",
        es_url,
        "--engine",
        "elasticsearch",
        "boundary layer",
    )
    assert code == EXIT_ERROR
    assert re.search(r"is OpenSearch [\d.]+, not Elasticsearch", one_error_line(err)), err
