"""Word embeddings trained on a corpus with gensim ``Word2Vec`` or ``FastText``: the one trainer.

:meth:`es_scm.model.SoftCosineModel.build` (``embeddings="train"`` or ``"auto"``), ``es-scm model
build``, ``es-scm embeddings train`` and the evaluations all train through :func:`train_on_file`.

Scaled to the corpus
    Parameters left at ``None`` are chosen from the corpus's token count T by
    :meth:`EmbeddingTraining.plan` (constants in :data:`es_scm.options.defaults.TRAINING_SCALE`):
    epochs round(10,000 / √T) within [1, 100], so the total work grows as √T; fastText (skip-gram
    with character n-grams, which relate *flow*, *flows* and *upflow* and give rare words a vector)
    below 2 million tokens, word2vec above; an n-gram table sized to the vocabulary instead of
    gensim's 2 million buckets.
Threads and determinism
    One thread with the fixed ``seed`` gives the same vectors from the same sentences and
    parameters, bit for bit (same gensim version). That is the default while the work is small
    (fewer than 4 million token passes, tokens × epochs: seconds); beyond, every CPU trains, and
    gensim's threads interleave their updates, so two runs give slightly different vectors —
    the cache (below) makes a second build of the same corpus reuse the first run's.
    ``deterministic=True`` keeps one thread whatever the size; ``workers`` sets the threads.
Cache
    The tokenized sentences are written once to a file, one sentence a line, hashed as they are
    written, and deleted after training; the trained vectors are kept under a key that hashes
    that content, every parameter that decides them and the gensim version. Only what a model
    can use is kept — the vectors of the trained words and, for fastText, of the other words of
    the corpus and the requested terms, composed from their n-grams — as a float32 ``.npy`` and
    a JSON word list (:mod:`es_scm.similarity.training_files`): no pickle,
    no n-gram table. The folder (``cache_dir``, else ``$ES_SCM_CACHE/embeddings``, else
    ``~/.cache/es-scm/embeddings``) and its files are private to the user (0700/0600); another
    user's folder is refused, and a cached file that another account could have written is
    ignored (trained again).
Progress
    ``progress(done, total)`` counts the sentences trained on over all epochs, so a progress bar
    can show the time left; the same count is shown as es-scm's progress (:mod:`es_scm.progress`:
    a line every few seconds, or a bar on the command line's terminal).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from es_scm.extras import require
from es_scm.options import TrainingOptions
from es_scm.options.defaults import TRAINING_DEFAULTS, TRAINING_SCALE
from es_scm.progress import Progress
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.source import Preparation, SimilaritySource, register
from es_scm.similarity.training_files import (
    SentenceFile,
    VectorCache,
    cache_key,
    default_cache_dir,
    file_statistics,
    private_directory,
)

__all__ = [
    "EmbeddingTraining",
    "SentenceFile",
    "TrainingPlan",
    "as_training",
    "cpu_count",
    "default_cache_dir",
    "private_directory",
    "train_embeddings",
    "train_on_file",
]

logger = logging.getLogger(__name__)
#: Fewer training tokens than this give embeddings too noisy to relate words (a warning says so).
SMALL_CORPUS_TOKENS = 2_000

#: ``progress(sentences_done, sentences_total)`` while training, over all epochs.
ProgressCallback = Callable[[int, int], None]
_PROGRESS_EVERY = 1_000  # sentences between two progress calls


def cpu_count() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True)
class TrainingPlan:
    """What :meth:`EmbeddingTraining.plan` chose for a corpus: gensim's method and parameters.

    ``params`` are the keyword arguments of gensim's ``Word2Vec``/``FastText`` (without
    ``workers``); ``reasons`` says why each scaled parameter has its value.
    """

    method: str
    params: dict[str, Any]
    workers: int
    tokens: int
    reasons: dict[str, str]

    def record(self) -> dict[str, Any]:
        """What decides the vectors, as recorded in ``model.json`` and hashed into the cache key."""
        deterministic = self.workers == 1
        return {"method": self.method, **self.params, "deterministic": deterministic}


@register
@dataclass(frozen=True)
class EmbeddingTraining(TrainingOptions, SimilaritySource):
    """What to train: the method, gensim's parameters (:class:`~es_scm.options.TrainingOptions`,
    checked when made; defaults :data:`es_scm.options.defaults.TRAINING_DEFAULTS`), and on which
    texts.

    A source of S (:class:`~es_scm.similarity.source.SimilaritySource`, named ``"train"``):
    :meth:`prepare` trains the :class:`WordEmbeddings` that S is built from, on the model's
    corpus (:meth:`corpus_sink`) or on ``corpus``.

    Parameters
    ----------
    method : {"auto", "word2vec", "fasttext"}
        ``"auto"`` picks by corpus size (:data:`es_scm.options.defaults.TRAINING_SCALE`).
    vector_size, window, sg, seed, min_n, max_n, sample
        gensim's parameters (``min_n``, ``max_n``: fastText's character n-gram lengths).
    min_count, epochs, bucket : int or None
        gensim's parameters; ``None`` scales them to the corpus (:meth:`plan`).
    workers : int or None
        Training threads; ``None`` is every CPU.
    deterministic : bool
        Train on one thread, so that the same corpus gives the same vectors bit for bit.
    corpus : iterable of str, optional
        A background corpus; None trains on the corpus being modelled.
    cache_dir : path, optional
        See :func:`default_cache_dir`.
    progress : callable, optional
        ``progress(sentences_done, sentences_total)`` while training (a progress bar).
    """

    method: str = TRAINING_DEFAULTS.method
    vector_size: int = TRAINING_DEFAULTS.vector_size
    window: int = TRAINING_DEFAULTS.window
    min_count: int | None = TRAINING_DEFAULTS.min_count
    epochs: int | None = TRAINING_DEFAULTS.epochs
    sg: int = TRAINING_DEFAULTS.sg
    seed: int = TRAINING_DEFAULTS.seed
    min_n: int = TRAINING_DEFAULTS.min_n
    max_n: int = TRAINING_DEFAULTS.max_n
    bucket: int | None = TRAINING_DEFAULTS.bucket
    sample: float = TRAINING_DEFAULTS.sample
    workers: int | None = TRAINING_DEFAULTS.workers
    deterministic: bool = TRAINING_DEFAULTS.deterministic
    corpus: Iterable[str] | None = field(default=None, compare=False, repr=False)
    cache_dir: str | Path | None = field(default=None, compare=False)
    progress: ProgressCallback | None = field(default=None, compare=False, repr=False)

    kind = "train"
    accepts = "an EmbeddingTraining or 'train[:word2vec|fasttext]'"

    @classmethod
    def recognize(cls, value: Any) -> EmbeddingTraining | None:
        """Itself or a ``"train…"`` spec."""
        return as_training(value)

    def corpus_sink(self) -> SentenceFile | None:
        """A sentence file for the model's corpus when trained on it (no background corpus)."""
        return SentenceFile(self.cache_dir) if self.corpus is None else None

    def prepare(self, preparation: Preparation) -> WordEmbeddings:
        """The vectors trained on the model's corpus, or on the background corpus tokenized by
        the model's tokenizer (cached: :func:`train_on_file`)."""
        if self.corpus is None:
            own = preparation.corpus
            assert own is not None, "the model's corpus was not kept for the training"
            path, digest = own.file()
            return train_on_file(
                path,
                self,
                terms=preparation.terms,
                name="the model's corpus",
                digest=digest,
                counts=own.counts,
            )
        sentences = preparation.tokenizer.tokenize_many(self.corpus)
        return train_embeddings(
            sentences, self, terms=preparation.terms, name="a background corpus"
        )

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> EmbeddingTraining:
        """``"train"``, ``"train:word2vec"`` or ``"train:fasttext"`` (plus keyword options)."""
        head, _, method = spec.strip().lower().partition(":")
        if head != "train":
            raise ValueError(f"a training spec is train[:word2vec|fasttext], got {spec!r}")
        return cls(method=method or "auto", **options)

    def plan(self, tokens: int, distinct: int) -> TrainingPlan:
        """The method and parameters for a corpus of ``tokens`` tokens, ``distinct`` distinct.

        See :data:`es_scm.options.defaults.TRAINING_SCALE` for the rules and the measurements behind
        them; a parameter given explicitly is kept as it is.
        """
        scale = TRAINING_SCALE
        reasons = {}
        method = self.method
        if method == "auto":
            small = tokens < scale.fasttext_max_tokens
            method = "fasttext" if small else "word2vec"
            reasons["method"] = (
                f"{tokens:,} tokens {'<' if small else '>='} {scale.fasttext_max_tokens:,}: "
                + ("fastText's n-grams help small corpora" if small else "word2vec is faster")
            )
        epochs = self.epochs
        if epochs is None:
            wanted = round(scale.epoch_scale / math.sqrt(max(tokens, 1)))
            epochs = min(scale.max_epochs, max(1, wanted))
            reasons["epochs"] = f"round({scale.epoch_scale:,} / √{tokens:,}) in [1, 100]"
        min_count = self.min_count
        if min_count is None:
            min_count = scale.min_count(method)
            reasons["min_count"] = f"{method}'s default here"
        params: dict[str, Any] = {
            "vector_size": self.vector_size,
            "window": self.window,
            "min_count": min_count,
            "epochs": epochs,
            "sg": self.sg,
            "seed": self.seed,
            "sample": self.sample,
        }
        if method == "fasttext":
            bucket = self.bucket
            if bucket is None:
                wanted = scale.buckets_per_token * distinct
                bucket = min(scale.max_bucket, max(scale.min_bucket, wanted))
                reasons["bucket"] = f"{scale.buckets_per_token} per distinct token"
            params.update(min_n=self.min_n, max_n=self.max_n, bucket=bucket)
        passes = tokens * epochs
        if self.deterministic or self.workers == 1:
            workers = 1
        elif self.workers is not None:
            workers = self.workers
        elif passes < scale.deterministic_max_passes:
            workers = 1
            reasons["workers"] = (
                f"{passes:,} token passes < {scale.deterministic_max_passes:,}: one thread, "
                "reproducible"
            )
        else:
            workers = cpu_count()
            reasons["workers"] = f"{passes:,} token passes: every CPU"
        return TrainingPlan(method, params, workers, tokens, reasons)

    def describe(self) -> dict[str, Any]:
        """The parameters as given (``None``: scaled to the corpus)."""
        values = asdict(replace(self, corpus=None, progress=None, cache_dir=None))
        values.pop("corpus"), values.pop("progress"), values.pop("cache_dir")
        return values


