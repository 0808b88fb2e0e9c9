"""Texts → term counts, one dictionary lookup per token (:meth:`SoftCosineModel.counts`).

The raw tokens are looked up in one table that maps the vocabulary terms to their ids and the
tokens the tokenizer drops (stop words, the empty token) to a sentinel, and every other token to a
second sentinel (unknown), so stop words, unknown terms and known terms are told apart by one
lookup, and the sentinels are dropped with numpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

import numpy as np
import scipy.sparse as sp

from es_scm.model.text import Tokenizer
from es_scm.model.token_counts import TokenCounts
from es_scm.model.vocabulary import Vocabulary

__all__ = ["TermCounter"]


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
