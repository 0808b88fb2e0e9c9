"""Files of the trainer: the tokenized corpus and the cache of trained vectors, kept private.

:class:`SentenceFile`
    Token lists written to a file, one sentence a line, hashed while they are written (the cache
    key's corpus part).
:class:`VectorCache`
    Trained vectors under a key that hashes the corpus, the parameters and the gensim version:
    a float32 ``.npy`` and a JSON word list (no pickle, so nothing in the cache can run code).

Both live in ``cache_dir``, else ``$ES_SCM_CACHE/embeddings``, else ``~/.cache/es-scm/embeddings``
(:func:`default_cache_dir`), a folder readable by its owner only (0700), with 0600 files: they
hold the corpus's words. A cache folder that belongs to another user is refused; one of the
user's with looser permissions is made private. A cached file is read only if it is a regular
file of the user's that nobody else may write (no symbolic link, named pipe or device, nothing
planted by another account: :func:`es_scm.files.open_regular` with ``private=True``), and
through :func:`es_scm.files.read_npy` (no pickle; the header must declare the file's size) and
:func:`es_scm.files.read_json` (at most :data:`WORDS_LIMIT` bytes), which cannot run code. Files
are created under unique names with ``O_EXCL | O_NOFOLLOW``, so a planted name or link is never
written through.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from es_scm.files import UnsafeFileError, open_regular, read_json, read_npy
from es_scm.similarity.embeddings import WordEmbeddings

__all__ = [
    "SentenceFile",
    "VectorCache",
    "cache_key",
    "default_cache_dir",
    "file_statistics",
    "partial_name",
    "private_directory",
    "private_file",
]

logger = logging.getLogger(__name__)
_SCHEME = "es-scm-embeddings/2"
#: The most a cached word list may hold, in bytes (read whole: some 30 million words).
WORDS_LIMIT = 2**30


def default_cache_dir() -> Path:
    """``$ES_SCM_CACHE/embeddings``, else ``~/.cache/es-scm/embeddings``."""
    root = os.environ.get("ES_SCM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "es-scm"
    return base / "embeddings"


def private_directory(path: str | Path) -> Path:
    """``path`` created if missing, the user's own and readable by the user only (0700).

    Raises
    ------
    PermissionError
        ``path`` belongs to another user (its files could be anyone's).
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    status = path.stat()
    if _other_owner(status):
        raise PermissionError(
            f"the cache folder {path} belongs to another user (uid {status.st_uid}); use a folder "
            "of your own (--train-cache DIR, or $ES_SCM_CACHE)"
        )
    if stat.S_IMODE(status.st_mode) != 0o700:
        logger.warning("made the cache folder %s private (it was %o)", path, status.st_mode & 0o777)
        os.chmod(path, 0o700)
    return path


def private_file(path: Path) -> BinaryIO:
    """A new file opened for writing, readable by the user only (0600); never an existing name
    or a symbolic link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return open(os.open(path, flags, 0o600), "wb")


def _other_owner(status: os.stat_result) -> bool:
    return hasattr(os, "getuid") and status.st_uid != os.getuid()


def _open_trusted(path: Path) -> IO[bytes] | None:
    """``path`` opened for reading if it is a regular file of the user's that only the user may
    write; else None (with a warning when something else is there)."""
    try:
        return open_regular(path, "a cached file", private=True)
    except FileNotFoundError:
        return None
    except UnsafeFileError as error:  # a link, a pipe, a device, a file another could write
        logger.warning("ignoring a cached file: %s", error)
        return None
    except OSError as error:  # unreadable
        logger.warning("ignoring the cached file %s (%s)", path, error.strerror or error)
        return None


class SentenceFile:
    """Token lists written to a private file, one sentence a line, hashed while they are written.

    :meth:`tee` passes the sentences through (so that a vocabulary can be fitted from the same
    one-shot stream); :meth:`close` names the file by its content hash and returns it. The file
    and its folder are readable by the user only: they hold the corpus's words.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = private_directory(directory or default_cache_dir())
        self._token = _token()
        self._partial = self.directory / f"corpus.{self._token}.partial"
        self._out = io.TextIOWrapper(private_file(self._partial), encoding="utf-8")
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
        """The file named ``corpus-<sha256>.<unique>.txt`` and its content's sha256 (unique: two
        processes that train on the same corpus at once each delete their own file)."""
        self._out.close()
        digest = self._hash.hexdigest()
        path = self.directory / f"corpus-{digest[:16]}.{self._token}.txt"
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
        """The cached vectors, if there are any and they cover the composable ``terms``.

        Files that are not the user's own private ones, or not what :meth:`save` writes (a
        pickle, say), are ignored: the vectors are trained again and saved anew.
        """
        words, vectors = _open_trusted(self.words), _open_trusted(self.vectors)
        if words is None or vectors is None:
            for stream in (words, vectors):
                if stream is not None:
                    stream.close()
            return None
        try:
            with words, vectors:
                meta = read_json(words, WORDS_LIMIT, "a cached word list")
                embeddings = WordEmbeddings(meta["words"], read_npy(vectors, "cached vectors"))
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
            partial = partial_name(final)
            with private_file(partial) as out:
                write(out)
            partial.replace(final)  # a file planted under the final name is replaced, not read


def partial_name(path: Path) -> Path:
    """``<path>.<pid>-<random>.partial``: a name nobody can have planted in advance."""
    return path.with_name(f"{path.name}.{_token()}.partial")


def _token() -> str:
    return f"{os.getpid()}-{secrets.token_hex(8)}"


def cache_key(digest: str, record: dict[str, Any], gensim_version: str) -> str:
    description = {"corpus": digest, "params": record, "gensim": gensim_version, "scheme": _SCHEME}
    text = json.dumps(description, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def file_statistics(path: Path) -> tuple[str, tuple[int, int]]:
    """The file's sha256, and its (tokens, distinct tokens)."""
    digest = hashlib.sha256()
    tokens = 0
    words = set()
    with open(path, "rb") as stream:
        for line in stream:
            digest.update(line)
            split = line.split()
            tokens += len(split)
            words.update(split)
    return digest.hexdigest(), (tokens, len(words))