def as_training(embeddings: Any) -> EmbeddingTraining | None:
    """An :class:`EmbeddingTraining` from itself or a ``"train…"`` spec; None for anything else."""
    if isinstance(embeddings, EmbeddingTraining):
        return embeddings
    if isinstance(embeddings, str) and embeddings.strip().lower().startswith("train"):
        return EmbeddingTraining.from_spec(embeddings)
    return None


def train_embeddings(
    sentences: Iterable[Sequence[str]],
    training: EmbeddingTraining,
    *,
    terms: Sequence[str] = (),
    name: str = "corpus",
) -> WordEmbeddings:
    """Word embeddings trained on tokenized ``sentences`` (cached by content and parameters).

    Parameters
    ----------
    sentences : iterable of token lists
    training : EmbeddingTraining
    terms : sequence of str, optional
        fastText only: words that get a (subword) vector even when not trained as words.
    name : str
        What the corpus is, for the embeddings' name.

    Returns
    -------
    WordEmbeddings
        With ``training`` (the record saved in ``model.json``).
    """
    sink = SentenceFile(training.cache_dir)
    for tokens in sentences:
        sink.write(tokens)
    counts = (sink.tokens, sink.distinct)
    path, digest = sink.close()
    try:
        return train_on_file(path, training, terms=terms, name=name, digest=digest, counts=counts)
    finally:
        path.unlink(missing_ok=True)  # the vectors are cached; the corpus is not kept


