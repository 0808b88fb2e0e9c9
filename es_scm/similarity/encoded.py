r"""A sentence encoder's static term vectors as a source of S: every word encoded once, alone.

A sentence encoder (:class:`es_scm.encoder.SentenceEncoder`, e.g. all-MiniLM-L6-v2) given one
word gives that word a vector, as model2vec distils static embeddings from it. At build time,
when the model's terms are known, :meth:`EncoderVectors.vectors` makes
:class:`~es_scm.similarity.WordEmbeddings` of

* the terms, and
* the words of the encoder's vocabulary that are whole words and would be terms (each a single
  piece of the tokenizer's vocabulary, kept by the model's tokenizer; 22,501 for
  all-MiniLM-L6-v2's, in the vocabulary's order, the most frequent first): the query words
  outside the vocabulary that the unseen columns of S cover (:mod:`es_scm.similarity.unseen`),

from which S is built as from any word vectors (:mod:`es_scm.similarity.sources`: the same
neighbour search, threshold, exponent and ``nonzero_limit``, with the encoder's own defaults,
:data:`es_scm.options.defaults.ENCODER_DEFAULTS`).

How a word is encoded, ``mode``
    ``"word"`` (the default): the word alone through the encoder — its pieces wrapped in the
    special tokens, as the encoder sees the text of the word. ``"pieces"``: the mean of the unit
    vectors of its word pieces, each piece of the tokenizer's vocabulary encoded alone once per
    encoder (model2vec's input, without its PCA and weighting): no term is encoded, so a large
    vocabulary costs nothing beyond the pieces. A word of one piece has the same vector either
    way (the same input), so ``"word"`` encodes only the words of two or more pieces. A word
    with an unknown piece (``[UNK]``) gets no vector: it would resemble every other such word.
Centred, ``centred``
    A sentence encoder's static vectors share a common direction: unrelated words have cosines
    of 0.2–0.7 (all-MiniLM-L6-v2: median 0.17 for words alone, 0.43 for piece means), so no
    threshold separates related words from the rest. Subtracting the mean of the pieces' unit
    vectors (a constant of the encoder) centres them — random pairs then have cosines near 0 —
    before S takes cosines (on the training collections, centred vectors gave the better
    hybrid at every threshold tried: ``scripts/choose_sources.py``).
The terms covered, ``max_terms``
    Only the first ``max_terms`` terms get vectors — a vocabulary lists its terms by decreasing
    document frequency — because S's neighbour search costs the square of the terms times the
    encoder's dimensions (384): 161,143 terms took 145 s, 60,000 take about a seventh of it.
Cache
    The pieces' vectors are cached once per encoder (keyed by its identity: the fingerprint of
    its files, the backend that encodes it and that backend's version, so that one build never
    mixes the numpy backend's vectors with sentence-transformers'), the words encoded alone
    under a key that also
    hashes the words; both as a float32 ``.npy`` and a JSON word list (no pickle) in the
    trainer's private cache folder (``cache_dir``, else ``$ES_SCM_CACHE/embeddings``:
    :mod:`es_scm.similarity.training_files`). A second build of the same corpus encodes
    nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.encoder import ProgressCallback, SentenceEncoder
from es_scm.options import EncoderOptions, check_fields
from es_scm.options.defaults import ENCODER_DEFAULTS
from es_scm.options.validation import OrNone, Text, check
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.source import Preparation, SimilaritySource, register
from es_scm.similarity.training_files import VectorCache, default_cache_dir, private_directory

__all__ = ["EncoderVectors", "as_encoder_vectors"]

logger = logging.getLogger(__name__)
_SCHEME = "es-scm-encoder-vectors/1"
# the fields of EncoderOptions that EncoderVectors has
_CHECKED = ("mode", "batch_size", "centred", "max_terms")


@register
@dataclass(frozen=True)
class EncoderVectors(SimilaritySource):
    """A sentence encoder's static term vectors, made once the terms are known (module docstring).

    A source of S (:class:`~es_scm.similarity.source.SimilaritySource`, named ``"encoder"``):
    :meth:`prepare` encodes the model's terms into the :class:`WordEmbeddings` that S is built
    from, with the encoder's defaults.

    Parameters
    ----------
    encoder : SentenceEncoder or str
        The encoder, or its model name or folder (:class:`~es_scm.encoder.SentenceEncoder`).
    mode : {"word", "pieces"}
        How a word is encoded: alone, or as the mean of its pieces' vectors.
    batch_size : int
        Words (or pieces) per forward pass.
    centred : bool
        Subtract the encoder's common direction, the mean of its pieces' unit vectors, from every
        vector (module docstring).
    max_terms : int or None
        Only the first ``max_terms`` terms get vectors (a vocabulary's most frequent first).
    device : str, optional
        torch's device for an encoder given by name (a device other than the CPU takes the
        sentence-transformers backend).
    cache_dir : path, optional
        The cache folder (default ``$ES_SCM_CACHE/embeddings``).
    progress : callable, optional
        ``progress(done, total)`` while encoding (a progress bar).

    The defaults are :data:`es_scm.options.defaults.ENCODER_DEFAULTS`.
    """

    encoder: SentenceEncoder | str = ENCODER_DEFAULTS.model
    mode: str = ENCODER_DEFAULTS.mode
    batch_size: int = ENCODER_DEFAULTS.batch_size
    centred: bool = ENCODER_DEFAULTS.centred
    max_terms: int | None = ENCODER_DEFAULTS.max_terms
    device: str | None = None
    cache_dir: str | Path | None = field(default=None, compare=False)
    progress: ProgressCallback | None = field(default=None, compare=False, repr=False)

    kind = "encoder"
    defaults = ENCODER_DEFAULTS
    accepts = "an EncoderVectors, a SentenceEncoder or 'encoder[:NAME_OR_FOLDER]'"

    def __post_init__(self) -> None:
        check_fields(self, {name: EncoderOptions.CONSTRAINTS[name] for name in _CHECKED})
        check(self.device, "device", OrNone(Text()))
        if not isinstance(self.encoder, SentenceEncoder):
            name = check(self.encoder, "encoder", Text(what="a model name or a folder"))
            object.__setattr__(self, "encoder", SentenceEncoder(name, device=self.device))

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> EncoderVectors:
        """``"encoder"`` (the default model) or ``"encoder:NAME_OR_FOLDER"``, plus options."""
        head, _, name = spec.strip().partition(":")
        if head.strip().lower() != "encoder":
            raise ValueError(f"an encoder spec is encoder[:NAME_OR_FOLDER], got {spec!r}")
        return cls(encoder=name.strip() or ENCODER_DEFAULTS.model, **options)

    @classmethod
    def recognize(cls, value: Any) -> EncoderVectors | None:
        """Itself, a :class:`SentenceEncoder` or an ``"encoder[:NAME_OR_FOLDER]"`` spec."""
        return as_encoder_vectors(value)

    def prepare(self, preparation: Preparation) -> WordEmbeddings:
        """The vectors of the model's terms and of the encoder's whole words that the model's
        tokenizer keeps as terms (:meth:`vectors`)."""
        tokenize = preparation.tokenizer.tokenize
        return self.vectors(preparation.terms, keep=lambda word: tokenize(word) == [word])

    @property
    def sentence_encoder(self) -> SentenceEncoder:
        """The encoder (made from its name when given one)."""
        assert isinstance(self.encoder, SentenceEncoder)
        return self.encoder

    def vectors(
        self, terms: Sequence[str], keep: Callable[[str], bool] | None = None
    ) -> WordEmbeddings:
        """The vectors of ``terms`` and of the encoder's whole words that ``keep`` accepts.

        Parameters
        ----------
        terms : sequence of str
            The model's terms; those with an unknown piece get no vector.
        keep : callable, optional
            Whether a word of the encoder's vocabulary would be a term (the model's tokenizer
            gives it back alone); None: none of them (no words for the unseen columns).

        Returns
        -------
        WordEmbeddings
            The terms with a vector, then the vocabulary's words outside them (in the
            vocabulary's order); ``encoder`` records how they were made.
        """
        encoder = self.sentence_encoder
        directory = private_directory(self.cache_dir or default_cache_dir())
        table = self._piece_table(directory)  # row i: the piece of id i
        covered = list(dict.fromkeys(terms))
        terms = covered[: self.max_terms]  # the most frequent first: rare terms matter least
        known = set(covered)
        extra = [] if keep is None else [t for t in table.words if t not in known and keep(t)]
        pieces = encoder.word_pieces(terms + extra)
        term_pieces, extra_pieces = pieces[: len(terms)], pieces[len(terms) :]
        unknown = encoder.unknown_id
        usable = [bool(p) and unknown not in p for p in term_pieces]
        # a vocabulary word counts if the tokenizer gives it back as its own single piece
        whole = [p == [table.index(t)] for t, p in zip(extra, extra_pieces, strict=True)]
        words = [t for t, u in zip(terms, usable, strict=True) if u]
        words += [t for t, w in zip(extra, whole, strict=True) if w]
        word_pieces = [p for p, u in zip(term_pieces, usable, strict=True) if u]
        word_pieces += [p for p, w in zip(extra_pieces, whole, strict=True) if w]
        vectors = _piece_means(word_pieces, table.vectors)
        alone: list[str] = []
        if self.mode == "word":  # a word of one piece is that piece alone: already encoded
            several = {w: p for w, p in zip(words, word_pieces, strict=True) if len(p) > 1}
            alone = sorted(several)
            if alone:
                encoded = self._alone(directory, alone, several)
                position = {w: i for i, w in enumerate(words)}
                vectors[[position[w] for w in encoded.words]] = encoded.vectors
        if self.centred:  # cosines relative to the encoder's common direction
            vectors -= table.vectors.mean(axis=0)
        centred = ", centred" if self.centred else ""
        name = f"encoder {encoder.name} ({self.mode}{centred})"
        embeddings = WordEmbeddings(words, vectors, name=name)
        embeddings.encoder = {
            **encoder.identity,
            "mode": self.mode,
            "centred": self.centred,
            "max_terms": self.max_terms,
            "terms_with_vectors": int(sum(usable)),
            "terms_without_vector": len(covered) - int(sum(usable)),
            "words_encoded_alone": len(alone),
            "vocabulary_words": int(sum(whole)),
        }
        return embeddings

    def _piece_table(self, directory: Path) -> WordEmbeddings:
        """Every piece of the tokenizer's vocabulary encoded alone, cached once per encoder."""
        encoder = self.sentence_encoder
        key = _key({"encoder": encoder.cache_identity(), "kind": "pieces"})
        cache = VectorCache(directory, f"encoder-pieces-{key}")
        table = cache.load(())
        if table is None:
            started = time.perf_counter()
            tokens = encoder.pieces()
            alone = [[i] for i in range(len(tokens))]
            vectors = encoder.encode_pieces(
                alone, batch_size=self.batch_size, progress=self.progress
            )
            table = WordEmbeddings(tokens, vectors)
            seconds = time.perf_counter() - started
            cache.save(table, [], seconds, "encoder-pieces")
            logger.info("encoder %s: %d pieces encoded (%.1fs)", encoder.name, len(table), seconds)
        return table

    def _alone(
        self, directory: Path, words: list[str], pieces: dict[str, list[int]]
    ) -> WordEmbeddings:
        """``words`` (sorted) each encoded alone, cached under the encoder and the words."""
        encoder = self.sentence_encoder
        digest = hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()
        key = _key({"encoder": encoder.cache_identity(), "kind": "words", "words": digest})
        cache = VectorCache(directory, f"encoder-words-{key}")
        encoded = cache.load(())
        if encoded is None or encoded.words != words:
            started = time.perf_counter()
            vectors = encoder.encode_pieces(
                [pieces[w] for w in words], batch_size=self.batch_size, progress=self.progress
            )
            encoded = WordEmbeddings(words, vectors)
            seconds = time.perf_counter() - started
            cache.save(encoded, [], seconds, "encoder-words")
            logger.info("encoder %s: %d words encoded (%.1fs)", encoder.name, len(words), seconds)
        return encoded


def _piece_means(pieces: Sequence[Sequence[int]], table: np.ndarray) -> np.ndarray:
    """Each word's mean of its pieces' rows of ``table`` (a repeated piece counts each time)."""
    lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    columns = np.fromiter((i for p in pieces for i in p), dtype=np.int64, count=int(lengths.sum()))
    weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    means = sparse.csr_matrix((weights, columns, indptr), shape=(len(pieces), len(table)))
    return np.asarray(means @ table, dtype=np.float32)


def _key(description: dict[str, Any]) -> str:
    text = json.dumps({**description, "scheme": _SCHEME}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def as_encoder_vectors(value: Any) -> EncoderVectors | None:
    """An :class:`EncoderVectors` from itself, a :class:`SentenceEncoder` or an
    ``"encoder[:NAME_OR_FOLDER]"`` spec; None for anything else."""
    if isinstance(value, EncoderVectors):
        return value
    if isinstance(value, SentenceEncoder):
        return EncoderVectors(encoder=value)
    if isinstance(value, str) and value.strip().lower().partition(":")[0].strip() == "encoder":
        return EncoderVectors.from_spec(value)
    return None
