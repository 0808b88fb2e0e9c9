"""The asyncio API: the same operations as the sync API, awaited on ``AsyncElasticsearch``.

:class:`AsyncSCMIndex`, :class:`AsyncSearcher`, :class:`AsyncAliasSearcher` and
:func:`async_reindex_into_alias` are the one implementation of every operation
(``es_scm/elastic/_async/``); the sync classes and function are generated from them
(``scripts/generate_sync.py``), so an async call returns exactly what the sync one does. CPU work
(vectorizing documents) runs in a worker thread; expanding a query takes about a millisecond and
runs on the event loop. :class:`AsyncStop` stops an ingestion (as Ctrl-C does the sync one).

Needs the ``async`` extra (``pip install 'es-scm[async]'``: aiohttp, the client's asyncio HTTP
library).

Examples
--------
>>> client = async_client_from_env()                  # doctest: +SKIP
>>> index = AsyncSCMIndex(client, "news", model)      # doctest: +SKIP
>>> await index.index_documents(documents)            # doctest: +SKIP
>>> result = await index.searcher.search("president greets the press", k=10)  # doctest: +SKIP
>>> await client.close()                              # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from es_scm.elastic._async.aliases import (
    AsyncAliasSearcher,
    async_reindex_into_alias,
    async_remove_swap_leftovers,
)
from es_scm.elastic._async.index import AsyncSCMIndex
from es_scm.elastic._async.searcher import AsyncSearcher
from es_scm.elastic.concurrency import AsyncStop
from es_scm.elastic.connection import client_options, detect_engine
from es_scm.engines import OPENSEARCH, Engine, engine_named
from es_scm.extras import require

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import AsyncElasticsearch

__all__ = [
    "AsyncAliasSearcher",
    "AsyncSCMIndex",
    "AsyncSearcher",
    "AsyncStop",
    "async_client_from_env",
    "async_reindex_into_alias",
    "async_remove_swap_leftovers",
]


def async_client_from_env(
    url: str | None = None, *, engine: str | Engine | None = None, **kwargs: Any
) -> AsyncElasticsearch:
    """An ``AsyncElasticsearch`` configured like :func:`~es_scm.elastic.client_from_env`.

    Same arguments and environment variables (``ES_URL``, ``ES_API_KEY``, ``ES_SCM_ENGINE``,
    ...). For OpenSearch it is es-scm's
    :class:`~es_scm.elastic._async.opensearch.AsyncOpenSearchClient` over opensearch-py's
    ``AsyncOpenSearch``. Unless ``engine`` (or ``$ES_SCM_ENGINE``) names it, the engine is asked
    of the cluster here, once, by a sync request (up to 10 s). Close it with
    ``await client.close()``.
    """
    require("aiohttp", "the asyncio API")
    from elasticsearch import AsyncElasticsearch

    options = client_options(url, **kwargs)
    chosen = engine_named(engine) or detect_engine(options)
    if chosen.python_client == OPENSEARCH.python_client:
        require("opensearchpy", "OpenSearch")
        from es_scm.elastic._async.opensearch import AsyncOpenSearchClient

        return AsyncOpenSearchClient.from_options(options)
    from es_scm.elastic._async.transport import AsyncElasticsearchTransport

    return AsyncElasticsearch(**{"transport_class": AsyncElasticsearchTransport, **options})
