"""Tests that start Elasticsearch nodes of their own, from this home, beside the main one: a
3-node cluster (test_cluster.py), a secured node (test_secure.py), and the side node below.

These tests need the local runner (and Java) even when ``$ES_URL`` names the main node;
``scripts/run-tests`` runs this folder alongside the rest of the integration tier.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from es_scm.tools.es_local import LocalCluster, LocalElasticsearch
from es_scm.tools.node import port_from_env


@pytest.fixture(scope="session")
def side_node(es_url) -> Iterator[LocalElasticsearch]:
    """A single node that tests stop, restart and fill up (port ``$ES_SCM_FAILURE_TEST_PORT``,
    default ``$ES_SCM_PORT`` + 50): started fresh once, stopped after the session; a test that
    needs it running calls its ``start()``, which reuses it when it runs.

    Disk usage is read every 10 s (the shortest allowed) from the start: a change of the interval
    only takes effect after the next reading of the default 30 s one (test_disk_full.py).
    """
    port = port_from_env("ES_SCM_FAILURE_TEST_PORT", offset=50)
    cluster = LocalCluster(1, port, heap="512m", settings={"cluster.info.update.interval": "10s"})
    cluster.stop()
    cluster.delete_data()
    cluster.start()
    yield cluster.nodes[0]
    cluster.stop()
