"""``es-scm es start|stop|status|install``: the local Elasticsearch or OpenSearch (a developer
tool)."""

from __future__ import annotations

import argparse

from es_scm.cli.options import Command, common_parent
from es_scm.tools import es_local


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # each action has its own --help, and takes -v after it as before it
    es_local.build_parser(parser, parents=[common_parent()])


def run(args: argparse.Namespace) -> int:
    return es_local.run(args)


COMMAND = Command(
    "es",
    "run a local Elasticsearch (or OpenSearch) node or cluster (no Docker needed)",
    "es-scm es start && es-scm es status\n"
    "es-scm es start --nodes 3 --port 9260 --heap 512m\n"
    "es-scm es start --secure --port 9280\n"
    "es-scm es start --engine opensearch --port 9400 (--version 3.6.0)",
    add_arguments,
    run,
    description="""\
Run a local Elasticsearch from the Maven Central distribution: one node, or with
--nodes N a cluster of N nodes on ports PORT..PORT+N-1 (transport ports +100);
OpenSearch with --engine opensearch. `es-scm es ACTION --help` shows an action's
options.

start    reuses a healthy node only if this home started it; --secure for HTTPS
         and users, --engine opensearch for OpenSearch.
stop     stops what start started on PORT.
status   engine, version, URL, health and the data folder of the node on PORT;
         exits 3 when no node runs. stop and status remember what start used on
         PORT.
install  fetches and unpacks the distribution without starting it.

environment: $ES_SCM_PORT (HTTP port), $ES_SCM_HEAP (JVM heap), $ES_SCM_ES_VERSION,
$ES_SCM_OPENSEARCH_VERSION, $ES_SCM_HOME (where files go), $ES_JAVA_HOME or
$OPENSEARCH_JAVA_HOME (the JDK)""",
)
