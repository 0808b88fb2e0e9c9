"""Ingestion: documents → weighted vectors → normalized vectors → bulk requests, nothing lost.

Documents stream in as :class:`~es_scm.documents.Document` records (or mappings checked by
:meth:`~es_scm.documents.Document.from_mapping`) and are vectorized in batches: the model's
document weighting gives Wy, the term-similarity layer normalizes it to y' = Wy/‖Wy‖_S
(Theorem 4.2, :meth:`~es_scm.similarity.TermSimilarityMatrix.normalize`), and
:func:`~es_scm.elastic.schema.encode_documents` makes the ``_source`` of each.

Every document gets an outcome (:class:`IngestReport`):

* A document that cannot be indexed — not a valid record, a corpus record skipped as bad
  (:class:`~es_scm.documents.InvalidRecord`, named by its file and line), an id over
  Elasticsearch's 512 bytes, metadata that JSON cannot hold (NaN, ±Infinity, a set; named by
  its field, :func:`~es_scm.documents.metadata_problem`), a field Elasticsearch rejects — fails
  alone, with its reason; the others of its batch are indexed.
* A batch is sent by the plan of :mod:`es_scm.elastic.bulk_plan`: rejections with 429, 502 or
  504 are retried by the official client's ``helpers.streaming_bulk`` (``max_retries``, waits
  doubling from ``initial_backoff`` up to ``max_backoff``); a cluster that cannot be reached and
  shards without a primary (a red index) are waited out for ``retry_budget`` seconds of wall
  clock from the batch's first failure, with a warning naming the cause at each try; then the
  run stops with :class:`IngestError`, whose ``report`` counts what was indexed, failed and
  skipped. So does a disk that Elasticsearch has filled to its flood-stage watermark, and an
  input stream that raises. Ctrl-C stops within a second with :class:`IngestInterrupted`, which
  carries the report.
* Ids make writes idempotent: a rerun overwrites (``updated``) instead of duplicating. A
  document is counted ``created`` when the index did not hold its id before this run wrote it,
  even when a retried write was answered ``updated``.
* An id seen twice in one run is counted as a duplicate, and the later document wins, always:
  a batch that repeats an id of a batch still in flight is sent only once that batch is done
  (within a request, Elasticsearch applies the documents in order).

The report also counts the documents' tokens that are terms (not stop words) and those of them
that the model does not know, and warns when that share is far above the share the model's own
corpus left out (:meth:`~es_scm.model.TokenCounts.drift`).
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import Elasticsearch, helpers

from es_scm.documents import Document, InvalidRecord, as_document, metadata_problem
from es_scm.elastic.bulk_plan import (
    BULK_RETRIED_STATUSES,
    SHARD_WAIT,
    BatchOutcome,
    BulkPlan,
    BulkRequest,
    SendingStopped,
    Wait,
    bulk_results,
    one_call,
)
from es_scm.elastic.calls import Call, drive, run_sync
from es_scm.elastic.ingest_report import IngestError, IngestInterrupted, IngestReport
from es_scm.elastic.schema import EXPANSIONS, encode_documents, feature_keys
from es_scm.model.soft_cosine import TokenCounts
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Interval, Options, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "MAX_ID_BYTES",
    "RETRYABLE_STATUSES",
    "DocumentIngester",
    "IngestError",
    "IngestInterrupted",
    "IngestReport",
    "SeenIds",
]

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = (429, 502, 503, 504)
MAX_ID_BYTES = 512  # Elasticsearch rejects longer _id values, and with them the whole request
SHOWN = 1000  # ids kept in a report's lists (the counts are always complete)
_SECONDS = Interval(float, 0.0, None)


class SeenIds:
    """The 64-bit hashes of the ids written so far, to count duplicates in ~8 bytes per id.

    A ``set`` of Python ints costs ~70 bytes per id, enough to make an ingesting process grow
    with the corpus. The hashes are kept instead in sorted NumPy runs of decreasing sizes (a
    binary counter: a run merges into the one before it when it gets as large), so a batch is
    looked up in O(log² n) and each hash is merged O(log n) times.
    """

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def add(self, keys: list[int]) -> np.ndarray:
        """Add a batch's keys; True where a key was added before (earlier in ``keys`` too)."""
        hashes = np.asarray(keys, dtype=np.int64)
        repeated = np.zeros(len(hashes), dtype=bool)
        for run in self._runs:
            positions = np.minimum(np.searchsorted(run, hashes), len(run) - 1)
            repeated |= run[positions] == hashes
        order = np.argsort(hashes, kind="stable")  # equal keys keep their order: first one is new
        repeated[order[1:]] |= hashes[order[1:]] == hashes[order[:-1]]
        new = np.unique(hashes[~repeated])
        if len(new):
            self._runs.append(new)
        while len(self._runs) > 1 and len(self._runs[-1]) >= len(self._runs[-2]):
            last = self._runs.pop()
            self._runs[-1] = np.sort(np.concatenate([self._runs[-1], last]))
        return repeated


