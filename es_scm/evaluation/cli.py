"""The ``es-scm eval`` command: ``semeval`` and ``trec`` subcommands.

The main CLI wires it in with :func:`add_parser` and dispatches to :func:`run`::

    es-scm eval semeval --xml dev.xml --gold dev.xml.subtaskB.relevancy
    es-scm eval trec --collection cranfield cisi cacm --data ../shared/data/ir-collections
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "build_model_options", "load_embeddings", "run"]

_EXAMPLE_SEMEVAL = (
    "example: es-scm eval semeval --xml SemEval2016-Task3-CQA-QL-dev.xml "
    "--gold SemEval2016-Task3-CQA-QL-dev.xml.subtaskB.relevancy --json dev.json"
)
_EXAMPLE_TREC = "example: es-scm eval trec --collection cranfield cisi cacm --data ir-collections"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` command (with ``semeval`` and ``trec``) to ``subparsers``."""
    parser = subparsers.add_parser(
        "eval",
        help="evaluate retrieval quality (SemEval-2016/2017 Task 3 B, TREC-style collections)",
        description="Evaluate the SCM against TF-IDF and BM25, locally and through Elasticsearch.",
        epilog=f"{_EXAMPLE_SEMEVAL}\n{_EXAMPLE_TREC}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="eval_command", required=True, metavar="SUBCOMMAND")

    semeval = commands.add_parser(
        "semeval",
        help="rank each original question's 10 related questions (SemEval Task 3 subtask B)",
        description=(
            "Rank each original question's related questions with the official IR baseline, "
            "TF-IDF cosine, the local exact SCM, BM25 and the SCM through Elasticsearch, and "
            "BM25 + SCM; report the official MAP, AvgRec and MRR."
        ),
        epilog=_EXAMPLE_SEMEVAL,
    )
    semeval.add_argument(
        "--xml",
        nargs="+",
        required=True,
        metavar="FILE",
        help="SemEval-2016/2017 Task 3 English XML file(s); all are evaluated "
        "and the vocabulary/IDF is fitted on all of them",
    )
    semeval.add_argument(
        "--gold",
        nargs="*",
        default=[],
        metavar="FILE",
        help="*.subtaskB.relevancy gold file(s): labels and the IR baseline "
        "(default: RELQ_RELEVANCE2ORGQ and RELQ_RANKING_ORDER from the XML)",
    )
    semeval.add_argument(
        "--per-question",
        metavar="FILE",
        help="write every question's rankings, scores, AP and RR as JSON",
    )
    semeval.add_argument(
        "--no-es",
        action="store_true",
        help="skip the Elasticsearch methods (BM25, SCM via Elasticsearch)",
    )
    _add_model_options(semeval)
    _add_output_options(semeval)
    _add_connection_options(semeval)

    trec = commands.add_parser(
        "trec",
        help="MAP, nDCG@10, R@100 of BM25, SCM and BM25 + SCM on Cranfield/CISI/CACM",
        description=(
            "Index a SMART-format test collection and evaluate BM25 (Elasticsearch), the SCM "
            "(Elasticsearch, exact mode) and BM25 + SCM with ir_measures."
        ),
        epilog=_EXAMPLE_TREC,
    )
    trec.add_argument(
        "--collection",
        nargs="+",
        required=True,
        choices=["cranfield", "cisi", "cacm"],
        help="the collection(s) and format",
    )
    trec.add_argument(
        "--data",
        metavar="DIR",
        help="the collection's folder, or a folder holding one per collection",
    )
    trec.add_argument("--docs", metavar="FILE", help="documents file (instead of --data)")
    trec.add_argument("--queries", metavar="FILE", help="queries file (instead of --data)")
    trec.add_argument("--qrels", metavar="FILE", help="relevance judgments (instead of --data)")
    trec.add_argument(
        "--depth",
        type=int,
        default=100,
        help="documents retrieved per query by every method (default 100)",
    )
    trec.add_argument(
        "--max-queries",
        type=int,
        metavar="N",
        help="evaluate only the first N judged queries (quick runs)",
    )
    trec.add_argument("--run-dir", metavar="DIR", help="also write TREC run files here")
    _add_model_options(trec)
    _add_output_options(trec)
    _add_connection_options(trec)
    return parser


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model (term similarities and weighting)")
    group.add_argument(
        "--embeddings",
        choices=["glove", "word2vec", "none"],
        default=None,
        help="term similarities from GloVe 6B 50d (default), word2vec trained "
        "on --word2vec-corpus, or none (S = I)",
    )
    group.add_argument(
        "--word2vec-corpus",
        metavar="PATH",
        help="train word2vec on this corpus (a WikiExtractor .tar.xz, SemEval "
        "XML, a folder or a text file); implies --embeddings word2vec",
    )
    group.add_argument(
        "--word2vec-cache",
        metavar="DIR",
        help="cache folder for word2vec (default $ES_SCM_CACHE/word2vec or "
        "~/.cache/es-scm/word2vec)",
    )
    group.add_argument("--word2vec-size", type=int, default=100, help="vector size (100)")
    group.add_argument("--word2vec-epochs", type=int, default=5, help="epochs (5)")
    group.add_argument("--word2vec-min-count", type=int, default=5, help="min count (5)")
    group.add_argument(
        "--word2vec-max-texts",
        type=int,
        metavar="N",
        help="train on the first N texts (paragraphs) of the corpus only",
    )
    group.add_argument(
        "--nonzero-limit",
        type=int,
        default=100,
        help="most off-diagonal non-zeros per column of S (100)",
    )
    group.add_argument(
        "--threshold", type=float, default=0.0, help="only similarities above it count (0.0)"
    )
    group.add_argument("--exponent", type=float, default=2.0, help="similarity exponent (2.0)")
    group.add_argument(
        "--symmetric",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="make S symmetric (default: yes)",
    )
    group.add_argument(
        "--dominant", action="store_true", help="make S strictly diagonally dominant"
    )
    group.add_argument(
        "--neighbors",
        choices=["terms", "vocabulary"],
        default="terms",
        help="where a term's neighbours are searched (terms)",
    )
    group.add_argument(
        "--column-order",
        choices=["rarest", "id"],
        default="rarest",
        help="fill S's columns rarest term first (default) or by term id",
    )
    group.add_argument(
        "--weighting",
        default="raw:natural",
        metavar="TF:IDF|bm25",
        help="document (and query) weighting: TF in raw/log/binary/augmented, "
        "IDF in none/natural/log2/smooth, or bm25 (default raw:natural = tf-idf)",
    )
    group.add_argument(
        "--query-weighting",
        metavar="TF:IDF",
        help="query weighting if different (default: as --weighting, or "
        "raw:natural when --weighting is bm25)",
    )
    group.add_argument(
        "--alpha", type=float, default=0.5, help="BM25 weight of the BM25 + SCM interpolation (0.5)"
    )


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output and index")
    group.add_argument("--json", metavar="FILE", help="write the scores and settings as JSON")
    group.add_argument(
        "--index-name", metavar="NAME", help="index to create (default es-scm-eval-…-<random>)"
    )
    group.add_argument("--keep-index", action="store_true", help="do not delete the index")
    group.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _add_connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection (default: $ES_URL, $ES_API_KEY, …)")
    group.add_argument(
        "--es-url",
        metavar="URL",
        help="Elasticsearch URL (default $ES_URL or http://127.0.0.1:9200)",
    )
    group.add_argument("--api-key", metavar="KEY", help="API key (default $ES_API_KEY)")
    group.add_argument("--username", help="basic-auth user (default $ES_USERNAME)")
    group.add_argument("--password", help="basic-auth password (default $ES_PASSWORD)")
    group.add_argument("--ca-certs", metavar="FILE", help="CA bundle (default $ES_CA_CERTS)")


# -- helpers ----------------------------------------------------------------------------------


def _parse_weighting(text: str) -> Any:
    from es_scm.weighting import TermWeighting

    if text.strip().lower() == "bm25":
        return TermWeighting.bm25()
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"weighting must be TF:IDF (e.g. log:smooth) or bm25, got {text!r}")
    return TermWeighting(tf=parts[0], idf=parts[1])


