"""The ``es-scm`` command line.

``es-scm es start|stop|status|install`` runs the local single-node Elasticsearch (see
:mod:`es_scm.es_local`).
"""

from __future__ import annotations

import argparse
import sys

from . import es_local
from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="es-scm",
        description="Soft Cosine Measure search on Elasticsearch.",
        epilog="example: es-scm es start",
    )
    parser.add_argument("--version", action="version", version=f"es-scm {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    es_parser = commands.add_parser(
        "es",
        help="run a local single-node Elasticsearch (no Docker needed)",
        description="Run a local single-node Elasticsearch from the Maven Central distribution.",
        epilog="example: es-scm es start && es-scm es status",
    )
    es_local.build_parser(es_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "es":
            return es_local.run(args)
    except (es_local.LocalElasticsearchError, ValueError) as error:
        print(f"es-scm: error: {error}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
