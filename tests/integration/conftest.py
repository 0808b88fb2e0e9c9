"""The integration tier: every test here needs a real Elasticsearch and is marked ``integration``.

The server: ``$ES_URL`` if set, else Docker (pytest-docker) if its engine answers, else the local
runner. Outside CI, the tests are skipped with the reason when no Elasticsearch can be had; with
``CI=true`` that is a failure, and so is any integration test that ends up skipped
(``tests/conftest.py``).

Indices that tests only read are built once and shared (``cranfield_index``); a test that writes
gets its own (``index_name``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import SCIFACT_COPIES

TIER = Path(__file__).resolve().parent
REPO_ROOT = TIER.parents[1]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tier is the marker: every test of this folder is ``integration`` (before ``-m``).

    A test marked ``client(major=..., server=...)`` runs only with that major of the client and
    the server that the environment variable ``server`` names; a test marked
    ``engine("elasticsearch")`` (or ``"opensearch"``) only on that engine
    (:func:`session_engine`). Elsewhere it is deselected (it is not skipped: a skipped
    integration test fails a CI run).
    """
    kept, deselected = [], []
    for item in items:
        if TIER in item.path.parents:
            item.add_marker(pytest.mark.integration)
        runs = _runs_with_this_client(item) and _runs_on_this_engine(item)
        (kept if runs else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _runs_with_this_client(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("client")
    if marker is None:
        return True
    import elasticsearch

    major, server = marker.kwargs["major"], marker.kwargs["server"]
    return elasticsearch.__version__[0] == major and bool(os.environ.get(server))


def session_engine() -> str:
    """The engine of the session's cluster: ``$ES_SCM_TEST_ENGINE`` (``scripts/run-tests`` sets
    it for its OpenSearch phase), else ``elasticsearch``. The ``es_client`` fixture checks that
    the cluster runs it."""
    return os.environ.get("ES_SCM_TEST_ENGINE", "elasticsearch")


def _runs_on_this_engine(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("engine")
    return marker is None or session_engine() in marker.args


def _docker_engine_answers() -> bool:
    if os.environ.get("ES_SCM_NO_DOCKER") or shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


@pytest.fixture(scope="session")
def docker_compose_file() -> str:
    """pytest-docker: the project's compose file."""
    return str(REPO_ROOT / "docker" / "docker-compose.yml")


def _url_from_docker(request: pytest.FixtureRequest) -> str:
    from es_scm.tools.es_local import LocalElasticsearch

    services = request.getfixturevalue("docker_services")
    port = services.port_for("elasticsearch", 9200)
    probe = LocalElasticsearch(port=port)
    services.wait_until_responsive(check=probe.is_healthy, timeout=180.0, pause=2.0)
    return probe.url


def _url_from_local_runner(request: pytest.FixtureRequest) -> str:
    from es_scm.tools.es_local import LocalElasticsearch

    runner = LocalElasticsearch()
    if not runner.is_healthy():
        runner.start()
        request.addfinalizer(runner.stop)
    return runner.url


@pytest.fixture(scope="session")
def es_url(request: pytest.FixtureRequest) -> str:
    """The URL of a healthy Elasticsearch for this test session."""
    try:
        if os.environ.get("ES_URL"):
            return os.environ["ES_URL"]
        if _docker_engine_answers():
            return _url_from_docker(request)
        return _url_from_local_runner(request)
    except Exception as error:
        reason = f"no Elasticsearch for the integration tests: {error}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def es_client(es_url: str):
    """An official Elasticsearch client connected to the session's cluster."""
    from es_scm.elastic.connection import client_from_env
    from es_scm.engines import engine_of

    client = client_from_env(es_url)  # the engine detected from the cluster's answer
    found = engine_of(client).name
    if found != session_engine():
        pytest.fail(
            f"{es_url} runs {found}, but the session's engine is {session_engine()}: set "
            f"ES_SCM_TEST_ENGINE={found} (the engine-marked tests are chosen by it)",
            pytrace=False,
        )
    health = client.cluster.health(wait_for_status="yellow", timeout="60s")
    assert health["status"] in ("green", "yellow"), health
    yield client
    client.close()


@pytest.fixture(scope="session")
def engine(es_client):
    """What the session's cluster's engine does its own way (:mod:`es_scm.engines`)."""
    from es_scm.engines import engine_of

    return engine_of(es_client)


@pytest.fixture
def index_name(es_client) -> Iterator[str]:
    """A fresh index name, deleted (with any alias pointing at it) after the test."""
    name = f"es-scm-test-{uuid.uuid4().hex[:12]}"
    yield name
    # Deleting by wildcard is refused (action.destructive_requires_name), so resolve names first.
    created = es_client.indices.get(index=f"{name}*", allow_no_indices=True, expand_wildcards="all")
    if created:
        es_client.options(ignore_status=404).indices.delete(index=",".join(created))


@pytest.fixture(scope="session")
def cranfield_index(es_client, cranfield, cranfield_model):
    """Cranfield indexed with ``cranfield_model``, for the tests that only read it."""
    from es_scm.elastic import SCMIndex

    index = SCMIndex(es_client, "es-scm-test-cranfield", cranfield_model)
    index.delete()
    documents = ({"id": doc_id, "text": text} for doc_id, text in cranfield.documents.items())
    report = index.index_documents(documents)
    assert report.ok, report.failures[:3]
    assert report.indexed == len(cranfield.documents)
    yield index
    index.delete()


@pytest.fixture(scope="session")
def scifact(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """BEIR SciFact's corpus :data:`~tests.support.SCIFACT_COPIES` times over under other ids
    (``ID-0``, ``ID-1``...): enough work that a run is still going when a test signals it."""
    corpus = shared_data / "beir-scifact-train" / "corpus.jsonl"
    if not corpus.is_file():
        pytest.skip(f"BEIR SciFact is not in {shared_data}")
    copies = tmp_path_factory.mktemp("scifact-copies") / "corpus.jsonl"
    with open(corpus, encoding="utf-8") as lines, open(copies, "w", encoding="utf-8") as out:
        records = [json.loads(line) for line in lines if line.strip()]
        for copy in range(SCIFACT_COPIES):
            for record in records:
                out.write(json.dumps({**record, "_id": f"{record['_id']}-{copy}"}) + "\n")
    return copies


@pytest.fixture(scope="session")
def scifact_model_dir(scifact: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model of :func:`scifact`, S = identity (for tests of ingestion and swaps)."""
    from es_scm import SoftCosineModel
    from es_scm.corpus import read_corpus

    model = SoftCosineModel.build(document.text for document in read_corpus(scifact))
    return model.save(tmp_path_factory.mktemp("scifact") / "model")
