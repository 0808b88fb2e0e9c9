"""A model's queries beyond its vocabulary: the words S gives a column.

:meth:`es_scm.model.SoftCosineModel.query_vector` finds a query's words outside the vocabulary
that the model's :class:`~es_scm.similarity.unseen.UnseenTerms` know (:func:`unseen_words`); their
SCM is every query's (:mod:`es_scm.similarity.scm`).
"""

from __future__ import annotations

from collections import Counter

from es_scm.model.text import TermWeighting, Tokenizer, Vocabulary
from es_scm.similarity.unseen import UnseenTerms, UnseenWord

__all__ = ["unseen_words"]


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
