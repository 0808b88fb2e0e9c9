"""A full disk stops an ingestion with a clear error, and a rerun completes the index.

The runner keeps Elasticsearch's disk watermarks on. Here the side node (conftest.py; port
``$ES_SCM_FAILURE_TEST_PORT``, default ``$ES_SCM_PORT`` + 50) is told that it needs more free
space than any disk has (absolute watermarks of 100 TB; disk usage read every 10 s, the shortest
interval allowed), so it goes past the flood stage and makes its indices read-only; then the
watermarks are reset and Elasticsearch lifts the block.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import SCMIndex
from es_scm.elastic.connection import client_from_env
from es_scm.index.ingest import IngestError

INDEX = "es-scm-test-disk-full"
N_DOCUMENTS = 2000
BEFORE = 500  # documents indexed before the disk "fills"
WORDS = ["wing", "flow", "boundary", "layer", "shock", "supersonic", "plate", "heat", "cone"]
WATERMARKS = ("low", "high", "flood_stage")
BLOCK = "index.blocks.read_only_allow_delete"


def documents() -> Iterator[dict]:
    for i in range(N_DOCUMENTS):
        yield {"id": f"doc/{i}", "text": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(5))}


def disk_settings(value: str | None) -> dict:
    """The three watermarks at ``value`` (None: Elasticsearch's defaults)."""
    prefix = "cluster.routing.allocation.disk.watermark."
    return {prefix + mark: value for mark in WATERMARKS}


@pytest.fixture(scope="module")
def client(side_node):
    """A client of the side node (conftest.py), whose disk settings are reset after."""
    side_node.start()
    client = client_from_env(side_node.url, request_timeout=30)
    yield client
    client.cluster.put_settings(persistent=disk_settings(None))
    client.close()


def read_only(client) -> bool:
    settings = client.indices.get_settings(index=INDEX, name=BLOCK, flat_settings=True)
    return settings.get(INDEX, {}).get("settings", {}).get(BLOCK) == "true"


def wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def test_a_full_disk_stops_the_ingestion_and_a_rerun_completes_it(client):
    model = SoftCosineModel.build(d["text"] for d in documents())
    index = SCMIndex(client, INDEX, model)
    index.create()
    first = list(documents())[:BEFORE]
    assert index.index_documents(first).ok

    client.cluster.put_settings(persistent=disk_settings("100tb"))
    assert wait_for(lambda: read_only(client)), "the flood-stage block never came"
    with pytest.raises(IngestError) as stopped:
        index.index_documents(documents(), max_retries=1, initial_backoff=0.1, retry_budget=5)
    message = str(stopped.value)
    assert f"the index {INDEX!r} is read-only: it has the {BLOCK} block" in message
    assert "flood-stage watermark" in message
    report = stopped.value.report
    assert report.stopped == message
    assert report.indexed == 0  # the index is read-only
    assert report.skipped > 0
    assert report.failed == 0  # nothing is lost for good: a rerun writes it
    assert report.index_count == BEFORE

    client.cluster.put_settings(persistent=disk_settings(None))
    assert wait_for(lambda: not read_only(client)), "the flood-stage block was not released"
    rerun = index.index_documents(documents())
    assert rerun.ok, (rerun.summary(), rerun.failures[:3])
    assert rerun.indexed == N_DOCUMENTS
    assert rerun.index_count == N_DOCUMENTS
    ids = [d["id"] for d in documents()]
    found = client.mget(index=INDEX, ids=ids, source=False)["docs"]
    assert all(doc["found"] for doc in found)
    index.delete()
