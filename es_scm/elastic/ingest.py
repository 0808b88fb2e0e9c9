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
* Batches are read and vectorized while up to ``concurrency`` earlier ones are in flight (on
  threads, or asyncio tasks: the run is a plan, :mod:`es_scm.elastic.calls`, that either runtime
  carries out; the asyncio one vectorizes in a worker thread and also reads async iterables).
* A batch is sent by the plan of :mod:`es_scm.elastic.bulk_plan`: rejections with 429, 502 or
  504 are retried by the official client's ``helpers.streaming_bulk`` (``max_retries``, waits
  doubling from ``initial_backoff`` up to ``max_backoff``); a cluster that cannot be reached and
  shards without a primary (a red index) are waited out for ``retry_budget`` seconds of wall
  clock from the batch's first failure, with a warning naming the cause at each try; then the
  run stops with :class:`IngestError`, whose ``report`` counts what was indexed, failed and
  skipped. So does a disk that Elasticsearch has filled to its flood-stage watermark, and an
  input stream that raises. Ctrl-C stops with :class:`IngestInterrupted`, which carries the
  report, and a cancelled asyncio task stops too (a warning with the counts, then the
  cancellation goes on); either way the requests already sent are waited for (they cannot be
  called back), so that nothing is written after the run returns.
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

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from es_scm.documents import Document, InvalidRecord, as_document, metadata_problem
from es_scm.elastic.bulk_plan import BatchOutcome, BulkPlan, SendingStopped
from es_scm.elastic.calls import Compute, Join, Plan, Read, Source, Start
from es_scm.elastic.ingest_report import IngestError, IngestInterrupted, IngestReport
from es_scm.elastic.requests import IngestOptions
from es_scm.elastic.schema import encode_documents, feature_keys
from es_scm.model.soft_cosine import TokenCounts

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "MAX_ID_BYTES",
    "RETRYABLE_STATUSES",
    "IngestError",
    "IngestInterrupted",
    "IngestReport",
    "Ingestion",
    "SeenIds",
]

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = (429, 502, 503, 504)
MAX_ID_BYTES = 512  # Elasticsearch rejects longer _id values, and with them the whole request
SHOWN = 1000  # ids kept in a report's lists (the counts are always complete)


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
    """A batch's bulk actions, its empty documents' ids, the documents that failed early, and
    the ids that earlier batches of the run wrote already."""

    actions: list[dict[str, Any]]
    empty_ids: list[str]
    invalid: list[tuple[str, str]]
    written_before: frozenset[str] = frozenset()
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


