"""The exact SCM top k over a whole in-memory corpus: the reference that ``exact`` search equals.

:class:`BruteForceSearch` is the one brute force of the library, used by the tests and the
benchmarks. It is efficient, so that a benchmark against it is honest: the documents are
normalized once (y' = Wy / ‖Wy‖_S, Theorem 4.2) and kept column-major, and a query costs its
value (x' = SᵀWx and ‖Wx‖_S, Theorem 4.1; with the query's words outside the vocabulary:
:meth:`~es_scm.model.SoftCosineModel.query_vector`) and one sparse product over the documents'
columns of the expansion's terms — the postings an inverted index would read, in memory
(``every_document=True`` scores every document instead, row by row: a true brute force, the same
scores). Every step is the term-similarity layer's own
(:meth:`~es_scm.similarity.TermSimilarityMatrix.normalize`, and
:meth:`~es_scm.similarity.scm.QueryVector.scores`, which exact search's rescoring calls too:
a document's score here has the same bits as in ``exact`` search).

It ranks as search on Elasticsearch does (:func:`es_scm.similarity.scm.rank`: by score, then
by document id).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from es_scm.options.validation import POSITIVE_INT, check
from es_scm.similarity.scm import rank

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model.soft_cosine import SoftCosineModel

__all__ = ["BruteForceSearch"]


class BruteForceSearch:
    """Exact SCM search over documents held in memory.

    Parameters
    ----------
    model : SoftCosineModel
    ids : sequence of str
        One id per document.
    texts : iterable of str, optional
        The documents' texts, vectorized with the model's document weighting.
    vectors : scipy sparse matrix, optional
        Or the documents' weighted vectors Wy as rows, instead of ``texts``.

    Examples
    --------
    >>> brute = BruteForceSearch(model, ids, texts)  # doctest: +SKIP
    >>> brute.search("Obama speaks to the media", k=10)  # doctest: +SKIP
    [('politics-001', 0.37...), ...]
    """

    def __init__(
        self,
        model: SoftCosineModel,
        ids: Sequence[str],
        texts: Iterable[str] | None = None,
        *,
        vectors: Any = None,
    ) -> None:
        if (texts is None) == (vectors is None):
            raise ValueError("BruteForceSearch needs exactly one of texts= or vectors=")
        if texts is not None:
            vectors = model.vectorize_many(texts, role="document")
        self.model = model
        self.ids = np.asarray([str(i) for i in ids], dtype=object)
        if len(self.ids) != vectors.shape[0]:
            raise ValueError(f"{len(self.ids)} ids for {vectors.shape[0]} documents")
        normalized = model.similarity_matrix.normalize(sp.csr_array(vectors))
        self.documents = sp.csc_array(normalized)  # column slices: the postings of a term
        self._rows: sp.csr_array | None = None  # row-major copy, made for the first full scan

    def scores(self, query: str, *, every_document: bool = False) -> np.ndarray:
        """SCM(query, y) for every document y, in document order (0 for an empty query).

        By default only the documents' columns of the expansion's terms are read (an inverted
        index in memory); ``every_document=True`` reads every stored value instead, one
        row-major sparse product (the brute force an index must beat).
        """
        vector = self.model.query_vector(query)
        if not every_document:
            return vector.scores(self.documents)
        if self._rows is None:
            self._rows = sp.csr_array(self.documents)
        return vector.scores(self._rows)

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        among: Collection[str] | None = None,
        every_document: bool = False,
    ) -> list[tuple[str, float]]:
        """The exact top ``k`` with a positive SCM, ranked by :func:`rank`: ``(id, score)``.

        ``among`` restricts the search to these document ids (what a filter keeps);
        ``every_document``: see :meth:`scores`.
        """
        k = check(k, "k", POSITIVE_INT)
        scores = self.scores(query, every_document=every_document)
        if among is not None:
            scores = np.where(np.isin(self.ids, np.asarray(list(among), dtype=object)), scores, 0.0)
        positive = np.flatnonzero(scores > 0)
        if len(positive) > k:
            kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
            positive = positive[scores[positive] >= kth]  # every document tied with the k-th stays
        return rank((self.ids[i], float(scores[i])) for i in positive)[:k]
