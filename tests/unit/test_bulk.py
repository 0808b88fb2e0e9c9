"""Sending a batch, decided without a server: Elasticsearch's answers recorded from a real node
(``scripts/record_es_answers.py`` → ``tests/unit/recorded/``) replayed into
:class:`~es_scm.index.bulk.BulkSending` in the order the sender would get them (the sending
itself on a real node: tests/integration/test_ingest_outcomes.py, test_large_documents.py,
nodes/test_ingest_failures.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import ApiError

from es_scm.elastic.connection import error_reason
from es_scm.index.bulk import (
    BulkRequest,
    BulkSending,
    EncodedAction,
    RetryClock,
    SendingStopped,
    counted,
    diagnosed,
    existing_ids,
    item_reason,
    oversize,
    requests_by_size,
)
from es_scm.index.lifecycle import DeleteReport
from tests.support import recorded


def actions(answer: dict[str, Any]) -> list[EncodedAction]:
    """The actions of a recorded bulk request, each as long as the one sent."""
    lines = answer["request"]["operations"]
    encoded = []
    for action, source in zip(lines[::2], lines[1::2], strict=True):
        header = json.dumps(action).encode()
        encoded.append(
            EncodedAction(action["index"]["_id"], header + b"\n" + b" " * source["source_bytes"])
        )
    return encoded


def refusal(answer: dict[str, Any]) -> tuple[int, str]:
    """A recorded whole-request refusal as the sender reads it: status, and the client's error's
    reason (:func:`~es_scm.elastic.connection.error_reason`)."""
    node = NodeConfig("http", "127.0.0.1", 9200)
    meta = ApiResponseMeta(answer["status"], "1.1", HttpHeaders(), 0.0, node)
    error = ApiError("refused", meta, answer["body"])
    return answer["status"], error_reason(error)


def sending(batch: list[EncodedAction], **options: Any) -> BulkSending:
    settings = {"max_retries": 5, "initial_backoff": 1.0, "max_backoff": 10.0}
    settings["max_request_bytes"] = 50 * 2**20
    return BulkSending(batch, "es-scm-record", **{**settings, **options})


def test_a_retried_write_answered_updated_counts_as_created():
    """The first request's answer was lost (it was applied); the lookup before the batch found
    none of its ids; the retry is answered ``updated``: the run created them."""
    answers = recorded("bulk_created")
    before = existing_ids({"docs": [{"_id": i, "found": False} for i in ("d1", "d2", "d3")]})
    batch = sending(actions(answers["created"]))
    request = batch.next_request()
    assert request is not None
    batch.unanswered(request)  # no answer: sent again, first
    again = batch.next_request()
    assert again == request
    batch.answered(again, answers["retried"]["body"])
    assert [result for _, result in batch.written] == ["updated"] * 3
    assert batch.lost
    outcome = batch.outcome(before)
    assert (outcome.created, outcome.updated, outcome.failures) == (3, 0, [])
    assert batch.next_request() is None


def test_created_updated_and_failed_from_the_lookup_and_the_answer():
    answers = recorded("bulk_updated")
    existing = existing_ids(recorded("mget_existing")["mget"]["body"])
    assert existing == {"d1": True, "d4": False, "nope": False}
    batch = sending(actions(answers["updated"]))
    request = batch.next_request()
    assert request is not None
    assert [a.doc_id for a in request.actions] == ["d1", "d4", "d2"]
    batch.answered(request, answers["updated"]["body"])
    outcome = batch.outcome(existing)
    # d1 was there; d2 not looked up (left out: Elasticsearch's answer counts); d4 rejected
    assert (outcome.created, outcome.updated) == (0, 2)
    [(doc_id, reason)] = outcome.failures
    assert doc_id == "d4"
    assert reason.startswith("HTTP 400: document_parsing_exception: [1:")
    assert "failed to parse field [metadata.n] of type [integer]" in reason
    assert batch.next_request() is None


def test_a_request_rejected_as_a_whole_is_halved_until_the_bad_document_is_alone():
    answers = recorded("bulk_refused_400")
    batch = sending(actions(answers["refused"]))
    whole = batch.next_request()
    assert whole is not None
    assert [a.doc_id for a in whole.actions] == ["L" * 600, "ok"]
    batch.refused(whole, *refusal(answers["refused"]))
    first = batch.next_request()
    assert first is not None
    assert [a.doc_id for a in first.actions] == ["L" * 600]
    batch.refused(first, *refusal(answers["first_half"]))
    second = batch.next_request()
    assert second is not None
    assert [a.doc_id for a in second.actions] == ["ok"]
    batch.answered(second, answers["second_half"]["body"])
    assert batch.next_request() is None
    outcome = batch.outcome({})
    assert (outcome.created, outcome.updated) == (1, 0)
    [(doc_id, reason)] = outcome.failures
    assert doc_id == "L" * 600
    assert "action_request_validation_exception" in reason
    assert "must be no longer than 512 bytes" in reason


def test_a_request_over_the_content_length_fails_its_document_naming_the_size():
    answer = recorded("bulk_refused_413")["too_long"]
    assert (answer["status"], answer["body"]) == (413, None)  # Elasticsearch says nothing more
    batch = sending(actions(answer))
    request = batch.next_request()
    assert request is not None
    batch.refused(request, *refusal(answer))
    [(doc_id, reason)] = batch.outcome({}).failures
    assert doc_id == "huge"
    assert f"({request.size:,} bytes as JSON)" in reason
    assert "over Elasticsearch's http.max_content_length (HTTP 413" in reason


def test_a_document_over_the_nodes_indexing_memory_is_isolated_and_fails_alone():
    """It took its neighbour down with it (429 for both, after 37 s of retries, read as
    overload); halves are sent at once, and the large one fails saying its size and the
    limit."""
    answers = recorded("bulk_oversize_429")
    both = answers["oversize"]["body"]["items"]
    assert [item["index"]["status"] for item in both] == [429, 429]
    batch = sending(actions(answers["oversize"]))
    request = batch.next_request()
    assert request is not None
    batch.answered(request, answers["oversize"]["body"])
    small = batch.next_request()
    assert small is not None
    assert [a.doc_id for a in small.actions] == ["small"]
    assert small.delay == 0.0  # no backoff: retrying cannot help the large one
    batch.answered(small, answers["small_alone"]["body"])
    large = batch.next_request()
    assert large is not None
    assert [a.doc_id for a in large.actions] == ["large"]
    batch.answered(large, answers["large_alone"]["body"])
    assert batch.next_request() is None
    outcome = batch.outcome({})
    assert outcome.created == 1
    [(doc_id, reason)] = outcome.failures
    assert doc_id == "large"
    needed, limit = oversize(item_reason(both[1]["index"])) or (0, 0)
    assert needed > limit > 0
    assert reason.startswith(
        f"too large for Elasticsearch's indexing memory: the document is {large.size:,} bytes"
    )
    assert f"needs {needed:,} bytes, over the node's limit of {limit:,}" in reason


def test_overload_is_retried_with_a_backoff_and_oversize_is_not():
    """A 429 with room on the node (or a proxy's 502) may pass: retried ``max_retries`` times,
    the waits doubling; one whose operation alone is over the limit never will."""
    overload = (
        "rejected execution of primary operation [coordinating_and_primary_bytes=9, "
        "replica_bytes=0, all_bytes=9, primary_operation_bytes=10, max_primary_bytes=100]"
    )
    assert oversize(overload) is None
    assert oversize("primary_operation_bytes=200, max_coordinating_and_primary_bytes=100") == (
        200,
        100,
    )
    assert oversize(
        "Request contains an operation of size [300] bytes, which exceeds the maximum allowed "
        "limit of [100] bytes"
    ) == (300, 100)
    rejected = {"items": [{"index": {"_id": "a", "status": 502, "error": "Bad Gateway"}}]}
    batch = sending([EncodedAction("a", b"{}\n{}\n")], max_retries=2, initial_backoff=0.5)
    request = batch.next_request()
    assert request is not None
    for attempt, delay in ((1, 0.5), (2, 1.0)):
        batch.answered(request, rejected)
        request = batch.next_request()
        assert request is not None
        assert (request.attempt, request.delay) == (attempt, delay)
    batch.answered(request, rejected)
    assert batch.next_request() is None  # max_retries spent: it fails with the reason
    assert batch.outcome({}).failures == [("a", "HTTP 502: Bad Gateway")]


def test_documents_without_a_primary_wait_then_go_again():
    answers = recorded("bulk_unavailable_503")
    batch = sending(actions(answers["unavailable"]))
    request = batch.next_request()
    assert request is not None
    batch.answered(request, answers["unavailable"]["body"])
    assert [action.doc_id for action, _ in batch.waiting] == ["r1", "r2"]
    reason = batch.waiting[0][1]
    assert reason.startswith(
        "HTTP 503: unavailable_shards_exception: [es-scm-record-red][0] primary shard is not active"
    )
    assert "request: [" not in reason  # the bulk request is left out
    assert batch.next_request() is None  # until the sender has waited
    health = answers["health"]["body"]
    problem = "shards of the index 'es-scm-record-red' have no active primary"
    assert diagnosed("es-scm-record-red", health, problem, reason) == (
        f"the index 'es-scm-record-red' is red (1 primary shard(s) unassigned): {reason}"
    )
    assert diagnosed("es-scm-record-red", {**health, "status": "yellow"}, problem, reason) == (
        problem
    )
    batch.resend_waiting()
    again = batch.next_request()
    assert again is not None
    batch.answered(again, answers["recovered"]["body"])
    assert batch.outcome({}).created == 2


def test_a_full_disk_and_a_deleted_index_stop_the_run():
    flood = recorded("bulk_flood_stage")["flood_stage"]
    batch = sending(actions(flood))
    request = batch.next_request()
    assert request is not None
    batch.answered(request, flood["body"])
    assert batch.stopping is not None
    assert batch.stopping.startswith(
        "the index 'es-scm-record' is read-only: it has the "
        "index.blocks.read_only_allow_delete block, which the cluster sets when a disk passes "
        "the flood-stage watermark"
    )
    assert "can be set by hand" in batch.stopping  # as this recording's was
    assert "PUT es-scm-record/_settings" in batch.stopping  # how to lift it
    assert "rerun" not in batch.stopping  # the command line says it, once
    assert batch.outcome({}).done == 0  # nothing written, nothing failed: both skipped

    deleted = recorded("bulk_deleted_index")["after_delete"]
    assert deleted["body"]["items"][0]["index"]["status"] == 404
    batch = sending(actions(deleted))
    request = batch.next_request()
    assert request is not None
    batch.answered(request, deleted["body"])
    assert batch.stopping is not None
    assert "the index 'es-scm-record' was deleted during the run" in batch.stopping
    assert "[require_alias] request flag is [true]" in batch.stopping
    assert "no index was made in its place" in batch.stopping


def test_what_a_lost_answer_wrote_is_found_and_counted():
    answers = recorded("bulk_updated")
    batch = sending(actions(answers["updated"]))
    request = batch.next_request()
    assert request is not None
    batch.unanswered(request)
    existing = {"d1": True, "d4": False, "d2": False}
    assert batch.pending_ids(existing) == ["d4", "d2"]  # d1 was there: its write is no news
    batch.reconcile(["d2"])  # the lookup after the stop found d2, not d4
    outcome = batch.outcome(existing)
    assert (outcome.created, outcome.updated, outcome.failures) == (1, 0, [])


def test_requests_are_cut_by_size_in_order():
    sizes = [40, 40, 40, 200, 10]
    batch = [EncodedAction(str(n), b"x" * size) for n, size in enumerate(sizes)]
    requests = requests_by_size(batch, 100)
    assert [[a.doc_id for a in request.actions] for request in requests] == [
        ["0", "1"],
        ["2"],
        ["3"],
        ["4"],
    ]
    assert BulkRequest(tuple(batch)).halves()[0].actions == tuple(batch[:2])


def test_a_second_copy_in_a_batch_is_an_update():
    outcome = counted([("a", "created"), ("a", "updated"), ("b", "updated")], [], {"b": False})
    assert (outcome.created, outcome.updated) == (2, 1)


def test_the_retry_budget_is_wall_clock_time_from_the_first_failure():
    times = iter([100.0, 101.0, 103.0, 107.0, 110.0])
    clock = RetryClock(10.0, now=lambda: next(times))
    assert [clock.next_wait("lost") for _ in range(4)] == [1.0, 2.0, 4.0, 3.0]  # the last: left
    with pytest.raises(SendingStopped, match=r"^lost, after retrying for 10s$"):
        clock.next_wait("lost")


def test_deletions_are_counted_id_by_id():
    answer = recorded("bulk_delete")["deleted"]
    report = DeleteReport()
    for item in answer["body"]["items"]:
        result = item["delete"]
        report.record(200 <= result["status"] < 300, item)
    assert (report.deleted, report.not_found, report.failed) == (1, 1, 0)
    assert report.not_found_ids == ["d9"]


def test_the_messages_name_the_engine_written_to_and_read_whole():
    """On OpenSearch they said "Elasticsearch"; and a retry's reason was the client's nested
    reprs cut at 200 characters, its closing parentheses with it (issue 42, item 4)."""
    from elastic_transport import ConnectionError as TransportConnectionError

    from es_scm.index.bulk import unreachable

    answers = recorded("bulk_oversize_429")
    batch = sending(actions(answers["oversize"]), engine="OpenSearch")
    for answer in ("oversize", "small_alone", "large_alone"):
        request = batch.next_request()
        assert request is not None
        batch.answered(request, answers[answer]["body"])
    [(_, reason)] = batch.outcome({}).failures
    assert reason.startswith("too large for OpenSearch's indexing memory: the document is ")
    # as elastic_transport nests urllib3's error: its text is the first error's repr-like form
    urllib3 = OSError(
        "<urllib3.connection.HTTPConnection object at 0x7f3a2c1d5e10>: Failed to establish a "
        "new connection: [Errno 111] Connection refused"
    )
    inner = TransportConnectionError(str(urllib3), errors=(urllib3,))
    nested = TransportConnectionError(str(inner), errors=(inner,))
    assert "ConnectionError(" in str(nested)
    assert unreachable(nested, "OpenSearch") == "cannot reach OpenSearch (connection refused)"
    odd = OSError("Odd(" + "x " * 150 + ")")
    said = unreachable(TransportConnectionError(str(odd), errors=(odd,)), "Elasticsearch")
    assert said.startswith("cannot reach Elasticsearch (")
    assert said.count("(") == said.count(")")  # whole inside its parentheses
