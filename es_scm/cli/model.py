"""``es-scm model build`` and ``es-scm model info``."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from es_scm.cli.errors import EXIT_OK, EXIT_USAGE, CLIError
from es_scm.cli.options import (
    Command,
    add_corpus_options,
    add_model_options,
    load_embeddings,
    load_model,
    model_options,
    no_arguments,
    read_documents,
)
from es_scm.cli.progress import progress_messages
from es_scm.options.validation import AnyOf, Interval, argparse_type

# scikit-learn's convention: 1 is no workers, -1 every CPU, -2 all but one; 0 means nothing.
n_jobs = argparse_type(AnyOf((Interval(int, 1), Interval(int, high=-1))))


def add_build_arguments(parser: argparse.ArgumentParser) -> None:
    add_corpus_options(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="where to save the model")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a model in DIR (in one step: killed midway, the old model stays whole)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress (by default: bars with the time left on a terminal, else a line per "
        "stage and every few seconds on stderr)",
    )
    parser.add_argument(
        "--n-jobs",
        type=n_jobs,
        metavar="N",
        help="worker processes that tokenize and count the corpus (default: every CPU for "
        "20,000 documents or more, else none; 1: none; -1: every CPU; -2: all but one); the "
        "model is the same whatever N",
    )
    add_model_options(parser)


def add_info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="DIR", help="a model from `es-scm model build`")


def _choose(args: argparse.Namespace) -> int:
    raise CLIError(
        "choose an action: es-scm model build|info (see es-scm model --help)", EXIT_USAGE
    )


def run_build(args: argparse.Namespace) -> int:
    from es_scm.model import SoftCosineModel
    from es_scm.similarity import WordEmbeddings

    args.quiet = args.no_progress
    progress_messages(args)  # the stages and their progress, unless --no-progress
    out = Path(args.out)
    if (out / "model.json").exists() and not args.force:
        raise CLIError(f"{out} already holds a model; pass --force to overwrite it")
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {out} exists and is not a directory")
    documents = read_documents(args)
    started = time.perf_counter()
    embeddings = load_embeddings(args)
    if isinstance(embeddings, WordEmbeddings):
        seconds = time.perf_counter() - started
        print(f"embeddings: {len(embeddings):,} words × {embeddings.dim} ({seconds:.1f}s)")
    count = 0

    def texts() -> Iterator[str]:
        nonlocal count
        for document in documents:
            count += 1
            yield document.text

    started = time.perf_counter()
    model = SoftCosineModel.build(texts(), embeddings, n_jobs=args.n_jobs, **model_options(args))
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
    info = model.similarity_matrix.build_info
    auto = info.get("auto")
    if auto and auto["choice"] != "none":  # none: its warning has said why, once
        print(f"embeddings auto: {auto['choice']} ({auto['reason']})")
    for line in source_lines(info):
        print(f"S: {line}")
    print(f"saved to {out}")
    print(f"next: es-scm index --model {out} --index NAME --corpus {args.corpus}")
    return EXIT_OK


def run_info(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    description = model.describe()
    tokenizer = model.tokenizer.get_config()
    stop_words = tokenizer.pop("stop_words", None)
    rows = [
        ("model_id", description["model_id"]),
        ("terms", f"{description['terms']:,}"),
        ("documents", f"{description['documents']:,}"),
        ("pruned tokens", _pruned(model.vocabulary)),
        ("S non-zeros", f"{description['similarity_nnz']:,}"),
        ("document weighting", description["document_weighting"]),
        ("query weighting", description["query_weighting"]),
    ]
    built = sorted(_flatten(description["similarity"]), key=lambda item: item[0] != "source")
    auto = description["similarity"].get("auto")
    if auto:
        rows.append(("S chosen (embeddings auto)", f"{auto['choice']}: {auto['reason']}"))
    rows += [("S source", line) for line in source_lines(description["similarity"])]
    rows += [(f"S {key}", _value(value)) for key, value in built if not key.startswith("auto.")]
    if not description["similarity"]:
        rows.append(("S built with", "not recorded (a model saved by an older es-scm)"))
    unseen = len(model.unseen) if model.unseen is not None else 0
    rows.append(("unseen query words", f"{unseen:,} words outside the terms get a column of S"))
    hybrid = model.hybrid
    rows.append(
        (
            "hybrid search",
            json.dumps(hybrid) if hybrid else "the defaults (es-scm tune saves a model's own)",
        )
    )
    rows.append(("tokenizer", json.dumps(tokenizer, sort_keys=True, ensure_ascii=False)))
    rows.append(("stop words", _stop_words(stop_words)))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return EXIT_OK


def source_lines(info: dict[str, Any], weight: float = 1.0) -> list[str]:
    """One line per source of S in its build record: its weight in S, what it is, its settings.

    A combination's parts are listed with their weights multiplied through (the weight each
    source's similarities have in S).
    """
    source = info.get("source")
    if source == "combination":
        return [
            line
            for part in info.get("parts", [])
            for line in source_lines(part, weight * float(part.get("weight", 1.0)))
        ]
    share = f"{weight:.3g} × "
    if source == "embeddings":
        limit = info.get("nonzero_limit")
        own = info.get("own_options")
        return [
            f"{share}{info['embeddings']['name']}: cosines above {info['threshold']:g} raised to "
            f"{info['exponent']:g}, at most {'no limit' if limit is None else limit} per column"
            + (f" (its own: {own})" if own else "")
        ]
    if source == "synonyms":
        files = ", ".join(f["path"] for f in info.get("files", []))
        skipped = sum(f.get("multi_word_entries", 0) for f in info.get("files", []))
        cut = info.get("rules_cut_to_nonzero_limit", 0)
        return [
            f"{share}synonyms from {files}: {info['pairs']:,} pairs in S, "
            f"{info['pairs_outside_vocabulary']:,} with a term outside the vocabulary, "
            f"{skipped:,} multi-word entries skipped"
            + (f", {cut:,} rules cut to nonzero_limit={info['nonzero_limit']}" if cut else "")
        ]
    if source == "levenshtein":
        return [f"{share}edit distance (alpha {info['alpha']:g}, beta {info['beta']:g})"]
    if source in (None, "identity"):
        return []
    return [f"{share}{source}"]


def _flatten(info: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"embeddings": {"name": ...}}`` → ``[("embeddings.name", ...)]``."""
    items: list[tuple[str, Any]] = []
    for key, value in info.items():
        if isinstance(value, dict):
            items += _flatten(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for number, part in enumerate(value, start=1):
                items += _flatten(part, f"{prefix}{key}[{number}].")
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _pruned(vocabulary: Any) -> str:
    """The share of the model's corpus that pruning dropped, for ``model info``."""
    share = vocabulary.pruned_share
    if share is None:
        return "not recorded (a model saved by an older es-scm)"
    dropped = vocabulary.corpus_tokens - vocabulary.num_tokens
    return (
        f"{100 * share:.1f}% of the corpus's {vocabulary.corpus_tokens:,} tokens ({dropped:,}: "
        "terms dropped by --min-df/--max-df/--max-terms; es-scm index warns when a corpus has "
        "far more unknown tokens)"
    )


def _value(value: Any) -> str:
    return "none" if value is None else str(value)


def _stop_words(stop_words: Any) -> str:
    if stop_words is None:
        return "none"
    if isinstance(stop_words, str):
        return stop_words
    words = sorted(stop_words)
    shown = ", ".join(words[:8])
    return f"{len(words)} ({shown}{', …' if len(words) > 8 else ''})"


BUILD = Command(
    "build",
    "build a model (vocabulary, weighting, term similarity matrix S) from a corpus",
    "es-scm model build --corpus news.jsonl --out news-model\n"
    "es-scm model build --corpus docs/ --out m --embeddings vectors.bin "
    "--embeddings-format word2vec-binary\n"
    "es-scm model build --corpus news.csv --text-field body --out m --levenshtein 0.3\n"
    "es-scm model build --corpus news.jsonl --out m --embeddings train:fasttext\n"
    "es-scm model build --corpus news.jsonl --out m --embeddings encoder --encoder-mode pieces\n"
    "es-scm model build --corpus news.jsonl --out m --synonyms synonyms.txt --synonym-weight 0.3",
    add_build_arguments,
    run_build,
)
INFO = Command(
    "info", "describe a saved model", "es-scm model info news-model", add_info_arguments, run_info
)
COMMAND = Command(
    "model",
    "build or describe a soft cosine model",
    "es-scm model build --corpus news.jsonl --out news-model",
    no_arguments,
    _choose,
    subcommands=(BUILD, INFO),
)
