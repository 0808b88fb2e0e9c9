"""``es-scm search``: search an index with the soft cosine measure, one query or a batch.

``--mode`` picks the searcher's method: ``hybrid`` (the default, ``Searcher.hybrid``: BM25 fused
with the SCM, the best of the modes on the test collections, docs/QUALITY.md), ``exact``
(``Searcher.search``, the SCM alone with its top k proven), ``native``, ``bm25`` or ``dense``
(kNN alone, on an index made with ``es-scm index --dense-encoder``); ``--dense`` fuses that kNN
leg into hybrid search too. A batch (``--queries FILE``) is any topics file
that ``es-scm eval`` reads, searched with ``Searcher.batch_search``; its hits go to a TREC run
file (``--run OUT``, ``qid Q0 docid rank score tag`` a line; ``--run -`` writes it to standard
output) and/or to standard output as one JSON object a query (``--json``: ``qid`` and its
``hits`` as ``search --json`` prints them). ``-`` reads the query (``QUERY``) or the topics
(``--queries -``) from standard input. A query longer than ``--max-query-words`` is refused
before any request. ``--filter`` JSON is untrusted: only the query types of
``es_scm.search.filters.SAFE_QUERIES`` pass (``--allow-unsafe-filters`` sends any). A
``--filter`` nested deeper than :data:`~es_scm.search.filters.MAX_FILTER_DEPTH` levels, or
naming a field that the index does not map (``year`` for ``metadata.year``), is a usage error
(exit 2) in one line that names it.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from es_scm.cli.connection import client_from_args
from es_scm.cli.errors import EXIT_OK, EXIT_USAGE, CLIError
from es_scm.cli.explain import add_explain_options, explain_top, explanation_lines
from es_scm.cli.index import shorten
from es_scm.cli.options import (
    Command,
    add_hybrid_options,
    hybrid_kwargs,
    load_model,
    non_negative_int,
    positive_int,
)
from es_scm.options.defaults import (
    FAST_DEFAULTS,
    HYBRID_DEFAULTS,
    HYBRID_DENSE_DEFAULTS,
    HYBRID_NEIGHBOURS,
    MAX_QUERY_WORDS,
)
from es_scm.search.filters import (
    MAX_FILTER_DEPTH,
    UnknownFieldError,
    UnsafeFilterError,
    filter_clauses,
)

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.search.results import ConnectionLostError

#: What hybrid search's SCM leg sends by default, as ``--neighbours``' help says it.
_HYBRID_LEG = "all" if HYBRID_NEIGHBOURS is None else str(HYBRID_NEIGHBOURS)


def _neighbours(text: str) -> int | str:
    """``--neighbours``: N (at least 0) or ``all``."""
    return "all" if text == "all" else non_negative_int(text)


#: ``--mode`` → the searcher's method: the registry's methods that find their own candidates,
#: by their mode (:data:`es_scm.search.methods.METHODS`; a unit test holds the two equal, and
#: the parser reads this table so that ``--help`` imports no search code).
METHODS = {
    "exact": "search",
    "fast": "fast",
    "native": "native",
    "hybrid": "hybrid",
    "bm25": "bm25",
    "dense": "dense",
}
#: The mode of ``es-scm search`` without ``--mode``: hybrid, as the retrievers' (README, Quality).
DEFAULT_MODE = "hybrid"
#: The modes whose hits have an SCM to explain (``--explain``); bm25 and dense have none, and
#: their methods take no ``explain`` option.
EXPLAINED_MODES = ("exact", "fast", "native", "hybrid")
#: Queries searched by one ``batch_search`` call of ``--queries`` (the progress bar's step).
BATCH = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR", help="the index's model")
    parser.add_argument("--index", required=True, metavar="NAME", help="index, alias or pattern")
    _add_ranking_options(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    parser.add_argument(
        "--max-query-words",
        type=positive_int,
        default=MAX_QUERY_WORDS,
        metavar="N",
        help="refuse a query of more words (runs of letters and digits, stop words included) "
        f"before sending it (default {MAX_QUERY_WORDS})",
    )
    add_explain_options(parser)
    _add_batch_options(parser)
    parser.add_argument(
        "query", nargs="*", metavar="QUERY", help="the query text; - reads it from standard input"
    )


def _add_ranking_options(parser: argparse.ArgumentParser) -> None:
    """Which hits: ``--k``, ``--mode`` (and the hybrid fusion), ``--filter``, ``--from``."""
    parser.add_argument("--k", type=positive_int, default=10, help="hits to return (default 10)")
    parser.add_argument(
        "--mode",
        choices=tuple(METHODS),
        default=DEFAULT_MODE,
        help="hybrid (default): BM25 fused with the SCM (and the dense vectors with --dense); "
        "exact: the SCM alone, provably the top k; fast: the SCM alone in two phases, its "
        "candidates found with each query term's strongest neighbours only, every score exact; "
        "native: Elasticsearch's scores of the SCM (9-bit precision); bm25: Elasticsearch's "
        "BM25 on the same index; or dense: Elasticsearch's kNN on the index's dense vectors "
        "(es-scm index --dense-encoder)",
    )
    parser.add_argument(
        "--filter",
        dest="filters",
        action="append",
        type=filter_clause,
        default=[],
        metavar="JSON|FIELD=VALUE",
        help="only documents that match: an Elasticsearch query clause as JSON, or FIELD=VALUE "
        "for a term on a metadata field (metadata.FIELD); repeat to combine. JSON may use "
        "only query types that read the searched documents (term, terms without a lookup, "
        "range, match, bool, exists, ids, prefix, ...) and must name fields the index maps: a "
        "document's own fields are under metadata. (metadata.year, not year)",
    )
    parser.add_argument(
        "--allow-unsafe-filters",
        action="store_true",
        help="send any --filter JSON as it is (a terms lookup into another index, a wrapper, "
        "a script...), with the connection's rights: only for filters you wrote yourself",
    )
    add_hybrid_options(parser, "hybrid search (the default mode; with another mode, an error)")
    dense = parser.add_argument_group(
        "dense vectors (an index made with es-scm index --dense-encoder)"
    )
    dense.add_argument(
        "--dense",
        action="store_true",
        help="hybrid search: fuse a third leg, Elasticsearch's kNN on the index's dense vectors, "
        "the query encoded by the index's encoder (default fusion "
        f"{HYBRID_DENSE_DEFAULTS.fusion} "
        + ", ".join(f"{leg} {w:g}" for leg, w in (HYBRID_DENSE_DEFAULTS.weights or {}).items())
        + ", or the model's own, saved by es-scm tune --dense)",
    )
    dense.add_argument(
        "--dense-encoder",
        metavar="NAME_OR_DIR",
        help="the encoder of the index's dense vectors (default: the one the index names; its "
        "weights must be the index's, e.g. a local folder with a copy of them)",
    )
    parser.add_argument(
        "--depth",
        type=positive_int,
        help="hybrid search: candidates each side retrieves, at least k "
        f"(default: the model's, else {HYBRID_DEFAULTS.depth})",
    )
    two_phase = parser.add_argument_group(
        "two phases: the SCM's candidates found with a pruned query (--mode fast, and hybrid "
        "search's SCM leg)"
    )
    two_phase.add_argument(
        "--neighbours",
        type=_neighbours,
        metavar="N|all",
        help="the first phase sends each query term and its N strongest neighbours in S, and the "
        f"exact SCM ranks what it finds (--mode fast: default {FAST_DEFAULTS.neighbours}; "
        f"hybrid: default {_HYBRID_LEG}; all: hybrid's exact SCM leg, every neighbour sent)",
    )
    two_phase.add_argument(
        "--window",
        type=positive_int,
        metavar="N",
        help="--mode fast: the candidates the first phase retrieves (default five times "
        f"--from + --k, at least {FAST_DEFAULTS.window})",
    )
    parser.add_argument(
        "--from",
        dest="from_",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="skip the first N hits (default 0)",
    )


def _add_batch_options(parser: argparse.ArgumentParser) -> None:
    """``--queries FILE --run OUT``: a batch of queries searched into a TREC run file."""
    batch = parser.add_argument_group("a batch of queries (instead of QUERY)")
    batch.add_argument(
        "--queries",
        metavar="FILE",
        help="search every query of this file: JSONL (id or _id, and text: BEIR's queries.jsonl), "
        "TSV (id<TAB>text) or TREC topics, one query a line; - reads standard input; with --run "
        "or --json (or both)",
    )
    batch.add_argument(
        "--run",
        metavar="OUT",
        help="write the --queries' top k to OUT as a TREC run file (qid Q0 docid rank score "
        "tag); - writes it to standard output",
    )
    batch.add_argument(
        "--tag", help="the run's tag, its last column (default: the mode, e.g. hybrid)"
    )
    batch.add_argument(
        "--topic-fields",
        nargs="+",
        default=["title"],
        choices=["title", "desc", "narr"],
        help="fields of TREC topics to query with (default title)",
    )
    batch.add_argument(
        "--no-progress", action="store_true", help="no progress bar for a batch on a terminal"
    )


def filter_clause(text: str) -> dict:
    """An ``argparse`` type: a JSON query clause, or ``FIELD=VALUE`` (a term on metadata.FIELD)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            clause = json.loads(text)
        except json.JSONDecodeError as error:
            raise argparse.ArgumentTypeError(f"not valid JSON ({error.msg}): {text!r}") from None
        except RecursionError:
            raise argparse.ArgumentTypeError(
                f"JSON nested too deeply to read ({len(text)} characters); a filter needs at "
                f"most {MAX_FILTER_DEPTH} levels"
            ) from None
        if not isinstance(clause, dict) or not clause:
            raise argparse.ArgumentTypeError(f"expected a JSON object (a query clause): {text!r}")
        try:
            filter_clauses(clause)  # nested too deeply: refused here, as a usage error
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return clause
    field, equals, value = text.partition("=")
    if not equals or not field.strip():
        raise argparse.ArgumentTypeError(f"expected JSON or FIELD=VALUE, got {text!r}")
    field = field.strip()
    if not field.startswith("metadata.") and field != "text":
        field = f"metadata.{field}"
    return {"term": {field: value}}