def load_embeddings(args: argparse.Namespace, log: Any) -> Any:
    """The embeddings chosen by ``--embeddings`` / ``--word2vec-corpus`` (None for S = I)."""
    from es_scm.embeddings import WordEmbeddings

    kind = args.embeddings or ("word2vec" if args.word2vec_corpus else "glove")
    if kind == "none":
        return None
    if kind == "glove":
        return WordEmbeddings.glove_6b_50d()
    if not args.word2vec_corpus:
        raise ValueError("--embeddings word2vec needs --word2vec-corpus PATH")
    from es_scm.evaluation.word2vec import train_word2vec

    return train_word2vec(
        args.word2vec_corpus,
        cache_dir=args.word2vec_cache,
        vector_size=args.word2vec_size,
        epochs=args.word2vec_epochs,
        min_count=args.word2vec_min_count,
        max_texts=args.word2vec_max_texts,
        progress=log,
    )


def build_model_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for :meth:`SoftCosineModel.build` from the model options."""
    document = _parse_weighting(args.weighting)
    if args.query_weighting:
        query = _parse_weighting(args.query_weighting)
    elif document.scheme == "bm25":
        query = _parse_weighting("raw:natural")
    else:
        query = document
    options: dict[str, Any] = {
        "document_weighting": document,
        "query_weighting": query,
        "nonzero_limit": args.nonzero_limit,
        "threshold": args.threshold,
        "exponent": args.exponent,
        "symmetric": args.symmetric,
        "dominant": args.dominant,
        "neighbors": args.neighbors,
    }
    if args.column_order == "id":
        options["similarity_options"] = {"document_frequencies": None}
    return options


def _settings(args: argparse.Namespace, model: Any) -> dict[str, Any]:
    keys = (
        "embeddings", "word2vec_corpus", "word2vec_size", "word2vec_epochs", "word2vec_min_count",
        "word2vec_max_texts", "nonzero_limit", "threshold", "exponent", "symmetric", "dominant",
        "neighbors", "column_order", "weighting", "query_weighting", "alpha",
    )  # fmt: skip
    settings = {key: getattr(args, key, None) for key in keys}
    settings["embeddings"] = args.embeddings or ("word2vec" if args.word2vec_corpus else "glove")
    settings["n_terms"] = len(model.terms)
    settings["similarity_nnz"] = int(model.similarity_matrix.nnz)
    settings["model_id"] = model.model_id
    settings["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return settings


def _client(args: argparse.Namespace) -> Any:
    from es_scm.connection import client_from_env

    return client_from_env(
        args.es_url,
        api_key=args.api_key,
        username=args.username,
        password=args.password,
        ca_certs=args.ca_certs,
    )


def _logger(args: argparse.Namespace) -> Any:
    def log(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    return log


# -- commands ---------------------------------------------------------------------------------


def run_semeval(args: argparse.Namespace) -> int:
    """``es-scm eval semeval``: print the markdown table; write JSON files on request."""
    from es_scm.evaluation import semeval

    log = _logger(args)
    questions = semeval.read_semeval(args.xml, args.gold)
    log(
        f"read {len(questions)} original and "
        f"{sum(len(q.related) for q in questions)} related questions"
    )
    embeddings = load_embeddings(args, log)
    started = time.perf_counter()
    model = semeval.build_model(questions, embeddings, **build_model_options(args))
    log(
        f"model: {len(model.terms)} terms, S with {model.similarity_matrix.nnz} non-zeros "
        f"({time.perf_counter() - started:.1f}s)"
    )
    settings = {**_settings(args, model), "xml": args.xml, "gold": args.gold}
    client = None if args.no_es else _client(args)
    report = semeval.run_all(
        questions,
        model,
        client=client,
        alpha=args.alpha,
        index_name=args.index_name,
        keep_index=args.keep_index,
        settings=settings,
    )
    print(report.markdown())
    if args.json:
        report.write_json(args.json)
    if args.per_question:
        report.write_per_question(args.per_question)
    return 0


def _read_collections(args: argparse.Namespace) -> list[Any]:
    from es_scm.evaluation.collections import read_collection

    files = (args.docs, args.queries, args.qrels)
    if any(files):
        if not all(files) or len(args.collection) != 1:
            raise ValueError("--docs, --queries and --qrels go together, with one --collection")
        from es_scm.evaluation.trec import read_collection_files

        return [read_collection_files(args.collection[0], *files)]
    if not args.data:
        raise ValueError("give --data DIR, or --docs, --queries and --qrels")
    collections = []
    for name in args.collection:
        folder = Path(args.data)
        if (folder / name).is_dir():
            folder = folder / name
        if not folder.is_dir():
            raise ValueError(f"collection folder not found: {folder}")
        collections.append(read_collection(name, folder))
    return collections


def run_trec(args: argparse.Namespace) -> int:
    """``es-scm eval trec``: evaluate each collection; print one table."""
    from es_scm.evaluation.trec import run_collection, write_trec_run
    from es_scm.model import SoftCosineModel

    log = _logger(args)
    collections = _read_collections(args)
    embeddings = load_embeddings(args, log)
    client = _client(args)
    reports = []
    for collection in collections:
        if args.max_queries:
            kept = list(collection.judged_queries())[: args.max_queries]
            collection.queries = {q: collection.queries[q] for q in kept}
        started = time.perf_counter()
        model = SoftCosineModel.build(
            collection.documents.values(), embeddings, **build_model_options(args)
        )
        log(
            f"{collection.name}: {len(collection.documents)} documents, "
            f"{len(collection.judged_queries())} judged queries, {len(model.terms)} terms "
            f"({time.perf_counter() - started:.1f}s)"
        )
        report, runs = run_collection(
            client,
            model,
            collection,
            depth=args.depth,
            alpha=args.alpha,
            index_name=args.index_name,
            keep_index=args.keep_index,
            progress=log,
            settings=_settings(args, model),
        )
        reports.append(report)
        if args.run_dir:
            Path(args.run_dir).mkdir(parents=True, exist_ok=True)
            for method, run in runs.items():
                tag = method.replace("+", "_")
                write_trec_run(run, Path(args.run_dir) / f"{collection.name}.{tag}.run", tag)
    for number, report in enumerate(reports):
        print(report.markdown(header=number == 0))
    if args.json:
        payload = {"collections": [r.to_dict() for r in reports]}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``es-scm eval …``; errors are printed on one line and give exit status 1."""
    from elasticsearch import ApiError, TransportError

    commands = {"semeval": run_semeval, "trec": run_trec}
    try:
        return commands[args.eval_command](args)
    except (ValueError, OSError, ImportError, RuntimeError, ApiError, TransportError) as error:
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"es-scm eval: error: {message}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m es_scm.evaluation.cli eval …``)."""
    parser = argparse.ArgumentParser(prog="es-scm")
    commands = parser.add_subparsers(dest="command", required=True)
    add_parser(commands)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
