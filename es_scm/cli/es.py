"""``es-scm es start|stop|status|install``: the local Elasticsearch or OpenSearch (a developer
tool)."""

from __future__ import annotations

import argparse

from es_scm.cli.options import Command
from es_scm.tools import es_local


def add_arguments(parser: argparse.ArgumentParser) -> None:
    es_local.build_parser(parser)


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
--nodes N a cluster of N nodes on ports PORT..PORT+N-1 (transport ports +100).

start    reuses a healthy node only if this home started it (its pid file, or the
         node's own path.data, says so); any other process on a port is an error
         that names the port. A cluster is up when every node has joined.
status   version, URL, health and the data folder the node actually uses (in a
         cluster: each node's URL, pid and health, and how many joined); exits 3
         when no node runs. stop and status remember what start used on PORT.
--secure HTTPS with a CA and certificate made by bin/elasticsearch-certutil;
         file-realm users es-scm-admin (superuser), es-scm-writer (may index
         es-scm-*, may not read or refresh them) and es-scm-nobody (no role; its
         password holds / # @ : ? %); secrets in HOME/secure (0600).
         start prints the CA's path and the variables to export, and the
         passwords only with --print-credentials. API keys do not work on this
         distribution (README).

--engine opensearch  OpenSearch's integ-test zip instead (2.19.6 by default, 3.x
         too), completed with the modules es-scm needs (mapper-extras,
         analysis-common, lang-painless) from their Maven jars; plain HTTP, no
         users (no --secure). stop and status remember the engine too.

Disk watermarks keep the engine's defaults: a full disk blocks writes instead
of hanging the node; start warns when the disk is past a watermark already.

environment: $ES_SCM_PORT (HTTP port), $ES_SCM_HEAP (JVM heap), $ES_SCM_ES_VERSION,
$ES_SCM_OPENSEARCH_VERSION, $ES_SCM_HOME (where files go), $ES_JAVA_HOME or
$OPENSEARCH_JAVA_HOME (the JDK)""",
)
