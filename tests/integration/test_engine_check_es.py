"""The engine named is checked against the engine the cluster is, in one line (issue 42, item 2).

On the session's node (Elasticsearch, and OpenSearch in ``scripts/run-tests``' OpenSearch phase),
the *other* engine is named — ``engine=``, ``$ES_SCM_ENGINE``, ``--engine``, or a client of the
other kind — and every first request says so in one line naming both engines, before anything
is created. It used to fail on the request itself: ``--engine opensearch`` against
Elasticsearch with ``unknown query [rank_feature]`` (search) and ``Unknown Similarity type
[LegacyBM25]`` (index); ``--engine elasticsearch`` against OpenSearch was elasticsearch-py's
"not Elasticsearch (OpenSearch?)". A server that is no engine: ``tests/unit/test_engines.py``.
"""

from __future__ import annotations

import asyncio
import json
import re

import elasticsearch
import pytest

from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import SCMIndex, Searcher, client_from_env
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env
from es_scm.engines import ELASTICSEARCH, ENGINES, EngineMismatchError
from tests.support import AERO_TEXTS, one_error_line

TEXTS = AERO_TEXTS
DOCUMENTS = [{"id": str(n), "text": text} for n, text in enumerate(TEXTS)]


@pytest.fixture
def other(engine):
    """The engine the session's cluster is not."""
    return next(e for e in ENGINES.values() if e is not engine)


def mismatch(engine, other) -> str:
    """What the one line says: the cluster's engine (and version), and the one named."""
    made = f"this client was made for {other.title}"
    return rf"is {engine.title}( [\d.]+)?, not {other.title}: {made}"


def test_the_other_engine_named_is_one_line_that_says_both(
    es_client, es_url, engine, other, index_name, model, monkeypatch
):
    said = mismatch(engine, other)
    client = client_from_env(es_url, engine=other.name)
    index = SCMIndex(client, index_name, model)
    with pytest.raises(EngineMismatchError, match=said) as refused:
        index.index_documents(DOCUMENTS)
    assert "\n" not in str(refused.value)
    assert es_url.rstrip("/") in str(refused.value)
    with pytest.raises(EngineMismatchError, match=said):
        Searcher(client, index_name, model).search("boundary layer")
    with pytest.raises(EngineMismatchError, match=said):
        index.create()
    client.close()
    monkeypatch.setenv("ES_SCM_ENGINE", other.name)
    named = client_from_env(es_url)
    with pytest.raises(EngineMismatchError, match=said):
        SCMIndex(named, index_name, model).searcher.hybrid("boundary layer")
    named.close()

    async def work() -> None:
        client = async_client_from_env(es_url)
        try:
            with pytest.raises(EngineMismatchError, match=said):
                await AsyncSCMIndex(client, index_name, model).index_documents(DOCUMENTS)
        finally:
            await client.close()

    asyncio.run(work())
    assert not es_client.indices.exists(index=index_name)  # nothing was made


def test_a_client_of_the_other_kind_says_which_engine_the_cluster_is(
    es_client, es_url, engine, other, index_name, model
):
    if engine is ELASTICSEARCH:  # an opensearch-py client given to es-scm: its transport checks
        from opensearchpy import OpenSearch

        client = OpenSearch(es_url)
        with pytest.raises(EngineMismatchError, match=mismatch(engine, other)):
            SCMIndex(client, index_name, model).index_documents(DOCUMENTS)
    else:  # an elasticsearch-py client of the user's: elasticsearch-py's own product check
        client = elasticsearch.Elasticsearch(es_url)
        with pytest.raises(elasticsearch.UnsupportedProductError, match="not Elasticsearch"):
            SCMIndex(client, index_name, model).index_documents(DOCUMENTS)
    client.close()
    assert not es_client.indices.exists(index=index_name)


def test_the_command_line_with_the_other_engine_is_one_line_that_says_both(
    cli, es_client, es_url, engine, other, index_name, model, tmp_path
):
    model_dir = model.save(tmp_path / "model")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    common = ("--model", model_dir, "--index", index_name, "--es-url", es_url)
    for command in (
        ("index", *common, "--corpus", corpus, "--no-progress"),
        ("search", *common, "boundary layer"),
        ("search", *common, "--mode", "hybrid", "boundary layer"),
    ):
        code, out, err = cli(*command, "--engine", other.name)
        assert code == EXIT_ERROR, err
        assert out == ""
        line = one_error_line(err)
        assert re.search(mismatch(engine, other), line), line
        for obscure in ("rank_feature", "LegacyBM25", "OpenSearch?", "HTTP 200"):
            assert obscure not in line
    assert not es_client.indices.exists(index=index_name)
