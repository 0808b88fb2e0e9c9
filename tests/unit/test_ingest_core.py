"""Ingestion's pure core and its concurrency primitives, without a server: a batch checked,
vectorized and encoded once (its size known before any request), its outcome settled into the
report once, and the waits that a stop cuts short (ingestion on a real node:
tests/integration/test_ingest_outcomes.py, test_reliability.py, test_signals.py)."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time

import pytest

from es_scm import SoftCosineModel
from es_scm.documents import InvalidRecord
from es_scm.elastic.concurrency import AsyncStop, AsyncWorkers, Stop, Workers, batches
from es_scm.index.bulk import BatchOutcome
from es_scm.index.ingest import (
    Batch,
    BatchPreparer,
    IngestReport,
    settle,
    settle_first,
    skip,
)
from es_scm.index.schema import VECTOR_FIELD

TEXTS = ["boundary layer on a swept wing", "supersonic flow past a cone", "heat transfer"]
TARGET = "news.es-scm-writer-0123456789abcdef"


@pytest.fixture(scope="module")
def preparer_of():
    model = SoftCosineModel.build(TEXTS)

    def preparer(max_request_bytes: int = 2**20) -> BatchPreparer:
        return BatchPreparer(
            model,
            TARGET,
            expansion="query",
            dumps=lambda value: json.dumps(value, allow_nan=False).encode(),
            max_request_bytes=max_request_bytes,
        )

    return preparer


def test_a_batch_is_encoded_once_as_the_bulk_lines(preparer_of):
    batch = preparer_of().prepare([{"id": "a", "text": TEXTS[0], "kind": "paper"}])
    [action] = batch.actions
    header, source, end = action.lines.split(b"\n")
    assert end == b""
    assert json.loads(header) == {"index": {"_index": TARGET, "_id": "a"}}
    stored = json.loads(source)
    assert stored["text"] == TEXTS[0]
    assert stored["metadata"] == {"kind": "paper"}
    vector = stored[VECTOR_FIELD.split(".")[0]][VECTOR_FIELD.split(".")[1]]
    assert math.isclose(sum(value * value for value in vector.values()), 1.0)  # S = I: ‖y'‖ = 1
    assert action.size == len(action.lines)


def test_a_document_larger_than_a_request_fails_before_any_request(preparer_of):
    large = {"id": "large", "text": " ".join(TEXTS * 2000)}
    batch = preparer_of(max_request_bytes=10_000).prepare([{"id": "a", "text": "wing"}, large])
    assert [action.doc_id for action in batch.actions] == ["a"]
    [(doc_id, reason)] = batch.invalid
    assert doc_id == "large"
    assert reason.startswith("the document is ")
    assert "bytes as JSON, over the 10,000 bytes a bulk request may carry" in reason
    assert "max_request_bytes" in reason
    assert "it was not sent" in reason


def test_bad_documents_fail_alone_with_their_reason(preparer_of):
    batch = preparer_of().prepare(
        [
            InvalidRecord("corpus.jsonl, line 7", "invalid JSON"),
            {"text": "no id"},
            {"id": "L" * 600, "text": "wing"},
            {"id": "nan", "text": "wing", "price": math.nan},
            {"id": "ok", "text": "wing"},
        ]
    )
    assert [action.doc_id for action in batch.actions] == ["ok"]
    reasons = dict(batch.invalid)
    assert reasons["corpus.jsonl, line 7"] == "invalid JSON"
    assert "needs an 'id'" in reasons["#1"]
    assert reasons["L" * 600] == "the id is 600 bytes; Elasticsearch allows 512"
    assert reasons["nan"].startswith("metadata field 'price' is NaN")
    assert batch.read == 5


def test_duplicates_across_batches_are_known_before_sending(preparer_of):
    preparer = preparer_of()
    first = preparer.prepare([{"id": "a", "text": "wing"}, {"id": "b", "text": "cone"}])
    second = preparer.prepare([{"id": "b", "text": "heat"}, {"id": "c", "text": "x"}])
    third = preparer.prepare([{"id": "c", "text": "y"}, {"id": "c", "text": "z"}])
    assert (first.duplicates, second.duplicates, third.duplicates) == ([], ["b"], ["c", "c"])
    assert second.written_before == {"b"}
    assert third.written_before == {"c"}  # the second "c" of the batch is its own
    # a batch sharing an id with one in flight waits for it: the later copy is written last
    assert settle_first([first, third], second) == 2  # up to the last that shares one
    assert settle_first([first], second) == 1
    assert settle_first([first, second], third) == 2
    assert settle_first([third], first) == 0


def test_a_batch_is_settled_once_and_what_was_not_written_is_skipped(preparer_of):
    preparer = preparer_of()
    batch = preparer.prepare(
        [{"id": "a", "text": "wing"}, {"id": "b", "text": "zzz"}, {"id": "L" * 600, "text": "x"}]
    )
    report = IngestReport()
    outcome = BatchOutcome(created=1, failures=[("b", "HTTP 400: mapper_parsing_exception")])
    settle(report, batch, outcome)
    settle(report, batch, outcome)  # once
    assert (report.created, report.failed, report.skipped) == (1, 2, 0)
    unsent = preparer.prepare([{"id": "c", "text": "wing"}, {"id": "d", "text": "cone"}])
    skip(report, unsent, unread=[{"id": "e"}, {"id": "f"}, {"id": "g"}])
    assert (report.created, report.failed, report.skipped) == (1, 2, 5)
    stopped = preparer.prepare([{"id": "h", "text": "wing"}, {"id": "i", "text": "cone"}])
    settle(report, stopped, BatchOutcome(updated=1))  # a stop cut the batch short
    assert (report.indexed, report.skipped) == (2, 6)
    assert report.empty == 0  # "zzz", no term of the model, failed: it is not stored empty
    assert report.tokens > 0


def test_empty_documents_are_counted_when_stored():
    report = IngestReport()
    batch = Batch([], empty_ids=["x", "y"])
    settle(report, batch, BatchOutcome(created=0, failures=[("y", "HTTP 400: rejected")]))
    assert (report.empty, report.empty_ids) == (1, ["x"])


def test_a_stop_cuts_a_wait_short_on_both_sides():
    stop = Stop()
    threading.Timer(0.1, stop.set).start()
    started = time.monotonic()
    assert stop.wait(30) is True
    assert time.monotonic() - started < 5
    assert Stop().wait(0.01) is False

    async def waited() -> tuple[bool, float]:
        stop = AsyncStop()
        asyncio.get_running_loop().call_later(0.1, stop.set)
        started = time.monotonic()
        return await stop.wait(30), time.monotonic() - started

    cut, seconds = asyncio.run(waited())
    assert cut is True
    assert seconds < 5


def test_a_stop_set_from_the_thread_that_holds_it_does_not_deadlock():
    """A signal handler runs in the main thread, which may be inside the stop's own lock."""
    stop = Stop()
    with stop._condition:  # the main thread inside Stop.set(), say, when the signal comes
        stop.set()
    assert stop.is_set()


