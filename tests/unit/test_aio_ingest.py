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
    from es_scm.index.indices import WriteTarget
    from es_scm.index.ingest import IngestError
    from es_scm.index.layout import IngestOptions
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


@pytest.mark.parametrize("engine", ["elasticsearch", "opensearch"])
def test_a_lost_cluster_is_named_by_its_engine_in_a_whole_line(
    engine, cranfield_sample_model, cranfield_sample
):
    """On OpenSearch the line said "cannot reach Elasticsearch", and held the client's nested
    reprs cut at 200 characters, without their closing parentheses (issue 42, item 4)."""
    from es_scm.elastic._async.ingest import AsyncIngestion
    from es_scm.elastic._sync.ingest import Ingestion
    from es_scm.elastic.aio import async_client_from_env
    from es_scm.elastic.connection import client_from_env
    from es_scm.engines import ENGINES
    from es_scm.index.indices import WriteTarget
    from es_scm.index.ingest import IngestError
    from es_scm.index.layout import IngestOptions
    from es_scm.tools.node import port_from_env

    url = f"http://127.0.0.1:{port_from_env('ES_SCM_DEAD_TEST_PORT', offset=99)}"
    options = IngestOptions(retry_budget=0.5)
    target = WriteTarget("es-scm-nowhere", "es-scm-nowhere.es-scm-writer-0", guarded=True)
    said = (
        rf"^cannot reach {ENGINES[engine].title} \(connection refused\), after retrying for \d+s$"
    )

    client = client_from_env(url, engine=engine)
    ingestion = Ingestion(
        client, target, cranfield_sample_model, options, expansion="query", fresh=True
    )
    with pytest.raises(IngestError, match=said):
        ingestion.run(cranfield_sample[:20])
    client.close()

    async def ingest() -> None:
        client = async_client_from_env(url, engine=engine)
        try:
            ingestion = AsyncIngestion(
                client, target, cranfield_sample_model, options, expansion="query", fresh=True
            )
            with pytest.raises(IngestError, match=said):
                await ingestion.run(cranfield_sample[:20])
        finally:
            await client.close()

    asyncio.run(ingest())
