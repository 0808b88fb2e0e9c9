"""Messages name the engine in use, and a block is named as the block it is (issue 42, item 4).

On the session's node — Elasticsearch, and OpenSearch in ``scripts/run-tests``' OpenSearch phase,
where they said "Elasticsearch error (HTTP 400)" and "cannot reach Elasticsearch". A
``read_only_allow_delete`` block set by hand was "Elasticsearch's disk is full" with "rerun"
twice in one line. (An unreachable cluster, named by its engine without a node:
``tests/unit/test_cli.py``, ``tests/unit/test_aio_ingest.py``.)
"""

from __future__ import annotations

import json
import re

import pytest

from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import SCMIndex
from es_scm.index.ingest import IngestError
from tests.support import AERO_TEXTS, one_error_line

TEXTS = AERO_TEXTS
DOCUMENTS = [{"id": str(n), "text": text} for n, text in enumerate(TEXTS)]
BLOCK = "index.blocks.read_only_allow_delete"


@pytest.fixture
def saved(model, tmp_path):
    """The model saved, and the documents as a corpus file."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    return model.save(tmp_path / "model"), corpus


def test_a_refusal_names_the_engine_that_refused(
    cli, es_client, es_url, engine, index_name, model, saved
):
    model_dir, _ = saved
    assert SCMIndex(es_client, index_name, model).index_documents(DOCUMENTS).ok
    code, out, err = cli(
        "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
        "--allow-unsafe-filters", "--filter", '{"no_such_query": {}}', "boundary layer",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert out == ""
    line = one_error_line(err)
    assert line.startswith(f"es-scm: error: {engine.title} error (HTTP 400): parsing_exception")
    other = "OpenSearch" if engine.title == "Elasticsearch" else "Elasticsearch"
    assert other not in line


def test_a_read_only_block_set_by_hand_is_named_as_the_block_and_how_to_lift_it(
    cli, es_client, es_url, index_name, model, saved
):
    model_dir, corpus = saved
    index = SCMIndex(es_client, index_name, model)
    assert index.index_documents(DOCUMENTS).ok
    es_client.indices.put_settings(index=index_name, settings={BLOCK: True})
    try:
        with pytest.raises(IngestError) as stopped:  # the API: the block, and how to lift it
            index.index_documents(DOCUMENTS, max_retries=0)
        message = str(stopped.value)
        assert message.startswith(f"the index {index_name!r} is read-only: it has the {BLOCK}")
        assert "can be set by hand" in message
        assert f'PUT {index_name}/_settings {{"{BLOCK}": null}}' in message
        assert "Elasticsearch's disk is full" not in message  # not called a full disk
        code, _, err = cli(
            "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
            "--es-url", es_url, "--no-progress",
        )  # fmt: skip
        assert code != 0
        line = one_error_line(err)
        assert f"is read-only: it has the {BLOCK} block" in line
        assert len(re.findall(r"\brerun\b", line)) == 1, line  # "rerun" once, not twice
        assert "Elasticsearch's disk is full" not in line
    finally:
        es_client.indices.put_settings(index=index_name, settings={BLOCK: None})
    assert index.index_documents(DOCUMENTS).ok  # lifted: the same run goes through
