"""``es-scm eval semeval|trec``: retrieval quality, built from the same options as ``model build``.

es-scm eval semeval --xml dev.xml --gold dev.xml.subtaskB.relevancy
es-scm eval trec --collection cranfield cisi cacm --data ../shared/data/ir-collections
es-scm eval collection --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt --run scm.run
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from es_scm.cli.errors import EXIT_OK, EXIT_USAGE, CLIError
from es_scm.cli.options import (
    Command,
    add_hybrid_options,
    add_judged_collection_options,
    add_model_options,
    client_from_args,
    hybrid_kwargs,
    judged_collection_from_args,
    load_embeddings,
    model_options,
    no_arguments,
    positive_int,
)

logger = logging.getLogger(__name__)

_EXAMPLE_SEMEVAL = (
    "es-scm eval semeval --xml SemEval2016-Task3-CQA-QL-dev.xml "
    "--gold SemEval2016-Task3-CQA-QL-dev.xml.subtaskB.relevancy --json dev.json"
)
_EXAMPLE_TREC = "es-scm eval trec --collection cranfield cisi cacm --data ir-collections"


def add_semeval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--xml",
        nargs="+",
        required=True,
        metavar="FILE",
        help="SemEval-2016/2017 Task 3 English XML file(s); all are evaluated "
        "and the vocabulary/IDF is fitted on all of them",
    )
    parser.add_argument(
        "--gold",
        nargs="*",
        default=[],
        metavar="FILE",
        help="*.subtaskB.relevancy gold file(s): labels and the IR baseline "
        "(default: RELQ_RELEVANCE2ORGQ and RELQ_RANKING_ORDER from the XML)",
    )
    parser.add_argument(
        "--per-question",
        metavar="FILE",
        help="write every question's rankings, scores, AP and RR as JSON",
    )
    parser.add_argument(
        "--no-es",
        action="store_true",
        help="skip the Elasticsearch methods (BM25, SCM via Elasticsearch)",
    )
    _add_evaluation_options(parser)


def add_trec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collection",
        nargs="+",
        required=True,
        choices=["cranfield", "cisi", "cacm"],
        help="the collection(s) and format",
    )
    parser.add_argument(
        "--data", metavar="DIR", help="the collection's folder, or a folder holding one each"
    )
    parser.add_argument("--docs", metavar="FILE", help="documents file (instead of --data)")
    parser.add_argument("--queries", metavar="FILE", help="queries file (instead of --data)")
    parser.add_argument("--qrels", metavar="FILE", help="relevance judgments (instead of --data)")
    parser.add_argument(
        "--depth",
        type=positive_int,
        default=100,
        help="documents retrieved per query by every method (default 100)",
    )
    parser.add_argument(
        "--max-queries",
        type=positive_int,
        metavar="N",
        help="evaluate only the first N judged queries (quick runs)",
    )
    parser.add_argument("--run-dir", metavar="DIR", help="also write TREC run files here")
    _add_evaluation_options(parser)


def add_collection_arguments(parser: argparse.ArgumentParser) -> None:
    group = add_judged_collection_options(parser, "topics and judgments")
    group.add_argument("--name", help="the collection's name in the table (default: the corpus's)")
    group.add_argument(
        "--depth", type=positive_int, default=100, help="documents retrieved per topic (100)"
    )
    group.add_argument("--run", metavar="FILE", help="write the SCM's run in TREC format")
    group.add_argument("--run-dir", metavar="DIR", help="write every method's TREC run here")
    parser.set_defaults(max_queries=None)
    _add_evaluation_options(parser)


def _add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    word2vec = parser.add_argument_group("word2vec trained on a corpus (instead of --embeddings)")
    word2vec.add_argument(
        "--word2vec-corpus",
        metavar="PATH",
        help="train word2vec on this corpus (a WikiExtractor .tar.xz, SemEval XML, a folder or "
        "a text file) and use it for S",
    )
    word2vec.add_argument(
        "--word2vec-cache",
        metavar="DIR",
        help="cache folder (default $ES_SCM_CACHE/word2vec or ~/.cache/es-scm/word2vec)",
    )
    word2vec.add_argument("--word2vec-size", type=positive_int, default=100, help="size (100)")
    word2vec.add_argument("--word2vec-epochs", type=positive_int, default=5, help="epochs (5)")
    word2vec.add_argument(
        "--word2vec-min-count", type=positive_int, default=5, help="min count (5)"
    )
    word2vec.add_argument(
        "--word2vec-max-texts",
        type=positive_int,
        metavar="N",
        help="train on the first N texts (paragraphs) of the corpus only",
    )
    add_hybrid_options(parser, "BM25 + SCM (hybrid search)")
    group = parser.add_argument_group("output and index")
    group.add_argument("--json", metavar="FILE", help="write the scores and settings as JSON")
    group.add_argument(
        "--index-name", metavar="NAME", help="index to create (default es-scm-eval-…-<random>)"
    )
    group.add_argument("--keep-index", action="store_true", help="do not delete the index")
    group.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _choose(args: argparse.Namespace) -> int:
    raise CLIError(
        "choose one: es-scm eval semeval|trec|collection (see es-scm eval --help)", EXIT_USAGE
    )


def _embeddings(args: argparse.Namespace) -> Any:
    if not args.word2vec_corpus:
        return load_embeddings(args)
    from es_scm.evaluation.word2vec import train_word2vec

    return train_word2vec(
        args.word2vec_corpus,
        cache_dir=args.word2vec_cache,
        vector_size=args.word2vec_size,
        epochs=args.word2vec_epochs,
        min_count=args.word2vec_min_count,
        max_texts=args.word2vec_max_texts,
    )


def _settings(args: argparse.Namespace, model: Any, embeddings: Any) -> dict[str, Any]:
    description = model.describe()
    return {
        "embeddings": _embeddings_name(description["similarity"]),
        "word2vec_corpus": args.word2vec_corpus,
        **{key: value for key, value in model_options(args).items() if "weighting" not in key},
        "weighting": description["document_weighting"],
        "query_weighting": description["query_weighting"],
        "hybrid": hybrid_kwargs(args),
        "n_terms": description["terms"],
        "similarity_nnz": description["similarity_nnz"],
        "similarity": description["similarity"],
        "model_id": description["model_id"],
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _embeddings_name(info: dict[str, Any]) -> str:
    """The embeddings of S's build record (combined ones joined by +), or none."""
    if info.get("source") == "combination":
        names = [_embeddings_name(part) for part in info.get("parts", [])]
        return " + ".join(name for name in names if name != "none") or "none"
    return str(info.get("embeddings", {}).get("name", "none"))


