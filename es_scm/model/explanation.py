r"""Why did this match? The soft cosine measure of two vectors, term pair by term pair.

The SCM (Novotný, CIKM '18, remark to Lemma 3.3) is a sum over the pairs of terms of the two
vectors:

.. math::

    \operatorname{SCM}(x, y) = \frac{x^T S y}{\lVert x\rVert_S \lVert y\rVert_S}
        = \sum_{i \in \operatorname{supp} x} \sum_{j \in \operatorname{supp} y}
          \frac{x_i\, s_{ij}\, y_j}{\lVert x\rVert_S \lVert y\rVert_S},
    \qquad \lVert x\rVert_S = \sqrt{x^T S x}.

An :class:`Explanation` lists the summands with :math:`s_{ij} \ne 0` as :class:`TermPair`\ s,
largest contribution first. The summands come from
:meth:`~es_scm.similarity.TermSimilarityMatrix.contributions` (the one implementation of the
decomposition) and the norms from :meth:`~es_scm.similarity.TermSimilarityMatrix.soft_norm`,
in float64. Their sum, :attr:`Explanation.total`, is the SCM before gensim's clipping to
[−1, 1]; :attr:`Explanation.score` is the reported (clipped) SCM. The two differ only when
rounding takes the SCM of (nearly) parallel vectors a few ulps past ±1, so
``|total − score| ≤ 1e-9`` always holds.

Made by :meth:`es_scm.model.SoftCosineModel.explain` for two texts and, for search hits, by
:mod:`es_scm.search.explain` from the query's x and ‖x‖_S and the hit's stored y'.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from es_scm.options.validation import NON_NEGATIVE_INT, OrNone, check
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.scm import QueryVector
from es_scm.similarity.unseen import UnseenWord

__all__ = ["Explanation", "TermPair", "explain_query", "explain_vectors"]


@dataclass(frozen=True)
class TermPair:
    r"""One summand of the SCM: a query term i, a document term j and what they contribute.

    Attributes
    ----------
    query_term, document_term : str
        Terms i (of the first text, or the query) and j (of the second text, or the document).
    similarity : float
        :math:`s_{ij}` (1 for identical terms).
    query_weight, document_weight : float
        :math:`x_i` and :math:`y_j`, the weights as the vectors hold them (see
        :attr:`Explanation.query_norm` and :attr:`Explanation.document_norm`).
    contribution : float
        :math:`x_i s_{ij} y_j / (\lVert x\rVert_S \lVert y\rVert_S)`, this pair's part of the SCM.
    share : float
        ``contribution / total``: the pair's fraction of the whole SCM (0 if the total is 0;
        negative, or above 1, only when S or the weights have negative entries).
    """

    query_term: str
    document_term: str
    similarity: float
    query_weight: float
    document_weight: float
    contribution: float
    share: float

    @property
    def identical(self) -> bool:
        """Whether the pair is a term with itself (the plain cosine's part of the SCM)."""
        return self.query_term == self.document_term

    def to_dict(self) -> dict[str, Any]:
        """The pair as a JSON-serializable dict (its fields by name)."""
        return {
            "query_term": self.query_term,
            "document_term": self.document_term,
            "similarity": self.similarity,
            "query_weight": self.query_weight,
            "document_weight": self.document_weight,
            "contribution": self.contribution,
            "share": self.share,
        }


@dataclass(frozen=True)
class Explanation:
    r"""The SCM of two vectors and the term pairs it is made of, largest contribution first.

    Attributes
    ----------
    score : float
        The SCM as reported by ``similarity`` or a search hit: clipped to [−1, 1].
    pairs : tuple of TermPair
        The pairs with :math:`s_{ij} \ne 0`, by decreasing contribution (ties by term ids);
        the largest ones only if the explanation was truncated (see ``omitted``).
    total : float
        The sum of *all* contributions (listed or omitted): the SCM before clipping.
    query_norm, document_norm : float
        The soft norms :math:`\lVert x\rVert_S` and :math:`\lVert y\rVert_S` the weights are
        divided by. For a search hit the document weights are the stored
        :math:`y' = Wy / \lVert Wy\rVert_S`, so ``document_norm`` is 1.
    omitted : int
        How many pairs were left out (by ``top``); 0 when ``pairs`` is complete.
    omitted_contribution : float
        The sum of their contributions, so that ``sum(p.contribution for p in pairs) +
        omitted_contribution == total`` up to rounding.
    """

    score: float
    pairs: tuple[TermPair, ...]
    total: float
    query_norm: float
    document_norm: float
    omitted: int = 0
    omitted_contribution: float = 0.0

    def __iter__(self) -> Iterator[TermPair]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def top(self, n: int | None) -> Explanation:
        """The ``n`` largest pairs (all if ``n`` is None); the rest are counted in ``omitted``."""
        n = check(n, "top", OrNone(NON_NEGATIVE_INT))
        if n is None or n >= len(self.pairs):
            return self
        rest = self.pairs[n:]
        return replace(
            self,
            pairs=self.pairs[:n],
            omitted=self.omitted + len(rest),
            omitted_contribution=math.fsum(
                [self.omitted_contribution, *(p.contribution for p in rest)]
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The explanation as a JSON-serializable dict, with ``pairs`` as a list of dicts."""
        return {
            "score": self.score,
            "total": self.total,
            "query_norm": self.query_norm,
            "document_norm": self.document_norm,
            "pairs": [pair.to_dict() for pair in self.pairs],
            "omitted": self.omitted,
            "omitted_contribution": self.omitted_contribution,
        }


def explain_vectors(
    matrix: TermSimilarityMatrix,
    x: Any,
    y: Any,
    norms: tuple[float, float],
    score: float,
    top: int | None = None,
    unseen: Sequence[UnseenWord] = (),
) -> Explanation:
    r"""Decompose :math:`\operatorname{SCM}(x, y) = x^T S y / (\lVert x\rVert_S \lVert y\rVert_S)`.

    Parameters
    ----------
    matrix : TermSimilarityMatrix
        S; its ``terms`` name the pairs.
    x, y : vector
        The weighted vectors (a ``(1, n_terms)`` sparse row or any vector of
        :func:`es_scm.similarity.scm.inner_product`).
    norms : (float, float)
        :math:`\lVert x\rVert_S` and :math:`\lVert y\rVert_S` (1 for an already normalized y').
    score : float
        The SCM that is being explained (as computed by the caller, clipped).
    top : int or None, optional
        Keep only the ``top`` largest pairs (see :meth:`Explanation.top`).
    unseen : sequence of UnseenWord, optional
        The query's words outside the vocabulary (x's side): their pairs with y's terms, by
        their columns of S (:mod:`es_scm.similarity.unseen`).

    Returns
    -------
    Explanation
        Empty, with total 0, when a norm is 0 (a vector without vocabulary terms).
    """
    x_norm, y_norm = (float(norm) for norm in norms)
    if x_norm <= 0.0 or y_norm <= 0.0:
        return Explanation(float(score), (), 0.0, x_norm, y_norm).top(top)
    parts = matrix.contributions(x, y)
    terms = matrix.terms
    words = [word.word for word in unseen]
    rows = parts.rows  # ids; unseen words come after the terms
    columns = parts.columns
    arrays = [parts.similarities, parts.x_weights, parts.y_weights, parts.values]
    for word in unseen:
        found = _unseen_pairs(word, y)
        number = len(terms) + words.index(word.word)
        rows = np.concatenate([rows, np.full(len(found[0]), number)])
        columns = np.concatenate([columns, found[0]])
        arrays = [np.concatenate([a, b]) for a, b in zip(arrays, found[1:], strict=True)]
    similarities, x_weights, y_weights, products = arrays
    values = products / (x_norm * y_norm)
    total = math.fsum(values.tolist())
    shares = values / total if total != 0.0 else np.zeros_like(values)
    order = np.lexsort((columns, rows, -values))
    pairs = tuple(
        TermPair(
            terms[rows[k]] if rows[k] < len(terms) else words[rows[k] - len(terms)],
            terms[columns[k]],
            float(similarities[k]),
            float(x_weights[k]),
            float(y_weights[k]),
            float(values[k]),
            float(shares[k]),
        )
        for k in order.tolist()
    )
    return Explanation(float(score), pairs, total, x_norm, y_norm).top(top)


def _unseen_pairs(word: UnseenWord, y: Any) -> tuple[np.ndarray, ...]:
    """(term ids, similarities, x weights, y weights, products) of a word's pairs with y."""
    y = sp.csr_matrix(y)
    y_values = np.zeros(y.shape[1], dtype=np.float64)
    y_values[y.indices] = y.data
    hit = y_values[word.terms] != 0.0
    ids, similarities = word.terms[hit], word.similarities[hit].astype(np.float64)
    x_weights = np.full(len(ids), word.weight, dtype=np.float64)
    y_weights = y_values[ids]
    return ids, similarities, x_weights, y_weights, x_weights * similarities * y_weights


def explain_query(
    matrix: TermSimilarityMatrix, query: QueryVector, y: Any, top: int | None = None
) -> Explanation:
    """The explanation of SCM(x, y) for a query value (x, its norm and its words outside the
    vocabulary) and a weighted vector y, scored as :meth:`SoftCosineModel.similarity` scores it."""
    score = float(query.scores(matrix.normalize(y))[0])
    norms = (0.0, 0.0)
    if y.nnz and not query.empty:
        norms = (query.norm, float(matrix.soft_norm(y)))
    return explain_vectors(matrix, query.weights, y, norms, score, top, query.unseen)