class Ingestion:
    """One run of documents into an index: the plan of :meth:`run` (module docstring).

    Parameters
    ----------
    index : str
        The index (or write alias).
    model : SoftCosineModel
    options : IngestOptions
        Batches, retries, requests in flight (checked).
    expansion : {"query", "documents"}
        The index's side of S: with ``"documents"`` each document carries Sy' too.
    fresh : bool
        Whether the run created the index (it then holds no id but the run's own).
    serializable : callable
        Whether the client's serializer writes a value (metadata checks).
    refresh_last : bool
        Send the last batch alone, once the others are done, with ``refresh=true``: the
        documents are searchable when it returns (an index of one shard: a refresh of the shards
        a request wrote is a refresh of the index).
    """

    def __init__(
        self,
        index: str,
        model: SoftCosineModel,
        options: IngestOptions,
        *,
        expansion: str,
        fresh: bool,
        serializable: Any,
        refresh_last: bool = False,
    ) -> None:
        self.index = index
        self.model = model
        self.options = options
        self.expansion = expansion
        self.refresh_last = refresh_last
        self._serializable = serializable
        self._term_keys = feature_keys(len(model.terms))
        self._stop = threading.Event()
        self._sending = BulkPlan(index, options, self._stop, fresh)
        self.refreshed = False  # whether the last batch's request refreshed the index

    def run(
        self, documents: Iterable[Document | Mapping[str, Any]] | Any, progress: Any = None
    ) -> Plan[IngestReport]:
        """Ingest a stream of documents; return the report.

        ``progress`` is an object with ``update(n)`` (e.g. a tqdm bar), or None. At most
        ``concurrency + 1`` batches are held in memory (and the second batch is read before the
        first is sent: a run of one batch refreshes with its request).

        Raises
        ------
        IngestError
            When the run stops early (see the module docstring); ``error.report`` has the counts.
        IngestInterrupted
            On Ctrl-C, with the counts.
        """
        report = IngestReport()
        started = time.perf_counter()
        state = _RunState(Source(documents))
        try:
            yield from self._batches(state, report, progress)
        except KeyboardInterrupt:
            yield from self._interrupted(state, report, started, "interrupted")
            raise IngestInterrupted(report) from None
        except asyncio.CancelledError:  # goes on as it is: asyncio.timeout, TaskGroup rely on it
            yield from self._interrupted(state, report, started, "cancelled")
            logger.warning("%s: ingestion cancelled: %s", self.index, report.summary())
            raise
        return self._conclude(report, started, state.error)

    def _batches(self, state: _RunState, report: IngestReport, progress: Any) -> Plan[None]:
        """Read, vectorize and send every batch; settle each (in order) into ``report``.

        The batch after the first is read before the first is sent, once: a run of one batch is
        then known to be one, and its request refreshes the index (``refresh_last``). Any other
        batch is read after the one before it is sent, so that at most ``concurrency`` batches
        are ever lost with a cluster that goes away.
        """
        batch = yield from self._read(state, report)
        first = True
        while batch and not self._stop.is_set():
            prepared = state.pending = yield Compute(self._prepare, (batch, state, report))
            if first:
                state.ahead = yield from self._read(state, report)
            last = first and not state.ahead and self.refresh_last
            waiting = settle_first(state.in_flight, prepared)
            for _ in range(waiting):
                yield from self._settle(state, report, progress)
            while len(state.in_flight) >= self.options.concurrency:
                yield from self._settle(state, report, progress)
            sending = self._sending.send(prepared.actions, prepared.written_before, refresh=last)
            state.in_flight.append(((yield Start(sending)), prepared))
            state.pending = None
            self.refreshed = last
            if first:
                batch = state.ahead
                state.ahead = []
                first = False
            elif self._stop.is_set():
                batch = []
            else:
                batch = yield from self._read(state, report)
        while state.in_flight:
            yield from self._settle(state, report, progress)
        if self._stop.is_set():  # the batch read ahead of the first, not sent
            report.skipped += len(batch)

    def _read(self, state: _RunState, report: IngestReport) -> Plan[list[Any]]:
        """The next batch of documents (empty at the end, or when reading them fails)."""
        try:
            return (yield Read(state.source, self.options.batch_size))
        except Exception as failure:  # the caller's stream: keep what was done
            state.error = failure
            report.stopped = f"reading the documents failed: {failure}"
            return []

    def _interrupted(
        self, state: _RunState, report: IngestReport, started: float, why: str
    ) -> Plan[None]:
        """Stop: the batches in flight are skipped, their requests waited for (they cannot be
        called back; a request sent after the stop gives up at its next wait)."""
        self._stop.set()
        report.stopped = why
        if state.pending is not None:  # prepared, not sent
            report.skipped += len(state.pending.actions)
        report.skipped += len(state.ahead)  # read ahead, not prepared
        for handle, batch in state.in_flight:
            report.skipped += len(batch.actions)
            try:
                yield Join(handle)
            except BaseException:  # what became of it is no longer counted
                continue
        state.in_flight.clear()
        report.seconds = time.perf_counter() - started

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

    def _prepare(self, batch: list, state: _RunState, report: IngestReport) -> _Batch:
        """Check and vectorize a batch: y' = Wy/‖Wy‖_S, encoded as bulk actions."""
        documents = []
        invalid = []
        for item in batch:
            document, reason = self._checked(item, next(state.positions))
            if reason is not None:
                invalid.append((document, reason))
                continue
            assert isinstance(document, Document)
            documents.append(document)
        written_before = self._count_duplicates(documents, state.seen, report)
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
        return _Batch(actions, empty_ids, invalid, written_before)

    @staticmethod
    def _count_duplicates(
        documents: list[Document], seen: SeenIds, report: IngestReport
    ) -> frozenset[str]:
        """Count the ids seen before in the run; return those that earlier batches wrote."""
        repeated = seen.add([hash(document.id) for document in documents])
        ids = [document.id for document in documents]
        first_here = {doc_id for doc_id, again in zip(ids, repeated, strict=True) if not again}
        for doc_id in itertools.compress(ids, repeated):
            report.duplicates += 1
            if len(report.duplicate_ids) < SHOWN:
                report.duplicate_ids.append(doc_id)
        return frozenset(itertools.compress(ids, repeated)) - first_here

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

    # -- accounting --------------------------------------------------------------------------

    def _settle(self, state: _RunState, report: IngestReport, progress: Any) -> Plan[None]:
        """Wait for the oldest batch in flight, then count its outcome."""
        handle, batch = state.in_flight.pop(0)
        for doc_id, reason in batch.invalid:
            _fail(report, doc_id, reason)
        try:
            outcome: BatchOutcome = yield Join(handle)
        except SendingStopped as stop:
            outcome = stop.outcome or BatchOutcome()
            done = outcome.created + outcome.updated + len(outcome.failures)
            report.skipped += len(batch.actions) - done
            report.stopped = report.stopped or str(stop)
            self._stop.set()
            self.refreshed = False
        if progress is not None:
            progress.update(len(batch.actions) + len(batch.invalid))
        report.created += outcome.created
        report.updated += outcome.updated
        for doc_id, reason in outcome.failures:
            _fail(report, doc_id, reason)
        failed_ids = {doc_id for doc_id, _ in outcome.failures}
        stored_empty = [doc_id for doc_id in batch.empty_ids if doc_id not in failed_ids]
        report.empty += len(stored_empty)
        report.empty_ids.extend(stored_empty[: max(0, SHOWN - len(report.empty_ids))])


@dataclass
class _RunState:
    """What a run keeps between batches: the documents being read, the ids seen, the batches
    in flight (with their handles), the batch prepared but not sent, the one read ahead, and an
    error of the documents' stream."""

    source: Source
    seen: SeenIds = field(default_factory=SeenIds)
    positions: Iterator[int] = field(default_factory=itertools.count)
    in_flight: list[tuple[Any, _Batch]] = field(default_factory=list)
    pending: _Batch | None = None  # prepared, not sent yet
    ahead: list[Any] = field(default_factory=list)  # read ahead (to know the last), not prepared
    error: BaseException | None = None


def _fail(report: IngestReport, doc_id: str, reason: str) -> None:
    report.failed += 1
    if len(report.failures) < SHOWN:
        report.failures.append((doc_id, reason))
