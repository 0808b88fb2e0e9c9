"""es-scm on a real 3-node cluster (the local runner's ``LocalCluster``) while nodes go away.

One cluster of this home serves the module (ports ``$ES_SCM_CLUSTER_TEST_PORT``.. +2, default
``$ES_SCM_PORT`` + 61..63) and is stopped after. The tests of starts come first and start it
themselves; the others take it running (``running``: started as for the first time when no node
runs, else its stopped nodes started again), so that no start is made only to be undone. The
corpus is Cranfield (1,400 abstracts) with S = identity: these tests are about Elasticsearch's
side. Order matters where it says so: the last two tests leave a node stopped.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import ApiError, TransportError

from es_scm import SoftCosineModel
from es_scm.elastic import PartialResultError, SCMIndex
from es_scm.elastic.connection import client_from_env
from es_scm.index.ingest import IngestError
from es_scm.tools.es_local import LocalCluster, LocalElasticsearch, LocalElasticsearchError
from es_scm.tools.node import port_from_env

PORT = port_from_env("ES_SCM_CLUSTER_TEST_PORT", offset=61)
REPLICATED = "es-scm-test-cluster"
UNREPLICATED = "es-scm-test-cluster-noreplica"
STOP_AFTER = 600  # documents read before a node is stopped
K = 10
N_QUERIES = 20


FRESH_STARTS = 3  # in test_fresh_starts_form_the_cluster_every_time


def start_fresh(cluster: LocalCluster) -> None:
    """Start the nodes as for the first time: no data, and no keystore in the distribution's
    config folder (which every node would create at once)."""
    cluster.stop()
    cluster.delete_data()
    cluster.nodes[0].distribution.keystore.unlink(missing_ok=True)
    cluster.start()


def ensure_running(cluster: LocalCluster) -> LocalCluster:
    """``cluster`` with its three nodes running: started fresh if none runs, else its stopped
    nodes started again."""
    stopped = [i for i, node in enumerate(cluster.nodes) if node.running_pid() is None]
    if len(stopped) == len(cluster.nodes):
        start_fresh(cluster)
    else:
        for i in stopped:
            cluster.start_node(i)
    return cluster


@pytest.fixture(scope="module")
def cluster(es_url) -> Iterator[LocalCluster]:
    """Three nodes of this home, as the tests leave them; stopped after the module."""
    cluster = LocalCluster(nodes=3, port=PORT, heap="512m")
    yield cluster
    cluster.stop()


@pytest.fixture
def running(cluster) -> LocalCluster:
    """The module's cluster, its three nodes running."""
    return ensure_running(cluster)


@pytest.fixture(scope="module")
def client(cluster):
    client = client_from_env(cluster.urls[0], hosts=cluster.urls, request_timeout=30)
    yield client
    client.close()


@pytest.fixture(scope="module")
def single_node_client(side_node):
    """A client of a single node: the side node (conftest.py), which the other tests of this
    folder use, rather than the main node, which the rest of the suite uses at the same time
    (scripts/run-tests)."""
    side_node.start()
    client = client_from_env(side_node.url)
    yield client
    client.options(ignore_status=404).indices.delete(index="es-scm-test-cluster-single")
    client.close()


@pytest.fixture(scope="module")
def documents(cranfield) -> list[dict]:
    return [{"id": doc_id, "text": text} for doc_id, text in cranfield.documents.items()]


@pytest.fixture(scope="module")
def queries(cranfield) -> list[str]:
    return list(cranfield.queries.values())[:N_QUERIES]


@pytest.fixture(scope="module")
def model(cranfield) -> SoftCosineModel:
    return SoftCosineModel.build(cranfield.documents.values())  # S = identity


@pytest.fixture(scope="module")
def unreplicated(cluster, client, model, documents, queries):
    """3 shards without replicas on the whole cluster, and its exact results while complete."""
    ensure_running(cluster)
    index = SCMIndex(client, UNREPLICATED, model)
    index.delete()
    index.create(shards=3, replicas=0)
    assert index.index_documents(documents, batch_size=500).ok
    client.cluster.health(index=UNREPLICATED, wait_for_status="green", timeout="60s")
    return index, {query: index.searcher.search(query, k=K).ids() for query in queries}


def node_position(cluster: LocalCluster, name: str) -> int:
    return [node.name for node in cluster.nodes].index(name)


