"""``--embeddings``: word vectors loaded from a file or the package, or trained on a corpus."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from es_scm.cli.errors import CLIError
from es_scm.defaults import GLOVE_EMBEDDINGS, TRAINING_DEFAULTS
from es_scm.validation import POSITIVE_INT, argparse_type

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.similarity.training import EmbeddingTraining

__all__ = ["add_training_options", "load_embeddings", "training_from_args"]

positive_int = argparse_type(POSITIVE_INT)


def add_training_options(parser: argparse.ArgumentParser) -> None:
    """How vectors are trained for ``--embeddings auto`` or ``train[:METHOD]``
    (:mod:`es_scm.similarity.training`)."""
    d = TRAINING_DEFAULTS
    group = parser.add_argument_group(
        "embeddings trained for --embeddings auto or train[:METHOD]",
        "Unset options are scaled to the corpus: fastText below 2 million tokens, word2vec "
        "above; epochs round(10,000/√tokens) within [1, 100].",
    )
    group.add_argument(
        "--train-corpus",
        metavar="PATH",
        help="train on this background corpus (any corpus format; default: the model's corpus); "
        "or train once with `es-scm embeddings train` and pass the file to --embeddings",
    )
    for name, help_text in (
        ("vector_size", "dimensions"),
        ("window", "context window"),
        ("min_count", "ignore rarer words"),
        ("epochs", "passes over the corpus"),
        ("seed", "random seed"),
        ("workers", "training threads"),
    ):
        flag = "--train-" + name.replace("_", "-").replace("vector-size", "size")
        default = getattr(d, name)
        shown = "scaled to the corpus" if default is None else default
        if name == "workers":
            shown = "one while training takes seconds, else every CPU"
        group.add_argument(
            flag,
            dest=f"train_{name}",
            type=positive_int,
            default=default,
            metavar="N",
            help=f"{help_text} (default: {shown})",
        )
    group.add_argument(
        "--deterministic",
        action="store_true",
        help="train on one thread: the same corpus gives the same vectors, bit for bit",
    )
    group.add_argument(
        "--train-cache",
        metavar="DIR",
        help="cache folder (default $ES_SCM_CACHE/embeddings or ~/.cache/es-scm/embeddings)",
    )


_TRAINING_KEYS = ("vector_size", "window", "min_count", "epochs", "seed", "workers")


def training_from_args(args: argparse.Namespace, spec: str | None = None) -> EmbeddingTraining:
    """The :class:`EmbeddingTraining` of ``--embeddings train[:METHOD]`` (or ``auto``) and
    ``--train-*`` (its progress is shown as the library's, :mod:`es_scm.progress`)."""
    spec = spec or args.embeddings
    from es_scm.similarity.training import EmbeddingTraining

    corpus = None
    if args.train_corpus:
        if not Path(args.train_corpus).exists():
            raise CLIError(f"--train-corpus not found: {args.train_corpus}")
        corpus = _Texts(args.train_corpus)
    options = {key: getattr(args, f"train_{key}") for key in _TRAINING_KEYS}
    options = {key: value for key, value in options.items() if value is not None}
    try:
        return EmbeddingTraining.from_spec(
            spec if spec.lower().startswith("train") else "train",
            **options,
            deterministic=args.deterministic,
            corpus=corpus,
            cache_dir=args.train_cache,
        )
    except ValueError as error:
        raise CLIError(f"--embeddings {spec}: {error}") from error


def load_embeddings(args: argparse.Namespace) -> Any:
    """The word vectors of ``--embeddings`` (None for ``none``; what to train for ``train…``).

    ``A+B`` combines sources with equal weights, ``0.3*A+0.7*B`` with the given ones (see
    :meth:`~es_scm.similarity.TermSimilarityMatrix.combine`).
    """
    if "+" not in args.embeddings:
        return _load_one(args, args.embeddings)
    parts = [part.strip() for part in args.embeddings.split("+")]
    weighted = []
    for part in parts:
        weight, star, spec = part.rpartition("*") if "*" in part else ("", "", part)
        try:
            value = float(weight) if star else 1.0 / len(parts)
        except ValueError:
            raise CLIError(f"--embeddings {part}: expected WEIGHT*SOURCE") from None
        source = _load_one(args, spec.strip())
        if source is None or spec.strip().lower() == "auto":
            raise CLIError(f"--embeddings: {spec.strip()} cannot be combined")
        weighted.append((value, source))
    if any(w <= 0 for w, _ in weighted) or sum(w for w, _ in weighted) > 1 + 1e-9:
        raise CLIError("--embeddings: combined weights must be positive, summing to at most 1")
    return weighted


def _load_one(args: argparse.Namespace, name: str) -> Any:
    from es_scm.similarity import WordEmbeddings

    if name.lower() == "none":
        return None
    if name.lower() == "auto":
        from es_scm.model.auto import AutoEmbeddings

        return AutoEmbeddings(training=training_from_args(args, name))
    if name.lower().startswith("train"):
        return training_from_args(args, name)
    if name.lower() == GLOVE_EMBEDDINGS:
        return WordEmbeddings.glove_6b_50d(limit=args.embeddings_limit)
    path = Path(name)
    if not path.is_file():
        raise CLIError(
            f"embeddings file not found: {name} (or use {GLOVE_EMBEDDINGS}, train or none)"
        )
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


class _Texts:
    """The texts of a corpus file, read anew on every iteration (any corpus format)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __iter__(self) -> Any:
        from es_scm.corpus import read_corpus

        return (document.text for document in read_corpus(self.path))
