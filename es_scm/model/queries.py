"""A model's queries beyond its vocabulary: the words S gives a column, and their SCM.

:meth:`es_scm.model.SoftCosineModel.query_vector` finds a query's words outside the vocabulary
that the model's :class:`~es_scm.similarity.unseen.UnseenTerms` know (:func:`unseen_words`);
:func:`query_scm` is the SCM of such a query with a document vector.
"""

from __future__ import annotations

from collections import Counter

import scipy.sparse as sp

from es_scm.model.text import Tokenizer
from es_scm.model.vocabulary import Vocabulary
from es_scm.model.weighting import TermWeighting
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.unseen import QueryVector, UnseenTerms, UnseenWord

__all__ = ["query_scm", "unseen_words"]


def unseen_words(
    text: str,
    tokenizer: Tokenizer,
    vocabulary: Vocabulary,
    weighting: TermWeighting,
    unseen: UnseenTerms,
) -> list[UnseenWord]:
    """The words of query ``text`` outside ``vocabulary`` that ``unseen`` gives a column.

    Each is weighted by the query ``weighting`` as a term of one document (df = 1).
    """
    known = vocabulary.term_to_id
    counts = Counter(t for t in tokenizer(text) if t not in known and t in unseen)
    if not counts:
        return []
    words = sorted(counts)
    weights = weighting.unseen_weights([counts[w] for w in words], vocabulary)
    found = []
    for word, weight in zip(words, weights.tolist(), strict=True):
        column = unseen.column(word)
        if column is not None and len(column[0]) and weight > 0:
            found.append(UnseenWord(word, weight, *column))
    return found


def query_scm(query: QueryVector, y: sp.csr_matrix, matrix: TermSimilarityMatrix) -> float:
    """SCM = x'ᵀy / (‖x‖ ‖y‖_S), clipped to [−1, 1]; 0 when a side is empty."""
    y_norm = float(matrix.soft_norm(y)) if y.nnz else 0.0
    if query.norm <= 0.0 or y_norm <= 0.0:
        return 0.0
    value = float((query.expansion @ sp.csr_array(y).T).sum()) / (query.norm * y_norm)
    return min(1.0, max(-1.0, value))
