"""OpenSearch nodes started through the local runner (``--engine opensearch``), and what es-scm
will ask of them, asserted against the real server.

One node per release, started fresh by the runner and stopped after its tests: 2.19.6 (its zip
holds only transport-netty4; the runner assembles mapper-extras, analysis-common and
lang-painless from their Maven jars; Java 11–21) on ``$ES_SCM_OPENSEARCH_TEST_PORT`` (default
``$ES_SCM_PORT`` + 70), and 3.6.0 (a zip with every module; Java 21+) on the next port. The
requests are plain HTTP with the standard library: es-scm's own client code does not speak to
OpenSearch yet (docs/OPENSEARCH-NOTES.md).
"""

from __future__ import annotations

import json
import struct
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from es_scm.tools.es_local import LocalCluster, LocalElasticsearch
from es_scm.tools.node import port_from_env
from es_scm.tools.system import port_open

VERSIONS = ("2.19.6", "3.6.0")
PORT = port_from_env("ES_SCM_OPENSEARCH_TEST_PORT", offset=70)
INDEX = "es-scm-test-opensearch"
VECTOR = "scm.vector"  # es-scm's sparse field: an object path with a dot


@pytest.fixture(scope="module", params=VERSIONS)
def node(request) -> Iterator[LocalElasticsearch]:
    """A fresh single node of the release, started by the runner; stopped (and checked gone)
    after the module's tests of that release."""
    version = request.param
    port = PORT + VERSIONS.index(version)
    # OpenSearch's own clause limit (the runner raises it for es-scm: Engine.node_settings)
    settings = {"indices.query.bool.max_clause_count": "1024"}
    cluster = LocalCluster(
        1, port, version=version, heap="512m", engine="opensearch", settings=settings
    )
    cluster.stop()
    cluster.delete_data()
    cluster.start(timeout=300)
    yield cluster.nodes[0]
    assert cluster.stop()
    assert not port_open(port)
    assert cluster.status()["running"] is False