def search_options(args: argparse.Namespace, model: Any) -> dict[str, Any]:
    """The keyword arguments of the ``--mode``'s method but the page, alike for one QUERY and
    for ``--queries``: the filters and, for hybrid search, the fusion and depth.

    The hybrid options apply to ``--mode hybrid`` only: given with another mode, they are an
    error; ``--alpha`` (``--rrf-k``) with a fusion that does not take it is one too.
    """
    given = {**hybrid_kwargs(args), **({"depth": args.depth} if args.depth else {})}
    given |= {"dense": True} if args.dense else {}
    if given and args.mode != "hybrid":
        flag = "--" + next(iter(given)).replace("_", "-")
        raise CLIError(f"{flag} applies to --mode hybrid only", EXIT_USAGE)
    if args.dense_encoder and not (args.dense or args.mode == "dense"):
        raise CLIError("--dense-encoder goes with --mode dense or --dense", EXIT_USAGE)
    if args.neighbours is not None and args.mode not in ("fast", "hybrid"):
        raise CLIError("--neighbours applies to --mode fast and hybrid only", EXIT_USAGE)
    if args.neighbours == "all" and args.mode == "fast":
        raise CLIError("--neighbours all: --mode exact is the SCM with every neighbour", EXIT_USAGE)
    if args.window is not None and args.mode != "fast":
        raise CLIError("--window applies to --mode fast only", EXIT_USAGE)
    options: dict[str, Any] = {"filter": args.filters or None}
    if args.mode in ("fast", "hybrid") and args.neighbours is not None:
        options["neighbours"] = args.neighbours
    if args.mode == "fast" and args.window is not None:
        options["window"] = args.window
    if args.mode == "hybrid":
        from es_scm.fusion import fusion_from_options
        from es_scm.search.hybrid.config import hybrid_options

        try:
            chosen = hybrid_options(model.hybrid, dense=args.dense, **hybrid_kwargs(args))
            fusion = fusion_from_options(chosen)  # an adaptive fusion's model too
        except ValueError as error:
            raise CLIError(str(error), EXIT_USAGE) from None
        options.update(fusion=fusion, depth=args.depth)
        if args.dense:
            options["dense"] = True
    return options


