"""Text → weighted term vectors ``Wx``: a tokenizer, a vocabulary, and a weighting per role.

:class:`TermVectorizer` is the text side of a soft cosine model
(:class:`es_scm.model.SoftCosineModel` extends it with S): texts are tokenized, counted against
the vocabulary (:class:`~es_scm.model.counting.TermCounter`, one dictionary lookup per token) and
weighted. Documents and queries may be weighted differently (e.g. BM25 documents and raw-tf
queries), so every vectorizing method takes a ``role``. Vectors are rows: one text is a
``(1, n_terms)`` CSR row, a batch of texts a ``(n_texts, n_terms)`` CSR matrix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from es_scm.model.counting import TermCounter
from es_scm.model.text import Tokenizer
from es_scm.model.token_counts import TokenCounts
from es_scm.model.vocabulary import Vocabulary
from es_scm.model.weighting import TermWeighting, as_weighting, query_weighting_for

__all__ = ["Role", "TermVectorizer", "WeightingLike"]

Role = Literal["query", "document"]
#: A weighting: a :class:`TermWeighting`, a spec string such as ``"log-smooth"``, a config dict,
#: or None for :data:`es_scm.defaults.DEFAULT_WEIGHTING`.
WeightingLike = TermWeighting | str | Mapping[str, Any] | None


class TermVectorizer:
    """Text → the weighted term vectors ``Wx`` of documents and of queries.

    Parameters
    ----------
    tokenizer : Tokenizer
        Turns text into terms, for indexing and querying alike.
    vocabulary : Vocabulary
        A fitted vocabulary; its terms index the columns of every vector.
    document_weighting, query_weighting : TermWeighting, str, dict or None, default=None
        W for documents and for queries: a weighting, a spec (``"log-smooth"``, ``"bm25"``, see
        :meth:`TermWeighting.from_spec`) or a :meth:`TermWeighting.get_config` dict; ``None`` is
        :data:`es_scm.defaults.DEFAULT_WEIGHTING`. A ``None`` query weighting is the document
        weighting, or the default for BM25 documents
        (:func:`~es_scm.model.weighting.query_weighting_for`).
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        vocabulary: Vocabulary,
        document_weighting: WeightingLike = None,
        query_weighting: WeightingLike = None,
    ) -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise ValueError(f"tokenizer must be a Tokenizer, got {tokenizer!r}")
        if not isinstance(vocabulary, Vocabulary):
            raise ValueError(f"vocabulary must be a fitted Vocabulary, got {vocabulary!r}")
        self.tokenizer = tokenizer
        self.vocabulary = vocabulary
        self.document_weighting = as_weighting(document_weighting, "document_weighting")
        self.query_weighting = (
            query_weighting_for(self.document_weighting)
            if query_weighting is None
            else as_weighting(query_weighting, "query_weighting")
        )
        self._counter = TermCounter(tokenizer, vocabulary)
        self._global_weights: dict[str, np.ndarray] = {}  # idf per role, computed once

    @property
    def terms(self) -> list[str]:
        """The vocabulary terms; ``terms[i]`` labels column ``i`` of every vector and of S."""
        return self.vocabulary.terms

    def _weighting(self, role: Role) -> TermWeighting:
        if role == "query":
            return self.query_weighting
        if role == "document":
            return self.document_weighting
        raise ValueError(f"role must be 'query' or 'document', got {role!r}")

    def counts(self, texts: Iterable[str], tokens: TokenCounts | None = None) -> sp.csr_matrix:
        """Return the term counts of ``texts``, one row per text (int64 CSR, sorted indices).

        Equal to ``vocabulary.to_counts(tokenizer.tokenize_many(texts))``, faster: one dictionary
        lookup per token (:class:`~es_scm.model.counting.TermCounter`). ``tokens``, if given, is
        added the number of tokens that are terms and of those that are unknown
        (:class:`TokenCounts`), at no extra cost.
        """
        return self._counter.counts(texts, tokens)

    def vectorize_many(
        self,
        texts: Iterable[str],
        role: Role = "document",
        tokens: TokenCounts | None = None,
    ) -> sp.csr_matrix:
        """Return the weighted term vectors ``Wx`` of ``texts`` as rows.

        Parameters
        ----------
        texts : iterable of str
            May be a one-shot iterator.
        role : {"query", "document"}, default="document"
            Which weighting to apply.
        tokens : TokenCounts, optional
            Added the texts' tokens and unknown tokens (see :meth:`counts`).

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (n_texts, n_terms)
        """
        weighting = self._weighting(role)
        if role not in self._global_weights:
            self._global_weights[role] = weighting.global_weights(self.vocabulary)
        return weighting.transform(
            self.counts(texts, tokens), self.vocabulary, global_weights=self._global_weights[role]
        )

    def vectorize(self, text: str, role: Role = "query") -> sp.csr_matrix:
        """Return the weighted term vector ``Wx`` of one text.

        Parameters
        ----------
        text : str
        role : {"query", "document"}, default="query"

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (1, n_terms)
            Terms outside the vocabulary are ignored; a text without known terms gives an empty
            row.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.vectorize_many([text], role=role)

    def get_config(self) -> dict[str, Any]:
        """Return the JSON-serializable configuration (tokenizer and weightings)."""
        return {
            "tokenizer": self.tokenizer.get_config(),
            "document_weighting": self.document_weighting.get_config(),
            "query_weighting": self.query_weighting.get_config(),
        }