def master_position(cluster: LocalCluster, client) -> int:
    return node_position(cluster, client.cat.master(format="json")[0]["node"])


def primary_holders(cluster: LocalCluster, client, index: str) -> list[int]:
    shards = client.cat.shards(index=index, format="json", h="prirep,state,node")
    held = {s["node"] for s in shards if s["prirep"] == "p" and s["state"] == "STARTED"}
    return sorted(node_position(cluster, name) for name in held)


def all_present(client, index: str, documents: list[dict]) -> bool:
    found = client.mget(index=index, ids=[d["id"] for d in documents], source=False)["docs"]
    return all(doc["found"] for doc in found)


def test_nodes_that_exit_while_the_cluster_forms_stop_the_start_at_once(cluster):
    """Nodes 1 and 2 cannot bind their transport ports: node 0 alone can never be elected, and
    the start says which node exited instead of waiting for its whole timeout. Leaves the cluster
    stopped (the next test starts it fresh)."""
    cluster.stop()
    cluster.delete_data()
    with contextlib.ExitStack() as stack:
        for port in (PORT + 101, PORT + 102):
            taken = stack.enter_context(socket.socket())
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the nodes' TIME_WAIT
            taken.bind(("127.0.0.1", port))
            taken.listen()
        with pytest.raises(LocalElasticsearchError) as stopped:
            cluster.start()
    message = str(stopped.value)
    assert re.match(f"Elasticsearch on port ({PORT + 1}|{PORT + 2}) exited with code", message)
    assert "while starting; log tail" in message
    assert not any(node.running_pid() for node in cluster.nodes)  # the others were stopped


def test_fresh_starts_form_the_cluster_every_time(cluster):
    for _ in range(FRESH_STARTS):
        start_fresh(cluster)
        assert cluster.status()["nodes"] == "3 of 3 joined"
        assert all(node.running_pid() for node in cluster.nodes)
        assert cluster.nodes[0].distribution.keystore.is_file()


@pytest.mark.usefixtures("running")
def test_the_cluster_forms_and_its_nodes_are_this_homes(cluster, tmp_path: Path):
    status = cluster.status()
    assert status["running"]
    assert status["nodes"] == "3 of 3 joined"
    for node in cluster.nodes:
        line = status[f"node {node.port}"]
        assert line.startswith(f"{node.url} pid {node.running_pid()} ")
        assert str(node.data_dir) in line
    # Another home may neither reuse nor misdescribe these nodes.
    other_home = tmp_path / "other-home"
    (other_home / "dist").mkdir(parents=True)
    zip_name = cluster.nodes[0].zip_path.name
    (other_home / "dist" / zip_name).symlink_to(cluster.nodes[0].zip_path)  # never a download
    stranger = LocalElasticsearch(home=other_home, port=PORT + 1, heap="512m")
    with pytest.raises(LocalElasticsearchError) as refused:
        stranger.start(timeout=5)
    message = str(refused.value)
    assert f"port {PORT + 1}" in message
    assert "stop that node or pick another --port" in message
    assert "\n" not in message
    assert stranger.status()["data"] == str(cluster.nodes[1].data_dir)


@pytest.mark.usefixtures("running")
def test_ingestion_survives_the_master_stopping_midway(cluster, client, model, documents):
    index = SCMIndex(client, REPLICATED, model)
    index.delete()
    index.create(shards=3, replicas=1)
    client.cluster.health(index=REPLICATED, wait_for_status="green", timeout="60s")
    victim = master_position(cluster, client)

    def interrupted() -> Iterator[dict]:
        for n, document in enumerate(documents):
            if n == STOP_AFTER:
                assert cluster.stop_node(victim)
            yield document

    stopped: IngestError | None = None
    try:
        report = index.index_documents(interrupted(), batch_size=100, retry_budget=90)
    except IngestError as error:  # allowed, if it says what was done
        stopped, report = error, error.report
    finally:
        cluster.start_node(victim)
    if stopped is not None:
        assert report.stopped
        assert report.skipped > 0
        assert report.indexed + report.failed + report.skipped <= len(documents)
        assert report.index_count is None or report.index_count >= report.indexed
    else:
        assert report.ok, (report.summary(), report.failures[:3])
        assert report.indexed == len(documents)
    # A new index and unique ids: every document indexed was created, retried writes too.
    assert (report.created, report.updated) == (report.indexed, 0), report.summary()

    client.cluster.health(index=REPLICATED, wait_for_status="green", timeout="120s")
    rerun = index.index_documents(documents, batch_size=500)
    assert rerun.ok, (rerun.summary(), rerun.failures[:3])
    assert rerun.indexed == len(documents)
    assert rerun.index_count == len(documents)
    assert index.count() == len(documents)
    assert all_present(client, REPLICATED, documents)
    # Last, the interrupted run's own account of the index: with two nodes left, its final
    # refresh and count should reach one of them.
    if stopped is None:
        assert report.index_count == len(documents), (report.summary(), report.warnings)