def make_searcher(args: argparse.Namespace, model: Any) -> Any:
    """The ``Searcher`` of ``--index`` with the command's limits: ``--filter`` JSON untrusted
    unless ``--allow-unsafe-filters``."""
    from es_scm.elastic import Searcher

    return Searcher(
        client_from_args(args),
        args.index,
        model,
        max_query_words=args.max_query_words,
        filter_policy="any" if args.allow_unsafe_filters else "safe",
        encoder=args.dense_encoder,
    )


def bounded(text: str, limit: int, what: str) -> None:
    """A one-line error naming ``what`` if ``text`` has more than ``limit`` words."""
    from es_scm.search.query import QueryTooLongError, query_text

    try:
        query_text(text, limit)
    except QueryTooLongError as error:
        raise CLIError(
            f"{what} has {error.words} words, more than --max-query-words {limit}; shorten it, "
            "or raise --max-query-words"
        ) from None


def json_line(record: dict[str, Any]) -> str:
    """One line of ``--json``: strict JSON, which has no NaN nor Infinity (``json.dumps`` writes
    them as bare words that JSON readers refuse), so a number that is not finite stops the
    output with a line naming it instead of printing what no reader can parse.

    Raises
    ------
    CLIError
        Naming the first value that is not a finite number, and where it is.
    """
    try:
        return json.dumps(record, ensure_ascii=False, allow_nan=False)
    except ValueError:
        where, value = _not_finite(record) or ("a value", math.nan)
        shown = "NaN" if math.isnan(value) else str(value).replace("inf", "Infinity")
        if "qid" in record:
            context = f" of query {record['qid']!r}"
        else:
            context = f" of the hit ranked {record.get('rank')} ({record.get('id')!r})"
        raise CLIError(
            f"--json: {where}{context} is {shown}, which JSON cannot hold; nothing more is written"
        ) from None


