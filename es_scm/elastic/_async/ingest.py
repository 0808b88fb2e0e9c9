"""One ingestion run, and sending one batch: the asyncio code (its sync twin is generated).

A run (:class:`AsyncIngestion`) reads the documents in batches, prepares each (checked,
vectorized — and, for an index with dense vectors, encoded by the sentence encoder — and
encoded as bulk actions: :class:`~es_scm.index.ingest.BatchPreparer`, CPU work in a worker
thread)
while up to ``concurrency`` earlier batches are in flight (:class:`AsyncWorkers`; the sync twin
keeps ``concurrency`` threads for the run), and settles the batches in order into the report
(:func:`~es_scm.index.ingest.settle`). A batch that repeats an id of a batch in flight waits
for that one, so that the later copy of a document is written last; the batch after the first is
read before the first is sent, so that a run of one batch is known to be one, and its request
refreshes the index (``refresh_last``).

Sending a batch (:class:`AsyncBatchSender`): the ids the index holds already are looked up
(unless the run created the index), then :class:`~es_scm.index.bulk.BulkSending` says which
request goes next and reads each answer (retries, halves of a rejected request, documents over
the node's indexing memory isolated). A cluster that cannot be reached, a 503, and documents
whose shard has no primary are waited out within the retry budget, each wait saying why (the
cluster's health names a red index); when a request's answer was lost and the batch stops, the
ids it sent are looked up once, and those the index holds now count as written. Every bulk
request goes to the index's write alias with ``require_alias`` (:mod:`es_scm.index.indices`):
Elasticsearch never creates an index for es-scm's writes.

Stopping. The run's ``stop`` (:class:`AsyncStop`) ends it at the next step: no batch is read,
prepared or sent after it, every wait is cut short, and the requests in flight end with the
request they are making. So does the first interruption — Ctrl-C (``KeyboardInterrupt``) or the
cancellation of the task — and any other error: the requests in flight are waited for (bounded
by the client's request timeout), what they wrote is counted (indexed, not skipped), and the
rest of what was read is skipped; nothing is written after the run returns. A second
interruption while waiting abandons the requests in flight, and the report warns how many
documents they may still write. Then a stop raises :class:`IngestInterrupted` (with the report),
a cancellation goes on as it came (after a warning with the counts: ``asyncio.timeout`` and task
groups rely on it), and an error is raised again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from elasticsearch import ApiError, AsyncElasticsearch, TransportError

from es_scm.documents import Document
from es_scm.elastic.concurrency import AsyncStop, AsyncWorkers, async_batches, async_compute
from es_scm.elastic.connection import error_reason
from es_scm.engines import engine_of
from es_scm.index.bulk import (
    SHARD_WAIT,
    UNAVAILABLE,
    BatchOutcome,
    BulkRequest,
    BulkSending,
    RetryClock,
    RunStopped,
    SendingStopped,
    diagnosed,
    existing_ids,
    unreachable,
)
from es_scm.index.indices import WriteTarget
from es_scm.index.ingest import (
    Batch,
    BatchPreparer,
    IngestError,
    IngestInterrupted,
    IngestReport,
    conclude,
    settle,
    settle_first,
    skip,
)
from es_scm.index.layout import IngestOptions

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.encoder import SentenceEncoder
    from es_scm.model import SoftCosineModel

__all__ = ["AsyncBatchSender", "AsyncIngestion"]

logger = logging.getLogger(__name__)

Documents = Iterable[Document | Mapping[str, Any]] | AsyncIterable[Document | Mapping[str, Any]]
# a bulk request that cannot connect goes on to another node at once (a dead node of a cluster
# costs no wait); a timeout or a lost answer is the sender's, which knows it may have been applied
_FAILOVER: dict[str, Any] = {"max_retries": 2, "retry_on_status": (), "retry_on_timeout": False}
_NO_RETRY: dict[str, Any] = {
    "max_retries": 0,
    "retry_on_status": (),
}  # the sender retries, with its budget
# a question asked once, to any node that answers (a dead one is passed over)
_ONE_TRY: dict[str, Any] = {"max_retries": 2, "retry_on_status": (), "request_timeout": 10}


class AsyncIngestion:
    """One run of documents into an index (module docstring).

    Parameters
    ----------
    client : AsyncElasticsearch
    target : WriteTarget
        The index, and the alias its bulk requests go to.
    model : SoftCosineModel
    options : IngestOptions
        Batches, retries, requests in flight, the largest request (checked).
    expansion : {"query", "documents"}
        The index's side of S.
    fresh : bool
        Whether the run created the index (it then holds no id but the run's own).
    refresh_last : bool
        Send the last batch alone, once the others are done, with ``refresh=true``: the
        documents are searchable when it returns (an index of one shard: a refresh of the shards
        a request wrote is a refresh of the index).
    stop : AsyncStop, optional
        Set it to stop the run (it is set too when the run stops on its own).
    encoder : SentenceEncoder, optional
        The encoder of the index's dense vectors (an index created with ``dense=``): each
        batch's texts are encoded with it while the batch is prepared (in the worker thread).
    """

    def __init__(
        self,
        client: AsyncElasticsearch,
        target: WriteTarget,
        model: SoftCosineModel,
        options: IngestOptions,
        *,
        expansion: str,
        fresh: bool,
        refresh_last: bool = False,
        stop: AsyncStop | None = None,
        encoder: SentenceEncoder | None = None,
    ) -> None:
        self.index = target.index
        self.model = model
        self.options = options
        self.refresh_last = refresh_last
        self.stop = AsyncStop() if stop is None else stop
        dumps = client.transport.serializers.get_serializer("application/json").dumps
        self.preparer = BatchPreparer(
            model,
            target.writes_to,
            expansion=expansion,
            dumps=dumps,
            max_request_bytes=options.max_request_bytes,
            encoder=encoder,
        )
        self.sender = AsyncBatchSender(client, target, options, self.stop, fresh)
        self.refreshed = False  # whether the last batch's request refreshed the index
        self.report = IngestReport()
        self._unread: list[Any] = []  # read, not prepared
        self._unsent: Batch | None = None  # prepared, not sent
        self._error: BaseException | None = None  # of the documents' stream

    async def run(self, documents: Documents, progress: Any = None) -> IngestReport:
        """Ingest a stream of documents; return the report.

        ``progress`` is an object with ``update(n)`` (e.g. a tqdm bar), or None. At most
        ``concurrency + 1`` batches are held in memory.

        Raises
        ------
        IngestError
            When the run stops early (cluster lost, index red or deleted, disk full, the
            documents' stream failed); ``error.report`` has the counts.
        IngestInterrupted
            When the run was stopped, or interrupted (Ctrl-C), with the counts.
        """
        started = time.perf_counter()
        async with AsyncWorkers[Batch](self.options.concurrency) as workers:
            try:
                reader = async_batches(documents, self.options.batch_size)
                await self._send_every_batch(reader, workers, progress)
                while workers:
                    await self._settle(workers, progress)
            except BaseException as error:
                await self._interrupted(workers, progress, error, started)
        skip(self.report, self._unsent, self._unread)  # what a stop left unsent
        self._finish(started)
        if self.report.stopped is None and self.stop.is_set():
            self.report.stopped = "interrupted"
            raise IngestInterrupted(self.report)
        if self.report.stopped is not None:
            raise IngestError(self.report.stopped, self.report) from self._error
        return self.report

    async def _send_every_batch(
        self, reader: AsyncIterator[list[Any]], workers: AsyncWorkers[Batch], progress: Any
    ) -> None:
        """Read, prepare and send every batch, up to ``concurrency`` in flight, until the end or
        a stop."""
        self._unread = await self._read(reader)
        first = True
        while self._unread and not self.stop.is_set():
            batch = await async_compute(self.preparer.prepare, self._unread)
            self._unsent, self._unread = batch, []
            if first:  # read ahead once: is the first batch the last?
                self._unread = await self._read(reader)
            last = first and not self._unread and self.refresh_last
            in_flight = [earlier for _, earlier in workers.running()]
            for _ in range(settle_first(in_flight, batch)):
                await self._settle(workers, progress)
            while len(workers) >= self.options.concurrency:
                await self._settle(workers, progress)
            if self.stop.is_set():
                return
            workers.start(batch, self.sender.send, batch, last)
            self._unsent = None
            self.refreshed = last
            if not first:  # read after sending: at most `concurrency` batches lost with a cluster
                self._unread = await self._read(reader)
            first = False

    async def _read(self, reader: AsyncIterator[list[Any]]) -> list[Any]:
        """The next batch of documents (empty at the end, or when reading them fails)."""
        try:
            return await anext(reader, [])
        except Exception as failure:  # the caller's stream: keep what was done
            self._error = failure
            self.report.stopped = self.report.stopped or f"reading the documents failed: {failure}"
            return []

    async def _settle(self, workers: AsyncWorkers[Batch], progress: Any) -> None:
        """Wait for the oldest batch in flight, then count its outcome."""
        handle, batch = workers.running()[0]
        try:
            outcome = await workers.join(handle)
        except SendingStopped as stopped:  # the run stops; every other batch gives up too
            outcome = stopped.outcome or BatchOutcome()
            if not isinstance(stopped, RunStopped):  # this batch's own cause stops the run
                self.report.stopped = self.report.stopped or str(stopped)
            self.stop.set()
            self.refreshed = False
        settle(self.report, batch, outcome)
        workers.done(handle)
        if progress is not None:
            progress.update(batch.read)

    async def _interrupted(
        self, workers: AsyncWorkers[Batch], progress: Any, error: BaseException, started: float
    ) -> None:
        """The run was interrupted (or failed): stop, wait for the requests in flight and count
        what they did. An interruption while the run was already stopping — a second signal, a
        second cancellation — abandons them instead, as does one that comes while waiting.
        Then raise."""
        interruption = isinstance(error, KeyboardInterrupt | asyncio.CancelledError)
        hurry = interruption and self.stop.is_set()  # the run was already stopping
        self.stop.set()
        if isinstance(error, asyncio.CancelledError):
            why = "cancelled"
        elif isinstance(error, KeyboardInterrupt):
            why = "interrupted"
        else:
            why = f"failed: {type(error).__name__}: {error}"
        self.report.stopped = self.report.stopped or why
        abandoned = hurry
        if not hurry:
            try:
                while workers:
                    await self._settle(workers, progress)
            except BaseException:  # a second interruption while waiting
                abandoned = True
        if abandoned:
            self._abandon(workers)
        skip(self.report, self._unsent, self._unread)
        self._unsent, self._unread = None, []
        self._finish(started)
        if isinstance(error, asyncio.CancelledError):
            logger.warning("%s: ingestion cancelled: %s", self.index, self.report.summary())
        if isinstance(error, KeyboardInterrupt) and not isinstance(error, IngestInterrupted):
            raise IngestInterrupted(self.report, abandoned=abandoned) from None
        raise error

    def _abandon(self, workers: AsyncWorkers[Batch]) -> None:
        """Leave the requests in flight (their documents skipped), warning what they may write."""
        left = workers.abandon()
        for batch in left:
            skip(self.report, batch)
        if left:
            documents = sum(len(batch.actions) for batch in left)
            self.report.warnings.append(
                f"stopped waiting for {len(left)} bulk request(s) in flight: up to {documents} "
                "document(s) counted as skipped may still be written after the run returned"
            )

    def _finish(self, started: float) -> None:
        self.report.seconds = time.perf_counter() - started
        conclude(self.report, self.model, self.index)


class AsyncBatchSender:
    """Sends batches into one index (module docstring); one per run, shared by its batches.

    Parameters
    ----------
    client : AsyncElasticsearch
    target : WriteTarget
        The index, and the alias its bulk requests go to.
    options : IngestOptions
        The retries (``max_retries``, ``initial_backoff``, ``max_backoff`` for documents
        rejected with 429, 502 or 504; ``retry_budget``: seconds a batch keeps trying after its
        first failure to reach the cluster or a primary, before the run stops).
    stop : AsyncStop
        Set when the run stops: a sender gives up at its next step.
    fresh : bool
        Whether the run created the index: it then holds only the ids that the run's earlier
        batches wrote, and nothing is looked up.
    """

    def __init__(
        self,
        client: AsyncElasticsearch,
        target: WriteTarget,
        options: IngestOptions,
        stop: AsyncStop,
        fresh: bool,
    ) -> None:
        self.client = client
        self.target = target
        self.options = options
        self.stop = stop
        self.fresh = fresh
        self.may_look_up = True  # False once Elasticsearch refused a lookup (no read right)
        #: the engine written to, as messages name it
        self.engine = engine_of(client).title

    async def send(self, batch: Batch, refresh: bool = False) -> BatchOutcome:
        """Bulk the batch (refreshing the shards written if ``refresh``); what became of each
        document.

        Raises
        ------
        SendingStopped
            The run must stop (or was stopped); ``outcome`` says what the batch did before.
        """
        if not batch.actions:
            return BatchOutcome()
        clock = RetryClock(self.options.retry_budget)
        sending = BulkSending(
            batch.actions,
            self.target.index,
            max_retries=self.options.max_retries,
            initial_backoff=self.options.initial_backoff,
            max_backoff=self.options.max_backoff,
            max_request_bytes=self.options.max_request_bytes,
            engine=self.engine,
        )
        existing: dict[str, bool] = {}
        try:
            if self.fresh:
                existing = {doc_id: doc_id in batch.written_before for doc_id in batch.ids}
            else:
                existing = await self._existing(batch, clock)
            while (request := sending.next_request()) is not None:
                if self.stop.is_set() or (request.delay and await self.stop.wait(request.delay)):
                    raise RunStopped()
                try:
                    response = await self._bulk(request, refresh)
                except TransportError as error:  # no answer: the request may have been applied
                    sending.unanswered(request)
                    await self._wait(clock, unreachable(error, self.engine))
                    continue
                except ApiError as error:
                    if error.meta.status != UNAVAILABLE:
                        sending.refused(request, error.meta.status, error_reason(error))
                        continue
                    sending.unanswered(request)  # it may have been applied in part
                    reason = f"HTTP 503: {error_reason(error)}"
                    await self._wait(clock, f"{self.engine} is unavailable ({reason})", reason)
                    continue
                sending.answered(request, response.body)
                if sending.stopping is not None:
                    raise SendingStopped(sending.stopping)
                if sending.waiting:
                    clock.shard_reason = reason = sending.waiting[0][1]
                    problem = (
                        f"shards of the index {self.target.index!r} have no active primary "
                        f"({reason})"
                    )
                    await self._wait(clock, problem, reason)
                    sending.resend_waiting()
            return sending.outcome(existing)
        except SendingStopped as stopped:  # count what was written before the stop
            if sending.lost:
                sending.reconcile(await self._found(sending.pending_ids(existing)))
            stopped.outcome = sending.outcome(existing)
            raise

    async def _bulk(self, request: BulkRequest, refresh: bool) -> Any:
        """One bulk request (to the write alias, which must exist: no index is ever created)."""
        # Unreachable clusters and unavailable shards are the sender's (with a time budget);
        # the transport only moves a request that cannot connect to another node (at once).
        return await self.client.options(**_FAILOVER).bulk(
            operations=cast(Any, request.operations),
            timeout=SHARD_WAIT,
            require_alias=True if self.target.guarded else None,
            refresh="true" if refresh else None,
        )

    async def _existing(self, batch: Batch, clock: RetryClock) -> dict[str, bool]:
        """Which of the batch's ids the index holds now: id → found (left out: unknown)."""
        if not self.may_look_up:
            return {}
        ids = list(dict.fromkeys(action.doc_id for action in batch.actions))
        while True:
            if self.stop.is_set():
                raise RunStopped()
            try:
                response = await self.client.options(**_NO_RETRY).mget(
                    index=self.target.index, ids=ids, source=False
                )
            except TransportError as error:
                await self._wait(clock, unreachable(error, self.engine))
                continue
            except ApiError as error:  # e.g. a key that may write but not read
                logger.debug("cannot look the ids up (%s): counting Elasticsearch's answers", error)
                self.may_look_up = error.meta.status not in (401, 403)
                return {}
            return existing_ids(response.body)

    async def _found(self, ids: list[str]) -> list[str]:
        """Of ``ids``, those the index holds now (none when that cannot be known)."""
        if not ids:
            return []
        try:
            response = await self.client.options(**_ONE_TRY).mget(
                index=self.target.index, ids=ids, source=False
            )
        except (ApiError, TransportError):  # not known: counted as skipped
            return []
        return [doc["_id"] for doc in response.body["docs"] if doc.get("found")]

    async def _wait(self, clock: RetryClock, problem: str, cause: str | None = None) -> None:
        """Wait before the next try, saying why: the cluster's health names a red index (with
        Elasticsearch's reason, even when this try met a dead node). Stop when the retry budget
        is spent, or at once when the run stops."""
        if self.stop.is_set():
            raise RunStopped()
        try:
            health = (
                await self.client.options(**_ONE_TRY).cluster.health(index=self.target.index)
            ).body
        except (ApiError, TransportError):
            health = None
        cause = clock.shard_reason or cause or problem
        wait = clock.next_wait(diagnosed(self.target.index, health, problem, cause))
        if await self.stop.wait(wait):
            raise RunStopped()