@pytest.mark.usefixtures("running")
def test_exact_results_equal_those_of_a_single_node(
    client, single_node_client, model, documents, queries
):
    on_cluster = SCMIndex(client, REPLICATED, model)
    single = SCMIndex(single_node_client, "es-scm-test-cluster-single", model)
    single.delete()
    assert single.index_documents(documents).ok
    for query in queries:
        expected, found = single.searcher.search(query, k=K), on_cluster.searcher.search(query, k=K)
        assert found.exact_guarantee
        assert expected.exact_guarantee
        assert found.ids() == expected.ids(), query
        assert [h.score for h in found] == pytest.approx([h.score for h in expected], rel=1e-12)


@pytest.mark.usefixtures("running")
def test_a_red_index_is_named_while_the_cluster_answers(cluster, client, model, documents, caplog):
    """A primary without a replica is lost in the middle of an ingestion: the run says that the
    index is red, while it waits and when it stops, not that Elasticsearch cannot be reached."""
    red = "es-scm-test-cluster-red"
    index = SCMIndex(client, red, model)
    index.delete()
    index.create(shards=3, replicas=0)
    client.cluster.health(index=red, wait_for_status="green", timeout="60s")
    master = master_position(cluster, client)
    victim = next(n for n in primary_holders(cluster, client, red) if n != master)

    read = []

    def interrupted() -> Iterator[dict]:
        for n, document in enumerate(documents):
            if n == STOP_AFTER:
                assert cluster.stop_node(victim)
            read.append(document["id"])
            yield document

    try:
        with (
            caplog.at_level("WARNING", logger="es_scm"),
            pytest.raises(IngestError) as stopped,
        ):
            index.index_documents(interrupted(), batch_size=100, retry_budget=15, refresh=False)
    finally:
        cluster.start_node(victim)
    message = str(stopped.value)
    assert "\n" not in message
    assert message.startswith(f"the index {red!r} is red (1 primary shard(s) unassigned): ")
    assert "primary shard is not active" in message
    assert "cannot reach" not in message
    assert "did not answer" not in message
    waits = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert waits, "no word while waiting"
    assert any(wait.startswith(f"the index {red!r} is red") for wait in waits), waits
    report = stopped.value.report
    assert report.indexed >= STOP_AFTER - 2 * 100  # all but the batches in flight
    assert report.failed == 0  # waiting for a primary is not a document's failure
    # what reached the live shards in the stopped batches counts as indexed, the rest skipped
    assert report.indexed + report.skipped == len(read)
    client.cluster.health(index=red, wait_for_status="green", timeout="120s")
    client.indices.refresh(index=red)
    # skipped means "not confirmed": a write that the lost primary took before it went away and
    # that Elasticsearch then answered 503 for comes back with the shard
    assert report.indexed <= index.count() <= report.indexed + report.skipped
    index.delete()


