"""Nothing lost, nothing silent, nothing leaked: each finding of the reliability review, on a real
node (the secured node, the cluster and the full disk are in test_secure.py, test_cluster.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from es_scm.cli.errors import EXIT_ERROR, EXIT_PARTIAL
from es_scm.elastic import NotProvenError, SCMIndex, Searcher
from es_scm.index.ingest import IngestError, IngestInterrupted
from tests.support import aero_corpus

TEXTS = [d["text"] for d in aero_corpus(200)]


def test_one_bad_document_fails_alone(es_client, index_name, model):
    documents = aero_corpus(1200)
    documents[700]["id"] = "L" * 600  # over Elasticsearch's 512 bytes
    report = SCMIndex(es_client, index_name, model).index_documents(documents)
    assert (report.indexed, report.failed) == (1199, 1)
    assert report.failures[0][0] == "L" * 600
    assert "512" in report.failures[0][1]
    assert report.index_count == 1199


def test_a_failing_input_stream_keeps_its_report(es_client, index_name, model):
    def documents() -> Iterator[dict]:
        for number, document in enumerate(aero_corpus(1000)):
            if number == 800:
                raise RuntimeError("the source went away")
            yield document

    with pytest.raises(IngestError, match="the source went away") as stopped:
        SCMIndex(es_client, index_name, model).index_documents(documents(), batch_size=100)
    report = stopped.value.report
    assert report.indexed == 800
    assert report.index_count == 800
    assert isinstance(stopped.value.__cause__, RuntimeError)


def test_ctrl_c_stops_at_once_with_the_report(es_client, index_name, model):
    def documents() -> Iterator[dict]:
        for number, document in enumerate(aero_corpus(1000)):
            if number == 800:
                raise KeyboardInterrupt
            yield document

    started = time.monotonic()
    with pytest.raises(IngestInterrupted) as stopped:
        SCMIndex(es_client, index_name, model).index_documents(documents(), batch_size=100)
    assert time.monotonic() - started < 10
    report = stopped.value.report
    assert report.stopped == "interrupted"
    assert report.indexed + report.skipped == 800


def test_duplicate_ids_are_counted(es_client, index_name, model):
    documents = aero_corpus(1000, ids=[f"doc-{i % 500}" for i in range(1000)])
    report = SCMIndex(es_client, index_name, model).index_documents(documents)
    assert report.duplicates == 500
    assert report.duplicate_ids[:2] == ["doc-0", "doc-1"]
    assert report.index_count == 500
    assert (report.created, report.updated) == (500, 500)
    rerun = SCMIndex(es_client, index_name, model).index_documents(aero_corpus(500))
    assert (rerun.created, rerun.updated, rerun.duplicates) == (0, 500, 0)


def test_deep_pages_are_proven_or_refused(es_client, index_name, model):
    SCMIndex(es_client, index_name, model).index_documents(aero_corpus(200))
    searcher = Searcher(es_client, index_name, model, max_window=40)
    page = searcher.search("boundary layer", 10, from_=10)
    assert page.exact_guarantee
    with pytest.raises(NotProvenError, match="cannot prove the top 60") as refused:
        searcher.search("boundary layer", 10, from_=50)
    assert not refused.value.result.exact_guarantee


def test_concurrent_creators_both_succeed(es_client, index_name, model):
    created, errors = [], []

    def create() -> None:
        try:
            created.append(SCMIndex(es_client, index_name, model).create(exist_ok=True))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(created) == [False, False, False, True]


def test_one_copy_of_S_per_model(es_client, index_name, model):
    first, second = SCMIndex(es_client, index_name, model), SCMIndex(es_client, index_name, model)
    first.index_documents(aero_corpus(50))
    first.searcher.search("boundary layer")
    rows = model.similarity_matrix.rows
    second.searcher.search("boundary layer")
    assert model.similarity_matrix.rows is rows


def test_the_command_line_reports_on_every_path(cli, es_url, index_name, tmp_path, model):
    model_dir = model.save(tmp_path / "model")
    documents = aero_corpus(1200)
    documents[5]["id"] = "L" * 600
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    code, out, err = cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", path,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_PARTIAL
    assert "indexed 1199" in out
    assert "failed 1," in out
    assert "the index holds 1199" in out
    assert "512" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(path.read_text(encoding="utf-8")[:5000] + "{not json\n", encoding="utf-8")
    code, out, err = cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", broken,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert "indexed" in out  # the summary of what was done before the bad line
    assert err.strip().splitlines()[-1].startswith("es-scm: error: ")
    assert "invalid JSON" in err


def test_an_unknown_encoding_is_a_corpus_error(cli, es_url, index_name, tmp_path, model):
    model_dir = model.save(tmp_path / "model")
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(aero_corpus(1)[0]) + "\n", encoding="utf-8")
    code, _, err = cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", path,
        "--encoding", "bogus", "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert "unknown encoding 'bogus'" in err
