"""``es-scm embeddings train``: train word vectors once on a (large) corpus, reuse them in models.

es-scm embeddings train --corpus wiki.jsonl --out wiki-vectors.bin
es-scm model build --corpus docs.jsonl --out m --embeddings 0.3*glove-6b-50d+0.7*wiki-vectors.bin
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from es_scm.cli.embeddings import add_training_options, training_from_args
from es_scm.cli.errors import EXIT_OK, EXIT_USAGE, CLIError
from es_scm.cli.options import Command, add_corpus_options, no_arguments, read_documents


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    add_corpus_options(parser)
    parser.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the vectors, in word2vec's format: binary for a .bin suffix, else text; "
        "--embeddings FILE reads them",
    )
    parser.add_argument(
        "--method",
        choices=("auto", "word2vec", "fasttext"),
        default="auto",
        help="gensim's method (default auto: fastText below 2 million tokens, word2vec above)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite FILE")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_training_options(parser)


def _choose(args: argparse.Namespace) -> int:
    raise CLIError("choose an action: es-scm embeddings train (see --help)", EXIT_USAGE)


def run_train(args: argparse.Namespace) -> int:
    """Tokenize the corpus as models do, train (cached), write the vectors."""
    from es_scm.model.text import Tokenizer
    from es_scm.similarity.training import train_embeddings

    out = Path(args.out)
    if out.exists() and not args.force:
        raise CLIError(f"{out} exists; pass --force to overwrite it")
    if args.train_corpus:
        raise CLIError("--train-corpus does not apply here: --corpus is what is trained on")
    training = training_from_args(args, f"train:{args.method}")
    tokenizer = Tokenizer()
    texts = (document.text for document in read_documents(args))
    started = time.perf_counter()
    embeddings = train_embeddings(tokenizer.tokenize_many(texts), training, name=args.corpus)
    if not len(embeddings):
        raise CLIError(f"no word of {args.corpus} was seen often enough to get a vector")
    embeddings.save_word2vec(out, binary=out.suffix.lower() == ".bin")
    record = embeddings.training or {}
    print(
        f"{len(embeddings):,} vectors × {embeddings.dim} ({record.get('method')}, "
        f"{record.get('epochs')} epochs, {record.get('tokens', 0):,} tokens) in "
        f"{time.perf_counter() - started:.1f}s"
    )
    print(f"saved to {out}")
    print(f"next: es-scm model build --corpus DOCS --out MODEL --embeddings {out}")
    return EXIT_OK


TRAIN = Command(
    "train",
    "train word vectors on a corpus and save them in word2vec's format",
    "es-scm embeddings train --corpus wiki.jsonl --out wiki-vectors.bin\n"
    "es-scm model build --corpus docs.jsonl --out m --embeddings "
    "0.3*glove-6b-50d+0.7*wiki-vectors.bin",
    add_train_arguments,
    run_train,
    description="Train word2vec or fastText (scaled to the corpus, as --embeddings auto does) "
    "on a corpus tokenized as models tokenize, once, and save the vectors; any number of models "
    "can then use them with --embeddings FILE, alone or combined.",
)
COMMAND = Command(
    "embeddings",
    "train word vectors once on a large corpus, for many models",
    "es-scm embeddings train --corpus wiki.jsonl --out wiki-vectors.bin",
    no_arguments,
    _choose,
    subcommands=(TRAIN,),
)