def _not_finite(value: Any, where: str = "") -> tuple[str, float] | None:
    """Where in ``value`` (a JSON-like record: ``hits[0].score``) the first number that is not
    finite is, and that number."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where or "a value", value)
    if isinstance(value, dict):
        items = [(f"{where}.{key}" if where else str(key), item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"{where}[{n}]", item) for n, item in enumerate(value)]
    else:
        return None
    for label, item in items:
        found = _not_finite(item, label)
        if found is not None:
            return found
    return None


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (UnknownFieldError, UnsafeFilterError) as error:
        # a filter that matches nothing as written, or that --allow-unsafe-filters must allow:
        # a mistake in the command (exit 2), named as one
        raise CLIError(f"--filter: {error}", EXIT_USAGE) from None


def _run(args: argparse.Namespace) -> int:
    if bool(args.query) == bool(args.queries):
        raise CLIError(
            "give one QUERY or --queries FILE" + (", not both" if args.query else ""), EXIT_USAGE
        )
    if args.queries:
        return run_batch(args)
    if args.run or args.tag:
        raise CLIError("--run and --tag go with --queries FILE", EXIT_USAGE)
    query = sys.stdin.read() if args.query == ["-"] else " ".join(args.query)
    query = query.strip()
    if not query:
        raise CLIError("empty query")
    bounded(query, args.max_query_words, "the query")
    model = load_model(args.model)
    options = search_options(args, model)
    if args.mode in EXPLAINED_MODES:
        options["explain"] = args.explain
    elif args.explain:
        raise CLIError(f"--explain explains the SCM: not with --mode {args.mode}", EXIT_USAGE)
    method = getattr(make_searcher(args, model), METHODS[args.mode])
    result = method(query, args.k, from_=args.from_, **options)
    for hit in result.hits:
        if hit.explanation is not None:
            hit.explanation = hit.explanation.top(explain_top(args))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        for rank, hit in enumerate(result.hits, start=args.from_ + 1):
            print(json_line({"rank": rank, **hit.to_dict()}))
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


def run_batch(args: argparse.Namespace) -> int:
    """``--queries FILE``: the top k of every query, as a TREC run file (``--run OUT``, ``-``
    for standard output) and/or one JSON object a line (``--json``), written as each
    :data:`BATCH` of queries is answered when it goes to standard output."""
    tag = _batch_tag(args)
    topics = _batch_topics(args)
    model = load_model(args.model)
    searcher = make_searcher(args, model)
    searcher.check()  # a missing index or another model fails before the first query
    started = time.perf_counter()
    options = search_options(args, model)
    if args.mode in EXPLAINED_MODES:  # bm25 and dense have no SCM to explain (nor the option)
        options["explain"] = args.explain
    batch = _search_batch(searcher, topics, args, options, _BatchOutput(args, tag))
    if args.run and args.run != "-":  # written whole once the batch ends: every answered query
        from es_scm.evaluation.trec import write_trec_run

        write_trec_run(batch.ranking, args.run, tag)
    batch.report(args)
    hits = sum(map(len, batch.ranking.values()))
    empty = sum(1 for docs in batch.ranking.values() if not docs)
    where = {None: "", "-": " written to standard output"}.get(args.run, f" written to {args.run}")
    print(
        f"-- {len(topics)} queries, {hits} hits ({empty} queries without any){where}, "
        f"mode {args.mode}" + (f", tag {tag}" if args.run else "") + ", "
        f"{time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    if batch.failed:
        cause = ""
        if batch.lost is not None:  # the cluster went away: said first, with where it was
            from es_scm.cli.connection import es_url
            from es_scm.elastic.credentials import redact_url

            cause = (
                f"the connection to {searcher.engine.title} at {redact_url(es_url(args))} was "
                "lost: "
            )
        raise CLIError(
            f"{cause}{len(batch.failed)} of {len(topics)} queries were not answered (named "
            f"above); the other {len(topics) - len(batch.failed)} were{where}"
        )
    return EXIT_OK


def _batch_tag(args: argparse.Namespace) -> str:
    """The run's tag, once the outputs are known to be one of --run and --json, or both."""
    if not args.run and not args.json:
        raise CLIError(
            "--queries needs --run OUT (a TREC run file; - for standard output) or --json",
            EXIT_USAGE,
        )
    if args.run == "-" and args.json:
        raise CLIError(
            "--run - and --json both write to standard output: give --run a file", EXIT_USAGE
        )
    if args.from_ and args.run:  # a run's ranks start at 1
        raise CLIError("--from goes with --json, not with --run", EXIT_USAGE)
    if args.explain and not args.json:
        raise CLIError("--explain goes with --json: a TREC run has no room for it", EXIT_USAGE)
    if args.explain and args.mode not in EXPLAINED_MODES:
        raise CLIError(f"--explain explains the SCM: not with --mode {args.mode}", EXIT_USAGE)
    if args.tag is not None and not args.run:
        raise CLIError("--tag names a run: it goes with --run", EXIT_USAGE)
    tag = args.mode if args.tag is None else args.tag
    if not tag or len(tag.split()) != 1:
        raise CLIError(
            f"--tag must be one word (a run file's last column), got {tag!r}", EXIT_USAGE
        )
    return tag


