"""A document too large to index fails alone, fast, saying its size and the limit (issue 28,
item 6), on a real node.

Two limits: the largest bulk request es-scm sends (``max_request_bytes``, 50 MiB by default,
under Elasticsearch's ``http.max_content_length``), which a document is measured against before
any request; and the node's indexing memory (``indexing_pressure.memory.limit``, 10% of the
heap), which a document needs several times its size of. A 50 MB document used to fail with its
neighbour after 37 s of retries, with ``429 es_rejected_execution_exception`` for a reason.
"""

from __future__ import annotations

import re
import time

import pytest

from es_scm.elastic import SCMIndex

WORDS = ["wing", "flow", "boundary", "layer", "shock", "supersonic", "plate", "heat"]
TEXTS = [" ".join(WORDS[(n + j) % len(WORDS)] for j in range(n % 5 + 3)) for n in range(40)]


def neighbours(n: int) -> list[dict]:
    return [{"id": f"small-{i}", "text": TEXTS[i % len(TEXTS)]} for i in range(n)]


def large(megabytes: float) -> dict:
    words = " ".join(WORDS[i % len(WORDS)] for i in range(int(megabytes * 2**20 / 6)))
    return {"id": "large", "text": words}


def test_a_document_over_the_request_limit_fails_without_a_request(es_client, index_name, model):
    documents = [*neighbours(5), large(2), *neighbours(10)[5:]]
    sent: list[int] = []
    transport = es_client.transport
    original = transport.perform_request

    def counting(method, target, *args, **kwargs):
        if target.split("?")[0].endswith("/_bulk"):
            sent.append(len(kwargs.get("body") or b""))
        return original(method, target, *args, **kwargs)

    transport.perform_request = counting
    try:
        report = SCMIndex(es_client, index_name, model).index_documents(
            documents, max_request_bytes=2**20
        )
    finally:
        transport.perform_request = original
    assert (report.indexed, report.failed) == (10, 1)
    doc_id, reason = report.failures[0]
    assert doc_id == "large"
    size = re.search(r"the document is ([\d,]+) bytes as JSON, over the 1,048,576 bytes", reason)
    assert size is not None, reason
    assert int(size.group(1).replace(",", "")) > 2 * 10**6
    assert "max_request_bytes" in reason
    assert "http.max_content_length" in reason
    assert all(body < 2**20 for body in sent)  # it never went out
    assert report.index_count == 10


@pytest.mark.slow
def test_a_document_over_the_nodes_indexing_memory_fails_alone_and_fast(
    es_client, index_name, model
):
    memory = es_client.nodes.stats(metric="indexing_pressure")["nodes"]
    limit = min(node["indexing_pressure"]["memory"]["limit_in_bytes"] for node in memory.values())
    if limit > 200 * 2**20:
        pytest.skip(f"the node's indexing memory ({limit} bytes) takes a document of this size")
    # ~32 MB of text: under es-scm's 50 MiB request, but it needs ~4 times that on the node
    documents = [*neighbours(3), large(32), *neighbours(6)[3:]]
    started = time.monotonic()
    report = SCMIndex(es_client, index_name, model).index_documents(documents)
    seconds = time.monotonic() - started
    assert (report.indexed, report.failed) == (6, 1), report.failures
    doc_id, reason = report.failures[0]
    assert doc_id == "large"
    assert reason.startswith("too large for Elasticsearch's indexing memory: the document is ")
    assert f"over the node's limit of {limit:,}" in reason
    assert "indexing_pressure.memory.limit" in reason
    assert "es_rejected_execution_exception" not in reason  # not told as overload
    assert seconds < 30  # no backoff: retrying cannot help (vectorizing it takes a few seconds)
    assert report.index_count == 6