def _quiet(args: argparse.Namespace) -> None:
    """Progress messages are on by default for evaluations (long runs), off with --quiet."""
    if not getattr(args, "verbose", False):
        logging.getLogger("es_scm").setLevel(logging.WARNING if args.quiet else logging.INFO)


def run_semeval(args: argparse.Namespace) -> int:
    """``es-scm eval semeval``: print the markdown table; write JSON files on request."""
    from es_scm.evaluation import semeval, semeval_data

    _quiet(args)
    questions = semeval_data.read_semeval(args.xml, args.gold)
    related = sum(len(q.related) for q in questions)
    logger.info("read %d original and %d related questions", len(questions), related)
    embeddings = _embeddings(args)
    model = semeval.build_model(questions, embeddings, **model_options(args))
    settings = {**_settings(args, model, embeddings), "xml": args.xml, "gold": args.gold}
    report = semeval.run_all(
        questions,
        model,
        client=None if args.no_es else client_from_args(args),
        hybrids={"bm25+scm": hybrid_kwargs(args)},
        index_name=args.index_name,
        keep_index=args.keep_index,
        settings=settings,
    )
    print(report.markdown())
    if args.json:
        report.write_json(args.json)
    if args.per_question:
        report.write_per_question(args.per_question)
    return EXIT_OK


