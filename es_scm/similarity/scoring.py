r"""The one score path: a query's value, computed once, and its SCM with normalized documents.

A query (or the first text of any SCM) is used through its :class:`QueryVector`: the weighted
vector x over S's terms, its expansion x' = Sᵀx (Theorem 4.1; with the query's words outside the
vocabulary, x' = Sᵀx + Eᵀx_W, :mod:`es_scm.similarity.unseen`) and its soft norm, where

.. math:: \lVert x\rVert_S^2 = x^T S x = x'^T x

is the expansion's dot product with x itself, so S is read once per query. A document is used
normalized as at indexing, y' = y / ‖y‖_S (Theorem 4.2), and

.. math:: \operatorname{SCM}(x, y)
    = \operatorname{clip}_{[-1, 1]}\bigl(x'^T y' / \lVert x\rVert_S\bigr)

(clipped as gensim does) is :meth:`QueryVector.scores`, for one document or many in one sparse
product (:func:`es_scm.similarity.scm.dot`). Every SCM es-scm reports is computed there: exact
search's windows, rescoring and hybrid search's SCM side (through
:class:`~es_scm.elastic.query.ExpandedQuery`), explanations, the brute force and
:meth:`~es_scm.model.SoftCosineModel.similarity`. The product sums each x'ᵀy' from 0 in increasing
term order whatever the documents' layout, so a document's score has the same bits in exact
search (a window of stored vectors) and in the brute force (a whole collection).

Equal scores are therefore equal, with no rounding, and every ranking of es-scm — exact search,
rescoring, hybrid search and the brute force — is :func:`rank`: by score, then by document id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from es_scm.similarity.matrix import TermSimilarityMatrix
from es_scm.similarity.operands import canonical
from es_scm.similarity.scm import dot, expand_vector
from es_scm.similarity.unseen import UnseenWord

__all__ = ["QueryVector", "query_vector", "rank", "stored_rows"]


def rank(scored: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """``(id, score)`` pairs best first: by score, then by id (equal scores).

    The one ranking rule of es-scm: search on Elasticsearch and the brute force rank alike.
    """
    return sorted(scored, key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True)
class QueryVector:
    r"""A query as the SCM uses it, computed once: x, x' = Sᵀx + Eᵀx_W and :math:`\lVert x\rVert`.

    ``weights`` is x over the terms (``(1, n_terms)`` CSR), ``expansion`` x' over the terms,
    ``norm`` the soft norm (with the words outside the vocabulary), ``unseen`` those words and
    ``unseen_expansion`` their part of x', Eᵀx_W (None without them).
    """

    weights: sp.csr_matrix
    expansion: sp.csr_array
    norm: float
    unseen: tuple[UnseenWord, ...] = ()
    unseen_expansion: sp.csr_array | None = None

    @property
    def empty(self) -> bool:
        return self.norm <= 0.0

    @cached_property
    def dense_expansion(self) -> np.ndarray:
        """x' as a dense float64 vector over the terms, made once: what each stored row's
        product reads (:func:`es_scm.similarity.scm.dot`'s arithmetic on a CSR side)."""
        dense = np.zeros(self.expansion.shape[1], dtype=np.float64)
        dense[self.expansion.indices] = self.expansion.data
        return dense

    def require_norm(self) -> QueryVector:
        """This value; ValueError if x is not zero but its soft norm is (no SCM is defined)."""
        if self.empty and (self.weights.nnz or self.unseen):
            raise ValueError(
                "the query's squared soft norm xᵀSx is not positive: S is not positive "
                "semi-definite on it (negative similarities?)"
            )
        return self

    def scores(self, documents: Any) -> np.ndarray:
        """SCM(x, y) = x'ᵀy' / ‖x‖_S, clipped to [−1, 1], of every normalized row y' of
        ``documents`` (a CSR or CSC matrix, rows are documents); 0 for an empty side.

        CSR rows are read whole (a window of hits); a CSC matrix only in its columns of the
        expansion's terms (an inverted index in memory). The bits are the same either way.
        """
        if self.norm <= 0.0:
            return np.zeros(documents.shape[0], dtype=np.float64)
        if documents.format == "csc":
            products = dot(self.expansion, documents)[0]
        else:  # dot's arithmetic on a CSR side, with x' made dense once per query
            rows = canonical(sp.csr_array(documents))
            products = np.asarray(rows @ self.dense_expansion, dtype=np.float64)
        return np.clip(products / self.norm, -1.0, 1.0)


def query_vector(
    matrix: TermSimilarityMatrix, weights: Any, unseen: Sequence[UnseenWord] = ()
) -> QueryVector:
    """The :class:`QueryVector` of x = ``weights`` over S's terms and the ``unseen`` words."""
    weights = sp.csr_matrix(weights)
    if weights.shape[0] == 1 and weights.has_canonical_format:  # a query: S's rows read directly
        expansion = expand_vector(matrix.rows, sp.csr_array(weights))
    else:
        expansion = matrix.expand(weights)
    squared = _squared_norm(matrix, weights, expansion)
    extra = None
    if unseen:
        rows = stored_rows([(u.terms, u.similarities) for u in unseen], len(matrix.terms))
        x_w = np.array([u.weight for u in unseen], dtype=np.float64)
        extra = sp.csr_array(sp.csr_matrix(x_w @ rows))
        expansion = sp.csr_array(expansion + extra)
        expansion.sort_indices()
        cross = float(x_w @ (rows @ weights.T).toarray().ravel()) if weights.nnz else 0.0
        squared += 2.0 * cross + float(x_w @ x_w)
    norm = math.sqrt(squared) if squared > 0.0 else 0.0
    return QueryVector(weights, expansion, norm, tuple(unseen), extra)


def _squared_norm(
    matrix: TermSimilarityMatrix, weights: sp.csr_matrix, expansion: sp.csr_array
) -> float:
    """xᵀSx as x'ᵀx, from the expansion: no second product with S.

    When that is not a positive finite number, the checked kernel of
    :meth:`~es_scm.similarity.TermSimilarityMatrix.soft_norm` decides instead: it rescales
    weights whose squares overflow, and names an S that is not positive semi-definite.
    """
    if not weights.nnz:
        return 0.0
    squared = float(dot(expansion, weights)[0, 0])
    if 0.0 < squared < math.inf:
        return squared
    return float(matrix.soft_norm(weights)) ** 2


def stored_rows(vectors: Sequence[tuple[np.ndarray, np.ndarray]], n_terms: int) -> sp.csr_array:
    """Vectors given as (term ids, float64 values), e.g. hits' stored y', as the rows of one CSR
    matrix of ``n_terms`` columns, each sorted by term."""
    lengths = [len(terms) for terms, _ in vectors]
    indptr = np.zeros(len(vectors) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    terms = np.concatenate([t for t, _ in vectors]) if vectors else np.zeros(0, np.int64)
    values = np.concatenate([v for _, v in vectors]) if vectors else np.zeros(0)
    rows = sp.csr_array(
        (values.astype(np.float64, copy=False), terms.astype(np.int64, copy=False), indptr),
        shape=(len(vectors), n_terms),
    )
    rows.sort_indices()
    return rows