def _batch_topics(args: argparse.Namespace) -> dict[str, str]:
    """The queries of ``--queries`` (a file, or ``-``: standard input), each within the limit."""
    from es_scm.evaluation.topics import parse_topics, read_topics

    if args.queries == "-":
        topics = parse_topics(sys.stdin.read(), "<stdin>", args.topic_fields)
    else:
        topics = read_topics(args.queries, args.topic_fields)
    if not topics:
        raise CLIError(f"{args.queries}: no queries")
    for qid, text in topics.items():
        bounded(text, args.max_query_words, f"query {qid}")
    return topics


@dataclass
class _Batch:
    """What a batch found: each query's hits, the queries whose top k was not proven, and how
    many queries' expansions were cut to the clause limit."""

    ranking: dict[str, dict[str, float]] = field(default_factory=dict)
    unproven: list[str] = field(default_factory=list)
    pruned: int = 0
    failed: dict[str, BaseException] = field(default_factory=dict)
    #: the lost connection that ended the batch (its queries and those after: in ``failed``)
    lost: ConnectionLostError | None = None

    def report(self, args: argparse.Namespace) -> None:
        """The notes on standard error: cut expansions, unproven top k."""
        if self.pruned:
            print(
                f"note: {self.pruned} queries' expansions were cut to the cluster's clause limit",
                file=sys.stderr,
            )
        if self.unproven:
            print(
                f"note: {len(self.unproven)} queries' exact top {args.k} could not be proven "
                f"(e.g. {self.unproven[0]}); their hits are the largest window's exact scores",
                file=sys.stderr,
            )
        others = [(qid, error) for qid, error in self.failed.items() if error is not self.lost]
        for qid, error in others[:10]:
            print(f"error: query {qid!r} was not answered: {error}", file=sys.stderr)
        if len(others) > 10:
            print(f"error: and {len(others) - 10} more queries", file=sys.stderr)
        cut = [qid for qid, error in self.failed.items() if error is self.lost]
        if cut:  # every one named, in one line: the topics to search again
            print(
                f"error: {self.lost}: {len(cut)} queries were not answered: {', '.join(cut)}",
                file=sys.stderr,
            )


