"""``es-scm es start|stop|status|install``: the local Elasticsearch (a developer tool)."""

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
    "run a local Elasticsearch node or cluster (no Docker needed)",
    "es-scm es start && es-scm es status\n"
    "es-scm es start --nodes 3 --port 9260 --heap 512m\n"
    "es-scm es start --secure --port 9280",
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

Disk watermarks keep Elasticsearch's defaults: a full disk blocks writes instead
of hanging the node; start warns when the disk is past a watermark already.

environment: $ES_SCM_PORT (HTTP port), $ES_SCM_HEAP (JVM heap), $ES_SCM_ES_VERSION,
$ES_SCM_HOME (where files go), $ES_JAVA_HOME (the JDK)""",
)
