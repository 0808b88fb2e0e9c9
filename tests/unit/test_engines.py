"""What differs between the engines, without a server: es_scm/engines.py (each engine's
mappings, settings, versions, capabilities, the engine of an answer) and the pure parts of the
OpenSearch client (its options, its media types). On real nodes: the OpenSearch phase of
``make test`` (tests/integration/test_opensearch_es.py and the engine-neutral tests)."""

from __future__ import annotations

import asyncio
import http.server
import re
import threading
from collections.abc import Iterator

import pytest

from es_scm.elastic._sync.opensearch import opensearch_arguments, plain_headers
from es_scm.engines import (
    ELASTICSEARCH,
    ENGINES,
    OPENSEARCH,
    DenseUnsupportedError,
    EngineError,
    NotASearchEngineError,
    UnsupportedVersionError,
    engine_named,
    engine_of,
    engine_of_answer,
)
from es_scm.index.schema import index_mapping, settings_for_version
from es_scm.search.query import expand_query
from tests.support import one_error_line

TEXTS = ["boundary layer on a flat plate", "supersonic flow past a cone", "layer of heat"]
ES_NODE = {"nodes": {"x": {"version": "9.5.4", "build_flavor": "default"}}}
OS_NODE = {"nodes": {"y": {"version": "2.19.6"}}}


def test_the_engine_of_a_nodes_answer():
    marked = {"X-elastic-product": "Elasticsearch"}
    assert engine_of_answer(200, marked, ES_NODE) == (ELASTICSEARCH, "9.5.4")
    assert engine_of_answer(200, {}, ES_NODE) == (ELASTICSEARCH, "9.5.4")  # a header stripped
    assert engine_of_answer(200, {"content-type": "application/json"}, OS_NODE) == (
        OPENSEARCH,
        "2.19.6",
    )
    # no answer, an error, a page that is not a node's: Elasticsearch, the default
    assert engine_of_answer(None, {}, None) == (ELASTICSEARCH, None)
    assert engine_of_answer(401, {}, {"error": "unauthorized"})[0] is ELASTICSEARCH
    assert engine_of_answer(200, {}, "<html>")[0] is ELASTICSEARCH


def test_a_client_says_its_engine_and_names_are_checked(monkeypatch):
    assert engine_of(object()) is ELASTICSEARCH

    class Marked:
        es_scm_engine = "opensearch"

    assert engine_of(Marked()) is OPENSEARCH
    monkeypatch.delenv("ES_SCM_ENGINE", raising=False)
    assert engine_named(None) is None  # auto: asked of the cluster
    assert engine_named("OpenSearch") is OPENSEARCH
    monkeypatch.setenv("ES_SCM_ENGINE", "elasticsearch")
    assert engine_named("auto") is ELASTICSEARCH
    with pytest.raises(EngineError, match=r"^engine=.solr. is not an engine es-scm knows"):
        engine_named("solr")
    assert set(ENGINES) == {"elasticsearch", "opensearch"}


def test_each_engine_maps_y_prime_and_the_metadata_its_own_way(model):
    assert ELASTICSEARCH.vector_field("8.18.0") == {"type": "sparse_vector"}
    assert ELASTICSEARCH.vector_field("9.1.0")["index_options"] == {"prune": False}
    assert OPENSEARCH.vector_field("3.6.0") == {"type": "rank_features"}
    mapping = index_mapping(model, expansion="documents", engine=OPENSEARCH)
    scm = mapping["properties"]["scm"]["properties"]
    assert scm["vector"] == scm["expanded"] == {"type": "rank_features"}
    assert mapping["properties"]["metadata"] == {"type": "flat_object"}
    flattened = index_mapping(model)["properties"]["metadata"]
    assert flattened == {"type": "flattened", "ignore_above": 4096}


def test_each_engines_settings_by_version():
    assert "index.mapping.exclude_source_vectors" not in settings_for_version("9.1.0")
    assert settings_for_version("9.2.0")["index.mapping.exclude_source_vectors"] is False
    assert settings_for_version("2.19.6", engine=OPENSEARCH) == {
        "number_of_shards": 1,
        "number_of_replicas": 0,
    }
    three = settings_for_version("3.6.0", shards=2, engine=OPENSEARCH)
    assert three["index.similarity.default.type"] == "LegacyBM25"
    assert three["number_of_shards"] == 2


def test_versions_too_old_are_refused_in_the_engines_words():
    assert OPENSEARCH.check_version("2.19.6") == "2.19.6"
    assert OPENSEARCH.check_version("3.0.0") == "3.0.0"
    with pytest.raises(UnsupportedVersionError, match=r"^OpenSearch 2\.18\.0 is too old"):
        OPENSEARCH.check_version("2.18.0")
    with pytest.raises(UnsupportedVersionError, match="the sparse_vector query"):
        ELASTICSEARCH.check_version("8.14.3")


def test_dense_vectors_are_refused_in_one_line_where_the_engine_has_none():
    ELASTICSEARCH.check_dense()
    with pytest.raises(DenseUnsupportedError) as refused:
        OPENSEARCH.check_dense()
    assert "\n" not in str(refused.value)
    assert str(refused.value).startswith("dense vectors are not supported on OpenSearch")


