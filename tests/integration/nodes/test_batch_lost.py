"""A batch whose node goes away keeps every answer and names the rest (issue 42, item 3).

``batch_search`` of 1,500 queries on a node that is stopped once the first ``_msearch`` of the
batch is answered — by a wrapper of the client's transport, not by a timer: the answer is held
until the node has exited, and every request sent after it waits for that too, so that the
queries answered are those of the first ``_msearch`` and of at most the ``threads - 1`` others
in flight with it. The batch used to raise the client's raw ``ConnectionError`` (nested reprs,
no ``BatchSearchError``) and lose every answer; ``es-scm search --queries`` wrote no run file
and said "cannot reach Elasticsearch" on OpenSearch.

On Elasticsearch (the side node, conftest.py: ``$ES_SCM_PORT`` + 50) and on OpenSearch 2.19.6
(the port of test_opensearch.py, ``$ES_SCM_OPENSEARCH_TEST_PORT``, default ``$ES_SCM_PORT`` +
70, started fresh for this module and stopped after it); sync, asyncio and the command line.
Each test stops the node, and the next starts it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from es_scm import SoftCosineModel
from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import (
    BatchSearchError,
    ConnectionLostError,
    SCMIndex,
    Searcher,
    client_from_env,
)
from es_scm.elastic.aio import AsyncSearcher, async_client_from_env
from es_scm.engines import engine_of
from es_scm.evaluation.trec import read_trec_run
from es_scm.tools.es_local import LocalCluster, LocalElasticsearch
from es_scm.tools.node import port_from_env

INDEX = "es-scm-test-batch-lost"
OPENSEARCH = "2.19.6"
OPENSEARCH_PORT = port_from_env("ES_SCM_OPENSEARCH_TEST_PORT", offset=70)
N_QUERIES = 1500
THREADS = 4
#: queries of one _msearch of the batch (1,500 queries on 4 threads: _MSEARCH_SIZE, 100)
FIRST = 100
# 100 made-up words: random documents and queries whose exact top 10 is proven in one window,
# so that every query answered is answered by its first round trip
WORDS = [a + b for a in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "zy") for b in (
    "bar", "cen", "dol", "fim", "gup", "hax", "jev", "kim", "lut", "mos"
)]  # fmt: skip


@dataclasses.dataclass
class World:
    """The node, the model of its index, the batch's queries, and each one's answer before the
    node went away."""

    node: LocalElasticsearch
    title: str  # the engine's, as messages name it
    model: SoftCosineModel
    queries: dict[str, str]
    answers: dict[str, Any]


@pytest.fixture(scope="module", params=["elasticsearch", "opensearch"])
def node(request) -> Iterator[LocalElasticsearch]:
    if request.param == "elasticsearch":
        yield request.getfixturevalue("side_node")  # stopped after the session
        return
    settings = {"indices.query.bool.max_clause_count": "1024"}
    cluster = LocalCluster(
        1, OPENSEARCH_PORT, version=OPENSEARCH, heap="512m", engine="opensearch", settings=settings
    )
    cluster.stop()
    cluster.delete_data()
    cluster.start(timeout=300)
    yield cluster.nodes[0]
    cluster.stop()


def running(node: LocalElasticsearch) -> Any:
    """``node`` started (again) with the index available, and a client of it."""
    node.start()
    client = client_from_env(node.url, request_timeout=30)
    client.cluster.health(index=INDEX, wait_for_status="yellow", timeout="60s")
    return client


@pytest.fixture(scope="module")
def world(node) -> World:
    rng = random.Random(42)
    documents = [
        {"id": f"d{i}", "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12)))}
        for i in range(3000)
    ]
    queries = {f"q{i}": " ".join(rng.sample(WORDS, rng.randint(2, 3))) for i in range(N_QUERIES)}
    model = SoftCosineModel.build(d["text"] for d in documents)
    node.start()
    client = client_from_env(node.url, request_timeout=30)
    index = SCMIndex(client, INDEX, model)
    index.delete()
    assert index.index_documents(documents).ok
    answers = Searcher(client, INDEX, model).batch_search(queries, 10, threads=THREADS)
    title = engine_of(client).title
    client.close()
    return World(node, title, model, queries, answers)


class StopAfterFirstMsearch:
    """A wrapper of a client's transport that stops the node once the first ``_msearch`` is
    answered, before that answer goes on, and holds every request sent after that until the
    node has exited (sync: the searcher's threads; asyncio: :meth:`wrap_async`)."""

    def __init__(self, node: LocalElasticsearch) -> None:
        self.node = node
        self.stopping = threading.Event()
        self.stopped = threading.Event()
        self.lock = threading.Lock()

    def first(self, target: str) -> bool:
        with self.lock:
            claimed = target.startswith("/_msearch") and not self.stopping.is_set()
            if claimed:
                self.stopping.set()
            return claimed

    def wrap(self, transport: Any) -> None:
        original = transport.perform_request

        def perform_request(method: str, target: str, *args: Any, **kwargs: Any) -> Any:
            if self.stopping.is_set():
                assert self.stopped.wait(120)
            answer = original(method, target, *args, **kwargs)
            if self.first(target):
                self.node.stop()
                self.stopped.set()
            return answer

        transport.perform_request = perform_request

    def wrap_async(self, transport: Any) -> None:
        original = transport.perform_request
        stopped = asyncio.Event()

        async def perform_request(method: str, target: str, *args: Any, **kwargs: Any) -> Any:
            if self.stopping.is_set():
                await asyncio.wait_for(stopped.wait(), 120)
            answer = await original(method, target, *args, **kwargs)
            if self.first(target):
                await asyncio.to_thread(self.node.stop)
                stopped.set()
            return answer

        transport.perform_request = perform_request


def comparable(result) -> dict:
    """Everything a result says but how long it took."""
    fields = {field.name: getattr(result, field.name) for field in dataclasses.fields(result)}
    fields.pop("took_ms")
    fields["hits"] = [(hit.id, hit.score, hit.native_score, hit.source) for hit in result.hits]
    return fields


def assert_cut_short(error: BatchSearchError, world: World, least: int) -> None:
    """What a batch cut short must say: every query answered (at least ``least``: those of
    the first _msearch), equal to its answer before; the others named, with one line that says
    which engine went away, and no nested reprs."""
    assert isinstance(error.lost, ConnectionLostError)
    lost = str(error.lost)
    assert lost.startswith(f"the connection to {world.title} was lost in the middle of the batch (")
    assert "\n" not in lost
    assert "Error(" not in lost  # the client's nested reprs stay in its cause
    assert error.lost.__cause__ is not None
    assert set(error.results) | set(error.failed) == set(world.queries)
    assert not set(error.results) & set(error.failed)
    assert least <= len(error.results) <= THREADS * FIRST, len(error.results)
    assert all(failure is error.lost for failure in error.failed.values())
    for qid, result in error.results.items():
        assert comparable(result) == comparable(world.answers[qid]), qid
    assert f"queries could not be answered ({len(error.failed)} as {lost}" in str(error)


def test_a_batch_whose_node_stops_keeps_every_answer_and_names_the_rest(world):
    client = running(world.node)
    StopAfterFirstMsearch(world.node).wrap(client.transport)
    searcher = Searcher(client, INDEX, world.model)
    with pytest.raises(BatchSearchError) as cut:
        searcher.batch_search(world.queries, 10, threads=THREADS)
    assert_cut_short(cut.value, world, FIRST)
    client.close()


def test_an_async_batch_whose_node_stops_keeps_every_answer_and_names_the_rest(world):
    running(world.node).close()

    async def batch() -> BatchSearchError:
        client = async_client_from_env(world.node.url, request_timeout=30)
        try:
            StopAfterFirstMsearch(world.node).wrap_async(client.transport)
            searcher = AsyncSearcher(client, INDEX, world.model)
            with pytest.raises(BatchSearchError) as cut:
                await searcher.batch_search(world.queries, 10, threads=THREADS)
            return cut.value
        finally:
            await client.close()

    assert_cut_short(asyncio.run(batch()), world, FIRST)


def test_the_search_command_writes_the_answered_topics_and_names_the_others(
    world, tmp_path, capsys, monkeypatch
):
    import es_scm.cli.search as search_command

    running(world.node).close()
    made = search_command.client_from_args

    def client_from_args(args: Any) -> Any:  # the command's own client, with the wrapper
        client = made(args)
        StopAfterFirstMsearch(world.node).wrap(client.transport)
        return client

    monkeypatch.setattr(search_command, "client_from_args", client_from_args)
    model_dir = world.model.save(tmp_path / "model")
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in world.queries.items()), encoding="utf-8")
    run = tmp_path / "out.run"
    code = main(
        ["search", "--mode", "exact", "--model", str(model_dir), "--index", INDEX,
         "--es-url", world.node.url, "--queries", str(topics), "--run", str(run),
         "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == EXIT_ERROR, err
    assert "Traceback" not in err
    answered = set(read_trec_run(run))  # the run file holds every answered topic
    assert answered
    named = re.search(
        rf"^error: the connection to {world.title} was lost .*: (\d+) queries were not "
        r"answered: (.*)$",
        err,
        re.MULTILINE,
    )
    assert named is not None, err
    others = set(named.group(2).split(", "))
    assert int(named.group(1)) == len(others) == N_QUERIES - len(answered)
    assert answered | others == set(world.queries)
    last = err.strip().splitlines()[-1]
    lost = f"es-scm: error: the connection to {world.title} at {world.node.url} was lost: "
    assert last.startswith(lost), last
    assert f"the other {len(answered)} were written to {run}" in last
    assert "cannot reach" not in err
    for qid, ranking in read_trec_run(run).items():  # what the batch before the stop ranked
        assert set(ranking) == set(world.answers[qid].ids()), qid
