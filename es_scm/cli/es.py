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
    "run a local single-node Elasticsearch (no Docker needed)",
    "es-scm es start && es-scm es status",
    add_arguments,
    run,
    description="Run a local single-node Elasticsearch from the Maven Central distribution.\n"
    "`status` prints the version, URL, health and where data lives; it exits 3 when no node "
    "runs.\n\nenvironment: $ES_SCM_PORT (HTTP port), $ES_SCM_HEAP (JVM heap), "
    "$ES_SCM_ES_VERSION, $ES_SCM_HOME (where files go), $ES_JAVA_HOME (the JDK)",
)