def train_on_file(
    path: str | Path,
    training: EmbeddingTraining,
    *,
    terms: Sequence[str] = (),
    name: str | None = None,
    digest: str | None = None,
    counts: tuple[int, int] | None = None,
) -> WordEmbeddings:
    """Word embeddings trained on a file of sentences (one a line, tokens split by spaces).

    ``digest`` is the file's sha256 and ``counts`` its (tokens, distinct tokens), if already
    known (else they are read from the file).
    """
    gensim = require("gensim", "training word embeddings")
    path = Path(path)
    if digest is None or counts is None:
        digest, counts = file_statistics(path)
    plan = training.plan(*counts)
    record = plan.record()
    key = cache_key(digest, record, gensim.__version__)
    directory = private_directory(training.cache_dir or default_cache_dir())
    cached = VectorCache(directory, f"{plan.method}-{key}")
    embeddings = cached.load(terms)
    if embeddings is None:
        started = time.perf_counter()
        model = _train(path, plan, training.progress, counts[0])
        seconds = time.perf_counter() - started
        embeddings, no_vector = _to_embeddings(
            model.wv, plan.method, _corpus_words(path, plan), terms
        )
        cached.save(embeddings, no_vector, seconds, plan.method)
        logger.info(
            "%s: %d vectors from %d tokens (%d epochs, %d threads) in %.1fs",
            plan.method,
            len(embeddings),
            plan.tokens,
            plan.params["epochs"],
            plan.workers,
            seconds,
        )
    elif training.progress is not None:
        training.progress(1, 1)  # nothing left to train
    embeddings.name = f"{plan.method} trained on {name or path.name}"
    embeddings.training = {
        **record,
        "workers": plan.workers,
        "tokens": plan.tokens,
        "scaled": plan.reasons,
        "corpus_sha256": digest,
        "cache_key": key,
    }
    return embeddings


