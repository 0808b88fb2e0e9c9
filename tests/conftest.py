"""Shared fixtures: a real Elasticsearch from ES_URL, else Docker (pytest-docker), else the runner.

Integration tests carry ``@pytest.mark.integration``. Outside CI, they are skipped with the reason
when no Elasticsearch can be had; with ``CI=true`` that is a failure, and so is any integration
test that ends up skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

_skipped_integration_tests: list[str] = []


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
        if IN_CI:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def es_client(es_url: str):
    """An official Elasticsearch client connected to the session's cluster."""
    from es_scm.elastic.connection import client_from_env

    client = client_from_env(es_url)
    health = client.cluster.health(wait_for_status="yellow", timeout="60s")
    assert health["status"] in ("green", "yellow"), health
    yield client
    client.close()


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
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip with a clear message when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA} (set ES_SCM_SHARED_DATA)")
    return SHARED_DATA


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "integration" in report.keywords:
        _skipped_integration_tests.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if IN_CI and _skipped_integration_tests:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if IN_CI and _skipped_integration_tests:
        terminalreporter.write_line(
            f"CI=true: {len(_skipped_integration_tests)} integration test(s) were skipped, "
            "which fails the run: " + ", ".join(_skipped_integration_tests[:5]),
            red=True,
        )
