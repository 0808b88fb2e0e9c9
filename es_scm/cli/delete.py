"""``es-scm delete``: delete documents from an index by id (idempotent)."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterator

from es_scm.cli.connection import client_from_args
from es_scm.cli.errors import EXIT_OK, EXIT_PARTIAL, CLIError
from es_scm.cli.index import MAX_FAILURES_SHOWN, shorten
from es_scm.cli.options import Command, load_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR", help="the index's model")
    parser.add_argument("--index", required=True, metavar="NAME", help="the index (or alias)")
    ids = parser.add_mutually_exclusive_group(required=True)
    ids.add_argument("--ids", nargs="+", metavar="ID", help="the ids of the documents to delete")
    ids.add_argument(
        "--ids-file",
        metavar="FILE",
        help="a file with one id a line (blank lines skipped; - reads standard input)",
    )


def read_ids(path: str) -> Iterator[str]:
    """The ids of ``--ids-file``, one a line (line ends and blank lines dropped)."""
    from es_scm.files import open_regular

    try:  # a regular file: a device or a named pipe could be endless, or block
        stream = (
            sys.stdin
            if path == "-"
            else io.TextIOWrapper(open_regular(path, "an ids file", follow_symlinks=True), "utf-8")
        )
    except FileNotFoundError:
        raise CLIError(f"ids file not found: {path}") from None
    except (OSError, ValueError) as error:
        raise CLIError(f"cannot read the ids file {path}: {error}") from None
    with stream:
        for line in stream:
            doc_id = line.rstrip("\r\n")
            if doc_id.strip():
                yield doc_id


def run(args: argparse.Namespace) -> int:
    from es_scm.elastic import SCMIndex

    model = load_model(args.model)
    ids = args.ids if args.ids is not None else list(read_ids(args.ids_file))
    report = SCMIndex(client_from_args(args), args.index, model).delete_documents(ids)
    print(f"{args.index}: {report.summary()}")
    if report.not_found:
        shown = ", ".join(shorten(doc_id, 60) for doc_id in report.not_found_ids[:5])
        print(f"{report.not_found} id(s) not in the index (nothing to delete): {shown}")
    if report.failed:
        print(f"{report.failed} id(s) failed; the first:", file=sys.stderr)
        for doc_id, reason in report.failures[:MAX_FAILURES_SHOWN]:
            print(f"  {shorten(doc_id, 60)}: {shorten(reason, 200)}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_PARTIAL


COMMAND = Command(
    "delete",
    "delete documents from an index by id",
    "es-scm delete --model news-model --index news --ids 17 42\n"
    "es-scm delete --model news-model --index news --ids-file gone.txt",
    add_arguments,
    run,
    ("common", "connection"),
    "Delete documents by id and report how many were deleted and how many were not there "
    "(deleting is idempotent: a rerun reports them not found). The index is refreshed, so "
    "searches stop finding them at once. Exits 3 if an id failed. To add or replace documents, "
    "use `es-scm index` on an existing index: ids overwrite (an upsert).",
)