def _read_collections(args: argparse.Namespace) -> list[Any]:
    from es_scm.evaluation.collections import read_collection
    from es_scm.evaluation.trec import read_collection_files

    files = (args.docs, args.queries, args.qrels)
    if any(files):
        if not all(files) or len(args.collection) != 1:
            raise CLIError("--docs, --queries and --qrels go together, with one --collection")
        return [read_collection_files(args.collection[0], *files)]
    if not args.data:
        raise CLIError("give --data DIR, or --docs, --queries and --qrels")
    collections = []
    for name in args.collection:
        folder = Path(args.data)
        if (folder / name).is_dir():
            folder = folder / name
        if not folder.is_dir():
            raise CLIError(f"collection folder not found: {folder}")
        collections.append(read_collection(name, folder))
    return collections


def run_collection_command(args: argparse.Namespace) -> int:
    """``es-scm eval collection``: any corpus, topics and qrels; print the table."""
    collection = judged_collection_from_args(args, name=args.name)
    return _evaluate(args, [collection])


def run_trec(args: argparse.Namespace) -> int:
    """``es-scm eval trec``: evaluate each collection; print one table."""
    return _evaluate(args, _read_collections(args))


def _evaluate(args: argparse.Namespace, collections: list[Any]) -> int:
    from es_scm.evaluation.trec import run_collection, write_trec_run
    from es_scm.model import SoftCosineModel

    _quiet(args)
    embeddings = _embeddings(args)
    client = client_from_args(args)
    reports = []
    for collection in collections:
        if args.max_queries:
            kept = list(collection.judged_queries())[: args.max_queries]
            collection.queries = {q: collection.queries[q] for q in kept}
        model = SoftCosineModel.build(
            collection.documents.values(), embeddings, **model_options(args)
        )
        logger.info(
            "%s: %d documents, %d judged queries, %d terms",
            collection.name,
            len(collection.documents),
            len(collection.judged_queries()),
            len(model.terms),
        )
        report, runs = run_collection(
            client,
            model,
            collection,
            depth=args.depth,
            hybrids={"bm25+scm": hybrid_kwargs(args)},
            index_name=args.index_name,
            keep_index=args.keep_index,
            settings=_settings(args, model, embeddings),
        )
        reports.append(report)
        if getattr(args, "run", None):
            write_trec_run(runs["scm"], args.run, "scm")
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
    return EXIT_OK


SEMEVAL = Command(
    "semeval",
    "rank each original question's 10 related questions (SemEval Task 3 subtask B)",
    _EXAMPLE_SEMEVAL,
    add_semeval_arguments,
    run_semeval,
    ("common", "connection"),
    "Rank each original question's related questions with the official IR baseline, TF-IDF "
    "cosine, the local exact SCM, BM25 and the SCM through Elasticsearch, and BM25 + SCM; report "
    "the official MAP, AvgRec and MRR.",
)
TREC = Command(
    "trec",
    "MAP, nDCG@10, R@100 of BM25, SCM and BM25 + SCM on Cranfield/CISI/CACM",
    _EXAMPLE_TREC,
    add_trec_arguments,
    run_trec,
    ("common", "connection"),
    "Index a SMART-format test collection and evaluate BM25 (Elasticsearch), the SCM "
    "(Elasticsearch, exact mode) and BM25 + SCM with ir_measures.",
)
COLLECTION = Command(
    "collection",
    "MAP, nDCG@10, R@100 of BM25, SCM and BM25 + SCM on your corpus, topics and qrels",
    "es-scm eval collection --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt "
    "--run scm.run",
    add_collection_arguments,
    run_collection_command,
    ("common", "connection"),
    "Index your corpus (any format that es-scm index reads), rank your topics (JSONL, TSV or a "
    "TREC topic file) with BM25, the SCM and BM25 + SCM through Elasticsearch, and score them "
    "against TREC qrels with ir_measures; write TREC run files on request.",
)
COMMAND = Command(
    "eval",
    "evaluate retrieval quality (SemEval-2016/2017 Task 3 B, TREC-style collections, yours)",
    f"{_EXAMPLE_SEMEVAL}\n{_EXAMPLE_TREC}\n"
    "es-scm eval collection --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt",
    no_arguments,
    _choose,
    description="Evaluate the SCM against TF-IDF and BM25, locally and through Elasticsearch.",
    subcommands=(SEMEVAL, TREC, COLLECTION),
)
