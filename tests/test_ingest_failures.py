"""Nothing is lost when Elasticsearch goes away in the middle of an ingestion.

A dedicated node (the local runner on its own port and data folder) is stopped while documents
are streaming in; the failed documents are counted with their reasons; after a restart, a rerun
leaves every document present exactly once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import SCMIndex
from es_scm.elastic.connection import client_from_env
from es_scm.tools.es_local import LocalElasticsearch

pytestmark = pytest.mark.integration

N_DOCUMENTS = 3000
STOP_AFTER = 1200
WORDS = [
    "wing",
    "flow",
    "boundary",
    "layer",
    "shock",
    "supersonic",
    "plate",
    "heat",
    "pressure",
    "cone",
]


def documents() -> Iterator[dict]:
    for i in range(N_DOCUMENTS):
        text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(i % 7 + 3))
        yield {"id": f"doc/{i}", "text": text, "n": i}


@pytest.fixture(scope="module")
def dedicated_node(es_url):
    """A second local node that this test may stop and restart."""
    port = int(os.environ.get("ES_SCM_FAILURE_TEST_PORT", "9250"))
    node = LocalElasticsearch(port=port, heap="512m")
    node.start()
    yield node
    node.stop()


def test_stop_in_the_middle_then_rerun(dedicated_node):
    texts = [d["text"] for d in documents()]
    model = SoftCosineModel.build(texts)  # S = identity: this test is about ingestion
    client = client_from_env(dedicated_node.url, max_retries=0, request_timeout=10)
    index = SCMIndex(client, "es-scm-test-failures", model)
    index.delete()
    index.create()

    def interrupted() -> Iterator[dict]:
        for document in documents():
            if document["n"] == STOP_AFTER:
                dedicated_node.stop()
            yield document

    report = index.index_documents(
        interrupted(), batch_size=200, max_retries=1, initial_backoff=0.1, refresh=False
    )
    assert report.failed > 0
    assert report.indexed + report.failed == N_DOCUMENTS
    assert len(report.failures) == report.failed
    assert all("connection" in reason.lower() for _, reason in report.failures)
    assert report.indexed >= STOP_AFTER - 200  # the batches before the stop went through

    dedicated_node.start()
    client.cluster.health(index=index.name, wait_for_status="yellow", timeout="60s")
    rerun = index.index_documents(documents(), batch_size=500)
    assert rerun.ok
    assert rerun.indexed == N_DOCUMENTS
    assert index.count() == N_DOCUMENTS
    ids = [d["id"] for d in documents()]
    found = client.mget(index=index.name, ids=ids, source=False)["docs"]
    assert all(doc["found"] for doc in found)
    index.delete()