def test_searches_keep_answering_while_a_node_stops(cluster, model, queries, unreplicated):
    """Leaves a node that held a primary of the unreplicated index stopped (next test)."""
    for i, node in enumerate(cluster.nodes):  # after an earlier failure
        if node.running_pid() is None:
            cluster.start_node(i)
    client, watch = watched_client(cluster)
    index = SCMIndex(client, REPLICATED, model)
    expected = {query: index.searcher.search(query, k=K).ids() for query in queries}
    victim = primary_holders(cluster, client, UNREPLICATED)[0]
    stopper = threading.Thread(target=cluster.stop_node, args=(victim,))
    outcomes: list[tuple[str, list[str] | None, str | None]] = []
    stopper.start()
    after_stop = 0
    while stopper.is_alive() or after_stop < len(queries):
        if not stopper.is_alive():
            after_stop += 1
        query = queries[len(outcomes) % len(queries)]
        try:
            outcomes.append((query, index.searcher.search(query, k=K).ids(), None))
        except (ApiError, TransportError) as error:
            outcomes.append((query, None, f"{type(error).__name__}: {error}"))
    stopper.join()
    assert cluster.nodes[victim].running_pid() is None
    wrong = [
        f"{query[:40]!r}: {ids} instead of {expected[query]}"
        for query, ids, error in outcomes
        if error is None and ids != expected[query]
    ]
    assert wrong == [], (
        f"{len(wrong)} of {len(outcomes)} searches answered with other results and no error: "
        f"{wrong[:2]}; partial responses: {watch.partial[:2]}"
    )
    errors = [error for _, _, error in outcomes if error is not None]
    assert all(len(error) > 20 for error in errors), errors
    assert all(error is None for _, _, error in outcomes[-len(queries) :]), errors
    assert len(outcomes) - len(errors) >= len(queries)


def test_an_exact_search_that_misses_a_shard_says_so(cluster, model, unreplicated):
    """A shard without a copy: exact search must fail clearly, or not claim an exact top k."""
    client, watch = watched_client(cluster)
    expected = unreplicated[1]
    index = SCMIndex(client, UNREPLICATED, model)
    holders = primary_holders(cluster, client, UNREPLICATED)
    if len(holders) == len(cluster.nodes):  # run alone: a shard goes missing now
        cluster.stop_node(holders[0])
    outcomes = {}
    for query in expected:
        try:
            outcomes[query] = index.searcher.search(query, k=K)
        except (ApiError, TransportError) as error:
            outcomes[query] = error
    errors = [str(o) for o in outcomes.values() if isinstance(o, Exception)]
    assert all(errors), errors
    silently_partial = [
        query
        for query, outcome in outcomes.items()
        if not isinstance(outcome, Exception)
        and outcome.exact_guarantee
        and outcome.ids() != expected[query]
    ]
    assert silently_partial == [], (
        f"{len(silently_partial)} of {len(expected)} exact searches returned a proven exact top "
        f"k that differs from the complete index's, from responses such as {watch.partial[:1]}"
    )


def test_ids_that_a_missing_shard_cannot_serve_are_an_error(
    cluster, model, documents, unreplicated
):
    """rescore(ids=...) and count() while a shard has no copy: an error that names the ids and
    the reason, never "not found" with a proven ranking, nor a smaller count (nor in the report
    of an ingestion)."""
    client = client_from_env(cluster.urls[0], hosts=cluster.urls, request_timeout=30)
    index = SCMIndex(client, UNREPLICATED, model)
    holders = primary_holders(cluster, client, UNREPLICATED)
    if len(holders) == len(cluster.nodes):  # run alone: a shard goes missing now
        cluster.stop_node(holders[0])
    ids = [document["id"] for document in documents[:30]]
    with pytest.raises(PartialResultError, match=r"of 30 ids could not be read \(") as refused:
        index.searcher.rescore("boundary layer transition", ids=ids)
    message = str(refused.value)
    assert "\n" not in message
    assert "no_shard_available_action_exception" in message
    with pytest.raises(PartialResultError, match=r"count of .* answered from \d of 3 shards \("):
        index.count()  # was the count of the shards left
    report = index.index_documents([], create=False)  # nothing to add: its count is refused too
    assert report.index_count is None
    assert any("could not be counted" in warning for warning in report.warnings), report.warnings


class ShardWatch:
    """Keeps the ``_shards`` section of every search response that was not complete."""

    def __init__(self) -> None:
        self.partial: list[dict] = []

    def wrap(self, search):
        def watched(*args, **kwargs):
            response = search(*args, **kwargs)
            shards = response.get("_shards", {})
            if shards.get("failed") or shards.get("successful") != shards.get("total"):
                failures = [
                    f"{f.get('node')}: {str(f.get('reason'))[:160]}"
                    for f in shards.get("failures", [])
                ]
                self.partial.append({**shards, "failures": failures})
            return response

        return watched


def watched_client(cluster: LocalCluster):
    """A client of the cluster whose search responses are watched (and left unchanged)."""
    client = client_from_env(cluster.urls[0], hosts=cluster.urls, request_timeout=30)
    watch = ShardWatch()
    client.search = watch.wrap(client.search)
    return client, watch