class _Counted:
    """A sentence file re-read on every epoch, reporting progress every few sentences: to the
    caller's ``progress(done, total)`` and as the library's progress lines (or bar)."""

    def __init__(
        self,
        path: Path,
        total: int,
        progress: ProgressCallback | None,
        shown: Progress | None = None,
    ) -> None:
        self.path = path
        self.total = total
        self.progress = progress
        self.shown = shown
        self.done = 0

    def __iter__(self) -> Iterator[list[str]]:
        with open(self.path, encoding="utf-8") as lines:
            for line in lines:
                yield line.split()
                self.done += 1
                if self.done % _PROGRESS_EVERY == 0:
                    if self.progress is not None:
                        self.progress(min(self.done, self.total), self.total)
                    if self.shown is not None:
                        self.shown.update(_PROGRESS_EVERY)


def _train(path: Path, plan: TrainingPlan, progress: ProgressCallback | None, tokens: int) -> Any:
    """Build the vocabulary, then train for the plan's epochs; return the gensim model."""
    models = require("gensim.models", "training word embeddings")
    kind = models.FastText if plan.method == "fasttext" else models.Word2Vec
    logger.info(
        "%s: training on %s tokens, %d epochs, %d threads",
        plan.method,
        f"{tokens:,}",
        plan.params["epochs"],
        plan.workers,
    )
    model = kind(workers=plan.workers, **plan.params)
    model.build_vocab(corpus_iterable=_Counted(path, 0, None))
    if not model.wv.index_to_key:
        raise ValueError(
            f"{plan.method} found no word seen at least min_count={plan.params['min_count']} "
            f"times in {tokens:,} tokens: too little text to train on"
        )
    epochs = plan.params["epochs"]
    total = model.corpus_count * epochs
    with Progress(logger, f"{plan.method} training", total, "sentences") as shown:
        corpus = _Counted(path, total, progress, shown)
        model.train(corpus_iterable=corpus, total_examples=model.corpus_count, epochs=epochs)
    if progress is not None:
        progress(corpus.total, corpus.total)
    if tokens < SMALL_CORPUS_TOKENS:
        logger.warning(
            "%s was trained on only %d tokens: its similarities will be weak; use pretrained "
            "embeddings (e.g. glove-6b-50d) or a larger background corpus to train on",
            plan.method,
            tokens,
        )
    return model


def _corpus_words(path: Path, plan: TrainingPlan) -> list[str]:
    """fastText: every distinct word of the corpus (each gets a vector); word2vec: none."""
    if plan.method != "fasttext":
        return []
    words: dict[str, None] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            words.update(dict.fromkeys(line.split()))
    return list(words)


def _to_embeddings(
    keyed: Any, method: str, corpus_words: Sequence[str], terms: Sequence[str]
) -> tuple[WordEmbeddings, list[str]]:
    """The trained words; for fastText also the corpus's other words and ``terms``, composed.

    Also returns the words that got no vector (no n-gram of theirs was trained).
    """
    words = list(keyed.index_to_key)
    vectors = np.asarray(keyed.vectors, dtype=np.float32)
    no_vector: list[str] = []
    if method == "fasttext":
        known = keyed.key_to_index
        extra = [t for t in dict.fromkeys([*corpus_words, *terms]) if t not in known]
        if extra:
            composed = np.vstack([keyed[t] for t in extra]).astype(np.float32)
            keep = np.linalg.norm(composed, axis=1) > 0
            words += [t for t, k in zip(extra, keep, strict=True) if k]
            no_vector = [t for t, k in zip(extra, keep, strict=True) if not k]
            vectors = np.vstack([vectors, composed[keep]])
    return WordEmbeddings(words, vectors), no_vector
