"""``es-scm demo``: the whole pipeline on embedded defaults, BM25 and SCM side by side."""

from __future__ import annotations

import argparse
import os

from es_scm.cli.connection import connection_kwargs
from es_scm.cli.errors import EXIT_OK
from es_scm.cli.options import Command, positive_int
from es_scm.demo import DEMO_INDEX


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=positive_int, default=5, help="hits per query (default 5)")
    parser.add_argument(
        "--index", default=DEMO_INDEX, help=f"the demo index (default {DEMO_INDEX})"
    )
    parser.add_argument("--keep-index", action="store_true", help="keep the index afterwards")
    parser.add_argument(
        "--model-dir",
        metavar="DIR",
        help="save the demo model there (default with --keep-index: ./es-scm-demo-model)",
    )


def run(args: argparse.Namespace) -> int:
    from es_scm.demo import run_demo

    model_dir = args.model_dir or ("es-scm-demo-model" if args.keep_index else None)
    run_demo(
        url=args.es_url or os.environ.get("ES_URL"),
        connection=connection_kwargs(args),
        index=args.index,
        k=args.k,
        keep_index=args.keep_index,
        model_dir=model_dir,
    )
    return EXIT_OK


COMMAND = Command(
    "demo",
    "build, index and query a demo corpus; BM25 and SCM side by side",
    "es-scm demo\nes-scm demo --es-url http://localhost:9200 --k 3 --keep-index",
    add_arguments,
    run,
    ("common", "connection"),
    "Start (or reuse) the local Elasticsearch unless --es-url/$ES_URL is given, build a model "
    "from the packaged 250-document demo corpus with model build's defaults, index it, and "
    "compare BM25 with the SCM on paraphrases that share no word with the query.",
)
