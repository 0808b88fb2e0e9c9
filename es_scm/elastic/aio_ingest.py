"""Ingestion on asyncio: the sync ingester's plan of bulk requests, sent by ``AsyncElasticsearch``.

:class:`AsyncDocumentIngester` checks, vectorizes and accounts for documents exactly as
:class:`~es_scm.elastic.ingest.DocumentIngester` does (same :class:`IngestReport`), and sends the
same sending plan (:class:`~es_scm.elastic.bulk_plan.BulkPlan`: the lookup of the ids, the split
of rejected requests, the retry budget of a lost cluster or a red index), and sends a batch that
repeats an id of a batch in flight only once that one is done. What differs is how:

* bulk requests go through the official client's ``helpers.async_streaming_bulk``, with its
  ``retry_on_status`` and doubling backoff;
* reading a batch of documents and vectorizing it (CPU work: tokenizing, the sparse products)
  run in a worker thread (``asyncio.to_thread``), so the event loop keeps serving other tasks;
* up to ``concurrency`` bulk requests are asyncio tasks in flight at once;
* a lost cluster is waited out with ``asyncio.sleep``;
* a cancelled run (``task.cancel()``, ``asyncio.timeout``, Ctrl-C under ``asyncio.run``) cancels
  its requests in flight, logs what it did (a warning with the counts) and lets the
  cancellation propagate: ``asyncio.timeout`` and task groups work as they do for any task.

``documents`` may be an iterable or an async iterable of documents.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from typing import Any

from elasticsearch import helpers

from es_scm.documents import Document
from es_scm.elastic.bulk_plan import (
    BatchOutcome,
    BulkRequest,
    SendingStopped,
    Wait,
    bulk_results,
    one_call,
)
from es_scm.elastic.calls import Call, drive_async, run_async
from es_scm.elastic.ingest import DocumentIngester, SeenIds, _Batch, settle_first
from es_scm.elastic.ingest_report import IngestReport

__all__ = ["AsyncDocumentIngester", "Documents"]

logger = logging.getLogger(__name__)

Documents = Iterable[Document | Mapping[str, Any]] | AsyncIterable[Document | Mapping[str, Any]]


class AsyncDocumentIngester(DocumentIngester):
    """:class:`~es_scm.elastic.ingest.DocumentIngester` on an ``AsyncElasticsearch`` client.

    The parameters are the sync ingester's; ``client`` is an ``AsyncElasticsearch``.
    """

    async def run(self, documents: Documents, progress: Any = None) -> IngestReport:  # type: ignore[override]
        """Ingest a stream of documents; return the report (see the module docstring).

        Raises
        ------
        IngestError
            When the run stops early; ``error.report`` has the counts.
        """
        report = IngestReport()
        started = time.perf_counter()
        seen = SeenIds()
        positions = itertools.count()
        batches = _batches(documents, self.batch_size)
        in_flight: list[tuple[asyncio.Task, _Batch]] = []
        error: BaseException | None = None
        try:
            while not self._stop.is_set():
                try:
                    batch = await anext(batches, [])
                except Exception as failure:  # the caller's stream: keep what was done
                    error, report.stopped = failure, f"reading the documents failed: {failure}"
                    break
                if not batch:
                    break
                prepared = await asyncio.to_thread(self._prepare, batch, positions, seen, report)
                for _ in range(settle_first(in_flight, prepared)):
                    await self._settle(*in_flight.pop(0), report, progress)
                while len(in_flight) >= self.concurrency:
                    await self._settle(*in_flight.pop(0), report, progress)
                sending = asyncio.create_task(self._send_async(prepared.actions))
                in_flight.append((sending, prepared))
            while in_flight:
                await self._settle(*in_flight.pop(0), report, progress)
        except asyncio.CancelledError:  # propagated as is: asyncio.timeout, TaskGroup rely on it
            self._stop.set()
            report.stopped = "cancelled"
            for sending, batch in in_flight:
                sending.cancel()
                report.skipped += len(batch.actions)
            report.seconds = time.perf_counter() - started
            logger.warning("%s: ingestion cancelled: %s", self.index, report.summary())
            raise
        return self._conclude(report, started, error)

    async def _settle(
        self, sending: asyncio.Task, batch: _Batch, report: IngestReport, progress: Any
    ) -> None:
        """Wait for a batch's requests, then count its outcome as the sync ingester does."""
        await asyncio.wait({sending})
        self._account(sending, batch, report, progress)  # type: ignore[arg-type]

    async def _send_async(self, actions: list[dict]) -> BatchOutcome:
        """Bulk ``actions``: the sending plan, run with the asyncio client."""
        return await drive_async(self._plan.send(actions), self._step_async)

    async def _step_async(self, step: BulkRequest | Wait | Call) -> Any:
        """Carry out one step of the sending plan."""
        if isinstance(step, Wait):
            await asyncio.sleep(step.seconds)
            if self._stop.is_set():
                raise SendingStopped("stopped")
            return None
        if isinstance(step, Call):
            return await run_async(one_call(step), self.client)
        arguments = self.bulk_arguments(step)
        return bulk_results([result async for result in helpers.async_streaming_bulk(**arguments)])


async def _batches(documents: Documents, size: int) -> AsyncIterator[list]:
    """Lists of up to ``size`` documents; a plain iterable is read in a worker thread."""
    if isinstance(documents, AsyncIterable):
        batch: list = []
        async for document in documents:
            batch.append(document)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch
        return
    stream = iter(documents)
    while batch := await asyncio.to_thread(lambda: list(itertools.islice(stream, size))):
        yield batch
