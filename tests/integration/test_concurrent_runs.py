"""Two runs write one new index (issue 28, item 1), on a real node.

Run A (only bad records, ``--on-error skip``) creates index X and indexes nothing; run B writes
into X meanwhile. A used to count 0 and delete X, and B's next bulk requests made Elasticsearch
create X again with a dynamic mapping and no es-scm marker (``indexed 48 … failed 4952``, later
runs refused X). Now an index is never deleted by es-scm on its own, and es-scm's bulk requests
go to the index's write alias with ``require_alias``: an index deleted under a run stops the run,
and nothing is created in its place.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from es_scm.cli.errors import EXIT_PARTIAL
from es_scm.elastic import IngestError, SCMIndex
from tests.support import REPO_ROOT

WORDS = ["wing", "flow", "boundary", "layer", "shock", "supersonic", "plate", "heat"]
TEXTS = [" ".join(WORDS[(n + j) % len(WORDS)] for j in range(n % 5 + 3)) for n in range(40)]


def documents(n: int, start: int = 0) -> list[dict]:
    return [{"id": f"b-{i}", "text": TEXTS[i % len(TEXTS)], "n": i} for i in range(start, n)]


def start_cli(*argv: object) -> subprocess.Popen[str]:
    """``es-scm`` in a process of its own (this checkout's package first)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "es_scm.cli", *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def wait_until_created(es_client, index: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not es_client.indices.exists(index=index):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "run A did not create the index"
        time.sleep(0.02)


def test_a_run_that_indexed_nothing_leaves_the_index_to_the_run_writing_it(
    es_client, es_url, index_name, model, tmp_path
):
    model_dir = model.save(tmp_path / "model")
    bad = tmp_path / "bad.jsonl"  # only bad records: A indexes nothing (and takes its time)
    bad.write_text("{not json\n" * 3000, encoding="utf-8")
    run_a = start_cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", bad,
        "--on-error", "skip", "--batch-size", "1", "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    wait_until_created(es_client, index_name, run_a)
    finished: list[tuple[str, str]] = []

    def run_b_documents() -> Iterator[dict]:
        # B checked the model of A's new index; it writes once A has finished (A used to delete
        # the index then, having counted nothing in it)
        finished.append(run_a.communicate(timeout=300))
        yield from documents(5000)

    report = SCMIndex(es_client, index_name, model).index_documents(
        run_b_documents(), batch_size=250
    )
    assert (report.created, report.failed, report.skipped) == (5000, 0, 0), report.failures[:3]
    assert report.index_count == 5000
    mapping = es_client.indices.get_mapping(index=index_name)[index_name]["mappings"]
    assert mapping["_meta"]["es_scm"]["model_id"] == model.model_id  # es-scm's, not a dynamic one
    out, err = finished[0]
    assert run_a.returncode == EXIT_PARTIAL, err
    assert "indexed 0 (created 0, updated 0), failed 3000" in out
    assert f"kept the index '{index_name}' that this run created, though this run indexed" in err


def test_writes_into_a_deleted_index_stop_the_run_and_create_nothing(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.create()
    deleted = threading.Event()

    def documents_while_deleted() -> Iterator[dict]:
        yield from documents(1000)
        es_client.indices.delete(index=index_name)  # by hand, or by another run's --recreate
        deleted.set()
        yield from documents(3000, start=1000)

    with pytest.raises(IngestError, match="was deleted during the run") as stopped:
        index.index_documents(documents_while_deleted(), batch_size=250, concurrency=1)
    assert deleted.is_set()
    report = stopped.value.report
    # the batches written before the deletion (the last of them may have been in flight), then
    # nothing: the batch that met the deleted index and the one read after it are skipped
    assert report.indexed in (750, 1000)
    assert report.skipped in (500, 750)
    assert report.failed == 0
    assert "no index was made in its place" in str(stopped.value)
    assert not es_client.indices.exists(index=index_name)  # no dynamic index under its name


def test_an_index_recreated_under_a_run_is_not_written_by_it(es_client, index_name, model):
    """The write alias is the index's identity: a run that checked one index never writes
    into the next one of the same name (another run's --recreate)."""
    index = SCMIndex(es_client, index_name, model)
    index.create()

    def documents_while_recreated() -> Iterator[dict]:
        yield from documents(500)
        es_client.indices.delete(index=index_name)
        SCMIndex(es_client, index_name, model).create()  # another run's
        yield from documents(1500, start=500)

    with pytest.raises(IngestError, match="was deleted during the run"):
        index.index_documents(documents_while_recreated(), batch_size=250, concurrency=1)
    assert SCMIndex(es_client, index_name, model).count() == 0


def test_an_index_without_a_write_alias_gets_one(es_client, index_name, model):
    """An index of an older es-scm: its first ingestion adds the alias (one request, once)."""
    index = SCMIndex(es_client, index_name, model)
    index.create()
    aliases = es_client.indices.get_alias(index=index_name)[index_name]["aliases"]
    es_client.indices.delete_alias(index=index_name, name=list(aliases))
    report = SCMIndex(es_client, index_name, model).index_documents(documents(10))
    assert (report.created, report.index_count) == (10, 10)
    assert report.warnings == []
    aliases = es_client.indices.get_alias(index=index_name)[index_name]["aliases"]
    assert len(aliases) == 1
    (alias, properties), *_ = aliases.items()
    assert alias.startswith(f"{index_name}.es-scm-writer-")
    assert properties == {"is_hidden": True}


def test_the_write_alias_is_hidden_from_patterns(es_client, index_name, model):
    SCMIndex(es_client, index_name, model).index_documents(documents(10))
    found = es_client.indices.resolve_index(name=f"{index_name}*")
    assert [alias["name"] for alias in found["aliases"]] == []
    assert [index["name"] for index in found["indices"]] == [index_name]
