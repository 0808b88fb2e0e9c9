"""The asyncio API: :class:`AsyncSCMIndex` and :class:`AsyncSearcher` over ``AsyncElasticsearch``.

The same plans of Elasticsearch calls as the sync API (:mod:`es_scm.elastic.calls`) run here
with :func:`~es_scm.elastic.calls.run_async`: the query building, the exactness proof, the
rescoring, the fusion and the index creation are shared, so an async search returns exactly
what the sync one does. CPU work (vectorizing documents) runs in a worker thread
(:mod:`es_scm.elastic.aio_ingest`); expanding a query takes about a millisecond and runs on the
event loop.

Needs the ``async`` extra (``pip install 'es-scm[async]'``: aiohttp, the client's asyncio HTTP
library).

Examples
--------
>>> client = async_client_from_env()                  # doctest: +SKIP
>>> index = AsyncSCMIndex(client, "news", model)      # doctest: +SKIP
>>> await index.index_documents(documents)            # doctest: +SKIP
>>> result = await index.search("president greets the press", k=10)  # doctest: +SKIP
>>> await client.close()                              # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import helpers

from es_scm.defaults import MAX_QUERY_WORDS
from es_scm.elastic.aio_ingest import AsyncDocumentIngester, Documents
from es_scm.elastic.calls import Call, run_async, single
from es_scm.elastic.connection import client_options, max_clauses_plan
from es_scm.elastic.index import (
    check_one_name,
    check_target_name,
    counted,
    create_plan,
    delete_plan,
    finish_plan,
    optimize_plan,
    validate_index_name,
)
from es_scm.elastic.ingest import IngestError, IngestReport
from es_scm.elastic.lifecycle import DeleteReport, account_deletion, delete_bulk_arguments
from es_scm.elastic.query import ExpandedQuery, QueryType, expand_query
from es_scm.elastic.results import SearchResult
from es_scm.elastic.searcher import Filter, Mode, SearcherBase
from es_scm.extras import require
from es_scm.validation import Boolean, check

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import AsyncElasticsearch

    from es_scm.model import SoftCosineModel

__all__ = ["AsyncSCMIndex", "AsyncSearcher", "async_client_from_env"]


def async_client_from_env(url: str | None = None, **kwargs: Any) -> AsyncElasticsearch:
    """An ``AsyncElasticsearch`` configured like :func:`~es_scm.elastic.client_from_env`.

    Same arguments and environment variables (``ES_URL``, ``ES_API_KEY``, ...). Close it with
    ``await client.close()``.
    """
    require("aiohttp", "the asyncio API")
    from elasticsearch import AsyncElasticsearch

    return AsyncElasticsearch(**client_options(url, **kwargs))


class AsyncSearcher(SearcherBase):
    """:class:`~es_scm.elastic.searcher.Searcher` on an ``AsyncElasticsearch`` client.

    Same parameters; :meth:`search` and :meth:`rescore` are coroutines with the sync options.
    """

    async def max_clauses(self) -> int:
        """The most ``term`` clauses sent (the cluster's limit unless given), learned once."""
        if self._max_clauses is None:
            self._max_clauses = await run_async(max_clauses_plan(), self.client)
        return self._max_clauses

    async def check(self) -> None:
        """Refuse an index built with another model (once per searcher, and again when an
        answer shows that the alias moved)."""
        await run_async(self._ready_plan(), self.client)

    async def expansion(self) -> str:
        """Where the index applies S: ``"query"`` or ``"documents"`` (read once from its _meta)."""
        return (await run_async(self._ready_plan(), self.client))[1]

    async def expand(self, query: str) -> ExpandedQuery:
        """The query's vector, soft norm and expansion (see :mod:`es_scm.elastic.query`)."""
        expansion = await self.expansion()
        return expand_query(self.model, query, await self.max_clauses(), expansion)

    async def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: Mode = "exact",
        from_: int = 0,
        filter: Filter = None,
        fusion: str | None = None,
        alpha: float | None = None,
        rrf_k: int | None = None,
        depth: int | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """The top ``k`` documents for ``query``: :meth:`Searcher.search`, awaited.

        Raises
        ------
        NotProvenError
            As the sync search does.
        """
        options = {"mode": mode, "from_": from_, "filter": filter, "explain": explain}
        options.update(fusion=fusion, alpha=alpha, rrf_k=rrf_k, depth=depth)
        return await run_async(self._search_plan(query, k, options), self.client)

    async def rescore(
        self,
        query: str,
        *,
        ids: Sequence[str] | None = None,
        es_query: Mapping[str, Any] | None = None,
        size: int = 100,
        k: int | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """The exact SCM of given candidates: :meth:`Searcher.rescore`, awaited."""
        options = {"ids": ids, "es_query": es_query, "size": size, "k": k, "explain": explain}
        return await run_async(self._rescore_plan(query, options), self.client)


class AsyncSCMIndex:
    """:class:`~es_scm.elastic.SCMIndex` on an ``AsyncElasticsearch`` client.

    Same parameters (``client`` is an ``AsyncElasticsearch``); the methods that talk to
    Elasticsearch are coroutines with the sync options.
    """

    def __init__(
        self,
        client: AsyncElasticsearch,
        name: str,
        model: SoftCosineModel,
        *,
        max_clauses: int | None = None,
        query_type: QueryType = "sparse_vector",
        max_query_words: int = MAX_QUERY_WORDS,
    ) -> None:
        self.client = client
        self.name = check_target_name(name)
        self.model = model
        # the searcher checks the options (and the name's characters) now
        self.searcher = AsyncSearcher(
            client,
            name,
            model,
            max_clauses=max_clauses,
            query_type=query_type,
            max_query_words=max_query_words,
        )

    async def exists(self) -> bool:
        exists = single(Call("indices.exists", {"index": self.name}))
        return bool(await run_async(exists, self.client))

    async def create(
        self,
        *,
        shards: int = 1,
        replicas: int = 0,
        exist_ok: bool = False,
        text_analyzer: str | None = None,
        metadata_mapping: Mapping[str, Any] | None = None,
        expansion: str = "query",
    ) -> bool:
        """Create the index: :meth:`SCMIndex.create`, awaited (same options and errors)."""
        options = {"shards": shards, "replicas": replicas, "exist_ok": exist_ok}
        options.update(
            text_analyzer=text_analyzer, metadata_mapping=metadata_mapping, expansion=expansion
        )
        return await run_async(create_plan(self.name, self.model, options), self.client)

    async def delete(self) -> bool:
        """Delete the index: :meth:`SCMIndex.delete`, awaited (the same refusals)."""
        deleted = await run_async(delete_plan(self.name), self.client)
        self.searcher._forget_index()
        return deleted

    async def check(self) -> None:
        """Raise unless the index was built with this model."""
        await self.searcher.check()

    async def count(self) -> int:
        """The documents in the index: :meth:`SCMIndex.count`, awaited."""
        return counted(await self.client.count(index=self.name), self.name)

    async def delete_documents(
        self,
        ids: Iterable[str | int],
        *,
        batch_size: int = 1000,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        refresh: bool = True,
    ) -> DeleteReport:
        """Delete documents by id: :meth:`SCMIndex.delete_documents`, awaited (the client's
        ``async_streaming_bulk``, with the same retries and report)."""
        refresh = check(refresh, "refresh", Boolean())
        check_one_name(self.name, "delete documents from", "index or alias")
        await self.check()  # a missing index or another model's: an error, not "not found"
        report = DeleteReport()
        started = time.perf_counter()
        arguments = delete_bulk_arguments(
            self.client, self.name, ids, report, batch_size, max_retries
        )
        arguments["initial_backoff"] = initial_backoff
        async for ok, item in helpers.async_streaming_bulk(**arguments):
            account_deletion(report, ok, item)
        if refresh and report.deleted:
            await self.client.indices.refresh(index=self.name)
        report.seconds = time.perf_counter() - started
        return report

    async def optimize(self, max_num_segments: int = 1) -> None:
        """Force-merge the index: :meth:`SCMIndex.optimize`, awaited."""
        await run_async(optimize_plan(self.name, max_num_segments), self.client)

    async def index_documents(
        self,
        documents: Documents,
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        retry_budget: float = 60.0,
        create: bool = True,
        refresh: bool = True,
        progress: Any = None,
        concurrency: int = 2,
    ) -> IngestReport:
        """Vectorize and bulk-index documents: :meth:`SCMIndex.index_documents`, awaited.

        ``documents`` may also be an async iterable. Bulk requests go through
        ``helpers.async_streaming_bulk``; vectorizing runs in a worker thread.

        Raises
        ------
        IngestError
            When the run stops early (``error.report``: what was done, and the index count).

        A cancelled run cancels its requests in flight, logs its counts as a warning, and lets
        the cancellation propagate.
        """
        validate_index_name(self.name)
        if create:
            await self.create(exist_ok=True)
        ingester = AsyncDocumentIngester(
            self.client,  # type: ignore[arg-type]
            self.name,
            self.model,
            batch_size=batch_size,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            concurrency=concurrency,
            retry_budget=retry_budget,
            expansion=await self.searcher.expansion(),  # checks the index
        )
        try:
            report = await ingester.run(documents, progress=progress)
        except IngestError as stopped:
            await run_async(finish_plan(self.name, stopped.report, refresh), self.client)
            raise
        await run_async(finish_plan(self.name, report, refresh), self.client)
        return report

    async def upsert(self, documents: Documents, **options: Any) -> IngestReport:
        """Insert or replace documents by id (:meth:`SCMIndex.upsert`): :meth:`index_documents`."""
        return await self.index_documents(documents, **options)

    async def search(self, query: str, k: int = 10, **options: Any) -> SearchResult:
        """Search: :meth:`AsyncSearcher.search`."""
        return await self.searcher.search(query, k, **options)

    async def rescore(self, query: str, **options: Any) -> SearchResult:
        """Rescore candidates: :meth:`AsyncSearcher.rescore`."""
        return await self.searcher.rescore(query, **options)
