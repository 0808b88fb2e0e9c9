"""Word embeddings trained on a corpus with gensim ``Word2Vec`` or ``FastText``: the one trainer.

:meth:`es_scm.model.SoftCosineModel.build` (``embeddings="train:fasttext"``), ``es-scm model
build --embeddings train:…`` and the evaluations all train through :func:`train_embeddings`.

Determinism
    One worker thread and a fixed ``seed`` (both recorded), so the same sentences and parameters
    give the same vectors, bit for bit, with the same gensim version.
Cache
    The tokenized sentences are written once to a file, one sentence a line, hashed as they are
    written; the trained vectors are kept under a key that hashes that content, every training
    parameter and the gensim version, so a second run on the same content loads them. The cache
    folder is ``cache_dir``, else ``$ES_SCM_CACHE/embeddings``, else
    ``~/.cache/es-scm/embeddings``.
fastText
    Its subword (character n-gram) vectors give a vector to every term of the model, even one
    below ``min_count`` or misspelled, so rare words and typos get neighbours: pass the model's
    terms as ``terms``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from es_scm.defaults import TRAINING_DEFAULTS, TRAINING_METHODS
from es_scm.extras import require
from es_scm.similarity.embeddings import WordEmbeddings

__all__ = [
    "EmbeddingTraining",
    "SentenceFile",
    "as_training",
    "default_cache_dir",
    "train_embeddings",
    "train_on_file",
]

logger = logging.getLogger(__name__)
#: Fewer training tokens than this give embeddings too noisy to relate words (a warning says so).
SMALL_CORPUS_TOKENS = 20_000

_SCHEME = "es-scm-embeddings/1"
#: ``progress(epochs_done, epochs)`` after every epoch.
Progress = Callable[[int, int], None]


def default_cache_dir() -> Path:
    """``$ES_SCM_CACHE/embeddings``, else ``~/.cache/es-scm/embeddings``."""
    root = os.environ.get("ES_SCM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "es-scm"
    return base / "embeddings"


@dataclass(frozen=True)
class EmbeddingTraining:
    """What to train: the method, gensim's parameters, and on which texts.

    Parameters
    ----------
    method : {"word2vec", "fasttext"}
    vector_size, window, min_count, epochs, sg, seed, min_n, max_n
        gensim's parameters (``min_n``, ``max_n``: fastText's character n-gram lengths);
        defaults in :data:`es_scm.defaults.TRAINING_DEFAULTS`.
    corpus : iterable of str, optional
        A background corpus; None trains on the corpus being modelled.
    cache_dir : path, optional
        See :func:`default_cache_dir`.
    progress : callable, optional
        ``progress(epochs_done, epochs)`` after every epoch (a progress bar).
    """

    method: str = TRAINING_DEFAULTS["method"]
    vector_size: int = TRAINING_DEFAULTS["vector_size"]
    window: int = TRAINING_DEFAULTS["window"]
    min_count: int = TRAINING_DEFAULTS["min_count"]
    epochs: int = TRAINING_DEFAULTS["epochs"]
    sg: int = TRAINING_DEFAULTS["sg"]
    seed: int = TRAINING_DEFAULTS["seed"]
    min_n: int = TRAINING_DEFAULTS["min_n"]
    max_n: int = TRAINING_DEFAULTS["max_n"]
    corpus: Iterable[str] | None = field(default=None, compare=False, repr=False)
    cache_dir: str | Path | None = field(default=None, compare=False)
    progress: Progress | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.method not in TRAINING_METHODS:
            raise ValueError(f"method must be one of {TRAINING_METHODS}, got {self.method!r}")
        for name in ("vector_size", "window", "min_count", "epochs", "min_n", "max_n"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.sg not in (0, 1):
            raise ValueError(f"sg must be 0 (CBOW) or 1 (skip-gram), got {self.sg!r}")

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> EmbeddingTraining:
        """``"train"``, ``"train:word2vec"`` or ``"train:fasttext"`` (plus keyword options)."""
        head, _, method = spec.strip().lower().partition(":")
        if head != "train":
            raise ValueError(f"a training spec is train[:word2vec|fasttext], got {spec!r}")
        return cls(method=method or TRAINING_DEFAULTS["method"], **options)

    def params(self) -> dict[str, Any]:
        """The parameters that decide the vectors (recorded in the model, part of the key)."""
        keys = ["vector_size", "window", "min_count", "epochs", "sg", "seed"]
        if self.method == "fasttext":
            keys += ["min_n", "max_n"]
        values = asdict(replace(self, corpus=None, progress=None, cache_dir=None))
        return {"method": self.method, **{k: values[k] for k in keys}, "workers": 1}


def as_training(embeddings: Any) -> EmbeddingTraining | None:
    """An :class:`EmbeddingTraining` from itself or a ``"train…"`` spec; None for anything else."""
    if isinstance(embeddings, EmbeddingTraining):
        return embeddings
    if isinstance(embeddings, str) and embeddings.strip().lower().startswith("train"):
        return EmbeddingTraining.from_spec(embeddings)
    return None


class SentenceFile:
    """Token lists written to a file, one sentence a line, and hashed while they are written.

    :meth:`tee` passes the sentences through (so that a vocabulary can be fitted from the same
    one-shot stream); :meth:`close` names the file by its content hash and returns it.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._partial = self.directory / f"corpus-{os.getpid()}-{id(self):x}.partial"
        self._out = open(self._partial, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._hash = hashlib.sha256()
        self.sentences = 0
        self.tokens = 0

    def write(self, tokens: Sequence[str]) -> None:
        """Add one sentence (skipped when empty)."""
        if not tokens:
            return
        line = " ".join(tokens) + "\n"
        self._out.write(line)
        self._hash.update(line.encode("utf-8"))
        self.sentences += 1
        self.tokens += len(tokens)

    def tee(self, sentences: Iterable[Sequence[str]]) -> Iterator[Sequence[str]]:
        """Yield every sentence, writing it on the way."""
        for tokens in sentences:
            self.write(tokens)
            yield tokens

    def close(self) -> tuple[Path, str]:
        """The file named ``corpus-<sha256>.txt`` and its content's sha256."""
        self._out.close()
        digest = self._hash.hexdigest()
        path = self.directory / f"corpus-{digest[:16]}.txt"
        self._partial.replace(path)
        return path, digest


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
    path, digest = sink.close()
    return train_on_file(path, training, terms=terms, name=name, digest=digest)


def train_on_file(
    path: str | Path,
    training: EmbeddingTraining,
    *,
    terms: Sequence[str] = (),
    name: str | None = None,
    digest: str | None = None,
) -> WordEmbeddings:
    """Word embeddings trained on a file of sentences (one a line, tokens split by spaces).

    ``digest`` is the file's sha256 if already known (else it is computed).
    """
    models = require("gensim.models", "training word embeddings")
    path = Path(path)
    digest = digest or _file_digest(path)
    params = training.params()
    key = _key(digest, params, require("gensim", "training word embeddings").__version__)
    directory = Path(training.cache_dir) if training.cache_dir else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    vectors_path = directory / f"{training.method}-{key}.kv"
    if vectors_path.exists():
        logger.info("%s: loading cached vectors %s", training.method, vectors_path)
        keyed = models.KeyedVectors.load(str(vectors_path))
        cached = True
        if training.progress is not None:
            training.progress(training.epochs, training.epochs)  # nothing left to train
    else:
        keyed = _train(models, path, training)
        partial = directory / f"{training.method}-{key}.partial.kv"
        keyed.save(str(partial))
        for file in directory.glob(f"{training.method}-{key}.partial.kv*"):
            file.replace(directory / file.name.replace(".partial.kv", ".kv"))
        cached = False
    embeddings = _to_embeddings(keyed, training.method, terms)
    embeddings.name = f"{training.method} trained on {name or path.name}"
    embeddings.training = {**params, "corpus_sha256": digest, "cache_key": key}
    logger.info("%s: %d vectors (cached: %s)", training.method, len(embeddings), cached)
    return embeddings


def _train(models: Any, path: Path, training: EmbeddingTraining) -> Any:
    """Train with one worker (deterministic); return the ``KeyedVectors``."""
    params = training.params()
    params.pop("method")
    if training.method == "word2vec":
        params.pop("min_n", None), params.pop("max_n", None)
    kind = models.FastText if training.method == "fasttext" else models.Word2Vec
    callbacks = [_epoch_callback(training)] if training.progress is not None else []
    started = time.perf_counter()
    model = kind(sentences=models.word2vec.LineSentence(str(path)), callbacks=callbacks, **params)
    seconds = time.perf_counter() - started
    logger.info("%s: trained %d words in %.1fs", training.method, len(model.wv), seconds)
    if model.corpus_total_words < SMALL_CORPUS_TOKENS:
        logger.warning(
            "%s was trained on only %d tokens: its similarities will be weak; use pretrained "
            "embeddings (e.g. glove-6b-50d) or a larger background corpus to train on",
            training.method,
            model.corpus_total_words,
        )
    return model.wv


def _epoch_callback(training: EmbeddingTraining) -> Any:
    base = require("gensim.models.callbacks", "training word embeddings").CallbackAny2Vec
    progress = training.progress
    assert progress is not None

    class _Epochs(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            self.done = 0

        def on_epoch_end(self, model: Any) -> None:
            self.done += 1
            progress(self.done, training.epochs)

    return _Epochs()


def _to_embeddings(keyed: Any, method: str, terms: Sequence[str]) -> WordEmbeddings:
    """The trained words; for fastText also ``terms`` without a word vector, from subwords."""
    words = list(keyed.index_to_key)
    vectors = np.asarray(keyed.vectors, dtype=np.float32)
    if method == "fasttext" and terms:
        known = keyed.key_to_index
        extra = [t for t in dict.fromkeys(terms) if t not in known]
        if extra:
            composed = np.vstack([keyed[t] for t in extra]).astype(np.float32)
            keep = np.linalg.norm(composed, axis=1) > 0  # no n-gram at all: no vector
            words += [t for t, k in zip(extra, keep, strict=True) if k]
            vectors = np.vstack([vectors, composed[keep]])
    return WordEmbeddings(words, vectors)


def _key(digest: str, params: dict[str, Any], gensim_version: str) -> str:
    description = {"corpus": digest, "params": params, "gensim": gensim_version, "scheme": _SCHEME}
    text = json.dumps(description, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
