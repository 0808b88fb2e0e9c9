"""``es-scm search``: search an index with the soft cosine measure."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from es_scm.cli.errors import EXIT_OK, CLIError
from es_scm.cli.explain import add_explain_options, explain_top, explanation_lines
from es_scm.cli.index import shorten
from es_scm.cli.options import (
    Command,
    add_hybrid_options,
    client_from_args,
    hybrid_kwargs,
    load_model,
    non_negative_int,
    positive_int,
)
from es_scm.defaults import HYBRID_DEFAULTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR", help="the index's model")
    parser.add_argument("--index", required=True, metavar="NAME", help="index, alias or pattern")
    parser.add_argument("--k", type=positive_int, default=10, help="hits to return (default 10)")
    parser.add_argument(
        "--mode",
        choices=("exact", "native", "hybrid"),
        default="exact",
        help="exact SCM, provably the top k (default); Elasticsearch's native scores; or hybrid: "
        "BM25 fused with the SCM",
    )
    parser.add_argument(
        "--filter",
        dest="filters",
        action="append",
        type=filter_clause,
        default=[],
        metavar="JSON|FIELD=VALUE",
        help="only documents that match: an Elasticsearch query clause as JSON, or FIELD=VALUE "
        "for a term on a metadata field (metadata.FIELD); repeat to combine",
    )
    add_hybrid_options(parser, "hybrid search (--mode hybrid)")
    parser.add_argument(
        "--depth",
        type=positive_int,
        default=HYBRID_DEFAULTS["depth"],
        help="hybrid: candidates each side retrieves, at least k "
        f"(default {HYBRID_DEFAULTS['depth']})",
    )
    parser.add_argument(
        "--from",
        dest="from_",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="skip the first N hits (default 0)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    add_explain_options(parser)
    parser.add_argument("query", nargs="+", metavar="QUERY", help="the query text")


def filter_clause(text: str) -> dict:
    """An ``argparse`` type: a JSON query clause, or ``FIELD=VALUE`` (a term on metadata.FIELD)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            clause = json.loads(text)
        except json.JSONDecodeError as error:
            raise argparse.ArgumentTypeError(f"not valid JSON ({error.msg}): {text!r}") from None
        if not isinstance(clause, dict) or not clause:
            raise argparse.ArgumentTypeError(f"expected a JSON object (a query clause): {text!r}")
        return clause
    field, equals, value = text.partition("=")
    if not equals or not field.strip():
        raise argparse.ArgumentTypeError(f"expected JSON or FIELD=VALUE, got {text!r}")
    field = field.strip()
    if not field.startswith("metadata.") and field != "text":
        field = f"metadata.{field}"
    return {"term": {field: value}}


def run(args: argparse.Namespace) -> int:
    from es_scm.elastic import Searcher

    query = " ".join(args.query).strip()
    if not query:
        raise CLIError("empty query")
    model = load_model(args.model)
    searcher = Searcher(client_from_args(args), args.index, model)
    options = {**hybrid_kwargs(args), "depth": args.depth}
    result = searcher.search(
        query,
        args.k,
        mode=args.mode,
        from_=args.from_,
        filter=args.filters or None,
        explain=args.explain,
        **options,
    )
    for hit in result.hits:
        if hit.explanation is not None:
            hit.explanation = hit.explanation.top(explain_top(args))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        for rank, hit in enumerate(result.hits, start=args.from_ + 1):
            print(json.dumps({"rank": rank, **hit.to_dict()}, ensure_ascii=False))
        return EXIT_OK
    if not result.hits:
        print("no hits")
        return EXIT_OK
    ids = [hit.id for hit in result.hits]
    id_width = min(max(len("id"), *map(len, ids)), 30)
    columns = shutil.get_terminal_size((100, 24)).columns
    text_width = max(columns - (4 + 2 + id_width + 2 + 8 + 2), 20)
    print(f"{'rank':>4}  {'id':<{id_width}}  {'score':>8}  text")
    for rank, hit in enumerate(result.hits, start=args.from_ + 1):
        text = shorten(str(hit.source.get("text", "")), text_width)
        print(f"{rank:>4}  {shorten(hit.id, id_width):<{id_width}}  {hit.score:8.4f}  {text}")
        if hit.explanation is not None:
            print("\n".join(explanation_lines(hit.explanation, indent=" " * 6)))
    guarantee = ", exact top k proven" if result.exact_guarantee else ""
    print(
        f"-- {len(result.hits)} hits, mode {result.mode}{guarantee}, "
        f"{result.candidates} candidates, {result.took_ms:.0f} ms",
        file=sys.stderr,
    )
    return EXIT_OK


COMMAND = Command(
    "search",
    "search an index with the soft cosine measure",
    'es-scm search --model news-model --index news --k 5 "Obama speaks to the media"\n'
    'es-scm search --model news-model --index news --json "flu outbreak" | jq .id\n'
    'es-scm search --model news-model --index news --explain --explain-top 5 "flu outbreak"',
    add_arguments,
    run,
    ("common", "connection"),
    "Search an index built with the same model. `exact` (default) rescores Elasticsearch's "
    "candidates with the exact SCM, growing the window until the top k is provably exact; "
    "`native` returns Elasticsearch's scores (9-bit precision).",
)
