"""The asyncio API against a real Elasticsearch: the same results as the sync API, exactly.

Each test runs its coroutines with ``asyncio.run`` on an ``AsyncElasticsearch`` of its own. The
references are the sync API on an index built by the sync ingester, and brute-force exact SCM.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import (
    IndexNotFoundError,
    ModelMismatchError,
    NotProvenError,
    SCMIndex,
)
from es_scm.elastic.aio import AsyncSCMIndex, AsyncSearcher, async_client_from_env
from es_scm.fusion import LinearFusion
from es_scm.model import BruteForceSearch
from es_scm.search.results import SearchResult
from tests.support import with_async_client

DOCUMENTS = 400  # conftest.py's cranfield_sample
QUERIES = ("1", "2", "7", "50", "100", "225")
SEARCHES: list[dict[str, Any]] = [  # a method and its options
    {"method": "search"},
    {"method": "native"},
    {"method": "search", "from_": 5},
    {"method": "search", "filter": {"term": {"metadata.group": "g1"}}},
    {"method": "native", "filter": [{"terms": {"metadata.group": ["g0", "g2"]}}]},
    {"method": "hybrid"},
    {"method": "hybrid", "fusion": LinearFusion(0.3)},
    {"method": "bm25", "filter": {"term": {"metadata.group": "g1"}}},
    {"method": "search", "explain": True},
]


def comparable(result: SearchResult) -> dict[str, Any]:
    """Everything a result says but its timing."""
    return {
        "hits": [hit.to_dict() for hit in result.hits],
        **{key: value for key, value in vars(result).items() if key not in ("hits", "took_ms")},
    }


async def trickle(documents: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """The documents as an async stream that yields to the event loop between them."""
    for document in documents:
        await asyncio.sleep(0)
        yield document


@pytest.fixture(scope="module")
def both(es_client, es_url, cranfield_sample, cranfield_sample_model):
    """The same documents indexed by the sync API and by the asyncio API (an async stream)."""
    sync_index = SCMIndex(es_client, "es-scm-test-aio-sync", cranfield_sample_model)
    sync_index.delete()
    sync_report = sync_index.index_documents(cranfield_sample, batch_size=64)

    async def ingest(client):
        index = AsyncSCMIndex(client, "es-scm-test-aio-async", cranfield_sample_model)
        await index.delete()
        return await index.index_documents(trickle(cranfield_sample), batch_size=64)

    async_report = with_async_client(es_url, ingest)
    yield sync_index, sync_report, async_report
    sync_index.delete()
    es_client.options(ignore_status=404).indices.delete(index="es-scm-test-aio-async")


def test_async_ingestion_reports_and_stores_what_the_sync_one_does(
    es_client, both, cranfield_sample
):
    _, sync_report, async_report = both
    assert async_report.created == sync_report.created == DOCUMENTS
    assert async_report.index_count == DOCUMENTS
    assert (async_report.failed, async_report.empty) == (sync_report.failed, sync_report.empty)
    assert (async_report.tokens, async_report.unknown_tokens) == (
        sync_report.tokens,
        sync_report.unknown_tokens,
    )
    ids = [d["id"] for d in cranfield_sample]
    stored = {}
    for name in ("es-scm-test-aio-sync", "es-scm-test-aio-async"):
        docs = es_client.mget(index=name, ids=ids)["docs"]
        stored[name] = {d["_id"]: d["_source"] for d in docs}
    assert stored["es-scm-test-aio-async"] == stored["es-scm-test-aio-sync"]
    assert stored["es-scm-test-aio-async"]["7"]["metadata"] == {"group": "g1"}


def call(searcher, query: str, options: dict[str, Any]):
    """``searcher.<method>(query, 10, **options)`` of a SEARCHES entry."""
    return getattr(searcher, options["method"])(
        query, 10, **{k: v for k, v in options.items() if k != "method"}
    )


def test_async_search_equals_sync_search_in_every_mode(
    es_url, both, cranfield, cranfield_sample_model, cranfield_sample
):
    sync_index = both[0]
    reference = BruteForceSearch(
        cranfield_sample_model,
        [d["id"] for d in cranfield_sample],
        [d["text"] for d in cranfield_sample],
    )

    async def searches(client):
        index = AsyncSCMIndex(client, "es-scm-test-aio-async", cranfield_sample_model)
        return [
            [await call(index.searcher, cranfield.queries[q], options) for q in QUERIES]
            for options in SEARCHES
        ]

    got = with_async_client(es_url, searches)
    for options, results in zip(SEARCHES, got, strict=True):
        for query_id, result in zip(QUERIES, results, strict=True):
            expected = call(sync_index.searcher, cranfield.queries[query_id], options)
            assert comparable(result) == comparable(expected), (options, query_id)
    for query_id, result in zip(QUERIES, got[0], strict=True):
        brute = reference.search(cranfield.queries[query_id], 10)
        assert result.exact_guarantee
        assert result.ids() == [doc_id for doc_id, _ in brute]
    assert all(hit.explanation is not None for hit in got[-1][0])


def test_async_rescore_equals_sync_rescore(es_url, both, cranfield, cranfield_sample_model):
    sync_index = both[0]
    query = cranfield.queries["3"]
    ids = ["12", "7", "300", "1", "no-such-document"]
    es_query = {"match": {"text": query}}

    async def rescores(client):
        searcher = AsyncSearcher(client, "es-scm-test-aio-async", cranfield_sample_model)
        return (
            await searcher.rescore(query, ids=ids),
            await searcher.rescore(query, es_query=es_query, size=30, k=10),
        )

    by_ids, by_query = with_async_client(es_url, rescores)
    assert comparable(by_ids) == comparable(sync_index.searcher.rescore(query, ids=ids))
    expected = sync_index.searcher.rescore(query, es_query=es_query, size=30, k=10)
    assert comparable(by_query) == comparable(expected)
    assert sorted(by_ids.ids()) == ["1", "12", "300", "7"]
    assert any("not found" in note for note in by_ids.notes)


def test_an_async_searcher_on_the_sync_index_equals_the_sync_searcher(
    es_url, engine, both, cranfield, cranfield_sample_model
):
    sync_index = both[0]
    query = cranfield.queries["50"]
    form = engine.query_types[-1]  # Elasticsearch: the other form, "bool"; OpenSearch: its one

    async def search(client):
        searcher = AsyncSearcher(client, sync_index.name, cranfield_sample_model, query_type=form)
        expanded = await searcher.expand(query)
        return expanded, await searcher.search(query, 15)

    expanded, result = with_async_client(es_url, search)
    assert expanded.weights.nnz == sync_index.searcher.expand(query).weights.nnz
    assert comparable(result) == comparable(sync_index.searcher.search(query, 15))


def test_async_errors_are_the_sync_ones(
    es_url, both, cranfield, cranfield_sample_model, glove, index_name
):
    other = SoftCosineModel.build(["a different corpus about cats", "and dogs"], glove)

    async def mismatched(client):
        await AsyncSearcher(client, "es-scm-test-aio-async", other).search("cats")

    with pytest.raises(ModelMismatchError, match="built with model"):
        with_async_client(es_url, mismatched)

    async def missing(client):
        await AsyncSearcher(client, index_name, cranfield_sample_model).search("cats")

    with pytest.raises(IndexNotFoundError):
        with_async_client(es_url, missing)

    async def deep(client):
        searcher = AsyncSearcher(
            client, "es-scm-test-aio-async", cranfield_sample_model, max_window=20
        )
        await searcher.search(cranfield.queries["1"], 10, from_=30)

    with pytest.raises(NotProvenError) as unproven:
        with_async_client(es_url, deep)
    assert len(unproven.value.result.hits) == 0

    with pytest.raises(ValueError, match="invalid index name"):
        AsyncSCMIndex(None, "Upper Case", cranfield_sample_model)


def test_bad_documents_fail_alone_in_the_async_ingester(es_url, cranfield_sample_model, index_name):
    bad = [
        {"text": "no id"},
        {"id": "L" * 600, "text": "an id over 512 bytes"},
        {"id": "set", "text": "metadata that is not JSON", "tags": {"a", "b"}},
        {"id": "ok", "text": "boundary layer"},
        {"id": "ok", "text": "boundary layer again"},
    ]

    async def ingest(client):
        index = AsyncSCMIndex(client, index_name, cranfield_sample_model)
        report = await index.index_documents(bad, batch_size=10)
        return report, await index.count(), await index.create(exist_ok=True)

    report, count, created = with_async_client(es_url, ingest)
    reasons = dict(report.failures)
    # the second "ok" replaces the first: one created, one updated, one duplicate
    assert (report.created, report.updated, report.failed, report.duplicates) == (1, 1, 3, 1)
    assert "needs an 'id'" in reasons["#0"]
    assert "512" in reasons["L" * 600]
    assert "set" in reasons
    assert count == 1
    assert created is False


def test_async_optimize_merges_to_one_segment_and_keeps_the_results(
    es_url, es_client, cranfield_sample_model, cranfield_sample, index_name
):
    async def work(client):
        index = AsyncSCMIndex(client, index_name, cranfield_sample_model)
        for start in range(0, 120, 40):  # three refreshed bulks: several segments
            await index.index_documents(cranfield_sample[start : start + 40])
        segments = len(await client.cat.segments(index=index_name, format="json"))
        before = await index.searcher.search("boundary layer flow", 10)
        await index.optimize()
        return segments, before, await index.searcher.search("boundary layer flow", 10)

    segments_before, before, after = with_async_client(es_url, work)
    assert segments_before > 1
    assert len(es_client.cat.segments(index=index_name, format="json")) == 1
    assert comparable(after) == comparable(before)


def test_async_delete_documents_reports_what_the_sync_one_does(
    es_url, es_client, cranfield_sample_model, cranfield_sample, index_name
):
    ids = [
        cranfield_sample[0]["id"],
        cranfield_sample[1]["id"],
        "not-there",
        cranfield_sample[0]["id"],
        "",
    ]

    async def work(client):
        index = AsyncSCMIndex(client, index_name, cranfield_sample_model)
        await index.index_documents(cranfield_sample[:10])
        report = await index.delete_documents(ids)
        return report, await index.count()

    report, count = with_async_client(es_url, work)
    # two deleted, one missing, one repeated, one invalid; what is left is searchable at once
    assert (report.deleted, report.not_found, report.duplicates, report.failed) == (2, 1, 1, 1)
    assert report.not_found_ids == ["not-there"]
    assert count == 8
    sync = SCMIndex(es_client, index_name, cranfield_sample_model).delete_documents(ids)
    assert (sync.deleted, sync.not_found, sync.duplicates, sync.failed) == (0, 3, 1, 1)

    async def missing(client):
        await AsyncSCMIndex(
            client, index_name + "-missing", cranfield_sample_model
        ).delete_documents(["a"])

    with pytest.raises(IndexNotFoundError):
        with_async_client(es_url, missing)


def load_example(name: str) -> Any:
    """A module of ``examples/`` by file name."""
    path = Path(__file__).resolve().parents[2] / "examples" / name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_async_web_handler_example_serves_the_sync_results(
    es_url, both, cranfield, cranfield_sample_model
):
    from aiohttp.test_utils import TestClient, TestServer

    example = load_example("async_web_handler.py")
    query = cranfield.queries["100"]

    async def serve(client):
        app = example.make_app(
            AsyncSCMIndex(client, "es-scm-test-aio-async", cranfield_sample_model)
        )
        async with TestClient(TestServer(app)) as http:
            found = await http.get("/search", params={"q": query, "k": "5"})
            bad = await http.get("/search", params={"q": query, "mode": "nope"})
            return found.status, await found.json(), bad.status

    status, body, bad_status = asyncio.run(serve(async_client_from_env(es_url)))
    expected = both[0].searcher.search(query, 5)
    assert status == 200
    assert [hit["id"] for hit in body["hits"]] == expected.ids()
    assert [hit["score"] for hit in body["hits"]] == [hit.score for hit in expected]
    assert body["exact_guarantee"] is True
    assert bad_status == 400


def test_a_cancelled_async_ingestion_propagates_and_logs_its_counts(
    es_url, cranfield_sample, cranfield_sample_model, index_name, caplog
):
    halfway = asyncio.Event()

    async def stream():
        for position, document in enumerate(cranfield_sample):
            if position == len(cranfield_sample) // 2:
                halfway.set()
            await asyncio.sleep(0)
            yield document

    async def cancel(client):
        index = AsyncSCMIndex(client, index_name, cranfield_sample_model)
        task = asyncio.create_task(index.index_documents(stream(), batch_size=16))
        await halfway.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.indices.refresh(index=index_name)
        return await index.count()

    with caplog.at_level(logging.WARNING, logger="es_scm.elastic._async.ingest"):
        count = with_async_client(es_url, cancel)
    assert count < len(cranfield_sample)
    logged = [r.getMessage() for r in caplog.records if "ingestion cancelled" in r.getMessage()]
    assert len(logged) == 1
    # what the requests it waited for wrote is counted as indexed, and nothing came after
    indexed = re.search(r"indexed (\d+) \(created (\d+), updated 0\)", logged[0])
    assert indexed is not None, logged
    assert int(indexed.group(1)) == int(indexed.group(2)) == count
