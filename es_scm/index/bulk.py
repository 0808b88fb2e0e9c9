"""Sending one batch of bulk actions, as decisions: which request goes next, what each answer means.

Pure code (no client): :class:`BulkSending` holds a batch's requests and what became of each of
its documents; the sender (:class:`~es_scm.elastic._async.ingest.AsyncBatchSender` and its
generated sync twin) asks it for the next request, sends it, and hands it the answer. The
decisions, each unit-tested with answers recorded from a real node (``tests/unit/recorded/``):

* A batch goes in requests of at most ``max_request_bytes`` (measured on the encoded actions,
  :class:`EncodedAction`); a document larger than that failed before any request
  (:mod:`es_scm.index.ingest`).
* A document rejected with 429, 502 or 504 is sent again, ``max_retries`` times, the waits
  doubling from ``initial_backoff`` up to ``max_backoff`` (as the official client's bulk helper
  does); after that it fails with Elasticsearch's reason. A 429 that says the document alone is
  over the node's indexing memory (``primary_operation_bytes`` over ``max_primary_bytes``, or an
  operation over ``indexing_pressure.memory.max_operation_size``) is not overload: retrying
  cannot help. It took down every document of its shard's request, so the request is sent again
  in halves until the large document is alone, and that one fails at once with its size and the
  node's limit; its neighbours are indexed.
* A request rejected as a whole for its content (400, 413) is split in halves until the bad
  documents are alone; they fail alone. A whole request refused with 429, 502 or 504 is retried
  like a document; any other refusal fails its documents with the reason.
* Documents whose shard has no primary (503: a red index, a primary moving) are sent again after
  a wait that the retry budget bounds (:class:`RetryClock`), as is a request that got no answer
  (the cluster cannot be reached, or answered 503 as a whole): such a request may have been
  applied (``lost``), so when the batch stops after one, the ids not answered are looked up once
  and those the index holds now and did not before count as created (:meth:`reconcile`).
* The ``read_only_allow_delete`` block (a disk past the flood-stage watermark, or set by hand:
  :func:`read_only` says which and how to lift it) and a write alias that is gone (the index was
  deleted: ``require_alias`` refuses, nothing is created) stop the run
  (:attr:`BulkSending.stopping`).
* A document is counted ``created`` when the index did not hold its id before this run wrote it,
  ``updated`` when it did (:func:`counted`), whatever a retried write was answered.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import ConnectionTimeout, TransportError

from es_scm.engines import connection_detail

__all__ = [
    "BULK_RETRIED_STATUSES",
    "SHARD_WAIT",
    "BatchOutcome",
    "BulkRequest",
    "BulkSending",
    "EncodedAction",
    "RetryClock",
    "RunStopped",
    "SendingStopped",
    "counted",
    "diagnosed",
    "existing_ids",
    "item_reason",
    "oversize",
    "read_only",
    "unreachable",
]

logger = logging.getLogger(__name__)

BULK_RETRIED_STATUSES = (429, 502, 504)  # retried a few times, with a backoff
SHARD_WAIT = "10s"  # how long Elasticsearch waits for a shard's primary before answering 503
MAX_DELAY = 10.0  # the longest wait between two tries of a batch within the retry budget
UNAVAILABLE = 503
_SPLITTABLE = (400, 413)  # a whole request rejected for what some of its documents hold
_FLOOD_STAGE = "flood-stage watermark"
# the block's setting: the cluster sets it when a disk passes the flood-stage watermark, and a
# person can set it too; the block's reason names the watermark whoever set it
_READ_ONLY = "index.blocks.read_only_allow_delete"
# the indexing-memory rejections of a single operation: 9.x, 8.x, and a too large operation
_OPERATION_BYTES = (
    re.compile(r"primary_operation_bytes=(\d+), max_primary_bytes=(\d+)"),
    re.compile(r"primary_operation_bytes=(\d+), max_coordinating_and_primary_bytes=(\d+)"),
    re.compile(r"coordinating_operation_bytes=(\d+), max_coordinating_bytes=(\d+)"),
    re.compile(
        r"operation of size \[(\d+)\] bytes, which exceeds the maximum allowed limit of \[(\d+)\]"
    ),
)


class SendingStopped(Exception):
    """A batch could not be sent and the run must stop (cluster lost, index red or deleted, disk
    full, or the run's stop); ``outcome`` is what became of the batch's documents before."""

    def __init__(self, message: str, outcome: BatchOutcome | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome


class RunStopped(SendingStopped):
    """The run's stop (an interruption, or another batch that stopped the run) cut a batch
    short."""

    def __init__(self) -> None:
        super().__init__("stopped")


@dataclass
class BatchOutcome:
    """What became of a batch's documents: created, updated, failed (id, reason); the others
    were not confirmed written (skipped)."""

    created: int = 0
    updated: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def done(self) -> int:
        return self.created + self.updated + len(self.failures)


@dataclass(frozen=True)
class EncodedAction:
    """One document as it goes into a bulk request: its id and its two lines (the action and the
    source, each ended by a newline), encoded once by the client's serializer."""

    doc_id: str
    lines: bytes

    @property
    def size(self) -> int:
        return len(self.lines)


@dataclass(frozen=True)
class BulkRequest:
    """A bulk request: its actions, how often its documents were retried, and how long to wait
    before sending it."""

    actions: tuple[EncodedAction, ...]
    attempt: int = 0
    delay: float = 0.0

    @property
    def operations(self) -> list[bytes]:
        """The request's body, as the client's ``bulk(operations=...)`` takes it."""
        return [action.lines for action in self.actions]

    @property
    def size(self) -> int:
        return sum(action.size for action in self.actions)

    def halves(self) -> tuple[BulkRequest, BulkRequest]:
        middle = len(self.actions) // 2
        return (
            BulkRequest(self.actions[:middle], self.attempt),
            BulkRequest(self.actions[middle:], self.attempt),
        )


def requests_by_size(actions: Sequence[EncodedAction], limit: int) -> list[BulkRequest]:
    """``actions`` in order, in requests of at most ``limit`` bytes (an action over it alone)."""
    requests: list[BulkRequest] = []
    current: list[EncodedAction] = []
    size = 0
    for action in actions:
        if current and size + action.size > limit:
            requests.append(BulkRequest(tuple(current)))
            current, size = [], 0
        current.append(action)
        size += action.size
    if current:
        requests.append(BulkRequest(tuple(current)))
    return requests


class BulkSending:
    """The requests of one batch, and what became of each document (module docstring).

    Parameters
    ----------
    actions : sequence of EncodedAction
        The batch, in order (a later copy of an id is written after the earlier one).
    index : str
        The index written, for messages.
    max_retries, initial_backoff, max_backoff
        The retries of documents rejected with 429, 502 or 504.
    max_request_bytes : int
        The largest request.
    engine : str
        The engine written to, as messages name it (``Elasticsearch``, ``OpenSearch``).
    """

    def __init__(
        self,
        actions: Sequence[EncodedAction],
        index: str,
        *,
        max_retries: int,
        initial_backoff: float,
        max_backoff: float,
        max_request_bytes: int,
        engine: str = "Elasticsearch",
    ) -> None:
        self.actions = list(actions)
        self.index = index
        self.engine = engine
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.written: list[tuple[str, str]] = []  # (id, "created" or "updated")
        self.failures: list[tuple[str, str]] = []
        #: documents of the last answer whose shard had no primary: sent again after a wait
        self.waiting: list[tuple[EncodedAction, str]] = []
        #: why the run must stop, from the last answer (a full disk, a deleted index)
        self.stopping: str | None = None
        #: whether a request went unanswered: it may have been applied
        self.lost = False
        self._queue: deque[BulkRequest] = deque(requests_by_size(self.actions, max_request_bytes))

    def next_request(self) -> BulkRequest | None:
        """The request to send next (after its ``delay``); None when every document is done."""
        return self._queue.popleft() if self._queue else None

    def answered(self, request: BulkRequest, body: Mapping[str, Any]) -> None:
        """Take Elasticsearch's answer to ``request``: one result per document, in order."""
        retried: list[EncodedAction] = []
        oversized: list[tuple[EncodedAction, str]] = []
        for action, item in zip(request.actions, body["items"], strict=True):
            result = next(iter(item.values()))
            status = int(result.get("status", 0))
            if "error" not in result and 200 <= status < 300:
                self.written.append((action.doc_id, str(result.get("result"))))
                continue
            reason = item_reason(result)
            if _FLOOD_STAGE in reason:
                self.stopping = read_only(self.index)
            elif status == 404 and "index_not_found_exception" in reason:
                self.stopping = (
                    f"the index {self.index!r} was deleted during the run ({reason}); nothing "
                    "was written after that, and no index was made in its place"
                )
            elif status == UNAVAILABLE:
                self.waiting.append((action, reason))
            elif status == 429 and oversize(reason) is not None:
                oversized.append((action, reason))
            elif status in BULK_RETRIED_STATUSES and request.attempt < self.max_retries:
                retried.append(action)
            else:
                self.failures.append((action.doc_id, reason))
        self._isolate(oversized)
        if retried:
            attempt = request.attempt + 1
            self._queue.append(BulkRequest(tuple(retried), attempt, self._backoff(attempt)))

    def refused(self, request: BulkRequest, status: int, reason: str) -> None:
        """Elasticsearch refused ``request`` as a whole with ``status`` (not 503) and ``reason``."""
        if status in _SPLITTABLE:
            if len(request.actions) > 1:
                self._queue.extendleft(reversed(request.halves()))
                return
            action = request.actions[0]
            if status == 413:
                reason = (
                    f"the request of this one document ({action.size:,} bytes as JSON) is over "
                    f"{self.engine}'s http.max_content_length (HTTP 413: {reason})"
                )
            self.failures.append((action.doc_id, reason))
            return
        if status == 429 and oversize(reason) is not None:
            self._isolate([(action, reason) for action in request.actions])
        elif status in BULK_RETRIED_STATUSES and request.attempt < self.max_retries:
            attempt = request.attempt + 1
            self._queue.append(BulkRequest(request.actions, attempt, self._backoff(attempt)))
        else:
            message = f"HTTP {status}: {reason}"
            self.failures += [(action.doc_id, message) for action in request.actions]

    def unanswered(self, request: BulkRequest) -> None:
        """``request`` got no answer, or a 503 as a whole: it may have been applied; it is sent
        again first, after the wait the sender makes."""
        self.lost = True
        self._queue.appendleft(request)

    def resend_waiting(self) -> None:
        """The documents that waited for a primary go next (after the sender's wait)."""
        actions = tuple(action for action, _ in self.waiting)
        self.waiting = []
        if actions:
            self._queue.appendleft(BulkRequest(actions))

    def pending_ids(self, existing: Mapping[str, bool]) -> list[str]:
        """After a lost answer: the ids not answered that the index did not hold before (if it
        holds them now, this run wrote them)."""
        answered = {doc_id for doc_id, _ in self.written} | {doc_id for doc_id, _ in self.failures}
        ids = [action.doc_id for action in self.actions if action.doc_id not in answered]
        return [doc_id for doc_id in dict.fromkeys(ids) if not existing.get(doc_id, True)]

    def reconcile(self, found: Iterable[str]) -> None:
        """The ids that a lookup after a lost answer found: this run wrote (created) them."""
        self.written += [(doc_id, "created") for doc_id in found]

    def outcome(self, existing: Mapping[str, bool]) -> BatchOutcome:
        """Created, updated and failed documents so far (see :func:`counted`)."""
        return counted(self.written, self.failures, existing)

    def _isolate(self, oversized: list[tuple[EncodedAction, str]]) -> None:
        """Documents rejected together because one is over the node's indexing memory: sent
        again in halves at once; one alone fails with its size and the limit."""
        if len(oversized) == 1:
            action, reason = oversized[0]
            self.failures.append((action.doc_id, _too_large(action, reason, self.engine)))
        elif oversized:
            rejected = BulkRequest(tuple(action for action, _ in oversized))
            self._queue.extendleft(reversed(rejected.halves()))

    def _backoff(self, attempt: int) -> float:
        return min(self.max_backoff, self.initial_backoff * 2 ** (attempt - 1))


def counted(
    written: Sequence[tuple[str, str]],
    failures: Sequence[tuple[str, str]],
    existing: Mapping[str, bool],
) -> BatchOutcome:
    """Created or updated, from whether the index held each id before the batch was written
    (``existing``: id → found; an id left out is counted as Elasticsearch answered it)."""
    outcome = BatchOutcome(failures=list(failures))
    stored: set[str] = set()
    for doc_id, result in written:
        if doc_id in stored:  # a second copy in the batch replaced the first
            created = False
        elif doc_id in existing:
            created = not existing[doc_id]
        else:
            created = result == "created"
        stored.add(doc_id)
        outcome.created += created
        outcome.updated += not created
    return outcome


def existing_ids(body: Mapping[str, Any]) -> dict[str, bool]:
    """An ``mget`` answer (no source) as id → whether the index holds it (left out: unknown)."""
    return {doc["_id"]: doc["found"] for doc in body["docs"] if "found" in doc}


def oversize(reason: str) -> tuple[int, int] | None:
    """``(bytes needed, limit)`` if a 429 ``reason`` says that one operation alone is over the
    node's indexing memory, else None (overload: retrying may help)."""
    for pattern in _OPERATION_BYTES:
        found = pattern.search(reason)
        if found is not None:
            needed, limit = (int(number) for number in found.groups())
            return (needed, limit) if needed > limit else None
    return None


def read_only(index: str) -> str:
    """Why a run stops at the ``read_only_allow_delete`` block, and how to lift it, in one line
    (without "rerun": the command line adds how a rerun completes the index)."""
    return (
        f"the index {index!r} is read-only: it has the {_READ_ONLY} block, which the cluster "
        "sets when a disk passes the flood-stage watermark (its reason names the watermark "
        "however the block was set) and which can be set by hand; free disk space if a disk is "
        "full (the cluster lifts the block once usage is below the high watermark), else lift "
        f'it with PUT {index}/_settings {{"{_READ_ONLY}": null}}'
    )


def _too_large(action: EncodedAction, reason: str, engine: str) -> str:
    needed, limit = oversize(reason) or (0, 0)
    return (
        f"too large for {engine}'s indexing memory: the document is {action.size:,} bytes "
        f"as JSON and indexing it needs {needed:,} bytes, over the node's limit of {limit:,} "
        "(indexing_pressure.memory.limit, 10% of the heap by default): it cannot be indexed on "
        "this cluster"
    )


def item_reason(result: Mapping[str, Any]) -> str:
    """Why Elasticsearch rejected one document, on one line, without the document."""
    error = result.get("error")
    if isinstance(error, Mapping):
        reason = str(error.get("reason")).split(", request: [", 1)[0]  # never the document
        return " ".join(f"HTTP {result.get('status')}: {error.get('type')}: {reason}".split())
    return f"HTTP {result.get('status')}: {error or result.get('result')}"


class RetryClock:
    """The wall-clock time a batch has spent retrying, against the retry budget.

    The budget runs from the batch's first failure (``now``: a clock, ``time.monotonic`` unless
    given), so that concurrent batches do not share it; the waits double from 1 s up to
    :data:`MAX_DELAY`. ``shard_reason`` is why Elasticsearch last refused a shard's documents.
    """

    def __init__(self, budget: float, now: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.now = now
        self.since: float | None = None
        self.delay = min(1.0, budget)
        self.shard_reason: str | None = None

    def next_wait(self, problem: str) -> float:
        """The wait before the next try (logged with ``problem``).

        Raises
        ------
        SendingStopped
            When the budget is spent, saying how long the batch retried.
        """
        now = self.now()
        if self.since is None:
            self.since = now
        spent = now - self.since
        left = self.budget - spent
        if left <= 0.0:
            raise SendingStopped(f"{problem}, after retrying for {spent:.0f}s")
        wait = min(self.delay, left)
        self.delay = min(self.delay * 2, MAX_DELAY)
        logger.warning(
            "%s; retrying in %.0fs (%.0fs of the retry budget left)", problem, wait, left
        )
        return wait


def diagnosed(index: str, health: Mapping[str, Any] | None, problem: str, cause: str) -> str:
    """``problem``; or, when the cluster's ``health`` of the index is red, that with ``cause``."""
    if health is None or health.get("status") != "red":
        return problem
    unassigned = health.get("unassigned_primary_shards")
    state = f" ({unassigned} primary shard(s) unassigned)" if unassigned else ""
    return f"the index {index!r} is red{state}: {cause}"


def unreachable(error: TransportError, engine: str = "Elasticsearch") -> str:
    """Why a request got no answer, on one line: how the connection failed, in words, never a
    slice of the client's nested reprs (whose closing parentheses it cut off)."""
    detail = connection_detail(error)
    if isinstance(error, ConnectionTimeout):
        return f"{engine} did not answer in time ({detail})"
    return f"cannot reach {engine} ({detail})"
