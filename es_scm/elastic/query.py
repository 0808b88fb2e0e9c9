r"""The query encoder: text → x = W(q) → x' = SᵀWx → an Elasticsearch query, and its error bound.

Pure Python, no I/O (the searcher sends what this builds). The query text becomes x = W(q) with
the model's query weighting and is expanded to x' = SᵀWx (Theorem 4.1) by the term-similarity
layer (:meth:`~es_scm.similarity.TermSimilarityMatrix.expand`), which reads only the O(mC) rows of
S of the m query terms. Its positive entries are sent as a ``sparse_vector`` query (or,
equivalently, a ``bool`` of ``term`` queries each boosted by x'_j) on the ``sparse_vector``
field, so Elasticsearch fetches the postings of the related terms and scores every matching
document by the sparse dot product s_d = Σ_j x'_j · q(y'_j), where y' is the stored normalized
document vector and q keeps the 9 most significant bits of a float32.

The bound (why ``exact`` mode is exact)
    Let e_d = x'ᵀy'_d = (Wx)ᵀS(Wy_d)/‖Wy_d‖_S, so SCM(x, y_d) = e_d / ‖Wx‖_S. With S ≥ 0, W ≥ 0
    and a unit diagonal, 1 = y'ᵀSy' ≥ y'ᵀy', so ‖y'‖₂ ≤ 1. Lucene stores q(v) ≥ v·(1 − ε) with
    ε = :data:`~es_scm.elastic.schema.FEATURE_VALUE_ERROR`. Query weights are rounded to float32
    and the m clause scores summed in float32, a relative error below δ = (m + 2)·2⁻²⁴. Hence
    every document d satisfies

        e_d ≤ s_d / ((1 − ε)(1 − δ)) + P,

    where P = ‖x'_D‖₂ is the Euclidean norm of the expansion terms D left out of the query
    (clause-count pruning): Σ_{j∈D} x'_j y'_j ≤ ‖x'_D‖₂ ‖y'‖₂ by Cauchy–Schwarz
    (:meth:`ExpandedQuery.unseen_upper_bound`).

Document-side expansion (an index made with ``expansion="documents"``)
    The index holds Sy' too (:data:`~es_scm.elastic.schema.EXPANDED_FIELD`), and the query
    sends only the positive entries of its own Wx on that field: s_d = Σ_j (Wx)_j · q((Sy')_j),
    again an estimate of the same e_d = (Wx)ᵀSy' = x'ᵀy', with m clauses instead of O(mC). The
    bound above holds as it stands, with P = ‖x_D‖₂ · ‖S‖₂ for query terms D left out, since
    ‖Sy'‖₂ ≤ ‖S‖₂ ‖y'‖₂ ≤ ‖S‖₂
    (:meth:`~es_scm.similarity.TermSimilarityMatrix.spectral_norm_bound`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp

from es_scm.elastic.schema import EXPANDED_FIELD, EXPANSIONS, FEATURE_VALUE_ERROR, VECTOR_FIELD
from es_scm.validation import POSITIVE_INT, Options, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["FLOAT32_UNIT_ROUNDOFF", "ExpandedQuery", "QueryType", "expand_query"]

QueryType = Literal["bool", "sparse_vector"]
FLOAT32_UNIT_ROUNDOFF = 2.0**-24


@dataclass
class ExpandedQuery:
    """A query vector x = W(q), its soft norm ‖x‖_S and its expansion x' = Sᵀx (Theorem 4.1).

    The terms sent to Elasticsearch (the expansion's, or the query's own for an index with
    document-side expansion, on ``field``) are ``clause_terms`` with the weights
    ``clause_weights`` (largest first); ``pruned_terms`` more were left out, whose contribution
    to any document's x'ᵀy' is at most ``pruned_mass``.
    """

    weights: sp.csr_matrix
    norm: float
    expansion: np.ndarray  # dense x' over the vocabulary, float64
    clause_terms: np.ndarray
    clause_weights: np.ndarray
    pruned_terms: int
    pruned_mass: float
    has_negative: bool
    field: str = VECTOR_FIELD

    @property
    def clauses(self) -> list[tuple[int, float]]:
        """``(term id, weight)`` of every term sent."""
        return list(zip(self.clause_terms.tolist(), self.clause_weights.tolist(), strict=True))

    @property
    def empty(self) -> bool:
        return self.norm <= 0.0

    def es_query(
        self,
        query_type: QueryType = "sparse_vector",
        filter: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """The expanded query for Elasticsearch, in one of two equivalent forms.

        ``"sparse_vector"``: Elasticsearch's ``sparse_vector`` query with the clauses as its
        ``query_vector`` and pruning off. ``"bool"``: a ``bool`` of ``should`` ``term`` queries on
        the ``sparse_vector`` field, each boosted by x'_j. Both are the same Lucene query (a
        disjunction of linear feature queries, so the same scores and the same bound); the first
        is the smaller request and Elasticsearch parses it faster (``scripts/bench_search.py``).
        ``filter`` clauses restrict the matches without changing any score.
        """
        if query_type == "sparse_vector":
            vector = {str(term): boost for term, boost in self.clauses}
            query = {"sparse_vector": {"field": self.field, "query_vector": vector, "prune": False}}
        else:
            should = [
                {"term": {self.field: {"value": str(term), "boost": boost}}}
                for term, boost in self.clauses
            ]
            query = {"bool": {"should": should}}
        if filter:
            return {"bool": {"must": [query], "filter": list(filter)}}
        return query

    def numerator(self, terms: np.ndarray, values: np.ndarray) -> float:
        """x'ᵀy' = (Wx)ᵀS(Wy)/‖Wy‖_S for a document's normalized vector y' (Theorem 4.1)."""
        if not len(terms):
            return 0.0
        return float(np.dot(self.expansion[terms], values))

    def exact_score(self, terms: np.ndarray, values: np.ndarray) -> float:
        """SCM(x, y) = x'ᵀy' / ‖Wx‖_S, clipped to [−1, 1] as gensim does (0 for empty sides)."""
        if not len(terms) or self.norm <= 0.0:
            return 0.0
        return float(min(1.0, max(-1.0, self.numerator(terms, values) / self.norm)))

    def native_score(self, es_score: float) -> float:
        """Elasticsearch's estimate of the SCM: its score divided by the query's soft norm."""
        return es_score / self.norm if self.norm > 0.0 else 0.0

    def unseen_upper_bound(self, lowest_native_score: float) -> float:
        """The largest SCM a document outside the window can have (see the module docstring)."""
        delta = (len(self.clause_terms) + 2) * FLOAT32_UNIT_ROUNDOFF
        numerator = lowest_native_score / ((1.0 - FEATURE_VALUE_ERROR) * (1.0 - delta))
        return (numerator + self.pruned_mass) / self.norm


def expand_query(
    model: SoftCosineModel, text: str, max_clauses: int, expansion: str = "query"
) -> ExpandedQuery:
    """Vectorize ``text`` as a query and expand it to x' = SᵀWx, keeping at most ``max_clauses``.

    The clauses are the positive entries of x' (``expansion="query"``) or of Wx itself
    (``"documents"``: the index holds Sy'), the largest weights first; what they leave out is
    counted (``pruned_terms``) and bounded (``pruned_mass``: see the module docstring). The exact
    scores read x' either way.

    Raises
    ------
    ValueError
        If ``max_clauses`` is not a positive integer, ``expansion`` not one of
        :data:`~es_scm.elastic.schema.EXPANSIONS`, or the query's xᵀSx is not positive (S is
        not positive semi-definite on it).
    """
    max_clauses = check(max_clauses, "max_clauses", POSITIVE_INT)
    side = check(expansion, "expansion", Options(EXPANSIONS))
    matrix = model.similarity_matrix
    weights = model.vectorize(text, role="query")
    expanded = matrix.expand(weights)
    dense = _dense(expanded, len(model.terms))
    norm = float(matrix.soft_norm(weights)) if weights.nnz else 0.0
    if weights.nnz and norm <= 0.0:
        raise ValueError(
            "the query's squared soft norm xᵀSx is not positive: S is not positive "
            "semi-definite on it (negative similarities?)"
        )
    sent = expanded if side == "query" else weights  # the index holds y' or Sy'
    positive = sent.data > 0.0
    terms, values = sent.indices[positive], sent.data[positive]
    order = np.argsort(-values, kind="stable")
    kept, dropped = order[:max_clauses], order[max_clauses:]
    pruned_mass = float(np.linalg.norm(values[dropped]))
    if side == "documents" and len(dropped):
        pruned_mass *= matrix.spectral_norm_bound()
    return ExpandedQuery(
        weights=weights,
        norm=norm,
        expansion=dense,
        clause_terms=terms[kept],
        clause_weights=values[kept],
        pruned_terms=len(dropped),
        pruned_mass=pruned_mass,
        has_negative=bool((expanded.data < 0).any() or (weights.data < 0).any()),
        field=VECTOR_FIELD if side == "query" else EXPANDED_FIELD,
    )


def _dense(vector: sp.csr_matrix, n_terms: int) -> np.ndarray:
    values = np.zeros(n_terms, dtype=np.float64)
    values[vector.indices] = vector.data
    return values
