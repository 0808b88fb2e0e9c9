"""Files of the trainer: the tokenized corpus and the cache of trained vectors, kept private.

:class:`SentenceFile`
    Token lists written to a file, one sentence a line, hashed while they are written (the cache
    key's corpus part).
:class:`VectorCache`
    Trained vectors under a key that hashes the corpus, the parameters and the gensim version:
    a float32 ``.npy`` and a JSON word list (no pickle, so nothing in the cache can run code).

Both live in ``cache_dir``, else ``$ES_SCM_CACHE/embeddings``, else ``~/.cache/es-scm/embeddings``
(:func:`default_cache_dir`), a folder readable by its owner only (0700), with 0600 files: they
hold the corpus's words.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from es_scm.similarity.embeddings import WordEmbeddings

__all__ = [
    "SentenceFile",
    "VectorCache",
    "cache_key",
    "default_cache_dir",
    "file_statistics",
    "private_directory",
]

logger = logging.getLogger(__name__)
_SCHEME = "es-scm-embeddings/2"


def default_cache_dir() -> Path:
    """``$ES_SCM_CACHE/embeddings``, else ``~/.cache/es-scm/embeddings``."""
    root = os.environ.get("ES_SCM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "es-scm"
    return base / "embeddings"


def private_directory(path: str | Path) -> Path:
    """``path`` created if missing, readable by its owner only (0700)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class SentenceFile:
    """Token lists written to a private file, one sentence a line, hashed while they are written.

    :meth:`tee` passes the sentences through (so that a vocabulary can be fitted from the same
    one-shot stream); :meth:`close` names the file by its content hash and returns it. The file
    and its folder are readable by the user only: they hold the corpus's words.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = private_directory(directory or default_cache_dir())
        self._partial = self.directory / f"corpus-{os.getpid()}-{id(self):x}.partial"
        descriptor = os.open(self._partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._out = open(descriptor, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._hash = hashlib.sha256()
        self._words: set[str] = set()
        self.sentences = 0
        self.tokens = 0

    def write(self, tokens: Sequence[str]) -> None:
        """Add one sentence (skipped when empty)."""
        if not tokens:
            return
        line = " ".join(tokens) + "\n"
        self._out.write(line)
        self._hash.update(line.encode("utf-8"))
        self._words.update(tokens)
        self.sentences += 1
        self.tokens += len(tokens)

    @property
    def distinct(self) -> int:
        """Distinct tokens written so far."""
        return len(self._words)

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

    def discard(self) -> None:
        """Close and delete the file (the corpus was not trained on)."""
        self._out.close()
        self._partial.unlink(missing_ok=True)


class VectorCache:
    """Trained vectors on disk: ``<stem>.npy`` (float32) and ``<stem>.json`` (words, record)."""

    def __init__(self, directory: Path, stem: str) -> None:
        self.vectors = directory / f"{stem}.npy"
        self.words = directory / f"{stem}.json"

    def load(self, terms: Sequence[str]) -> WordEmbeddings | None:
        """The cached vectors, if there are any and they cover the composable ``terms``."""
        if not (self.vectors.is_file() and self.words.is_file()):
            return None
        try:
            meta = json.loads(self.words.read_text(encoding="utf-8"))
            vectors = np.load(self.vectors, allow_pickle=False)
            embeddings = WordEmbeddings(meta["words"], vectors)
        except (OSError, ValueError, KeyError, TypeError) as error:
            logger.warning("ignoring the damaged cached vectors %s (%s)", self.vectors, error)
            return None
        composable = meta.get("method") == "fasttext"
        missing = [t for t in terms if t not in embeddings] if composable else []
        if missing and not set(missing) <= set(meta.get("no_vector", [])):
            return None  # other terms than those cached: compose them anew
        logger.info("loaded cached vectors %s", self.vectors)
        return embeddings

    def save(
        self, embeddings: WordEmbeddings, no_vector: list[str], seconds: float, method: str
    ) -> None:
        """Write both files atomically (a partial file never looks like a cache entry)."""
        meta = {
            "method": method,
            "seconds": seconds,
            "words": embeddings.words,
            "no_vector": no_vector,
        }
        for final, write in (
            (self.vectors, lambda out: np.save(out, embeddings.vectors, allow_pickle=False)),
            (self.words, lambda out: out.write(json.dumps(meta, ensure_ascii=False).encode())),
        ):
            partial = final.with_name(final.name + ".partial")
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(descriptor, "wb") as out:
                write(out)
            partial.replace(final)


def cache_key(digest: str, record: dict[str, Any], gensim_version: str) -> str:
    description = {"corpus": digest, "params": record, "gensim": gensim_version, "scheme": _SCHEME}
    text = json.dumps(description, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def file_statistics(path: Path) -> tuple[str, tuple[int, int]]:
    """The file's sha256, and its (tokens, distinct tokens)."""
    digest, tokens, words = hashlib.sha256(), 0, set()
    with open(path, "rb") as stream:
        for line in stream:
            digest.update(line)
            split = line.split()
            tokens += len(split)
            words.update(split)
    return digest.hexdigest(), (tokens, len(words))