def call(node: LocalElasticsearch, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """``method url/path`` with a JSON body (a list: NDJSON lines); the status and the JSON."""
    data, headers = None, {}
    if isinstance(body, list):
        data = "".join(json.dumps(line) + "\n" for line in body).encode()
        headers["content-type"] = "application/x-ndjson"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["content-type"] = "application/json"
    request = urllib.request.Request(node.url + path, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def ok(node: LocalElasticsearch, method: str, path: str, body: Any = None) -> Any:
    status, answer = call(node, method, path, body)
    assert 200 <= status < 300, answer
    return answer


def root_cause(answer: dict) -> str:
    cause = answer["error"]["root_cause"][0]
    return f"{cause['type']}: {cause['reason']}"


def stored(value: float) -> np.float32:
    """Lucene's FeatureField value: float32(v) with its 15 lowest bits cut (9 significant bits)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return np.float32(struct.unpack("<f", struct.pack("<I", bits >> 15 << 15))[0])


def feature(term: int, weight: float, name: str | None = None) -> dict:
    """The clause that adds weight · q(y_term): a linear rank_feature on the feature's path."""
    clause: dict[str, Any] = {"field": f"{VECTOR}.{term}", "linear": {}, "boost": weight}
    if name:
        clause["_name"] = name
    return {"rank_feature": clause}


DOCUMENTS = {
    "1": {"text": "The runners were running quickly", "v": {"12": 0.8, "13": 0.5}, "author": "ann"},
    "2": {"text": "a run in the park", "v": {"12": 0.3, "7": 1.5}, "author": "bob"},
    "3": {
        "text": "parks and runs and running",
        "v": {"7": 0.123456789, "9": 1000.777},
        "author": "cy",
    },
}
# `match` "running parks" on these three texts (english analyzer, one shard), as Elasticsearch
# 9.5.4 and 8.19.9 of the local runner score it.
ELASTICSEARCH_BM25 = {"2": 0.69883, "3": 0.6536093, "1": 0.11750764}


@pytest.fixture(scope="module")
def index(node) -> str:
    """es-scm's shape of index: ``_meta``, ``rank_features`` under ``scm.vector``, ``english``
    text, ``flat_object`` metadata; the three documents above."""
    mappings = {
        "_meta": {"es_scm": {"model_id": "m1"}},
        "properties": {
            "text": {"type": "text", "analyzer": "english"},
            "scm": {"properties": {"vector": {"type": "rank_features"}}},
            "metadata": {"type": "flat_object"},
        },
    }
    settings = {"number_of_shards": 1, "number_of_replicas": 0}
    ok(node, "PUT", f"/{INDEX}", {"settings": settings, "mappings": mappings})
    lines: list[dict] = []
    for doc_id, doc in DOCUMENTS.items():
        source = {"text": doc["text"], "scm": {"vector": doc["v"]}}
        lines += [{"index": {"_index": INDEX, "_id": doc_id}}, source | {"metadata": doc}]
    assert ok(node, "POST", "/_bulk?refresh=true", lines)["errors"] is False
    return INDEX


def test_the_runner_starts_the_release_on_a_java_it_supports(node):
    version = ok(node, "GET", "/")["version"]
    assert version["distribution"] == "opensearch"
    assert version["number"] == node.version
    assert node.status()["engine"] == "opensearch"
    info = ok(
        node,
        "GET",
        "/_nodes/_local/jvm,plugins?filter_path=nodes.*.jvm.version,nodes.*.modules.name",
    )
    (described,) = info["nodes"].values()
    java = int(described["jvm"]["version"].split(".")[0])
    assert java <= 21 if node.version.startswith("2.") else java >= 21
    modules = {module["name"] for module in described["modules"]}
    assert {"mapper-extras", "analysis-common", "lang-painless", "transport-netty4"} <= modules
    # its single node applies the disk watermarks, as Elasticsearch does
    settings = ok(node, "GET", "/_nodes/_local/settings?flat_settings=true")
    (node_settings,) = (n["settings"] for n in settings["nodes"].values())
    assert (
        node_settings["cluster.routing.allocation.disk.watermark.enable_for_single_data_node"]
        == "true"
    )
    assert not [key for key in node_settings if key.startswith("xpack.")]


def test_status_from_another_home_describes_the_engine_the_node_reports(node, tmp_path, capsys):
    """`es-scm es status --port P` from a home that did not start the node (no layout saved
    there, so it would start Elasticsearch) names the node's own engine and version, and what
    that home would start apart (issue 41: it said Elasticsearch beside OpenSearch's version)."""
    from es_scm.cli import main
    from es_scm.tools.defaults import DEFAULT_VERSION

    assert main(["es", "status", "--port", str(node.port), "--home", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    status = dict(line.strip().split(": ", 1) for line in lines)
    assert (status["running"], status["engine"]) == ("True", "opensearch")
    assert status["version"] == node.version
    assert status["configured"] == f"elasticsearch {DEFAULT_VERSION}"


def test_rank_feature_linear_clauses_sum_the_weighted_stored_values(node, index):
    weights = {12: 0.9, 7: 2.0}
    query = {"bool": {"should": [feature(t, w) for t, w in weights.items()]}}
    hits = ok(node, "POST", f"/{index}/_search", {"query": query})["hits"]["hits"]
    scores = {hit["_id"]: hit["_score"] for hit in hits}
    assert scores["1"] == 0.71894526  # 0.9 × q(0.8), q(0.8) = 0.798828125
    for doc_id, doc in DOCUMENTS.items():
        expected = sum(
            float(np.float32(w) * stored(doc["v"][str(t)]))
            for t, w in weights.items()
            if str(t) in doc["v"]
        )
        assert scores[doc_id] == pytest.approx(expected, rel=1e-7)
    # a single clause of weight 1 reads the stored 9-bit value back
    one = {"query": feature(9, 1.0)}
    (hit,) = ok(node, "POST", f"/{index}/_search", one)["hits"]["hits"]
    assert hit["_score"] == float(stored(1000.777)) == 1000.0


def test_what_rank_features_refuse(node, index):
    for value in (-1.0, 0.0):
        status, answer = call(node, "PUT", f"/{index}/_doc/bad", {"scm": {"vector": {"1": value}}})
        assert status == 400
        assert "featureValue must be a positive normal float" in json.dumps(answer)
    status, answer = call(node, "POST", f"/{index}/_search", {"query": {"term": {VECTOR: "12"}}})
    assert status == 400
    assert "Queries on [rank_features] fields are not supported" in root_cause(answer)
    status, answer = call(node, "POST", f"/{index}/_search", {"query": feature(12, -1.0)})
    assert status == 400
    assert "negative [boost] are not allowed" in json.dumps(answer)
    status, answer = call(node, "POST", f"/{index}/_search", {"query": {"sparse_vector": {}}})
    assert status == 400
    assert "unknown query [sparse_vector]" in root_cause(answer)


def test_the_clause_limit_is_1024_and_a_dynamic_setting(node, index):
    def clauses(n: int) -> dict:
        return {"query": {"bool": {"should": [feature(t, 1.0) for t in range(n)]}}, "size": 0}

    assert call(node, "POST", f"/{index}/_search", clauses(1024))[0] == 200
    status, answer = call(node, "POST", f"/{index}/_search", clauses(1025))
    assert status == 400
    assert "maxClauseCount is set to 1024" in json.dumps(answer)
    defaults = ok(node, "GET", "/_cluster/settings?include_defaults=true&flat_settings=true")
    assert defaults["defaults"]["indices.query.bool.max_clause_count"] == "1024"
    raised = {"transient": {"indices.query.bool.max_clause_count": 2048}}
    try:
        ok(node, "PUT", "/_cluster/settings", raised)
        assert call(node, "POST", f"/{index}/_search", clauses(1025))[0] == 200
    finally:
        ok(
            node,
            "PUT",
            "/_cluster/settings",
            {"transient": {"indices.query.bool.max_clause_count": None}},
        )


def test_named_queries_give_their_scores_on_search_but_not_msearch(node, index):
    body = {"query": {"bool": {"should": [feature(12, 0.9, "t12"), feature(7, 2.0, "t7")]}}}
    hits = ok(node, "POST", f"/{index}/_search", body)["hits"]["hits"]
    assert {hit["_id"]: sorted(hit["matched_queries"]) for hit in hits}["2"] == ["t12", "t7"]
    scored = ok(node, "POST", f"/{index}/_search?include_named_queries_score=true", body)
    by_id = {hit["_id"]: hit["matched_queries"] for hit in scored["hits"]["hits"]}
    assert by_id["1"] == {"t12": 0.71894526}
    assert set(by_id["2"]) == {"t12", "t7"}
    assert by_id["2"]["t7"] == 3.0  # 2 × q(1.5), and 1.5 is stored exactly
    status, answer = call(
        node, "POST", "/_msearch?include_named_queries_score=true", [{"index": index}, body]
    )
    assert status == 400
    assert "unrecognized parameter: [include_named_queries_score]" in root_cause(answer)


def test_point_in_time_open_search_close(node, index):
    opened = ok(node, "POST", f"/{index}/_search/point_in_time?keep_alive=1m")
    pit = opened["pit_id"]
    assert opened["_shards"]["failed"] == 0
    body = {"pit": {"id": pit, "keep_alive": "1m"}, "query": feature(12, 1.0), "size": 1}
    first = ok(node, "POST", "/_search?allow_partial_search_results=false", body)
    assert first["pit_id"] == pit
    assert [hit["_id"] for hit in first["hits"]["hits"]] == ["1"]
    status, answer = call(node, "POST", f"/{index}/_search", body)  # a PIT names its indices
    assert status == 400
    assert "[indices] cannot be used with point in time" in json.dumps(answer)
    closed = ok(node, "DELETE", "/_search/point_in_time", {"pit_id": [pit]})
    assert closed["pits"] == [{"successful": True, "pit_id": pit}]
    status, _ = call(node, "POST", "/_search", body)
    assert status == 404


def test_msearch_and_mget_with_es_scms_options(node, index):
    lines = [
        {"index": index, "allow_partial_search_results": False},
        {
            "query": feature(12, 1.0),
            "from": 1,
            "size": 1,
            "_source": False,
            "track_total_hits": False,
        },
        {"index": index},
        {"query": {"ids": {"values": ["1", "3"]}}, "_source": {"includes": ["metadata.author"]}},
    ]
    first, second = ok(node, "POST", "/_msearch", lines)["responses"]
    assert [hit["_id"] for hit in first["hits"]["hits"]] == ["2"]
    assert "_source" not in first["hits"]["hits"][0]
    assert "total" not in first["hits"]
    assert {hit["_id"]: hit["_source"] for hit in second["hits"]["hits"]} == {
        "1": {"metadata": {"author": "ann"}},
        "3": {"metadata": {"author": "cy"}},
    }
    docs = ok(node, "POST", f"/{index}/_mget", {"ids": ["2", "nope"]})["docs"]
    assert [(doc["_id"], doc["found"]) for doc in docs] == [("2", True), ("nope", False)]
    status, answer = call(node, "POST", f"/{index}/_search", {"from": 9999, "size": 2})
    assert status == 400
    assert "index.max_result_window" in json.dumps(answer)


def test_flat_object_metadata_filters_and_the_meta_mapping(node, index):
    def ids(query: dict) -> list[str]:
        hits = ok(node, "POST", f"/{index}/_search", {"query": {"bool": {"filter": [query]}}})
        return sorted(hit["_id"] for hit in hits["hits"]["hits"])

    assert ids({"term": {"metadata.author": "bob"}}) == ["2"]
    assert ids({"terms": {"metadata.author": ["ann", "cy"]}}) == ["1", "3"]
    assert ids({"prefix": {"metadata.author": "a"}}) == ["1"]
    mapping = ok(node, "GET", f"/{index}/_mapping")[index]["mappings"]
    assert mapping["_meta"] == {"es_scm": {"model_id": "m1"}}
    assert mapping["properties"]["metadata"]["type"] == "flat_object"
    for field in ({"type": "flattened"}, {"type": "flat_object", "ignore_above": 4096}):
        status, _ = call(
            node, "PUT", f"/{index}-refused", {"mappings": {"properties": {"m": field}}}
        )
        assert status == 400


def test_aliases_with_a_write_index_and_a_hidden_alias(node, index):
    actions = [
        {"add": {"index": index, "alias": f"{index}-alias", "is_write_index": True}},
        {
            "add": {
                "index": index,
                "alias": f"{index}.writer",
                "is_hidden": True,
                "is_write_index": True,
            }
        },
    ]
    ok(node, "POST", "/_aliases", {"actions": actions})
    aliases = ok(node, "GET", f"/{index}/_alias")[index]["aliases"]
    assert aliases == {
        f"{index}-alias": {"is_write_index": True},
        f"{index}.writer": {"is_write_index": True, "is_hidden": True},
    }
    written = ok(node, "PUT", f"/{index}-alias/_doc/4?refresh=true", {"text": "through the alias"})
    assert written["_index"] == index
    ok(node, "DELETE", f"/{index}/_doc/4?refresh=true")


def test_the_english_analyzer_and_bm25(node, index):
    analyzed = ok(
        node,
        "POST",
        f"/{index}/_analyze",
        {"analyzer": "english", "text": "The Running flows of studies"},
    )
    assert [token["token"] for token in analyzed["tokens"]] == ["run", "flow", "studi"]
    # Elasticsearch's BM25 (Lucene's LegacyBM25Similarity: the k1 + 1 factor kept) is 2.x's
    # default; 3.x's default is Lucene's BM25Similarity, without it (scores 1 / 2.2 as large),
    # and its LegacyBM25 similarity gives Elasticsearch's. Fresh indices of the three texts.
    expected = {"default": ELASTICSEARCH_BM25}
    if not node.version.startswith("2."):
        expected["default"] = {i: score / 2.2 for i, score in ELASTICSEARCH_BM25.items()}
        expected["LegacyBM25"] = ELASTICSEARCH_BM25
    query = {"query": {"match": {"text": "running parks"}}}
    for similarity, wanted in expected.items():
        name = f"{index}-{similarity.lower()}"
        settings: dict[str, Any] = {"number_of_shards": 1, "number_of_replicas": 0}
        if similarity != "default":
            settings["index.similarity.default.type"] = similarity
        mappings = {"properties": {"text": {"type": "text", "analyzer": "english"}}}
        ok(node, "PUT", f"/{name}", {"settings": settings, "mappings": mappings})
        try:
            lines: list[dict] = []
            for doc_id, doc in DOCUMENTS.items():
                lines += [{"index": {"_index": name, "_id": doc_id}}, {"text": doc["text"]}]
            ok(node, "POST", "/_bulk?refresh=true", lines)
            hits = ok(node, "POST", f"/{name}/_search", query)["hits"]["hits"]
        finally:
            ok(node, "DELETE", f"/{name}")
        scores = {hit["_id"]: hit["_score"] for hit in hits}
        assert scores == pytest.approx(wanted, rel=1e-6), similarity
