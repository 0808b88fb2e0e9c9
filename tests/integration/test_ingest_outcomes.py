"""What ingestion stores and reports is what happened: duplicate ids, values JSON cannot hold, bad
corpus lines (issue 22, items 1, 14, 15), on a real node, with the sync and the asyncio ingester.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR, EXIT_PARTIAL
from es_scm.corpus import read_corpus
from es_scm.documents import Document
from es_scm.elastic import SCMIndex, client_from_env
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env

WORDS = ["wing", "flow", "boundary", "layer", "shock", "supersonic", "plate", "heat"]
BATCH = 50
BATCHES = 80


def text(n: int) -> str:
    return " ".join(WORDS[(n + j) % len(WORDS)] for j in range(n % 5 + 3))


TEXTS = [text(n) for n in range(100)]


def boundary_duplicates() -> tuple[list[dict[str, Any]], list[str]]:
    """Batches of ``BATCH`` whose last document's id is also the next batch's first one's: the
    earlier copy says "first", the later "second"."""
    documents, edges = [], []
    for batch in range(BATCHES):
        for slot in range(BATCH):
            n = batch * BATCH + slot
            document = {"id": f"doc-{n}", "text": text(n), "version": "only"}
            if slot == BATCH - 1 and batch < BATCHES - 1:
                document = {"id": f"edge-{batch}", "text": text(n), "version": "first"}
                edges.append(document["id"])
            elif slot == 0 and batch > 0:
                document = {"id": f"edge-{batch - 1}", "text": text(n), "version": "second"}
            documents.append(document)
    return documents, edges


def stored_versions(es_client, index: str, ids: list[str]) -> dict[str, str]:
    docs = es_client.mget(index=index, ids=ids, source_includes=["metadata.version"])["docs"]
    return {doc["_id"]: doc["_source"]["metadata"]["version"] for doc in docs}


def check_later_duplicates_won(es_client, index: str, report, edges: list[str]) -> None:
    versions = stored_versions(es_client, index, edges)
    earlier_won = sorted(doc_id for doc_id, version in versions.items() if version != "second")
    assert earlier_won == [], f"{len(earlier_won)} of {len(edges)} ids kept the earlier document"
    assert report.duplicates == len(edges)
    assert report.duplicate_ids == edges
    n_unique = BATCH * BATCHES - len(edges)
    assert (report.created, report.updated, report.index_count) == (n_unique, len(edges), n_unique)


def test_the_later_duplicate_wins_across_batches_in_flight(es_client, index_name, model):
    documents, edges = boundary_duplicates()
    index = SCMIndex(es_client, index_name, model)
    report = index.index_documents(documents, batch_size=BATCH, concurrency=2)
    check_later_duplicates_won(es_client, index_name, report, edges)


def test_the_later_duplicate_wins_in_the_async_ingester(es_client, es_url, index_name, model):
    documents, edges = boundary_duplicates()

    async def ingest() -> Any:
        client = async_client_from_env(es_url)
        try:
            index = AsyncSCMIndex(client, index_name, model)
            return await index.index_documents(documents, batch_size=BATCH, concurrency=2)
        finally:
            await client.close()

    report = asyncio.run(ingest())
    check_later_duplicates_won(es_client, index_name, report, edges)


# -- writes retried after their answer was lost ------------------------------------------------


class AnswerLosingRelay:
    """An HTTP relay to the real node that loses the answers of the first ``lose`` bulk requests:
    Elasticsearch has applied them, the client only sees the connection close. What a
    coordinating node that dies after forwarding a bulk request does to its client."""

    def __init__(self, target: str, lose: int) -> None:
        self.target = urlsplit(target)
        self.lose = lose
        self.lost = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def losing(self, path: str) -> bool:
        with self._lock:
            if "_bulk" not in path or self.lost >= self.lose:
                return False
            self.lost += 1
            return True

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection(relay.target.hostname, relay.target.port)
                skip = ("host", "connection", "content-length")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                upstream.close()
                if relay.losing(self.path):  # applied; the answer goes nowhere
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                skip = ("content-length", "connection", "transfer-encoding")
                for key, value in answer.getheaders():
                    if key.lower() not in skip:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = relay

        return Handler


@pytest.mark.parametrize("ingester", ["sync", "async"])
def test_a_create_retried_after_its_answer_was_lost_counts_as_created(
    es_url, index_name, model, ingester
):
    documents = [{"id": f"doc-{n}", "text": text(n)} for n in range(1000)]

    def ingest_through(relay: AnswerLosingRelay) -> Any:
        try:
            if ingester == "sync":
                client = client_from_env(relay.url, max_retries=0)
                return SCMIndex(client, index_name, model).index_documents(
                    documents, batch_size=250
                )

            async def ingest() -> Any:
                client = async_client_from_env(relay.url, max_retries=0)
                try:
                    index = AsyncSCMIndex(client, index_name, model)
                    return await index.index_documents(documents, batch_size=250)
                finally:
                    await client.close()

            return asyncio.run(ingest())
        finally:
            relay.close()

    first = AnswerLosingRelay(es_url, lose=1)
    report = ingest_through(first)
    assert first.lost == 1
    assert (report.created, report.updated, report.index_count) == (1000, 0, 1000)
    again = AnswerLosingRelay(es_url, lose=1)
    rerun = ingest_through(again)  # the documents exist: their retried writes are updates
    assert again.lost == 1
    assert (rerun.created, rerun.updated, rerun.index_count) == (0, 1000, 1000)


# -- values that JSON cannot hold ---------------------------------------------------------------


@pytest.mark.parametrize("ingester", ["sync", "async"])
def test_metadata_json_cannot_hold_fails_alone_naming_id_and_field(
    es_client, es_url, index_name, model, ingester
):
    documents = [
        {"id": "nan", "text": text(1), "price": math.nan},
        {"id": "inf", "text": text(2), "stats": {"max": -math.inf}},
        {"id": "in-list", "text": text(3), "scores": [1.0, math.inf]},
        Document("set", text(4), {"tags": {"a", "b"}}),
        {"id": "object", "text": text(5), "nested": {"owner": object()}},
        {"id": "key", "text": text(6), "counts": {1: "one"}},
        {"id": "fine", "text": text(7), "price": 2.5, "when": "2024-01-01"},
    ]
    if ingester == "sync":
        report = SCMIndex(es_client, index_name, model).index_documents(documents)
    else:

        async def ingest() -> Any:
            client = async_client_from_env(es_url)
            try:
                return await AsyncSCMIndex(client, index_name, model).index_documents(documents)
            finally:
                await client.close()

        report = asyncio.run(ingest())
    reasons = dict(report.failures)
    assert (report.indexed, report.failed, report.index_count) == (1, 6, 1)
    assert set(reasons) == {"nan", "inf", "in-list", "set", "object", "key"}
    assert reasons["nan"].startswith("metadata field 'price' is NaN, which JSON cannot hold")
    assert reasons["inf"].startswith("metadata field 'stats.max' is -Infinity")
    assert reasons["in-list"].startswith("metadata field 'scores[1]' is Infinity")
    assert reasons["set"].startswith("metadata field 'tags' holds a value of type set")
    assert reasons["object"].startswith("metadata field 'nested.owner' holds a value of type")
    assert reasons["key"].startswith("metadata field 'counts' has a key 1 (int)")
    for reason in reasons.values():
        assert "\n" not in reason
        assert len(reason) < 200, reason  # never the document, never its vector
        assert "scm" not in reason
        assert "wing" not in reason
    assert es_client.exists(index=index_name, id="fine")
    assert not es_client.exists(index=index_name, id="nan")


# -- bad corpus lines and ids -------------------------------------------------------------------


def run_cli(capsys, *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def mixed_corpus(path: Path) -> list[int]:
    """3,000 lines, of which every third from line 1,001 on is malformed; the bad line numbers."""
    lines, bad = [], []
    for number in range(1, 3001):
        if number > 1000 and number % 3 == 0:
            bad.append(number)
            lines.append('{"id": true, "text": "x"}' if number % 2 else '{"id": "broken", "text": ')
        else:
            lines.append(json.dumps({"id": f"doc-{number}", "text": text(number)}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bad


def test_the_default_stops_at_the_first_bad_line_naming_it(
    capsys, es_url, index_name, model, tmp_path
):
    model_dir = model.save(tmp_path / "model")
    corpus = tmp_path / "mixed.jsonl"
    bad = mixed_corpus(corpus)
    code, _, err = run_cli(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_ERROR
    last = err.strip().splitlines()[-1]
    assert last.startswith("es-scm: error: ")
    assert f"{corpus}, line {bad[0]}: invalid JSON" in last


def test_on_error_skip_indexes_every_good_line_and_names_the_bad_ones(
    capsys, es_client, es_url, index_name, model, tmp_path
):
    model_dir = model.save(tmp_path / "model")
    corpus = tmp_path / "mixed.jsonl"
    bad = mixed_corpus(corpus)
    code, out, err = run_cli(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url, "--no-progress", "--on-error", "skip",
    )  # fmt: skip
    assert code == EXIT_PARTIAL
    good = 3000 - len(bad)
    assert f"indexed {good} " in out
    assert f"failed {len(bad)}," in out
    assert f"the index holds {good} documents" in out
    assert f"{len(bad)} document(s) failed" in err
    assert f"{corpus}, line {bad[0]}: invalid JSON" in err
    assert f"{corpus}, line {bad[1]}: id field 'id': the id must be" in err
    assert "got True (bool)" in err
    assert es_client.count(index=index_name)["count"] == good


def test_on_error_skip_in_the_api_reports_each_bad_line(es_client, index_name, model, tmp_path):
    corpus = tmp_path / "mixed.jsonl"
    bad = mixed_corpus(corpus)
    report = SCMIndex(es_client, index_name, model).index_documents(
        read_corpus(corpus, on_error="skip")
    )
    assert (report.indexed, report.failed) == (3000 - len(bad), len(bad))
    assert [where for where, _ in report.failures] == [f"{corpus}, line {n}" for n in bad]
