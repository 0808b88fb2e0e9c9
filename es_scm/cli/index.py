"""``es-scm index``: vectorize a corpus with a model and bulk it into an index."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

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
from es_scm.validation import Interval, argparse_type

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.elastic.ingest import IngestError, IngestReport

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
    parser.add_argument(
        "--retry-budget",
        type=argparse_type(Interval(float, 0.0, None), float),
        default=60.0,
        metavar="S",
        help="seconds to keep retrying a cluster that cannot be reached before stopping "
        "(default 60)",
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
    from es_scm.corpus import count_documents
    from es_scm.elastic import SCMIndex
    from es_scm.elastic.ingest import IngestError, IngestInterrupted

    model = load_model(args.model)
    documents = read_documents(args)
    total = count_documents(args.corpus, args.format)
    index = SCMIndex(client_from_args(args), args.index, model)
    if args.recreate and index.delete():
        print(f"deleted the index {args.index!r}", file=sys.stderr)
    created = index.create(shards=args.shards, replicas=args.replicas, exist_ok=True)
    progress = progress_bar(total, args.no_progress)
    try:
        report = index.index_documents(
            documents,
            batch_size=args.batch_size,
            concurrency=args.concurrency,
            retry_budget=args.retry_budget,
            create=False,
            progress=progress,
        )
    except (IngestError, IngestInterrupted) as stopped:
        _close(progress)
        _print_report(args, created, stopped.report)
        if isinstance(stopped, IngestInterrupted):
            raise
        raise CLIError(_stopped_message(stopped, stopped.report)) from stopped
    _close(progress)
    _print_report(args, created, report)
    if args.optimize:
        started = time.perf_counter()
        index.optimize()
        print(f"merged {args.index} into one segment in {time.perf_counter() - started:.1f}s")
    return EXIT_OK if report.ok else EXIT_PARTIAL


def _close(progress: Any) -> None:
    if progress is not None:
        progress.close()


def _print_report(args: argparse.Namespace, created: bool, report: IngestReport) -> None:
    """The summary, on every exit path: counts, then the documents that need a look."""
    state = "created" if created else "existing"
    print(f"{args.index} ({state} index): {report.summary()}")
    if report.empty:
        shown = ", ".join(report.empty_ids[:5])
        print(f"{report.empty} empty document(s) (no vocabulary term; never matched): {shown}")
    if report.duplicates:
        shown = ", ".join(report.duplicate_ids[:5])
        print(
            f"{report.duplicates} duplicate id(s) in the corpus (the later document wins): {shown}"
        )
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if report.failed:
        print(f"{report.failed} document(s) failed; the first:", file=sys.stderr)
        for doc_id, reason in report.failures[:MAX_FAILURES_SHOWN]:
            print(f"  {shorten(doc_id, 60)}: {shorten(reason, 200)}", file=sys.stderr)


def _stopped_message(error: IngestError, report: IngestReport) -> str:
    from es_scm.corpus import CorpusError

    cause = error.__cause__
    if isinstance(cause, CorpusError):
        return (
            f"{cause}; stopped after {report.indexed + report.failed} documents (fix the corpus "
            "and rerun: document ids make reruns overwrite)"
        )
    return f"{error}; rerun to complete the index (document ids make reruns overwrite)"


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