@dataclass
class _Batch:
    """A batch's bulk actions, its empty documents' ids, and the documents that failed early."""

    actions: list[dict[str, Any]]
    empty_ids: list[str]
    invalid: list[tuple[str, str]]
    ids: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.ids = frozenset(action["_id"] for action in self.actions)


def settle_first(in_flight: list[tuple[Any, _Batch]], batch: _Batch) -> int:
    """How many of the batches in flight must be done before ``batch`` is sent: up to the last
    that shares an id with it, so that the later copy of a document is written last."""
    sharing = [
        n for n, (_, earlier) in enumerate(in_flight) if not earlier.ids.isdisjoint(batch.ids)
    ]
    return sharing[-1] + 1 if sharing else 0


class DocumentIngester:
    """Vectorize documents with a model and bulk them into an index (see the module docstring).

    Parameters
    ----------
    client : Elasticsearch
    index : str
        The index (or write alias).
    model : SoftCosineModel
    batch_size : int
        Documents per vectorization batch and bulk request.
    max_retries : int
        Retries of documents rejected with 429, 502 or 504 before they count as failed.
    initial_backoff, max_backoff : float
        The first wait between those retries, and the longest (seconds).
    concurrency : int
        Bulk requests in flight at once (2): Elasticsearch indexes each on a thread of its
        own while Python vectorizes the next batch.
    retry_budget : float
        Seconds (wall clock, from a batch's first failure) to keep trying a batch when the
        cluster cannot be reached or shards of the index have no primary, before stopping (60).
    expansion : {"query", "documents"}
        The index's side of S (:data:`~es_scm.elastic.schema.EXPANSIONS`): with
        ``"documents"`` each document carries Sy' too.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        model: SoftCosineModel,
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        concurrency: int = 2,
        retry_budget: float = 60.0,
        expansion: str = "query",
    ) -> None:
        self.client = client
        self.index = index
        self.model = model
        self.batch_size = check(batch_size, "batch_size", POSITIVE_INT)
        self.max_retries = check(max_retries, "max_retries", NON_NEGATIVE_INT)
        self.initial_backoff = check(initial_backoff, "initial_backoff", _SECONDS)
        self.max_backoff = check(max_backoff, "max_backoff", _SECONDS)
        self.concurrency = check(concurrency, "concurrency", POSITIVE_INT)
        self.retry_budget = check(retry_budget, "retry_budget", _SECONDS)
        self.expansion = check(expansion, "expansion", Options(EXPANSIONS))
        self._term_keys = feature_keys(len(model.terms))
        self._stop = threading.Event()
        self._plan = BulkPlan(index, self.retry_budget, self._stop)
        self._serializer = client.transport.serializers.get_serializer("application/json")

    def run(
        self, documents: Iterable[Document | Mapping[str, Any]], progress: Any = None
    ) -> IngestReport:
        """Ingest a stream of documents; return the report.

        ``progress`` is an object with ``update(n)`` (e.g. a tqdm bar), or None. Batches are
        vectorized while up to ``concurrency`` earlier ones are in flight; at most
        ``concurrency + 1`` batches are held in memory.

        Raises
        ------
        IngestError
            When the run stops early (see the module docstring); ``error.report`` has the counts.
        IngestInterrupted
            On Ctrl-C, with the counts.
        """
        report = IngestReport()
        started = time.perf_counter()
        seen = SeenIds()
        positions = itertools.count()
        stream = iter(documents)
        in_flight: list[tuple[Future, _Batch]] = []
        sender = _Sender(self.concurrency)
        error: BaseException | None = None
        try:
            while not self._stop.is_set():
                try:
                    batch = list(itertools.islice(stream, self.batch_size))
                except Exception as failure:  # the caller's stream: keep what was done
                    error, report.stopped = failure, f"reading the documents failed: {failure}"
                    break
                if not batch:
                    break
                prepared = self._prepare(batch, positions, seen, report)
                for _ in range(settle_first(in_flight, prepared)):
                    self._account(*in_flight.pop(0), report, progress)
                while len(in_flight) >= self.concurrency:
                    self._account(*in_flight.pop(0), report, progress)
                in_flight.append((sender.submit(self._send, prepared.actions), prepared))
            while in_flight:
                self._account(*in_flight.pop(0), report, progress)
        except KeyboardInterrupt:
            self._stop.set()
            report.stopped = "interrupted"
            for _, batch in in_flight:
                report.skipped += len(batch.actions)
            report.seconds = time.perf_counter() - started
            raise IngestInterrupted(report) from None
        finally:
            sender.close()
        return self._conclude(report, started, error)

    def _conclude(
        self, report: IngestReport, started: float, error: BaseException | None
    ) -> IngestReport:
        """Time the run, warn of drift, log; raise :class:`IngestError` if it stopped early."""
        report.seconds = time.perf_counter() - started
        drift = TokenCounts(report.tokens, report.unknown_tokens).drift(self.model.vocabulary)
        if drift is not None:
            report.warnings.append(drift)
        logger.info("%s: %s", self.index, report.summary())
        if report.stopped is not None:
            raise IngestError(report.stopped, report) from error
        return report

    # -- preparing ---------------------------------------------------------------------------

    def _prepare(
        self, batch: list, positions: Iterator[int], seen: SeenIds, report: IngestReport
    ) -> _Batch:
        """Check and vectorize a batch: y' = Wy/‖Wy‖_S, encoded as bulk actions."""
        documents, invalid = [], []
        for item in batch:
            position = next(positions)
            document, reason = self._checked(item, position)
            if reason is not None:
                invalid.append((document, reason))
                continue
            assert isinstance(document, Document)
            documents.append(document)
        repeated = seen.add([hash(document.id) for document in documents])
        for document in itertools.compress(documents, repeated):
            report.duplicates += 1
            if len(report.duplicate_ids) < SHOWN:
                report.duplicate_ids.append(document.id)
        texts = [document.text for document in documents]
        tokens = TokenCounts()
        weights = self.model.vectorize_many(texts, role="document", tokens=tokens)
        report.tokens += tokens.tokens
        report.unknown_tokens += tokens.unknown
        matrix = self.model.similarity_matrix
        normalized = matrix.normalize(weights)
        expanded = matrix.expand_documents(normalized) if self.expansion == "documents" else None
        metadata = [document.metadata for document in documents]
        sources = encode_documents(texts, normalized, metadata, self._term_keys, expanded)
        actions = [
            {"_index": self.index, "_id": document.id, "_source": source}
            for document, source in zip(documents, sources, strict=True)
        ]
        empty_ids = [d.id for d, s in zip(documents, sources, strict=True) if s["scm"]["empty"]]
        return _Batch(actions, empty_ids, invalid)

    def _checked(self, item: Any, position: int) -> tuple[Document | str, str | None]:
        """The document, or its name (its id, where it was read, or ``#position``) and why it
        cannot be indexed."""
        if isinstance(item, InvalidRecord):
            return item.where, item.reason
        try:
            document = as_document(item, position)
        except ValueError as error:
            doc_id = item.get("id") if isinstance(item, Mapping) else None
            name = doc_id if isinstance(doc_id, str) and doc_id else f"#{position}"
            return name, f"invalid document: {error}"
        size = len(document.id.encode("utf-8"))
        if size > MAX_ID_BYTES:
            return document.id, f"the id is {size} bytes; Elasticsearch allows {MAX_ID_BYTES}"
        problem = metadata_problem(document.metadata, self._serializable)
        if problem is not None:
            return document.id, problem
        return document, None

    def _serializable(self, value: Any) -> bool:
        """Whether the client's serializer writes ``value`` (dates, UUIDs, NumPy values...)."""
        try:
            self._serializer.dumps(value)
        except Exception:  # the serializer's own error, or a TypeError of the value
            return False
        return True

    # -- accounting --------------------------------------------------------------------------

    def _account(self, sending: Future, batch: _Batch, report: IngestReport, progress: Any) -> None:
        for doc_id, reason in batch.invalid:
            _fail(report, doc_id, reason)
        if progress is not None:
            progress.update(len(batch.actions) + len(batch.invalid))
        try:
            outcome: BatchOutcome = sending.result()
        except SendingStopped as stop:
            outcome = stop.outcome or BatchOutcome()
            done = outcome.created + outcome.updated + len(outcome.failures)
            report.skipped += len(batch.actions) - done
            report.stopped = report.stopped or str(stop)
            self._stop.set()
        report.created += outcome.created
        report.updated += outcome.updated
        for doc_id, reason in outcome.failures:
            _fail(report, doc_id, reason)
        failed_ids = {doc_id for doc_id, _ in outcome.failures}
        stored_empty = [doc_id for doc_id in batch.empty_ids if doc_id not in failed_ids]
        report.empty += len(stored_empty)
        report.empty_ids.extend(stored_empty[: max(0, SHOWN - len(report.empty_ids))])

    # -- sending: the plan of a batch (bulk_plan), run on a sender thread -------------------

    def _send(self, actions: list[dict]) -> BatchOutcome:
        """Bulk ``actions`` (on a sender thread): the sending plan with the sync client."""
        return drive(self._plan.send(actions), self._step)

    def _step(self, step: BulkRequest | Wait | Call) -> Any:
        """Carry out one step of the sending plan."""
        if isinstance(step, Wait):
            if self._stop.wait(step.seconds):
                raise SendingStopped("stopped")
            return None
        if isinstance(step, Call):
            return run_sync(one_call(step), self.client)
        return bulk_results(helpers.streaming_bulk(**self.bulk_arguments(step)))

    def bulk_arguments(self, request: BulkRequest) -> dict[str, Any]:
        """The keyword arguments of ``streaming_bulk`` (or its async twin) for a request."""
        # Connection errors and unavailable shards are the plan's (with a time budget), the
        # other statuses streaming_bulk's: the transport retries neither, so no retry loop
        # nests in another.
        return {
            "client": self.client.options(max_retries=0, retry_on_status=()),
            "actions": request.actions,
            "chunk_size": len(request.actions),
            "max_chunk_bytes": 50 * 1024 * 1024,
            "raise_on_error": False,
            "raise_on_exception": True,
            "max_retries": self.max_retries,
            "initial_backoff": self.initial_backoff,
            "max_backoff": self.max_backoff,
            "retry_on_status": BULK_RETRIED_STATUSES,
            "timeout": SHARD_WAIT,
        }


class _Sender:
    """Bulk requests in flight on daemon threads, so that Ctrl-C never waits for them."""

    def __init__(self, threads: int) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._threads = [
            threading.Thread(target=self._work, name=f"es-scm-bulk-{n}", daemon=True)
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        future: Future = Future()
        self._jobs.put((future, function, argument))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, function, argument = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(argument))
                except BaseException as error:
                    future.set_exception(error)

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


def _fail(report: IngestReport, doc_id: str, reason: str) -> None:
    report.failed += 1
    if len(report.failures) < SHOWN:
        report.failures.append((doc_id, reason))
