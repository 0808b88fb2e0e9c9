r"""Text to weighted term vectors Wx: the tokenizer, the vocabulary, the counts, the weighting.

One pipeline, as scikit-learn's ``feature_extraction.text``: a :class:`Tokenizer` splits a text
into terms (the same for indexing and querying), a :class:`Vocabulary` maps the corpus's terms to
ids with their document frequencies (fitted in one pass), a :class:`TermCounter` counts a
vocabulary's terms in texts with one dictionary lookup per token (:class:`TokenCounts`: how many
tokens it met, and how many it did not know), and a :class:`TermWeighting` turns the counts into
the weighted vectors Wx of the soft vector space model (the diagonal matrix W of Definition 3.1).
:class:`~es_scm.model.SoftCosineModel` composes them: ``model.vectorize(text, role=...)``.

Each part's own notes follow in its section below.
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from itertools import filterfalse, repeat
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from es_scm.files import open_regular, read_json
from es_scm.model.token_pattern import pattern_problem
from es_scm.options.defaults import DEFAULT_WEIGHTING
from es_scm.options.validation import (
    FRACTION,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    AnyOf,
    Boolean,
    Interval,
    Options,
    OrNone,
    check,
)

__all__ = [
    "DEFAULT_TOKEN_PATTERN",
    "FILE_LIMIT",
    "IDF_SCHEMES",
    "SCHEMES",
    "TF_SCHEMES",
    "NotFittedError",
    "Role",
    "TermCounter",
    "TermCounts",
    "TermWeighting",
    "TokenCounts",
    "Tokenizer",
    "Vocabulary",
    "WeightingLike",
    "as_weighting",
    "english_stop_words",
    "query_weighting_for",
]


# --------------------------------------------------------------------------------------------
# The tokenizer
# --------------------------------------------------------------------------------------------
#
# Text to terms: the deterministic tokenizer shared by indexing and querying.
#
# A :class:`Tokenizer` maps a string to a list of terms in four steps:
#
# 1. Unicode normalization (NFC by default), so that a precomposed ``é`` and ``e`` followed by a
#    combining acute accent give the same term;
# 2. splitting into word tokens, either with a regular expression (by default ``[^\W_]+``: maximal
#    runs of Unicode letters and digits, so ``"Caesar's 2nd"`` gives ``caesar``, ``s``, ``2nd``)
#    or with a user callable;
# 3. lower-casing;
# 4. filtering: tokens shorter than ``min_length`` characters and stop words are dropped.
#
# The terms are the basis vectors of the soft vector space model: every coordinate of a document
# vector is indexed by one of them. Indexing and querying must therefore tokenize identically, which
# is why the configuration (:meth:`Tokenizer.get_config`) is saved with the model and restored with
# :meth:`Tokenizer.from_config`.


#: Maximal runs of Unicode letters and digits (``\w`` without the underscore).
DEFAULT_TOKEN_PATTERN = r"[^\W_]+"
# On ASCII text the default pattern matches exactly the runs of ASCII letters and digits, which
# this simpler pattern finds about twice as fast (no Unicode category lookups).
_ASCII_DEFAULT = re.compile(r"[A-Za-z0-9]+")

_NORMALIZATIONS = ("NFC", "NFKC", "NFD", "NFKD")
_CONFIG_FORMAT = "es-scm-tokenizer"
_CONFIG_VERSION = 1


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    text = (
        resources.files("es_scm").joinpath("data").joinpath("stopwords_en.txt").read_text("utf-8")
    )
    lines = (line.strip() for line in text.splitlines())
    return frozenset(line for line in lines if line and not line.startswith("#"))


def english_stop_words() -> frozenset[str]:
    """Return the English stop-word list shipped in ``es_scm/data/stopwords_en.txt``.

    Returns
    -------
    frozenset of str
        Lower-case function words, and the fragments the default token pattern leaves from
        contractions (``don't`` gives ``don`` and ``t``).
    """
    return _english_stop_words()


def _qualified_name(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or "<unknown>"
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}.{name}"


class Tokenizer:
    """Split text into lower-cased Unicode word terms, without stop words.

    Parameters
    ----------
    stop_words : {"english"}, iterable of str or None, default="english"
        Terms to drop. ``"english"`` is the list shipped with es-scm (see
        :func:`english_stop_words`); ``None`` keeps every token. Stop words are normalized and
        lower-cased like the text before comparison.
    min_length : int, default=1
        Tokens with fewer characters are dropped.
    lowercase : bool, default=True
        Lower-case tokens (``str.lower``).
    normalization : {"NFC", "NFKC", "NFD", "NFKD"} or None, default="NFC"
        Unicode normalization form applied to the text first; ``None`` skips it.
    token_pattern : str, default=DEFAULT_TOKEN_PATTERN
        Regular expression whose non-overlapping matches are the tokens. Ignored when
        ``tokenizer`` is given. Only a pattern that matches in linear time is compiled (from the
        API and from a saved model alike): repeats and alternatives only where nothing that can
        fail follows them, no repeat inside a repeat, no backreference or lookaround
        (:mod:`es_scm.model.token_pattern`).
    tokenizer : callable or None, default=None
        A function ``str -> iterable of str`` replacing the regular expression. Normalization,
        lower-casing and filtering still apply to its output. A callable cannot be serialized:
        :meth:`get_config` records only its qualified name and :meth:`from_config` then needs the
        callable again.

    Examples
    --------
    >>> Tokenizer()("When Antony found Julius Caesar dead")
    ['antony', 'found', 'julius', 'caesar', 'dead']
    >>> Tokenizer(stop_words=None)("Naïve café, 2018!")
    ['naïve', 'café', '2018']
    """

    def __init__(
        self,
        stop_words: str | Iterable[str] | None = "english",
        *,
        min_length: int = 1,
        lowercase: bool = True,
        normalization: str | None = "NFC",
        token_pattern: str = DEFAULT_TOKEN_PATTERN,
        tokenizer: Callable[[str], Iterable[str]] | None = None,
    ) -> None:
        self.normalization = check(normalization, "normalization", OrNone(Options(_NORMALIZATIONS)))
        self.lowercase = check(lowercase, "lowercase", Boolean())
        self.min_length = check(min_length, "min_length", POSITIVE_INT)
        self.token_pattern = token_pattern
        self.tokenizer = _check_tokenizer(tokenizer)
        self._regex = _compile_pattern(token_pattern) if tokenizer is None else None
        self._default_pattern = token_pattern == DEFAULT_TOKEN_PATTERN
        self.stop_words = stop_words
        self._stop_words = self._resolve_stop_words(stop_words)

    # -- configuration --------------------------------------------------------------------------

    def _resolve_stop_words(self, stop_words: str | Iterable[str] | None) -> frozenset[str]:
        if stop_words is None:
            return frozenset()
        if isinstance(stop_words, str):
            if stop_words != "english":
                raise ValueError(
                    f"stop_words must be 'english', an iterable of str or None, got {stop_words!r}"
                )
            words: Iterable[str] = english_stop_words()
        else:
            words = list(stop_words)
            bad = [word for word in words if not isinstance(word, str)]
            if bad:
                raise ValueError(f"stop_words must contain only str, got {bad[0]!r}")
        return frozenset(self._normalize(word) for word in words)

    @property
    def stop_word_set(self) -> frozenset[str]:
        """The resolved, normalized stop words this tokenizer drops."""
        return self._stop_words

    @property
    def serializable(self) -> bool:
        """Whether :meth:`from_config` can rebuild this tokenizer from its config alone."""
        return self.tokenizer is None

    def get_config(self) -> dict[str, Any]:
        """Return a JSON-serializable description of this tokenizer.

        The stop words are stored resolved (sorted), so a saved model keeps tokenizing the same
        even if the packaged list changes. A user callable is stored by qualified name only.

        Returns
        -------
        dict
            Keys ``format``, ``version``, ``normalization``, ``lowercase``, ``min_length``,
            ``token_pattern``, ``stop_words`` and ``tokenizer`` (``None`` or the qualified name).
        """
        return {
            "format": _CONFIG_FORMAT,
            "version": _CONFIG_VERSION,
            "normalization": self.normalization,
            "lowercase": self.lowercase,
            "min_length": self.min_length,
            "token_pattern": self.token_pattern if self.tokenizer is None else None,
            "stop_words": sorted(self._stop_words),
            "tokenizer": None if self.tokenizer is None else _qualified_name(self.tokenizer),
        }

    @classmethod
    def from_config(
        cls,
        config: dict[str, Any],
        *,
        tokenizer: Callable[[str], Iterable[str]] | None = None,
    ) -> Tokenizer:
        """Rebuild a tokenizer from :meth:`get_config` output.

        Parameters
        ----------
        config : dict
            A configuration produced by :meth:`get_config`.
        tokenizer : callable or None, default=None
            Required when the configuration was made with a user callable: that callable again.

        Returns
        -------
        Tokenizer

        Raises
        ------
        ValueError
            If the configuration is not a tokenizer configuration, or names a user callable and
            ``tokenizer`` is not given.
        """
        if not isinstance(config, dict) or config.get("format") != _CONFIG_FORMAT:
            raise ValueError(f"not a tokenizer configuration: {config!r}")
        if config.get("version") != _CONFIG_VERSION:
            raise ValueError(
                f"unsupported tokenizer configuration version {config.get('version')!r}"
            )
        name = config.get("tokenizer")
        if name is not None and tokenizer is None:
            raise ValueError(
                f"this tokenizer configuration uses the custom tokenizer callable {name!r}, which "
                "cannot be serialized; pass it again: Tokenizer.from_config(config, tokenizer=...)"
            )
        if name is None and tokenizer is not None:
            raise ValueError("this tokenizer configuration uses no callable; do not pass tokenizer")
        if tokenizer is not None and _qualified_name(tokenizer) != name:
            warnings.warn(
                f"the configuration was made with tokenizer {name!r}, "
                f"but {_qualified_name(tokenizer)!r} was passed",
                UserWarning,
                stacklevel=2,
            )
        return cls(
            stop_words=config["stop_words"],
            min_length=config["min_length"],
            lowercase=config["lowercase"],
            normalization=config["normalization"],
            token_pattern=config.get("token_pattern") or DEFAULT_TOKEN_PATTERN,
            tokenizer=tokenizer,
        )

    # -- tokenization ---------------------------------------------------------------------------

    def _normalize(self, text: str) -> str:
        if self.normalization is not None:
            text = unicodedata.normalize(self.normalization, text)
        return text.lower() if self.lowercase else text

    def _split(self, text: str) -> Iterable[str]:
        if self.tokenizer is None:
            assert self._regex is not None
            if self._default_pattern and text.isascii():
                return _ASCII_DEFAULT.findall(text)
            return self._regex.findall(text)
        tokens = self.tokenizer(text)
        if isinstance(tokens, str):
            raise TypeError("the tokenizer callable must return an iterable of str, not a str")
        return tokens

    def split(self, text: str) -> list[str]:
        """Return the normalized tokens of ``text`` before stop words and short tokens are dropped.

        :meth:`tokenize` is ``[t for t in split(text) if keeps(t)]``.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens = self._split(self._normalize(text))
        if self.tokenizer is not None:  # a user callable's tokens are not normalized yet
            return [self._normalize(token) for token in tokens]
        return tokens if isinstance(tokens, list) else list(tokens)

    def keeps(self, term: str) -> bool:
        """Whether a normalized token is a term: long enough and not a stop word."""
        return len(term) >= max(self.min_length, 1) and term not in self._stop_words

    def tokenize(self, text: str) -> list[str]:
        """Return the terms of ``text`` in order of appearance, repeats kept.

        Parameters
        ----------
        text : str

        Returns
        -------
        list of str
        """
        min_length = max(self.min_length, 1)
        stop_words = self._stop_words
        if min_length == 1 and self.tokenizer is None:  # regex tokens are never empty
            return list(filterfalse(stop_words.__contains__, self.split(text)))
        return [t for t in self.split(text) if len(t) >= min_length and t not in stop_words]

    __call__ = tokenize

    def tokenize_many(self, texts: Iterable[str]) -> Iterable[list[str]]:
        """Lazily tokenize an iterable of texts (a generator: each text is read once)."""
        return (self.tokenize(text) for text in texts)

    def __repr__(self) -> str:
        if self.tokenizer is not None:
            split = f"tokenizer={_qualified_name(self.tokenizer)}"
        else:
            split = f"token_pattern={self.token_pattern!r}"
        stop = (
            self.stop_words
            if isinstance(self.stop_words, str) or self.stop_words is None
            else (f"<{len(self._stop_words)} words>")
        )
        return (
            f"Tokenizer(stop_words={stop!r}, min_length={self.min_length}, "
            f"lowercase={self.lowercase}, normalization={self.normalization!r}, {split})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.get_config() == other.get_config() and self.tokenizer is other.tokenizer

    __hash__ = None  # type: ignore[assignment]


def _check_tokenizer(
    tokenizer: Callable[[str], Iterable[str]] | None,
) -> Callable[[str], Iterable[str]] | None:
    if tokenizer is not None and not callable(tokenizer):
        raise ValueError(f"tokenizer must be a callable or None, got {tokenizer!r}")
    return tokenizer


def _compile_pattern(pattern: str) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"token_pattern must be a non-empty str, got {pattern!r}")
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ValueError(
            f"token_pattern {pattern!r} is not a valid regular expression: {error}"
        ) from error
    if regex.groups:
        raise ValueError(
            f"token_pattern must not contain capturing groups, got {pattern!r}; use (?:...)"
        )
    problem = None if pattern == DEFAULT_TOKEN_PATTERN else pattern_problem(pattern)
    if problem is not None:
        raise ValueError(
            f"token_pattern {pattern!r} has {problem}: only patterns that match in linear time "
            "are compiled (the parts es_scm.model.token_pattern lists, e.g. [^\\W_]+, \\w+'? or "
            "\\b\\w\\w+\\b; #?\\w+ is written #\\w+|\\w+)"
        )
    return regex


# --------------------------------------------------------------------------------------------
# The tokens met
# --------------------------------------------------------------------------------------------
#
# Tokens met while vectorizing texts with a model: how many, and how many it did not know.


@dataclass
class TokenCounts:
    """Tokens met while vectorizing: how many were terms, and how many of them were unknown.

    ``tokens`` counts the tokens that the tokenizer keeps (not stop words, long enough), and
    ``unknown`` those of them that are not in the model's vocabulary: their share is comparable
    with :attr:`Vocabulary.pruned_share`, the share of the model's own corpus that pruning left
    out. Pass one to :meth:`SoftCosineModel.counts` or :meth:`SoftCosineModel.vectorize_many`,
    which add to it.
    """

    tokens: int = 0
    unknown: int = 0

    #: Fewer tokens than this say too little about a corpus to warn about drift.
    DRIFT_MIN_TOKENS = 1000

    @property
    def unknown_share(self) -> float | None:
        """``unknown / tokens``; None when there were no tokens."""
        return self.unknown / self.tokens if self.tokens else None

    def drift(self, vocabulary: Vocabulary) -> str | None:
        """A warning when the unknown share is far above what the model's corpus left out.

        "Far above" is at least twice :attr:`Vocabulary.pruned_share` and at least 10
        percentage points above it, over :data:`DRIFT_MIN_TOKENS` tokens or more: the texts use
        many words that the model's corpus did not have (or had too rarely), which the SCM then
        ignores. None when there is no such drift, or the model did not record its pruned share.
        """
        pruned = vocabulary.pruned_share
        share = self.unknown_share
        if pruned is None or share is None or self.tokens < self.DRIFT_MIN_TOKENS:
            return None
        if share < max(2.0 * pruned, pruned + 0.10):
            return None
        return (
            f"{100 * share:.1f}% of the corpus's tokens are unknown to the model, whose own corpus "
            f"left out only {100 * pruned:.1f}%: the corpus has drifted from the model's; the "
            "SCM ignores unknown words, so consider rebuilding the model on this corpus"
        )


# --------------------------------------------------------------------------------------------
# The vocabulary
# --------------------------------------------------------------------------------------------
#
# The vocabulary: term ↔ id, document frequencies and corpus statistics.
#
# A :class:`Vocabulary` is fitted in one streaming pass over an iterable of tokenized documents
# (lists of terms). Memory is bounded by the number of distinct terms, not by the corpus: for each
# term it keeps only
#
# - its document frequency df(t), the number of documents that contain t at least once, and
# - its collection frequency cf(t), the number of times t occurs in the corpus.
#
# After the pass, terms are pruned: with N documents, a term is kept iff
#
#     min_count ≤ df(t) ≤ max_count,
#
# where an ``int`` ``min_df`` / ``max_df`` is a document count and a ``float`` is a fraction of N
# (``min_count = ⌈min_df·N⌉``, ``max_count = ⌊max_df·N⌋``). If ``max_terms`` is set, only the
# ``max_terms`` terms with the highest df are kept. The kept terms get the contiguous ids
# ``0, …, n-1`` in order of descending df, ties broken by the term's code points, so the ids are a
# deterministic function of the corpus and the pruning parameters.
#
# The corpus statistics used by term weighting (:mod:`es_scm.model.text`) are N
# (:attr:`Vocabulary.num_documents`), df, and the number of kept-term tokens
# (:attr:`Vocabulary.num_tokens`, so BM25's average document length is ``num_tokens / N``, measured
# in the same kept terms as the document vectors). The vocabulary also records how many tokens the
# corpus had before pruning (:attr:`Vocabulary.corpus_tokens`), so that
# :attr:`Vocabulary.pruned_share` tells what share of its own corpus the model does not know: a
# corpus indexed later with a much larger share of unknown tokens has drifted from the model's.
# Document vectors are rows:
# :meth:`Vocabulary.to_counts` returns a ``(n_documents, n_terms)`` CSR matrix of term counts.


_FORMAT = "es-scm-vocabulary"
_VERSION = 1
#: The most a vocabulary file may hold, in bytes: some 30 million terms with their frequencies
#: (a file is read whole, and its terms take about ten times its size in memory).
FILE_LIMIT = 2**30


class NotFittedError(ValueError, AttributeError):
    """Raised when a vocabulary is used before :meth:`Vocabulary.fit`."""


@dataclass
class TermCounts:
    """Unpruned corpus statistics: df and cf of every term, and the number of documents.

    Attributes
    ----------
    document_counts : Counter of str
        df(t): the number of documents containing t.
    term_counts : Counter of str
        cf(t): the occurrences of t.
    num_documents : int
        The documents counted.
    """

    document_counts: Counter[str] = field(default_factory=Counter)
    term_counts: Counter[str] = field(default_factory=Counter)
    num_documents: int = 0

    def count(self, documents: Iterable[Sequence[str]]) -> TermCounts:
        """Add tokenized ``documents`` (read once) to the counts and return ``self``."""
        document_counts = self.document_counts
        term_counts = self.term_counts
        for document in documents:
            tokens = _check_document(document)
            # Counter.update counts an iterable in C, but walks a mapping in Python: feed it
            # the tokens and their set, never a per-document Counter.
            term_counts.update(tokens)
            document_counts.update(set(tokens))
            self.num_documents += 1
        return self

    def merge(self, other: TermCounts) -> TermCounts:
        """Add the counts of another part of the corpus to these and return ``self``."""
        self.document_counts.update(other.document_counts)
        self.term_counts.update(other.term_counts)
        self.num_documents += other.num_documents
        return self

    def kept_terms(
        self, min_df: int | float, max_df: int | float, max_terms: int | None
    ) -> list[str]:
        """The terms that pruning keeps (see :mod:`es_scm.model.text`), by descending df,
        ties by the term: those in ``min_df`` to ``max_df`` documents, at most ``max_terms``.

        Raises
        ------
        ValueError
            If no document was counted, ``min_df`` exceeds ``max_df`` for these counts, or no
            term is kept.
        """
        num_documents = self.num_documents
        if num_documents == 0:
            raise ValueError("cannot fit a vocabulary on no documents")
        low = min_df if isinstance(min_df, int) else math.ceil(min_df * num_documents)
        high = max_df if isinstance(max_df, int) else math.floor(max_df * num_documents)
        if low > high:
            raise ValueError(
                f"min_df={min_df!r} asks for at least {low} documents but max_df="
                f"{max_df!r} allows at most {high} of the {num_documents} documents"
            )
        document_counts = self.document_counts
        kept = [term for term, df in document_counts.items() if low <= df <= high]
        kept.sort(key=lambda term: (-document_counts[term], term))
        if max_terms is not None:
            kept = kept[:max_terms]
        if not kept:
            raise ValueError(
                f"no terms remain after pruning {len(document_counts)} terms of {num_documents} "
                f"documents with min_df={min_df!r}, max_df={max_df!r}, max_terms={max_terms!r}"
            )
        return kept


class Vocabulary:
    """Map terms to contiguous ids and keep their document frequencies.

    Parameters
    ----------
    min_df : int or float, default=1
        Keep terms that occur in at least this many documents (``int``) or in at least this
        fraction of the documents (``float`` in [0, 1]).
    max_df : int or float, default=1.0
        Keep terms that occur in at most this many documents (``int``) or in at most this
        fraction of the documents (``float`` in [0, 1]).
    max_terms : int or None, default=None
        Keep at most this many terms, those with the highest document frequency (ties broken by
        the term).

    Attributes
    ----------
    terms : list of str
        The kept terms; ``terms[i]`` has id ``i``.
    term_to_id : dict of str to int
        The inverse of ``terms``.
    document_frequencies : ndarray of int64, shape (n_terms,)
        df of every kept term.
    collection_frequencies : ndarray of int64, shape (n_terms,)
        Occurrences of every kept term in the corpus.
    num_documents : int
        N, the number of documents seen by :meth:`fit` (pruning never removes documents).
    num_tokens : int
        Occurrences of kept terms in the corpus (the sum of ``collection_frequencies``).
    corpus_tokens : int or None
        Occurrences of all terms in the corpus, before pruning (None for a vocabulary saved by an
        es-scm that did not record it).

    Examples
    --------
    >>> vocabulary = Vocabulary().fit([["saint", "paul", "tribune"], ["saint", "paul", "post"]])
    >>> vocabulary.terms
    ['paul', 'saint', 'post', 'tribune']
    >>> vocabulary.doc2bow(["saint", "saint", "unknown"])
    [(1, 2)]
    """

    def __init__(
        self,
        min_df: int | float = 1,
        max_df: int | float = 1.0,
        max_terms: int | None = None,
    ) -> None:
        self.min_df = _check_df("min_df", min_df)
        self.max_df = _check_df("max_df", max_df)
        self.max_terms = _check_max_terms(max_terms)
        self._fitted = False

    # -- fitting --------------------------------------------------------------------------------

    def fit(self, documents: Iterable[Sequence[str]]) -> Vocabulary:
        """Count document frequencies in one pass over ``documents``, then prune.

        Parameters
        ----------
        documents : iterable of sequences of str
            Tokenized documents; may be a one-shot iterator (it is read exactly once).

        Returns
        -------
        Vocabulary
            ``self``, fitted.

        Raises
        ------
        ValueError
            If no term survives pruning, or ``min_df`` exceeds ``max_df`` for this corpus.
        """
        return self.fit_counts(TermCounts().count(documents))

    def fit_counts(self, counts: TermCounts) -> Vocabulary:
        """Prune counts made beforehand, as :meth:`fit` does after its pass.

        ``fit(documents)`` is ``fit_counts(TermCounts().count(documents))``; counts of parts of a
        corpus, made apart (e.g. in worker processes) and merged with :meth:`TermCounts.merge`,
        give the same vocabulary, because the ids depend only on the counts.

        Parameters
        ----------
        counts : TermCounts
            The document and collection frequencies of every term of the corpus.

        Returns
        -------
        Vocabulary
            ``self``, fitted.

        Raises
        ------
        ValueError
            As :meth:`fit`.
        """
        kept = counts.kept_terms(self.min_df, self.max_df, self.max_terms)
        self._set_state(
            terms=kept,
            document_frequencies=[counts.document_counts[term] for term in kept],
            collection_frequencies=[counts.term_counts[term] for term in kept],
            num_documents=counts.num_documents,
            corpus_tokens=sum(counts.term_counts.values()),
        )
        return self

    def _set_state(
        self,
        *,
        terms: list[str],
        document_frequencies: Sequence[int],
        collection_frequencies: Sequence[int],
        num_documents: int,
        corpus_tokens: int | None = None,
    ) -> None:
        self.terms = list(terms)
        self.term_to_id = {term: index for index, term in enumerate(self.terms)}
        if len(self.term_to_id) != len(self.terms):
            raise ValueError("vocabulary terms must be unique")
        self.document_frequencies = np.asarray(document_frequencies, dtype=np.int64)
        self.collection_frequencies = np.asarray(collection_frequencies, dtype=np.int64)
        self.num_documents = int(num_documents)
        self.num_tokens = int(self.collection_frequencies.sum())
        self.corpus_tokens = _check_corpus_tokens(corpus_tokens, self.num_tokens)
        self._fitted = True

    # -- lookups --------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise NotFittedError("this Vocabulary is not fitted yet; call fit(documents) first")

    def __len__(self) -> int:
        self._check_fitted()
        return len(self.terms)

    def __contains__(self, term: object) -> bool:
        self._check_fitted()
        return term in self.term_to_id

    def __iter__(self) -> Iterator[str]:
        self._check_fitted()
        return iter(self.terms)

    @property
    def average_document_length(self) -> float:
        """Mean number of kept-term tokens per document (BM25's avgdl); 0.0 for no documents."""
        self._check_fitted()
        return self.num_tokens / self.num_documents if self.num_documents else 0.0

    @property
    def pruned_share(self) -> float | None:
        """The share of the corpus's tokens whose terms pruning dropped (``min_df``, ``max_df``,
        ``max_terms``); None when not recorded (a vocabulary saved by an older es-scm).

        Stop words are not tokens here: they never reach the vocabulary.
        """
        self._check_fitted()
        if self.corpus_tokens is None:
            return None
        return 1.0 - self.num_tokens / self.corpus_tokens if self.corpus_tokens else 0.0

    def doc2bow(self, tokens: Sequence[str]) -> list[tuple[int, int]]:
        """Return the bag of words of one tokenized document.

        Parameters
        ----------
        tokens : sequence of str

        Returns
        -------
        list of (int, int)
            ``(term id, count)`` pairs sorted by id; terms not in the vocabulary are ignored.
        """
        self._check_fitted()
        counts = Counter(
            self.term_to_id[token] for token in _check_document(tokens) if token in self.term_to_id
        )
        return sorted(counts.items())

    def to_counts(self, documents: Iterable[Sequence[str]]) -> sp.csr_matrix:
        """Return the term counts of tokenized documents, one row per document.

        Parameters
        ----------
        documents : iterable of sequences of str
            May be a one-shot iterator.

        Returns
        -------
        scipy.sparse.csr_matrix of int64, shape (n_documents, n_terms)
            Sorted indices, no explicit zeros; unknown terms are ignored.
        """
        self._check_fitted()
        lookup = self.term_to_id.get
        rows: list[int] = []
        columns: list[int] = []
        n_documents = 0
        for n_documents, document in enumerate(documents, start=1):
            ids = [i for i in map(lookup, _check_document(document)) if i is not None]
            columns.extend(ids)
            rows.extend([n_documents - 1] * len(ids))
        counts = sp.coo_matrix(
            (np.ones(len(columns), dtype=np.int64), (rows, columns)),
            shape=(n_documents, len(self.terms)),
        ).tocsr()  # sums the repeated (document, term) pairs
        counts.sum_duplicates()
        counts.sort_indices()
        return counts

    # -- persistence ----------------------------------------------------------------------------

    def get_config(self) -> dict[str, Any]:
        """Return the pruning parameters as a JSON-serializable dict."""
        return {"min_df": self.min_df, "max_df": self.max_df, "max_terms": self.max_terms}

    def to_dict(self) -> dict[str, Any]:
        """Return the fitted vocabulary as a JSON-serializable dict (see :meth:`from_dict`).

        ``corpus_tokens`` is written when known; :meth:`from_dict` reads dicts without it (as
        written by older es-scm versions), so the format version stays 1.
        """
        self._check_fitted()
        state: dict[str, Any] = {
            "format": _FORMAT,
            "version": _VERSION,
            "config": self.get_config(),
            "num_documents": self.num_documents,
            "num_tokens": self.num_tokens,
        }
        if self.corpus_tokens is not None:
            state["corpus_tokens"] = self.corpus_tokens
        state["terms"] = list(self.terms)
        state["document_frequencies"] = self.document_frequencies.tolist()
        state["collection_frequencies"] = self.collection_frequencies.tolist()
        return state

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Vocabulary:
        """Rebuild a fitted vocabulary from :meth:`to_dict` output."""
        _check_format(state)
        vocabulary = cls(**state["config"])
        terms = state["terms"]
        frequencies = (state["document_frequencies"], state["collection_frequencies"])
        if any(len(values) != len(terms) for values in frequencies):
            raise ValueError("vocabulary terms and frequencies differ in length")
        vocabulary._set_state(
            terms=terms,
            document_frequencies=frequencies[0],
            collection_frequencies=frequencies[1],
            num_documents=state["num_documents"],
            corpus_tokens=state.get("corpus_tokens"),
        )
        if vocabulary.num_tokens != state["num_tokens"]:
            raise ValueError("vocabulary num_tokens does not match its collection frequencies")
        return vocabulary

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted vocabulary to ``path`` as UTF-8 JSON."""
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.to_dict(), file, ensure_ascii=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Vocabulary:
        """Read a vocabulary written by :meth:`save` (a regular file of at most
        :data:`FILE_LIMIT` bytes, checked before it is read: :func:`es_scm.files.read_json`)."""
        with open_regular(path, "a vocabulary file", follow_symlinks=True) as stream:
            return cls.from_dict(read_json(stream, FILE_LIMIT, "a vocabulary file"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        if not (self._fitted and other._fitted):
            return self is other
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        params = f"min_df={self.min_df!r}, max_df={self.max_df!r}, max_terms={self.max_terms!r}"
        if not self._fitted:
            return f"Vocabulary({params})"
        return (
            f"Vocabulary({params}) with {len(self.terms)} terms from {self.num_documents} documents"
        )


def _check_document(document: Sequence[str]) -> Sequence[str]:
    if isinstance(document, str):
        raise TypeError(
            "a document must be a sequence of tokens (str), not a str; tokenize it first"
        )
    return document


_DF = AnyOf((NON_NEGATIVE_INT, FRACTION))
_MAX_TERMS = OrNone(POSITIVE_INT)


def _check_df(name: str, value: int | float) -> int | float:
    return check(value, name, _DF)


def _check_max_terms(value: int | None) -> int | None:
    return check(value, "max_terms", _MAX_TERMS)


def _check_corpus_tokens(corpus_tokens: int | None, kept_tokens: int) -> int | None:
    """The corpus's tokens before pruning (None: not recorded), at least the kept tokens."""
    if corpus_tokens is None:
        return None
    corpus_tokens = check(corpus_tokens, "corpus_tokens", NON_NEGATIVE_INT)
    if corpus_tokens < kept_tokens:
        raise ValueError(
            f"corpus_tokens ({corpus_tokens}) is less than the kept tokens ({kept_tokens})"
        )
    return corpus_tokens


def _check_format(state: Any) -> None:
    """A ValueError unless ``state`` is a dict of :meth:`Vocabulary.to_dict`'s format."""
    if not isinstance(state, dict) or state.get("format") != _FORMAT:
        raise ValueError("not an es-scm vocabulary")
    if state.get("version") != _VERSION:
        raise ValueError(f"unsupported vocabulary version {state.get('version')!r}")


# --------------------------------------------------------------------------------------------
# The counts
# --------------------------------------------------------------------------------------------
#
# Texts → term counts, one dictionary lookup per token (:meth:`SoftCosineModel.counts`).
#
# The raw tokens are looked up in one table that maps the vocabulary terms to their ids and the
# tokens the tokenizer drops (stop words, the empty token) to a sentinel, and every other token to a
# second sentinel (unknown), so stop words, unknown terms and known terms are told apart by one
# lookup, and the sentinels are dropped with numpy.


class TermCounter:
    """Counts a vocabulary's terms in texts split by a tokenizer; its lookup table is made once.

    Parameters
    ----------
    tokenizer : Tokenizer
    vocabulary : Vocabulary
        Fitted; its terms are the columns of the counts.
    """

    def __init__(self, tokenizer: Tokenizer, vocabulary: Vocabulary) -> None:
        self.tokenizer = tokenizer
        self.vocabulary = vocabulary
        self._codes: dict[str, int] | None = None

    def counts(self, texts: Iterable[str], tokens: TokenCounts | None = None) -> sp.csr_matrix:
        """The term counts of ``texts``, one row per text (int64 CSR, sorted indices).

        Equal to ``vocabulary.to_counts(tokenizer.tokenize_many(texts))``, faster. ``tokens``, if
        given, is added the number of tokens that are terms and of those that are unknown.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of str, not a str; use [text]")
        n_terms = len(self.vocabulary.terms)
        stop = n_terms
        unknown = n_terms + 1
        get = self._token_codes().get
        split = self.tokenizer.split
        min_length = self.tokenizer.min_length
        indptr = [0]
        codes = []
        for text in texts:
            if min_length > 1:  # short tokens are dropped like stop words
                codes.extend(
                    [get(t, unknown) if len(t) >= min_length else stop for t in split(text)]
                )
            else:
                codes.extend(map(get, split(text), repeat(unknown)))
            indptr.append(len(codes))
        ids = np.array(codes, dtype=np.int64)
        offsets = np.array(indptr, dtype=np.int64)
        known = ids < n_terms
        if tokens is not None:
            dropped = int(np.count_nonzero(ids == stop))
            tokens.tokens += len(ids) - dropped
            tokens.unknown += len(ids) - dropped - int(np.count_nonzero(known))
        if not known.all():
            offsets = np.concatenate(([0], np.cumsum(known)))[offsets]
            ids = ids[known]
        counts = sp.csr_matrix(
            (np.ones(len(ids), dtype=np.int64), ids, offsets), shape=(len(offsets) - 1, n_terms)
        )
        counts.sum_duplicates()  # sorts the indices of every row and adds up the repeats
        return counts

    def _token_codes(self) -> dict[str, int]:
        """Vocabulary terms → ids, tokens the tokenizer drops → ``len(terms)`` (a sentinel)."""
        if self._codes is None:
            n_terms = len(self.vocabulary.terms)
            keeps = self.tokenizer.keeps
            codes = dict.fromkeys(self.tokenizer.stop_word_set, n_terms)
            codes[""] = n_terms
            codes.update((t, i) for t, i in self.vocabulary.term_to_id.items() if keeps(t))
            self._codes = codes
        return self._codes


# --------------------------------------------------------------------------------------------
# The term weighting W
# --------------------------------------------------------------------------------------------
#
# Term weighting: the diagonal change-of-basis matrix W of the soft vector space model.
#
# In the paper's notation (Definition 3.1) a document with term counts x is represented by ``Wx``,
# and the SCM is computed from ``Wx`` and S. A :class:`TermWeighting` computes the non-zero entries
# of ``Wx`` for every row (document) of a count matrix. The weight of term t in a document with
# counts tf(t) is
#
#     w(t) = tf_weight(tf(t)) · idf(t)                      (``scheme="smart"``)
#
# with the local (tf) component
#
# - ``"raw"``:       tf
# - ``"log"``:       1 + log_b(tf), base b = ``log_base`` (e by default; 10 in Manning et al.)
# - ``"binary"``:    1
# - ``"augmented"``: a + (1 − a) · tf / max tf, where max tf is the largest count in the same
#   document and a = ``augmentation`` (0.5 by default; a = 0 gives plain tf / max tf)
#
# and the global (idf) component, with N documents and document frequency df(t):
#
# - ``"none"``:    1
# - ``"natural"``: ln(N / df)
# - ``"log2"``:    log2(N / df)
# - ``"smooth"``:  ln(1 + N / df), which stays positive even for a term in every document
#
# All of these are zero for tf = 0, so sparsity is preserved. For ``scheme="bm25"`` the weight is
# Okapi BM25's per-term score, with document length |d| = Σ tf (over vocabulary terms) and the
# average length avgdl taken from the vocabulary (:attr:`Vocabulary.average_document_length`):
#
#     w(t) = idf_bm25(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl)),
#     idf_bm25(t) = ln(1 + (N − df + 0.5) / (df + 0.5))      (Lucene's form, always positive)
#
# There is deliberately no L2 normalization step: the SCM normalizes by the soft norm √(xᵀSx).
# Weights are non-negative, which together with a non-negative S keeps xᵀSx ≥ 0 (§3 of the paper).


SCHEMES = ("smart", "bm25")
TF_SCHEMES = ("raw", "log", "binary", "augmented")
IDF_SCHEMES = ("none", "natural", "log2", "smooth")

_DEFAULTS: dict[str, Any] = {
    "tf": "log",
    "idf": "smooth",
    "augmentation": 0.5,
    "log_base": math.e,
    "k1": 1.2,
    "b": 0.75,
}


_AUGMENTATION = Interval(float, 0.0, 1.0, closed="left")
_LOG_BASE = Interval(float, 1.0, math.inf, closed="neither")
_K1 = Interval(float, 0.0, math.inf, closed="left")
_B = Interval(float, 0.0, 1.0)
_SPEC_HELP = (
    "TF-IDF with TF in raw/log/binary/augmented and IDF in none/natural/log2/smooth "
    "(e.g. log-smooth), optionally with :key=value options (log_base, augmentation), "
    "or bm25[:k1=1.2,b=0.75]"
)


class TermWeighting:
    """SMART-style tf·idf weights or BM25 document weights for the rows of a count matrix.

    Parameters
    ----------
    tf : {"raw", "log", "binary", "augmented"}, default="log"
        Local (term-frequency) component; see the module docstring for the formulas.
    idf : {"none", "natural", "log2", "smooth"}, default="smooth"
        Global (inverse document frequency) component.
    scheme : {"smart", "bm25"}, default="smart"
        ``"bm25"`` ignores ``tf``/``idf`` and uses Okapi BM25 with ``k1`` and ``b``.
    augmentation : float, default=0.5
        The constant a in [0, 1) of ``tf="augmented"``: a + (1 − a)·tf/max tf.
    log_base : float, default=math.e
        Base of the logarithm in ``tf="log"``: 1 + log_base(tf); must be > 1.
    k1 : float, default=1.2
        BM25 term-frequency saturation, >= 0.
    b : float, default=0.75
        BM25 length normalization, in [0, 1].

    Examples
    --------
    >>> TermWeighting(tf="raw", idf="natural")
    TermWeighting(tf='raw', idf='natural')
    >>> TermWeighting.from_spec("bm25:k1=0.9,b=0.4")
    TermWeighting(scheme='bm25', k1=0.9, b=0.4)
    >>> TermWeighting().to_spec()
    'log-smooth'
    """

    def __init__(
        self,
        tf: str = "log",
        idf: str = "smooth",
        *,
        scheme: str = "smart",
        augmentation: float = 0.5,
        log_base: float = math.e,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self.scheme = check(scheme, "scheme", Options(SCHEMES))
        self.tf = check(tf, "tf", Options(TF_SCHEMES))
        self.idf = check(idf, "idf", Options(IDF_SCHEMES))
        self.augmentation = check(augmentation, "augmentation", _AUGMENTATION)
        self.log_base = check(log_base, "log_base", _LOG_BASE)
        self.k1 = check(k1, "k1", _K1)
        self.b = check(b, "b", _B)

    @classmethod
    def bm25(cls, k1: float = 1.2, b: float = 0.75) -> TermWeighting:
        """Return Okapi BM25 document weighting (see the module docstring)."""
        return cls(scheme="bm25", k1=k1, b=b)

    # -- configuration --------------------------------------------------------------------------

    def get_config(self) -> dict[str, Any]:
        """Return the parameters that affect the weights, as a JSON-serializable dict.

        Parameters that the chosen scheme ignores are left out (``from_config`` restores their
        defaults), so two weightings that give the same weights give the same config.
        """
        if self.scheme == "bm25":
            return {"scheme": "bm25", "k1": self.k1, "b": self.b}
        config: dict[str, Any] = {"scheme": "smart", "tf": self.tf, "idf": self.idf}
        if self.tf == "augmented":
            config["augmentation"] = self.augmentation
        if self.tf == "log":
            config["log_base"] = self.log_base
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TermWeighting:
        """Rebuild a weighting from :meth:`get_config` output."""
        if not isinstance(config, dict):
            raise ValueError(f"config must be a dict, got {config!r}")
        unknown = sorted(set(config) - set(_DEFAULTS) - {"scheme"})
        if unknown:
            raise ValueError(f"unknown TermWeighting parameter {unknown[0]!r} in {config!r}")
        return cls(**config)

    @classmethod
    def from_spec(cls, spec: str) -> TermWeighting:
        """Parse the one weighting grammar that every layer accepts.

        ``TF-IDF`` (``log-smooth``, ``raw-natural``, ``binary-none``, ...), optionally followed by
        ``:key=value,...`` (``log-smooth:log_base=10``, ``augmented-natural:augmentation=0.4``),
        or ``bm25`` / ``bm25:k1=1.2,b=0.75``. :meth:`to_spec` writes it back.

        Raises
        ------
        ValueError
            Naming the spec and the grammar.
        """
        if not isinstance(spec, str):
            raise ValueError(f"a weighting spec must be a string ({_SPEC_HELP}), got {spec!r}")
        text = spec.strip().lower()
        name, _, options_text = text.partition(":")
        tf, dash, idf = name.partition("-")
        try:
            if name != "bm25" and (not dash or tf not in TF_SCHEMES or idf not in IDF_SCHEMES):
                raise ValueError(f"unknown scheme {name!r}")
            options = _parse_options(options_text)
            if name == "bm25":
                return cls(scheme="bm25", **_only(options, ("k1", "b")))
            return cls(tf=tf, idf=idf, **_only(options, ("log_base", "augmentation")))
        except ValueError as error:
            raise ValueError(f"bad weighting {spec!r} ({error}); use {_SPEC_HELP}") from None

    def to_spec(self) -> str:
        """The spec string of this weighting (see :meth:`from_spec`)."""
        config = self.get_config()
        if config.pop("scheme") == "bm25":
            return f"bm25:k1={_short(self.k1)},b={_short(self.b)}"
        name = f"{config.pop('tf')}-{config.pop('idf')}"
        if config.get("log_base") == math.e:
            config.pop("log_base")
        options = ",".join(f"{key}={_short(value)}" for key, value in sorted(config.items()))
        return f"{name}:{options}" if options else name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TermWeighting):
            return NotImplemented
        return self.get_config() == other.get_config()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        config = self.get_config()
        if config.pop("scheme") == "smart":
            args = ", ".join(f"{key}={value!r}" for key, value in config.items())
        else:
            args = "scheme='bm25', " + ", ".join(f"{k}={v!r}" for k, v in config.items())
        return f"TermWeighting({args})"

    # -- weights --------------------------------------------------------------------------------

    def global_weights(self, vocabulary: Vocabulary) -> np.ndarray:
        """Return the idf factor of every vocabulary term.

        Parameters
        ----------
        vocabulary : Vocabulary
            A fitted vocabulary providing N and df.

        Returns
        -------
        ndarray of float64, shape (n_terms,)
        """
        df = np.maximum(vocabulary.document_frequencies.astype(np.float64), 1.0)
        return self._idf(float(vocabulary.num_documents), df)

    def _idf(self, n: float, df: np.ndarray) -> np.ndarray:
        if self.scheme == "bm25":
            return np.log1p((n - df + 0.5) / (df + 0.5))
        if self.idf == "none":
            return np.ones_like(df)
        if self.idf == "natural":
            return np.log(n / df)
        if self.idf == "log2":
            return np.log2(n / df)
        return np.log1p(n / df)

    def unseen_weights(self, counts: Any, vocabulary: Vocabulary) -> np.ndarray:
        """Weights of words outside the vocabulary with these ``counts`` (in one text).

        Each is weighted as a term in one document of the vocabulary's N (df = 1, the rarest a
        term can be): :mod:`es_scm.similarity.unseen`.
        """
        tf = sp.csr_matrix(np.asarray(counts, dtype=np.float64).reshape(1, -1))
        df = np.ones(tf.shape[1], dtype=np.float64)
        n = float(max(vocabulary.num_documents, 1))
        return self._local_weights(tf, vocabulary) * self._idf(n, df)[tf.indices]

    def _local_weights(self, counts: sp.csr_matrix, vocabulary: Vocabulary) -> np.ndarray:
        tf = counts.data
        if self.scheme == "bm25":
            lengths = np.repeat(np.asarray(counts.sum(axis=1)).ravel(), np.diff(counts.indptr))
            avgdl = vocabulary.average_document_length or 1.0
            norm = self.k1 * (1.0 - self.b + self.b * lengths / avgdl)
            return tf * (self.k1 + 1.0) / (tf + norm)
        if self.tf == "raw":
            return tf.copy()
        if self.tf == "log":
            return 1.0 + np.log(tf) / math.log(self.log_base)
        if self.tf == "binary":
            return np.ones_like(tf)
        row_max = np.repeat(_row_max(counts), np.diff(counts.indptr))
        return self.augmentation + (1.0 - self.augmentation) * tf / row_max

    def transform(
        self, counts: Any, vocabulary: Vocabulary, global_weights: np.ndarray | None = None
    ) -> sp.csr_matrix:
        """Weight term counts, row by row.

        Parameters
        ----------
        counts : scipy sparse matrix or array-like, shape (n_documents, n_terms)
            Non-negative term counts, e.g. from :meth:`Vocabulary.to_counts`. A 1-D array is
            treated as a single row.
        vocabulary : Vocabulary
            The fitted vocabulary the counts are indexed by (for N, df and avgdl).
        global_weights : ndarray, optional
            :meth:`global_weights` of ``vocabulary``, when the caller keeps it (it costs a
            logarithm per vocabulary term).

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (n_documents, n_terms)
            The weights, without explicit zeros.
        """
        counts = _as_counts(counts, len(vocabulary))
        if global_weights is None:
            global_weights = self.global_weights(vocabulary)
        weights = self._local_weights(counts, vocabulary) * global_weights[counts.indices]
        result = sp.csr_matrix(
            (weights, counts.indices.copy(), counts.indptr.copy()), shape=counts.shape
        )
        result.eliminate_zeros()
        return result


def _as_counts(counts: Any, n_terms: int) -> sp.csr_matrix:
    if sp.issparse(counts):
        matrix = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    else:
        array = np.asarray(counts, dtype=np.float64)
        if array.ndim == 1:
            array = array[np.newaxis, :]
        if array.ndim != 2:
            raise ValueError(f"counts must be 1-D or 2-D, got shape {array.shape}")
        matrix = sp.csr_matrix(array)
    if matrix.shape[1] != n_terms:
        raise ValueError(
            f"counts have {matrix.shape[1]} columns but the vocabulary has {n_terms} terms"
        )
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    if matrix.data.size and (not np.all(np.isfinite(matrix.data)) or matrix.data.min() < 0):
        raise ValueError("counts must be finite and non-negative")
    return matrix


def _row_max(counts: sp.csr_matrix) -> np.ndarray:
    return np.asarray(counts.max(axis=1).todense(), dtype=np.float64).ravel()


def _parse_options(text: str) -> dict[str, float]:
    options: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals:
            raise ValueError(f"expected key=value, got {item!r}")
        try:
            options[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"{key.strip()} must be a number, got {value.strip()!r}") from None
    return options


def _only(options: dict[str, float], allowed: tuple[str, ...]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} (allowed: {', '.join(allowed)})")
    return options


def _short(value: float) -> str:
    return repr(int(value)) if float(value).is_integer() else repr(float(value))


def query_weighting_for(document: TermWeighting) -> TermWeighting:
    """The query weighting that goes with a document weighting when none is given.

    The document weighting itself, except for BM25 documents: BM25's length normalization is
    meant for documents, so their queries get the default weighting
    (:data:`es_scm.options.defaults.DEFAULT_WEIGHTING`).
    """
    return TermWeighting.from_spec(DEFAULT_WEIGHTING) if document.scheme == "bm25" else document


def as_weighting(value: WeightingLike, name: str) -> TermWeighting:
    """A weighting from a :class:`TermWeighting`, a spec string, a config dict, or None (the
    default, :data:`es_scm.options.defaults.DEFAULT_WEIGHTING`)."""
    if value is None:
        return TermWeighting.from_spec(DEFAULT_WEIGHTING)
    if isinstance(value, TermWeighting):
        return value
    if isinstance(value, str):
        return TermWeighting.from_spec(value)
    if isinstance(value, Mapping):
        return TermWeighting.from_config(dict(value))
    raise ValueError(
        f"{name} must be a TermWeighting, a spec string ({_SPEC_HELP}), a config dict or None, "
        f"got {value!r}"
    )


#: Which side of an SCM a text is on: documents and queries may be weighted differently (e.g.
#: BM25 documents and raw-tf queries), so every vectorizing method takes a role.
Role = Literal["query", "document"]
#: A weighting: a :class:`TermWeighting`, a spec string such as ``"log-smooth"``, a config dict,
#: or None for :data:`es_scm.options.defaults.DEFAULT_WEIGHTING`.
WeightingLike = TermWeighting | str | Mapping[str, Any] | None
