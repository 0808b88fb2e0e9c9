"""Elasticsearch's reasons reach the user: the root cause's, wherever the answer puts it.

A red index (a primary that cannot be allocated: ``index.routing.allocation.require._name``
names no node) makes every search answer 503 ``search_phase_execution_exception`` with an empty
reason at the top and the real one ("Search rejected due to missing shards") in ``caused_by``.
"""

from __future__ import annotations

import pytest
from elasticsearch import ApiError

from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import Searcher, cluster_version
from es_scm.elastic.connection import error_reason
from es_scm.index.indices import layout_mapping
from es_scm.index.layout import IndexLayout
from es_scm.index.schema import settings_for_version

TEXTS = ["supersonic flow over a swept wing", "boundary layer transition on a flat plate"]
NO_NODE = {"index.routing.allocation.require._name": "es-scm-test-no-such-node"}


@pytest.fixture
def red_index(es_client, index_name, model) -> str:
    """An es-scm index of ``model`` whose only primary shard can be allocated nowhere."""

    version = cluster_version(es_client)
    es_client.indices.create(  # es-scm's own settings and mapping, plus the impossible filter
        index=index_name,
        settings={**settings_for_version(version), **NO_NODE},
        mappings=layout_mapping(model, IndexLayout(), version),
        wait_for_active_shards=0,
    )
    health = es_client.cluster.health(index=index_name)
    assert health["status"] == "red"
    assert health["unassigned_shards"] == 1
    return index_name  # index_name deletes it


def missing_shards(name: str) -> str:
    return f"Search rejected due to missing shards [[{name}][0]]"


def test_a_red_index_gives_the_reason_of_the_503(es_client, red_index, model):
    with pytest.raises(ApiError) as refused:
        Searcher(es_client, red_index, model).search("supersonic wing")
    assert refused.value.meta.status == 503
    reason = error_reason(refused.value)
    assert reason.startswith("search_phase_execution_exception: ")
    assert missing_shards(red_index) in reason


@pytest.mark.parametrize("mode", ["exact", "native", "hybrid"])
def test_the_command_line_says_which_shards_are_missing(
    capsys, es_url, red_index, model_dir, monkeypatch, mode
):
    monkeypatch.setenv("ES_URL", es_url)
    argv = ["search", "--model", str(model_dir), "--index", red_index, "--mode", mode, "wing"]
    assert main(argv) == EXIT_ERROR
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("es-scm: error: Elasticsearch error (HTTP 503): ")
    assert missing_shards(red_index) in lines[0]
    assert "no active copy" in lines[0]  # what it means, in es-scm's words


def test_a_deeper_cause_is_kept(es_client, index_name):
    """A document the mapping refuses: the reason, and the cause beneath it."""
    es_client.indices.create(index=index_name, mappings={"properties": {"n": {"type": "long"}}})
    with pytest.raises(ApiError) as refused:
        es_client.index(index=index_name, id="1", document={"n": "many"})
    reason = error_reason(refused.value)
    assert reason.startswith("document_parsing_exception: ")
    assert "failed to parse field [n] of type [long]" in reason
    assert 'For input string: "many"' in reason  # from caused_by
