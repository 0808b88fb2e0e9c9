"""Sending one batch of bulk actions: the plan that the sync and the asyncio ingesters both run.

The plan (:meth:`BulkPlan.send`) is a generator of steps (:mod:`es_scm.elastic.calls`:
:class:`~es_scm.elastic.calls.Bulk`, :class:`~es_scm.elastic.calls.Wait`,
:class:`~es_scm.elastic.calls.Call`), carried out by either runtime. For a batch:

1. In an index that held documents before the run, it looks up which of the batch's ids the
   index holds already (``mget``, no source), so that the report counts a document as
   ``created`` when its id was not there before this run wrote it, and as ``updated`` when it
   was: a write that is retried (after a lost connection, or by Elasticsearch after a primary
   moved) is answered ``updated``, though it created the document. An index that the run
   created holds no id but the run's own, so nothing is looked up. When the ids cannot be looked
   up (a key without read rights, shards unavailable), what Elasticsearch answered counts.
2. It sends the actions with the official client's ``helpers.streaming_bulk``, which retries
   documents rejected with 429, 502 or 504 itself. A request rejected as a whole for its content
   (400, 413, or a document the serializer refuses) is split in halves until the bad documents
   are isolated; they fail alone.
3. A request that cannot connect to a node goes on to another at once (the client's node pool);
   it waits out what may pass: a cluster that cannot be reached, and documents whose shard has
   no active primary (503: the index is red, or a primary is moving). Elasticsearch waits
   :data:`SHARD_WAIT` for a primary before answering, well within the client's request timeout,
   so the cause is Elasticsearch's answer and not a timeout; the cluster's health then names it
   (``the index 'news' is red (1 primary shard unassigned)``). Each wait is logged with that
   cause and what is left of the retry budget; the budget is wall-clock time since the batch's
   first failure, so concurrent batches do not share it. When it is spent the run stops
   (:class:`SendingStopped`) with the cause and the time really spent retrying. A request whose
   answer was lost may have been applied: when the batch stops after one, its pending ids are
   looked up once, and those the index holds now and did not before count as created.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import ApiError, ConnectionTimeout, SerializationError, TransportError

from es_scm.elastic.calls import Bulk, Call, Plan, Wait
from es_scm.elastic.connection import error_reason
from es_scm.elastic.requests import IngestOptions

__all__ = [
    "BULK_RETRIED_STATUSES",
    "SHARD_WAIT",
    "BatchOutcome",
    "BulkPlan",
    "SendingStopped",
]

logger = logging.getLogger(__name__)

BULK_RETRIED_STATUSES = (429, 502, 504)  # streaming_bulk retries these with its backoff
SHARD_WAIT = "10s"  # how long Elasticsearch waits for a shard's primary before answering 503
MAX_DELAY = 10.0  # the longest wait between two tries of a batch
_UNAVAILABLE = 503
_SPLITTABLE = (400, 413)  # a whole request rejected for what some of its documents hold
_FLOOD_STAGE = "flood-stage watermark"
_NO_RETRY = {"max_retries": 0, "retry_on_status": ()}  # the plan retries, with its budget
# a bulk request that cannot connect goes on to another node at once (a dead node of a cluster
# costs no wait); a timeout or a lost answer is the plan's, which knows it may have been applied
_FAILOVER = {"max_retries": 2, "retry_on_status": (), "retry_on_timeout": False}
# a question the plan asks once, to any node that answers (a dead one is passed over)
_ONE_TRY = {"max_retries": 2, "retry_on_status": (), "request_timeout": 10}


class SendingStopped(Exception):
    """A batch could not be sent and the run must stop (cluster lost, index red, disk full);
    ``outcome`` is what became of the batch's documents before (None: nothing)."""

    def __init__(self, message: str, outcome: BatchOutcome | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome


@dataclass
class BatchOutcome:
    """What became of a batch's documents: created, updated, failed (id, reason)."""

    created: int = 0
    updated: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Answers:
    """Elasticsearch's answers to a request: the documents it stored (id, ``created`` or
    ``updated``), those it rejected (id, reason), and those whose shard had no primary."""

    written: list[tuple[str, str]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    unavailable: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: Answers) -> Answers:
        return Answers(
            self.written + other.written,
            self.failures + other.failures,
            self.unavailable + other.unavailable,
        )

    def record(self, ok: bool, item: Mapping[str, Any]) -> None:
        """One of ``streaming_bulk``'s per-document results (a full disk stops the run)."""
        result = next(iter(item.values()))
        doc_id = str(result.get("_id"))
        if ok:
            self.written.append((doc_id, str(result.get("result"))))
            return
        reason = _item_reason(result)
        if _FLOOD_STAGE in reason:
            raise SendingStopped(
                "Elasticsearch's disk is full (flood-stage watermark; the index is read-only): "
                "free disk space, then rerun (document ids make reruns complete the index)"
            )
        if result.get("status") == _UNAVAILABLE:
            self.unavailable.append((doc_id, reason))
        else:
            self.failures.append((doc_id, reason))


class _Unavailable(Exception):
    """Elasticsearch answered a whole request with 503 (no master, a cluster block)."""


class _Retrying:
    """The wall-clock time a batch has spent retrying, against the retry budget."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.since: float | None = None
        self.delay = min(1.0, budget)
        self.shard_reason: str | None = None  # why Elasticsearch last refused a shard's documents

    def next_wait(self, problem: str) -> float:
        """The wait before the next try (logged with ``problem``); stop when the budget is spent."""
        now = time.monotonic()
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


class BulkPlan:
    """The plan of sending a batch into ``index`` (see the module docstring).

    Parameters
    ----------
    index : str
        The index (or write alias).
    options : IngestOptions
        The retries (``max_retries``, ``initial_backoff``, ``max_backoff`` for what
        ``streaming_bulk`` retries; ``retry_budget``: seconds a batch keeps trying after its first
        failure before the run stops).
    stop : threading.Event
        Set when the run stops: a waiting plan gives up at once.
    fresh : bool
        Whether the run created the index: it then holds only the ids that the run's earlier
        batches wrote, and nothing is looked up (see the module docstring).
    """

    def __init__(
        self, index: str, options: IngestOptions, stop: threading.Event, fresh: bool
    ) -> None:
        self.index = index
        self.options = options
        self.stop = stop
        self.fresh = fresh
        self.may_look_up = True  # False once Elasticsearch refused a lookup (no read right)

    def send(
        self, actions: list[dict], written_before: frozenset[str], *, refresh: bool = False
    ) -> Plan[BatchOutcome]:
        """Bulk ``actions`` (of which the run wrote ``written_before`` already), refreshing the
        shards written if ``refresh``; return what became of each document."""
        if not actions:
            return BatchOutcome()
        retrying = _Retrying(self.options.retry_budget)
        existing: dict[str, bool] = {}
        answers = Answers()
        pending = actions
        lost = False
        try:
            if self.fresh:
                existing = {action["_id"]: action["_id"] in written_before for action in actions}
            else:
                existing = yield from self._existing(actions, retrying)
            while True:
                self._check_stop()
                try:
                    answered = yield from self._split(pending, refresh)
                except TransportError as error:  # the request may have been applied
                    lost = True
                    yield from self._wait(retrying, _unreachable(error))
                    continue
                except _Unavailable as error:  # the request may have been applied in part
                    lost = True
                    problem = f"Elasticsearch is unavailable ({error})"
                    yield from self._wait(retrying, problem, str(error))
                    continue
                answers = answers.add(Answers(answered.written, answered.failures))
                if not answered.unavailable:
                    return _counted(answers, existing)
                waiting = {doc_id for doc_id, _ in answered.unavailable}
                pending = [action for action in pending if action["_id"] in waiting]
                reason = answered.unavailable[0][1]
                retrying.shard_reason = reason
                problem = f"shards of the index {self.index!r} have no active primary ({reason})"
                yield from self._wait(retrying, problem, reason)
        except SendingStopped as stop:  # count what was written before the stop
            if lost:
                answers = answers.add((yield from self._applied(pending, answers, existing)))
            stop.outcome = _counted(answers, existing)
            raise

    def _applied(
        self, pending: list[dict], answers: Answers, existing: Mapping[str, bool]
    ) -> Plan[Answers]:
        """After a request whose answer was lost (it may have been applied), the pending
        documents that the index holds now and did not before: this run wrote them."""
        answered = {doc_id for doc_id, _ in answers.written}
        ids = [
            a["_id"]
            for a in pending
            if a["_id"] not in answered and not existing.get(a["_id"], True)
        ]
        if not ids:
            return Answers()
        lookup = Call("mget", {"index": self.index, "ids": ids, "source": False}, _ONE_TRY)
        try:
            response = yield lookup
        except (ApiError, TransportError):  # not known: counted as skipped
            return Answers()
        return Answers(
            written=[(doc["_id"], "created") for doc in response["docs"] if doc.get("found")]
        )

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise SendingStopped("stopped")

    def _existing(
        self, actions: list[dict], retrying: _Retrying
    ) -> Generator[Any, Any, dict[str, bool]]:
        """Which of the actions' ids the index holds now: id → found (left out: unknown)."""
        if not self.may_look_up:
            return {}
        ids = list(dict.fromkeys(action["_id"] for action in actions))
        lookup = Call("mget", {"index": self.index, "ids": ids, "source": False}, _NO_RETRY)
        while True:
            self._check_stop()
            try:
                response = yield lookup
            except TransportError as error:
                yield from self._wait(retrying, _unreachable(error))
                continue
            except ApiError as error:  # e.g. a key that may write but not read
                logger.debug("cannot look the ids up (%s): counting Elasticsearch's answers", error)
                self.may_look_up = error.meta.status not in (401, 403)
                return {}
            return {doc["_id"]: doc["found"] for doc in response["docs"] if "found" in doc}

    def _bulk(self, actions: list[dict], refresh: bool) -> Plan[Answers]:
        """One bulk request of ``actions`` through the client's ``streaming_bulk``."""
        # Unreachable clusters and unavailable shards are the plan's (with a time budget), the
        # other statuses streaming_bulk's; the transport only moves a request that cannot
        # connect to another node (at most twice, at once), so no waiting loop nests in another.
        arguments = {
            "actions": actions,
            "chunk_size": len(actions),
            "max_chunk_bytes": 50 * 1024 * 1024,
            "raise_on_error": False,
            "raise_on_exception": True,
            "max_retries": self.options.max_retries,
            "initial_backoff": self.options.initial_backoff,
            "max_backoff": self.options.max_backoff,
            "retry_on_status": BULK_RETRIED_STATUSES,
            "timeout": SHARD_WAIT,
        }
        if refresh:
            arguments["refresh"] = "true"
        answers = Answers()
        yield Bulk(arguments, answers.record, _FAILOVER)
        return answers

    def _split(self, actions: list[dict], refresh: bool) -> Plan[Answers]:
        """Send; when the whole request is rejected for its content, send each half alone."""
        try:
            return (yield from self._bulk(actions, refresh))
        except (SerializationError, ApiError) as error:
            status = getattr(getattr(error, "meta", None), "status", None)
            if isinstance(error, ApiError) and status == _UNAVAILABLE:
                raise _Unavailable(f"HTTP 503: {error_reason(error)}") from None
            if isinstance(error, ApiError) and status not in _SPLITTABLE:
                reason = f"HTTP {status}: {error_reason(error)}"
                return Answers(failures=[(action["_id"], reason) for action in actions])
            if len(actions) == 1:
                return Answers(failures=[(actions[0]["_id"], _rejected(error))])
            middle = len(actions) // 2
            first = yield from self._split(actions[:middle], refresh)
            return first.add((yield from self._split(actions[middle:], refresh)))

    def _wait(
        self, retrying: _Retrying, problem: str, cause: str | None = None
    ) -> Generator[Any, Any, None]:
        """Wait before the next try, saying why (stop when the retry budget is spent)."""
        # a red index is named with Elasticsearch's reason, even when this try met a dead node
        cause = retrying.shard_reason or cause or problem
        wait = retrying.next_wait((yield from self._diagnose(problem, cause)))
        if (yield Wait(wait, self.stop)):
            raise SendingStopped("stopped")

    def _diagnose(self, problem: str, cause: str) -> Generator[Any, Any, str]:
        """``problem``; or, when the cluster answers that the index is red, that with ``cause``."""
        health_call = Call("cluster.health", {"index": self.index}, _ONE_TRY)
        try:
            health = yield health_call
        except (ApiError, TransportError):
            return problem
        if health.get("status") != "red":
            return problem
        unassigned = health.get("unassigned_primary_shards")
        state = f" ({unassigned} primary shard(s) unassigned)" if unassigned else ""
        return f"the index {self.index!r} is red{state}: {cause}"


def _counted(answers: Answers, existing: Mapping[str, bool]) -> BatchOutcome:
    """Created or updated, from whether the index held each id before the batch was written."""
    outcome = BatchOutcome(failures=answers.failures)
    stored: set[str] = set()
    for doc_id, result in answers.written:
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


def _rejected(error: Exception) -> str:
    """Why a single document's request was rejected, without the document (nor its vector)."""
    if isinstance(error, ApiError):
        return error_reason(error)
    causes = getattr(error, "errors", ()) or (error,)
    return f"cannot be serialized as JSON ({type(causes[0]).__name__})"


def _item_reason(result: Mapping[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, Mapping):
        reason = str(error.get("reason")).split(", request: [", 1)[0]  # never the document
        return f"HTTP {result.get('status')}: {error.get('type')}: {reason}"
    return f"HTTP {result.get('status')}: {error}"


def _unreachable(error: TransportError) -> str:
    if isinstance(error, ConnectionTimeout):
        return f"Elasticsearch did not answer in time ({_short(error)})"
    return f"cannot reach Elasticsearch ({_short(error)})"


def _short(error: BaseException) -> str:
    return " ".join(str(error).split())[:200]