def test_the_sync_workers_are_a_pool_kept_for_the_run():
    names: list[str] = []
    with Workers[int](2) as workers:
        handles = [workers.start(0, lambda: names.append(threading.current_thread().name))]
        handles += [workers.start(n, time.sleep, 0.01) for n in range(1, 20)]
        handles += [workers.start(20, lambda: names.append(threading.current_thread().name))]
        assert [key for _, key in workers.running()][:2] == [0, 1]
        for handle in handles:
            workers.join(handle)
            workers.done(handle)
        assert len(workers) == 0
    assert set(names) <= {"es-scm-bulk-0", "es-scm-bulk-1"}  # no thread per batch


def test_cancelling_the_run_does_not_cancel_a_request_in_flight():
    async def run() -> tuple[bool, bool]:
        workers = AsyncWorkers[str](1)
        request = workers.start("batch", asyncio.sleep, 0.2, "written")
        joiner = asyncio.ensure_future(workers.join(request))
        await asyncio.sleep(0.05)
        joiner.cancel()  # the run is cancelled while it waits
        with pytest.raises(asyncio.CancelledError):
            await joiner
        result = await workers.join(request)  # the request went on, and is waited for
        return request.cancelled(), result == "written"

    assert asyncio.run(run()) == (False, True)


def test_documents_are_read_in_batches():
    assert list(batches(iter(range(7)), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(TypeError, match="async iterable of documents needs the asyncio API"):
        list(batches(_AsyncDocuments(), 2))


class _AsyncDocuments:
    def __aiter__(self) -> _AsyncDocuments:
        return self

    async def __anext__(self) -> dict:
        raise StopAsyncIteration
