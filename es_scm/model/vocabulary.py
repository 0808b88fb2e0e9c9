"""The vocabulary: term ↔ id, document frequencies and corpus statistics.

A :class:`Vocabulary` is fitted in one streaming pass over an iterable of tokenized documents
(lists of terms). Memory is bounded by the number of distinct terms, not by the corpus: for each
term it keeps only

- its document frequency df(t), the number of documents that contain t at least once, and
- its collection frequency cf(t), the number of times t occurs in the corpus.

After the pass, terms are pruned: with N documents, a term is kept iff

    min_count ≤ df(t) ≤ max_count,

where an ``int`` ``min_df`` / ``max_df`` is a document count and a ``float`` is a fraction of N
(``min_count = ⌈min_df·N⌉``, ``max_count = ⌊max_df·N⌋``). If ``max_terms`` is set, only the
``max_terms`` terms with the highest df are kept. The kept terms get the contiguous ids
``0, …, n-1`` in order of descending df, ties broken by the term's code points, so the ids are a
deterministic function of the corpus and the pruning parameters.

The corpus statistics used by term weighting (:mod:`es_scm.model.weighting`) are N
(:attr:`Vocabulary.num_documents`), df, and the number of kept-term tokens
(:attr:`Vocabulary.num_tokens`, so BM25's average document length is ``num_tokens / N``, measured
in the same kept terms as the document vectors). The vocabulary also records how many tokens the
corpus had before pruning (:attr:`Vocabulary.corpus_tokens`), so that
:attr:`Vocabulary.pruned_share` tells what share of its own corpus the model does not know: a
corpus indexed later with a much larger share of unknown tokens has drifted from the model's.
Document vectors are rows:
:meth:`Vocabulary.to_counts` returns a ``(n_documents, n_terms)`` CSR matrix of term counts.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from es_scm.files import open_regular, read_json
from es_scm.validation import FRACTION, NON_NEGATIVE_INT, POSITIVE_INT, AnyOf, OrNone, check

__all__ = ["FILE_LIMIT", "NotFittedError", "TermCounts", "Vocabulary"]

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
        """The terms that pruning keeps (see :mod:`es_scm.model.vocabulary`), by descending df,
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
