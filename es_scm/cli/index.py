"""``es-scm index``: vectorize a corpus with a model and bulk it into an index."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from es_scm.cli.errors import EXIT_OK, EXIT_PARTIAL, CLIError
from es_scm.cli.options import (
    Command,
    add_corpus_options,
    client_from_args,
    load_model,
    non_negative_int,
    positive_int,
    progress_bar,
    read_documents,
)

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.documents import Document

MAX_FAILURES_SHOWN = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR", help="a model from `model build`")
    parser.add_argument("--index", required=True, metavar="NAME", help="the index name")
    add_corpus_options(parser)
    parser.add_argument(
        "--shards", type=positive_int, default=1, help="primary shards (new index; default 1)"
    )
    parser.add_argument(
        "--replicas", type=non_negative_int, default=0, help="replicas (new index; default 0)"
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=500,
        help="documents per bulk request (default 500)",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=2,
        help="bulk requests in flight at once (default 2)",
    )
    parser.add_argument("--recreate", action="store_true", help="delete the index first")
    parser.add_argument(
        "--optimize",
        action="store_true",
        help="force-merge the index into one segment afterwards (faster searches of a corpus "
        "that no longer changes; takes a while on large indices)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from es_scm.corpus import CorpusError, count_documents
    from es_scm.elastic import SCMIndex

    model = load_model(args.model)
    documents = read_documents(args)
    total = count_documents(args.corpus, args.format)
    index = SCMIndex(client_from_args(args), args.index, model)
    if args.recreate and index.delete():
        print(f"deleted the index {args.index!r}", file=sys.stderr)
    created = index.create(shards=args.shards, replicas=args.replicas, exist_ok=True)
    read = 0

    def counted() -> Iterator[Document]:
        nonlocal read
        for document in documents:
            read += 1
            yield document

    progress = progress_bar(total, args.no_progress)
    try:
        report = index.index_documents(
            counted(),
            batch_size=args.batch_size,
            concurrency=args.concurrency,
            create=False,
            progress=progress,
        )
    except CorpusError as error:
        raise CLIError(
            f"{error}; stopped after reading {max(read - 1, 0)} documents (fix the corpus and "
            "rerun: document ids make reruns overwrite)"
        ) from error
    finally:
        if progress is not None:
            progress.close()
    state = "created" if created else "existing"
    print(f"{args.index} ({state} index): {report.summary()}")
    if args.optimize:
        started = time.perf_counter()
        index.optimize()
        print(f"merged {args.index} into one segment in {time.perf_counter() - started:.1f}s")
    if report.empty:
        shown = ", ".join(report.empty_ids[:5])
        print(f"{report.empty} empty document(s) (no vocabulary term; never matched): {shown}")
    if report.failed:
        print(f"{report.failed} document(s) failed; the first:", file=sys.stderr)
        for doc_id, reason in report.failures[:MAX_FAILURES_SHOWN]:
            print(f"  {doc_id}: {shorten(reason, 200)}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


COMMAND = Command(
    "index",
    "index a corpus into Elasticsearch with a model",
    "es-scm index --model news-model --index news --corpus news.jsonl",
    add_arguments,
    run,
    ("common", "connection"),
    "Vectorize a corpus with a model and bulk it into an index (created if missing). Ends with "
    "a summary of indexed, failed and empty documents; exits 3 if any document failed. "
    "Document ids make reruns idempotent.",
)