def test_opensearchs_clause_limit_is_the_setting_most_specific_first():
    setting = "indices.query.bool.max_clause_count"
    assert OPENSEARCH.max_clauses({"settings": {"defaults": {setting: "1024"}}}) == 1024
    layered = {"persistent": {setting: "4096"}, "defaults": {setting: "1024"}}
    assert OPENSEARCH.max_clauses({"settings": layered}) == 4096
    layered["transient"] = {setting: 2048}
    assert OPENSEARCH.max_clauses({"settings": layered}) == 2048
    assert OPENSEARCH.max_clauses({"settings": {}}) == 1024  # not readable: the default


def test_the_rank_feature_form_sends_each_weight_on_its_feature(model):
    expanded = expand_query(model, "boundary layer", 1024)
    query = expanded.es_query("rank_feature", [{"term": {"metadata.topic": "a"}}])
    clauses = query["bool"]["must"][0]["bool"]["should"]
    assert query["bool"]["filter"] == [{"term": {"metadata.topic": "a"}}]
    sent = {c["rank_feature"]["field"]: c["rank_feature"]["boost"] for c in clauses}
    assert sent == {f"scm.vector.{term}": weight for term, weight in expanded.clauses}
    assert all(c["rank_feature"]["linear"] == {} for c in clauses)
    assert all(weight > 0 for weight in sent.values())  # OpenSearch refuses a negative boost


def test_elasticsearch_pys_options_become_opensearch_pys():
    connection, transport = opensearch_arguments(
        {
            "hosts": ["https://search.example.com:443"],
            "basic_auth": ("user", "secret"),
            "ca_certs": "/ca.pem",
            "verify_certs": True,
            "request_timeout": 30,
            "max_retries": 1,
            "retry_on_timeout": True,
            "retry_on_status": 503,
        }
    )
    assert connection["http_auth"] == ("user", "secret")
    assert connection["timeout"] == 30
    assert connection["max_retries"] == 0  # the transport retries, with each request's options
    assert transport == {
        "request_timeout": 30,
        "max_retries": 1,
        "retry_on_timeout": True,
        "retry_on_status": (503,),
    }
    keyed, _ = opensearch_arguments({"hosts": ["http://h:9200"], "api_key": ("id", "key")})
    assert keyed["headers"]["authorization"] == "ApiKey aWQ6a2V5"
    with pytest.raises(ValueError, match="no OpenSearch counterpart: cloud_id"):
        opensearch_arguments({"hosts": ["http://h:9200"], "cloud_id": "x"})


def test_the_media_types_opensearch_takes():
    sent = plain_headers(
        {
            "Accept": "application/vnd.elasticsearch+json; compatible-with=9",
            "Content-Type": "application/vnd.elasticsearch+x-ndjson; compatible-with=8",
            "authorization": "Basic x",
        }
    )
    assert sent == {
        "accept": "application/json",
        "content-type": "application/x-ndjson",
        "authorization": "Basic x",
    }


# -- a server that is no search engine (issue 42, item 2) ------------------------------------------

#: What a web server, a proxy or another API may answer at the cluster's URL: (status, content
#: type, body). The last one gave "unexpected AttributeError: 'str' object has no attribute ...".
NOT_ENGINES = {
    "a web server's 404 page": (404, "text/html", b"<html><body>Not Found</body></html>"),
    "a text answer": (200, "text/plain", b"ok\n"),
    "a JSON string": (200, "application/json", b'"ok"'),
}


@pytest.fixture(params=list(NOT_ENGINES))
def not_an_engine(request) -> Iterator[tuple[str, int, str]]:
    """A tiny HTTP server of the standard library answering everything as one of
    :data:`NOT_ENGINES` does: its URL, the status and the content type."""
    status, media, body = NOT_ENGINES[request.param]

    class Answer(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            self.send_response(status)
            self.send_header("content-type", media)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", status, media
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize("named", ["auto", "elasticsearch", "opensearch"])
def test_a_server_that_is_no_search_engine_is_named_as_such_in_one_line(
    not_an_engine, named, model, cli, tmp_path
):
    from es_scm.elastic import SCMIndex, client_from_env
    from es_scm.elastic.aio import AsyncSearcher, async_client_from_env

    url, status, media = not_an_engine
    said = re.escape(
        f"the server at {url} is not Elasticsearch or OpenSearch: it answered GET /news with "
        f"HTTP {status} ({media})"
    )
    client = client_from_env(url, engine=named, max_retries=0)
    for work in (
        lambda: SCMIndex(client, "news", model).index_documents([{"id": "1", "text": "flow"}]),
        lambda: SCMIndex(client, "news", model).searcher.search("boundary layer"),
    ):
        with pytest.raises(NotASearchEngineError, match=said):
            work()
    client.close()

    async def search() -> None:
        client = async_client_from_env(url, engine=named, max_retries=0)
        try:
            with pytest.raises(NotASearchEngineError, match=said):
                await AsyncSearcher(client, "news", model).hybrid("boundary layer")
        finally:
            await client.close()

    asyncio.run(search())
    model_dir = model.save(tmp_path / "model")
    code, out, err = cli(
        "search", "--model", model_dir, "--index", "news", "--es-url", url,
        "--engine", named, "boundary layer",
    )  # fmt: skip
    assert code == 1
    assert out == ""
    assert re.search(said, one_error_line(err)), err
