"""The asyncio API: the same operations as the sync API, awaited on ``AsyncElasticsearch``.

:class:`AsyncSearcher` is the code that the sync :class:`~es_scm.elastic.Searcher` is
generated from (``scripts/generate_sync.py``); :class:`AsyncSCMIndex`, :class:`AsyncAliasSearcher`
and :func:`async_reindex_into_alias` share their plans with the sync classes: the query building,
the exactness proof, the rescoring, the fusion, ingestion and the alias swap are one code, so an
async call returns exactly what the sync one does. CPU work (vectorizing documents) runs in a
worker thread; expanding a query takes about a millisecond and runs on the event loop.

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

from es_scm.elastic._async.searcher import AsyncSearcher
from es_scm.elastic.aliases import AsyncAliasSearcher, async_reindex_into_alias
from es_scm.elastic.connection import client_options
from es_scm.elastic.index import AsyncSCMIndex
from es_scm.extras import require

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import AsyncElasticsearch

__all__ = [
    "AsyncAliasSearcher",
    "AsyncSCMIndex",
    "AsyncSearcher",
    "async_client_from_env",
    "async_reindex_into_alias",
]


def async_client_from_env(url: str | None = None, **kwargs: Any) -> AsyncElasticsearch:
    """An ``AsyncElasticsearch`` configured like :func:`~es_scm.elastic.client_from_env`.

    Same arguments and environment variables (``ES_URL``, ``ES_API_KEY``, ...). Close it with
    ``await client.close()``.
    """
    require("aiohttp", "the asyncio API")
    from elasticsearch import AsyncElasticsearch

    return AsyncElasticsearch(**client_options(url, **kwargs))
