"""The asyncio ingester without a server: a lost cluster is waited out within the retry budget,
then the run stops and says what it did (the asyncio API on a real node:
tests/integration/test_aio_es.py)."""

from __future__ import annotations

import asyncio

import pytest

from tests.support import with_async_client


def test_the_async_ingester_waits_out_a_lost_cluster_within_its_budget(
    cranfield_sample_model, cranfield_sample
):
    from es_scm.elastic._async.ingest import AsyncIngestion
    from es_scm.elastic.indices import WriteTarget
    from es_scm.elastic.ingest import IngestError
    from es_scm.elastic.requests import IngestOptions
    from es_scm.tools.node import port_from_env

    # a port of this checkout's range where no node runs: every connection is refused
    url = f"http://127.0.0.1:{port_from_env('ES_SCM_DEAD_TEST_PORT', offset=99)}"

    async def ingest(client):
        options = IngestOptions(retry_budget=1.5)
        target = WriteTarget("es-scm-nowhere", "es-scm-nowhere.es-scm-writer-0", guarded=True)
        ingestion = AsyncIngestion(
            client, target, cranfield_sample_model, options, expansion="query", fresh=True
        )
        started = asyncio.get_running_loop().time()
        with pytest.raises(IngestError) as stopped:
            await ingestion.run(cranfield_sample[:50])
        return stopped.value, asyncio.get_running_loop().time() - started

    error, seconds = with_async_client(url, ingest)
    assert str(error).startswith("cannot reach Elasticsearch (")
    assert str(error).endswith("after retrying for 2s")  # 1.5 s and a little, rounded
    assert (error.report.indexed, error.report.skipped) == (0, 50)
    assert 1.5 <= seconds < 10
