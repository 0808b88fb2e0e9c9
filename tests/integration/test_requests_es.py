"""Requests only where needed: how many Elasticsearch requests an operation makes.

The requests are counted at the client's transport, on a real node: every request any
``client.options(...)`` copy sends goes through it.
"""

from __future__ import annotations

import asyncio

from es_scm.elastic import SCMIndex
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env

TEXTS = [
    "supersonic flow over a swept wing",
    "boundary layer transition on a flat plate",
    "heat transfer in a hypersonic boundary layer",
    "lift and drag of a delta wing at high angle of attack",
]


def documents(start: int = 0) -> list[dict]:
    return [{"id": f"doc-{start + n}", "text": text} for n, text in enumerate(TEXTS)]


class Requests:
    """The requests a client's transport sends, as (method, path)."""

    def __init__(self, client) -> None:
        self.sent: list[tuple[str, str]] = []
        transport = client.transport
        original = transport.perform_request

        def perform_request(method, target, *args, **kwargs):
            self.sent.append((method, target.split("?")[0]))
            return original(method, target, *args, **kwargs)

        transport.perform_request = perform_request

    def during(self, action) -> list[tuple[str, str]]:
        start = len(self.sent)
        result = action()
        self.result = result
        return self.sent[start:]


def test_indexing_four_documents_into_an_existing_index_takes_four_requests(
    es_client, index_name, model
):
    SCMIndex(es_client, index_name, model).index_documents(documents())
    requests = Requests(es_client)
    index = SCMIndex(es_client, index_name, model)  # a new object: nothing known yet
    sent = requests.during(lambda: index.index_documents(documents(2)))
    assert len(sent) <= 4, sent
    report = requests.result
    assert (report.created, report.updated, report.index_count) == (2, 2, 6)
    assert es_client.count(index=index_name)["count"] == 6  # searchable: the index refreshed


def test_indexing_into_a_new_index_looks_nothing_up(es_client, index_name, model):
    requests = Requests(es_client)
    index = SCMIndex(es_client, index_name, model)
    sent = requests.during(lambda: index.index_documents(documents()))
    assert len(sent) <= 5, sent  # find it absent, the version, create, bulk (refreshing), count
    assert not [path for _, path in sent if path.endswith("/_mget")]
    assert requests.result.created == len(TEXTS)


def test_a_warm_search_is_one_request(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.index_documents(documents())
    index.searcher.search("supersonic wing")  # warms up: the model check, the clause limit
    requests = Requests(es_client)
    for method in ("search", "native", "bm25"):
        search = getattr(index.searcher, method)
        sent = requests.during(lambda search=search: search("boundary layer"))
        assert len(sent) == 1, (method, sent)
        assert requests.result.hits


def test_a_warm_async_search_is_one_request(es_url, es_client, index_name, model):
    SCMIndex(es_client, index_name, model).index_documents(documents())

    async def search() -> list[tuple[str, str]]:
        client = async_client_from_env(es_url)
        try:
            index = AsyncSCMIndex(client, index_name, model)
            await index.searcher.search("supersonic wing")
            requests = Requests(client)
            start = len(requests.sent)
            result = await index.searcher.search("boundary layer")
            assert result.hits
            return requests.sent[start:]
        finally:
            await client.close()

    assert len(asyncio.run(search())) == 1