class _BatchOutput:
    """What a batch writes to standard output as it goes: ``--json``'s lines (one object a
    query: ``qid`` and its ``hits`` as ``search --json`` prints them) or ``--run -``'s."""

    def __init__(self, args: argparse.Namespace, tag: str) -> None:
        self.json, self.run = args.json, args.run == "-"
        self.tag, self.first, self.top = tag, args.from_ + 1, explain_top(args)

    def write(self, results: dict[str, Any]) -> None:
        if self.run:
            from es_scm.evaluation.trec import trec_run_lines

            ranking = {qid: {h.id: h.score for h in r.hits} for qid, r in results.items()}
            sys.stdout.writelines(trec_run_lines(ranking, self.tag))
        elif self.json:
            for qid, result in results.items():
                hits = []
                for rank, hit in enumerate(result.hits, start=self.first):
                    if hit.explanation is not None:
                        hit.explanation = hit.explanation.top(self.top)
                    hits.append({"rank": rank, **hit.to_dict()})
                print(json_line({"qid": qid, "hits": hits}))
        sys.stdout.flush()  # a reader of the pipe gets each batch as it is answered


def _search_batch(
    searcher: Any,
    topics: dict[str, str],
    args: argparse.Namespace,
    options: dict[str, Any],
    output: _BatchOutput,
) -> _Batch:
    """Every query's top k, :data:`BATCH` queries a ``batch_search``, with a progress bar on a
    terminal, each batch written to ``output`` once answered. An exact top k that is not proven
    keeps the window's exact scores (said at the end)."""
    from es_scm.cli.progress import progress_bar
    from es_scm.search.results import BatchSearchError

    batch = _Batch()
    ids = list(topics)
    bar = progress_bar(len(topics), args.no_progress, unit="query")
    try:
        for start in range(0, len(ids), BATCH):
            chunk = {qid: topics[qid] for qid in ids[start : start + BATCH]}
            try:
                results = searcher.batch_search(
                    chunk,
                    args.k,
                    method=METHODS[args.mode],
                    unproven="keep",
                    **options,
                    **({"from_": args.from_} if args.from_ else {}),
                )
            except BatchSearchError as error:  # the others are answered: written, as always
                batch.failed.update(error.failed)
                results = error.results
                batch.lost = error.lost
            for qid, result in results.items():
                if result.unproven:
                    batch.unproven.append(qid)
                batch.ranking[qid] = {hit.id: hit.score for hit in result.hits}
                batch.pruned += bool(result.pruned_terms)
            output.write(results)
            if bar is not None:
                bar.update(len(chunk))
            if batch.lost is not None:  # the cluster went away: the queries after are not sent
                batch.failed.update(dict.fromkeys(ids[start + BATCH :], batch.lost))
                break
    finally:
        if bar is not None:
            bar.close()
    return batch


COMMAND = Command(
    "search",
    "search an index with the soft cosine measure",
    'es-scm search --model news-model --index news --k 5 "Obama speaks to the media"\n'
    'es-scm search --model news-model --index news --json "flu outbreak" | jq .id\n'
    'es-scm search --model news-model --index news --explain --explain-top 5 "flu outbreak"\n'
    "es-scm search --model news-model --index news --queries queries.jsonl --run news.run --k 100\n"
    "es-scm search --model news-model --index news --queries queries.tsv --json | jq .qid\n"
    "es-scm search --model news-model --index news --mode bm25 --queries queries.tsv --run -\n"
    "es-scm search --model news-model --index news --k 5 - < question.txt\n"
    'es-scm search --model news-model --index news --mode exact "flu outbreak"\n'
    'es-scm search --model news-model --index news --dense "flu outbreak"',
    add_arguments,
    run,
    ("common", "connection"),
    "Search an index built with the same model. `hybrid` (default) fuses Elasticsearch's BM25 "
    "with the SCM (and, with --dense, with a kNN search of the index's dense vectors): the "
    "best of the modes on the test collections; `--mode exact` is the SCM alone: it rescores "
    "Elasticsearch's candidates with the exact SCM, growing the window until the top k is "
    "provably exact; `native` returns Elasticsearch's scores (9-bit precision); `bm25` is "
    "Elasticsearch's BM25 on the same index; `dense` its kNN search alone. With --queries FILE, "
    "search every query of a topics file in batches and write the hits as a TREC run (--run OUT; "
    "--run - to standard output) or as one JSON object a query (--json). `-` reads the query "
    "(or, with --queries -, the topics) from standard input; a query of more than "
    "--max-query-words words is refused before it is sent.",
)
